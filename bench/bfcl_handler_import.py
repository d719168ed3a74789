"""Import and score throughput of BFCL result files written through model handlers.

Usage: python bench/bfcl_handler_import.py [--entries 1000] [--resources resources]

Writes, per handler format, a result file of ``--entries`` lines: the ground truth of the BFCL
entries (every 5th step's first string value altered, so both verdicts occur), cycling through
the 800 entries, each step in that handler's own format, in the folder BFCL names after a model of
that handler (so the handler is chosen from the folder), with an ``inference_log`` carrying the
turns' questions (so the data release is matched). Times the import (decode, data-release choice,
record check inputs) and the replay of every entry separately, and once more for the xLAM file in
a folder no model key names (the decoder then chosen by content). Prints one line per format and a
JSON summary.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bfcl_formats import FORMATS  # noqa: E402  (the test helpers' writers)

from prefix_audit.benchmarks.bfcl import BfclBenchmark, import_result_file, load_data  # noqa: E402
from prefix_audit.benchmarks.bfcl.data import DATA_PINS  # noqa: E402
from prefix_audit.benchmarks.bfcl.handlers import model_config  # noqa: E402
from prefix_audit.core.calls import ToolCall, parse_call_string  # noqa: E402
from prefix_audit.replay.checker import replay  # noqa: E402

SHOWN = ("call objects (OpenAI FC)", "Python call text (prompting)", "xLAM JSON text", "Qwen FC <tool_call>",
         "Llama 3.1 {name, parameters}", "FunctionGemma")


def _altered(call: ToolCall, n: int) -> ToolCall:
    key = next((k for k, v in call.kwargs.items() if isinstance(v, str)), None)
    if n % 5 or key is None:
        return call
    return ToolCall(call.name, (), {**call.kwargs, key: call.kwargs[key] + "_x"})


def _lines(bench: BfclBenchmark, write, entries: int) -> list[dict]:
    ids = list(bench.task_ids())
    lines = []
    for n in range(entries):
        entry = bench.entry(ids[n % len(ids)])
        turns, log = [], []
        for t, gt in enumerate(entry.ground_truth):
            calls = [parse_call_string(c) for c in gt]
            turns.append([write([_altered(c, n + i)]) for i, c in enumerate(calls) if not c.args])
            log += [[{"role": "state_info"}],
                    {"begin_of_turn_query": [{"role": "user", "content": q} for q in entry.user_texts(t)]}]
        lines.append({"id": entry.id, "result": turns, "inference_log": log})
    return lines


def _timed(path: Path, bench: BfclBenchmark, releases: dict) -> tuple[float, float, int, str]:
    start = time.perf_counter()
    items = list(import_result_file(path, config=model_config(bench.data.root), releases=releases))
    imported = time.perf_counter() - start
    start = time.perf_counter()
    successes = sum(replay(item.rollout, bench).Y for item in items)
    scored = time.perf_counter() - start
    return imported, scored, successes, items[0].rollout.meta["bfcl_handler"]["chosen_by"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--resources", default="resources")
    args = parser.parse_args()
    data = load_data(args.resources)
    releases_pins = {p.version: (lambda p=p: load_data(args.resources, p)) for p in DATA_PINS}
    bench = BfclBenchmark(data, releases=releases_pins)
    releases = {r: bench.data_of(r) for r in bench.releases()}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(name, FORMATS[name][0].replace("/", "_")) for name in SHOWN] + [("xLAM JSON text", "my-fork")]
        for name, folder in runs:
            path = Path(tmp) / "result" / folder / "BFCL_v4_multi_turn_result.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(line) + "\n"
                                    for line in _lines(bench, FORMATS[name][1], args.entries)))
            _timed(path, bench, releases) if not rows else None  # warm the caches once
            imported, scored, successes, how = _timed(path, bench, releases)
            label = f"{name} ({how})"
            rows[label] = {"import_entries_per_s": round(args.entries / imported),
                           "score_entries_per_s": round(args.entries / scored), "Y=1": successes}
            print(f"{label}: import {imported:.2f} s ({args.entries / imported:,.0f} entries/s), "
                  f"score {scored:.2f} s ({args.entries / scored:,.0f} entries/s), Y = 1 on {successes}")
    print(json.dumps({"entries": args.entries, "formats": rows, "python": platform.python_version()}))


if __name__ == "__main__":
    main()
