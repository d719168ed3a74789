"""Replay throughput of the checker on the 800 BFCL ground-truth entries (4,625 actions).

Usage: python bench/replay_throughput.py [--repeat 3] [--resources resources]
Prints one line per run and a JSON summary. Each run replays every entry on fresh instances, both
the prefix check and the full-rollout success check (model-side and ground-truth-side execution).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from prefix_audit.benchmarks.bfcl import BfclBenchmark, load_data
from prefix_audit.replay.checker import replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--resources", default="resources")
    args = parser.parse_args()
    bench = BfclBenchmark(load_data(args.resources))
    rollouts = [bench.reference_rollout(t) for t in bench.task_ids()]
    for r in rollouts[:5]:  # warm imports and per-task fact caches outside the timing
        replay(r, bench)
    rates = []
    for run in range(args.repeat):
        start = time.perf_counter()
        actions = sum(replay(r, bench).T for r in rollouts)
        elapsed = time.perf_counter() - start
        rates.append(actions / elapsed)
        print(f"run {run + 1}: {len(rollouts)} rollouts, {actions} actions in {elapsed:.2f} s "
              f"= {actions / elapsed:,.0f} actions/s")
    print(json.dumps({"rollouts": len(rollouts), "actions": actions, "median_actions_per_s": round(statistics.median(rates)),
                      "python": platform.python_version(), "machine": platform.machine()}))


if __name__ == "__main__":
    main()
