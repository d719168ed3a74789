"""The generic replay checker (SPEC §2): V_j per action, FED, first-failure taxonomy.

It knows nothing about any benchmark. Per action it evaluates every applicable predicate in the
replayed state — schema, dependency, precondition, state-consistency (the benchmark's own verdict
on the transition), information — and names one primary cause by the priority
schema → dependency → precondition → state-consistency → information.

Replay of the *prefix* stops at the first failure; the session still executes the rest of the
observed rollout, because final success Y is defined on the full rollout.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jsonschema

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import Action, Rollout, Step, actions_of
from prefix_audit.core.taxonomy import PRIORITY

from .contract import Benchmark, Outcome, PartyCall, ReplaySession, TaskFacts, ToolSpec, UnscorableRollout


@dataclass(frozen=True)
class Failure:
    """One failing predicate: its category, a stable code, and a human-readable detail."""

    category: str
    code: str
    detail: str


@dataclass(frozen=True)
class ActionVerdict:
    action: Action
    valid: bool | None  # None: after the first failure, where V_j is not evaluated
    failures: tuple[Failure, ...]
    accepted: bool | None  # the benchmark's verdict on the transition (None: not judged at all)
    result: str | None = None
    logged: str | None = None  # the benchmark's own log text of the outcome (what a recorded result is compared with)
    executed: bool = False  # the call changed the live state (False: not run, or judged on a scratch copy)
    volatile: tuple[tuple[str, Any, str], ...] = ()  # fields of ``logged`` not compared (Outcome.volatile)


@dataclass(frozen=True)
class EpisodeResult:
    rollout: Rollout
    T: int | None  # None (with FED): an infrastructure failure, no observed action
    FED: int | None
    Y: int | None
    verdicts: tuple[ActionVerdict, ...]
    y_detail: str | None = None
    unknown_tool_calls: int = 0  # calls (anywhere in the rollout) with an empty name or one the task does not know
    party_calls: tuple[PartyCall, ...] = ()  # another party's calls the session replayed (never actions)
    user_texts: tuple[str, ...] = ()  # the user's message of each turn, as the benchmark has it (TaskFacts)

    @property
    def first_failure(self) -> ActionVerdict | None:
        if self.FED is None or self.T is None:
            return None
        return self.verdicts[self.FED - 1] if self.FED <= self.T else None

    @property
    def category(self) -> str | None:
        ff = self.first_failure
        return primary(ff.failures).category if ff else None


def primary(failures: tuple[Failure, ...] | list[Failure]) -> Failure:
    return min(failures, key=lambda f: PRIORITY[f.category])


# --- values the agent has available -------------------------------------------------------------


def scalars(obj: Any) -> Iterator[Any]:
    """Every str/int/float leaf of a nested value: dict keys, list items and the attributes of
    plain objects (environment state is often a tree of objects). Bools and None are skipped;
    shared or cyclic structures are visited once."""
    stack = [obj]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, (str, int)):
            yield item
        elif isinstance(item, float):
            if math.isfinite(item):
                yield item
        elif id(item) in seen:
            continue
        elif isinstance(item, Mapping):
            seen.add(id(item))
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend(item)
        elif hasattr(item, "__dict__") and not callable(item):
            seen.add(id(item))
            stack.extend(v for v in vars(item).values() if not callable(v))


def argument_values(call: ToolCall) -> list[Any]:
    """The argument values of a call (positional and keyword), without the parameter names."""
    return [*call.args, *call.kwargs.values()]


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")


def number_tokens(text: str) -> set[float]:
    """The numbers written in a text as whole tokens ("2" in "order 2", not in "2024-05-01")."""
    return {float(tok) for tok in _NUMBER.findall(text)}


def mentions(text: str, value: Any) -> bool:
    """Whether a text states ``value``: a substring for strings, a whole number token for numbers."""
    if isinstance(value, str):
        return value in text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) in number_tokens(text)
    return False


class Availability:
    """Values available to the agent so far: the visible initial state, the user's messages up to
    the current turn, and the arguments and outputs of accepted actions."""

    def __init__(self, facts: TaskFacts) -> None:
        self.facts = facts
        self._values: set[Any] = set(facts.initial_values) | set(facts.always_available)
        self._joined = ""  # all available text, NUL-separated, for substring look-ups
        self._numbers: set[float] = set()  # numbers written in that text
        self.turn = -1

    def reveal_turn(self, turn: int) -> None:
        self.turn = turn
        if turn < len(self.facts.user_texts) and self.facts.user_texts[turn]:
            self._add_text(self.facts.user_texts[turn])

    def _add_text(self, text: str) -> None:
        self._joined += "\x00" + text
        self._numbers |= number_tokens(text)

    def add_value(self, value: Any) -> None:
        for v in scalars(value):
            self._values.add(v)
            if isinstance(v, str) and len(v) > 2:
                self._add_text(v)

    def available(self, value: Any) -> bool:
        if value in self._values:
            return True
        if isinstance(value, str):
            return bool(value) and value in self._joined
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) in self._numbers
        return False

    def not_yet_given(self, value: Any) -> bool:
        """A user fact that the user only gives in a later turn and is not otherwise available."""
        reveal = self.facts.user_facts.get(value)
        return reveal is not None and reveal > self.turn and not self.available(value)


# --- the predicates -------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _validator_for(schema_json: str) -> jsonschema.protocols.Validator:
    import json

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _schema_key(spec: ToolSpec) -> str:
    import json

    return json.dumps(spec.parameters, sort_keys=True)


_SCHEMA_CODES = {"required": "missing_argument", "additionalProperties": "unknown_argument"}


def bind_arguments(spec: ToolSpec, call: ToolCall) -> tuple[dict[str, Any], list[Failure]]:
    """Bind positional and keyword arguments to the declared interface and validate them."""
    failures: list[Failure] = []
    if len(call.args) > len(spec.positional_order):
        failures.append(Failure("schema", "too_many_positional",
                                f"{spec.name} takes {len(spec.positional_order)} positional arguments, "
                                f"got {len(call.args)}"))
    bound = dict(zip(spec.positional_order, call.args))
    for key, value in call.kwargs.items():
        if key in bound:
            failures.append(Failure("schema", "duplicate_argument", f"{spec.name}: multiple values for '{key}'"))
        bound[key] = value
    validator = _validator_for(_schema_key(spec))
    for err in sorted(validator.iter_errors(bound), key=lambda e: (list(e.absolute_path), e.message)):
        code = _SCHEMA_CODES.get(err.validator, "argument_type" if err.validator == "type" else "argument_value")
        where = ".".join(map(str, err.absolute_path))
        failures.append(Failure("schema", code, f"{spec.name}{'.' + where if where else ''}: {err.message}"))
    for param, check in spec.validators.items():
        if param in bound:
            message = check(bound[param])
            if message:
                failures.append(Failure("schema", "validator", f"{spec.name}.{param}: {message}"))
    return bound, failures


def dependency_failures(spec: ToolSpec, bound: Mapping[str, Any], avail: Availability,
                        session: ReplaySession) -> list[Failure]:
    failures = []
    for param in sorted(spec.reference_params & bound.keys()):
        for value in scalars(bound[param]):
            if not avail.available(value):
                if avail.facts.user_facts.get(value) is None:
                    failures.append(Failure("dependency", "missing_reference",
                                            f"{spec.name}.{param}={value!r} never appeared in the prompt, "
                                            f"the initial state or an earlier output"))
            elif session.is_stale(spec, param, value):
                failures.append(Failure("dependency", "stale_reference",
                                        f"{spec.name}.{param}={value!r} refers to an object that no longer exists"))
    return failures


def information_failures(name: str, arguments: Any, avail: Availability) -> list[Failure]:
    early = sorted({repr(v) for v in scalars(arguments) if avail.not_yet_given(v)})
    if not early:
        return []
    return [Failure("information", "fact_not_yet_given",
                    f"{name} uses {', '.join(early)} before the user gave it")]


# --- replay -------------------------------------------------------------------------------------


@dataclass
class _Replay:
    session: ReplaySession
    avail: Availability
    verdicts: list[ActionVerdict] = field(default_factory=list)
    fed: int | None = None
    last_outcome: Outcome | None = None  # the benchmark's raw outcome of the latest checked call
    unknown_calls: int = 0  # calls with an empty name or one the task does not know

    def _run(self, action: Action, call: ToolCall) -> Outcome | None:
        """The benchmark's outcome of a well-formed call: executed on the live state, or — when the
        log shows the call never ran — judged on a scratch copy (None where the session cannot)."""
        if action.recorded is not None and not action.recorded.executed:
            dry_execute = getattr(self.session, "dry_execute", None)
            return dry_execute(call) if dry_execute is not None else None
        return self.session.execute(call)

    def check_call(self, action: Action) -> None:
        call = action.call
        assert call is not None
        if not call.name or self.session.known_tool(call.name) is None:
            self.unknown_calls += 1
        if self.fed is not None:
            outcome = self._run(action, call) if call.well_formed else None
            self.verdicts.append(_verdict(action, None, (), outcome))
            return
        failures: list[Failure] = []
        outcome: Outcome | None = None
        bound: dict[str, Any] = {}
        if not call.well_formed:
            failures.append(Failure("schema", "unparseable_call", call.parse_error or "no tool name"))
        else:
            spec = self.session.exposed_tools().get(call.name)
            if spec is None:
                known = self.session.known_tool(call.name)
                code, why = ("tool_not_exposed", "is not exposed in this turn") if known else ("unknown_tool", "is not a tool of this task")
                failures.append(Failure("schema", code, f"{call.name} {why}"))
                spec = known
            if spec is not None:
                bound, schema = bind_arguments(spec, call)
                failures += schema
                failures += dependency_failures(spec, bound, self.avail, self.session)
            schema_ok = not any(f.category == "schema" for f in failures)
            if schema_ok:  # state predicates apply to well-formed calls only
                failures += [Failure("precondition", "precondition", p)
                             for p in self.session.preconditions(spec, bound)]
            failures += information_failures(call.name, argument_values(call), self.avail)
            outcome = self._run(action, call)
            self.last_outcome = outcome
            if schema_ok and outcome is not None and not outcome.accepted:
                failures.append(Failure("state_consistency", "rejected_transition",
                                        f"{call.name}: {outcome.error or 'rejected by the environment'}"))
        self._record(action, failures, outcome)
        if not failures and outcome is not None and outcome.executed:  # a call that never ran revealed nothing
            self.avail.add_value(list(bound.values()))
            self.avail.add_value(outcome.result)

    def absorb(self, call: ToolCall) -> None:
        """Bring state and availability up to date with a call already executed live, unjudged."""
        outcome = self.session.execute(call) if call.well_formed else None
        if outcome is not None and outcome.accepted:
            self.avail.add_value(argument_values(call))
            self.avail.add_value(outcome.result)

    def check_terminal(self, action: Action) -> None:
        outcome = self.session.complete()
        failures = []
        if self.fed is None and not outcome.accepted:
            failures.append(Failure("state_consistency", "rejected_completion",
                                    outcome.error or "the benchmark does not allow ending here without a tool call"))
        if self.fed is not None:
            self.verdicts.append(_verdict(action, None, (), outcome))
        else:
            self._record(action, failures, outcome)

    def _record(self, action: Action, failures: list[Failure], outcome: Outcome | None) -> None:
        ordered = tuple(sorted(failures, key=lambda f: PRIORITY[f.category]))
        self.verdicts.append(_verdict(action, not failures, ordered, outcome))
        if failures:
            self.fed = action.index


def _verdict(action: Action, valid: bool | None, failures: tuple[Failure, ...],
             outcome: Outcome | None) -> ActionVerdict:
    if outcome is None:
        return ActionVerdict(action, valid, failures, None)
    text = _text(outcome)
    return ActionVerdict(action, valid, failures, outcome.accepted, text,
                         outcome.logged if outcome.logged is not None else text,
                         outcome.executed and not action.terminal, outcome.volatile)


def _text(outcome: Outcome | None) -> str | None:
    if outcome is None:
        return None
    return outcome.error if not outcome.accepted and outcome.error else (
        None if outcome.result is None else str(outcome.result))


def replay(rollout: Rollout, benchmark: Benchmark) -> EpisodeResult:
    """Replay one rollout on a fresh session; FED, all verdicts, and Y. An infrastructure failure
    (``rollout.infra_error``) opens no session: T and FED are None, Y the benchmark's score of it."""
    if not benchmark.has_task(rollout.task_id):
        raise UnscorableRollout.unknown_task(rollout)
    if rollout.infra_error is not None:
        return EpisodeResult(rollout, None, None, benchmark.infra_error_success(rollout), (),
                             f"infrastructure failure: {rollout.infra_error}")
    session = benchmark.open_session(rollout)
    run = _Replay(session, Availability(session.facts))
    actions = actions_of(rollout)
    pending = iter(actions)
    action = next(pending, None)
    for t in range(max(len(rollout.turns), 1)):  # a log with no turn still has its empty action
        session.start_turn(t)
        run.avail.reveal_turn(t)
        while action is not None and action.turn == t:
            if action.terminal:
                run.check_terminal(action)
            else:
                run.check_call(action)
            action = next(pending, None)
        session.end_turn()
    T = len(actions)
    y = session.final_success()
    fed = run.fed if run.fed is not None else T + 1
    return EpisodeResult(rollout, T, fed, y, tuple(run.verdicts), session.y_detail, run.unknown_calls,
                         tuple(getattr(session, "party_calls", ())), tuple(session.facts.user_texts))


