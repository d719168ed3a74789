"""Auditing a real log plain and compressed: wall time of ``prefix-audit audit`` per format.

Usage: python bench/compressed_logs.py [--shared ../shared] [--work DIR] [--resources resources]
                                       [--formats plain gz bz2 xz zst] [--repeats 3]

Each log (a BFCL result file with its score file beside it, compressed alike; a τ-bench v1 file; a
tau2 results file, all from ``fixtures/real-logs/``) is copied into a folder per format — plain, or
compressed at the libraries' default levels (Python's ``gzip`` 9, ``bz2`` 9, ``lzma`` 6, ``zstandard``
3) — under a model folder of one name, and audited alone ``--repeats`` times, in turn: ``prefix-audit audit LOG -o DIR --workers 1
--resamples 200 --no-health`` (one process, and neither the statistics nor the task health, which do
not read the log, dominate). Per log and format: the file's size, the median wall time, its
difference from the plain file's, the median time of one read of its content (``open_bytes`` to the
end, in this process: what each pass over the log costs; an audit reads a log a few times — the
stream's check, format detection, the import, a BFCL score file's digest), and whether the imported
rollout records are the plain file's (byte for byte once the file's name is written as the plain
one's).

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import lzma
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zstandard

from prefix_audit.core.compressed import open_bytes

ROOT = Path(__file__).resolve().parents[1]
COMPRESS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
            "zst": lambda data: zstandard.ZstdCompressor().compress(data)}
LOGS = [("bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_result.json", "bfcl/gpt-oss-20b_BFCL_v4_multi_turn_base_score.json"),
        ("tau-bench-v1/gpt-4.1-mini_retail_user-gpt-4.1_1trial.json", None),
        ("tau2/gpt-4.1_retail_40tasks_1trial.json", None)]


def _copy(source: Path, folder: Path, fmt: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = source.read_bytes()
    if fmt == "plain":
        target = folder / source.name
        target.write_bytes(data)
    else:
        target = folder / f"{source.name}.{fmt}"
        target.write_bytes(COMPRESS[fmt](data))
    return target


def _audit(log: Path, out: Path, resources: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "prefix_audit.cli", "audit", str(log), "-o", str(out), "--workers", "1",
                    "--resamples", "200", "--no-health", "--resources", resources], check=True, capture_output=True)
    return time.perf_counter() - start


def _read_once(log: Path) -> float:
    start = time.perf_counter()
    with open_bytes(log) as fh:
        while fh.read(2**20):
            pass
    return time.perf_counter() - start


def _records(out: Path, log: Path, plain: Path) -> str:
    """The audit's imported records, every name of ``log``'s folder written as the plain one's."""
    text = "".join(p.read_text() for p in sorted((out / "rollouts" / "imported").rglob("*.jsonl")))
    suffix = log.name[len(plain.name):]  # ".gz", ...; "" for the plain file
    text = text.replace(str(log.parent), str(plain.parent))
    return text.replace(f".json{suffix}", ".json") if suffix else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--resources", default=str(ROOT / "resources"))
    parser.add_argument("--formats", nargs="+", default=["plain", "gz", "zst"], choices=["plain", *COMPRESS])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="compressed-logs-"))
    corpus = args.shared / "fixtures" / "real-logs"
    print(f"| log | format | size | audit (median of {args.repeats}) | vs plain | one read of its content | "
          f"records as the plain file's |")
    print("|---|---|---|---|---|---|---|")
    for name, companion in LOGS:
        source = corpus / name
        logs = {}
        for fmt in args.formats:
            folder = work / fmt / "logs"  # one model folder's name for every format (BFCL labels a log with it)
            logs[fmt] = _copy(source, folder, fmt)
            if companion:
                _copy(corpus / companion, folder, fmt)
        times: dict[str, list[float]] = {fmt: [] for fmt in args.formats}
        for _ in range(args.repeats):  # formats in turn, so a busy spell of the machine spreads over all
            for fmt, log in logs.items():
                times[fmt].append(_audit(log, work / "audit" / fmt, args.resources))
        plain = logs.get("plain")
        base = statistics.median(times["plain"]) if plain else None
        expected = _records(work / "audit" / "plain", plain, plain) if plain else None
        for fmt, log in logs.items():
            median = statistics.median(times[fmt])
            versus = f"{median - base:+.2f} s ({median / base - 1:+.1%})" if base else "—"
            same = "—" if expected is None else ("yes" if _records(work / "audit" / fmt, log, plain) == expected
                                                 else "NO")
            read = statistics.median(_read_once(log) for _ in range(5))
            print(f"| {source.name} | {fmt} | {log.stat().st_size / 2**20:.2f} MiB | {median:.2f} s | {versus} | "
                  f"{read * 1000:.1f} ms | {same} |")


if __name__ == "__main__":
    main()
