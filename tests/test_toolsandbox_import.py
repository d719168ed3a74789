"""Importing ToolSandbox run folders and scoring them from their recorded outcomes (hand-computed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED, score_dir
from toolsandbox_runs import BRUNO, Call, ScenarioRun, disallowed_traceback, write_run

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark, import_runs
from prefix_audit.benchmarks.toolsandbox.recorded import error_category, normalize_exception
from prefix_audit.cli import main
from prefix_audit.core.records import BadLine, ModelNamed, NamedBy, dumps, read_rollouts
from prefix_audit.generation.sources.mutation import mutated_rollout
from prefix_audit.replay.checker import replay
from prefix_audit.replay.registry import open_benchmark

FIXTURES = SHARED / "fixtures" / "toolsandbox-runs"
PHONE = BRUNO["phone_number"]
NO_DATA = ("polars.exceptions.NoDataError: No db entry matching predicate=<Expr ['[([(col(\"person_id\")) == "
           "(Stri…'] at 0x7F253EDBB0D0> found")


def search(cid: str, **arguments) -> Call:
    return Call(cid, "search_contacts", arguments, result=[BRUNO])


SCENARIOS = [
    # search, then remove_contact, which the deny list forbids: ToolSandbox aborts with KeyError
    ScenarioRun("abort_disallowed_tool",
                [("user", f"Remove {PHONE} from my contacts"), ("calls", [search("c1", phone_number=PHONE)])],
                similarity=0, allowed=["search_contacts", "end_conversation"], denied=["remove_contact"],
                exception_type="KeyError", traceback=disallowed_traceback("remove_contact", ["search_contacts"]),
                categories=("INSUFFICIENT_INFORMATION",)),
    # cellular is off: ConnectionError, then the agent turns it on and resends
    ScenarioRun("cellular_off_repair",
                [("user", "Text Bruno Okafor: see you at ten"), ("calls", [search("c1", name="Bruno Okafor")]),
                 ("calls", [Call("c2", "send_message_with_phone_number", {"phone_number": PHONE, "content": "see you at ten"},
                                 error="ConnectionError: Cellular service is not enabled")]),
                 ("calls", [Call("c3", "set_cellular_service_status", {"on": True})]),
                 ("calls", [Call("c4", "send_message_with_phone_number", {"phone_number": PHONE, "content": "see you at ten"},
                                 result="m-1")]),
                 ("agent", "Sent.")],
                allowed=["search_contacts", "send_message_with_phone_number", "set_cellular_service_status",
                         "end_conversation"], categories=("STATE_DEPENDENCY", "MULTIPLE_TOOL_CALL")),
    # a parallel message; ToolSandbox records the failing ordering: responses must go by id
    ScenarioRun("parallel_by_id",
                [("user", "Turn on cellular"),
                 ("calls", [Call("a", "set_low_battery_mode_status", {"on": False}),
                            Call("b", "set_cellular_service_status", {"on": True},
                                 error="PermissionError: Cellular service cannot be turned on in low battery mode")],
                  ["b", "a"]),
                 ("calls", [Call("c", "set_cellular_service_status", {"on": True})]), ("agent", "Cellular is on.")],
                allowed=["set_low_battery_mode_status", "set_cellular_service_status", "end_conversation"]),
    # the contact is removed, then modified: the id is stale (a dependency failure); similarity 0.5
    ScenarioRun("stale_after_removal",
                [("user", "Remove Bruno Okafor, then call him my boss"), ("calls", [search("c1", name="Bruno Okafor")]),
                 ("calls", [Call("c2", "remove_contact", {"person_id": "p-bruno"}, removes=("p-bruno",))]),
                 ("calls", [Call("c3", "modify_contact", {"person_id": "p-bruno", "relationship": "boss"}, error=NO_DATA)]),
                 ("agent", "Done.")], similarity=0.5, allowed=["search_contacts", "remove_contact", "modify_contact"]),
    # a phone number where the id belongs (state-consistency) vs a guessed id (dependency)
    ScenarioRun("phone_as_id",
                [("user", f"Remove {PHONE} from my contacts"),
                 ("calls", [Call("c1", "remove_contact", {"person_id": PHONE}, error=NO_DATA)]),
                 ("calls", [search("c2", phone_number=PHONE)]),
                 ("calls", [Call("c3", "remove_contact", {"person_id": "p-bruno"}, removes=("p-bruno",))])],
                allowed=["search_contacts", "remove_contact"]),
    ScenarioRun("guessed_id",
                [("user", f"Remove {PHONE} from my contacts"),
                 ("calls", [Call("c1", "remove_contact", {"person_id": "5f0c2a7e-guess"}, error=NO_DATA)]),
                 ("agent", "Nothing was removed.")], similarity=0, allowed=["remove_contact"]),
    # the agent uses the number before the user gives it (turn 2), and a type error on 'on'
    ScenarioRun("number_before_given",
                [("user", "I want to delete someone"), ("calls", [search("c1", phone_number=PHONE)]),
                 ("agent", "Who?"), ("user", f"It is {PHONE}"),
                 ("calls", [Call("c2", "remove_contact", {"person_id": "p-bruno"}, removes=("p-bruno",))])],
                allowed=["search_contacts", "remove_contact"]),
    ScenarioRun("wifi_type_error",
                [("user", "Turn off wifi"),
                 ("calls", [Call("c1", "set_wifi_status", {"on": "off"},
                                 error="TypeError: Parameter 'on' is of type '<class 'str'>', but expected "
                                       "'<class 'bool'>'.")]),
                 ("calls", [Call("c2", "set_wifi_status", {"on": False})]), ("agent", "Wifi is off.")],
                allowed=["set_wifi_status"]),
    ScenarioRun("national_number",
                [("user", "Add Kofi, 4155550201"),
                 ("calls", [Call("c1", "add_contact", {"name": "Kofi", "phone_number": "4155550201"},
                                 error="phonenumbers.phonenumberutil.NumberParseException: (0) Missing or invalid "
                                       "default region.")]),
                 ("calls", [Call("c2", "add_contact", {"name": "Kofi", "phone_number": "+14155550201"}, result="p-kofi")])],
                allowed=["add_contact"]),
]
# (T, FED, Y, category, first failure code), computed by hand from the scenarios above
EXPECTED = {
    "abort_disallowed_tool": (2, 2, 0, "schema", "tool_not_exposed"),
    "cellular_off_repair": (5, 2, 1, "precondition", "precondition"),
    "parallel_by_id": (4, 2, 1, "precondition", "precondition"),
    "stale_after_removal": (4, 3, 0, "dependency", "stale_reference"),
    "phone_as_id": (3, 1, 1, "state_consistency", "rejected_transition"),
    "guessed_id": (2, 1, 0, "dependency", "missing_reference"),
    "number_before_given": (2, 1, 1, "information", "fact_not_yet_given"),
    "wifi_type_error": (3, 1, 1, "schema", "validator"),
    "national_number": (2, 1, 1, "schema", "validator"),
}


@pytest.fixture()
def run_folder(tmp_path: Path) -> Path:
    return write_run(tmp_path, SCENARIOS)


def _episodes(source: Path) -> dict:
    bench = open_benchmark("toolsandbox_recorded", "unused")
    out = {}
    for item in import_runs(source):
        assert not isinstance(item, BadLine), item
        rollout = item.rollout
        episode = replay(rollout, bench)
        first = episode.first_failure
        out[rollout.task_id] = (episode.T, episode.FED, episode.Y, episode.category,
                                first.failures[0].code if first else None), rollout, episode
    return out


def test_hand_computed_fed_and_y(run_folder):
    episodes = _episodes(run_folder)
    assert {k: v[0] for k, v in episodes.items()} == EXPECTED


def test_abort_and_record_details(run_folder):
    episodes = _episodes(run_folder)
    _, aborted, _ = episodes["abort_disallowed_tool"]
    assert not (run_folder / "trajectories" / "abort_disallowed_tool" / "conversation.json").exists()
    last = aborted.turns[-1][-1].calls[0]
    assert (last.name, last.kwargs) == ("remove_contact", {})
    assert aborted.extra["toolsandbox"]["calls"][last.call_id]["arguments_unknown"] is True
    assert aborted.meta["toolsandbox"]["exception_type"] == "KeyError"
    assert aborted.model == "fake_gpt" and aborted.dataset == "toolsandbox_recorded"
    _, stale, episode = episodes["stale_after_removal"]
    assert stale.meta["toolsandbox"]["similarity"] == 0.5 and "similarity 0.5" in episode.y_detail
    error = stale.extra["toolsandbox"]["calls"]["c3"]["error"]
    assert error == "NoDataError: No db entry matching predicate=<Expr …> found"
    _, parallel, _ = episodes["parallel_by_id"]
    assert [c.call_id for c in parallel.turns[0][0].calls] == ["a", "b"]  # emitted order kept


def test_normalize_and_classify_exceptions():
    text = ("Traceback (most recent call last):\n  x = f()\n      ^^^^^\npolars.exceptions.NoDataError: "
            "No db entry matching predicate=<Expr ['[(col(\"a\"))]'] at 0x7FAD76FCC130> found")
    assert normalize_exception(text) == ("Traceback (most recent call last):\n  x = f()\n"
                                         "polars.exceptions.NoDataError: No db entry matching predicate=<Expr …> found")
    assert normalize_exception(NO_DATA) == "NoDataError: No db entry matching predicate=<Expr …> found"
    assert normalize_exception("<object at 0xdeadbeef>") == "<object>"
    assert [error_category(e) for e in ("TypeError: x", "NumberParseException: (0)", "ConnectionError: x",
                                        "PermissionError: x", "ValueError: wifi already enabled",
                                        "ValueError: Parameter 'latitude' is larger than its valid range maximum",
                                        "NoDataError: x", "DuplicateError: x", "ZeroDivisionError: x")] == [
        "schema", "schema", "precondition", "precondition", "precondition", "schema", "state_consistency",
        "state_consistency", "state_consistency"]


def test_bad_scenarios_are_quarantined_with_reasons_and_failed_model_calls_kept(tmp_path: Path):
    good = SCENARIOS[1]
    run = write_run(tmp_path, [good, ScenarioRun("missing_folder", [("user", "hi")]),
                               ScenarioRun("bad_json", [("user", "hi")]), ScenarioRun("rate_limited", [("user", "hi")]),
                               ScenarioRun("disagreeing", [("user", "hi"), ("calls", [search("c1", name="Bruno")])]),
                               ScenarioRun("unanswered", [("user", "hi"), ("calls", [search("c1", name="Bruno")])])])
    traj = run / "trajectories"
    import shutil

    shutil.rmtree(traj / "missing_folder")
    (traj / "bad_json" / "execution_context.json").write_text("{not json")
    summary = json.loads((run / "result_summary.json").read_text())
    summary["per_scenario_results"][3].update(exception_type="RateLimitError",
                                              traceback="openai.RateLimitError: Error code: 429")
    summary["per_scenario_results"].append(dict(summary["per_scenario_results"][0]))  # listed twice
    summary["per_scenario_results"].append({"name": "no_similarity"})
    (run / "result_summary.json").write_text(json.dumps(summary))
    conversation = json.loads((traj / "disagreeing" / "conversation.json").read_text())
    conversation[2]["tool_calls"][0]["function"]["name"] = "remove_contact"
    (traj / "disagreeing" / "conversation.json").write_text(json.dumps(conversation))
    context = json.loads((traj / "unanswered" / "execution_context.json").read_text())
    context["_dbs"]["SANDBOX"] = [r for r in context["_dbs"]["SANDBOX"] if r["sender"] != "EXECUTION_ENVIRONMENT"
                                  or r["recipient"] != "AGENT"]
    (traj / "unanswered" / "execution_context.json").write_text(json.dumps(context))

    items = list(import_runs(run))
    # The rate-limited scenario aborted before the agent acted: an infrastructure failure, kept.
    assert [type(i).__name__ for i in items] == ["Located", "BadLine", "BadLine", "Located"] + ["BadLine"] * 4
    assert items[3].rollout.infra_error == "RateLimitError: Error code: 429"
    assert items[3].rollout.turns == () and items[0].rollout.infra_error is None
    reasons = {i.line: i.reason for i in items if isinstance(i, BadLine)}
    assert "missing execution_context.json" in reasons[2]
    assert "not valid JSON" in reasons[3]
    assert "disagree with the execution log" in reasons[5]
    assert "without a recorded response: c1" in reasons[6]
    assert "listed twice" in reasons[7]
    assert "similarity must be a number" in reasons[8]
    assert all(i.path.endswith("result_summary.json") for i in items)


def test_cli_import_is_deterministic_and_scores(run_folder, tmp_path: Path):
    out_a, out_b = tmp_path / "a" / "r.jsonl", tmp_path / "b" / "r.jsonl"
    assert main(["import", "toolsandbox", str(run_folder.parent), "-o", str(out_a)]) == 0
    assert main(["import", "toolsandbox", str(run_folder), "-o", str(out_b)]) == 0
    assert out_a.read_bytes() == out_b.read_bytes() and len(out_a.read_text().splitlines()) == len(SCENARIOS)
    assert (tmp_path / "a" / "r.jsonl.quarantine.jsonl").read_text() == ""
    assert main(["score", str(out_a), "-o", str(tmp_path / "scores")]) == 0
    import polars as pl

    table = pl.read_parquet(tmp_path / "scores" / "episodes.parquet")
    got = {r["task_id"]: (r["T"], r["FED"], r["Y"], r["category"]) for r in table.iter_rows(named=True)}
    assert got == {k: v[:4] for k, v in EXPECTED.items()}
    assert main(["import", "toolsandbox", str(tmp_path / "nowhere"), "-o", str(tmp_path / "x.jsonl")]) == 2


def test_scoring_twice_is_byte_identical(run_folder, tmp_path: Path):
    bench = ToolSandboxBenchmark()
    rollouts = [bench.reference_rollout(t) for t in bench.task_ids()[:20]]
    rollouts += [r for t in bench.task_ids()[:40] for c in ("schema", "state_consistency", "precondition")
                 if (r := mutated_rollout(bench, t, c, seed=3)) is not None]
    rollouts += [item.rollout for item in import_runs(run_folder)]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(dumps(r) + "\n" for r in rollouts))
    assert sum(1 for _ in read_rollouts(path)) == len(rollouts)
    first, second = score_dir(path, tmp_path / "one", "unused"), score_dir(path, tmp_path / "two", "unused")
    assert first.scored == second.scored == len(rollouts) and first.quarantined == 0
    for name in ("episodes.parquet", "actions.parquet", "quarantine.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_recorded_rollout_without_its_record_is_quarantined(run_folder, tmp_path: Path):
    from dataclasses import replace

    rollout = next(import_runs(run_folder)).rollout
    path = tmp_path / "r.jsonl"
    path.write_text(dumps(replace(rollout, extra={})) + "\n")
    report = score_dir(path, tmp_path / "s", "unused")
    assert report.quarantined == 1
    assert "not an imported ToolSandbox run" in (tmp_path / "s" / "quarantine.jsonl").read_text()


# --- real ToolSandbox output (shared fixtures; absent in a fresh clone) --------------------------

REAL = {  # (T, FED, Y, category): counted by hand from the real run folders
    ("scripted_main", "find_days_till_holiday"): (4, 5, 1, None),
    ("scripted_main", "remove_contact_by_phone"): (4, 2, 1, "state_consistency"),
    ("scripted_main", "send_message_with_contact_content_cellular_off"): (5, 2, 1, "precondition"),
    ("scripted_main", "turn_on_wifi_low_battery_mode"): (4, 1, 1, "precondition"),
    ("scripted_main", "add_contact_with_name_and_phone_number"): (3, 1, 1, "schema"),
    ("scripted_main", "remove_contact_by_phone_no_remove_contact_insufficient_information"): (2, 2, 0, "schema"),
    ("scripted_main", "remove_contact_by_phone_no_search_contacts_insufficient_information"): (1, 2, 1, None),
    ("scripted_main", "remove_contact_by_phone_multiple_user_turn"): (4, 1, 1, "schema"),
    ("scripted_main", "wifi_off"): (3, 1, 1, "precondition"),
    ("scripted_main", "modify_contact_with_message_recency"): (4, 5, 0, None),
    ("scripted_main", "update_contact_relationship_with_relationship"): (4, 5, 1, None),
    ("scripted_main", "turn_on_cellular_low_battery_mode"): (4, 2, 1, "precondition"),
    ("scripted_variants", "remove_contact_by_phone"): (2, 2, 0, "schema"),
    ("scripted_variants", "remove_contact_by_phone_no_search_contacts_insufficient_information"): (2, 1, 0, "dependency"),
    ("scripted_variants", "turn_on_wifi_low_battery_mode"): (3, 2, 0, "precondition"),
    ("scripted_variants", "wifi_off"): (3, 1, 1, "schema"),
}


def test_real_toolsandbox_runs():
    if not FIXTURES.is_dir():
        pytest.skip("shared ToolSandbox fixtures are not available")
    bench = open_benchmark("toolsandbox_recorded", "unused")
    got = {}
    for item in import_runs(FIXTURES):
        assert not isinstance(item, BadLine), item
        episode = replay(item.rollout, bench)
        got[(item.rollout.model, item.rollout.task_id)] = (episode.T, episode.FED, episode.Y, episode.category)
        assert "0x" not in dumps(item.rollout)  # memory addresses normalised away
    assert got == REAL


def test_malformed_logs_are_quarantined_and_the_rest_imports(tmp_path: Path):
    names = ["function_not_object", "context_is_folder", "answered_twice", "exception_not_text", "user_without_sender"]
    run = write_run(tmp_path, [ScenarioRun(n, [("user", "hi"), ("calls", [search("c1", name="Bruno")])]) for n in names]
                    + [SCENARIOS[1]])
    traj = run / "trajectories"
    conversation = json.loads((traj / "function_not_object" / "conversation.json").read_text())
    conversation[2]["tool_calls"][0]["function"] = "search_contacts"
    (traj / "function_not_object" / "conversation.json").write_text(json.dumps(conversation))
    (traj / "context_is_folder" / "execution_context.json").unlink()
    (traj / "context_is_folder" / "execution_context.json").mkdir()
    for name, change in (("answered_twice", "repeat"), ("exception_not_text", "number"),
                         ("user_without_sender", "drop sender")):
        context = json.loads((traj / name / "execution_context.json").read_text())
        sandbox = context["_dbs"]["SANDBOX"]
        response = next(r for r in sandbox if (r["sender"], r["recipient"]) == ("EXECUTION_ENVIRONMENT", "AGENT"))
        if change == "repeat":  # a second, different response to the same call would silently win
            sandbox.append({**response, "sandbox_message_index": 99, "tool_call_exception": "NoDataError: gone"})
        elif change == "number":
            response["tool_call_exception"] = 404
        else:  # would be skipped as if it were a snapshot's headguard row, losing the user's turn
            next(r for r in sandbox if r["content"] == "hi")["sender"] = None
        (traj / name / "execution_context.json").write_text(json.dumps(context))
    summary = json.loads((run / "result_summary.json").read_text())
    summary["per_scenario_results"].append({**summary["per_scenario_results"][-1], "name": "nul\x00byte"})
    (run / "result_summary.json").write_text(json.dumps(summary))

    items = list(import_runs(run))
    assert [type(i).__name__ for i in items] == ["BadLine"] * 5 + ["Located", "BadLine"]
    reasons = {i.line: i.reason for i in items if isinstance(i, BadLine)}
    assert "conversation.json: tool call 1 of message 3 is not an object with a 'function' object" in reasons[1]
    assert "execution_context.json cannot be read" in reasons[2]
    assert "('c1'): a second response to a tool call" in reasons[3]
    assert "tool_call_exception must be text or null" in reasons[4]
    assert "a logged message without a sender" in reasons[5]
    assert "is not a folder name" in reasons[7]


def test_scenarios_aborted_by_the_model_call_are_episodes(tmp_path: Path):
    """Aborted after an action: a normal episode (its action scored); aborted before any: an
    infrastructure failure with T/FED null and Y from ToolSandbox's similarity, as it scores it."""
    abort = {"exception_type": "APIConnectionError", "traceback": "openai.APIConnectionError: Connection error."}
    run = write_run(tmp_path, [ScenarioRun("mid_way", [("user", "hi"), ("calls", [search("c1", name="Bruno")])],
                                           similarity=0.5, **abort),
                               ScenarioRun("at_once", [("user", "hi")], similarity=0.0, **abort)])
    out = tmp_path / "r.jsonl"
    assert main(["import", "toolsandbox", str(run), "-o", str(out)]) == 0
    assert (tmp_path / "r.jsonl.quarantine.jsonl").read_text() == ""
    assert main(["score", str(out), "-o", str(tmp_path / "s")]) == 0
    import polars as pl

    rows = {r["task_id"]: r for r in pl.read_parquet(tmp_path / "s" / "episodes.parquet").iter_rows(named=True)}
    assert (rows["mid_way"]["T"], rows["mid_way"]["infra_error"], rows["mid_way"]["Y"]) == (1, None, 0)
    assert "aborted by APIConnectionError" in rows["mid_way"]["y_detail"]
    at_once = rows["at_once"]
    assert (at_once["T"], at_once["FED"], at_once["Y"]) == (None, None, 0)
    assert at_once["infra_error"] == "APIConnectionError: Connection error."