class DryRun:
    """Judge proposed calls one at a time with the replay predicates, on a fresh copy of the state
    a live episode has reached; the live environment is never touched (SPEC §4: deterministic
    verifier).

    ``history`` holds the calls already executed, one sequence per user turn up to and including
    ``turn``; they are re-executed unjudged, so a failure earlier in the episode does not stop the
    judgement of what is proposed now.
    """

    def __init__(self, benchmark: Benchmark, dataset: str, task_id: str,
                 history: Sequence[Sequence[ToolCall]], turn: int) -> None:
        turns = tuple((Step(tuple(history[t]) if t < len(history) else ()),) for t in range(turn + 1))
        session = benchmark.open_session(Rollout(dataset, task_id, "dry-run", "dry-run", "dry-run", turns))
        self._run = _Replay(session, Availability(session.facts))
        for t in range(turn + 1):
            session.start_turn(t)
            self._run.avail.reveal_turn(t)
            for call in history[t] if t < len(history) else ():
                self._run.absorb(call)
            if t < turn:
                session.end_turn()
        self._turn = turn
        self._index = 0

    def check(self, call: ToolCall) -> tuple[ActionVerdict, Outcome | None]:
        """The verdict on ``call`` after every call checked before it (failed ones included), and
        the benchmark's raw outcome (None when the call could not be executed at all)."""
        self._index += 1
        self._run.fed = None
        self._run.last_outcome = None
        self._run.check_call(Action(self._index, self._turn, self._index - 1, call))
        return self._run.verdicts[-1], self._run.last_outcome
