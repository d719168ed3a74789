"""The generator of real Inspect AI logs of inspect_evals' bfcl (tests/inspect_bfcl_logs.py): each
(entry, epoch) is in the log, scored as its scenario should be, with the calls the scenario makes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_evals")

from conftest import RESOURCES  # noqa: E402
from inspect_ai.log import read_eval_log, read_eval_log_samples  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool  # noqa: E402
from inspect_bfcl_logs import (  # noqa: E402
    DEFAULT_SCENARIOS,
    SCENARIOS,
    UNKNOWN_FUNCTION,
    expected_value,
    prepare_cache,
    write_bfcl_log,
)

GENERATOR = Path(__file__).with_name("inspect_bfcl_logs.py")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("inspect-evals-cache")


@pytest.fixture(scope="module")
def default_log(inspect_logs) -> Path:
    return inspect_logs["bfcl_eval"]  # written with the default scenarios and two epochs


@pytest.fixture(scope="module")
def samples(default_log) -> dict:
    return {(str(s.id), s.epoch): s for s in read_eval_log_samples(default_log)}


def test_the_cache_is_laid_out_as_inspect_evals_reads_it(cache):
    dataset = prepare_cache(cache, RESOURCES)
    assert dataset == cache / "BFCL"
    assert (dataset / "BFCL_v4_multi_turn_base.json").is_file()
    assert (dataset / "possible_answer" / "BFCL_v4_multi_turn_miss_func.json").is_file()
    assert (dataset / "multi_turn_func_doc" / "gorilla_file_system.json").is_file()
    sources = (dataset / "func_source_code" / "gorilla_file_system.py").read_text()
    assert "from long_context import" in sources and "bfcl_eval" not in sources


def test_unknown_scenarios_are_refused_before_any_run(tmp_path):
    with pytest.raises(ValueError, match="unknown scenarios"):
        write_bfcl_log(tmp_path / "logs", tmp_path / "cache", RESOURCES, scenarios={"multi_turn_base_0": "nope"})
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_every_entry_and_epoch_is_scored_as_its_scenario(default_log, samples):
    log = read_eval_log(default_log, header_only=True)
    assert log.status == "success" and log.eval.task == "inspect_evals/bfcl"
    assert set(DEFAULT_SCENARIOS.values()) == set(SCENARIOS)
    assert set(samples) == {(sid, e) for sid in DEFAULT_SCENARIOS for e in (1, 2)}
    for (sid, epoch), sample in samples.items():
        assert sample.error is None
        assert sample.scores["bfcl_scorer"].value == expected_value(DEFAULT_SCENARIOS[sid], epoch, sid), (sid, epoch)
        turns = sample.metadata["turns"]
        assert len(sample.metadata["model_execution_calls"]) == len(turns)
        assert len(sample.metadata["model_execution_results"]) == len(turns)
        # each turn's tool loop ends with one text-only reply
        ends = [m for m in sample.messages if isinstance(m, ChatMessageAssistant) and not m.tool_calls]
        assert len(ends) == len(turns)


def _first_turn(sample) -> tuple[list, list]:
    """The first turn's assistant tool calls (as sent) and tool messages."""
    calls, tools = [], []
    for m in sample.messages:
        if isinstance(m, ChatMessageAssistant):
            if not m.tool_calls:
                break
            calls += m.tool_calls
        elif isinstance(m, ChatMessageTool):
            tools.append(m)
    return calls, tools


def _gold_first_turn(sample) -> list[str]:
    return [c["function"] for c in sample.metadata["model_execution_calls"][0]]


@pytest.mark.slow
def test_the_scenarios_make_their_calls(samples):
    calls, tools = _first_turn(samples[("multi_turn_base_1", 1)])  # unknown_tool
    assert calls[0].function == UNKNOWN_FUNCTION
    assert tools[0].error.type == "parsing" and "not found" in tools[0].error.message
    assert UNKNOWN_FUNCTION not in _gold_first_turn(samples[("multi_turn_base_1", 1)])

    calls, tools = _first_turn(samples[("multi_turn_base_2", 1)])  # rejected: runs, and is recorded
    first = samples[("multi_turn_base_2", 1)].metadata
    assert first["model_execution_calls"][0][0] == {"function": "cd", "arguments": {"folder": "no_such_folder"}}
    assert "error" in first["model_execution_results"][0][0] and tools[0].error is None

    calls, tools = _first_turn(samples[("multi_turn_base_3", 1)])  # malformed: never runs
    assert calls[0].parse_error and not calls[1].parse_error
    assert [t.error.type for t in tools[:2]] == ["parsing", "parsing"]
    assert "validation" in tools[1].error.message
    assert len(_gold_first_turn(samples[("multi_turn_base_3", 1)])) == len(calls) - 2

    parallel = [m for m in samples[("multi_turn_base_5", 1)].messages
                if isinstance(m, ChatMessageAssistant) and len(m.tool_calls or []) == 2]
    assert len(parallel) == 1

    for key in [("multi_turn_base_4", 1), ("multi_turn_base_6", 2)]:  # early stop
        assert samples[key].metadata["model_execution_calls"][0] == []
    assert samples[("multi_turn_base_6", 1)].metadata["model_execution_calls"][0]


@pytest.mark.slow
def test_the_cli_writes_a_json_log(tmp_path, cache):
    proc = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path / "out"), "--cache", str(cache),
                           "--resources", str(RESOURCES), "--format", "json", "--epochs", "1",
                           "--scenario", "multi_turn_miss_func_3=early_stop"],
                          capture_output=True, text=True, check=True)
    path = Path(proc.stdout.strip())
    assert path.suffix == ".json" and path.parent == (tmp_path / "out").resolve()
    (sample,) = read_eval_log_samples(path)
    assert (sample.id, sample.epoch, sample.scores["bfcl_scorer"].value) == ("multi_turn_miss_func_3", 1, 0)
    # its first turn has no ground-truth calls: the early stop is in the second
    assert [len(t) for t in sample.metadata["model_execution_calls"]] == [0, 0, 4]
