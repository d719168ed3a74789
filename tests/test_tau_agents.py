"""τ-bench episodes through the shared agent loops: the half-duplex conversation, its limits and
what the rollout records about it, with scripted models and the simulated model."""

from __future__ import annotations

import asyncio
import json

import pytest

from prefix_audit.benchmarks.tau.domain import semantics as sem
from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import Rollout, Usage
from prefix_audit.generation.agents.executor import K_EXEC
from prefix_audit.generation.agents.methods import MethodSpec, run_method
from prefix_audit.models.base import ModelRequest, ModelResponse, ModelToolCall
from prefix_audit.replay.checker import replay


class Replies:
    """An executor that answers from a list of (text, tool calls) and records its requests."""

    name = "replies"

    def __init__(self, *replies) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        text, calls = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return ModelResponse(text, tuple(calls), Usage(request.role, 5, 5, 0.1), {}, False, "stop")

    async def aclose(self) -> None:
        return None


def _episode(bench, task_id, backend, user_backend=None):
    env = bench.agent_environment(task_id)
    return asyncio.run(run_method(MethodSpec("react"), backend, env, bench.conversation(env, user_backend)))


def test_the_agent_greets_the_policy_is_its_system_prompt_and_the_user_ends_it(tau):
    airline = tau["tau_airline"]
    task_id = airline.task_ids()[0]
    backend = Replies(("Could you tell me your user id?", ()))
    episode = _episode(airline, task_id, backend)
    first = backend.requests[0].messages
    assert first[1].role == "assistant" and first[1].content == sem.FIRST_AGENT_MESSAGE
    assert "<policy>" in first[0].content and first[2].content == airline.task(task_id).reason_for_call
    # the same question again has nothing new to answer: the scripted user stops
    assert episode.conversation["termination_reason"] == "user_stop"
    assert episode.conversation["user_turns"][0] == airline.task(task_id).reason_for_call
    assert len(episode.turns) == len(episode.conversation["user_turns"])
    assert {k for k in airline.provenance} <= set(episode.conversation)


def test_the_agent_stop_token_ends_the_conversation(tau):
    airline = tau["tau_airline"]
    episode = _episode(airline, airline.task_ids()[0], Replies((f"Goodbye. {sem.AGENT_STOP_TOKEN}", ())))
    assert episode.conversation["termination_reason"] == "agent_stop" and len(episode.turns) == 1


@pytest.mark.parametrize("arguments", [json.dumps({"reservation_id": "NOPE00"}), '{"reservation_id": "NOPE'])
def test_too_many_tool_errors_end_the_episode(tau, arguments):
    # rejected calls and calls that could not be read both count towards τ's error limit
    airline = tau["tau_airline"]
    bad = ModelToolCall("c1", "get_reservation_details", arguments)
    backend = Replies((None, (bad,) * sem.MAX_ERRORS), ("Sorry.", ()))
    episode = _episode(airline, airline.task_ids()[0], backend)
    assert episode.conversation["termination_reason"] == "too_many_errors" and len(episode.turns) == 1
    assert len(backend.requests) == 1 and len(episode.turns[0]) == 1  # it ends before the agent's next message
    assert not episode.force_terminated


def test_the_error_limit_is_checked_after_every_tool_result(tau):
    # τ checks its limits whenever a message is handed on, not only when a turn ends: the agent that
    # keeps calling after its tenth error is not asked again
    airline = tau["tau_airline"]
    bad = ModelToolCall("c1", "get_reservation_details", json.dumps({"reservation_id": "NOPE00"}))
    backend = Replies((None, (bad,)))
    episode = _episode(airline, airline.task_ids()[0], backend)
    assert episode.conversation["termination_reason"] == "too_many_errors"
    assert len(backend.requests) == sem.MAX_ERRORS and [len(t) for t in episode.turns] == [sem.MAX_ERRORS]
    observations = [m.content for m in backend.requests[-1].messages if m.role == "tool"]
    assert len(observations) == sem.MAX_ERRORS - 1 and all("Error" in o for o in observations)


def test_a_model_user_simulator_is_accounted_apart(tau):
    airline = tau["tau_airline"]
    user = Replies(("I need to change my flight.", ()), (f"Thanks! {sem.STOP_TOKEN}", ()))
    episode = _episode(airline, airline.task_ids()[0], Replies(("Sure, what is your user id?", ())), user)
    assert [r.role for r in user.requests] == ["user_simulator", "user_simulator"]
    assert user.requests[0].messages[-1].content == sem.FIRST_AGENT_MESSAGE  # the user answers the greeting
    assert [u.role for u in episode.usage] == ["executor", "user_simulator", "user_simulator"]
    assert episode.conversation["user_turns"] == ["I need to change my flight."]


@pytest.mark.parametrize("dataset", ["tau_airline", "tau_retail"])
def test_an_error_free_simulated_model_replays_like_the_reference(tau, dataset):
    from prefix_audit.generation.rollouts import simulated_episode_backend
    from prefix_audit.generation.settings import BackendSettings

    bench = tau[dataset]

    def longest_turn(task_id: str) -> int:
        return max(sum(len(s.calls) for s in turn) for turn in bench.reference_rollout(task_id).turns)

    for task_id in bench.task_ids()[:6]:
        backend = simulated_episode_backend(bench, task_id, "m", BackendSettings.parse({"type": "simulated", "profile": {}}),
                                            "s", "p")
        episode = _episode(bench, task_id, backend)
        if longest_turn(task_id) > K_EXEC:  # the reference packs more calls into one turn than K_exec
            assert episode.force_terminated and episode.conversation["termination_reason"] == "max_steps"
            continue
        rollout = Rollout(dataset, task_id, "m", "react", "r", episode.turns,
                          source="agent", meta=dict(episode.conversation))
        result, reference = replay(rollout, bench), replay(bench.reference_rollout(task_id), bench)
        assert (result.T, result.FED, result.Y) == (reference.T, reference.FED, reference.Y), task_id
        assert episode.conversation["user_turns"] == bench.reference_rollout(task_id).meta["user_turns"]


def test_positional_arguments_bind_in_declared_order_live_as_in_replay(tau):
    airline = tau["tau_airline"]
    reservation = next(iter(airline.backend.domain.raw_db["reservations"]))
    by_keyword = airline.agent_environment("0").execute(
        ToolCall("get_reservation_details", kwargs={"reservation_id": reservation}))
    by_position = airline.agent_environment("0").execute(ToolCall("get_reservation_details", args=(reservation,)))
    assert reservation in by_keyword and by_position == by_keyword
