"""Benchmark health of whole data releases (``prefix-audit tasks``): wall time per dataset and release at
1 and 2 workers, the counts per code, and whether the outputs are the same bytes whatever the workers.

Usage: python bench/task_health.py [--resources resources] [--tau3 ../shared/benchmarks/tau3-v1.0.1]
                                   [--workers 1 2] [--work DIR] [--only DATASET ...] [--json FILE]
                                   [--shared ../shared] [--skip-audits]

1. **Whole releases.** Each run is one ``prefix-audit tasks DATASET [--release R] [--tau-data DIR] -o DIR
   --workers W`` process, in turn on the same machine (the wall time is the whole command: start-up,
   opening the benchmark, every task, the outputs). The goal of the issue that made the command: the
   whole health of BFCL (800 tasks, one release) and of τ retail (114 tasks) each within 60 s on 2 cores.
2. **What health adds to an audit**: ``prefix-audit audit LOG`` with and without ``--no-health`` on a real
   BFCL result file (200 entries) and a real tau2 results file (40 simulations) of the shared fixtures,
   at the audit's default workers (one per 4 MiB: one here).

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (dataset, release or None for the default, whether it runs on the τ³ data directory)
RUNS = (("bfcl_v3", "2026.3.23", False), ("bfcl_v3", "2025.9.29", False), ("tau_airline", None, False),
        ("tau_retail", None, False), ("tau_telecom", None, False), ("toolsandbox", None, False),
        ("tau_airline", None, True), ("tau_retail", None, True))
OUTPUTS = ("findings.parquet", "tasks.parquet", "summary.json", "tables/table_task_health.csv")
AUDITED = ("fixtures/real-logs/bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_result.json",
           "fixtures/real-logs/tau2/gpt-4.1_retail_40tasks_1trial.json")


def audit_seconds(log: Path, out: Path, resources: str, health: bool) -> float:
    cmd = [sys.executable, "-m", "prefix_audit.cli", "audit", str(log), "-o", str(out), "--resources", resources,
           "--resamples", "1000", *([] if health else ["--no-health"])]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def run(dataset: str, release: str | None, tau3: Path | None, workers: int, out: Path,
        resources: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "prefix_audit.cli", "tasks", dataset, "-o", str(out), "--workers", str(workers),
           "--resources", resources]
    cmd += ["--release", release] if release else []
    cmd += ["--tau-data", str(tau3)] if tau3 else []
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return seconds, json.loads((out / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", default="resources")
    parser.add_argument("--tau3", type=Path, default=ROOT.parent / "shared" / "benchmarks" / "tau3-v1.0.1")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--only", nargs="+", help="datasets to run (default: all)")
    parser.add_argument("--json", type=Path, help="keep the figures here")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--skip-audits", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="health-bench-"))
    rows, kept = [], []
    for dataset, release, on_tau3 in RUNS:
        if args.only and dataset not in args.only:
            continue
        if on_tau3 and not (args.tau3 / "airline" / "tasks.json").is_file():
            print(f"skipped {dataset} on τ³ data: no {args.tau3}", file=sys.stderr)
            continue
        times, summaries, folders = {}, {}, {}
        for workers in args.workers:
            folder = work / f"{dataset}-{release or 'default'}-{'tau3' if on_tau3 else 'pkg'}-w{workers}"
            times[workers], summaries[workers] = run(dataset, release, args.tau3 if on_tau3 else None, workers,
                                                     folder, args.resources)
            folders[workers] = folder
        first = folders[args.workers[0]]
        identical = all(filecmp.cmp(first / name, folder / name, shallow=False)
                        for folder in folders.values() for name in OUTPUTS)
        (rel, entry), = summaries[args.workers[0]][dataset].items()
        codes = {c: v["tasks"] for c, v in entry["codes"].items() if v["tasks"]}
        rows.append((dataset + (" (τ³ v1.0.1 tasks)" if on_tau3 else ""), rel, entry["tasks"], entry["sound"],
                     times, identical, codes))
        kept.append({"dataset": dataset, "tau3": on_tau3, "release": rel, "tasks": entry["tasks"],
                     "sound": entry["sound"], "seconds": times, "identical": identical, "tasks_per_code": codes})
    columns = " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in args.workers)
    print(f"| dataset | release | tasks | sound | {columns} | same bytes | tasks per code |")
    print("|---|---|---:|---:|" + "---:|" * len(args.workers) + "---|---|")
    for name, rel, tasks, sound, times, identical, codes in rows:
        cells = " | ".join(f"{times[w]:.1f} s" for w in args.workers)
        found = ", ".join(f"{c} {n}" for c, n in codes.items()) or "none"
        print(f"| {name} | {rel} | {tasks} | {sound} | {cells} | {'yes' if identical else 'NO'} | {found} |")
    audits = []
    for name in () if args.skip_audits else AUDITED:
        log = args.shared / name
        if not log.is_file():
            print(f"skipped the audit of {name}: no {log}", file=sys.stderr)
            continue
        without = audit_seconds(log, work / f"audit-{log.stem}-without", args.resources, health=False)
        with_health = audit_seconds(log, work / f"audit-{log.stem}-with", args.resources, health=True)
        tasks = json.loads(next((work / f"audit-{log.stem}-with" / "health").glob("*/summary.json")).read_text())
        n = sum(v["tasks"] for by_release in tasks.values() for v in by_release.values())
        audits.append((log.name, n, without, with_health))
    if audits:
        print("\n| log | tasks audited | audit --no-health | audit (with health) | health adds |")
        print("|---|---:|---:|---:|---:|")
        for name, n, without, with_health in audits:
            print(f"| {name} | {n} | {without:.1f} s | {with_health:.1f} s | {with_health - without:+.1f} s |")
    if args.json:
        args.json.write_text(json.dumps({"releases": kept, "audits": [
            {"log": name, "tasks": n, "without_health_s": a, "with_health_s": b} for name, n, a, b in audits]},
            indent=1) + "\n")


if __name__ == "__main__":
    main()
