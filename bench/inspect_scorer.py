"""Time of scoring an Inspect AI log with the FED scorer against ``prefix-audit audit`` of the same log.

Writes real logs of inspect_evals' ``tau2_airline`` and ``bfcl`` tasks with the test suite's generators
(tests/inspect_tau2_logs.py, tests/inspect_bfcl_logs.py: the default scenarios, two epochs, ``.eval``),
then, each in a child process and ``--repeat`` times (the best counts), runs

* the audit: ``prefix-audit audit LOG -o DIR --resamples N`` (the default 10,000 resamples, or ``--resamples``);
* the scorer: ``inspect score LOG --scorer prefix_audit/fed --action append --output-file F``, Inspect's own
  command finding the scorer through the installed entry point;
* Inspect's floor: the same command with a scorer that does nothing (``noop.py@noop``, written to the
  work folder), i.e. what ``inspect score`` costs on that log whatever the scorer;

and prints the wall times, the scorer's ratio to the audit (the goal: at most 1.5×) and what the scorer
adds over Inspect's floor:

    .venv/bin/python bench/inspect_scorer.py [--work DIR] [--epochs 2] [--repeat 1] [--resamples 10000]

Needs the ``inspect`` extra, installed (``pip install -e '.[inspect]'``: the entry point).
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

NOOP = """from inspect_ai.scorer import Score, Scorer, mean, scorer


@scorer(metrics=[mean()])
def noop() -> Scorer:
    async def score(state, target) -> Score:
        return Score(value=0)

    return score
"""


def _logs(work: Path, epochs: int) -> dict[str, Path]:
    out = {}
    for name, write in (("tau2_airline", lambda d: inspect_tau2_logs.write_tau2_log(d, epochs=epochs)),
                        ("bfcl", lambda d: inspect_bfcl_logs.write_bfcl_log(d, work / "bfcl_cache", RESOURCES,
                                                                            epochs=epochs))):
        folder = work / name
        found = sorted(folder.glob("*.eval")) if folder.is_dir() else []
        out[name] = found[0] if found else write(folder)
    return out


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="keep the logs here (reused by a later run)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-inspect-scorer-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        noop = work / "noop.py"
        noop.write_text(NOOP)
        print("log | audit s | scorer s | scorer / audit | inspect score floor s | scorer − floor s")
        for name, log in _logs(work, args.epochs).items():
            audit = min(_timed([sys.executable, "-m", "prefix_audit.cli", "audit", str(log), "-o",
                                str(work / f"audit-{name}"), "--resamples", str(args.resamples),
                                "--resources", str(RESOURCES)]) for _ in range(args.repeat))
            rescore = [sys.executable, "-m", "inspect_ai", "score", str(log), "--action", "append", "--display",
                       "none", "--overwrite"]
            scored = min(_timed([*rescore, "--scorer", "prefix_audit/fed", "-S", f"resources={RESOURCES}",
                                 "--output-file", str(work / f"scored-{name}.eval")]) for _ in range(args.repeat))
            floor = min(_timed([*rescore, "--scorer", f"{noop}@noop", "--output-file", str(work / f"noop-{name}.eval")])
                        for _ in range(args.repeat))
            print(f"{name} | {audit:.2f} | {scored:.2f} | {scored / audit:.2f} | {floor:.2f} | {scored - floor:.2f}")

if __name__ == "__main__":
    main()
