"""What the rerun tracking costs every Snakemake invocation: the code fingerprints of every workflow script.

    python bench/fingerprint.py [--runs 3] [--src SRC]

Each run is a fresh interpreter (as each `snakemake` command is) that computes the fingerprint of
every script in workflow/scripts for no dataset and for each registered one (more than any one run
of the workflow asks for), and prints the seconds that took and a digest of all the fingerprints
(the same digest means the same rerun decisions). ``--src`` times another copy of the package (a
worktree's src/) on this repository's scripts.

Two settings are timed: ``parsed``, with PYTHONDONTWRITEBYTECODE set (every source is parsed, nothing is
kept), and ``kept``, with a fresh bytecode folder (PYTHONPYCACHEPREFIX) that the first run fills and
the others read (what each source imports, kept beside its bytecode).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RUN = """
import hashlib, sys, time
from pathlib import Path
from prefix_audit.pipeline.fingerprint import code_fingerprint
from prefix_audit.replay import registry
datasets = [None, *([d] for d in registry.dataset_names())]
scripts = sorted(Path(sys.argv[1]).glob("*.py"))
started = time.perf_counter()
prints = [code_fingerprint(script, d) for script in scripts for d in datasets]
print(time.perf_counter() - started, hashlib.sha256("".join(prints).encode()).hexdigest()[:16])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    base["PYTHONPATH"] = str(args.src.resolve())
    with tempfile.TemporaryDirectory() as bytecode:
        for setting, env in (("parsed", {**base, "PYTHONDONTWRITEBYTECODE": "1"}),
                             ("kept", {**base, "PYTHONPYCACHEPREFIX": bytecode})):
            times, digests = [], set()
            for _ in range(args.runs):
                out = subprocess.run([sys.executable, "-c", _RUN, str(ROOT / "workflow" / "scripts")], env=env,
                                     capture_output=True, text=True, check=True).stdout.split()
                times.append(float(out[0]))
                digests.add(out[1])
            print(f"fingerprints of every script × dataset, {setting}: median {statistics.median(times):.2f} s "
                  f"(min {min(times):.2f}, max {max(times):.2f}, {args.runs} runs); "
                  f"digest {', '.join(sorted(digests))}")


if __name__ == "__main__":
    main()
