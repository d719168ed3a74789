"""The log checked against itself (docs/trust.md): recorded verdicts and tool results through the importers,
the comparison with the replay, ``log_issue``, decode health, the trust summary of ``audit``,
``--strict``, the trust table — on self-contained logs, and on the shared real logs when present."""

from __future__ import annotations

import json
import string

import polars as pl
import pytest
from bfcl_logs import gold_entry, write_result_file, write_score_file
from conftest import RESOURCES, SHARED
from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.benchmarks.bfcl.result_entry import logged_steps, recorded_error
from prefix_audit.benchmarks.bfcl.scores import find_score_file
from prefix_audit.cli import STRICT_EXIT, main
from prefix_audit.core.calls import ToolCall, looks_like_calls
from prefix_audit.core.records import (
    MAX_RECORDED_CHARS,
    Action,
    BadLine,
    Recorded,
    RecordedResult,
    RecordError,
    Rollout,
    Step,
    dumps,
    read_rollouts,
    rollout_from_json,
)
from prefix_audit.replay.checker import ActionVerdict, replay
from prefix_audit.replay.record_check import canonical, canonical_error, check_record, compare
from prefix_audit.replay.trust import block_trust, issue_codes

REAL = SHARED / "fixtures" / "real-logs"
ENTRIES = ("multi_turn_base_1", "multi_turn_base_4")  # ground truth with keyword arguments only
PROMPTING_MODEL = "gpt-4o-2024-11-20"  # a key of BFCL's model config whose handler reads Python call text


def _audit(logs, out, *options):
    return main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--resamples", "200", "--resources", str(RESOURCES),
                 *options])


# --- normalising and comparing ---------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(string.printable, max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(string.ascii_letters, max_size=5),
                                                                       children, max_size=4),
    max_leaves=12)


@given(JSON_VALUES)
@settings(max_examples=150, deadline=None)
def test_the_same_value_in_json_or_python_notation_is_the_same_result(value):
    as_json, as_repr = json.dumps(value), repr(value)
    assert canonical(as_json) == canonical(as_repr) == canonical(json.dumps(value, indent=2, sort_keys=True))


def test_normalising_keeps_what_differs():
    assert canonical('{"a": 1, "b": null}') == canonical("{'a': 1.0}")  # a null key is a key left out
    assert canonical("balance: 100.0 USD") == canonical("balance:  100 USD")
    assert canonical('{"a": 1}') != canonical('{"a": 2}')
    assert canonical('["x", "y"]') != canonical('["y", "x"]')  # order of a list is content
    assert canonical("null") == canonical("") == canonical("None")
    assert canonical_error("Error during execution: builtins.ValueError: bad <X at 0x7f00aa>") == \
        canonical_error("error: ValueError: bad <X>")
    assert canonical_error("Error: see https://errors.pydantic.dev/2.11/v/missing") == \
        canonical_error("Error: see https://errors.pydantic.dev/2.14/v/missing")
    # One tool behind two wrappers (τ-bench v1's log, tau2's port): Python's argument error names the callable.
    v1 = "Error: CancelReservation.invoke() got an unexpected keyword argument 'reason'"
    assert canonical_error(v1) == canonical_error("AirlineTools.cancel_reservation() got an unexpected keyword "
                                                  "argument 'reason'")
    assert canonical_error(v1) != canonical_error("AirlineTools.cancel_reservation() got an unexpected keyword "
                                                  "argument 'cause'")
    assert canonical_error("f() missing 1 required positional argument: 'x'") == \
        canonical_error("Tools.g() missing 1 required positional argument: 'x'")


def _verdict(accepted, logged, executed=True, recorded=None):
    call = ToolCall("f", (), {}, structured=True)
    return ActionVerdict(Action(1, 0, 0, call, recorded=recorded), True, (), accepted, logged, logged, executed)


