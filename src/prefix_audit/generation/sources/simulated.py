"""The simulated model's policy: the offline default and a test double (docs/definitions.md#agents).

A deterministic, seeded policy that knows the task's reference actions through a side channel
real backends never see, and deviates from them through an explicit error model. It answers the
same requests as a real backend — executor, planner, revision and verifier calls, with the same
prompts, plans and verdicts as JSON in ordinary messages — and runs inside the same agent loops
behind a generic :class:`~prefix_audit.models.scripted.PolicyBackend`, which does the accounting;
everything downstream sees only the rollout it produces.

Error model. A *deviation* of category c at reference position j is the first wrong action the
mutation operators (:mod:`.mutation`) build there; for ``precondition`` it is leaving out the
login/setter action so that the guarded call after it fails.

Executor (per step that still has a reference action to take):
  * with no plan to follow, with ``p_stop`` it ends the turn early (premature stopping); a model
    with plan steps left does not stop early;
  * with a binding plan (Plan-Conditioned, or Dual-Loop with an accepted plan) it takes the next
    plan step verbatim with probability ``p_follow_plan`` — right or wrong — and otherwise acts on
    its own; under Prompt Planning it first writes its own plan (each step drawn with its own
    ``p_error``) into its reply and then carries that out;
  * acting on its own it deviates with ``p_error[c]`` per category, else takes the reference action.
  After a wrong action whose observation reports an error it recovers (repairs the step on its own)
  with ``p_recover`` and gives up on the turn otherwise.
Planner: one plan per user turn, each reference step replaced by a deviation of category c with
  ``p_plan_error[c]``. The first plan of a turn is seeded by (task, model, turn) only, so every
  method of one model starts from the same plan, as the paper's F.3 design requires. A revision
  repairs the step the rejection names (the latest deviation at or before it) and nothing else.
Verifier: finds the plan's first failing step with this project's replay predicates on a dry run
  (the same as the deterministic verifier) and reports it with probability ``p_detect[c]`` for
  its category c; otherwise it accepts.

Tokens and latency are the backend's (:mod:`prefix_audit.models.scripted`), with the profile's
latency parameters.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.models.base import Message, ModelRequest, ModelToolCall
from prefix_audit.models.scripted import LatencyModel, PolicyBackend

from ..agents.methods import ReplayVerifier, history_by_turn
from ..agents.plans import CHECK_OF_CATEGORY, Plan, PlanStep, parse_plan
from ..agents.prompts import BINDING_STATUSES, PROMPT_PLANNING_INSTRUCTION, read_briefing, read_context
from .mutation import Context, candidates

# An observation that reports a failure: BFCL's {"error": ...}, ToolSandbox's "SomeError: ..." or
# "...Exception: ...".
_REPORTS_ERROR = re.compile(r"error|exception", re.IGNORECASE)
_CATEGORY_OF_CHECK = {check: category for category, check in CHECK_OF_CATEGORY.items()}


def _rates(profile: str, what: str, rates: Mapping[str, float], total_at_most_one: bool) -> None:
    unknown = set(rates) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"profile {profile}: unknown {what} categories {sorted(unknown)}")
    if any(not 0.0 <= r <= 1.0 for r in rates.values()) or (total_at_most_one and sum(rates.values()) > 1.0):
        raise ValueError(f"profile {profile}: {what} rates must be probabilities"
                         + (" whose sum is at most 1" if total_at_most_one else ""))


@dataclass(frozen=True)
class SimulatedProfile:
    """A named stand-in for a model of some strength; every rate is a probability."""

    name: str
    p_error: Mapping[str, float] = field(default_factory=dict)  # per executor step, by category
    p_stop: float = 0.0  # per executor step without a plan step left: stop the turn early
    p_recover: float = 0.5  # after an error observation: repair instead of giving up the turn
    p_plan_error: Mapping[str, float] = field(default_factory=dict)  # per planned step, by category
    p_detect: Mapping[str, float] = field(default_factory=dict)  # verifier: report a failing step
    p_follow_plan: float = 0.9  # executor: take the next step of a binding plan verbatim
    latency_base_s: float = 0.3
    latency_per_input_token_s: float = 0.0002
    latency_per_output_token_s: float = 0.02

    def __post_init__(self) -> None:
        _rates(self.name, "error", self.p_error, True)
        _rates(self.name, "plan error", self.p_plan_error, True)
        _rates(self.name, "detection", self.p_detect, False)
        scalars = (self.p_stop, self.p_recover, self.p_follow_plan)
        if any(not 0.0 <= r <= 1.0 for r in scalars) or sum(self.p_error.values()) + self.p_stop > 1.0:
            raise ValueError(f"profile {self.name}: rates must be probabilities whose per-step sum is at most 1")

    @property
    def latency(self) -> LatencyModel:
        return LatencyModel(self.latency_base_s, self.latency_per_input_token_s, self.latency_per_output_token_s)

    @classmethod
    def from_config(cls, name: str, settings: Mapping[str, Any]) -> SimulatedProfile:
        maps = ("p_error", "p_plan_error", "p_detect")
        rates = {k: dict(settings.get(k, {})) for k in maps}
        numbers = {k: float(v) for k, v in settings.items() if k not in maps}
        # the settings' keys are fields: mypy checks each unpacked value against every field, maps and numbers
        return cls(name, **rates, **numbers)  # type: ignore[arg-type]


def _canonical(name: str, arguments: Mapping[str, Any]) -> str:
    return name + json.dumps(dict(arguments), sort_keys=True, default=repr)


# A planned position: None keeps the reference action, OMIT leaves it out, else the wrong call.
OMIT = "omit"


class SimulatedPolicy:
    """One episode's simulated model; holds the policy's position in the reference.

    ``seed`` seeds the episode; ``plan_seed`` the first plan of each turn (shared by every method
    of one model on one task).
    """

    def __init__(self, profile: SimulatedProfile, context: Context, seed: str, plan_seed: str | None = None) -> None:
        self.profile = profile
        self._ctx = context
        self._rng = random.Random(seed)
        self._operator_rng = random.Random(f"{seed}:operators")
        self._plan_seed = plan_seed if plan_seed is not None else seed
        self._turn = -1
        self._cursor = 0
        self._end = 0
        self._pending_error = False
        self._repairing = False
        self._plan: list[PlanStep] = []
        self._plan_pointer = 0
        self._own_plan = False
        self._drafts: dict[int, list[Any]] = {}
        self._setters = frozenset(context.bench.precondition_guards())

    def __call__(self, request: ModelRequest) -> tuple[str | None, tuple[ModelToolCall, ...]]:
        if request.role == "executor":
            return self._executor(request.messages)
        if request.role in ("planner", "revision"):
            return self._planner(read_context(request.messages[-1])), ()
        if request.role == "verifier":
            return self._verifier(read_context(request.messages[-1])), ()
        raise ValueError(f"the simulated model does not play the {request.role!r} role")

    # --- reference positions and deviations ------------------------------------------------

    def _turn_span(self, turn: int) -> tuple[int, int]:
        indices = [k for k, (t, _) in enumerate(self._ctx.actions) if t == turn]
        return (indices[0], indices[-1] + 1) if indices else (0, 0)

    def _named(self, call: ToolCall) -> dict[str, Any]:
        spec = self._ctx.tools.get(call.name or "")
        named = dict(zip(spec.positional_order, call.args, strict=False)) if spec else {}
        named.update(call.kwargs)
        return named

    def _deviation(self, j: int, end: int, category: str, rng: random.Random) -> Any:
        """A wrong choice of ``category`` at reference position j (None when there is none)."""
        if category == "precondition":
            setter = self._ctx.actions[j][1].name in self._setters and j + 1 < end
            return OMIT if setter else None
        self._ctx.rng = rng  # the operators draw their order from the caller's stream
        for cand in candidates(self._ctx, j, category):
            if cand.injection.operator != "skipped_setter":
                return cand.actions[j][1]
        return None

    def _draw(self, j: int, end: int, rates: Mapping[str, float], rng: random.Random) -> Any:
        draw = rng.random()
        for category in CATEGORIES:
            rate = rates.get(category, 0.0)
            if draw < rate:
                return self._deviation(j, end, category, self._operator_rng if rng is self._rng else rng)
            draw -= rate
        return None

    def _plan_of(self, start: int, draft: list[Any]) -> tuple[Plan, dict[int, int]]:
        """The plan a draft spells out, and each step's reference position."""
        steps: list[PlanStep] = []
        position_of: dict[int, int] = {}
        for offset, choice in enumerate(draft):
            if choice == OMIT:
                continue
            call = self._ctx.actions[start + offset][1] if choice is None else choice
            step_id = len(steps) + 1
            steps.append(PlanStep(step_id, call.name or "", self._named(call), (step_id - 1,) if step_id > 1 else ()))
            position_of[step_id] = offset
        return Plan(tuple(steps)), position_of

    # --- roles ---------------------------------------------------------------------------------

    def _planner(self, context: Mapping[str, Any]) -> str:
        turn = int(context["turn"])
        start, end = self._turn_span(turn)
        if turn not in self._drafts or "rejection" not in context:
            rng = random.Random(f"{self._plan_seed}:plan:{turn}")
            self._drafts[turn] = [self._draw(j, end, self.profile.p_plan_error, rng) for j in range(start, end)]
        draft = self._drafts[turn]
        rejection = context.get("rejection")
        if rejection and rejection.get("step") is not None:
            _, position_of = self._plan_of(start, draft)
            named = position_of.get(int(rejection["step"]), len(draft) - 1)
            wrong = [k for k in range(named + 1) if draft[k] is not None]
            if wrong:  # repair the deviation that makes the named step fail
                draft[wrong[-1]] = None
        return self._plan_of(start, draft)[0].dumps()

    def _verifier(self, context: Mapping[str, Any]) -> str:
        turn = int(context["turn"])
        plan = parse_plan(json.dumps(context["plan"]))
        reference = self._ctx.reference
        oracle = ReplayVerifier(self._ctx.bench, reference.dataset, reference.task_id)
        found = oracle.verify(history_by_turn(context["executed"], turn), turn, plan)
        if found is None or self._rng.random() >= self.profile.p_detect.get(_CATEGORY_OF_CHECK[found.check], 0.0):
            return json.dumps({"verdict": "accept"})
        return json.dumps(found.to_json(), sort_keys=True)

    def _executor(self, messages: tuple[Message, ...]) -> tuple[str | None, tuple[ModelToolCall, ...]]:
        opening = self._follow_turns(messages)
        text, calls = self._step(messages[-1])
        if opening is not None and calls:
            text = opening
        return text, calls

    def _follow_turns(self, messages: tuple[Message, ...]) -> str | None:
        """On a new user turn: move to its reference actions and read the plan it comes with.
        Returns the plan text the reply opens with under Prompt Planning."""
        users = [m for m in messages if m.role == "user"]
        turn = len(users) - 1
        if turn == self._turn:
            return None
        self._turn = turn
        self._cursor, self._end = self._turn_span(turn)
        self._pending_error = self._repairing = False
        self._plan, self._plan_pointer, self._own_plan = [], 0, False
        briefing = read_briefing(users[-1].content)
        if briefing is not None and briefing[0] in BINDING_STATUSES and briefing[1] is not None:
            self._plan = list(briefing[1].steps)
        elif PROMPT_PLANNING_INSTRUCTION in (messages[0].content or ""):
            draft = [self._draw(j, self._end, self.profile.p_error, self._rng) for j in range(self._cursor, self._end)]
            plan = self._plan_of(self._cursor, draft)[0]
            self._plan, self._own_plan = list(plan.steps), True
            return "Plan:\n" + "\n".join(
                f"{s.id}. {s.tool} {json.dumps(dict(s.arguments), sort_keys=True, default=repr)}" for s in plan.steps)
        return None

    def _step(self, last: Message) -> tuple[str | None, tuple[ModelToolCall, ...]]:
        p, rng = self.profile, self._rng
        if self._pending_error and last.role == "tool":
            self._pending_error = False
            if _REPORTS_ERROR.search(last.content or ""):
                if rng.random() >= p.p_recover:
                    self._cursor = self._end
                    return "I could not complete this request.", ()
                self._repairing = True
        if self._cursor >= self._end:
            return self._closing_text(), ()
        if self._plan_pointer < len(self._plan) and not self._repairing:
            step = self._plan[self._plan_pointer]
            self._plan_pointer += 1
            if self._own_plan or rng.random() < p.p_follow_plan:
                return None, (self._follow(step),)
        elif rng.random() < p.p_stop and not self._repairing:
            self._cursor = self._end
            return "Done.", ()
        self._repairing = False
        choice = self._draw(self._cursor, self._end, p.p_error, rng)
        if choice == OMIT:  # the setter is skipped; the guarded call comes next
            self._cursor += 1
            choice = None
        if choice is not None:
            self._pending_error = True
            return None, (self._call(choice.name or "", self._named(choice)),)
        call = self._ctx.actions[self._cursor][1]
        self._cursor += 1
        return None, (self._call(call.name or "", self._named(call)),)

    def _closing_text(self) -> str:
        """The reference's reply that ends this turn (a question to the user, a closing message),
        or "Done." where the reference has none (BFCL)."""
        turns = self._ctx.reference.turns
        texts = [s.text for s in turns[self._turn] if not s.calls and s.text] if self._turn < len(turns) else []
        return texts[-1] if texts else "Done."

    def _follow(self, step: PlanStep) -> ModelToolCall:
        """Take a plan step as written, keeping track of where it leaves the reference."""
        key = _canonical(step.tool, step.arguments)
        here = self._ctx.actions[self._cursor][1]
        if key == _canonical(here.name or "", self._named(here)):
            self._cursor += 1
        elif self._cursor + 1 < self._end and key == _canonical(
                self._ctx.actions[self._cursor + 1][1].name or "", self._named(self._ctx.actions[self._cursor + 1][1])):
            self._cursor += 2  # the plan left out the step here
        else:
            self._pending_error = True
        return self._call(step.tool, step.arguments)

    def _call(self, name: str, arguments: Mapping[str, Any]) -> ModelToolCall:
        return ModelToolCall(f"call_{self._rng.getrandbits(32):08x}", name,
                             json.dumps(dict(arguments), sort_keys=True, default=repr))


def simulated_backend(profile: SimulatedProfile, context: Context, seed: str, name: str = "simulated",
                      plan_seed: str | None = None) -> PolicyBackend:
    """One episode's simulated model as a backend (see :class:`SimulatedPolicy` for the seeds)."""
    return PolicyBackend(SimulatedPolicy(profile, context, seed, plan_seed), profile.latency, name,
                         {"profile": profile.name})
