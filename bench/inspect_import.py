"""Import time and peak memory of Inspect AI logs (``prefix-audit import inspect``).

Writes real logs of inspect_evals' ``tau2_airline`` and ``bfcl`` tasks with the test suite's
generators (Inspect's ``mockllm`` model, scripted; tests/inspect_tau2_logs.py,
tests/inspect_bfcl_logs.py) in both formats, then imports each in a child process and reports its
wall time, its peak resident memory (the child's own ``ru_maxrss``) and the log's size, and for an
``.eval`` log the time of decompressing and parsing every sample member in full with the standard
library's ``json`` (the parse the reader is measured against):

    .venv/bin/python bench/inspect_import.py [--work DIR] [--tau2-tasks N] [--epochs 2]

``--work`` keeps the logs (a later run with the same DIR reuses them); default a temporary folder.
Needs the ``inspect`` extra (``pip install -e '.[inspect]'``; the dev extra includes it).
"""

from __future__ import annotations

import argparse
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


# The child imports, then reports its own peak resident memory (ru_maxrss, KB on Linux).
_CHILD = ("import resource, sys; from prefix_audit.cli import main; code = main(sys.argv[1:]); "
          "print(f'peak_rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr); "
          "sys.exit(code)")


def _import(log: Path, work: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, rollouts imported) of one import in a child process."""
    cli = [sys.executable, "-c", _CHILD, "import", "inspect", str(log), "-o", str(work / f"{log.stem}.jsonl"),
           "--resources", str(RESOURCES)]
    start = time.perf_counter()
    done = subprocess.run(cli, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    lines = done.stderr.splitlines() + done.stdout.splitlines()
    peak = next(int(line.split("=", 1)[1]) for line in lines if line.startswith("peak_rss_kb="))
    imported = next((int(line.split()[1]) for line in lines if line.startswith("imported ")), 0)
    return wall, peak / 1024, imported


def _parse_floor(log: Path) -> float | None:
    """Seconds to decompress and parse every sample member of an ``.eval`` log in full with the
    standard library's ``json``: the floor the reader is measured against (None for ``.json``)."""
    if log.suffix != ".eval":
        return None
    import json
    import zipfile

    from prefix_audit.ingest.inspect_logs import _member_bytes

    start = time.perf_counter()
    with log.open("rb") as fh, zipfile.ZipFile(fh) as archive:
        for info in archive.infolist():
            if info.filename.startswith("samples/"):
                json.loads(_member_bytes(archive, fh, info))
    return time.perf_counter() - start


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
        print("| log | samples × epochs | size | import | per sample-epoch | stdlib-json parse of every sample | "
              "import − parse | peak RSS |")
        print("|---|---|---|---|---|---|---|---|")
        for name, log in sorted(logs.items(), key=lambda item: item[1].stat().st_size):
            wall, peak, n = _import(log, work)
            floor = _parse_floor(log)
            per = f"{wall / n:.2f} s" if n else "–"
            parse = "–" if floor is None else f"{floor:.1f} s"
            over = "–" if floor is None else f"{wall - floor:+.1f} s"
            print(f"| {name} | {n} | {log.stat().st_size / 2**20:.1f} MiB | {wall:.1f} s | {per} | {parse} | {over} | "
                  f"{peak:.0f} MB |")


if __name__ == "__main__":
    main()
