"""BFCL result files read by the handler ``bfcl evaluate`` would choose: the model config read
statically, the choice by --model, result folder, score file or content, and the metamorphic
property — the same calls written in every handler family's format give the same episodes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from bfcl_formats import FORMATS, Behaviour, reencoded_lines, same_behaviour
from bfcl_logs import write_result_file, write_score_file

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.decoders import (
    HANDLER_DECODERS,
    call_objects,
    cohere_tool_calls,
    content_candidates,
    decoder_for,
    hammer_json,
    mining_objects,
    python_call_text,
    tool_call_tags,
)
from prefix_audit.benchmarks.bfcl.handlers import check_model_key, model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.benchmarks.bfcl.replay import SKIPPED_CALLS_KEY
from prefix_audit.benchmarks.bfcl.result_entry import read_step
from prefix_audit.cli import main
from prefix_audit.core.calls import ToolCall, parse_call_string, structured_call
from prefix_audit.core.records import BadLine, Rollout, Step
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import UnscorableRollout
from prefix_audit.replay.registry import RefusedOption

XLAM = "Salesforce/Llama-xLAM-2-8b-fc-r"


@pytest.fixture(scope="module")
def config(bfcl):
    return model_config(bfcl.data.root)


def test_the_model_config_is_read_whole_and_every_handler_has_a_decoder(config):
    assert len(config) >= 150
    handlers = {entry.handler for entry in config.values()}
    assert len(handlers) >= 50
    assert handlers <= set(HANDLER_DECODERS)
    assert config[XLAM].handler == "SalesforceLlamaHandler" and config[XLAM].is_fc
    assert (config["gpt-4o-2024-11-20"].handler, config["gpt-4o-2024-11-20"].is_fc) == ("OpenAIResponsesHandler",
                                                                                          False)


def test_content_candidates_are_one_per_decoder():
    decoders = [decoder_for(*candidate) for candidate in content_candidates()]
    assert len(decoders) == len(set(decoders)) >= 20
    assert [d.__name__ for d in decoders[:2]] == ["call_objects", "python_call_text"]


def _json_text_file(bfcl, path: Path, task_id: str = "multi_turn_base_1") -> Path:
    turns = [[json.dumps([{"name": c.name, "arguments": c.kwargs}]) for c in map(parse_call_string, turn)]
             for turn in bfcl.entry(task_id).ground_truth]
    return write_result_file(path, [{"id": task_id, "result": turns}])


def _only(path: Path, config, **kwargs):
    [item] = list(import_result_file(path, reading=BfclReading(config), **kwargs))
    assert not isinstance(item, BadLine)
    return item.rollout


def test_the_handler_comes_from_the_result_folder_as_bfcl_evaluate_takes_it(bfcl, config, tmp_path):
    path = _json_text_file(bfcl, tmp_path / "result" / XLAM.replace("/", "_") / "multi_turn" /
                           "BFCL_v4_multi_turn_base_result.json")
    rollout = _only(path, config)
    assert rollout.meta["bfcl_handler"] == {"handler": "SalesforceLlamaHandler", "is_fc": True, "model_key": XLAM,
                                            "chosen_by": "result folder", "decoder": "xlam_json"}
    assert rollout.model == "Salesforce_Llama-xLAM-2-8b-fc-r"  # BFCL's folder name, not "multi_turn"
    assert replay(rollout, bfcl).Y == 1


def test_model_option_then_score_file_then_content(bfcl, config, tmp_path):
    path = _json_text_file(bfcl, tmp_path / "run" / "BFCL_v4_multi_turn_base_result.json")
    by_option = _only(path, config, model="gpt-4o-2024-11-20")  # a prompting handler: JSON text is no call
    assert by_option.meta["bfcl_handler"]["chosen_by"] == "--model" and by_option.model == "gpt-4o-2024-11-20"
    assert replay(by_option, bfcl).Y == 0 and not any(step.calls for turn in by_option.turns for step in turn)
    assert by_option.recorded.undecoded_count == sum(map(len, by_option.turns))  # each step an attempt at a call

    score = write_score_file(tmp_path / "run" / "BFCL_v4_multi_turn_base_score.json", 1, {"multi_turn_base_1": "x"})
    score.write_text(score.read_text().replace('"model_name": "m"', f'"model_name": "{XLAM.replace("/", "_")}"'))
    by_score = _only(path, config)
    assert by_score.meta["bfcl_handler"]["chosen_by"] == "score file"
    assert by_score.meta["bfcl_handler"]["model_key"] == XLAM and replay(by_score, bfcl).Y == 1

    score.unlink()
    by_content = _only(path, config, model="my-fork-model")  # a label, not a key of the config
    choice = by_content.meta["bfcl_handler"]
    assert (choice["chosen_by"], choice["model_key"], choice["decoder"]) == ("content", None, "xlam_json")
    assert by_content.model == "my-fork-model" and replay(by_content, bfcl).Y == 1
    assert "chosen by content" in by_content.meta["reading"]


@pytest.mark.parametrize("key", ["", "../x", "a//b", "model name", "x\ny", "/abs"])
def test_an_implausible_model_key_is_refused(key):
    with pytest.raises(RefusedOption, match="no plausible BFCL model key"):
        check_model_key(key)


def test_the_cli_refuses_an_implausible_model_key_in_one_line(bfcl, tmp_path, capsys):
    from conftest import RESOURCES

    path = _json_text_file(bfcl, tmp_path / "BFCL_v4_multi_turn_base_result.json")
    code = main(["import", "bfcl", str(path), "--model", "../up", "-o", str(tmp_path / "r.jsonl"),
                 "--resources", str(RESOURCES)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "no plausible BFCL model key" in err[0]


# --- steps BFCL's runner executes nothing of --------------------------------------------------------

AS_JSON = object()  # the step's text is the step as written, as JSON


@pytest.mark.parametrize("decoder, raw, text, undecodable", [
    # a call whose arguments do not parse: the decoder fails on the whole step
    (call_objects, [{"cd": '{"folder": "x"}'}, {"ls": '{"a": '}], AS_JSON, True),
    (python_call_text, "[cd(folder='x'), ls(a=)]", "[cd(folder='x'), ls(a=)]", True),
    (tool_call_tags, '<tool_call>\n{"name": "ls", "arguments": "{\\"a\\": "}\n</tool_call>',
     '<tool_call>\n{"name": "ls", "arguments": "{\\"a\\": "}\n</tool_call>', True),
    (hammer_json, '```{"tool_calls": [{"name": "ls", "arguments": "{"}]}```',
     '```{"tool_calls": [{"name": "ls", "arguments": "{"}]}```', True),
    # a handler that reads no call where something stands: we read none either
    (mining_objects, ["cd(folder='x')"], "cd(folder='x')", True),
    (cohere_tool_calls, {"tool_name": "cd", "parameters": {}}, AS_JSON, True),
    # messages: text parts (Claude, Gemini, Nova keep a text reply so), prose, the empty step
    (call_objects, ["I moved the file.", "Anything else?"], "I moved the file.\nAnything else?", False),
    (python_call_text, "I moved the file.", "I moved the file.", False),
    (call_objects, [], "", False),
    (python_call_text, "", "", False),
])
def test_a_step_bfcl_executes_nothing_of_holds_no_action(decoder, raw, text, undecodable):
    """BFCL's loop ends the turn at a step whose decoding fails or reads no call, and executes none
    of it: the step holds no call, only the model's message, and is undecodable where it holds an
    attempt at a call."""
    read = read_step(raw, "result[0][0]", decoder)
    assert read.step.calls == () and read.step.text == (json.dumps(raw) if text is AS_JSON else text)
    assert (read.undecodable is not None) is undecodable


def test_a_rollout_an_earlier_import_left_calls_in_undecodable_steps_is_refused(bfcl):
    """Earlier imports kept an undecodable step's calls, listed in meta to be judged without
    running; replaying such a record now would run them."""
    step = Step((structured_call("cd", '{"folder": "x"}'),))
    rollout = Rollout("bfcl_v3", "multi_turn_base_0", "m", "imported", "r", ((step,),),
                      meta={SKIPPED_CALLS_KEY: [[0, 0, "BFCL's decoder fails"]]})
    with pytest.raises(UnscorableRollout, match="import the result file again"):
        replay(rollout, bfcl)


# --- metamorphic: one run, every handler's format -------------------------------------------------

@pytest.fixture(scope="module")
def decoders(bfcl, config):
    """BFCL's own ``decode_execute`` of each format's handler, and of the function-calling one."""
    from bfcl_handler_reference import reference_decoder

    return {name: reference_decoder(bfcl.data.root, config[key].handler, config[key].is_fc)
            for name, (key, _) in FORMATS.items()}


FUNCTION_CALLING = "call objects (OpenAI FC)"
# The formats that cannot write a call whose arguments do not parse (bfcl_formats says why).
NO_MALFORMED_CALLS = {"FunctionGemma", "GLM name and JSON lines"}


def _keyword_entries(bfcl, n: int) -> list[str]:
    ids = []
    for task_id in bfcl.task_ids()[::7]:
        calls = [parse_call_string(c) for turn in bfcl.entry(task_id).ground_truth for c in turn]
        if calls and all(not c.args for c in calls):
            ids.append(task_id)
    return ids[:n]


CHANGES = ("gold", "wrong_value", "drop_call", "unknown_tool", "empty_turn", "swap", "broken_arguments")


def _run(bfcl, task_id: str, change: str, rng: random.Random) -> list[list[dict]]:
    """The entry's ground truth with one change a real model makes, as a function-calling result
    (one call per step, every turn ended by an empty step)."""
    turns = [[parse_call_string(c) for c in turn] for turn in bfcl.entry(task_id).ground_truth]
    busy = [t for t, calls in enumerate(turns) if calls]
    t = rng.choice(busy)
    steps = [[[c] for c in calls] for calls in turns]
    if change == "wrong_value":
        call = turns[t][0]
        key = next((k for k, v in call.kwargs.items() if isinstance(v, str)), None)
        if key is not None:
            steps[t][0] = [ToolCall(call.name, (), {**call.kwargs, key: call.kwargs[key] + "_zz"})]
    elif change == "drop_call":
        steps[t].pop()
    elif change == "unknown_tool":
        steps[t].insert(0, [ToolCall("no_such_tool", (), {"x": 1})])
    elif change == "empty_turn":
        steps[t] = []
    elif change == "swap" and len(steps[t]) > 1:
        steps[t][0], steps[t][1] = steps[t][1], steps[t][0]
    elif change == "broken_arguments":
        # the turn's last step holds its call and that call again, its arguments cut short: BFCL's
        # decoder fails on the whole step (neither call runs) and its loop ends the turn there
        call = turns[t][-1]
        text = json.dumps(call.kwargs)
        steps[t][-1] = [call, structured_call(call.name, text[:len(text) // 2])]
    write = FORMATS[FUNCTION_CALLING][1]
    return [[*map(write, turn), []] for turn in steps]


def _episodes(bfcl, config, path: Path, model: str | None) -> dict[str, Behaviour]:
    out = {}
    for item in import_result_file(path, model=model, reading=BfclReading(config)):
        assert not isinstance(item, BadLine), item.reason
        out[item.rollout.task_id] = same_behaviour(replay(item.rollout, bfcl))
    return out


def _in_every_format(bfcl, config, decoders, tmp_path, lines: list[dict],
                     reference: dict[str, Behaviour]) -> dict[str, set[str]]:
    """Each line of a function-calling result written in every handler's format (where BFCL's own
    decoders execute the same of it) gives the reference episode; per format, the entries written."""
    written_ids = {}
    for name, (key, write) in FORMATS.items():
        assert config[key].handler in HANDLER_DECODERS, name
        written, _ = reencoded_lines(lines, write, decoders[FUNCTION_CALLING], decoders[name])
        path = write_result_file(tmp_path / name.replace(" ", "_").replace("/", "_") / "BFCL_v4_multi_turn_result.json",
                                 written)
        episodes = _episodes(bfcl, config, path, key)
        assert episodes == {line["id"]: reference[line["id"]] for line in written}, name
        written_ids[name] = set(episodes)
    return written_ids


def test_the_same_calls_in_every_handlers_format_give_the_same_episodes(bfcl, config, decoders, tmp_path):
    """One run per entry — the ground truth, or one change a real model makes, a call whose
    arguments do not parse among them — as function-calling output, written in every handler's
    format: the same (T, FED, category, Y, undecodable steps) on every entry."""
    rng = random.Random(25)
    ids = _keyword_entries(bfcl, 2 * len(CHANGES))
    changes = {task_id: CHANGES[i % len(CHANGES)] for i, task_id in enumerate(ids)}
    lines = [{"id": task_id, "result": _run(bfcl, task_id, change, rng)} for task_id, change in changes.items()]
    path = write_result_file(tmp_path / "original" / "BFCL_v4_multi_turn_result.json", lines)
    reference = _episodes(bfcl, config, path, FORMATS[FUNCTION_CALLING][0])
    assert {e.Y for e in reference.values()} == {0, 1}  # both verdicts occur, so agreement means something
    assert len({e.category for e in reference.values()}) >= 2
    broken = {task_id for task_id, change in changes.items() if change == "broken_arguments"}
    assert broken and all(reference[task_id].undecodable == 1 for task_id in broken)
    written = _in_every_format(bfcl, config, decoders, tmp_path, lines, reference)
    for name, ids in written.items():  # only the formats without malformed calls leave entries out: those
        assert ids == set(changes) - (broken if name in NO_MALFORMED_CALLS else set()), name


REAL_FC_FILES = sorted((Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-logs" / "bfcl")
                       .glob("gpt-oss-20b_*_result.json"))
REAL_ENTRIES = 40  # of the base file's 200: enough of every verdict, quick enough for 14 formats


@pytest.mark.slow
@pytest.mark.skipif(not REAL_FC_FILES, reason="../shared/fixtures/real-logs/bfcl is absent")
def test_a_real_function_calling_file_in_every_handlers_format_gives_the_same_episodes(bfcl, config, decoders,
                                                                                      tmp_path):
    """A real model's calls (gpt-oss-20b, call objects) re-encoded in each handler family's raw
    format — every step's calls in that format, a step holding a call whose arguments do not parse
    whole, every step without a call the handler's own empty step — give the same (T, FED, category,
    Y, undecodable steps) on every entry as the file itself: its first entries and every entry of
    both its files that holds a malformed call. Entries a format cannot write as the same model
    behaviour (checked with BFCL's own decoders) are left out of that format only."""
    malformed_written = dict.fromkeys(FORMATS, 0)
    for file in REAL_FC_FILES:
        reference = _episodes(bfcl, config, file, None)  # its handler chosen by content, as audited
        lines = [json.loads(line) for line in file.read_text().splitlines()]
        malformed = {task_id for task_id, e in reference.items() if e.undecodable}
        chosen = [line for n, line in enumerate(lines) if line["id"] in malformed or
                  (n < REAL_ENTRIES and "base" in file.name)]
        written = _in_every_format(bfcl, config, decoders, tmp_path / file.stem, chosen, reference)
        for name, ids in written.items():
            malformed_written[name] += len(ids & malformed)
            if "base" in file.name:  # both verdicts occur, so agreement means something
                assert {reference[task_id].Y for task_id in ids} == {0, 1}, name
    # the files hold calls whose arguments are no JSON, and every format that can write them did
    assert all(n > 0 for name, n in malformed_written.items() if name not in NO_MALFORMED_CALLS), malformed_written