# --- run folders at any depth, the agent's model name, aborts, the recorded headline ------------

NESTED = "agent_openai/gpt-4o-mini_user_openai/gpt-4o-20240806_08_13_2025_00_12_46"


def _drop_response(folder: Path, call_id: str) -> None:
    """The log as ToolSandbox leaves it when it aborts while executing ``call_id``: no response."""
    path = folder / "execution_context.json"
    context = json.loads(path.read_text())
    context["_dbs"]["SANDBOX"] = [r for r in context["_dbs"]["SANDBOX"] if
                                  (r["sender"], r["openai_tool_call_id"]) != ("EXECUTION_ENVIRONMENT", call_id)]
    path.write_text(json.dumps(context))


def test_run_folders_are_found_at_any_depth_and_named_after_their_agent(tmp_path: Path):
    from prefix_audit.benchmarks.toolsandbox.importer import model_of, run_folders, run_name
    from prefix_audit.replay.registry import detect_format

    top = tmp_path / "data"
    nested = write_run(top, [SCENARIOS[1], ScenarioRun("broken", [("user", "hi")])], name=NESTED)
    plain = write_run(top / "more" / "runs", [SCENARIOS[2]])
    (nested / "trajectories" / "broken" / "execution_context.json").write_text("{not json")
    assert run_folders(top) == sorted([nested, plain]) and run_folders(nested) == [nested]
    assert detect_format(top) == detect_format(nested / "result_summary.json") == "toolsandbox"
    agent_named = ModelNamed(NamedBy.FOLDER, "the agent in the run folder's name", str(nested))
    assert run_name(nested) == NESTED and model_of(nested) == ("openai/gpt-4o-mini", agent_named)
    assert model_of(plain)[0] == "fake_gpt" and run_name(tmp_path) == tmp_path.name  # no run name: the folder's own
    assert model_of(tmp_path) == (tmp_path.name, ModelNamed(NamedBy.FOLDER, "the run folder's name", str(tmp_path)))

    items = list(import_runs(top))
    assert [type(i).__name__ for i in items] == ["Located", "BadLine", "Located"]
    broken = items[1]  # the malformed scenario: located, its reason said; the others imported
    assert broken.path == str(nested / "result_summary.json") and broken.line == 2
    assert "'broken'" in broken.reason and "not valid JSON" in broken.reason
    models = [(i.rollout.model, i.rollout.task_id, i.rollout.meta["toolsandbox"]["run"]) for i in items[::2]]
    assert models == [("openai/gpt-4o-mini", "cellular_off_repair", NESTED),
                      ("fake_gpt", "parallel_by_id", plain.name)]
    assert [i.named_by for i in items[::2]] == [agent_named, model_of(plain)[1]]  # per run folder, said per block
    given = [i for i in import_runs(top, model="mine") if not isinstance(i, BadLine)]
    assert [(i.rollout.model, i.named_by) for i in given] == [("mine", None)] * 2  # --model: nothing to say
    with pytest.raises(FileNotFoundError, match="at or under"):
        run_folders(tmp_path / "data" / "more" / "runs" / plain.name / "trajectories" / "parallel_by_id")