@pytest.mark.parametrize(("recorded", "accepted", "logged", "executed", "status"), [
    (RecordedResult('{"a": 1}', False), True, "{'a': 1}", True, "same"),
    (RecordedResult("Error: no such order", True), False, "Error: Order not found", True, "same_verdict"),
    (RecordedResult("ok", False), False, "Error: refused", True, "differs"),
    (RecordedResult("done", None), True, "done", True, "same"),  # no flag in the log: content decides
    (RecordedResult("done", None), True, "other", True, "differs"),
    (RecordedResult("ran", False), None, None, False, "not_replayed"),
    (RecordedResult("Execution of f was rejected", True, executed=False), True, "x", False, "not_executed"),
])
def test_each_status(recorded, accepted, logged, executed, status):
    assert compare(recorded, _verdict(accepted, logged, executed)) == status


def test_a_cut_result_is_compared_by_its_digest():
    whole = "x" * (MAX_RECORDED_CHARS + 10)
    recorded = RecordedResult.of(whole, False)
    assert recorded.cut and len(recorded.content) == MAX_RECORDED_CHARS and recorded.length == len(whole)
    assert compare(recorded, _verdict(True, whole)) == "same"
    assert compare(recorded, _verdict(True, whole[:-1] + "y")) == "same_verdict"


