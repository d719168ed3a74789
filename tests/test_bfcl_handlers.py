"""BFCL result files read by the handler ``bfcl evaluate`` would choose: the model config read
statically, the choice by --model, result folder, score file or content, and the metamorphic
property — the same calls written in every handler family's format give the same episodes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from bfcl_formats import FORMATS
from bfcl_logs import write_result_file, write_score_file

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.decoders import HANDLER_DECODERS, content_candidates, decoder_for
from prefix_audit.benchmarks.bfcl.handlers import check_model_key, model_config
from prefix_audit.cli import main
from prefix_audit.core.calls import ToolCall, parse_call_string
from prefix_audit.core.records import BadLine
from prefix_audit.replay.checker import replay
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
    [item] = list(import_result_file(path, config=config, **kwargs))
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
    assert replay(by_option, bfcl).Y == 0 and by_option.meta["bfcl_undecoded_steps"] == []

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


# --- metamorphic: one run, every handler's format -------------------------------------------------

def _keyword_entries(bfcl, n: int) -> list[str]:
    ids = []
    for task_id in bfcl.task_ids()[::7]:
        calls = [parse_call_string(c) for turn in bfcl.entry(task_id).ground_truth for c in turn]
        if calls and all(not c.args for c in calls):
            ids.append(task_id)
    return ids[:n]


def _run(bfcl, task_id: str, rng: random.Random) -> list[list[ToolCall]]:
    """The entry's ground truth with one change a real model makes: the calls per turn."""
    turns = [[parse_call_string(c) for c in turn] for turn in bfcl.entry(task_id).ground_truth]
    busy = [t for t, calls in enumerate(turns) if calls]
    t = rng.choice(busy)
    change = rng.choice(["gold", "wrong_value", "drop_call", "unknown_tool", "empty_turn", "swap"])
    if change == "wrong_value":
        call = turns[t][0]
        key = next((k for k, v in call.kwargs.items() if isinstance(v, str)), None)
        if key is not None:
            turns[t][0] = ToolCall(call.name, (), {**call.kwargs, key: call.kwargs[key] + "_zz"})
    elif change == "drop_call":
        turns[t].pop()
    elif change == "unknown_tool":
        turns[t].insert(0, ToolCall("no_such_tool", (), {"x": 1}))
    elif change == "empty_turn":
        turns[t] = []
    elif change == "swap" and len(turns[t]) > 1:
        turns[t][0], turns[t][1] = turns[t][1], turns[t][0]
    return turns


def _episodes(bfcl, config, path: Path, model: str) -> dict[str, tuple]:
    out = {}
    for item in import_result_file(path, model=model, config=config):
        assert not isinstance(item, BadLine), item.reason
        ep = replay(item.rollout, bfcl)
        out[item.rollout.task_id] = (ep.T, ep.FED, ep.category, ep.Y)
    return out


def test_the_same_calls_in_every_handlers_format_give_the_same_episodes(bfcl, config, tmp_path):
    rng = random.Random(25)
    runs = {task_id: _run(bfcl, task_id, rng) for task_id in _keyword_entries(bfcl, 14)}
    seen = {}
    for name, (key, write) in FORMATS.items():
        assert config[key].handler in HANDLER_DECODERS, name
        # every turn ends without a call, as BFCL's loop ends a turn: an empty step in the handler's
        # own way (a list for call-object handlers, text for the others)
        end = [] if isinstance(write([ToolCall("x", (), {})]), list) else ""
        lines = [{"id": task_id, "result": [[*(write([call]) for call in calls), end] for calls in turns]}
                 for task_id, turns in runs.items()]
        path = write_result_file(tmp_path / name.replace(" ", "_").replace("/", "_") / "BFCL_v4_multi_turn_result.json",
                                 lines)
        seen[name] = _episodes(bfcl, config, path, key)
    reference = seen.pop("call objects (OpenAI FC)")
    assert {y for *_, y in reference.values()} == {0, 1}  # both verdicts occur, so agreement means something
    assert len({category for _, _, category, _ in reference.values()}) >= 2
    for name, episodes in seen.items():
        assert episodes == reference, name


REAL_FC_FILE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-logs" / "bfcl" / \
    "gpt-oss-20b_BFCL_v4_multi_turn_base_result.json"
REAL_ENTRIES = 40  # of the file's 200: enough of every verdict, quick enough for 14 formats


@pytest.mark.slow
@pytest.mark.skipif(not REAL_FC_FILE.is_file(), reason="../shared/fixtures/real-logs/bfcl is absent")
def test_a_real_function_calling_file_in_every_handlers_format_gives_the_same_episodes(bfcl, config, tmp_path):
    """A real model's calls (gpt-oss-20b, call objects), re-encoded in each handler family's raw
    format — every step's calls in that format, every step without a call the handler's own empty
    step — give the same (T, FED, category, Y) on every entry as the file itself."""
    runs = {}
    for item in import_result_file(REAL_FC_FILE, config=config):
        rollout = item.rollout
        calls = [c for turn in rollout.turns for step in turn for c in step.calls]
        # calls every format can write: keyword arguments with names (a text format cannot write
        # gpt-oss's `get_message_stats('': '')`), and no step BFCL's runner does not run
        if rollout.infra_error or rollout.recorded.undecoded_count or not all(
                c.well_formed and not c.args and all(k.isidentifier() for k in c.kwargs) and c.name.isidentifier()
                for c in calls):
            continue
        runs[rollout.task_id] = [[list(step.calls) for step in turn] for turn in rollout.turns]
        if len(runs) == REAL_ENTRIES:
            break
    reference = _episodes(bfcl, config, REAL_FC_FILE, None)  # its handler chosen by content, as audited
    reference = {task_id: reference[task_id] for task_id in runs}
    assert {y for *_, y in reference.values()} == {0, 1}
    for name, (key, write) in FORMATS.items():
        end = [] if isinstance(write([ToolCall("x", (), {})]), list) else ""
        lines = [{"id": task_id, "result": [[part for calls in turn for part in
                                             ([write([c]) for c in calls] if calls else [end])] for turn in turns]}
                 for task_id, turns in runs.items()]
        path = write_result_file(tmp_path / name.replace(" ", "_").replace("/", "_") / "BFCL_v4_multi_turn_result.json",
                                 lines)
        assert _episodes(bfcl, config, path, key) == reference, name
