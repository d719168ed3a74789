"""Import time and peak memory of Inspect AI logs (``prefix-audit import inspect``).

Writes real logs of inspect_evals' ``tau2_airline`` and ``bfcl`` tasks with the test suite's
generators (Inspect's ``mockllm`` model, scripted; tests/inspect_tau2_logs.py,
tests/inspect_bfcl_logs.py) in both formats, then imports each in a child process and reports its
wall time and peak resident memory (the child's ``ru_maxrss``) and the log's size:

    .venv/bin/python bench/inspect_import.py [--work DIR] [--tau2-tasks N] [--epochs 2]

``--work`` keeps the logs (a later run with the same DIR reuses them); default a temporary folder.
Needs the ``inspect`` extra (``pip install -e '.[inspect]'``; the dev extra includes it).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import inspect_bfcl_logs  # noqa: E402  (the test suite's generators)
import inspect_tau2_logs  # noqa: E402

RESOURCES = ROOT / "resources"
# Airline tasks whose gold writes (every scenario is gold here: the sample size is what is measured).
TAU2_TASKS = ("11", "14", "15", "16", "19", "27", "40", "20")


def _logs(work: Path, tau2_tasks: int, epochs: int) -> dict[str, Path]:
    out = {}
    for fmt in ("eval", "json"):
        folder = work / f"tau2_{fmt}"
        found = sorted(folder.glob(f"*.{fmt}")) if folder.is_dir() else []
        out[f"tau2 .{fmt}"] = found[0] if found else inspect_tau2_logs.write_tau2_log(
            folder, scenarios={t: "gold" for t in TAU2_TASKS[:tau2_tasks if fmt == "eval" else 2]},
            epochs=epochs, log_format=fmt)
        folder = work / f"bfcl_{fmt}"
        found = sorted(folder.glob(f"*.{fmt}")) if folder.is_dir() else []
        out[f"bfcl .{fmt}"] = found[0] if found else inspect_bfcl_logs.write_bfcl_log(
            folder, work / "bfcl_cache", RESOURCES, epochs=epochs, log_format=fmt)
    return out


def _import(log: Path, work: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, the import's summary line) of one import in a child process."""
    cli = [sys.executable, "-m", "prefix_audit.cli", "import", "inspect", str(log), "-o",
           str(work / f"{log.stem}.jsonl"), "--resources", str(RESOURCES)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(cli, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far, in KB
    summary = next((line for line in done.stderr.splitlines() + done.stdout.splitlines()
                    if line.startswith("imported")), "")
    return wall, max(peak, before) / 1024, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--tau2-tasks", type=int, default=len(TAU2_TASKS))
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        logs = _logs(work, args.tau2_tasks, args.epochs)
        print("| log | samples × epochs | size | import | per sample-epoch | peak RSS |")
        print("|---|---|---|---|---|---|")
        # Children run one after another, largest last: ru_maxrss of children is a running maximum.
        for name, log in sorted(logs.items(), key=lambda item: item[1].stat().st_size):
            wall, peak, summary = _import(log, work)
            n = int(summary.split()[1]) if summary.startswith("imported") else 0
            per = f"{wall / n:.2f} s" if n else "–"
            print(f"| {name} | {n} | {log.stat().st_size / 2**20:.1f} MiB | {wall:.1f} s | {per} | ≤ {peak:.0f} MB |")


if __name__ == "__main__":
    main()
