"""What BFCL's own runs do that a replay on fresh state must account for, on self-contained logs.

* ``post_tweet``'s default ``mentions`` list is one object for BFCL's whole process (a Python
  default, kept by reference, extended by ``mention``): a tweet posted without mentions shows names
  of earlier entries. Replay gives each call its own list, leaves that field out of the comparison
  with a recorded result, and names the cause where BFCL's verdict differs.
* BFCL's executor writes its instance names into the call text, string literals included, and drops
  the blanks between a word and ``(``.
* A step BFCL's handler evaluates as Python has the calls its log shows BFCL read there.
* A score file alone is the log of the entries that failed, said as such.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from bfcl_logs import gold_entry, write_result_file, write_score_file
from conftest import RESOURCES

from prefix_audit.benchmarks.bfcl.importer import import_score_file
from prefix_audit.benchmarks.bfcl.loader import _as_executed, instance_names
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.cli import main
from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import Action, BadLine, RecordedResult
from prefix_audit.replay.checker import ActionVerdict
from prefix_audit.replay.record_check import canonical, compare

POSTS_WITHOUT_MENTIONS = "multi_turn_base_109"  # its ground truth ends with post_tweet(content=…)
TWEET = {"id": 1, "username": "u", "content": "c", "tags": [], "mentions": []}


def _audit(logs, out, *options):
    return main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--resamples", "200", "--resources", str(RESOURCES),
                 *options])


def _post_tweet_step(line):
    """The (turn log, step key) of the entry's post_tweet call."""
    for turn in line["inference_log"]:
        if isinstance(turn, dict):
            for key, messages in turn.items():
                if key.startswith("step_") and "post_tweet" in json.dumps(messages[0]["content"]):
                    return turn, key
    raise AssertionError("no post_tweet step")


def test_volatile_fields_are_left_out_of_the_comparison_only_where_named():
    leaked = json.dumps({**TWEET, "mentions": ["@earlier"]})
    assert canonical(leaked, (("id", 1, "mentions"),)) == canonical(json.dumps(TWEET), (("id", 1, "mentions"),))
    assert canonical(leaked, (("id", 2, "mentions"),)) != canonical(json.dumps(TWEET), (("id", 2, "mentions"),))
    assert canonical(leaked) != canonical(json.dumps(TWEET))

    def verdict(volatile):
        action = Action(1, 0, 0, ToolCall("post_tweet", (), {"content": "c"}, structured=True),
                        recorded=RecordedResult(leaked, False))
        return ActionVerdict(action, True, (), True, json.dumps(TWEET), json.dumps(TWEET), True, volatile)

    assert compare(verdict(()).action.recorded, verdict(())) == "same_verdict"
    assert compare(verdict((("id", 1, "mentions"),)).action.recorded, verdict((("id", 1, "mentions"),))) == "same"


def test_string_arguments_reach_the_method_as_bfcls_executor_passes_them():
    names = instance_names({"ls": ("GorillaFileSystem", None)}, "org/model-1.5", "multi_turn_base_3")
    assert names == {"ls": "org_model_1_5_multi_turn_base_3_GorillaFileSystem_instance"}
    assert _as_executed({"content": "run ls() now", "n": 3}, names) == {
        "content": "run org_model_1_5_multi_turn_base_3_GorillaFileSystem_instance.ls() now", "n": 3}
    assert _as_executed(["tank is full (50 gallons)", "no call here"], names) == [
        "tank is full(50 gallons)", "no call here"]


