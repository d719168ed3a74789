"""The four agent methods and the F.3 verifier conditions over one executor loop (docs/definitions.md#agents).

* ``react`` — the executor alone.
* ``prompt_planning`` — the same executor, told to write its plan first in its own response.
* ``plan_conditioned`` — per user turn a planner call writes a structured plan; the executor acts
  conditioned on it.
* ``dual_loop`` — the planner's plan goes to a verifier, which accepts it or rejects it naming the
  earliest failing step, the failed check and the information needed; a revision call repairs it;
  at most ``max_candidates`` (K_val = 5) candidates, after which the executor is given the failure
  flag and proceeds with no binding plan.

Verifier conditions of Dual-Loop (Table F.3): a verifier model (the executor's own or a swapped
one), ``accept`` (deterministic accept: no verifier call, the executor is told the plan was
accepted unevaluated) and ``replay`` (a deterministic verifier that dry-runs the plan through this
project's replay predicates on a copy of the state, at zero model cost). Planner, verifier and
revision calls are accounted with the rollout but never enter T; verification never touches the
live environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from prefix_audit.core.calls import ToolCall, structured_call
from prefix_audit.core.records import Usage
from prefix_audit.models.base import Message, ModelBackend, ModelRequest, ToolSchema
from prefix_audit.replay.checker import DryRun, primary
from prefix_audit.replay.contract import AgentEnvironment, Benchmark, Conversation, ScriptedEnvironment

from .environment import ScriptedTurns
from .executor import K_EXEC, Episode, TurnBriefing, run_executor
from .plans import (
    CHECK_OF_CATEGORY,
    PLAN_FORMAT,
    VERDICT_FORMAT,
    Plan,
    PlanFormatError,
    Rejection,
    UnresolvedReference,
    parse_plan,
    parse_verdict,
    step_call,
)
from .prompts import (
    PROMPT_PLANNING_SYSTEM_PROMPT,
    REACT_SYSTEM_PROMPT,
    PlanningContext,
    executed_calls,
    plan_briefing,
    planner_messages,
    revision_messages,
    verifier_messages,
    without_briefing,
)

METHODS = ("react", "prompt_planning", "plan_conditioned", "dual_loop")
VERIFIER_CONDITIONS = ("model", "accept", "replay")
K_VAL = 5


@dataclass(frozen=True)
class MethodSpec:
    method: str
    verifier: str = "model"  # one of VERIFIER_CONDITIONS; Dual-Loop only
    max_steps: int = K_EXEC
    max_candidates: int = K_VAL

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown agent method {self.method!r} (known: {', '.join(METHODS)})")
        if self.verifier not in VERIFIER_CONDITIONS:
            raise ValueError(f"unknown verifier condition {self.verifier!r} "
                             f"(known: {', '.join(VERIFIER_CONDITIONS)})")
        if self.max_steps < 1 or self.max_candidates < 1:
            raise ValueError("max_steps and max_candidates must be at least 1")


class ReplayVerifier:
    """The deterministic verifier: each step of the plan, references filled in from the dry run's
    own results, is judged by the replay predicates after everything executed so far. The first
    failing step is rejected with its category as the failed check; a step that needs information
    the user has not given ends the check there (nothing after it can be dry-run)."""

    def __init__(self, benchmark: Benchmark, dataset: str, task_id: str) -> None:
        self._benchmark, self._dataset, self._task_id = benchmark, dataset, task_id

    def verify(self, history: Sequence[Sequence[ToolCall]], turn: int, plan: Plan) -> Rejection | None:
        dry = DryRun(self._benchmark, self._dataset, self._task_id, history, turn)
        results: dict[int, object] = {}
        for step in plan.steps:
            try:
                call = step_call(step, results)
            except UnresolvedReference as unresolved:
                if unresolved.check == "information":
                    return None
                return Rejection(step.id, unresolved.check, str(unresolved))
            verdict, outcome = dry.check(call)
            if verdict.failures:
                failure = primary(verdict.failures)
                return Rejection(step.id, CHECK_OF_CATEGORY[failure.category], failure.detail)
            results[step.id] = outcome.result if outcome is not None else None
        return None


def history_by_turn(executed: Sequence[dict], turn: int) -> list[list[ToolCall]]:
    """Executed calls as replayable calls, one list per user turn up to ``turn``."""
    history: list[list[ToolCall]] = [[] for _ in range(turn + 1)]
    for entry in executed:
        history[entry["turn"]].append(structured_call(entry["tool"], entry["arguments"]))
    return history


def _read_plan(text: str | None) -> tuple[Plan | None, Rejection | None]:
    try:
        return parse_plan(text), None
    except PlanFormatError as exc:
        return None, Rejection(None, PLAN_FORMAT, str(exc))


class _Planning:
    """The per-turn planning stage of one episode."""

    def __init__(self, spec: MethodSpec, planner: ModelBackend, verifier: ModelBackend | None,
                 replay: ReplayVerifier | None) -> None:
        self.spec, self.planner, self.verifier, self.replay = spec, planner, verifier, replay

    async def _call(self, backend: ModelBackend, messages: tuple[Message, ...], role: str,
                    usage: list[Usage]) -> str | None:
        response = await backend.complete(ModelRequest(messages, (), role))
        usage.append(response.usage)
        return response.text

    async def __call__(self, turn: int, messages: tuple[Message, ...], tools: tuple[ToolSchema, ...]) -> TurnBriefing:
        requests = tuple(without_briefing(m.content or "") for m in messages if m.role == "user")
        executed = executed_calls(messages)
        context = PlanningContext(turn, requests, executed, tools)
        usage: list[Usage] = []
        plan, rejection = _read_plan(await self._call(self.planner, planner_messages(context), "planner", usage))
        if self.spec.method == "plan_conditioned":
            status = "unverified" if plan is not None else "unavailable"
            trace = {"turn": turn, "candidates": 1, "status": status,
                     "rejections": [rejection.to_json()] if rejection else []}
            return TurnBriefing(plan_briefing(status, plan), tuple(usage), trace)
        rejections = []
        status = "verification_failed"
        for candidate in range(1, self.spec.max_candidates + 1):
            if plan is not None:
                rejection = await self._verify(context, executed, turn, plan, usage)
                if rejection is None:
                    status = "accepted_unevaluated" if self.spec.verifier == "accept" else "verified"
                    break
            assert rejection is not None
            rejections.append(rejection.to_json())
            if candidate == self.spec.max_candidates:
                plan = None
                break
            plan, unreadable = _read_plan(await self._call(
                self.planner, revision_messages(context, plan, rejection), "revision", usage))
            rejection = unreadable
        trace = {"turn": turn, "candidates": candidate, "status": status, "rejections": rejections}
        return TurnBriefing(plan_briefing(status, plan), tuple(usage), trace)

    async def _verify(self, context: PlanningContext, executed, turn: int, plan: Plan,
                      usage: list[Usage]) -> Rejection | None:
        if self.spec.verifier == "accept":
            return None
        if self.spec.verifier == "replay":
            assert self.replay is not None
            # In the event loop's own thread: benchmark code (BFCL's time limit, for one) assumes it.
            return self.replay.verify(history_by_turn(executed, turn), turn, plan)
        assert self.verifier is not None
        text = await self._call(self.verifier, verifier_messages(context, plan), "verifier", usage)
        try:
            return parse_verdict(text)
        except PlanFormatError as exc:
            return Rejection(None, VERDICT_FORMAT, str(exc))


async def run_method(spec: MethodSpec, backend: ModelBackend, env: AgentEnvironment,
                     conversation: Conversation | None = None, *, verifier: ModelBackend | None = None,
                     replay: ReplayVerifier | None = None) -> Episode:
    """One episode of ``spec.method`` with ``backend`` as planner, reviser and executor (the
    conversation defaults to the environment's scripted turns)."""
    prompt = PROMPT_PLANNING_SYSTEM_PROMPT if spec.method == "prompt_planning" else REACT_SYSTEM_PROMPT
    briefing = None
    if spec.method in ("plan_conditioned", "dual_loop"):
        if spec.method == "dual_loop" and spec.verifier == "model" and verifier is None:
            verifier = backend
        if spec.method == "dual_loop" and spec.verifier == "replay" and replay is None:
            raise ValueError("the replay verifier condition needs a ReplayVerifier")
        briefing = _Planning(spec, backend, verifier, replay)
    # a benchmark with no conversation of its own (Benchmark.conversation gives None) has fixed user turns
    turns = conversation or ScriptedTurns(cast(ScriptedEnvironment, env))
    return await run_executor(backend, env, turns, system_prompt=prompt, max_steps=spec.max_steps, briefing=briefing)
