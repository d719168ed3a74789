"""The generic replay checker (docs/definitions.md#v_j): V_j per action, FED, first-failure taxonomy.

It knows nothing about any benchmark. Per action it evaluates every applicable predicate in the
replayed state — schema, dependency, precondition, state-consistency (the benchmark's own verdict
on the transition), information — and names one primary cause by the priority
schema → dependency → precondition → state-consistency → information.

Replay of the *prefix* stops at the first failure; the session still executes the rest of the
observed rollout, because final success Y is defined on the full rollout.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import jsonschema

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import DEFECT, DEFINITION, DESIGN
from prefix_audit.core.records import Action, Rollout, Step, actions_of, without_action
from prefix_audit.core.taxonomy import PRIORITY

from .attribution import AGENT, Attribution, GoldFailure, as_gold_fails, attribute, same_answer
from .contract import (
    Benchmark,
    Outcome,
    PartyCall,
    ReplaySession,
    TaskFacts,
    ToolSpec,
    UnscorableRollout,
)
from .values import argument_values, fold, in_other_words, number_tokens, scalars


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
    attribution: Attribution | None = None  # whose error a failing action is (None: it did not fail)
    given_as: tuple[str, ...] = ()  # argument values found given in other words, and how (Availability.given)
    read_only: bool = False  # a call of a tool that changes no state (ToolSpec.read_only)
    known_tool: bool = True  # the call names a tool of the task (False: no such tool in this environment)


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
    # The first failure attributed to the agent (T + 1 when none is; None with FED): FED <= FED_agent.
    FED_agent: int | None = None
    user_source: str = "benchmark"  # who wrote user_texts (TaskFacts.user_source)

    @property
    def first_failure(self) -> ActionVerdict | None:
        return self._failure_at(self.FED)

    @property
    def agent_failure(self) -> ActionVerdict | None:
        """The first failure attributed to the agent (:mod:`.attribution`)."""
        return self._failure_at(self.FED_agent)

    def _failure_at(self, depth: int | None) -> ActionVerdict | None:
        if depth is None or self.T is None:
            return None
        return self.verdicts[depth - 1] if depth <= self.T else None

    @property
    def category(self) -> str | None:
        ff = self.first_failure
        return primary(ff.failures).category if ff else None


def primary(failures: tuple[Failure, ...] | list[Failure]) -> Failure:
    return min(failures, key=lambda f: PRIORITY[f.category])


# --- values the agent has available -------------------------------------------------------------


class Availability:
    """Values available to the agent so far: the visible initial state, the user's messages up to
    the current turn, and the arguments and outputs of accepted actions — verbatim, or in other words
    that keep the value's meaning (:meth:`given`)."""

    def __init__(self, facts: TaskFacts) -> None:
        self.facts = facts
        self._values: set[Any] = set(facts.initial_values) | set(facts.always_available)
        self._joined = ""  # all available text, NUL-separated, for substring look-ups
        self._folded = ""  # the same, folded (values.fold), for the readings in other words: made when
        self._folded_upto = 0  # first needed, from _joined up to here (most values are found verbatim)
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

    def verbatim(self, value: Any) -> bool:
        if value in self._values:
            return True
        if isinstance(value, str):
            return bool(value) and value in self._joined
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) in self._numbers
        return False

    def given(self, value: Any, reference: bool = False) -> str | None:
        """How ``value`` is available: ``""`` verbatim, else the reading that finds it in other words — an
        id's prefix the benchmark's records carry, and for a value that is not a ``reference`` (an id,
        which people write as it is) the readings of :func:`~.values.in_other_words`; None when it is
        not available."""
        if self.verbatim(value):
            return ""
        if isinstance(value, str):
            for prefix in self.facts.id_prefixes:
                if value.startswith(prefix) and len(value) > len(prefix) + 1 and self.verbatim(value[len(prefix):]):
                    return f"an id's prefix the benchmark's records carry ({prefix!r})"
        return None if reference else in_other_words(value, self.folded())

    def folded(self) -> str:
        """All available text folded (:func:`~.values.fold`), brought up to date with what was added."""
        if self._folded_upto < len(self._joined):
            self._folded += fold(self._joined[self._folded_upto:])
            self._folded_upto = len(self._joined)
        return self._folded

    def available(self, value: Any) -> bool:
        return self.given(value) is not None

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
    bound = dict(zip(spec.positional_order, call.args, strict=False))
    for key, value in call.kwargs.items():
        if key in bound:
            failures.append(Failure("schema", "duplicate_argument", f"{spec.name}: multiple values for '{key}'"))
        bound[key] = value
    validator = _validator_for(_schema_key(spec))
    for err in sorted(validator.iter_errors(bound), key=lambda e: (list(e.absolute_path), e.message)):
        code = _SCHEMA_CODES.get(str(err.validator), "argument_type" if err.validator == "type" else "argument_value")
        where = ".".join(map(str, err.absolute_path))
        failures.append(Failure("schema", code, f"{spec.name}{'.' + where if where else ''}: {err.message}"))
    for param, check in spec.validators.items():
        if param in bound:
            message = check(bound[param])
            if message:
                failures.append(Failure("schema", "validator", f"{spec.name}.{param}: {message}"))
    return bound, failures


