"""Human step labels beside FED: the three label shapes read alike, every label lands on an action or a
message of its rollout or is reported unmatched with its reason, FED's place beside the labellers' first
failure, the audit's tables and the browser — on hand-made logs, and on the shared labelled corpora
(AgentRx's failed τ-bench retail trajectories, AgentProcessBench's records) where ../shared is present."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import SHARED
from hypothesis import given, settings
from hypothesis import strategies as st
from tau_results import GREETING, STOP, agent_says, results_document, simulation, tool_call, user_says

from prefix_audit.cli import main
from prefix_audit.core.calls import structured_call
from prefix_audit.core.decode import DecodeError
from prefix_audit.core.labels import EntryKey, LabelledEntry, StepLabel, read_labels
from prefix_audit.core.records import RecordError, Rollout, Step, dumps, rollout_from_json
from prefix_audit.statistics.labels import compare_labels, label_summary

LABELS = SHARED / "fixtures" / "labels"


def _lines(path: Path, objects) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


# --- a rollout with messages: system, user, agent call, tool, agent text, user, agent call, tool, agent text

ROLES = ("system", "user", "agent", "tool", "agent", "user", "agent", "tool", "agent")


def _rollout(task_id: str = "7", trial: int = 0, roles: tuple[str, ...] = ROLES) -> Rollout:
    with_messages = bool(roles)

    def at(k):
        return k if with_messages else None
    turns = ((Step((structured_call("a", {}, "c1"),), message=at(2)), Step((), "asked", message=at(4))),
             (Step((structured_call("b", {}, "c2"),), message=at(6)), Step((), "done", message=at(8))))
    return Rollout("tau_airline", task_id, "m", "imported", f"r{task_id}.{trial}", turns, trial=trial,
                   message_roles=roles)


def _episodes(*rows: tuple[str, int, int | None, str | None]) -> pl.DataFrame:
    return pl.DataFrame([{"rollout_id": r, "dataset": "tau_airline", "model": "m", "method": "imported", "T": t,
                          "FED": fed, "category": category} for r, t, fed, category in rows])


def _entry(labels, **key) -> LabelledEntry:
    return LabelledEntry(EntryKey(**key), tuple(labels), "labels.jsonl:1", "prefix-audit")


def test_steps_carry_their_message_through_the_record():
    rollout = _rollout()
    back = rollout_from_json(json.loads(dumps(rollout)))
    assert back == rollout and [s.message for t in back.turns for s in t] == [2, 4, 6, 8]
    record = json.loads(dumps(rollout))
    record["turns"][0][0]["message"] = 1  # a user message cannot be the agent's step
    with pytest.raises(RecordError, match="agent's messages"):
        rollout_from_json(record)
    record["turns"][0][0]["message"] = 2
    record["turns"][0][0]["call_messages"] = [2, 6]  # one position per call
    with pytest.raises(RecordError, match="one message position per call"):
        rollout_from_json(record)


def test_each_label_lands_on_its_action_or_its_message_or_says_why_not():
    rollout = _rollout()
    labels = [StepLabel("correct", message=2), StepLabel("failure", message=5, category="underspecified"),
              StepLabel("neutral", message=4), StepLabel("failure", message=9), StepLabel("correct", action=2),
              StepLabel("correct", action=4), StepLabel("failure", turn=1, step=1),
              StepLabel("failure", turn=3, step=0),
              StepLabel("failure", message=0)]
    placed, _ = compare_labels([_entry(labels, task_id="7")], [rollout], _episodes(("r7.0", 3, 4, None)))
    rows = pl.from_arrow(placed).select("place", "landed", "actions", "after_action", "reason").to_dicts()
    landed = [(r["landed"], r["actions"], r["after_action"]) for r in rows]
    assert landed == [("action", [1], None), ("user", [], 1), ("agent_text", [], 1), ("unmatched", [], None),
                      ("action", [2], None), ("unmatched", [], None), ("action", [3], None), ("unmatched", [], None),
                      ("system", [], 0)]
    assert rows[3]["reason"] == "message 9 is beyond the log's 9 messages"
    assert rows[5]["reason"] == "action 4 is beyond the rollout's 3 actions"
    assert rows[7]["reason"] == "turn 3 step 0 is not in the rollout"


def test_a_log_without_messages_takes_labels_by_action_or_step_only():
    rollout = _rollout(roles=())
    placed, _ = compare_labels([_entry([StepLabel("failure", message=2), StepLabel("failure", turn=0, step=1)],
                                       task_id="7")], [rollout], _episodes(("r7.0", 3, 4, None)))
    rows = pl.from_arrow(placed).to_dicts()
    assert rows[0]["landed"] == "unmatched" and "no message positions" in rows[0]["reason"]
    assert (rows[1]["landed"], rows[1]["after_action"]) == ("agent_text", 1)  # the step between actions 1 and 2


@pytest.mark.parametrize(("fed", "first", "relation", "offset", "on_failure"), [
    (1, 2, "at", 0.0, True),  # FED's action is the labellers' first failure
    (1, 5, "before", -3.0, False),  # FED first, the labellers' first failure on the user's message after it
    (2, 2, "after", 4.0, False),  # the labellers saw a failure FED did not: FED comes later
])
def test_fed_beside_the_first_failure(fed, first, relation, offset, on_failure):
    labels = [StepLabel("correct", message=4), StepLabel("failure", message=first), StepLabel("failure", message=8)]
    _, entries = compare_labels([_entry(labels, task_id="7")], [_rollout()], _episodes(("r7.0", 3, fed, "schema")))
    [row] = pl.from_arrow(entries).to_dicts()
    assert (row["relation"], row["offset"], row["offset_unit"], row["fed_on_failure"]) == \
        (relation, offset, "messages", on_failure)
    assert (row["labels"], row["failures"], row["fired"], row["fed_category"]) == (3, 2, True, "schema")


def test_a_fully_executable_rollout_and_entries_that_match_none_or_several():
    rollouts = [_rollout("7", 0), _rollout("8", 0), _rollout("8", 1)]
    episodes = _episodes(("r7.0", 3, 4, None), ("r8.0", 3, 1, "schema"), ("r8.1", 3, 2, "schema"))
    entries = [_entry([StepLabel("failure", message=5)], task_id="7"), _entry([StepLabel("failure", message=5)],
                                                                             task_id="9"),
               _entry([StepLabel("failure", message=2)], task_id="8"),
               _entry([StepLabel("failure", message=2)], task_id="8", trial=1), _entry([], task_id="7", trial=0)]
    placed, table = compare_labels(entries, rollouts, episodes)
    rows = pl.from_arrow(table).to_dicts()
    assert rows[0]["fired"] is False and rows[0]["relation"] is None and rows[0]["failures"] == 1
    assert rows[1]["unmatched"] == "no audited entry has task_id 9"
    assert rows[2]["unmatched"].startswith("2 audited entries have task_id 8")
    assert rows[3]["rollout_id"] == "r8.1" and rows[3]["relation"] == "after"
    assert rows[4]["rollout_id"] == "r7.0" and (rows[4]["labels"], rows[4]["failures"]) == (0, 0)
    labels = pl.from_arrow(placed)
    assert labels.filter(pl.col("rollout_id").is_null())["reason"].to_list() == [
        "no audited entry has task_id 9", rows[2]["unmatched"]]
    [block] = label_summary(labels, pl.from_arrow(table))
    assert (block["labelled"], block["with_failure"], block["executable"]["s"], block["fired"]["s"]) == (3, 2, 1, 1)
    assert block["fired"]["n"] == 3 and block["after"] == {**block["after"], "s": 1, "n": 1}


def test_the_three_shapes_read_alike(tmp_path):
    ours = _lines(tmp_path / "ours.jsonl", [
        {"task_id": "7", "labels": [{"message": 2, "verdict": "correct"},
                                    {"message": 5, "verdict": "failure", "category": "Underspecified User Intent",
                                     "blamed": "User", "note": "asked twice"}]}])
    agentrx = tmp_path / "agentrx.json"
    agentrx.write_text(json.dumps([{"trajectory_id": 7, "failures": [
        {"step_number": 6, "failure_category": "Underspecified User Intent", "failed_agent": "User",
         "step_reason": "asked twice"}]}]))
    apb = _lines(tmp_path / "apb.jsonl", [{"record_id": "tau2_airline:0:0", "step_labels": {"2": 1, "5": -1}}])
    [e_ours], [e_rx], [e_apb] = (read_labels(p).entries for p in (ours, agentrx, apb))
    rollout = _rollout()
    rollout = Rollout(*[getattr(rollout, f) for f in ("dataset", "task_id", "model", "method", "rollout_id", "turns")],
                      source=rollout.source, meta={"record_id": "tau2_airline:0:0"}, message_roles=rollout.message_roles)
    episodes = _episodes(("r7.0", 3, 1, "schema"))
    comparisons = [pl.from_arrow(compare_labels([e], [rollout], episodes)[1]).drop("source", "entry", "shape",
                                                                                   "first_failure")
                   for e in (e_ours, e_rx, e_apb)]
    assert comparisons[0].drop("first_failure_category", "first_failure_blamed").equals(
        comparisons[2].drop("first_failure_category", "first_failure_blamed").with_columns(
            pl.lit(2, pl.Int32).alias("labels")))  # APB labels the correct step too, AgentRx only failures
    assert comparisons[0].drop("labels").equals(comparisons[1].drop("labels"))
    assert e_rx.labels[0].place() == "step_number 6" and e_rx.labels[0].message == 5


def test_unreadable_entries_and_steps_are_reported_with_their_place(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join([
        json.dumps({"task_id": "7", "labels": [{"message": 2, "verdict": "wrong"}, {"action": 1, "verdict": "correct"},
                                               {"message": 1, "action": 2, "verdict": "failure"}]}),
        json.dumps({"labels": []}), "{not json", json.dumps({"record_id": "x", "step_labels": {"a": 1, "3": 2}}),
        json.dumps(["a list"])]) + "\n")
    read = read_labels(path)
    assert [(e.key.task_id, len(e.labels)) for e in read.entries] == [("7", 1), (None, 0)]
    reasons = [(p.source.split("labels.jsonl:")[1], p.reason) for p in read.problems]
    assert reasons[0] == ("1 labels[0]", "labels[0].verdict must be one of failure, neutral, correct, got \"wrong\"")
    assert reasons[1][0] == "1 labels[2]" and "one way" in reasons[1][1]
    assert reasons[2] == ("2", "an entry needs a rollout_id, a task_id or a record_id to be matched to an "
                               "audited entry")
    assert reasons[3][0] == "3"
    assert [r[0] for r in reasons[4:]] == ["4 step_labels['a']", "4 step_labels['3']", "5"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                             lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                                 st.sampled_from(["task_id", "labels", "message", "verdict", "action", "turn", "step",
                                                  "record_id", "step_labels", "trial"]), inner, max_size=4)),
                max_size=6))
def test_any_json_lines_read_without_a_crash_and_nothing_is_lost(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("fuzz") / "labels.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in values) or "\n")
    document = bool(values) and isinstance(values[0], list)  # a file opening with a list is one JSON document
    if document and len(values) > 1:
        with pytest.raises(DecodeError, match="not valid JSON|JSON"):  # several lines are no one document
            read_labels(path)
        return
    read = read_labels(path)
    seen = {e.source for e in read.entries} | {p.source.split(" ")[0] for p in read.problems}
    # every line (every item of a document) is an entry or a problem
    assert seen == ({f"{path}:[{i}]" for i in range(len(values[0]))} if document
                    else {f"{path}:{i}" for i in range(1, len(values) + 1)})


def _tau2_log(tau, path: Path) -> Path:
    """Task 5 of airline: the agent calls a tool that fails, then one that works, then answers."""
    messages = [GREETING, user_says("Hi, I am mia_li_3668."),
                *tool_call("c1", "get_reservation_details", {"reservation_id": "NOSUCH"}, "Error: not found", True),
                *tool_call("c2", "get_user_details", {"user_id": "mia_li_3668"}, "{}"),
                agent_says("Done."), STOP]
    path.write_text(json.dumps(results_document(tau, [simulation("s1", "5", messages, reward=0.0)], ("5",))))
    return path


def test_an_audit_with_labels_writes_them_beside_fed_with_tables_and_pages(tau, tmp_path, capsys):
    log = _tau2_log(tau, tmp_path / "results.json")
    labels = _lines(tmp_path / "labels.jsonl", [
        {"task_id": "5", "labels": [{"message": 2, "verdict": "failure", "category": "Invalid Invocation"},
                                    {"message": 1, "verdict": "failure", "category": "Underspecified User Intent"},
                                    {"message": 6, "verdict": "correct"}, {"message": 40, "verdict": "neutral"}]},
        {"task_id": "12", "labels": [{"action": 1, "verdict": "failure"}]}])
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", str(log), "-o", str(out), "--labels", str(labels), "--resamples", "200"]) == 0
    err = capsys.readouterr().err
    assert "labels: 2 labelled entries from 1 file(s), 1 matched to an audited entry; 5 labels (" in err
    assert "no audited entry has task_id 12" in err and "message 40 is beyond the log's" in err
    [row] = pl.read_parquet(out / "labels" / "entries.parquet").filter(pl.col("rollout_id").is_not_null()).to_dicts()
    assert (row["FED"], row["fed_message"], row["relation"], row["first_failure"]) == (1, 2, "after", "message 1")
    table = pl.read_csv(out / "tables" / "table_labels.csv")
    assert table.select("labelled", "with failure", "fired_s", "fed_on_failure_s", "after_s").row(0) == (1, 1, 1, 1, 1)
    assert "| Underspecified User Intent |" in (out / "tables" / "table_label_categories.md").read_text()
    assert [p.name for p in sorted((out / "figures" / "labels").glob("*.png"))] == [
        "label_offsets_tau_airline_test-model.png"]
    again = tmp_path / "audit-again"  # the same input, the same bytes
    assert main(["audit", "--no-figures", str(log), "-o", str(again), "--labels", str(labels), "--resamples", "200"]) == 0
    for name in ("labels/labels.parquet", "labels/entries.parquet", "tables/table_labels.csv",
                 "figures/labels/label_offsets_tau_airline_test-model.png"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    # `tables` on the audit folder writes the same labels tables again
    assert main(["tables", str(out / "stats"), "-o", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "table_labels.csv").read_bytes() == (out / "tables" / "table_labels.csv").read_bytes()
    assert main(["view", str(out), "-o", str(tmp_path / "site")]) == 0
    page = next((tmp_path / "site" / "blocks").rglob("r/1.html")).read_text()
    assert "human: failure" in page and "Invalid Invocation" in page and "the user&#39;s message (no action)" in page
    assert "Human labels that landed on no step" in page and "message 40 is beyond" in page
    block = next((tmp_path / "site" / "blocks").rglob("index.html")).read_text()
    assert "FED beside human step labels" in block and "FED after it" in block


def test_a_labels_file_that_cannot_be_read_stops_the_audit_before_it_runs(tmp_path, capsys):
    assert main(["audit", "--no-figures", str(tmp_path / "none.json"), "-o", str(tmp_path / "out"), "--labels",
                 str(tmp_path / "missing.jsonl")]) != 0
    assert "missing.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --- the shared labelled corpora ---------------------------------------------------------------------------

needs_labels = pytest.mark.skipif(not LABELS.is_dir(), reason="../shared/fixtures/labels is absent")


@needs_labels
@pytest.mark.slow
def test_agentrx_failed_trajectories_reproduce_the_published_comparison(tmp_path, capsys):
    out = tmp_path / "arx"
    assert main(["audit", "--no-figures", str(LABELS / "agentrx" / "tau_dataset_failed.json"), "-o", str(out), "--labels",
                 str(LABELS / "agentrx" / "tau_ground_truth.json"), "--resamples", "200"]) == 0
    table = pl.read_csv(out / "tables" / "table_labels.csv").row(0, named=True)
    assert (table["labelled"], table["with failure"], table["executable_s"], table["fired_s"]) == (29, 29, 20, 9)
    assert (table["fed_on_failure_s"], table["at_s"], table["before_s"], table["after_s"]) == (3, 2, 5, 2)
    labels = pl.read_parquet(out / "labels" / "labels.parquet")
    assert labels.filter(pl.col("landed") == "unmatched").height == 0  # every one of the 39 lands
    assert labels.group_by("landed").len().sort("landed").rows() == [("action", 22), ("agent_text", 6), ("user", 11)]


@needs_labels
@pytest.mark.slow
@pytest.mark.parametrize(("name", "labels", "entries"), [("apb_tau2_subset.jsonl", 78, 5),
                                                         ("apb_bfcl_subset.jsonl", 217, 15)])
def test_agentprocessbench_records_are_audited_with_their_own_labels(tmp_path, capsys, name, labels, entries):
    out = tmp_path / "apb"
    assert main(["audit", "--no-figures", str(LABELS / name), "-o", str(out), "--labels", str(LABELS / name),
                 "--resamples", "200"]) == 0
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    assert episodes.height == entries and (episodes["Y"] == episodes["recorded_y"]).all()
    if name.startswith("apb_bfcl"):  # mixed releases: scored on the one whose classes reproduce the tool results
        assert (episodes["replay_agreement"] == 1.0).all()
        flagged = episodes.filter(pl.col("log_issue").is_not_null())["log_issue"]
        assert flagged.len() == 5 and flagged.str.starts_with("data_version: the recorded run does not fit "
                                                              "bfcl-eval 2026.3.23's data: the recorded ground").all()
    placed = pl.read_parquet(out / "labels" / "labels.parquet")
    assert placed.height == labels and placed.filter(pl.col("landed") == "unmatched").height == 0
    assert set(placed["landed"]) == {"action", "agent_text"}  # APB labels every assistant message, nothing else
    assert pl.read_parquet(out / "labels" / "entries.parquet")["unmatched"].null_count() == entries


def _real_logs() -> list[Path]:
    real = SHARED / "fixtures" / "real-logs"
    return [real / "tau2" / "gemini-2.5-flash_airline_10tasks_2trials.json",
            real / "tau-bench-v1" / "gpt-4.1-mini_retail_user-gpt-4.1_1trial.json",
            real / "bfcl" / "xLAM-2-8b-fc-r_BFCL_v3_multi_turn_base_result.json",
            real / "toolsandbox" / "agent_openai"]


@pytest.mark.slow
def test_labels_of_ours_on_every_message_of_the_real_logs_round_trip(tmp_path, capsys):
    """Every message position of every rollout (and one past the last), every step, and actions 1 to 3
    of the shared real logs of each format: each lands where the log has it; the rest is unmatched
    with its reason (past the end, or a message label on BFCL's result file, which has no messages)."""
    from prefix_audit.core.records import Located, read_rollouts
    from prefix_audit.statistics.labels import LabelGroup, write_label_comparison

    logs = _real_logs()
    if not all(p.exists() for p in logs):
        pytest.skip("../shared/fixtures/real-logs is absent")
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--resamples", "50"]) == 0
    rollout_files = sorted(p for p in (out / "rollouts" / "imported").rglob("*.jsonl") if "quarantine" not in p.name)
    entries = []
    for path in rollout_files:
        for item in read_rollouts(path):
            if isinstance(item, Located) and item.rollout.infra_error is None:
                r = item.rollout
                entries.append({"rollout_id": r.rollout_id, "labels": [
                    *({"turn": t, "step": s, "verdict": "neutral"} for t, turn in enumerate(r.turns)
                      for s in range(len(turn))),
                    *({"message": m, "verdict": "failure"} for m in range(len(r.message_roles) + 1)),
                    *({"action": j, "verdict": "correct"} for j in range(1, 4))]})
    labels = _lines(tmp_path / "labels.jsonl", entries)
    report = write_label_comparison([LabelGroup([labels], rollout_files)], out / "fed" / "episodes.parquet",
                                    tmp_path / "labels")
    assert report.problems == 0 and report.matched == report.entries == len(entries) > 100
    placed = pl.read_parquet(tmp_path / "labels" / "labels.parquet")
    steps = placed.filter(pl.col("place").str.starts_with("turn"))
    assert steps.filter(pl.col("landed") == "unmatched").height == 0  # every step of every rollout lands
    messages = placed.filter(pl.col("place").str.starts_with("message"))
    lost = messages.filter(pl.col("landed") == "unmatched")
    assert set(lost["reason"].str.replace_all(r"\d+", "N")) == {
        "message N is beyond the log's N messages",
        "the log records no message positions: name the step by 'action' or by 'turn' and 'step'"}
    # one past the end per rollout with messages; BFCL's result file has none
    with_messages = messages.filter(pl.col("dataset") != "bfcl_v3")
    assert with_messages.filter(pl.col("landed") == "unmatched").height == with_messages["rollout_id"].n_unique()
    assert set(with_messages["landed"]) >= {"action", "agent_text", "user", "tool", "system"}
    actions = placed.filter(pl.col("place").str.starts_with("action"))
    assert set(actions.filter(pl.col("landed") == "unmatched")["reason"].str.replace_all(r"\d+", "N")) <= {
        "action N is beyond the rollout's N actions"}
