"""tau2 simulations in every container tau2 writes or its leaderboard accepts: the same simulations
give the same rollouts and the same numbers whatever held them (metamorphic), a domain we do not
replay costs its simulations, never the file, and results are matched to calls by id in order."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import SHARED
from tau_results import GREETING, STOP, agent_says, results_document, simulation, tool_call, user_says

from prefix_audit.benchmarks.tau.ingest.containers import called_tools, domain_of_tools
from prefix_audit.benchmarks.tau.ingest.importer import import_results, is_results_file
from prefix_audit.core.records import BadLine, dumps
from prefix_audit.replay.record_check import check_record
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

USER = {"user_id": "mei_brown_7075"}


def _sims(tau) -> list[dict]:
    """Simulations of airline tasks 5 and 12: executable, recovered, truncated (quarantined) and cut."""
    reason5 = tau["tau_airline"].task("5").reason_for_call
    reason12 = tau["tau_airline"].task("12").reason_for_call
    return [
        simulation("ok", "5", [GREETING, user_says(reason5 + " I am mei_brown_7075."),
                               *tool_call("a", "get_user_details", USER, "{}"), agent_says("Done."), STOP]),
        simulation("recovered", "5", [GREETING, user_says(reason5 + " I am mei_brown_7075."),
                                      *tool_call("b", "check_user", USER, "Error: Tool 'check_user' not found.",
                                                 error=True),
                                      *tool_call("c", "get_user_details", USER, "{}"), agent_says("ok"), STOP],
                   reward=0.0),
        simulation("truncated", "5", [GREETING, user_says(reason5), tool_call("f", "get_user_details", USER, "{}")[0]]),
        simulation("cut", "12", [GREETING, user_says(reason12),
                                 *tool_call("e", "get_reservation_details", {"reservation_id": "YAX4DR"}, "{}")],
                   termination="max_steps", reward=0.0),
    ]


def _outcome(tau, paths, model="m"):
    """What importing and scoring ``paths`` gives: per simulation its rollout record (as written) and
    (T, FED, category, Y, recorded_y, replay agreement); per quarantined one its reason."""
    items = [i for p in paths for i in import_results(p, tau.__getitem__, model=model)]
    good = [i for i in items if not isinstance(i, BadLine)]
    bad = sorted(i.reason for i in items if isinstance(i, BadLine))
    episodes, _ = score_rollouts(iter(good), tau.__getitem__, ScoreReport())
    records = {i.rollout.meta["simulation_id"]: json.loads(dumps(i.rollout)) for i in good}
    for record in records.values():
        record["meta"].pop("reading")  # says which container held them: the one thing that may differ
    scores = {e.rollout.meta["simulation_id"]: (e.T, e.FED, e.category, e.Y, e.rollout.recorded.y,
                                                check_record(e).replay_agreement, check_record(e).log_issue)
              for e in episodes}
    return records, scores, bad


def _containers(tau, tmp_path, sims) -> dict[str, list]:
    """The simulations ``sims`` written in each container, as the paths to import."""
    doc = results_document(tau, copy.deepcopy(sims))
    out: dict[str, list] = {}

    def write(name, value):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
        return path

    out["results.json"] = [write("results.json", doc)]
    meta = {k: v for k, v in doc.items() if k != "simulations"}
    write("dir/results.json", meta)
    for sim in sims:
        write(f"dir/simulations/{sim['id']}.json", sim)
    out["dir layout"] = [tmp_path / "dir"]
    out["a bare list"] = [write("list.json", sims)]
    out["the layout's simulation files one by one"] = sorted((tmp_path / "dir" / "simulations").glob("*.json"))
    out["a wrapper naming its domain"] = [write("wrapper.json", {"domain": "airline", "agent": "llm_agent",
                                                                  "model": "test-model", "simulations": sims})]
    out["a wrapper naming none"] = [write("bare_wrapper.json", {"simulations": sims, "submitted": "2025-09-15"})]
    return out


def test_every_container_gives_the_same_rollouts_and_numbers(tau, tmp_path):
    sims = _sims(tau)
    containers = _containers(tau, tmp_path, sims)
    expected = _outcome(tau, containers["results.json"])
    records, scores, bad = expected
    assert set(scores) == {"ok", "recovered", "cut"} and len(bad) == 1 and "truncated" in bad[0]
    assert scores["recovered"][:4] == (3, 1, "schema", 1)
    for name, paths in containers.items():
        assert all(is_results_file(p) for p in paths), name
        assert _outcome(tau, paths) == expected, name


def test_a_container_without_info_or_tasks_says_how_it_was_read(tau, tmp_path):
    sims = _sims(tau)
    containers = _containers(tau, tmp_path, sims)
    [wrapper] = containers["a wrapper naming its domain"]
    items = [i for i in import_results(wrapper, tau.__getitem__) if not isinstance(i, BadLine)]
    assert {i.rollout.model for i in items} == {"test-model"}  # the wrapper's own field
    assert items[0].rollout.meta["reading"] == (
        "an object with a simulations list of 2 tasks, domain airline (its field 'domain'); it carries no task "
        f"definitions: scored against the airline tasks in use (sha256 "
        f"{tau['tau_airline'].domain.provenance['tasks_sha256'][:12]})")
    [bare] = containers["a bare list"]
    items = [i for i in import_results(bare, tau.__getitem__) if not isinstance(i, BadLine)]
    assert {i.rollout.model for i in items} == {"unknown"}
    assert "domain airline (from the tools its calls use; the file names none)" in items[0].rollout.meta["reading"]


def test_domain_from_tools_needs_a_tool_of_one_domain_only():
    tools = {"airline": frozenset({"get_user_details", "get_reservation_details"}),
             "retail": frozenset({"get_user_details", "get_order_details"})}
    assert domain_of_tools({"get_user_details"}, tools) == set()
    assert domain_of_tools({"get_user_details", "get_order_details"}, tools) == {"retail"}
    assert domain_of_tools({"get_reservation_details", "get_order_details"}, tools) == {"airline", "retail"}
    sims = [{"messages": [{"role": "assistant", "tool_calls": [{"name": "x"}, {"name": 3}]},
                          {"role": "user", "tool_calls": [{"name": "toggle_airplane_mode"}]}]}, "odd"]
    assert called_tools(sims) == {"x"}  # the agent's calls only: a telecom user's own tools are not the agent's


def test_a_domain_we_do_not_replay_costs_its_simulations_not_the_file(tau, tmp_path):
    talk = [GREETING, user_says("Please add a task."),
            *tool_call("a", "create_task", {"user_id": "u1", "title": "x"}, "{}"), agent_says("ok"), STOP]
    sims = [simulation("t1", "1", talk), simulation("t2", "2", talk)]
    named = tmp_path / "mock.json"
    named.write_text(json.dumps({"info": {"environment_info": {"domain_name": "mock"}}, "simulations": sims}))
    by_tools = tmp_path / "mock_list.json"  # tau2's mock domain, whose tools no other domain has
    by_tools.write_text(json.dumps(sims))
    fork = tmp_path / "fork.json"
    fork.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline-relaxed"}}, "simulations": sims}))
    for path, domain in ((named, "mock"), (by_tools, "mock"), (fork, "airline-relaxed")):
        items = list(import_results(path, tau.__getitem__))
        assert len(items) == 2 and all(isinstance(i, BadLine) for i in items)
        assert [i.line for i in items] == [1, 2] and [i.rollout_id for i in items] == ["t1", "t2"]
        assert all(f"tau2 domain {domain!r} is not one this release replays (airline, retail, telecom)" in i.reason
                   for i in items), items[0].reason
    nothing = tmp_path / "nothing.json"
    nothing.write_text(json.dumps([simulation("s", "1", [GREETING, user_says("hi"), agent_says("hello"), STOP])]))
    [bad] = list(import_results(nothing, tau.__getitem__))
    assert "the file names no domain" in bad.reason and "no tool of one domain only" in bad.reason


def test_results_answer_the_nearest_earlier_unanswered_call_with_their_id(tau, tmp_path):
    """Some harnesses number calls per tool (`gem_get_reservation_details_0` for every such call):
    each result belongs to the call it follows, and a message's parallel calls take theirs in order."""
    reason = tau["tau_airline"].task("12").reason_for_call
    lookup = {"reservation_id": "YAX4DR"}
    parallel = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "same", "name": "get_user_details", "arguments": USER, "requestor": "assistant"},
        {"id": "same", "name": "get_reservation_details", "arguments": lookup, "requestor": "assistant"}]}
    sim = simulation("reused", "12", [
        GREETING, user_says(reason), *tool_call("x_0", "get_reservation_details", lookup, "first"),
        *tool_call("x_0", "get_reservation_details", {"reservation_id": "NOPE"}, "Error: not found", error=True),
        parallel, {"role": "tool", "id": "same", "content": "the user", "error": False},
        {"role": "tool", "id": "same", "content": "the reservation", "error": False}, agent_says("ok"), STOP])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(tau, [sim], task_ids=("12",))))
    [item] = list(import_results(path, tau.__getitem__))
    got = [(c.kwargs, r.content) for turn in item.rollout.turns for step in turn
           for c, r in zip(step.calls, step.results or ())]
    assert got == [(lookup, "first"), ({"reservation_id": "NOPE"}, "Error: not found"), (USER, "the user"),
                   (lookup, "the reservation")]
    extra = copy.deepcopy(sim)
    extra["messages"].insert(5, {"role": "tool", "id": "x_0", "content": "again", "error": False})
    path.write_text(json.dumps(results_document(tau, [extra], task_ids=("12",))))
    [bad] = list(import_results(path, tau.__getitem__))
    assert "result for unknown or already answered call id 'x_0'" in bad.reason


