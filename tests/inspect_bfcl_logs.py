"""Real Inspect AI eval logs of inspect_evals' own ``bfcl`` task (its multi-turn categories), for the
importer of Inspect logs: ``inspect_ai.eval`` runs the task with Inspect's ``mockllm/model``, whose
replies a script writes from each entry's own ground truth (``sample.metadata["raw_ground_truth"]``),
one scenario per entry.

inspect_evals fetches BFCL's data and environment code from GitHub into its cache; here the cache
(a directory the caller names, never the user's own) is filled from the pinned bfcl-eval wheel in
``resources`` instead, in the layout the task reads: ``<cache>/BFCL/`` holds the wheel's
``bfcl_eval/data/`` and ``<cache>/BFCL/func_source_code/`` its environment sources, their
``bfcl_eval…func_source_code.`` imports made local as inspect_evals' downloader makes them.
That wheel's ``bfcl_eval/data/`` and environment sources are byte for byte gorilla's at the commit
inspect_evals 0.26.0 pins (dac44e7), so the cache is the one its download makes. inspect_evals reads
``INSPECT_EVALS_CACHE_DIR`` once, at import, and loads the environment classes once per process, so
every log is written by a child process of the same interpreter (Inspect's own run state in a scratch
``XDG_DATA_HOME``), and the log read back there: every (entry, epoch) ran, without error, with the
replies the script made for it.

The samples run one at a time, so the mock model knows a run by its opening (first user message and
the tools offered) and its epoch by the runs of that entry before it. A few entries' ground truth
fails under inspect_evals even played exactly (``GOLD_SCORED_0``); ``expected_value`` knows them.

    python tests/inspect_bfcl_logs.py OUT_DIR --cache CACHE --resources resources \\
        [--format eval|json] [--epochs 2] [--scenario ID=SCENARIO ...]

prints the path of the log written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

SCENARIOS: dict[str, str] = {
    "gold": "every turn's ground-truth calls, one per assistant message, then a text reply",
    "unknown_tool": "first a call to a function that does not exist, then gold",
    "rejected": "first a call the environment rejects (it returns an error and changes nothing), then gold",
    "malformed": "first a call whose arguments do not parse (ToolCall.parse_error), then one whose argument "
                 "has the wrong type (schema validation fails), then gold",
    "parallel": "gold, but the first two calls of the first turn with two or more in one assistant message",
    "early_stop": "a text reply with no calls on the first turn that has ground-truth calls, gold on the others",
    "epoch_split": "epoch 1 gold, every later epoch early_stop",
}

# Entry -> scenario of a default run: each scenario once on multi_turn_base, and gold on miss_func
# (its withheld functions come back in a later turn with an extra user message).
DEFAULT_SCENARIOS: dict[str, str] = {
    "multi_turn_base_0": "gold",
    "multi_turn_base_1": "unknown_tool",
    "multi_turn_base_2": "rejected",
    "multi_turn_base_3": "malformed",
    "multi_turn_base_5": "parallel",
    "multi_turn_base_4": "early_stop",
    "multi_turn_base_6": "epoch_split",
    "multi_turn_miss_func_0": "gold",
}


# Entries whose ground truth, played exactly, inspect_evals 0.26.0 scores 0 (checked on every entry of
# both categories; the same numbers fail in either). Every scenario here ends in gold, so they score 0.
GOLD_SCORED_0: dict[str, str] = {
    "multi_turn_base_90": "aliasing: post_tweet keeps the recorded `mentions` list, mention() appends to it, "
                          "and the scorer's replay of the recorded calls posts the grown list",
    "multi_turn_base_147": "aliasing, as multi_turn_base_90",
    "multi_turn_base_173": "close_ticket(ticket_id='ticket_001'): the schema says integer, Inspect rejects the "
                           "call (ToolCallError 'parsing') and it never runs",
    "multi_turn_miss_func_90": "aliasing, as multi_turn_base_90",
    "multi_turn_miss_func_147": "aliasing, as multi_turn_base_90",
    "multi_turn_miss_func_173": "schema, as multi_turn_base_173",
    "multi_turn_miss_func_49": "the ground truth of turn 1 calls tail, withheld until turn 3: 'Tool tail not found'",
}


def expected_value(scenario: str, epoch: int, sample_id: str = "") -> int:
    """The verdict a scenario's run should get: inspect_evals' score value, 1 correct, 0 not."""
    if sample_id in GOLD_SCORED_0:
        return 0
    return 0 if scenario == "early_stop" or (scenario == "epoch_split" and epoch > 1) else 1


class Call(NamedTuple):
    """A scripted tool call; ``raw``, when set, the arguments text that does not parse."""

    name: str
    arguments: dict[str, Any]
    raw: str | None = None


UNKNOWN_FUNCTION = "no_such_function"
# Per environment class, calls it answers with an error and no change of state (the first one offered is made).
REJECTED_CALLS: dict[str, list[Call]] = {
    "GorillaFileSystem": [Call("cd", {"folder": "no_such_folder"}), Call("cat", {"file_name": "no_such_file"})],
    "TwitterAPI": [Call("get_tweet", {"tweet_id": 999999}), Call("get_tweet_comments", {"tweet_id": 999999})],
    "MessageAPI": [Call("get_user_id", {"user": "no_such_user"})],
    "TicketAPI": [Call("get_ticket", {"ticket_id": 999999})],
    "TradingBot": [Call("get_stock_info", {"symbol": "NO_SUCH_SYMBOL"}),
                   Call("get_order_details", {"order_id": 999999})],
    "TravelAPI": [Call("retrieve_invoice", {"access_token": "no_such_token"}),
                  Call("cancel_booking", {"access_token": "no_such_token", "booking_id": "no_such_booking"})],
    "VehicleControlAPI": [Call("displayCarStatus", {"option": "no_such_option"}),
                          Call("setHeadlights", {"mode": "no_such_mode"})],
}
MODEL = "mockllm/model"
CHILD_FLAG = "--run-child"


# --- the cache ---------------------------------------------------------------------------------

def wheel_dir(resources: Path) -> Path:
    """The unpacked pinned bfcl-eval wheel, fetched into ``resources`` if it is not there yet."""
    from prefix_audit.benchmarks.bfcl.data import DEFAULT_PIN
    from prefix_audit.core.fetch import fetch_wheel

    return fetch_wheel(DEFAULT_PIN, resources)


def prepare_cache(cache_dir: Path, resources: Path) -> Path:
    """``cache_dir/BFCL`` as inspect_evals' bfcl expects it after its GitHub download; idempotent."""
    package = wheel_dir(Path(resources)) / "bfcl_eval"
    dataset = Path(cache_dir) / "BFCL"
    if not (dataset / "BFCL_v4_simple_python.json").exists():
        dataset.mkdir(parents=True, exist_ok=True)
        shutil.copytree(package / "data", dataset, dirs_exist_ok=True)
    func_source = dataset / "func_source_code"
    if not func_source.exists():
        staging = dataset / ".func_source_code.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for source in sorted((package / "eval_checker" / "multi_turn_eval" / "func_source_code").glob("*.py")):
            text = source.read_text(encoding="utf-8")
            text = text.replace("from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.", "from ")
            (staging / source.name).write_text(text, encoding="utf-8")
        staging.rename(func_source)
    return dataset