def dependency_failures(spec: ToolSpec, bound: Mapping[str, Any], avail: Availability,
                        session: ReplaySession, given_as: list[str] | None = None) -> list[Failure]:
    """Dependency failures of a call's reference arguments; ``given_as`` collects those found given in
    other words, and how."""
    failures = []
    for param in sorted(spec.reference_params & bound.keys()):
        for value in scalars(bound[param]):
            how = avail.given(value, reference=True)
            if how and given_as is not None:
                given_as.append(f"{spec.name}.{param}={value!r}: {how}")
            if how is None:
                if avail.facts.user_facts.get(value) is None:
                    failures.append(Failure("dependency", "missing_reference",
                                            f"{spec.name}.{param}={value!r} never appeared in the prompt, "
                                            f"the initial state or an earlier output"))
            elif session.is_stale(spec, param, value):
                failures.append(Failure("dependency", "stale_reference",
                                        f"{spec.name}.{param}={value!r} refers to an object that no longer exists"))
    return failures


def information_failures(name: str, arguments: Any, avail: Availability,
                         given_as: list[str] | None = None) -> list[Failure]:
    """The information failure of a call using user facts before the user gave them; ``given_as``
    collects the facts found given in other words, and how."""
    facts = [v for v in scalars(arguments) if (avail.facts.user_facts.get(v) or 0) > avail.turn]
    if given_as is not None:
        given_as += [f"{name}: {v!r}: {how}" for v in facts if (how := avail.given(v))]
    early = sorted({repr(v) for v in facts if avail.not_yet_given(v)})
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
    fed: int | None = None  # the first failure (the paper's FED)
    # The first failure attributed to the agent. Until it is found, actions after ``fed`` are still
    # judged (their V stays unevaluated: the paper's prefix replay has stopped).
    agent_fed: int | None = None
    last_outcome: Outcome | None = None  # the benchmark's raw outcome of the latest checked call
    unknown_calls: int = 0  # calls with an empty name or one the task does not know
    # The task's gold's own failures, looked up when a failure needs them (None: not compared).
    gold: Callable[[], Sequence[GoldFailure]] | None = None

    def _run(self, action: Action, call: ToolCall) -> Outcome | None:
        """The benchmark's outcome of a well-formed call: executed on the live state, or — when the
        log shows the call never ran — judged on a scratch copy (None where the session cannot)."""
        if action.recorded is not None and not action.recorded.executed:
            return self.session.dry_execute(call)
        return self.session.execute(call)

    def check_call(self, action: Action) -> None:
        call = action.call
        assert call is not None
        if not call.name or self.session.known_tool(call.name) is None:
            self.unknown_calls += 1
        if self.agent_fed is not None:
            outcome = self._run(action, call) if call.well_formed else None
            known = self.session.known_tool(call.name) if call.name else None
            self.verdicts.append(replace(_verdict(action, None, (), outcome),
                                         read_only=known is not None and known.read_only, known_tool=known is not None))
            return
        failures: list[Failure] = []
        outcome = None
        bound: dict[str, Any] = {}
        spec: ToolSpec | None = None
        given_as: list[str] = []
        if not call.well_formed or call.name is None:  # (a well-formed call has a name)
            failures.append(Failure("schema", "unparseable_call", call.parse_error or "no tool name"))
        else:
            spec = self.session.exposed_tools().get(call.name)
            if spec is None:
                known = self.session.known_tool(call.name)
                code, why = ("tool_not_exposed", "is not exposed in this turn") if known \
                    else ("unknown_tool", "is not a tool of this task")
                failures.append(Failure("schema", code, f"{call.name} {why}"))
                spec = known
            if spec is not None:
                bound, schema = bind_arguments(spec, call)
                failures += schema
                failures += dependency_failures(spec, bound, self.avail, self.session, given_as)
            schema_ok = not any(f.category == "schema" for f in failures)
            if schema_ok and spec is not None:  # state predicates apply to well-formed calls only (of a known tool)
                failures += [Failure("precondition", "precondition", p)
                             for p in self.session.preconditions(spec, bound)]
            failures += information_failures(call.name, argument_values(call), self.avail, given_as)
            outcome = self._run(action, call)
            self.last_outcome = outcome
            if schema_ok and outcome is not None and not outcome.accepted:
                failures.append(Failure("state_consistency", "rejected_transition",
                                        f"{call.name}: {outcome.error or 'rejected by the environment'}"))
        self._record(action, failures, outcome, self._attribution(failures, spec, bound, outcome, call),
                     tuple(given_as), spec is not None and spec.read_only, spec is not None)
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
        if self.agent_fed is None and not outcome.accepted:
            failures.append(Failure("state_consistency", "rejected_completion",
                                    outcome.error or "the benchmark does not allow ending here without a tool call"))
        if self.agent_fed is not None:
            self.verdicts.append(_verdict(action, None, (), outcome))
        else:
            self._record(action, failures, outcome, self._attribution(failures, None, {}, outcome))

    def _attribution(self, failures: list[Failure], spec: ToolSpec | None, bound: Mapping[str, Any],
                     outcome: Outcome | None, call: ToolCall | None = None) -> Attribution | None:
        """Whose error a failing action is: the user's (:func:`~.attribution.attribute`), else where the
        task's gold fails the same way the user's or the benchmark's (:func:`~.attribution.as_gold_fails`),
        else the agent's."""
        if not failures:
            return None
        found = attribute(spec, bound, {f.category for f in failures}, outcome,
                          self.avail.facts.user_texts[:self.avail.turn + 1], self.session.holds)
        if found.origin == AGENT and call is not None and call.well_formed and self.gold is not None:
            return as_gold_fails(call, primary(failures).code, outcome, self.gold()) or found
        return found

    def _record(self, action: Action, failures: list[Failure], outcome: Outcome | None,
                attribution: Attribution | None, given_as: tuple[str, ...] = (), read_only: bool = False,
                known_tool: bool = True) -> None:
        ordered = tuple(sorted(failures, key=lambda f: PRIORITY[f.category]))
        valid = not failures if self.fed is None else None  # V is not evaluated after the first failure
        self.verdicts.append(replace(_verdict(action, valid, ordered, outcome), attribution=attribution,
                                     given_as=given_as, read_only=read_only, known_tool=known_tool))
        if failures and self.fed is None:
            self.fed = action.index
        if attribution is not None and attribution.origin == AGENT:
            self.agent_fed = action.index


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