def test_whole_number_task_ids_and_full_duplex_simulations(tau, tmp_path):
    sims = _sims(tau)[3:]  # airline's get_reservation_details tells the domain
    sims[0]["task_id"] = 12
    voice = simulation("voice", "5", [])
    voice.update(mode="full_duplex", messages=None, ticks=[{"tick_id": 0, "timestamp": "t"}])
    path = tmp_path / "list.json"
    path.write_text(json.dumps([*sims, voice, "not a simulation"]))
    ok, bad_voice, odd = list(import_results(path, tau.__getitem__))
    assert ok.rollout.task_id == "12"
    assert "a full_duplex (voice) simulation: its conversation is stored as ticks" in bad_voice.reason
    assert bad_voice.line == 2 and odd.line == 3 and "a simulation must be an object" in odd.reason
    alone = tmp_path / "one.json"
    alone.write_text(json.dumps(sims[0]))
    [item] = list(import_results(alone, tau.__getitem__))
    assert item.rollout.turns == ok.rollout.turns and item.rollout.meta["reading"].startswith("one tau2 simulation")


def _mismatch_doc(tau, recorded_nl, recorded_reward=1.0):
    """Airline task 18 as a results file whose simulation recorded ``recorded_nl`` as its NL assertions."""
    bench = tau["tau_airline"]
    reason = bench.task("18").reason_for_call
    sim = simulation("s", "18", [GREETING, user_says(reason), agent_says("Sorry, I cannot help."), STOP],
                     reward=recorded_reward)
    sim["reward_info"]["nl_assertions"] = [{"nl_assertion": t, "met": True, "justification": ""} for t in recorded_nl]
    return results_document(tau, [sim], task_ids=("18", "0"))