# --- the log -----------------------------------------------------------------------------------

def write_bfcl_log(log_dir: Path, cache_dir: Path, resources: Path, *, scenarios: dict[str, str] | None = None,
                   epochs: int = 2, log_format: str = "eval") -> Path:
    """Prepare the BFCL cache in cache_dir from the wheel in resources, run inspect_evals' bfcl on the
    entries the scenarios name (sample ids, e.g. 'multi_turn_base_0'), return the single log file written."""
    scenarios = dict(DEFAULT_SCENARIOS if scenarios is None else scenarios)
    unknown = sorted(set(scenarios.values()) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; known: {sorted(SCENARIOS)}")
    if not scenarios:
        raise ValueError("no entries to run")
    if log_format not in ("eval", "json"):
        raise ValueError(f"log_format must be 'eval' or 'json', not {log_format!r}")
    log_dir, cache_dir = Path(log_dir).resolve(), Path(cache_dir).resolve()
    prepare_cache(cache_dir, Path(resources))
    log_dir.mkdir(parents=True, exist_ok=True)
    before = set(log_dir.iterdir())
    spec = {"log_dir": str(log_dir), "scenarios": scenarios, "epochs": epochs, "log_format": log_format}
    with tempfile.TemporaryDirectory(prefix="inspect-bfcl-data.") as data_home:
        # Inspect's own state of the run (traces, sample buffer) in a scratch XDG data directory
        env = {**os.environ, "INSPECT_EVALS_CACHE_DIR": str(cache_dir), "XDG_DATA_HOME": data_home}
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), CHILD_FLAG, json.dumps(spec)],
                              env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the Inspect run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    written = sorted(p for p in set(log_dir.iterdir()) - before if p.suffix == f".{log_format}")
    if len(written) != 1:
        raise RuntimeError(f"expected one new .{log_format} log in {log_dir}, found {written}:\n{proc.stderr}")
    return written[0]