def test_scenarios_aborted_by_other_exceptions_are_episodes_or_infrastructure_failures(tmp_path: Path):
    """ToolSandbox scores any exception but the allow-list KeyError as similarity 0: mid-call, the
    calls up to the abort are an episode (the call it aborted in kept, no outcome recorded); before
    any action, an infrastructure failure; a missing response anywhere else is still a bad log."""
    trace = ('Traceback (most recent call last):\n  File "tool_sandbox/roles/execution_environment.py", line 325\n'
             "AssertionError: The tool trace index of 0 does not match the length of the tool trace list of 1.\n")
    abort = {"exception_type": "AssertionError", "traceback": trace, "similarity": 0.0}
    run = write_run(tmp_path, [
        ScenarioRun("mid_call", [("user", "Who texted me last?"), ("calls", [search("c1", name="Bruno Okafor")]),
                                 ("calls", [Call("c2", "search_contacts", {"person_id": None}, result=[])])], **abort),
        ScenarioRun("before_acting", [("user", "hi")], **abort),
        ScenarioRun("unanswered_early", [("user", "hi"), ("calls", [search("c1", name="Bruno")]), ("agent", "Found."),
                                         ("calls", [search("c2", name="Dmitri")])], **abort)])
    _drop_response(run / "trajectories" / "mid_call", "c2")
    _drop_response(run / "trajectories" / "unanswered_early", "c1")
    items = list(import_runs(run))
    assert [type(i).__name__ for i in items] == ["Located", "Located", "BadLine"]
    assert "without a recorded response: c1" in items[2].reason
    mid, before = items[0].rollout, items[1].rollout
    meta = mid.meta["toolsandbox"]
    assert meta["exception_type"] == "AssertionError" and meta["unanswered"] == ["c2"]
    assert meta["exception"].startswith("AssertionError: The tool trace index of 0")
    last = mid.turns[0][-1]
    assert [c.call_id for c in last.calls] == ["c2"] and last.results == (None,)  # nothing recorded for it
    assert mid.infra_error is None and before.turns == ()
    assert before.infra_error.startswith("AssertionError: The tool trace index")
    bench = open_benchmark("toolsandbox_recorded", "unused")
    episode = replay(mid, bench)
    assert (episode.T, episode.FED, episode.Y) == (2, 3, 0)
    assert "aborted by AssertionError" in episode.y_detail