def test_nl_assertions_are_judge_echoes_not_evidence_of_another_task(tau, tmp_path):
    """tau2 records an NL assertion as its judge echoed it: spacing and typos fixed. Only assertions
    that are another task's show a mismatch."""
    bench = tau["tau_airline"]
    own = list(bench.task("18").nl_assertions)
    assert own, "airline task 18 has NL assertions"
    echoed = [" ".join(t.replace("economy", "Economy").split()) for t in own]
    path = tmp_path / "results.json"
    for recorded, flagged in ((own, False), (echoed, False), ([t + "  " for t in own], False),
                              (list(bench.task("0").nl_assertions), True)):
        path.write_text(json.dumps(_mismatch_doc(tau, recorded)))
        [item] = list(import_results(path, tau.__getitem__))
        codes = [i.code for i in item.rollout.recorded.issues]
        assert codes == (["task_mismatch"] if flagged else []), (recorded, item.rollout.recorded.issues)


def test_a_conversation_of_another_customer_explains_a_differing_reward(tau, tmp_path):
    """A simulation labelled with one task whose conversation acts for another task's customer (a
    submission with permuted ids): the recorded reward is that other task's, said where Y differs."""
    bench = tau["tau_airline"]
    task = bench.task("5")
    gold_users = {a.arguments["user_id"] for a in task.gold if "user_id" in a.arguments}
    other = next(t for t in map(bench.task, bench.tasks)
                 if {a.arguments.get("user_id") for a in t.gold} - {None} - gold_users
                 and not gold_users & {a.arguments.get("user_id") for a in t.gold})
    other_user = next(a.arguments["user_id"] for a in other.gold if "user_id" in a.arguments)
    talk = [GREETING, user_says(f"I am {other_user}."),
            *tool_call("a", "get_user_details", {"user_id": other_user}, "{}"), agent_says("ok"), STOP]
    path = tmp_path / "results.json"
    for reward in (1.0, 0.0):  # one of them differs from Y
        path.write_text(json.dumps(results_document(tau, [simulation("s", "5", talk, reward=reward)], task_ids=("5",))))
        [item] = list(import_results(path, tau.__getitem__))
        [episode], _ = score_rollouts(iter([item]), tau.__getitem__, ScoreReport())
        issue = check_record(episode).log_issue or ""
        if episode.Y == episode.rollout.recorded.y:
            assert "task_mismatch" not in issue
        else:
            assert issue.startswith(f"task_mismatch: the conversation acts for {other_user}, task 5's gold "
                                    f"for {', '.join(sorted(gold_users))}"), issue
            assert other.id in issue


REAL_TAU2 = SHARED / "fixtures" / "real-logs" / "tau2" / "gpt-4.1_retail_40tasks_1trial.json"


@pytest.mark.slow
@pytest.mark.skipif(not REAL_TAU2.is_file(), reason="../shared/fixtures/real-logs is absent")
def test_a_real_results_file_rewrapped_in_every_container_gives_the_same_numbers(tau, tmp_path):
    doc = json.loads(REAL_TAU2.read_text())
    sims = doc["simulations"][:12]
    doc = {**doc, "simulations": sims}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    expected = _outcome(tau, [tmp_path / "results.json"])
    assert len(expected[1]) == 12 and not expected[2]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"domain": "retail", "tasks": doc["tasks"], "simulations": sims}))
    bare = tmp_path / "list.json"
    bare.write_text(json.dumps(sims))
    for paths in ([wrapped], [bare]):
        got = _outcome(tau, paths)
        # Without the file's task definitions a bare list is scored on the installed ones: equal here.
        assert got[1] == expected[1] and got[2] == expected[2], paths
