"""BFCL result files written through model handlers: import and score throughput, and whether a
real file's entries give the same episodes in every handler's format.

Usage: python bench/bfcl_handler_import.py [--entries 1000] [--resources resources]
                                           [--real FILE ...] [--only throughput|formats]

Throughput: writes, per handler format, a result file of ``--entries`` lines: the ground truth of
the BFCL entries (every 5th step's first string value altered, so both verdicts occur), cycling
through the 800 entries, each step in that handler's own format, in the folder BFCL names after a
model of that handler (so the handler is chosen from the folder), with an ``inference_log`` carrying
the turns' questions (so the data release is matched). Times the import (decode, data-release
choice, record check inputs) and the replay of every entry separately, and once more for the xLAM
file in a folder no model key names (the decoder then chosen by content). Prints one line per format.

Formats: each real function-calling result file (``--real``; by default gpt-oss-20b's two files of
``../shared/fixtures/real-logs/bfcl``) is written in every handler family's format
(``tests/bfcl_formats.py``: a step whose calls all parse one step per call, a step holding a call
whose arguments do not parse whole), each entry kept only where BFCL's own decoders of both handlers
(``decode_execute`` from the wheel) execute the same calls of it, and imported under a model key of
that handler. Prints, per format, on how many of those entries the episode (T, FED, category, Y,
undecodable steps) is the original file's, how many of them hold an undecodable step, and the
entries the format cannot write and why. Ends with a JSON summary of both.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bfcl_formats import FORMATS, Behaviour, reencoded_lines, same_behaviour  # noqa: E402  (test helpers)
from bfcl_handler_reference import reference_decoder  # noqa: E402

from prefix_audit.benchmarks.bfcl import BfclBenchmark, import_result_file, load_data  # noqa: E402
from prefix_audit.benchmarks.bfcl.data import DATA_PINS  # noqa: E402
from prefix_audit.benchmarks.bfcl.handlers import model_config  # noqa: E402
from prefix_audit.benchmarks.bfcl.reading import BfclReading  # noqa: E402
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
    items = list(import_result_file(path, reading=BfclReading(model_config(bench.data.root), releases)))
    imported = time.perf_counter() - start
    start = time.perf_counter()
    successes = sum(replay(item.rollout, bench).Y for item in items)
    scored = time.perf_counter() - start
    return imported, scored, successes, items[0].rollout.meta["bfcl_handler"]["chosen_by"]


def _episodes(path: Path, bench: BfclBenchmark, model: str | None = None) -> dict[str, Behaviour]:
    items = import_result_file(path, model=model, reading=BfclReading(model_config(bench.data.root)))
    return {item.rollout.task_id: same_behaviour(replay(item.rollout, bench)) for item in items}


def same_episodes(bench: BfclBenchmark, files: list[Path]) -> dict:
    """Per handler format: entries written, of them with the original's episode, of them holding an
    undecodable step, and the entries the format cannot write (by reason)."""
    config = model_config(bench.data.root)
    fc_key = FORMATS["call objects (OpenAI FC)"][0]
    original = reference_decoder(bench.data.root, config[fc_key].handler, config[fc_key].is_fc)
    rows: dict[str, dict] = {name: {"entries": 0, "identical": 0, "with_undecodable": 0, "unwritable": Counter()}
                             for name in FORMATS}
    with tempfile.TemporaryDirectory() as tmp:
        for file in files:
            lines = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
            reference = _episodes(file, bench)  # its handler chosen by content, as audited
            for name, (key, write) in FORMATS.items():
                decode = reference_decoder(bench.data.root, config[key].handler, config[key].is_fc)
                written, left_out = reencoded_lines(lines, write, original, decode)
                path = Path(tmp) / key.replace("/", "_") / file.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(json.dumps(line) + "\n" for line in written))
                row = rows[name]
                row["unwritable"] += left_out
                for task_id, episode in _episodes(path, bench, key).items():
                    row["entries"] += 1
                    row["identical"] += episode == reference[task_id]
                    row["with_undecodable"] += reference[task_id].undecodable > 0
    for name, row in rows.items():
        reasons = "; ".join(f"{n}: {why}" for why, n in sorted(row["unwritable"].items()))
        print(f"{name}: identical on {row['identical']} of {row['entries']} entries ({row['with_undecodable']} "
              f"with an undecodable step); not written: {reasons or 'none'}")
    entries, identical = sum(r["entries"] for r in rows.values()), sum(r["identical"] for r in rows.values())
    print(f"all formats: identical on {identical} of {entries} entries")
    return {name: {**row, "unwritable": dict(row["unwritable"])} for name, row in rows.items()}


def throughput(bench: BfclBenchmark, entries: int) -> dict:
    releases = {r: bench.data_of(r) for r in bench.releases()}
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(name, FORMATS[name][0].replace("/", "_")) for name in SHOWN] + [("xLAM JSON text", "my-fork")]
        for name, folder in runs:
            path = Path(tmp) / "result" / folder / "BFCL_v4_multi_turn_result.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(line) + "\n" for line in _lines(bench, FORMATS[name][1], entries)))
            _timed(path, bench, releases) if not rows else None  # warm the caches once
            imported, scored, successes, how = _timed(path, bench, releases)
            label = f"{name} ({how})"
            rows[label] = {"import_entries_per_s": round(entries / imported),
                           "score_entries_per_s": round(entries / scored), "Y=1": successes}
            print(f"{label}: import {imported:.2f} s ({entries / imported:,.0f} entries/s), "
                  f"score {scored:.2f} s ({entries / scored:,.0f} entries/s), Y = 1 on {successes}")
    return rows


REAL = ROOT.parent / "shared" / "fixtures" / "real-logs" / "bfcl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--resources", default="resources")
    parser.add_argument("--real", type=Path, nargs="+", default=sorted(REAL.glob("gpt-oss-20b_*_result.json")),
                        help="function-calling result files to write in every handler's format")
    parser.add_argument("--only", choices=("throughput", "formats"), default=None)
    args = parser.parse_args()
    data = load_data(args.resources)
    releases_pins = {p.version: (lambda p=p: load_data(args.resources, p)) for p in DATA_PINS}
    bench = BfclBenchmark(data, releases=releases_pins)
    summary: dict = {"python": platform.python_version()}
    if args.only != "formats":
        summary |= {"entries": args.entries, "throughput": throughput(bench, args.entries)}
    if args.only != "throughput":
        if not args.real:
            parser.error(f"no real function-calling result file: give --real FILE (none in {REAL})")
        summary |= {"real_files": [p.name for p in args.real], "formats": same_episodes(bench, args.real)}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
