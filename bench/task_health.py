"""Benchmark health of whole data releases (``prefix-audit tasks``): wall time per dataset and release at
1 and 2 workers, the counts per code, and whether the outputs are the same bytes whatever the workers.

Usage: python bench/task_health.py [--resources resources] [--tau3 ../shared/benchmarks/tau3-v1.0.1]
                                   [--workers 1 2] [--work DIR] [--only DATASET ...] [--json FILE]
                                   [--shared ../shared] [--skip-releases] [--skip-audits] [--repeats N]
                                   [--no-site]

1. **Whole releases.** Per release, the tasks with each code, split by the findings' kind and effect
   (``defect scored 1``: tasks with a finding of that kind and effect). Each run is one ``prefix-audit tasks DATASET [--release R] [--tau-data DIR] -o DIR
   --workers W --no-health-cache`` process, in turn on the same machine (the wall time is the whole
   command: start-up, opening the benchmark, every task, the outputs). The goal of the issue that made the
   command: the whole health of BFCL (800 tasks, one release) and of τ retail (114 tasks) each within 60 s
   on 2 cores.
2. **What health adds to an audit**: ``prefix-audit audit LOG`` on a real BFCL result file (200 entries)
   and a real tau2 results file (40 simulations) of the shared fixtures, at the audit's default workers
   (one per 4 MiB: one here), three ways: ``--no-health``; with health, nothing kept yet (cold: every task
   computed and kept); with health again (warm: every task read back). Each repeat starts from an empty
   folder of kept health — a throwaway resources folder whose packages are links to ``--resources``'s —,
   the three commands in turn; the medians of wall and CPU time (the command's and its workers') are
   printed, and whether the cold and the warm audit wrote the same bytes. The goal of the issue that kept
   health: a warm audit costs at most 1.25 × the audit with ``--no-health``.

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import statistics
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


def audit_seconds(log: Path, out: Path, resources: Path, health: bool, site: bool) -> tuple[float, float]:
    """Wall and CPU seconds (the command's and its workers') of one audit."""
    cmd = [sys.executable, "-m", "prefix_audit.cli", "audit", str(log), "-o", str(out), "--resources", str(resources),
           "--resamples", "1000", *([] if health else ["--no-health"]), *([] if site else ["--no-site"])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def throwaway_resources(resources: Path, folder: Path) -> Path:
    """A resources folder with no kept health: links to ``resources``'s packages."""
    folder.mkdir(parents=True)
    for package in resources.iterdir():
        if package.is_dir() and package.name != "health":
            (folder / package.name).symlink_to(package.resolve())
    return folder


def same_outputs(a: Path, b: Path) -> bool:
    """Whether two audits wrote the same bytes (the site's pages and the run's own timings aside)."""
    def files(root: Path) -> dict[str, Path]:
        return {p.relative_to(root).as_posix(): p for p in root.rglob("*")
                if p.is_file() and p.relative_to(root).parts[0] != "site"}

    left, right = files(a), files(b)
    return left.keys() == right.keys() and all(filecmp.cmp(left[k], right[k], shallow=False) for k in left)


MODES = ("no_health", "cold", "warm")


def audit_runs(log: Path, work: Path, resources: Path, repeats: int, site: bool) -> dict:
    """``repeats`` times, on a fresh folder of kept health: the audit without health, then cold, then warm."""
    seconds: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    identical = True
    for repeat in range(repeats):
        folder = work / f"audit-{log.stem}-{repeat}"
        fresh = throwaway_resources(resources, folder / "resources")
        for mode in MODES:
            seconds[mode].append(audit_seconds(log, folder / mode, fresh, mode != "no_health", site))
        identical &= same_outputs(folder / "cold", folder / "warm")
    summary = json.loads(next((work / f"audit-{log.stem}-0" / "warm" / "health").glob("*/summary.json")).read_text())
    tasks = sum(v["tasks"] for by_release in summary.values() for v in by_release.values())
    return {"log": log.name, "tasks": tasks, "identical": identical,
            **{f"{mode}_wall_s": statistics.median(w for w, _ in seconds[mode]) for mode in MODES},
            **{f"{mode}_cpu_s": statistics.median(c for _, c in seconds[mode]) for mode in MODES},
            "runs": {mode: seconds[mode] for mode in MODES}}


def run(dataset: str, release: str | None, tau3: Path | None, workers: int, out: Path,
        resources: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "prefix_audit.cli", "tasks", dataset, "-o", str(out), "--workers", str(workers),
           "--resources", resources, "--no-health-cache"]
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
    parser.add_argument("--skip-releases", action="store_true")
    parser.add_argument("--skip-audits", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="audits of each kind per log (default 3)")
    parser.add_argument("--no-site", dest="site", action="store_false", help="audits without their browser")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="health-bench-"))
    rows, kept = [], []
    for dataset, release, on_tau3 in () if args.skip_releases else RUNS:
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
        codes = {c: (v["tasks"], {by: n["tasks"] for by, n in v["by"].items()})
                 for c, v in entry["codes"].items() if v["tasks"]}
        rows.append((dataset + (" (τ³ v1.0.1 tasks)" if on_tau3 else ""), rel, entry["tasks"], entry["sound"],
                     times, identical, codes))
        kept.append({"dataset": dataset, "tau3": on_tau3, "release": rel, "tasks": entry["tasks"],
                     "sound": entry["sound"], "seconds": times, "identical": identical, "tasks_per_code": codes})
    if rows:
        print_releases(rows, args.workers)
    audits = []
    for name in () if args.skip_audits else AUDITED:
        log = args.shared / name
        if not log.is_file():
            print(f"skipped the audit of {name}: no {log}", file=sys.stderr)
            continue
        audits.append(audit_runs(log, work, Path(args.resources), args.repeats, args.site))
    if audits:
        print("\n| log | tasks audited | audit --no-health | with health, cold | with health, warm | warm ÷ "
              "--no-health | cold and warm: same bytes |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for a in audits:
            cells = " | ".join(f"{a[f'{mode}_wall_s']:.1f} s ({a[f'{mode}_cpu_s']:.1f} s CPU)" for mode in MODES)
            print(f"| {a['log']} | {a['tasks']} | {cells} | {a['warm_wall_s'] / a['no_health_wall_s']:.2f} × "
                  f"({a['warm_cpu_s'] / a['no_health_cpu_s']:.2f} × CPU) | {'yes' if a['identical'] else 'NO'} |")
    if args.json:
        args.json.write_text(json.dumps({"releases": kept, "audits": audits}, indent=1) + "\n")


def print_releases(rows: list, workers: list[int]) -> None:
    columns = " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in workers)
    print(f"| dataset | release | tasks | sound | {columns} | same bytes | tasks per code (per kind and effect) |")
    print("|---|---|---:|---:|" + "---:|" * len(workers) + "---|---|")
    for name, rel, tasks, sound, times, identical, codes in rows:
        cells = " | ".join(f"{times[w]:.1f} s" for w in workers)
        found = ", ".join(f"{c} {n} ({', '.join(f'{by} {m}' for by, m in sorted(split.items()))})"
                          for c, (n, split) in codes.items()) or "none"
        print(f"| {name} | {rel} | {tasks} | {sound} | {cells} | {'yes' if identical else 'NO'} | {found} |")


if __name__ == "__main__":
    main()