@given(st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_hostile_results_are_compared_without_raising(text):
    canonical(text), canonical_error(text), recorded_error(text), looks_like_calls(text)
    assert compare(RecordedResult.of(text), _verdict(True, text)) == "same"


def test_deep_or_huge_recorded_results_are_bounded():
    deep = "[" * 100_000 + "]" * 100_000
    assert canonical(deep) == deep and recorded_error(deep) is False  # over the parse bound: compared as text
    nested = "[" * 5_000 + "]" * 5_000  # parses too deep for Python: still no exception
    assert compare(RecordedResult.of(nested), _verdict(True, nested)) == "same"
    surrogate = RecordedResult.of("bad \ud800 text")
    assert surrogate.content.encode("utf-8")  # writable as UTF-8


# --- the record format ------------------------------------------------------------------------------


def _rollout(**kw) -> Rollout:
    call = ToolCall("cd", (), {"folder": "a"}, structured=True)
    base = dict(dataset="bfcl_v3", task_id="multi_turn_base_0", model="m", method="imported", rollout_id="r",
                turns=((Step((call,), None, (RecordedResult("x", False), None, RecordedResult("y", True))),),),
                recorded=Recorded(1, "BFCL score file: valid", undecoded=((0, 1, "looks like a call"),),
                                  undecoded_count=3))
    return Rollout(**(base | kw))


def test_recorded_facts_round_trip(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(dumps(_rollout()) + "\n")
    [item] = list(read_rollouts(path))
    assert item.rollout.turns == _rollout().turns and item.rollout.recorded == _rollout().recorded


@pytest.mark.parametrize(("field", "value", "said"), [
    ("recorded", {"y": 2}, "recorded.y"), ("recorded", {"y": 1.0}, "recorded.y"),
    ("recorded", {"issues": [{"detail": "x"}]}, "recorded.issues"),
    ("recorded", {"undecoded_steps": [[0, "a", "x"]]}, "undecoded_steps"),
    ("results", [{"content": 3}], "results[0]"), ("results", [{"content": "x", "error": "yes"}], "results[0]"),
    ("results", [{"content": "x", "length": 5, "sha256": "ab"}], "a cut result"),
])
def test_bad_recorded_fields_are_located(field, value, said):
    record = json.loads(dumps(_rollout()))
    if field == "results":
        record["turns"][0][0]["results"] = value
    else:
        record[field] = value
    with pytest.raises(RecordError, match=said.replace("[", r"\[").replace("]", r"\]")):
        rollout_from_json(record)


def test_a_rollout_without_a_record_gives_null_columns(bfcl, tmp_path):
    from conftest import score_dir

    rollout = bfcl.reference_rollout("multi_turn_base_1")
    path = tmp_path / "gold.jsonl"
    path.write_text(dumps(rollout) + "\n")
    score_dir(path, tmp_path / "s")
    row = pl.read_parquet(tmp_path / "s" / "episodes.parquet").row(0, named=True)
    trust = ("recorded_y", "recorded_verdict", "replay_agreement", "results_compared", "log_issue", "call_steps",
             "undecoded_steps", "tool_calls", "unknown_tool_calls")
    assert all(row[c] is None for c in trust)
    actions = pl.read_parquet(tmp_path / "s" / "actions.parquet")
    assert actions["record_match"].null_count() == actions.height


# --- BFCL: inference_log, score files, decode health --------------------------------------------------


def test_bfcl_run_that_replays_exactly_carries_its_verdict_and_no_flag(bfcl, tmp_path, capsys):
    result = write_result_file(tmp_path / "result" / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json",
                               [gold_entry(bfcl, i) for i in ENTRIES])
    write_score_file(tmp_path / "score" / "m" / "multi_turn" / "BFCL_v4_multi_turn_base_score.json", 2, {})
    assert _audit([result], tmp_path / "out", "--model", "m", "--strict") == 0
    said = capsys.readouterr().err
    rows = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert rows["recorded_y"].to_list() == [1, 1] and rows["Y"].to_list() == [1, 1]
    assert rows["replay_agreement"].to_list() == [1.0, 1.0] and rows["log_issue"].null_count() == 2
    assert rows["recorded_verdict"].to_list() == ["BFCL score file: valid"] * 2
    compared = int(rows["results_compared"].sum())
    assert compared == sum(len(t) for i in ENTRIES for t in bfcl.entry(i).ground_truth)
    assert (f"Y agrees with the recorded verdict on 2/2; replay reproduces 100.0% of {compared} recorded tool "
            "results (ok/error 100.0%); decode: 0 of") in said
    assert "WARNING" not in said
    table = (tmp_path / "out" / "tables" / "table_trust.md").read_text()
    assert f"| bfcl_v3 | m | imported | 2 | 2/2 (1.000) | {compared}/{compared} (1.000) |" in table


def test_a_tampered_record_and_a_verdict_without_cause_are_named(bfcl, tmp_path, capsys):
    lines = [gold_entry(bfcl, i) for i in ENTRIES]
    first_turn = lines[0]["inference_log"][1]
    first_turn["step_0"][2]["content"] = '{"error": "tampered"}'
    result = write_result_file(tmp_path / "logs" / "BFCL_v4_multi_turn_base_result.json", lines)
    write_score_file(tmp_path / "logs" / "BFCL_v4_multi_turn_base_score.json", 2, {ENTRIES[1]: "multi_turn:x"})
    assert _audit([result], tmp_path / "out", "--model", "m") == 0  # warnings only
    assert _audit([result], tmp_path / "strict", "--model", "m", "--strict") == STRICT_EXIT
    rows = {r["task_id"]: r for r in pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet").to_dicts()}
    tampered, unexplained = rows[ENTRIES[0]], rows[ENTRIES[1]]
    assert tampered["recorded_y"] == tampered["Y"] == 1  # Y agrees; the record of one call does not
    assert tampered["log_issue"].startswith('replay_diverged: call 1 (') and 'recorded “{"error": "tampered"}”' in \
        tampered["log_issue"] and "ok/error verdict differs" in tampered["log_issue"]
    assert (unexplained["recorded_y"], unexplained["Y"]) == (0, 1)
    assert unexplained["log_issue"] == ("y_differs: the log records BFCL score file: multi_turn:x, replay gives "
                                        "Y = 1")
    actions = pl.read_parquet(tmp_path / "out" / "scored" / "bfcl_v3" / "m" / "imported" / "actions.parquet")
    diverged = actions.filter(pl.col("record_match") == "differs").row(0, named=True)
    assert diverged["recorded_result"] == '{"error": "tampered"}' and diverged["recorded_error"] is True
    assert diverged["replayed_result"] not in (None, diverged["recorded_result"]) and diverged["accepted"] is True
    said = capsys.readouterr().err
    assert "WARNING: Y disagrees with the recorded verdict on 1 of 2 entries (flagged: replay_diverged 1, " \
           "y_differs 1)" in said
    assert "audit --strict" in said


def test_a_format_the_decoder_misreads_is_said_loudly(bfcl, tmp_path, capsys):
    """Every call step is JSON text (as xLAM writes it), in the folder of a model whose handler reads
    Python call text: its decoder reads none of it, while the log's own decoder did."""
    folder = tmp_path / "result" / PROMPTING_MODEL
    result = write_result_file(folder / "BFCL_v3_multi_turn_base_result.json",
                               [gold_entry(bfcl, i, style="json_text") for i in ENTRIES])
    write_score_file(folder / "BFCL_v3_multi_turn_base_score.json", 2, {})
    assert _audit([result], tmp_path / "out") == 0
    said = capsys.readouterr().err
    steps = sum(len(t) for i in ENTRIES for t in bfcl.entry(i).ground_truth)
    assert f"WARNING: {steps} of {steps} call steps could not be decoded: the decoder does not read this log's" in said
    assert "WARNING: Y disagrees with the recorded verdict on 2 of 2 entries" in said
    assert f"WARNING: replay reproduces only 0.0% of the {steps} tool results the log recorded" in said
    row = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet").row(0, named=True)
    assert "the log ran a call this reading of the step did not find" in row["log_issue"]
    assert row["undecoded_steps"] == row["call_steps"] > 0 and row["tool_calls"] == 0
    [trust] = block_trust(pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet"))
    assert [w.severity for w in trust.warnings()][:3] == [3, 2, 2]


def test_calls_the_benchmarks_own_run_could_not_decode_either_are_a_note_not_a_misreading(bfcl, tmp_path, capsys):
    """The same JSON text in the same folder, but the log shows BFCL's own decoder failed on every
    step and ran nothing (a model writing a format its handler does not read): a faithful log, so no
    WARNING — a note saying so — while a decoder of ours that misreads (the test above) stays loud."""
    folder = tmp_path / "result" / PROMPTING_MODEL
    lines = [gold_entry(bfcl, i, style="json_text") for i in ENTRIES]
    for line in lines:
        for turn in line["inference_log"][1::2]:
            for key in [k for k in turn if k.startswith("step_")]:
                turn[key] = [turn[key][0], {"role": "handler_log", "content": "Error decoding the model response."}]
    result = write_result_file(folder / "BFCL_v3_multi_turn_base_result.json", lines)
    write_score_file(folder / "BFCL_v3_multi_turn_base_score.json", 2,
                     dict.fromkeys(ENTRIES, "multi_turn:instance_state_mismatch"))
    assert _audit([result], tmp_path / "out", "--strict") == 0
    said = capsys.readouterr().err
    steps = sum(len(t) for i in ENTRIES for t in bfcl.entry(i).ground_truth)
    assert f"note: {steps} of {steps} call steps could not be decoded, {steps} of them by the benchmark's own run" \
        in said and "WARNING" not in said
    episodes = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert episodes["undecoded_confirmed"].to_list() == episodes["undecoded_steps"].to_list()
    assert episodes["Y"].to_list() == episodes["recorded_y"].to_list() == [0, 0]


def test_text_that_looks_like_calls_is_undecodable_without_a_log(bfcl, tmp_path):
    line = gold_entry(bfcl, ENTRIES[0], style="json_text")
    del line["inference_log"]
    path = write_result_file(tmp_path / "BFCL_v4_multi_turn_base_result.json", [line])
    [item] = list(import_result_file(path, model=PROMPTING_MODEL, reading=BfclReading(model_config(bfcl.data.root))))
    recorded = item.rollout.recorded
    assert recorded.y is None and "no BFCL score file found" in recorded.verdict
    assert recorded.undecoded_count == sum(len(t) for t in bfcl.entry(ENTRIES[0]).ground_truth)
    assert all(s.results is None for turn in item.rollout.turns for s in turn)


def test_score_files_are_found_as_bfcl_writes_them_or_given(bfcl, tmp_path):
    ids = list(ENTRIES)
    result = write_result_file(tmp_path / "run" / "result" / "org_model" / "multi_turn" /
                               "BFCL_v4_multi_turn_base_result.json", [gold_entry(bfcl, i) for i in ENTRIES])
    found, why = find_score_file(result, ids)
    assert found is None and "no BFCL score file found" in why
    layout = write_score_file(tmp_path / "run" / "score" / "org_model" / "multi_turn" /
                              "BFCL_v4_multi_turn_base_score.json", 2, {ids[0]: "multi_turn:instance_state_mismatch"})
    found, why = find_score_file(result, ids)
    assert found.path == layout and found.verdict(ids[0]) == (0, "BFCL score file: multi_turn:instance_state_mismatch")
    assert found.verdict(ids[1]) == (1, "BFCL score file: valid")
    elsewhere = write_score_file(tmp_path / "elsewhere" / "any_name.json", 2, {})
    found, _ = find_score_file(result, ids, elsewhere)
    assert found.path == elsewhere  # a given file comes first
    found, _ = find_score_file(result, ids, tmp_path / "run" / "score")  # a folder is searched by name
    assert found.path == layout
    wrong = write_score_file(tmp_path / "wrong" / "BFCL_v4_multi_turn_base_score.json", 3, {})
    found, _ = find_score_file(result, ids, wrong)
    assert found.path == layout  # the given file does not fit; the one in bfcl evaluate's layout does
    layout.write_text(layout.read_text().replace('"correct_count": 1', '"correct_count": 2'))
    found, why = find_score_file(result, ids, wrong)
    assert found is None and "counts 3 entries, the result file has 2" in why and "lists 1 failing entries" in why
    other = write_score_file(tmp_path / "cat" / "BFCL_v4_multi_turn_miss_func_score.json", 2, {})
    assert "scores multi_turn_miss_func" in find_score_file(result, ids, other)[1]


def test_the_bfcl_score_option_reaches_the_importer(bfcl, tmp_path):
    result = write_result_file(tmp_path / "logs" / "r.jsonl", [gold_entry(bfcl, i) for i in ENTRIES])
    score = write_score_file(tmp_path / "scores" / "BFCL_v4_multi_turn_base_score.json", 2, {ENTRIES[0]: "x"})
    out = tmp_path / "rollouts.jsonl"
    assert main(["import", "bfcl", str(result), "-o", str(out), "--resources", str(RESOURCES),
                 "--bfcl-score", str(score)]) == 0
    verdicts = [json.loads(line)["recorded"]["y"] for line in out.read_text().splitlines()]
    assert verdicts == [0, 1]


@given(st.recursive(st.none() | st.integers() | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                        ["step_0", "step_1", "role", "content", "model_response_decoded", "x"]), c, max_size=4),
                    max_leaves=15))
@settings(max_examples=200, deadline=None)
def test_any_inference_log_shape_is_read_without_raising(log):
    logged_steps(log)
    logged_steps([log, {"step_0": log}])


# --- τ: a harness that refused a call -----------------------------------------------------------------


def test_a_call_the_log_shows_never_ran_is_not_executed_in_replay(tau_data, tmp_path):
    from prefix_audit.benchmarks.tau import load_v1_benchmarks

    db = tau_data.domains["retail"].raw_db
    order_id, order = next((k, o) for k, o in db["orders"].items() if o["status"] == "pending")
    email = db["users"][order["user_id"]]["email"]
    cancel = {"order_id": order_id, "reason": "no longer needed"}
    traj = [{"role": "system", "content": "policy"}, {"role": "user", "content": f"Cancel {order_id}; {email}"},
            {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {
                "name": "find_user_id_by_email", "arguments": json.dumps({"email": email})}}]},
            {"role": "tool", "tool_call_id": "a", "name": "find_user_id_by_email", "content": order["user_id"]},
            {"role": "assistant", "tool_calls": [{"id": "b", "type": "function", "function": {
                "name": "cancel_pending_order", "arguments": json.dumps(cancel)}}]},
            {"role": "tool", "tool_call_id": "b", "name": "cancel_pending_order",
             "content": "Execution of cancel_pending_order was rejected by the reviewer."},
            {"role": "assistant", "content": "I could not cancel it."}, {"role": "user", "content": "###STOP###"}]
    gold = [{"name": "find_user_id_by_email", "kwargs": {"email": email}},
            {"name": "cancel_pending_order", "kwargs": cancel}]
    entry = {"task_id": 0, "reward": 0.0, "trial": 0, "traj": traj,
             "info": {"task": {"user_id": order["user_id"], "actions": gold, "instruction": "Cancel.", "outputs": []},
                      "reward_info": {"reward": 0.0, "info": {}}}}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps([entry]))
    benches = load_v1_benchmarks(tau_data)
    from prefix_audit.benchmarks.tau.ingest.importer import import_results

    [item] = list(import_results(path, benches.__getitem__))
    assert not isinstance(item, BadLine)
    ep = replay(item.rollout, benches["tau_v1_retail"])
    check = check_record(ep)
    # The refused cancellation never ran: the database keeps the order, so Y is the recorded 0.
    assert ep.Y == 0 == item.rollout.recorded.y
    assert ep.verdicts[1].valid is True and ep.verdicts[1].executed is False  # judged on a scratch copy
    assert check.statuses == {1: "same", 2: "not_executed"} and check.compared == 1
    assert check.log_issue.startswith("not_executed: 1 call(s) the log shows never ran, not executed in replay "
                                      "either (first: call 2 (cancel_pending_order, turn 0))")
    assert issue_codes(check.log_issue) == ["not_executed"]