# --- the child: the run itself ----------------------------------------------------------------

def _category(sample_id: str) -> str:
    return sample_id.rsplit("_", 1)[0]


def _methods(metadata: dict[str, Any]) -> dict[str, Any]:
    """The methods of a fresh copy of an entry's environments, by name, as inspect_evals builds them."""
    from inspect_evals.bfcl.backends import build_tool_mapping, create_instances

    return build_tool_mapping(create_instances(metadata["involved_classes"], metadata["initial_config"],
                                               metadata.get("long_context", False)))


class Script:
    """The mock model: per (entry, epoch) a plan — per turn the assistant replies, each a list of
    tool calls or a text — written from the entry's ground truth, and served by position: the
    turn is the number of text-only assistant messages so far (each ends a turn's tool loop), the
    step the number of assistant messages since.

    A run is known by its first user message and the names of the tools offered (a miss_func
    entry opens as its multi_turn_base twin does, with fewer tools); its epoch by the runs of the
    entry started before it, the samples running one at a time. ``emitted`` keeps, per (entry,
    epoch), the tool names of every reply, to check the log against."""

    def __init__(self, samples: dict[str, Any], scenarios: dict[str, str]):
        self.samples = samples
        self.scenarios = scenarios
        self.by_opening: dict[tuple[str, frozenset[str]], str] = {}
        for sid in scenarios:
            key = self._opening(samples[sid].metadata)
            if key in self.by_opening:
                raise ValueError(f"{sid} and {self.by_opening[key]} open alike (message and tools): "
                                 "write them to separate logs")
            self.by_opening[key] = sid
        self.runs: dict[str, int] = {}  # sample id -> runs started (the epoch, runs being sequential)
        self.plan: list[list[Any]] = []
        self.emitted: dict[tuple[str, int], list[list[str]]] = {}
        self.current: list[list[str]] = []

    @staticmethod
    def _opening(metadata: dict[str, Any]) -> tuple[str, frozenset[str]]:
        """The first user message and the tools of the first turn of an entry (as inspect_evals'
        multi-turn solver offers them: its environments' methods, less the withheld and excluded)."""
        first = next(m["content"] for turn in metadata["turns"] for m in turn if m.get("role", "user") == "user")
        hidden = {n for names in (metadata.get("missed_function") or {}).values() for n in names}
        hidden |= set(metadata.get("excluded_function") or [])
        return first, frozenset(set(_methods(metadata)) - hidden)

    def __call__(self, input: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

        assistants = [m for m in input if isinstance(m, ChatMessageAssistant)]
        if not assistants:  # a new run: which entry, which epoch
            first = next(m.text for m in input if isinstance(m, ChatMessageUser))
            sid = self.by_opening[(first, frozenset(t.name for t in tools))]
            self.runs[sid] = epoch = self.runs.get(sid, 0) + 1
            self.current = self.emitted[(sid, epoch)] = []
            scenario = self.scenarios[sid]
            if scenario == "epoch_split":
                scenario = "gold" if epoch == 1 else "early_stop"
            self.plan = self._plan(self.samples[sid].metadata, scenario, [t.name for t in tools])
        turn = sum(1 for m in assistants if not m.tool_calls)
        step = 0
        for m in reversed(assistants):
            if not m.tool_calls:
                break
            step += 1
        replies = self.plan[turn] if turn < len(self.plan) else []
        return self._output(replies[step] if step < len(replies) else "Done.", turn, step)

    def _plan(self, metadata: dict[str, Any], scenario: str, tool_names: list[str]) -> list[list[Any]]:
        import inspect

        from prefix_audit.core.calls import parse_call_string

        methods = _methods(metadata)
        truth: list[list[Call]] = []
        for turn in metadata["raw_ground_truth"]:
            calls = []
            for text in turn:
                call = parse_call_string(text)
                if not call.well_formed:
                    raise ValueError(f"ground-truth call {text!r} does not parse: {call.parse_error}")
                # positional arguments (``sort('a.pdf')``) by name, as a function-calling model sends them
                names = list(inspect.signature(methods[call.name]).parameters)
                calls.append(Call(call.name, {**dict(zip(names, call.args)), **call.kwargs}))
            truth.append(calls)
        plan: list[list[Any]] = [[[c] for c in calls] + ["Done."] for calls in truth]
        offered = [c for calls in truth for c in calls if c.name in tool_names]  # callable in the first turn
        if scenario == "gold":
            pass
        elif scenario == "early_stop":
            t = next((i for i, calls in enumerate(truth) if calls), None)
            if t is None:
                raise ValueError("early_stop needs a turn with ground-truth calls")
            plan[t] = ["I cannot help with that."]
        elif scenario == "unknown_tool":
            assert UNKNOWN_FUNCTION not in tool_names
            plan[0].insert(0, [Call(UNKNOWN_FUNCTION, {"path": "."})])
        elif scenario == "rejected":
            call = next((c for cls, calls in REJECTED_CALLS.items() if cls in metadata["involved_classes"]
                         for c in calls if c.name in tool_names), None)
            if call is None:
                raise ValueError(f"no rejected call known for {metadata['involved_classes']}")
            plan[0].insert(0, [call])
        elif scenario == "malformed":
            if not offered:
                raise ValueError("malformed needs a ground-truth call of a function offered in the first turn")
            first = offered[0]
            bad: list[Any] = [[Call(first.name, {}, '{"' + next(iter(first.arguments), "x") + '": ')]]
            typed = next(((c, k) for c in offered for k, v in c.arguments.items() if isinstance(v, str)), None)
            if typed is not None:
                call, key = typed
                bad.append([Call(call.name, {**call.arguments, key: 12345})])
            plan[0][0:0] = bad
        elif scenario == "parallel":
            t = next((i for i, calls in enumerate(truth) if len(calls) >= 2), None)
            if t is None:
                raise ValueError("parallel needs a turn with two ground-truth calls")
            plan[t] = [truth[t][:2]] + [[c] for c in truth[t][2:]] + ["Done."]
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
        return plan

    def _output(self, reply: str | list[Call], turn: int, step: int) -> Any:
        from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
        from inspect_ai.tool import ToolCall

        usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        if isinstance(reply, str):
            self.current.append([])
            message = ChatMessageAssistant(content=reply, model=MODEL, source="generate")
            return ModelOutput(model=MODEL, choices=[ChatCompletionChoice(message=message, stop_reason="stop")],
                               usage=usage)
        self.current.append([c.name for c in reply])
        tool_calls = [ToolCall(id=f"call_{turn}_{step}_{i}", function=c.name, arguments=c.arguments,
                               parse_error=None if c.raw is None else _parse_error(c.raw))
                      for i, c in enumerate(reply)]
        message = ChatMessageAssistant(content="", model=MODEL, source="generate", tool_calls=tool_calls)
        return ModelOutput(model=MODEL, choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
                           usage=usage)


def _parse_error(raw: str) -> str:
    """What Inspect's providers record as ``ToolCall.parse_error`` when arguments are not JSON."""
    try:
        json.loads(raw)
    except json.JSONDecodeError as ex:
        return f"Error parsing the following tool call arguments:\n\n{raw}\n\nError details: {ex}"
    raise ValueError(f"{raw!r} parses")


def _run_child(spec: dict[str, Any]) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from inspect_evals.bfcl import bfcl

    scenarios: dict[str, str] = spec["scenarios"]
    categories = sorted({_category(sid) for sid in scenarios})
    task = bfcl(categories=categories)
    samples = {str(s.id): s for s in task.dataset if str(s.id) in scenarios}
    missing = sorted(set(scenarios) - set(samples))
    if missing:
        raise SystemExit(f"no such entries in {categories}: {missing}")
    script = Script(samples, scenarios)
    model = get_model(MODEL, custom_outputs=script)
    logs = inspect_eval(task, model=model, sample_id=list(scenarios), epochs=spec["epochs"], max_samples=1,
                        display="none", log_dir=spec["log_dir"], log_format=spec["log_format"],
                        fail_on_error=False)
    if len(logs) != 1 or logs[0].status != "success":
        raise SystemExit(f"the eval did not succeed: {[(log.status, log.error) for log in logs]}")
    _check_log(logs[0].location, script, spec["epochs"])


def _check_log(location: str, script: Script, epochs: int) -> None:
    """Every (entry, epoch) ran without error, and its assistant messages are the script's replies
    for that entry and epoch (so the epoch the script counted is the log's)."""
    from inspect_ai.log import read_eval_log_samples
    from inspect_ai.model import ChatMessageAssistant

    seen = set()
    for sample in read_eval_log_samples(location, all_samples_required=False):
        key = (str(sample.id), sample.epoch)
        seen.add(key)
        if sample.error is not None:
            raise SystemExit(f"sample {key} failed: {sample.error.message}")
        replies = [[c.function for c in m.tool_calls or []] for m in sample.messages
                   if isinstance(m, ChatMessageAssistant)]
        if replies != script.emitted.get(key):
            raise SystemExit(f"sample {key}: the log's replies {replies} are not the script's "
                             f"{script.emitted.get(key)}")
    expected = {(sid, e) for sid in script.scenarios for e in range(1, epochs + 1)}
    if seen != expected:
        raise SystemExit(f"the log holds {sorted(seen)}, not {sorted(expected)}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == CHILD_FLAG:
        _run_child(json.loads(argv[1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--cache", type=Path, required=True, help="the BFCL cache to fill (a scratch directory)")
    parser.add_argument("--resources", type=Path, required=True, help="where the pinned bfcl-eval wheel is")
    parser.add_argument("--format", choices=("eval", "json"), default="eval")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--scenario", action="append", default=[], metavar="ID=SCENARIO",
                        help=f"an entry and its scenario ({', '.join(SCENARIOS)}); default: {DEFAULT_SCENARIOS}")
    args = parser.parse_args(argv)
    scenarios = None
    if args.scenario:
        scenarios = {}
        for item in args.scenario:
            sid, sep, name = item.partition("=")
            if not sep:
                parser.error(f"--scenario {item!r}: expected ID=SCENARIO")
            scenarios[sid] = name
    print(write_bfcl_log(args.out_dir, args.cache, args.resources, scenarios=scenarios, epochs=args.epochs,
                         log_format=args.format))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
