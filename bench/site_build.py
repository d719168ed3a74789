"""How long the audit browser takes to build: `prefix-audit view ROOT -o SITE`, whole commands.

    python bench/site_build.py --shared ../shared [--repeats 3]   # audits the three real-log corpora first
    python bench/site_build.py --root RESULTS [--repeats 3]       # the site of a results root you have

With ``--shared`` it audits ``real-logs``, ``real-logs-3`` and ``real-logs-5`` together into a temporary
folder (``--no-site --no-figures``; the health cache of ``--resources`` is used as the audit uses it),
then times ``prefix-audit view`` on it ``--repeats`` times, at one worker and at the default, alternating,
each into a fresh folder, and prints the median and every run with the site's size. Same bytes at every
worker count is checked on the way (the first site of each count compared file by file).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPORA = ("real-logs", "real-logs-3", "real-logs-5")
CLI = [sys.executable, "-m", "prefix_audit.cli"]


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def _same_tree(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if files != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all(filecmp.cmp(a / f, b / f, shallow=False) for f in files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--shared", type=Path, help="the shared folder holding fixtures/real-logs*")
    where.add_argument("--root", type=Path, help="a results root (an `audit -o` folder or the workflow's results/)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="site-bench-"))
    try:
        root = args.root
        if root is None:
            root = work / "audit"
            logs = [str(args.shared / "fixtures" / c) for c in CORPORA]
            took = _run([*CLI, "audit", *logs, "-o", str(root), "--no-site", "--no-figures"])
            print(f"audit of {', '.join(CORPORA)}: {took:.1f} s")
        times: dict[str, list[float]] = {"1": [], "default": []}
        first: dict[str, Path] = {}
        for r in range(args.repeats):
            for workers in times:
                site = work / f"site-{workers}-{r}"
                command = [*CLI, "view", str(root), "-o", str(site), *(["--workers", "1"] if workers == "1" else [])]
                times[workers].append(_run(command))
                first.setdefault(workers, site)
        files = [p for p in first["default"].rglob("*") if p.is_file()]
        rollouts = sum(1 for p in files if p.parent.name == "r")
        print(f"site: {rollouts} rollout pages, {len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MiB; "
              f"same bytes at 1 worker and the default: {_same_tree(first['1'], first['default'])}")
        for workers, runs in times.items():
            print(f"prefix-audit view, {workers} worker(s): median {statistics.median(runs):.1f} s "
                  f"(runs {', '.join(f'{t:.1f}' for t in runs)})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