def replay(rollout: Rollout, benchmark: Benchmark, *, with_gold: bool = True) -> EpisodeResult:
    """Replay one rollout on a fresh session; FED, all verdicts, and Y. An infrastructure failure
    (``rollout.infra_error``) opens no session: T and FED are None, Y the benchmark's score of it.
    ``with_gold``: compare failing actions with the task's gold's own failures (attribution's
    ``benchmark`` origin); the gold's own replay does not."""
    if not benchmark.has_task(rollout.task_id):
        raise UnscorableRollout.unknown_task(rollout)
    if rollout.infra_error is not None:
        return EpisodeResult(rollout, None, None, benchmark.infra_error_success(rollout), (),
                             f"infrastructure failure: {rollout.infra_error}")
    session = benchmark.open_session(rollout)
    gold = _gold_failures_of(benchmark, rollout) if with_gold else None
    run = _Replay(session, Availability(session.facts), gold=gold)
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
    fed_agent = run.agent_fed if run.agent_fed is not None else T + 1
    return EpisodeResult(rollout, T, fed, y, tuple(run.verdicts), session.y_detail, run.unknown_calls,
                         tuple(session.party_calls), tuple(session.facts.user_texts), fed_agent,
                         session.facts.user_source)


_GOLD_CACHE: weakref.WeakKeyDictionary[Benchmark, dict[tuple[str, str | None], tuple[GoldFailure, ...]]] = \
    weakref.WeakKeyDictionary()


