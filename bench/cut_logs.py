"""What telling a log that ends early costs: ``cut_off`` on whole logs, real and large, and on cut ones.

Usage: python bench/cut_logs.py [--shared ../shared] [--work DIR] [--mib 256] [--repeats 5]

1. Every file under ``shared/fixtures/`` (the real logs, plain and gzipped, and the labelled
   corpora), whole: the median time of ``cut_off`` per file, summed per kind of file, beside one read
   of its content (``open_bytes`` to the end: for a compressed file, what the stream's check before it
   cost already, and which ``cut_off`` now does in its place) — and how far each went: its last line
   only, its first line too, or the whole file parsed (a document on one line, which no tail tells).
2. A JSON Lines file and an indented JSON document of ``--mib`` MiB (entries of about 10 KiB, as
   BFCL's and tau2's are), whole and cut inside their last entry: ``cut_off``; the import of the cut
   one named by hand (``read_logs``, its format detected: JSON Lines read up to the cut, the document
   refused whole); ``json.loads`` of the document (what reading it costs its importer). The check of a
   whole file does not grow with it; a cut one is read through (lines counted; a document parsed and
   its entries counted).

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from prefix_audit.core import cut_off as cutting
from prefix_audit.core.compressed import compression_of, open_bytes
from prefix_audit.core.cut_off import cut_off
from prefix_audit.ingest.imports import ImportReport, read_logs
from prefix_audit.replay import registry

ROOT = Path(__file__).resolve().parents[1]


def _median(repeats: int, call) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _read(path: Path) -> None:
    with open_bytes(path) as fh:
        while fh.read(2**20):
            pass


class _Depth:
    """How far ``cut_off`` read a file: its first bytes only (no JSON), its first and last lines, or all
    of it parsed (a document on one line, whose one line is all of it; another that is not indented)."""

    FIRST_BYTES, LINES, PARSED = "first bytes", "first and last lines", "parsed whole"

    def __init__(self) -> None:
        self.step = self.FIRST_BYTES
        content, depth = cutting._Content, self
        first_line, whole = content.first_line, content.whole

        def first_line_seen(this):
            line, end = first_line(this)
            depth.step = depth.PARSED if end == this.size else depth.LINES
            return line, end

        def whole_seen(this):
            depth.step = depth.PARSED
            return whole(this)

        content.first_line, content.whole = first_line_seen, whole_seen


def real_logs(fixtures: Path, repeats: int) -> None:
    depth = _Depth()
    rows: dict[str, list[float]] = {}
    steps: dict[str, Counter] = {}
    for path in sorted(p for p in fixtures.rglob("*") if p.is_file() and p.suffix not in (".md", ".txt")):
        kind = f"{path.relative_to(fixtures).parts[0]}, {'gzip' if compression_of(path) else 'plain'}"
        depth.step = depth.FIRST_BYTES
        assert cut_off(path) is None, path
        steps.setdefault(kind, Counter())[depth.step] += 1
        row = rows.setdefault(kind, [0, 0, 0.0, 0.0])
        row[0] += 1
        with open_bytes(path) as fh:
            row[1] += len(fh.read())
        row[2] += _median(repeats, lambda: cut_off(path))
        row[3] += _median(repeats, lambda: _read(path))
    print("| files | count | content | `cut_off`, all (median of each) | per file | one read of the content, all "
          "| how far `cut_off` read |")
    print("|---|---|---|---|---|---|---|")
    for kind, (count, size, checked, read) in sorted(rows.items()):
        how = ", ".join(f"{step} {n}" for step, n in sorted(steps[kind].items()))
        print(f"| {kind} | {count} | {size / 2**20:.1f} MiB | {checked * 1000:.1f} ms | "
              f"{checked / count * 1000:.2f} ms | {read * 1000:.1f} ms | {how} |")


def large(work: Path, mib: int, repeats: int) -> None:
    entry = {"id": "x", "messages": [{"role": "user", "content": "word " * 400} for _ in range(5)]}
    count = mib * 2**20 // len(json.dumps(entry))
    lines = work / "large_result.json"
    with lines.open("w") as out:
        for n in range(count):
            out.write(json.dumps({**entry, "id": f"e{n}"}) + "\n")
    document = work / "large_results.json"
    document.write_text(json.dumps({"info": {}, "simulations": [{**entry, "id": f"e{n}"} for n in range(count)]},
                                   indent=2))
    print("| file | size | whole: `cut_off` | cut inside its last entry: `cut_off` | its import (`read_logs`, format "
          "detected) | `json.loads` of it |")
    print("|---|---|---|---|---|---|")
    for path in (lines, document):
        data = path.read_bytes()
        whole = _median(repeats, lambda: cut_off(path))
        parse = _median(max(1, repeats // 2), lambda: json.loads(data)) if path == document else None
        cut = path.with_name("cut_" + path.name)
        cut.write_bytes(data[:len(data) - 1000])
        said = cut_off(cut)
        assert said is not None, cut
        cut_time = _median(max(1, repeats // 2), lambda: cut_off(cut))
        # what the import of the cut file costs, its format detected (a document is then refused whole)
        report = ImportReport()
        start = time.perf_counter()
        list(read_logs([cut], registry.resolver(ROOT / "resources", fetch=False), report=report))
        read = time.perf_counter() - start
        assert report.cut_off, cut
        cut.unlink()
        shown = f"{parse:.2f} s" if parse is not None else "—"
        print(f"| {'JSON Lines' if path == lines else 'indented JSON document'} ({count:,} entries) | "
              f"{len(data) / 2**20:.0f} MiB | {whole * 1000:.2f} ms | {cut_time:.2f} s | {read:.2f} s | {shown} |")
        path.unlink()
    print()
    print(f"said of the cut document: {report.cut_off[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    fixtures = args.shared / "fixtures"
    if fixtures.is_dir():
        real_logs(fixtures, args.repeats)
        print()
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        large(Path(work), args.mib, args.repeats)


if __name__ == "__main__":
    main()