def test_audit_reports_the_recorded_mean_similarity_next_to_final_success(run_folder, tmp_path: Path, capsys):
    assert main(["audit", "--no-figures", str(run_folder.parent), "-o", str(tmp_path / "out"), "--resamples", "200"]) == 0
    said = capsys.readouterr().err
    # similarities of SCENARIOS: 0, 1, 1, 0.5, 1, 0, 1, 1, 1 -> mean 6.5 / 9; final success 6 / 9
    assert "final success 0.667 of 9; recorded mean similarity 0.722 of 9" in said
    table = (tmp_path / "out" / "tables" / "table_trust.md").read_text()
    assert "| toolsandbox_recorded | fake_gpt | imported | 9 | 6/9 (0.667) | mean similarity 0.722 of 9 |" in table
    import polars as pl

    rows = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert rows["recorded_score_name"].unique().to_list() == ["similarity"]
    assert sorted(rows["recorded_score"].to_list()) == [0.0, 0.0, 0.5] + [1.0] * 6
    csv = (tmp_path / "out" / "tables" / "table_trust.csv").read_text()
    assert main(["audit", "--no-figures", str(run_folder.parent), "-o", str(tmp_path / "again"), "--resamples", "200"]) == 0
    assert (tmp_path / "again" / "tables" / "table_trust.csv").read_text() == csv


