"""The simulated model: the offline default and a test double (SPEC §4).

A deterministic, seeded policy that knows the task's reference actions through a side channel
real backends never see, and deviates from them through an explicit error model. It answers the
same requests as a real backend (messages and tools in; text, tool calls and usage out) and runs
inside the same agent loops; everything downstream sees only the rollout it produces.

Error model, per executor step that still has a reference action to take:
  * with ``p_stop`` it ends the turn early (premature stopping);
  * otherwise, with ``p_error[c]`` for each category c, it emits a wrong action of that category,
    built by the mutation operators (``prefix_audit.sources.mutation``) at the current reference
    position — a precondition error skips the login/setter action instead;
  * otherwise it emits the next reference action.
After a wrong action whose observation reports an error it recovers (retries the reference
action) with ``p_recover`` and gives up on the turn otherwise.

Tokens are counted on the actual request and response text (a word/punctuation tokenizer);
latency follows the stated model ``latency_base_s + input · latency_per_input_token_s +
output · latency_per_output_token_s``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..checker import CATEGORIES
from ..records import Usage
from ..sources.mutation import Context, candidates
from .base import Message, ModelRequest, ModelResponse, ModelToolCall

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class SimulatedProfile:
    """A named stand-in for a model of some strength; every rate is a probability per step."""

    name: str
    p_error: Mapping[str, float] = field(default_factory=dict)
    p_stop: float = 0.0
    p_recover: float = 0.5
    latency_base_s: float = 0.3
    latency_per_input_token_s: float = 0.0002
    latency_per_output_token_s: float = 0.02

    def __post_init__(self) -> None:
        unknown = set(self.p_error) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"profile {self.name}: unknown error categories {sorted(unknown)}")
        rates = [*self.p_error.values(), self.p_stop, self.p_recover]
        if any(not 0.0 <= r <= 1.0 for r in rates) or sum(self.p_error.values()) + self.p_stop > 1.0:
            raise ValueError(f"profile {self.name}: rates must be probabilities whose per-step sum is at most 1")

    @classmethod
    def from_config(cls, name: str, settings: Mapping[str, object]) -> SimulatedProfile:
        return cls(name, dict(settings.get("p_error", {})), **{k: float(v) for k, v in settings.items()  # type: ignore[arg-type]
                                                               if k != "p_error"})


def _request_text(request: ModelRequest) -> str:
    parts = [m.content or "" for m in request.messages]
    parts += [c.name + c.arguments for m in request.messages for c in m.tool_calls]
    parts += [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters},
                         sort_keys=True) for t in request.tools]
    return "\n".join(parts)


class SimulatedBackend:
    """One episode's simulated model; holds the policy's position in the reference."""

    def __init__(self, profile: SimulatedProfile, context: Context, seed: str, name: str = "simulated") -> None:
        self.name = name
        self.profile = profile
        self._ctx = context
        self._rng = random.Random(seed)
        context.rng = random.Random(f"{seed}:operators")
        self._turn = -1
        self._cursor = 0
        self._end = 0
        self._pending_error = False
        self._setters = frozenset(context.bench.precondition_guards())

    async def aclose(self) -> None:
        return None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.role != "executor":
            raise ValueError(f"the simulated model answers executor calls only, not {request.role!r} "
                             "(planner and verifier behaviour arrive with the planning methods)")
        self._follow_turns(request.messages)
        text, calls = self._step(request.messages[-1])
        out_text = (text or "") + "".join(c.name + c.arguments for c in calls)
        tokens_in, tokens_out = count_tokens(_request_text(request)), max(1, count_tokens(out_text))
        p = self.profile
        latency = p.latency_base_s + tokens_in * p.latency_per_input_token_s + tokens_out * p.latency_per_output_token_s
        usage = Usage(request.role, tokens_in, tokens_out, round(latency, 6))
        return ModelResponse(text, calls, usage, {"profile": p.name}, False,
                             "tool_calls" if calls else "stop")

    def _follow_turns(self, messages: tuple[Message, ...]) -> None:
        turn = sum(1 for m in messages if m.role == "user") - 1
        if turn != self._turn:  # a new user turn: move to its reference actions, drop what was left
            self._turn = turn
            indices = [k for k, (t, _) in enumerate(self._ctx.actions) if t == turn]
            self._cursor, self._end = (indices[0], indices[-1] + 1) if indices else (0, 0)
            self._pending_error = False

    def _step(self, last: Message) -> tuple[str | None, tuple[ModelToolCall, ...]]:
        p, rng = self.profile, self._rng
        if self._pending_error and last.role == "tool":
            self._pending_error = False
            if "error" in (last.content or "").lower() and rng.random() >= p.p_recover:
                self._cursor = self._end
                return "I could not complete this request.", ()
        if self._cursor >= self._end:
            return "Done.", ()
        draw = rng.random()
        if draw < p.p_stop:
            self._cursor = self._end
            return "Done.", ()
        draw -= p.p_stop
        for category in CATEGORIES:
            rate = p.p_error.get(category, 0.0)
            if draw < rate:
                wrong = self._wrong_action(category)
                if wrong is not None:
                    return None, (wrong,)
                break
            draw -= rate
        return None, (self._emit(self._ctx.actions[self._cursor][1]),)

    def _wrong_action(self, category: str) -> ModelToolCall | None:
        j = self._cursor
        if category == "precondition":
            # Skipping the login/setter makes the next guarded call fail its precondition.
            if self._ctx.actions[j][1].name in self._setters and j + 1 < self._end:
                self._cursor += 1
                return self._emit(self._ctx.actions[self._cursor][1])
            return None
        for cand in candidates(self._ctx, j, category):
            if cand.injection.operator == "skipped_setter":
                continue
            self._pending_error = True
            call = cand.actions[j][1]
            return ModelToolCall(f"call_{self._rng.getrandbits(32):08x}", call.name or "",
                                 json.dumps(call.kwargs, sort_keys=True, default=repr))
        return None

    def _emit(self, call) -> ModelToolCall:
        self._cursor += 1
        spec = self._ctx.tools.get(call.name or "")
        named = dict(zip(spec.positional_order, call.args)) if spec else {}
        named.update(call.kwargs)
        return ModelToolCall(f"call_{self._rng.getrandbits(32):08x}", call.name or "",
                             json.dumps(named, sort_keys=True, default=repr))
