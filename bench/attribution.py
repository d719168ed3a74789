"""What attribution costs an audit: ``prefix-audit audit`` of the shared real logs with attribution and without.

Usage: python bench/attribution.py [--shared ../shared] [--corpus real-logs ...] [--repeats 3] [--work DIR]

"Without" is the same audit, in the same process, with the three parts of attribution switched off: every
failing action the agent's (no user rule, no state search), no comparison with the task's gold (no gold
replays), and no statistics on FED_agent (the stats table's ``agent`` rows). What stays in both is the
reading of values given in other words, which is part of the predicates, not of attribution. Each audit
runs with one worker, without the browser and without benchmark health (both cost the same either way);
the two modes alternate, and the median of ``--repeats`` wall times is reported per corpus, with the share
of first failures that are not the agent's.

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import polars as pl

from prefix_audit.audit import AuditSettings, audit_logs
from prefix_audit.core.fetch import default_resources
from prefix_audit.replay import checker, registry
from prefix_audit.replay.attribution import AGENT, Attribution
from prefix_audit.statistics import stats

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def without_attribution() -> Iterator[None]:
    """The audit as it was before attribution: every failure the agent's, no gold, no agent statistics."""
    agent = Attribution(AGENT, "")
    with mock.patch.object(checker, "attribute", lambda *_args: agent), \
            mock.patch.object(checker, "_gold_failures_of", lambda *_args: (lambda: ())), \
            mock.patch.object(stats, "compute_stats", functools.partial(stats.compute_stats, agent=False)):
        yield


def audit_seconds(corpus: Path, out: Path, attributed: bool) -> float:
    registry.load()
    resolver = registry.resolver(default_resources())
    start = time.perf_counter()
    with contextlib.nullcontext() if attributed else without_attribution():
        audit_logs([corpus], out, resolver, AuditSettings(resamples=10_000, workers=1, health=False, site=False))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--corpus", nargs="+", default=["real-logs", "real-logs-5"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-attribution-"))
    print("| corpus | rollouts | first failures | not the agent's | audit without | audit with | cost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.corpus:
        corpus = args.shared / "fixtures" / name
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for attributed in (False, True):
                times[attributed].append(audit_seconds(corpus, work / f"{name}-{attributed}", attributed))
        episodes = pl.read_parquet(work / f"{name}-True" / "fed" / "episodes.parquet")
        failed = episodes.filter(pl.col("T").is_not_null() & (pl.col("FED") <= pl.col("T")))
        others = failed.filter(pl.col("origin") != AGENT).height
        without, with_ = statistics.median(times[False]), statistics.median(times[True])
        print(f"| {name} | {episodes.height:,} | {failed.height:,} | {others} | {without:.1f} s | {with_:.1f} s "
              f"| {100 * (with_ - without) / without:+.1f} % |")


if __name__ == "__main__":
    main()