def test_recorded_score_round_trips_and_a_bad_one_is_refused(run_folder, tmp_path: Path):
    from prefix_audit.core.records import Recorded, RecordError, rollout_from_json

    rollout = next(import_runs(run_folder)).rollout
    assert (rollout.recorded.score, rollout.recorded.score_name) == (0.0, "similarity")
    obj = json.loads(dumps(rollout))
    assert rollout_from_json(obj).recorded == rollout.recorded
    obj["recorded"]["score"] = "high"
    with pytest.raises(RecordError, match="score must be a finite number"):
        rollout_from_json(obj)
    with pytest.raises(ValueError, match="finite number with a name"):
        Recorded.of(1, "x", score=float("nan"), score_name="similarity")


SHARED_RUN = SHARED / "fixtures" / "real-logs" / "toolsandbox"


def test_shared_gpt_4o_mini_run_audits_whole_from_the_top_folder(tmp_path: Path, capsys):
    if not (SHARED_RUN / NESTED / "result_summary.json").is_file():
        pytest.skip("shared real ToolSandbox run is not available")
    assert main(["audit", "--no-figures", str(SHARED_RUN), "-o", str(tmp_path / "out"), "--resamples", "200"]) == 0
    said = capsys.readouterr().err
    import polars as pl

    rows = pl.read_parquet(tmp_path / "out" / "fed" / "episodes.parquet")
    assert rows.height == 60 and rows["infra_error"].null_count() == 60  # every scenario an episode
    assert rows["model"].unique().to_list() == ["openai/gpt-4o-mini"]
    assert (rows["Y"] == rows["recorded_y"]).all() and rows["log_issue"].null_count() == 60
    assert (tmp_path / "out" / "rollouts" / "imported" / "quarantine.jsonl").read_text() == ""
    aborted = rows.filter(pl.col("meta_json").str.contains('"exception_type": "AssertionError"'))
    assert aborted.height == 1 and aborted["T"].to_list() == [2] and aborted["Y"].to_list() == [0]
    summary = json.loads((SHARED_RUN / NESTED / "result_summary.json").read_text())["per_scenario_results"]
    mean = sum(e["similarity"] for e in summary) / len(summary)
    assert f"recorded mean similarity {mean:.3f} of 60" in said and "WARNING" not in said


