"""τ² telecom in tau2's solo mode: no user; the agent is given the task's ticket and calls the phone's
tools itself. Those calls are the agent's own actions, replayed on tau2's solo environment; Y is
differential-tested against tau2's own solo evaluation. The mode is decided per file, from its
``info`` (or, without one, from the absence of any user in its simulations)."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json

import pytest
from conftest import SHARED

from prefix_audit.benchmarks.tau.ingest.importer import import_results
from prefix_audit.benchmarks.tau.ingest.solo import run_mode
from prefix_audit.core.records import BadLine
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import UnscorableRollout
from prefix_audit.replay.record_check import check_record
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

SOLO_LOG = (SHARED / "fixtures" / "real-logs-5" / "tau2" / "sierra-research__tau2-bench__src__experiments__"
            "model_training__results__gpt-4.1_telecom_no-user_gpt-4.1_1trials.json.gz")
SOLO_INFO = {"environment_info": {"domain_name": "telecom"},
             "agent_info": {"implementation": "llm_agent_solo", "llm": "gold"},
             "user_info": {"implementation": "dummy_user", "llm": None}}
STOP = "###STOP###"
# tau2's telecom tool that draws a random id (a new bill's): its result cannot be recorded reproducibly.
RANDOM_ID_TOOL = "send_payment_request"


def tau2_solo_reward(task, messages) -> float:
    """tau2's own reward of a solo run: its environment evaluator in solo mode (which replays the
    trajectory on a solo environment and insists on the recorded results) and its action evaluator,
    combined as ``evaluate_simulation`` combines them (telecom's bases are ENV_ASSERTION and ACTION)."""
    from tau2.domains.telecom.environment import get_environment
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    basis = set(task.evaluation_criteria.reward_basis)
    assert basis <= {"DB", "ENV_ASSERTION", "ACTION"}
    reward = EnvironmentEvaluator.calculate_reward(get_environment, task, messages, solo_mode=True).reward
    if "ACTION" in basis:
        reward *= ActionEvaluator.calculate_reward(task, messages).reward
    return reward


def _definitions(telecom) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads(telecom.domain.files.tasks.read_text())}


def solo_simulation(telecom, definition, sim_id, phone_calls=True) -> dict:
    """A solo run as tau2's own solo environment records it: the agent looks the customer up by the
    ticket's phone number, makes each gold action itself — the user's ones on the phone (all but the
    phone's where ``phone_calls`` is false) — and stops; its reward is tau2's own evaluation."""
    from tau2.data_model.message import AssistantMessage, ToolCall
    from tau2.data_model.tasks import Task
    from tau2.domains.telecom.environment import get_environment

    from prefix_audit.benchmarks.tau.generation.telecom import LOOKUP, phone_number

    task = Task.model_validate(definition)
    environment = get_environment(solo_mode=True)
    environment.set_state(None, task.initial_state.initialization_actions, [])
    phone = phone_number(telecom.task(definition["id"]))
    calls = [(LOOKUP, {"phone_number": phone})] + [
        (a.name, a.arguments) for a in task.evaluation_criteria.actions if phone_calls or a.requestor != "user"]
    messages = []
    for k, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"{sim_id}_{k}", name=name, arguments=copy.deepcopy(arguments), requestor="assistant")
        messages += [AssistantMessage(role="assistant", tool_calls=[call]), environment.get_response(call)]
    messages.append(AssistantMessage(role="assistant", content=STOP))
    return {"id": sim_id, "task_id": definition["id"], "trial": 0, "termination_reason": "agent_stop",
            "reward_info": {"reward": tau2_solo_reward(task, messages)},
            "messages": [m.model_dump(mode="json") for m in messages]}


@pytest.fixture(scope="module")
def solo_document(telecom) -> dict:
    """A solo results file of six base tasks whose gold draws no random id: four with user actions
    (every fourth such), each as its gold run and its run without the phone's calls, and the first two
    whose reward basis names ACTION (their gold is the agent's alone), as their gold runs."""
    definitions = _definitions(telecom)
    usable = [t for t in telecom.task_ids() if all(a.name != RANDOM_ID_TOOL for a in telecom.task(t).gold)]
    acting = [t for t in usable if telecom.task(t).user_gold][::4][:4]
    action = [t for t in usable if "ACTION" in telecom.task(t).reward_basis][:2]
    sims = [solo_simulation(telecom, definitions[t], f"gold{k}") for k, t in enumerate(acting + action)]
    sims += [solo_simulation(telecom, definitions[t], f"nophone{k}", phone_calls=False) for k, t in enumerate(acting)]
    task_ids = acting + action
    return {"info": SOLO_INFO, "tasks": [definitions[t] for t in task_ids], "simulations": sims}


