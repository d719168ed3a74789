"""tau2's own evaluation of a trajectory, for the benchmark health of τ tasks (:mod:`.health`): every
trajectory our replay scores 1 is given to tau2's evaluators before a finding is claimed.

:func:`tau2_messages` writes an episode as tau2's message list; :func:`tau2_reward` runs the environment,
action and communicate evaluators on it and combines them as ``evaluate_simulation`` combines them for
evaluation type ALL (NL assertions need a judge model: without one, an empty list scores 1, as in tau2).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_audit.plugin import EpisodeResult, ToolCall

from ..domain import semantics as sem


def tau2_messages(episode: EpisodeResult, tools: Mapping[str, Any]) -> list[Any]:
    """A replayed rollout as tau2's messages: the orchestrator's greeting, each turn's user message
    (telecom: the user's calls with the replayed results before it), the agent's calls with the
    replayed results and its texts, the user's stop message last."""
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.message import ToolCall as Tau2Call

    rollout = episode.rollout
    results = iter(v for v in episode.verdicts if v.action.call is not None)
    party = list(episode.party_calls)
    user_turns = rollout.meta["user_turns"]
    out: list[Any] = [AssistantMessage(role="assistant", content=sem.FIRST_AGENT_MESSAGE)]

    def arguments(call: ToolCall) -> dict[str, Any]:
        spec = tools.get(call.name or "")
        return {**(dict(zip(spec.positional_order, call.args, strict=False)) if spec else {}), **dict(call.kwargs)}

    def user_acts(before_turn: int) -> None:
        while party and party[0].turn <= before_turn:
            p = party.pop(0)
            call_id = p.call.call_id or f"user_{len(out)}"
            out.append(UserMessage(role="user", tool_calls=[Tau2Call(id=call_id, name=p.call.name or "",
                                                                     arguments=dict(p.call.kwargs), requestor="user")]))
            out.append(ToolMessage(id=call_id, role="tool", content=p.result, requestor="user", error=not p.accepted))

    for t, turn in enumerate(rollout.turns):
        user_acts(t)
        out.append(UserMessage(role="user", content=user_turns[t]))
        for step in turn:
            if not step.calls:
                out.append(AssistantMessage(role="assistant", content=step.text or ""))
                continue
            calls = [(call, next(results)) for call in step.calls]
            out.append(AssistantMessage(role="assistant", content=step.text or None, tool_calls=[
                Tau2Call(id=c.call_id or f"call_{len(out)}_{k}", name=c.name or "", arguments=arguments(c),
                         requestor="assistant") for k, (c, _) in enumerate(calls)]))
            out += [ToolMessage(id=m.id, role="tool", content=v.logged or "", requestor="assistant",
                                error=v.accepted is not True)
                    for m, (_, v) in zip(out[-1].tool_calls, calls, strict=True)]
    user_acts(len(rollout.turns))
    out.append(UserMessage(role="user", content=sem.STOP_TOKEN))
    return out


def environment_constructor(bench: Any) -> Callable[..., Any]:
    """tau2's environment constructor of the benchmark's domain (``tau2.domains.<d>.environment.
    get_environment``), handed a fresh copy of this benchmark's database each time
    (:meth:`~..domain.environment.DomainBackend.evaluator_environment`: what tau2's own ``DB.load``
    makes of the file, as a copy-on-write copy of the template validated once — validating the file
    took 0.27 s an environment on airline, two environments per reward — and tau2's hash of the fresh
    database computed once per process)."""
    module = importlib.import_module(f"tau2.domains.{bench.domain.name}.environment")
    if not hasattr(bench.backend, "evaluator_environment"):
        return module.get_environment

    def construct(solo_mode: bool = False) -> Any:
        return bench.backend.evaluator_environment(module.get_environment, solo_mode=solo_mode)

    return construct


@dataclass(frozen=True)
class Tau2Verdict:
    """tau2's own reward of a trajectory (None: it needs a judge no one gave) and its breakdown in words."""

    reward: float | None
    words: str


def tau2_reward(bench: Any, definition: Mapping[str, Any], messages: Sequence[Any],
                termination: str = "user_stop", nl_verdict: bool | None = None) -> Tau2Verdict:
    """tau2's own reward of a conversation: ``EnvironmentEvaluator`` (with the domain's environment
    constructor), ``ActionEvaluator`` and ``CommunicateEvaluator`` combined as ``evaluate_simulation``
    combines them for evaluation type ALL (``evaluate_simulation`` itself needs litellm, which the
    pinned wheel's --no-deps install leaves out). NL assertions: an empty list scores 1, as tau2's
    ``NLAssertionsEvaluator`` scores it without calling its judge; a list that only a judge can decide
    takes ``nl_verdict`` (a configured judge's, not tau2's), and makes the reward None without one."""
    from tau2.data_model.tasks import RewardType, Task
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    if termination not in sem.NORMAL_TERMINATIONS:
        return Tau2Verdict(0.0, f"tau2 scores a conversation ended by {termination} 0")
    task = Task.model_validate(dict(definition))
    if task.evaluation_criteria is None:
        return Tau2Verdict(1.0, "tau2 scores it 1: the task has no evaluation criteria")
    basis = set(task.evaluation_criteria.reward_basis)
    judged = RewardType.NL_ASSERTION in basis and bool(task.evaluation_criteria.nl_assertions)
    if judged and nl_verdict is None:
        return Tau2Verdict(None, f"tau2 needs a judge model for its {len(task.evaluation_criteria.nl_assertions)} "
                                 f"NL assertions")
    reward = 1.0
    breakdown: dict[Any, float] = {}  # by tau2's RewardType
    if basis & {RewardType.DB, RewardType.ENV_ASSERTION}:
        env = EnvironmentEvaluator.calculate_reward(environment_constructor(bench), task, list(messages))
        reward *= env.reward
        breakdown.update(env.reward_breakdown or {})
    if RewardType.ACTION in basis:
        action = ActionEvaluator.calculate_reward(task, list(messages))
        reward *= action.reward
        breakdown.update(action.reward_breakdown or {})
    if RewardType.NL_ASSERTION in basis:
        # none listed: tau2's evaluator returns 1 without a judge; else the configured judge's verdict
        breakdown[RewardType.NL_ASSERTION] = float(nl_verdict) if judged and nl_verdict is not None else 1.0
        reward *= breakdown[RewardType.NL_ASSERTION]
    if RewardType.COMMUNICATE in basis:
        communicate = CommunicateEvaluator.calculate_reward(task, list(messages))
        reward *= communicate.reward
        breakdown.update(communicate.reward_breakdown or {})
    parts = ", ".join(f"{getattr(k, 'value', k)} {v:g}" for k, v in breakdown.items())
    by_judge = "; the NL assertions as the configured judge decides them (not tau2's)" if judged else ""
    return Tau2Verdict(reward, f"tau2's own evaluators (environment, action, communicate as evaluate_simulation "
                               f"combines them for ALL) score it {reward:g}" + (f" ({parts})" if parts else "")
                       + by_judge)