# What ToolSandbox's execution environment answers when the code it writes for a call, ``<id>_parameters = {...}``,
# has an id that is no Python name (DeepSeek-R1 through some servers: ids with hyphens).
ID_SYNTAX_ERROR = ("SyntaxError: cannot assign to expression here. Maybe you meant '==' instead of '='? "
                   "(<string>, line 1)")


def test_calls_the_harness_could_not_run_are_the_benchmarks_and_keep_the_recorded_verdict(tmp_path: Path):
    """The agent's calls are well-formed; ToolSandbox's harness fails them before any tool runs. They are
    read (not quarantined), rejected as the run rejected them, and attributed to the benchmark."""
    hyphenated = ScenarioRun("hyphenated_ids",
                             [("user", "Turn off wifi"),
                              ("calls", [Call("call-0-a1", "set_wifi_status", {"on": False}, error=ID_SYNTAX_ERROR)]),
                              ("calls", [Call("call-1-b2", "set_wifi_status", {"on": False}, error=ID_SYNTAX_ERROR)]),
                              ("agent", "I could not change it.")],
                             similarity=0.0, allowed=["set_wifi_status"])
    plain = ScenarioRun("plain_syntax_error",  # a Python-name id: the harness ran the code, the tool raised
                        [("user", "Turn off wifi"),
                         ("calls", [Call("c1", "set_wifi_status", {"on": False}, error=ID_SYNTAX_ERROR)])],
                        similarity=0.0, allowed=["set_wifi_status"])
    episodes = _episodes(write_run(tmp_path, [hyphenated, plain]))
    (T, fed, y, category, code), rollout, episode = episodes["hyphenated_ids"]
    assert (T, fed, y, category, code) == (3, 1, 0, "state_consistency", "rejected_transition")
    assert [c.call_id for turn in rollout.turns for s in turn for c in s.calls] == ["call-0-a1", "call-1-b2"]
    first = episode.first_failure
    assert first.attribution.origin == "benchmark" and "harness" in first.attribution.evidence
    assert "SyntaxError" in first.attribution.evidence
    assert episode.verdicts[1].attribution.origin == "benchmark"  # judged on: the agent's own failure comes later
    assert episode.FED_agent == T + 1
    assert episodes["plain_syntax_error"][2].first_failure.attribution.origin == "agent"


def test_quarantined_scenarios_are_counted_by_reason_not_by_message(tmp_path: Path):
    runs = [ScenarioRun(f"s{i}", [("user", "hi")] + [("user", "again")] * i + [("calls", [search("c1", name="Bruno")])])
            for i in range(3)]
    run = write_run(tmp_path, runs)
    for i in range(3):  # the call's code, broken in each scenario's own message
        path = run / "trajectories" / f"s{i}" / "execution_context.json"
        context = json.loads(path.read_text())
        request = next(r for r in context["_dbs"]["SANDBOX"] if r["recipient"] == "EXECUTION_ENVIRONMENT"
                       and r["sender"] == "AGENT")
        request["content"] = "print('no call here')"
        path.write_text(json.dumps(context))
    bad = [i for i in import_runs(run) if isinstance(i, BadLine)]
    assert len({b.reason for b in bad}) == 3  # each says where
    assert {b.cause for b in bad} == {"unusable ToolSandbox scenario: not a logged tool call"}