# --- the shared real logs -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/fixtures/real-logs is absent")
def test_shared_real_logs_carry_their_verdicts(tmp_path, capsys):
    bfcl = REAL / "bfcl"
    logs = [bfcl / "gpt-oss-20b_BFCL_v4_multi_turn_base_result.json",
            *sorted((REAL / "tau2").glob("gemini*.json")), *sorted((REAL / "tau2").glob("gpt-4.1_retail*.json")),
            REAL / "tau-bench-v1" / "gpt-4.1-mini_retail_user-gpt-4.1_1trial.json",
            *sorted((REAL / "toolsandbox").rglob("result_summary.json"))]
    assert _audit([p.parent if p.name == "result_summary.json" else p for p in logs], tmp_path / "out") == 0
    rows = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert rows["recorded_y"].null_count() == 0
    by_block = {t.key[0]: t for t in block_trust(rows)}
    oss = by_block["bfcl_v3"]
    assert (oss.y_agrees, oss.with_verdict, oss.reproduced, oss.compared) == (200, 200, 1550, 1550)
    for dataset in ("tau_airline", "tau_retail", "toolsandbox_recorded"):
        assert by_block[dataset].y_agrees == by_block[dataset].with_verdict
        assert by_block[dataset].replay_agreement == 1.0
    assert by_block["tau_v1_retail"].y_agrees == 115 and by_block["tau_v1_retail"].verdict_agreement == 1.0
    said = capsys.readouterr().err
    assert "Y agrees with the recorded verdict on 200/200; replay reproduces 100.0% of 1550 recorded" in said
    # A result file without its score file beside it carries no verdict, and says why.
    [item, *_] = import_result_file(bfcl / "gpt-oss-20b_BFCL_v4_multi_turn_miss_func_result.json", model="m")
    assert item.rollout.recorded.y is None and "no BFCL score file found" in item.rollout.recorded.verdict


@pytest.mark.slow
@pytest.mark.skipif(not (REAL / "bfcl").is_dir(), reason="../shared/fixtures/real-logs is absent")
def test_the_shared_xlam_file_audits_with_no_flags_to_its_score_file(tmp_path, capsys):
    """The v3 file written through BFCL's xLAM handler: read by that handler (its score file names the
    model) on the v3 era's data, every entry an episode, Y = BFCL's verdict on at least 199 of 200 (the
    one left is BFCL's own order dependence through post_tweet's shared default list)."""
    assert _audit([REAL / "bfcl" / "xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json"], tmp_path / "out") == 0
    said = capsys.readouterr().err
    assert "read: BFCL SalesforceLlamaHandler (is_fc_model=True) of model Salesforce/Llama-xLAM-2-8b-fc-r, " \
           "from the score file; data of bfcl-eval 2025.9.29" in said
    assert "could not be decoded" not in said and "Y disagrees" not in said
    rows = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert rows.height == 200 and rows["recorded_y"].null_count() == 0
    assert (rows["Y"] == rows["recorded_y"]).sum() >= 199
    assert rows["undecoded_steps"].sum() == 0