def gold_failures(gold: EpisodeResult, benchmark: Benchmark | None = None) -> tuple[GoldFailure, ...]:
    """The failures of a task's gold replay, each with its intent — one decision, read by benchmark
    health (``gold_fails``, ``gold_not_prefix_executable``) and by attribution
    (:func:`~.attribution.as_gold_fails`):

    * a call the benchmark rejected because the environment has no such tool is a *defect* (the task's
      data and the benchmark's code disagree on the tool list: no agent is given that tool);
    * a call the benchmark rejected is *designed* where the gold recovers: it is a look-up (a value that
      names nothing changes no state — the scenario's wrong email, zip or order id), or the gold goes on
      with an accepted call (a later call of the same tool supersedes it, or the gold turns to another
      way: a hand-off, a second look-up); it is a *defect* where the gold ends on it — its write fails and
      nothing after it is accepted, so the reward expects the state without the write the task asks for;
    * a function the task withholds in the turn the gold calls it (a rule the benchmark enforces for
      agents: the model is not given it) is a *defect* where the gold without that call no longer scores
      1 (replayed on ``benchmark``; without one, assumed) — an agent cannot pass the task as the
      benchmark runs it; where it still scores 1 the call was not needed, and it is the audit's
      *definition* only.

    A gold failing the audit's other predicates is a property of the audit's definitions, not of the
    task: not listed."""
    out = []
    for i, v in enumerate(gold.verdicts):
        call = v.action.call
        if call is None or not call.well_formed:
            continue
        where = f"turn {v.action.turn + 1}, action {v.action.index}: {call.render()}"
        if v.accepted is False:
            # the later accepted calls, each with its action's index
            accepted = [(w.action.index, w.action.call) for w in gold.verdicts[i + 1:]
                        if w.action.call is not None and w.accepted]
            later = next(iter(accepted), None)
            same = next(((index, c) for index, c in accepted if c.name == call.name), None)
            if not v.known_tool:
                intent, why = DEFECT, (f"the gold calls {call.name}, a tool this environment does not have: the task's "
                                       f"data and the benchmark's code disagree on the tool list")
            elif same is not None and not v.read_only:
                intent, why = DESIGN, (f"superseded: the gold makes the call again, accepted, at action "
                                       f"{same[0]}: {same[1].render()}")
            elif later is not None:
                kind = "a look-up the scenario's information fails" if v.read_only else "a failed attempt"
                intent, why = DESIGN, f"{kind}; the gold recovers with action {later[0]}: {later[1].render()}"
            elif v.read_only:
                intent, why = DESIGN, "a look-up that names nothing changes no state; the gold ends on the answer"
            else:
                intent, why = DEFECT, ("the gold ends on it and nothing after it is accepted: the reward expects the "
                                       "state without the write the task asks for")
            out.append(GoldFailure(call.render(), call.name or "", "rejected_transition", same_answer(v.result),
                                   where, v.action.index, intent, why))
        if any(f.code == "tool_not_exposed" for f in v.failures):
            intent, why = DEFECT, f"the task withholds {call.name} in the turn its gold calls it"
            if benchmark is not None:
                without = replay(without_action(gold.rollout, v.action), benchmark, with_gold=False)
                if without.Y == 1:
                    intent, why = DEFINITION, f"{why}, and the gold scores 1 without the call"
                else:
                    why = f"{why}, and the gold without it scores {without.Y} ({without.y_detail or 'no detail'})"
            out.append(GoldFailure(call.render(), call.name or "", "tool_not_exposed", None, where, v.action.index,
                                   intent, why))
    return tuple(out)


def _gold_failures_of(benchmark: Benchmark, rollout: Rollout) -> Callable[[], tuple[GoldFailure, ...]]:
    """The gold failures of ``rollout``'s task, replayed when first asked for (once per benchmark, task
    and release)."""

    def load() -> tuple[GoldFailure, ...]:
        key = (rollout.task_id, benchmark.release_of(rollout))
        cache = _GOLD_CACHE.setdefault(benchmark, {})
        if key not in cache:
            try:
                gold = benchmark.gold_rollout(rollout)
                cache[key] = () if gold is None else gold_failures(replay(gold, benchmark, with_gold=False), benchmark)
            except Exception:  # noqa: BLE001 -- a gold that cannot be replayed is no comparison
                cache[key] = ()  # and the failure stays the agent's
        return cache[key]

    return load


class DryRun:
    """Judge proposed calls one at a time with the replay predicates, on a fresh copy of the state
    a live episode has reached; the live environment is never touched (the deterministic
    verifier, docs/definitions.md#agents).

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
        self._run.fed = self._run.agent_fed = None
        self._run.last_outcome = None
        self._run.check_call(Action(self._index, self._turn, self._index - 1, call))
        return self._run.verdicts[-1], self._run.last_outcome