def test_a_leaked_mention_is_no_divergence_and_bfcls_verdict_on_it_is_explained(bfcl, tmp_path):
    leaked, changed = gold_entry(bfcl, POSTS_WITHOUT_MENTIONS), gold_entry(bfcl, POSTS_WITHOUT_MENTIONS)
    for line, field, value in ((leaked, "mentions", ["@technewsworld"]), (changed, "content", "another text")):
        turn, key = _post_tweet_step(line)
        recorded = json.loads(turn[key][2]["content"])
        assert recorded["mentions"] == []
        turn[key][2]["content"] = json.dumps({**recorded, field: value})
    changed["id"] = POSTS_WITHOUT_MENTIONS  # the same entry, in a file of its own
    for name, line in (("leaked", leaked), ("changed", changed)):
        logs = tmp_path / name
        result = write_result_file(logs / "BFCL_v4_multi_turn_base_result.json", [line])
        # BFCL's evaluation compared the ground truth's tweet holding the leaked list: a state mismatch
        write_score_file(logs / "BFCL_v4_multi_turn_base_score.json", 1,
                         {POSTS_WITHOUT_MENTIONS: "multi_turn:instance_state_mismatch"})
        assert _audit([result], tmp_path / f"out-{name}", "--model", "m") == 0
    row = pl.read_parquet(tmp_path / "out-leaked" / "fed" / "episodes.parquet").row(0, named=True)
    assert (row["Y"], row["recorded_y"], row["replay_agreement"]) == (1, 0, 1.0)
    assert row["log_issue"].startswith("shared_default: the model's post_tweet leaves mentions to its default "
                                       "list, which BFCL's run shares")
    row = pl.read_parquet(tmp_path / "out-changed" / "fed" / "episodes.parquet").row(0, named=True)
    assert row["replay_agreement"] < 1.0 and "replay_diverged: call" in row["log_issue"]  # a real divergence


def _score_line(line, kind="multi_turn:instance_state_mismatch"):
    return {"id": line["id"], "model_name": "m", "test_category": "multi_turn_base", "valid": False,
            "error": {"error_type": kind}, "model_result_raw": line["result"], "inference_log": line["inference_log"],
            "prompt": {"id": line["id"]}, "possible_answer": []}


def test_a_score_file_alone_is_the_log_of_its_failed_entries_said_as_such(bfcl, tmp_path):
    lines = [gold_entry(bfcl, i) for i in ("multi_turn_base_1", "multi_turn_base_4")]
    failing = [_score_line(lines[0]), _score_line(lines[1]), _score_line(lines[1]),
               {"id": "multi_turn_base_7", "model_name": "m", "test_category": "multi_turn_base", "valid": False,
                "error": {"error_type": "multi_turn:inference_error"}, "model_result": "Error during inference: 400"}]
    summary = {"accuracy": 0.7, "correct_count": 7, "total_count": 10}
    path = write_result_file(tmp_path / "score" / "m" / "BFCL_v3_multi_turn_base_score.json", [summary, *failing])
    items = list(import_score_file(path, reading=BfclReading(releases={bfcl.data.release: bfcl.data})))
    rollouts = [i.rollout for i in items if not isinstance(i, BadLine)]
    [again] = [i for i in items if isinstance(i, BadLine)]
    assert [r.task_id for r in rollouts] == ["multi_turn_base_1", "multi_turn_base_4", "multi_turn_base_7"]
    assert again.line == 4 and again.reason.startswith("listed again in BFCL's score file: entry 'multi_turn_base_4'")
    assert all(r.recorded.y == 0 for r in rollouts)
    assert rollouts[0].recorded.verdict == "BFCL score file: multi_turn:instance_state_mismatch"
    assert rollouts[2].infra_error == "Error during inference: 400"
    assert all("only the 3 entries that failed, of 10 (the 7 that passed are not in it)" in r.meta["reading"]
               for r in rollouts)
    assert all(r.turns[0][0].results for r in rollouts[:2])  # the inference_log's tool results, recorded

    # beside its own result file, a score file is no second log of the same run
    write_result_file(tmp_path / "result" / "m" / "BFCL_v3_multi_turn_base_result.json", lines)
    with pytest.raises(ValueError, match="is BFCL's score file of .*BFCL_v3_multi_turn_base_result.json, which "
                                         "holds every entry"):
        list(import_score_file(path))


