"""Wall times of the whole default run on this machine: cold, no-op rerun, statistics-only rerun.

    python bench/pipeline_timings.py [--cores 2] [--configfile EXTRA.yaml ...]

Cold: the default config into an empty results directory (the benchmark packages already fetched
into resources/, as after any first run). No-op: the same command again. Statistics-only: the same
with another bootstrap seed, which reruns statistics, paired statistics, tables and figures and
nothing else. Targets (issue 7): cold ≤ 10 min, no-op ≤ 5 s, statistics-only ≤ 30 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--configfile", nargs="*", default=[], help="extra config files merged over the default")
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        run = Path(tmp) / "run.yaml"
        run.write_text(yaml.safe_dump({"results_dir": str(results), "resources_dir": str(ROOT / "resources")}))
        reseeded = Path(tmp) / "reseeded.yaml"
        reseeded.write_text(yaml.safe_dump({"stats": config["stats"] | {"seed": config["stats"]["seed"] + 1}}))
        base = [SNAKEMAKE, "--cores", str(args.cores), "--configfile", "config/config.yaml", *args.configfile]
        cold = timed([*base, str(run)])
        noop = timed([*base, str(run)])
        stats_only = timed([*base, str(run), str(reseeded)])
        blocks = sum(1 for _ in (results / "scored").glob("*/*/*/episodes.parquet"))
    print(f"{os.cpu_count()} CPUs, --cores {args.cores}, {blocks} blocks")
    print(f"cold: {cold:.1f} s   no-op rerun: {noop:.1f} s   statistics-only rerun: {stats_only:.1f} s")


if __name__ == "__main__":
    main()
