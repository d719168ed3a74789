"""τ² telecom (``tau_telecom``): both parties replayed in the log's order, only the agent's calls scored,
Y differential-tested against tau2's own evaluator (``evaluate_simulation``) on every base task's gold
and on perturbed runs, and real telecom results files audited entry by entry."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import SAMPLE_OR_WHOLE, SHARED, swept

from prefix_audit.core.calls import structured_call
from prefix_audit.core.records import BadLine, Rollout
from prefix_audit.replay.checker import replay
from prefix_audit.replay.record_check import check_record
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

REAL_TELECOM = sorted((SHARED / "fixtures" / "real-logs-3" / "tau2").glob("*telecom*.json.gz"))


def _tau2_task(bench, task_id):
    from tau2.data_model.tasks import Task

    from prefix_audit.benchmarks.tau.adapter.release_changes import task_definitions

    # The file's task objects by id, parsed once (the telecom file is 14 MB: parsing it per task was
    # four fifths of this module's differential tests)
    return Task.model_validate(task_definitions(bench.domain.files.tasks)[task_id])


def _tau2_messages(episode):
    """The replayed rollout as tau2 messages: the user's calls (with the replayed results) before
    the turn they precede, the agent's calls with theirs, the user's stop message last."""
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

    rollout, results = episode.rollout, iter(v for v in episode.verdicts if v.action.call is not None)
    party = list(episode.party_calls)
    out = [AssistantMessage(role="assistant", content="Hi! How can I help you today?")]

    def user_acts(before_turn):
        while party and party[0].turn <= before_turn:
            p = party.pop(0)
            call_id = p.call.call_id or f"user_{len(out)}"
            out.append(UserMessage(role="user", tool_calls=[ToolCall(id=call_id, name=p.call.name,
                                                                      arguments=dict(p.call.kwargs), requestor="user")]))
            out.append(ToolMessage(id=call_id, role="tool", content=p.result, requestor="user", error=not p.accepted))

    for t, turn in enumerate(rollout.turns):
        user_acts(t)
        out.append(UserMessage(role="user", content=rollout.meta["user_turns"][t]))
        for step in turn:
            if not step.calls:
                out.append(AssistantMessage(role="assistant", content=step.text or "ok"))
                continue
            calls = [(call, next(results)) for call in step.calls]
            out.append(AssistantMessage(role="assistant", tool_calls=[
                ToolCall(id=c.call_id, name=c.name, arguments=dict(c.kwargs), requestor="assistant") for c, _ in calls]))
            out += [ToolMessage(id=c.call_id, role="tool", content=v.logged or "", requestor="assistant",
                                error=not v.accepted) for c, v in calls]
    user_acts(len(rollout.turns))
    out.append(UserMessage(role="user", content="###STOP###"))
    return out


def tau2_evaluation(task, messages) -> float:
    """tau2's own reward of a conversation: its evaluators (environment, action, communicate) combined
    as its ``evaluate_simulation`` combines them for evaluation type ALL. (``evaluate_simulation``
    itself cannot be imported without litellm, which its NL-assertion judge needs and the pinned
    wheel's --no-deps install leaves out; no telecom task has NL assertions.)"""
    from tau2.domains.telecom.environment import get_environment
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    basis = set(task.evaluation_criteria.reward_basis)
    assert "NL_ASSERTION" not in basis
    reward = 1.0
    if basis & {"DB", "ENV_ASSERTION"}:
        reward *= EnvironmentEvaluator.calculate_reward(get_environment, task, messages).reward
    if "ACTION" in basis:
        reward *= ActionEvaluator.calculate_reward(task, messages).reward
    if "COMMUNICATE" in basis:
        reward *= CommunicateEvaluator.calculate_reward(task, messages).reward
    return reward


def tau2_reward(bench, episode) -> float:
    """tau2's own evaluation of the replayed rollout (it replays both parties' calls and insists on
    the results the messages carry: a replayed result tau2 would not give fails the test)."""
    return tau2_evaluation(_tau2_task(bench, episode.rollout.task_id), _tau2_messages(episode))


def test_base_tasks_and_their_facts(telecom):
    assert len(telecom.task_ids()) == 114
    assert {b for t in telecom.task_ids() for b in telecom.task(t).reward_basis} == {"ENV_ASSERTION", "ACTION"}
    assert sum("ACTION" in telecom.task(t).reward_basis for t in telecom.task_ids()) == 20
    task = telecom.task(telecom.task_ids()[0])
    assert task.initialization and task.env_assertions and task.user_gold
    assert "get_customer_by_phone" in telecom.tools and "toggle_airplane_mode" not in telecom.tools
    assert "toggle_airplane_mode" in telecom.backend.user_tools and "toggle_airplane_mode" in telecom.tool_universe()
    assert telecom.provenance["user_db_sha256"] and "<tech_support_policy>" in telecom.domain.policy


def test_gold_of_every_base_task_replays_executable_with_y_1(telecom):
    from prefix_audit.benchmarks.tau import gold_audit

    rows = gold_audit(telecom)
    assert len(rows) == 114
    assert [(r.task_id, r.failure, r.y_detail) for r in rows if r.Y != 1 or r.FED != r.T + 1] == []
    assert all(r.rejected_calls == 0 for r in rows)


def _perturbed(bench, task_id):
    """The gold's reference rollout and runs that differ from it: without the user's calls, without
    their last one, without the agent's calls, and with the user switching airplane mode on at the end."""
    reference = bench.reference_rollout(task_id)
    user_calls = reference.meta.get("user_calls", [])
    n = len(reference.turns)
    variants = {"gold": reference,
                "no user calls": dataclasses.replace(reference, meta={**reference.meta, "user_calls": []}),
                "last user call dropped": dataclasses.replace(reference, meta={**reference.meta,
                                                                               "user_calls": user_calls[:-1]}),
                "airplane mode at the end": dataclasses.replace(reference, meta={**reference.meta, "user_calls": [
                    *user_calls, {"turn": n, "name": "toggle_airplane_mode", "arguments": {}, "id": "late"}]})}
    agent_only = tuple(tuple(s for s in turn if not s.calls) for turn in reference.turns)
    variants["agent calls dropped"] = dataclasses.replace(reference, turns=agent_only)
    return variants


def _differential(telecom, task_ids):
    outcomes = {}
    for task_id in task_ids:
        for name, rollout in _perturbed(telecom, task_id).items():
            episode = replay(rollout, telecom)
            assert episode.Y == int(tau2_reward(telecom, episode) >= 1.0), (task_id, name, episode.y_detail)
            outcomes.setdefault(name, []).append(episode.Y)
    assert set(outcomes["gold"]) == {1}
    # The perturbations change the outcome on most tasks (so the comparison is not vacuous).
    assert all(sum(y == 0 for y in ys) >= len(task_ids) // 3 for name, ys in outcomes.items() if name != "gold"), \
        {name: sum(ys) for name, ys in outcomes.items()}


@SAMPLE_OR_WHOLE
def test_y_equals_tau2s_own_evaluation_on_gold_and_perturbed_runs_of_every_base_task(telecom, whole):
    _differential(telecom, swept(telecom.task_ids(), whole, 4))


def test_the_users_calls_are_transitions_not_actions(telecom):
    task_id = telecom.task_ids()[0]
    reference = telecom.reference_rollout(task_id)
    episode = replay(reference, telecom)
    agent_calls = sum(len(s.calls) for turn in reference.turns for s in turn)
    assert episode.T == agent_calls + 1 and len(episode.party_calls) == len(reference.meta["user_calls"]) > 0
    assert all(p.accepted and p.party == "user" for p in episode.party_calls)
    # An agent calling the user's phone tool is the agent's error (unknown to the provider's toolkit, as in tau2).
    wrong = dataclasses.replace(reference, turns=((*reference.turns[0][:-1],
                                                   dataclasses.replace(reference.turns[0][-1], calls=(
                                                       structured_call("toggle_airplane_mode", {}, "x"),),
                                                       text=None)), *reference.turns[1:]))
    bad = replay(wrong, telecom)
    assert bad.FED == 1 and bad.first_failure.failures[0].code == "unknown_tool"


def test_malformed_user_calls_make_the_rollout_unscorable(telecom):
    from prefix_audit.replay.contract import UnscorableRollout

    reference = telecom.reference_rollout(telecom.task_ids()[0])
    for bad in ({"turn": 99, "name": "x"}, {"name": "x"}, "x", {"turn": 0, "name": "x", "result": 5}):
        with pytest.raises(UnscorableRollout):
            replay(dataclasses.replace(reference, meta={**reference.meta, "user_calls": [bad]}), telecom)


def _results_file(telecom, tmp_path, task_ids):
    """A tau2 results file of replayed gold runs (tau2's message shapes), with tau2's own reward."""
    sims = []
    for k, task_id in enumerate(task_ids):
        episode = replay(telecom.reference_rollout(task_id), telecom)
        messages = [m.model_dump(mode="json") for m in _tau2_messages(episode)]
        sims.append({"id": f"s{k}", "task_id": task_id, "trial": 0, "termination_reason": "user_stop",
                     "reward_info": {"reward": tau2_reward(telecom, episode)}, "messages": messages})
    path = tmp_path / "telecom_results.json"
    path.write_text(json.dumps({"info": {"environment_info": {"domain_name": "telecom"},
                                         "agent_info": {"llm": "gold"}}, "simulations": sims}))
    return path


def _audit(tau, paths):
    from prefix_audit.benchmarks.tau.ingest.importer import import_results

    items = [i for p in paths for i in import_results(p, tau.__getitem__)]
    bad = [i for i in items if isinstance(i, BadLine)]
    episodes, _ = score_rollouts(iter(i for i in items if not isinstance(i, BadLine)), tau.__getitem__, ScoreReport())
    return episodes, bad


def test_a_results_file_imports_both_parties_and_checks_them_against_the_log(tau, telecom, tmp_path):
    task_ids = telecom.task_ids()[:6]
    path = _results_file(telecom, tmp_path, task_ids)
    episodes, bad = _audit(tau, [path])
    assert bad == [] and len(episodes) == 6
    for ep in episodes:
        check = check_record(ep)
        assert ep.Y == ep.rollout.recorded.y == 1 and check.log_issue is None
        assert check.replay_agreement == 1.0 and len(ep.party_calls) and all(s == "same" for s in check.party)
        assert check.compared == ep.T - 1 + len(ep.party_calls)  # both parties' results, the closing text aside
    # A recorded user result the replay does not give is a divergence, named as the user's.
    doc = json.loads(path.read_text())
    tool = next(m for m in doc["simulations"][0]["messages"] if m["role"] == "tool" and m["requestor"] == "user")
    tool["content"] = "Airplane Mode is now ON."
    path.write_text(json.dumps(doc))
    episodes, _ = _audit(tau, [path])
    issue = check_record(episodes[0]).log_issue
    assert issue.startswith("replay_diverged: user call 1 (")


def test_telecom_containers_give_the_same_numbers(tau, telecom, tmp_path):
    """Metamorphic: the same simulations as results.json, a bare list and the dir layout."""
    path = _results_file(telecom, tmp_path, telecom.task_ids()[:3])
    doc = json.loads(path.read_text())
    bare = tmp_path / "list.json"
    bare.write_text(json.dumps(doc["simulations"]))
    layout = tmp_path / "dir"
    (layout / "simulations").mkdir(parents=True)
    (layout / "results.json").write_text(json.dumps({"info": doc["info"]}))
    for sim in doc["simulations"]:
        (layout / "simulations" / f"{sim['id']}.json").write_text(json.dumps(sim))

    def numbers(p):
        episodes, bad = _audit(tau, [p])
        return bad, sorted((e.rollout.task_id, e.T, e.FED, e.Y, len(e.party_calls), check_record(e).replay_agreement)
                           for e in episodes)

    expected = numbers(path)
    assert expected[0] == [] and len(expected[1]) == 3
    assert numbers(bare) == expected and numbers(layout) == expected


def test_a_user_call_without_its_result_quarantines_the_simulation_only(tau, telecom, tmp_path):
    path = _results_file(telecom, tmp_path, telecom.task_ids()[:2])
    doc = json.loads(path.read_text())
    messages = doc["simulations"][0]["messages"]
    k = next(i for i, m in enumerate(messages) if m["role"] == "tool" and m["requestor"] == "user")
    del messages[k]
    path.write_text(json.dumps(doc))
    episodes, bad = _audit(tau, [path])
    assert len(episodes) == 1 and len(bad) == 1 and "have no result" in bad[0].reason


@pytest.mark.skipif(not REAL_TELECOM, reason="no shared real telecom logs")
def test_real_telecom_logs_audit_without_flags_and_with_taus_own_reward(tau, telecom, tmp_path):
    import gzip

    paths = []
    for gz in REAL_TELECOM:
        path = tmp_path / gz.name.removesuffix(".gz")
        path.write_bytes(gzip.decompress(gz.read_bytes()))
        paths.append(path)
    episodes, bad = _audit(tau, paths)
    assert [b.reason.split(":")[0] for b in bad] == ["no simulations"]  # the aborted run: an empty list
    assert len(episodes) == 53
    for ep in episodes:
        check = check_record(ep)
        assert ep.Y == ep.rollout.recorded.y and check.log_issue is None, (ep.rollout.task_id, check.log_issue)
        assert check.replay_agreement == (1.0 if check.compared else None)
    assert sum(check_record(ep).compared for ep in episodes) == 783  # the agent's 315 results, the user's 468
    assert sum(len(ep.party_calls) for ep in episodes) == 468
    # tau2's own evaluation of each simulation as the file has it gives the recorded reward, and ours.
    import re

    import pydantic
    from tau2.data_model.simulation import SimulationRun

    # tau2 insists on the recorded results word for word; a pydantic error names its library version in
    # a URL (the run's pydantic was not ours), which the log check normalises: so does this comparison.
    ours = f"errors.pydantic.dev/{'.'.join(pydantic.VERSION.split('.')[:2])}/"
    by_id = {ep.rollout.meta["simulation_id"]: ep for ep in episodes}
    for path in paths:
        text = re.sub(r"errors\.pydantic\.dev/[\d.]+/", ours, path.read_text())
        for sim in json.loads(text)["simulations"]:
            run = SimulationRun.model_validate(sim)
            reward = tau2_evaluation(_tau2_task(telecom, sim["task_id"]), run.messages)
            assert reward == sim["reward_info"]["reward"] and int(reward >= 1.0) == by_id[sim["id"]].Y
            # tau2's DB check (outside telecom's reward basis) as the log recorded it: both databases as the gold's
            session = telecom.open_session(by_id[sim["id"]].rollout)
            replay_state(telecom, by_id[sim["id"]].rollout, session)
            assert telecom.db_matches_gold(session._live, session.task) == sim["reward_info"]["db_check"]["db_match"]


def _drive(telecom, task_id):
    """An agent that says and calls what the reference does, with the offline user (who acts on the
    phone when asked); the recorded rollout as the generation records it."""
    import asyncio

    reference = telecom.reference_rollout(task_id)
    env = telecom.agent_environment(task_id)
    convo = telecom.conversation(env)

    async def run():
        message = await convo.next_user_message(None)
        for turn in reference.turns:
            assert message is not None
            for step in turn:
                for call in step.calls:
                    assert not env.execute(call).startswith("Error"), call.render()
            message = await convo.next_user_message(turn[-1].text)
        return message

    assert asyncio.run(run()) is None  # the user stopped after the closing message
    return Rollout(telecom.dataset, task_id, "m", "react", "r", reference.turns,
                   source="test", meta=convo.meta(None)), env


def test_the_offline_user_acts_on_the_phone_when_asked_and_the_episode_replays(telecom):
    for task_id in telecom.task_ids()[::10]:
        rollout, env = _drive(telecom, task_id)
        task = telecom.task(task_id)
        assert [c["name"] for c in rollout.meta["user_calls"]] == [a.name for a in task.user_gold]
        assert all(t.startswith("I did that. My phone shows:") for t in rollout.meta["user_turns"][2:] if t != "Done.")
        episode = replay(rollout, telecom)
        assert (episode.FED, episode.Y) == (episode.T + 1, 1), (task_id, episode.y_detail)
        assert episode.Y == int(tau2_reward(telecom, episode) >= 1.0)
        # the live episode's environment ended where the replay's did (both parties' calls applied)
        assert env.live.db_fingerprint() == replay_state(telecom, rollout)


def replay_state(telecom, rollout, session=None):
    """Both parties' calls applied on a session of ``rollout``; the fingerprint of both databases."""
    from prefix_audit.core.records import actions_of

    session = session or telecom.open_session(rollout)

    for t in range(len(rollout.turns)):
        session.start_turn(t)
        for action in actions_of(rollout):
            if action.turn == t and action.call is not None:
                session.execute(action.call)
    session.final_success()
    return session._live.db_fingerprint()


def test_the_offline_user_does_not_act_unasked(telecom):
    from prefix_audit.benchmarks.tau.generation.telecom import DeviceUser, asks_for

    task = telecom.task(telecom.task_ids()[0])
    env = telecom.agent_environment(task.id)
    user = DeviceUser(task, env.live)
    user.first_message()
    user.reply("Could you please tell me the phone number of the line you are calling about?")
    assert user.calls == []
    user.reply("Please turn off airplane mode.")
    assert [c.call.name for c in user.calls] == ["toggle_airplane_mode"] and user.calls[0].turn == 2
    assert asks_for("please toggle_data now", "toggle_data") and not asks_for("your data usage", "toggle_data")
    assert not asks_for("Please do this on your phone: toggle_data_saver_mode.", "toggle_data")
    assert asks_for("Please turn your mobile data on.", "toggle_data")


def test_the_users_simulator_model_may_use_the_phone(telecom):
    """tau2's user simulator behind a model: its tool calls run on the phone as the user's."""
    import asyncio

    from prefix_audit.core.records import Usage
    from prefix_audit.models.base import ModelResponse, ModelToolCall

    class Scripted:
        def __init__(self):
            self.requests = []

        async def complete(self, request):
            self.requests.append(request)
            if len(self.requests) == 1:
                return ModelResponse(None, (ModelToolCall("u1", "check_status_bar", "{}"),), Usage("user_simulator", 1, 1, 0.0),
                                     {}, False, "tool_calls")
            return ModelResponse("My status bar shows no signal.", (), Usage("user_simulator", 1, 1, 0.0), {}, False,
                                 "stop")

    task_id = telecom.task_ids()[0]
    env = telecom.agent_environment(task_id)
    model = Scripted()
    convo = telecom.conversation(env, model)
    text = asyncio.run(convo.next_user_message(None))
    assert text == "My status bar shows no signal."
    assert {t.name for t in model.requests[0].tools} == set(telecom.backend.user_tools)
    assert model.requests[1].messages[-1].role == "tool" and "Status Bar" in model.requests[1].messages[-1].content
    assert convo.meta(None)["user_calls"] == [{"turn": 0, "name": "check_status_bar", "arguments": {}, "id": "u1"}]


def test_the_workflow_policy_variant_is_telecom_and_phone_calls_outside_solo_mode_refused(tau, telecom, tmp_path):
    path = _results_file(telecom, tmp_path, telecom.task_ids()[:2])
    doc = json.loads(path.read_text())
    doc["info"]["environment_info"]["domain_name"] = "telecom-workflow"
    path.write_text(json.dumps(doc))
    episodes, bad = _audit(tau, [path])
    assert bad == [] and [e.rollout.dataset for e in episodes] == ["tau_telecom"] * 2
    assert "tau2 domain telecom-workflow: telecom with another agent policy" in episodes[0].rollout.meta["reading"]
    assert all(e.Y == e.rollout.recorded.y == 1 and check_record(e).log_issue is None for e in episodes)
    # The agent itself calls the phone's tools, and they run, as tau2 routes them only in solo mode; the
    # file does not say its run is one (its simulations have the user's messages): that simulation is refused.
    solo = doc["simulations"][0]
    for m in solo["messages"]:
        if m["role"] == "user" and m.get("tool_calls"):
            m["role"] = "assistant"
            for c in m["tool_calls"]:
                c["requestor"] = "assistant"
        elif m["role"] == "tool":
            m["requestor"] = "assistant"
    path.write_text(json.dumps(doc))
    episodes, bad = _audit(tau, [path])
    assert len(episodes) == 1 and len(bad) == 1 and "the file does not say its run is one" in bad[0].reason


def test_the_audit_browser_shows_the_users_calls_in_their_turns(telecom, tmp_path):
    from conftest import RESOURCES

    from prefix_audit.cli import main

    path = _results_file(telecom, tmp_path, telecom.task_ids()[:1])
    assert main(["audit", "--no-figures", str(path), "-o", str(tmp_path / "out"), "--resources", str(RESOURCES)]) == 0
    assert main(["view", str(tmp_path / "out"), "-o", str(tmp_path / "site")]) == 0
    [page] = [p for p in (tmp_path / "site").rglob("*.html") if "the user's own call" in p.read_text()]
    user_calls = json.loads(path.read_text())["simulations"][0]["messages"]
    n = sum(1 for m in user_calls if m["role"] == "user" and m.get("tool_calls"))
    assert page.read_text().count('class="party"') == n > 0


def test_inspect_evals_tau2_telecom_samples_audit_with_both_parties_and_its_scorer(inspect_tau2_telecom_log, tmp_path):
    """inspect_evals' own tau2_telecom run: the user's calls come from the store's trajectory, Y is its
    telecom_scorer's (actions where the basis names them, env assertions), every result reproduced."""
    from conftest import RESOURCES
    from inspect_tau2_logs import DEFAULT_SCENARIOS

    from prefix_audit.cli import main

    out = tmp_path / "out"
    assert main(["audit", "--no-figures", str(inspect_tau2_telecom_log), "-o", str(out), "--resources", str(RESOURCES)]) == 0
    import polars as pl

    [episodes] = list((out / "scored").rglob("episodes.parquet"))
    rows = {r["task_id"]: r for r in pl.read_parquet(episodes).iter_rows(named=True)}
    assert set(rows) == set(DEFAULT_SCENARIOS["telecom"])
    for task_id, scenario in DEFAULT_SCENARIOS["telecom"].items():
        row = rows[task_id]
        assert row["Y"] == row["recorded_y"] == (scenario == "gold") and row["log_issue"] is None, row["y_detail"]
        assert row["y_detail"].startswith("basis=inspect_evals")
    assert sum(r["results_compared"] for r in rows.values()) == sum(r["results_reproduced"] for r in rows.values()) > 1
    [block] = [p for p in (out / "rollouts").rglob("*.jsonl") if "quarantine" not in p.name]
    records = [json.loads(line) for line in block.read_text().splitlines()]
    acted = {r["task_id"]: [c["name"] for c in r["meta"].get("user_calls", [])] for r in records}
    assert acted["[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"] == \
        ["toggle_airplane_mode", "toggle_roaming"]


def test_inspect_evals_action_matching():
    from prefix_audit.benchmarks.tau.adapter.telecom import equal_unordered, inspect_action_used
    from prefix_audit.benchmarks.tau.domain.data import GoldAction

    gold = GoldAction("grant_app_permission", {"app_name": "messaging", "permission": "sms"}, "user")
    assert inspect_action_used(gold, [("grant_app_permission", {"permission": "sms", "app_name": "messaging"})])
    assert not inspect_action_used(gold, [("grant_app_permission", {"app_name": "messaging"})])
    assert inspect_action_used(gold, [("phone_grant_app_permission", dict(gold.arguments))])  # a prefixed name
    assert inspect_action_used(GoldAction("transfer_to_human_agents", {"summary": "x"}),
                               [("transfer_to_human_agents", {"summary": "anything"})])
    assert inspect_action_used(GoldAction("refuel_data", {"gb_amount": 2.0, "line_id": "L1"}, compare_args=("gb_amount",)),
                               [("refuel_data", {"gb_amount": 2, "line_id": "L9"})])
    assert equal_unordered([1, [2, 3]], [[3, 2], 1]) and not equal_unordered([1, 1], [1, 2])


def test_user_calls_round_trip_as_the_agents_calls_do():
    """A user's call with argument text that is not JSON, and a result cut for its length, read back
    as written (the same serialisation as the agent's calls and results)."""
    from prefix_audit.benchmarks.tau.generation.telecom import UserCall, read_user_calls
    from prefix_audit.core.records import MAX_RECORDED_CHARS, RecordedResult

    calls = (UserCall(0, structured_call("set_apn_settings", '{"apn_settings": ', "u0")),
             UserCall(1, structured_call("check_status_bar", {}, "u1"), RecordedResult.of("x" * (MAX_RECORDED_CHARS + 5))))
    back = read_user_calls({"user_calls": [json.loads(json.dumps(c.to_json())) for c in calls]}, 1)
    assert back == calls and back[0].call.parse_error and back[1].recorded.cut