def test_a_step_bfcls_handler_evaluates_has_the_calls_its_log_shows(bfcl, tmp_path):
    """The Llama handler evaluates its JSON text as Python (``str(round(…))``): BFCL's log records
    the call it executed; we read that, never the expression."""
    line = gold_entry(bfcl, "multi_turn_base_1", style="json_text")
    for t, turn in enumerate(line["result"]):  # in the Llama handler's own format: one object, "parameters"
        for s, raw in enumerate(turn[:-1]):
            [call] = json.loads(raw)
            # Python notation: the handler evaluates this text as Python (JSON's true is no name there)
            text = json.dumps({"name": call["name"], "parameters": call["arguments"]}).replace("true", "True")
            if call["name"] == "cd":  # an expression BFCL's handler evaluates
                text = text.replace('"%s"' % call["arguments"]["folder"], 'str("%s")' % call["arguments"]["folder"])
            turn[s] = text
            line["inference_log"][2 * t + 1][f"step_{s}"][0]["content"] = text
    assert any("str(" in raw for turn in line["result"] for raw in turn)
    result = write_result_file(tmp_path / "result" / "meta-llama_Llama-3.1-8B-Instruct-FC" /
                               "BFCL_v3_multi_turn_base_result.json", [line])
    assert _audit([result], tmp_path / "out") == 0
    row = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet").row(0, named=True)
    assert row["replay_agreement"] == 1.0 and row["log_issue"] is None and row["undecoded_steps"] == 0


def test_steps_of_already_decoded_call_strings_are_read_as_calls_where_no_handler_is_known(bfcl, tmp_path):
    """A custom runner writes each step as the calls it decoded (``["cd(folder='x')"]``): with no
    handler of BFCL's config for the file, they are its calls, said in the reading."""
    entry = bfcl.entry("multi_turn_base_1")
    line = {"id": entry.id, "result": [[[call] for call in turn] + [[]] for turn in entry.ground_truth]}
    result = write_result_file(tmp_path / "result" / "my-runner" / "BFCL_v4_multi_turn_base_result.json", [line])
    assert _audit([result], tmp_path / "out", "--model", "m") == 0
    row = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet").row(0, named=True)
    assert (row["Y"], row["undecoded_steps"]) == (1, 0) and row["tool_calls"] == sum(map(len, entry.ground_truth))
    rollout = json.loads((tmp_path / "out" / "rollouts" / "imported" / "bfcl_v3" / "m" / "imported.jsonl")
                         .read_text().splitlines()[0])
    assert "steps that are lists of call strings (already decoded) read as those calls" in rollout["meta"]["reading"]


def test_a_call_string_to_no_tool_is_an_action_that_fails_schema_never_run(bfcl, tmp_path):
    """In such a file a string that calls no tool by name — ``__import__('os').system(…)``, which BFCL's
    executor fails on — is an action: the first failure lands on it (a schema failure); nothing runs."""
    entry = bfcl.entry("multi_turn_base_1")
    attempt = "__import__('os').system('touch /tmp/prefix_audit_never_run')"
    turns = [[[call] for call in turn] + [[]] for turn in entry.ground_truth]
    turns[0].insert(0, [attempt])
    result = write_result_file(tmp_path / "result" / "my-runner" / "BFCL_v4_multi_turn_base_result.json",
                               [{"id": entry.id, "result": turns}])
    assert _audit([result], tmp_path / "out", "--model", "m") == 0
    row = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet").row(0, named=True)
    assert (row["FED"], row["category"], row["failure_code"]) == (1, "schema", "unparseable_call")
    assert row["undecoded_steps"] == 0 and row["origin"] == "agent"
    assert not Path("/tmp/prefix_audit_never_run").exists()


def test_a_score_file_without_its_summary_is_refused_in_one_line(tmp_path):
    path = write_result_file(tmp_path / "BFCL_v3_multi_turn_base_score.json", [{"id": "multi_turn_base_1"}])
    with pytest.raises(ValueError, match="the first line is no summary with correct_count and total_count"):
        list(import_score_file(path))