def _audit(tau, path):
    items = list(import_results(path, tau.__getitem__))
    bad = [i for i in items if isinstance(i, BadLine)]
    episodes, _ = score_rollouts(iter(i for i in items if not isinstance(i, BadLine)), tau.__getitem__, ScoreReport())
    return episodes, bad


def _write(tmp_path, doc, name="solo.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _numbers(episodes):
    return sorted((e.rollout.meta["simulation_id"], e.T, e.FED, e.category, e.Y, check_record(e).replay_agreement)
                  for e in episodes)


def test_a_solo_run_replays_the_phone_calls_as_the_agents_own_with_taus_own_reward(tau, telecom, solo_document,
                                                                                      tmp_path):
    episodes, bad = _audit(tau, _write(tmp_path, solo_document))
    assert bad == [] and len(episodes) == len(solo_document["simulations"])
    assert "solo mode (info: agent llm_agent_solo, user dummy_user)" in episodes[0].rollout.meta["reading"]
    sims = {s["id"]: s for s in solo_document["simulations"]}
    for ep in episodes:
        sim, check = sims[ep.rollout.meta["simulation_id"]], check_record(ep)
        # Y is tau2's own solo evaluation of the run; the replay gives every result tau2's solo environment gave.
        assert ep.Y == ep.rollout.recorded.y == int(sim["reward_info"]["reward"] >= 1.0), ep.y_detail
        assert check.log_issue is None and check.replay_agreement == 1.0 and ep.party_calls == ()
        calls = [v.action.call.name for v in ep.verdicts if v.action.call is not None]
        assert ep.T == len(calls) + 1 and len(ep.rollout.turns) == 1  # the calls and the closing stop: one turn
        assert ep.rollout.meta["solo_mode"] is True and ep.rollout.meta["user_turns"] == []
        # The ticket opens the turn: the phone number the agent looks the customer up by is known from it.
        assert ep.user_texts == (telecom.task(ep.rollout.task_id).ticket,)
        if sim["id"].startswith("gold"):  # every call valid, the phone's too
            assert ep.FED == ep.T + 1
            phone_calls = set(calls) & set(telecom.backend.user_tools)
            assert bool(phone_calls) == bool(telecom.task(ep.rollout.task_id).user_gold)
    assert {e.Y for e in episodes} == {0, 1}


def test_without_the_ticket_the_phone_number_is_a_fact_not_yet_given(tau, telecom, solo_document, tmp_path):
    """The facts a solo agent has come from the ticket: remove it and the look-up by the customer's
    phone number uses a fact nobody gave (an information failure at the first call)."""
    from prefix_audit.benchmarks.tau.domain.embedded import KEY, TAU2_FORMAT, EmbeddedTask

    episodes, _ = _audit(tau, _write(tmp_path, solo_document))
    rollout = next(e.rollout for e in episodes if e.rollout.meta["simulation_id"] == "gold0")
    definition = {k: v for k, v in _definitions(telecom)[rollout.task_id].items() if k != "ticket"}
    meta = {k: v for k, v in rollout.meta.items() if k != "tasks_sha256"}
    meta[KEY] = EmbeddedTask.of(definition, TAU2_FORMAT, "test").to_json()
    without = replay(dataclasses.replace(rollout, meta=meta), telecom)
    assert without.FED == 1 and without.category == "information"
    assert without.Y == replay(rollout, telecom).Y == 1


def test_a_bare_list_of_solo_simulations_is_solo_by_having_no_user(tau, solo_document, tmp_path):
    """Metamorphic: without ``info`` the same simulations give the same numbers — no simulation has a
    user message or tau2's greeting — and the reading says how the mode was found."""
    expected = _numbers(_audit(tau, _write(tmp_path, solo_document))[0])
    episodes, bad = _audit(tau, _write(tmp_path, solo_document["simulations"], "list.json"))
    assert bad == [] and _numbers(episodes) == expected
    assert "none of its simulations has a user message or tau2's greeting" in episodes[0].rollout.meta["reading"]


def _calls_the_phone(telecom, simulation) -> bool:
    return any(c["name"] in telecom.backend.user_tools
               for m in simulation["messages"] for c in m.get("tool_calls") or ())


def test_the_mode_is_the_files_not_what_a_simulation_called(tau, telecom, solo_document, tmp_path):
    # A run with a user (its info says so) whose agent's phone calls ran: those simulations are refused,
    # the one whose agent never touched the phone is read as a conversation with a user.
    doc = copy.deepcopy(solo_document)
    doc["info"]["agent_info"]["implementation"] = "llm_agent"
    doc["info"]["user_info"]["implementation"] = "user_simulator"
    episodes, bad = _audit(tau, _write(tmp_path, doc))
    phone = {k + 1 for k, s in enumerate(doc["simulations"]) if _calls_the_phone(telecom, s)}
    assert {b.line for b in bad} == phone and len(episodes) == len(doc["simulations"]) - len(phone)
    assert all("it is not replayed as one" in b.reason for b in bad)
    assert all("solo_mode" not in e.rollout.meta for e in episodes)
    # A solo agent with a user who speaks: tau2 cannot write that; every simulation is refused, saying why.
    doc["info"]["agent_info"]["implementation"] = "llm_agent_solo"
    episodes, bad = _audit(tau, _write(tmp_path, doc))
    assert episodes == [] and len(bad) == len(doc["simulations"])
    assert all("the file contradicts itself" in b.reason for b in bad)
    # A user message in a solo run costs that simulation only.
    doc = copy.deepcopy(solo_document)
    doc["simulations"][0]["messages"].insert(2, {"role": "user", "content": "It still does not work."})
    episodes, bad = _audit(tau, _write(tmp_path, doc))
    assert len(episodes) == len(doc["simulations"]) - 1
    assert [b.line for b in bad] == [1] and "a user message in a solo-mode run" in bad[0].reason


def test_run_mode_from_info_and_from_the_simulations():
    greeted = {"messages": [{"role": "assistant", "content": "Hi! How can I help you today?"},
                            {"role": "user", "content": "Hello"}]}
    alone = {"messages": [{"role": "assistant", "content": None, "tool_calls": []}, {"role": "assistant",
                                                                                    "content": STOP}]}
    assert run_mode(SOLO_INFO, [greeted], "telecom").solo  # the file's info, not its messages, decides
    assert run_mode({"user_info": {"implementation": "dummy_user"}}, [], "telecom").solo  # any agent with it
    assert not run_mode({"agent_info": {"implementation": "llm_agent"}}, [alone], "telecom").solo
    assert run_mode({}, [alone, {"messages": []}], "telecom").solo
    assert not run_mode({}, [alone, greeted], "telecom").solo
    assert not run_mode({}, [{"messages": []}], "telecom").solo  # nothing to tell it by
    refused = run_mode(SOLO_INFO, [], "airline")
    assert refused.refused and "tau2's airline has no solo mode" in refused.refused


def test_a_solo_rollout_is_telecoms_and_has_no_user(tau, telecom, solo_document, tmp_path):
    episodes, _ = _audit(tau, _write(tmp_path, solo_document))
    rollout = episodes[0].rollout
    for meta in ({**rollout.meta, "solo_mode": "yes"},
                 {**rollout.meta, "user_turns": ["hello"]},
                 {**rollout.meta, "user_calls": [{"turn": 0, "name": "toggle_data", "arguments": {}}]}):
        with pytest.raises(UnscorableRollout):
            replay(dataclasses.replace(rollout, meta=meta), telecom)
    reference = tau["tau_airline"].reference_rollout("5")
    with pytest.raises(UnscorableRollout, match="tau2's airline has no solo mode"):
        replay(dataclasses.replace(reference, meta={**reference.meta, "solo_mode": True}), tau["tau_airline"])


@pytest.mark.skipif(not SOLO_LOG.is_file(), reason="no shared real solo-mode telecom log")
def test_the_real_solo_run_reads_whole_with_the_recorded_reward_and_taus_own(tau, telecom, tmp_path):
    """tau2's gpt-4.1 solo telecom run (40 simulations, reward 1 on 20, every one ending agent_stop):
    every simulation is read; Y equals the recorded reward, the replay gives every recorded result, and
    tau2's own solo evaluation of each simulation as the file has it gives the recorded reward."""
    from tau2.data_model.simulation import SimulationRun
    from tau2.data_model.tasks import Task

    path = tmp_path / "solo.json"
    path.write_bytes(gzip.decompress(SOLO_LOG.read_bytes()))
    episodes, bad = _audit(tau, path)
    assert bad == [] and len(episodes) == 40
    assert sum(e.Y for e in episodes) == sum(e.rollout.recorded.y for e in episodes) == 20
    for ep in episodes:
        check = check_record(ep)
        assert ep.Y == ep.rollout.recorded.y and check.log_issue is None and check.replay_agreement == 1.0
    assert sum(check_record(e).compared for e in episodes) == 626
    # the phone's tools are called in 39 of the 40 (the one left only refuels data)
    phone = set(telecom.backend.user_tools)
    assert sum(any(v.action.call is not None and v.action.call.name in phone for v in e.verdicts)
               for e in episodes) == 39
    doc = json.loads(path.read_text())
    tasks = {t["id"]: Task.model_validate(t) for t in doc["tasks"]}
    by_id = {e.rollout.meta["simulation_id"]: e for e in episodes}
    for sim in doc["simulations"]:
        reward = tau2_solo_reward(tasks[sim["task_id"]], SimulationRun.model_validate(sim).messages)
        assert reward == sim["reward_info"]["reward"] and int(reward >= 1.0) == by_id[sim["id"]].Y
