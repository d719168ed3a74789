"""What walking a folder of logs adds to an audit: ``expand_logs`` on a tree of N files.

Usage: python bench/log_folders.py [--files 1000] [--repeats 5] [--work DIR]

Builds a tree of ``--files`` files in the layouts the runners write — BFCL's ``result/<model>/multi_turn/``
beside ``score/<model>/multi_turn/`` (a result file of one entry and its score file per category and
model), tau2 results files, τ-bench v1 result files, ToolSandbox run folders (a ``result_summary.json``
each, counted as one file) — plus what people keep beside them: a README, a plot and a viewer's
``index.json`` per model folder, and files of no known format. Then times, ``--repeats`` times in
turn (median):

* ``folder``: ``expand_logs([root])`` — the walk, each file detected, the companions found, the
  skipped counted: what ``prefix-audit audit root/`` does before reading a log;
* ``by hand``: ``expand_logs(logs)`` with the same logs named one by one — the detection an audit of
  the files listed by hand does anyway (each named file's format is detected once);
* the difference: what the walk adds to the audit (the logs are then read alike, their formats known).

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from prefix_audit.replay import registry
from prefix_audit.replay.log_folders import expand_logs

CATEGORIES = ["base", "miss_func", "miss_param", "long_context"]


def build_tree(root: Path, files: int) -> dict[str, int]:
    """About ``files`` files under ``root``, by kind (counts returned)."""
    counts = dict.fromkeys(["bfcl result", "bfcl score", "tau2 results", "τ v1 results", "toolsandbox run",
                            "readme/plot/index", "no known format"], 0)
    model = 0
    while sum(counts.values()) < files:
        name = f"model_{model}"
        for category in CATEGORIES:
            stem = f"BFCL_v3_multi_turn_{category}"
            result = root / "result" / name / "multi_turn" / f"{stem}_result.json"
            result.parent.mkdir(parents=True, exist_ok=True)
            result.write_text(json.dumps({"id": f"multi_turn_{category}_0", "result": [[[]]]}) + "\n")
            score = root / "score" / name / "multi_turn" / f"{stem}_score.json"
            score.parent.mkdir(parents=True, exist_ok=True)
            score.write_text(json.dumps({"accuracy": 1.0, "correct_count": 1, "total_count": 1}) + "\n")
            counts["bfcl result"] += 1
            counts["bfcl score"] += 1
        sims = root / "simulations"
        sims.mkdir(exist_ok=True)
        (sims / f"{name}_airline.json").write_text(json.dumps({"info": {}, "tasks": [], "simulations": []}))
        counts["tau2 results"] += 1
        v1 = root / "tau_v1_results"
        v1.mkdir(exist_ok=True)
        (v1 / f"tool-calling-{name}.json").write_text(json.dumps([{"task_id": 0, "traj": [], "reward": 0}]))
        counts["τ v1 results"] += 1
        run = root / "toolsandbox" / f"agent_{name}_user_gpt-4o_06_12_2024_09_00_00"
        run.mkdir(parents=True, exist_ok=True)
        (run / "result_summary.json").write_text(json.dumps({"per_scenario_results": []}))
        counts["toolsandbox run"] += 1
        folder = root / "result" / name
        (folder / "README.md").write_text("# notes\n")
        (folder / "accuracy.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
        (folder / "index.json").write_text("{}")
        counts["readme/plot/index"] += 3
        (folder / "run.cfg").write_text("temperature = 0\n")
        counts["no known format"] += 1
        model += 1
    return counts


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, help="where the tree is built (default: a temporary folder)")
    args = parser.parse_args()
    registry.load()
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        root = Path(work) / "runs"
        counts = build_tree(root, args.files)
        expansion = expand_logs([root])  # once before timing: imports and the file system's caches warm
        logs = [source.path for source in expansion.logs]
        folder, by_hand = [], []
        for _ in range(args.repeats):
            seconds, walked = _timed(lambda: expand_logs([root]))
            folder.append(seconds)
            assert [s.path for s in walked.logs] == logs
            by_hand.append(_timed(lambda: expand_logs(logs))[0])
    total = sum(counts.values())
    walked_median, hand_median = statistics.median(folder), statistics.median(by_hand)
    print(f"tree: {total} files ({', '.join(f'{n} {kind}' for kind, n in counts.items())}); "
          f"{len(logs)} logs, {len(expansion.skipped)} skipped "
          f"({'; '.join(expansion.tally().lines())})\n")
    print(f"| files | logs | skipped | folder (median of {args.repeats}) | by hand | added by the walk | per file |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {total} | {len(logs)} | {len(expansion.skipped)} | {walked_median * 1000:.0f} ms | "
          f"{hand_median * 1000:.0f} ms | {(walked_median - hand_median) * 1000:+.0f} ms | "
          f"{walked_median / total * 1e6:.0f} µs |")


if __name__ == "__main__":
    main()
