"""Seeded mutation generator: inject one first failure of a chosen category into a reference rollout.

It is the checker's test oracle and, until real agents exist, a rollout source. Every operator
builds candidate injection sites from the benchmark's facts, then *confirms each candidate by
running it on a fresh environment* (the benchmark's own executor, not the checker's predicates):
the prefix must still be accepted, and the injected action must be rejected (state-consistency,
precondition) or accepted (information) as its category requires. The checker is then expected to
recover the injected depth and category on its own.

Operators by category:
  schema            unexposed/unknown tool, unknown argument name, wrong argument type
  dependency        fabricated identifier; stale identifier (delete the object first)
  precondition      drop the authentication/login action before a guarded call
  state_consistency replace an argument by another value visible in the task that the
                    environment rejects (the paper's "phone number as contact id")
  information       use a fact from a later user turn before the user has given it
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jsonschema

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.records import Rollout, Step, rollout_id_for
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.replay.contract import Benchmark, Outcome, TaskFacts, ToolSpec
from prefix_audit.replay.values import argument_values, mentions, scalars

# Each flat action: (turn, call).
FlatAction = tuple[int, ToolCall]


@dataclass(frozen=True)
class Injection:
    category: str
    operator: str
    depth: int  # 1-based index of the injected first failure
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "operator": self.operator, "depth": self.depth, "detail": self.detail}


@dataclass(frozen=True)
class Candidate:
    actions: tuple[FlatAction, ...]
    injection: Injection
    expect_accepted: bool  # what the environment must do with the injected action
    fact: Any = None  # information: the user fact used too early


def flatten(rollout: Rollout) -> list[FlatAction]:
    return [(t, call) for t, turn in enumerate(rollout.turns) for step in turn for call in step.calls]


def assemble(template: Rollout, actions: Sequence[FlatAction], model: str, method: str, rollout_id: str,
             meta: dict[str, Any]) -> Rollout:
    """Rebuild a rollout with one step per turn holding that turn's calls."""
    turns = tuple(
        (Step(tuple(c for turn, c in actions if turn == t)),) if any(turn == t for turn, _ in actions) else ()
        for t in range(len(template.turns)))
    return Rollout(template.dataset, template.task_id, model, method, rollout_id, turns, source="mutation", meta=meta)


def dry_run(bench: Benchmark, template: Rollout, actions: Sequence[FlatAction], upto: int) -> list[Outcome]:
    """Execute the first ``upto`` actions on a fresh session; the environment's verdicts."""
    session = bench.open_session(template)
    outcomes: list[Outcome] = []
    turn = -1
    for t, call in actions[:upto]:
        while turn < t:
            if turn >= 0:
                session.end_turn()
            turn += 1
            session.start_turn(turn)
        outcomes.append(session.execute(call))
    return outcomes


def _result_texts(outcomes: Sequence[Outcome]) -> list[str]:
    return [str(o.result) for o in outcomes if o.accepted]


# --- operators: each yields candidates for injection position j (0-based) ----------------------


@dataclass
class Context:
    bench: Benchmark
    reference: Rollout
    actions: list[FlatAction]
    facts: TaskFacts
    tools: dict[str, ToolSpec]
    exposed_by_turn: list[set[str]]
    rng: random.Random

    @cached_property
    def reference_outcomes(self) -> list[Outcome]:
        """The environment's verdict on each reference action; replayed only when an operator asks
        (a fresh environment per task is the expensive part of a context, e.g. τ's database)."""
        return dry_run(self.bench, self.reference, self.actions, len(self.actions))


def _with(ctx: Context, j: int, call: ToolCall) -> tuple[FlatAction, ...]:
    acts = list(ctx.actions)
    acts[j] = (acts[j][0], call)
    return tuple(acts)


def _kwargs_of(spec: ToolSpec, call: ToolCall) -> dict[str, Any]:
    bound = dict(zip(spec.positional_order, call.args, strict=False))
    bound.update(call.kwargs)
    return bound


def _target(ctx: Context, j: int) -> tuple[ToolCall, ToolSpec, dict[str, Any]] | None:
    """Action j's call, its spec, and its arguments by name (None for a tool the task lacks)."""
    call = ctx.actions[j][1]
    spec = ctx.tools.get(call.name or "")
    return None if spec is None else (call, spec, _kwargs_of(spec, call))


def _wrong_tool(ctx: Context, j: int) -> Iterator[Candidate]:
    turn, call = ctx.actions[j]
    hidden = sorted(set(ctx.tools) - ctx.exposed_by_turn[turn])
    foreign = sorted(set(ctx.bench.tool_universe()) - set(ctx.tools))
    options = []
    if hidden:
        options.append(("tool_not_exposed", ctx.rng.choice(hidden)))
    if foreign:
        options.append(("unknown_tool", ctx.rng.choice(foreign)))
    ctx.rng.shuffle(options)
    for op, name in options:
        yield Candidate(_with(ctx, j, ToolCall(name, (), dict(call.kwargs))),
                        Injection("schema", op, j + 1, f"{call.name} → {name}"), False)


def _unknown_argument(ctx: Context, j: int) -> Iterator[Candidate]:
    if (target := _target(ctx, j)) is not None:
        call, _, kwargs = target
        bogus = f"{next(iter(kwargs), 'arg')}_value"
        yield Candidate(_with(ctx, j, ToolCall(call.name, (), {**kwargs, bogus: "x"})),
                        Injection("schema", "unknown_argument", j + 1, f"added {bogus}"), False)


def _wrong_type(ctx: Context, j: int) -> Iterator[Candidate]:
    if (target := _target(ctx, j)) is None:
        return
    call, spec, kwargs = target
    props = spec.parameters.get("properties", {})
    typed = [p for p in kwargs if props.get(p, {}).get("type") in _WRONG_VALUE]
    if typed:
        p = ctx.rng.choice(typed)
        wrong = _WRONG_VALUE[props[p]["type"]]
        yield Candidate(_with(ctx, j, ToolCall(call.name, (), {**kwargs, p: wrong})),
                        Injection("schema", "wrong_type", j + 1, f"{p}: {props[p]['type']} ← {wrong!r}"), False)


def _outside_enum(ctx: Context, j: int) -> Iterator[Candidate]:
    if (target := _target(ctx, j)) is None:
        return
    call, spec, kwargs = target
    props = spec.parameters.get("properties", {})
    for p in sorted(p for p in kwargs if "enum" in props.get(p, {})):
        wrong = f"{props[p]['enum'][0]}_other"
        yield Candidate(_with(ctx, j, ToolCall(call.name, (), {**kwargs, p: wrong})),
                        Injection("schema", "outside_enum", j + 1, f"{p}={wrong!r}"), False)


_WRONG_VALUE = {"string": 404, "integer": "four", "number": "4.5", "boolean": "yes",
                "array": "not-a-list", "object": ["not", "an", "object"]}


def _fabricate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return 7_000_000 + rng.randrange(1_000_000)
    if isinstance(value, float):
        return 7_000_000.5 + rng.randrange(1_000_000)
    if isinstance(value, str):
        return f"{value}_{rng.randrange(16**6):06x}zq"
    return None


def _references(ctx: Context, j: int) -> list[tuple[ToolSpec, ToolCall, dict[str, Any], str]]:
    if (target := _target(ctx, j)) is None:
        return []
    call, spec, kwargs = target
    return [(spec, call, kwargs, p) for p in sorted(spec.reference_params & kwargs.keys())
            if isinstance(kwargs[p], (str, int, float)) and not isinstance(kwargs[p], bool)]


def _fabricated_reference(ctx: Context, j: int) -> Iterator[Candidate]:
    for _, call, kwargs, p in _references(ctx, j):
        fake = _fabricate(kwargs[p], ctx.rng)
        if fake is not None:
            yield Candidate(_with(ctx, j, ToolCall(call.name, (), {**kwargs, p: fake})),
                            Injection("dependency", "fabricated_reference", j + 1, f"{p}={fake!r}"), False)


def _stale_reference(ctx: Context, j: int) -> Iterator[Candidate]:
    turn = ctx.actions[j][0]
    for spec, call, kwargs, p in _references(ctx, j):
        deletion = ctx.bench.deletion_call(spec, p, kwargs[p])
        if deletion is not None:
            acts = list(ctx.actions)
            acts.insert(j, (turn, deletion))
            yield Candidate(tuple(acts), Injection("dependency", "stale_reference", j + 2,
                                                   f"{deletion.render()} before {call.render()}"), False)


def _precondition_ops(ctx: Context, j: int) -> Iterator[Candidate]:
    # Drop a setter at i < j whose first guarded use after it is action j — unless action j uses
    # something the setter returned (a token), which would make it a dependency failure instead.
    turn, call = ctx.actions[j]
    used = set(scalars(argument_values(call)))
    for setter, guarded in ctx.bench.precondition_guards().items():
        if call.name not in guarded:
            continue
        for i in range(j - 1, -1, -1):
            name = ctx.actions[i][1].name
            if name == setter:
                if any(ctx.actions[m][1].name in guarded for m in range(i + 1, j)):
                    break
                if used & set(scalars(ctx.reference_outcomes[i].result)):
                    break
                acts = list(ctx.actions)
                del acts[i]
                yield Candidate(tuple(acts), Injection("precondition", "skipped_setter", j,
                                                       f"dropped {setter} (action {i + 1})"), False)
                break


def _state_ops(ctx: Context, j: int) -> Iterator[Candidate]:
    if (target := _target(ctx, j)) is None:
        return
    call, spec, kwargs = target
    visible = sorted({v for v in ctx.facts.initial_values if isinstance(v, str) and 1 < len(v) <= 60})
    # Free-form strings only: a value outside a declared enum is a schema failure, not this one.
    props = spec.parameters.get("properties", {})
    params = [p for p, v in kwargs.items() if isinstance(v, str) and "enum" not in props.get(p, {})]
    ctx.rng.shuffle(params)
    for p in params:
        options = [v for v in visible if v != kwargs[p]]
        for value in ctx.rng.sample(options, min(4, len(options))):
            yield Candidate(_with(ctx, j, ToolCall(call.name, (), {**kwargs, p: value})),
                            Injection("state_consistency", "rejected_visible_value", j + 1, f"{p}={value!r}"),
                            False)


def _information_ops(ctx: Context, j: int) -> Iterator[Candidate]:
    turn, _ = ctx.actions[j]
    later = [c for _, c in ctx.actions[j:] if c.name in ctx.exposed_by_turn[turn]]
    ctx.rng.shuffle(later)
    for c in later:
        early = [v for v in scalars(argument_values(c)) if ctx.facts.user_facts.get(v, -1) > turn]
        if early:
            acts = list(ctx.actions)
            acts.insert(j, (turn, c))
            yield Candidate(tuple(acts), Injection("information", "fact_before_given", j + 1,
                                                   f"{c.render()} uses {early[0]!r} from turn "
                                                   f"{ctx.facts.user_facts[early[0]]}"), True, early[0])


OPERATORS: dict[str, tuple[Callable[[Context, int], Iterator[Candidate]], ...]] = {
    "schema": (_wrong_tool, _unknown_argument, _wrong_type, _outside_enum),
    "dependency": (_fabricated_reference, _stale_reference),
    "precondition": (_precondition_ops,),
    "state_consistency": (_state_ops,),
    "information": (_information_ops,),
}


def _confirmed(ctx: Context, cand: Candidate) -> bool:
    depth = cand.injection.depth
    outcomes = dry_run(ctx.bench, ctx.reference, cand.actions, depth)
    prefix, injected = outcomes[:-1], outcomes[-1]
    if not all(o.accepted for o in prefix):
        return False
    if cand.fact is not None and any(mentions(text, cand.fact) for text in _result_texts(prefix)):
        return False  # the "early" fact already surfaced in an earlier output
    return injected.accepted == cand.expect_accepted


def _valid_reference_prefix(ctx: Context) -> int:
    """How many leading reference actions are valid by the benchmark's declared rules: exposed in
    their turn, matching the declared argument schema, and accepted by the environment. Some gold
    data is not (BFCL miss_func_49 calls a withheld tool); an injection after that point could not
    be the first failure."""
    for k, ((turn, call), outcome) in enumerate(zip(ctx.actions, ctx.reference_outcomes, strict=True)):
        spec = ctx.tools.get(call.name or "")
        if spec is None or call.name not in ctx.exposed_by_turn[turn] or not outcome.accepted:
            return k
        if not jsonschema.Draft202012Validator(spec.parameters).is_valid(_kwargs_of(spec, call)):
            return k
    return len(ctx.actions)


def task_context(bench: Benchmark, task_id: str, rng: random.Random) -> Context:
    """Everything the operators need about one task: its reference actions, tools per turn,
    facts, and (replayed when first needed) the environment's verdict on each reference action."""
    reference = bench.reference_rollout(task_id)
    actions = flatten(reference)
    session = bench.open_session(reference)
    tools: dict[str, ToolSpec] = {}
    exposed_by_turn = []
    for t in range(len(reference.turns)):
        session.start_turn(t)
        exposed_by_turn.append(set(session.exposed_tools()))
        for name in session.exposed_tools():
            tools[name] = session.exposed_tools()[name]
    for name in bench.tool_universe():
        spec = session.known_tool(name)
        if spec is not None:
            tools.setdefault(name, spec)
    return Context(bench, reference, actions, session.facts, tools, exposed_by_turn, rng)


def candidates(ctx: Context, j: int, category: str) -> Iterator[Candidate]:
    """Unconfirmed injections of ``category`` at reference position j, operators in random order."""
    operators = list(OPERATORS[category])
    ctx.rng.shuffle(operators)
    return (c for op in operators for c in op(ctx, j))


def mutate(bench: Benchmark, task_id: str, category: str, rng: random.Random,
           depth: int | None = None, max_confirmations: int = 12) -> tuple[tuple[FlatAction, ...], Injection] | None:
    """One confirmed injection of ``category`` into the task's reference rollout, or None.

    With ``depth`` the injected failure must sit exactly there; without it positions are tried in
    random order, so depths spread over 1..T.
    """
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")
    ctx = task_context(bench, task_id, rng)
    positions = list(range(_valid_reference_prefix(ctx)))
    rng.shuffle(positions)
    if depth is not None:  # the operators that insert or drop an action land one off j + 1
        positions = [j for j in positions if abs(j + 1 - depth) <= 1]
    tries = 0
    for j in positions:
        for cand in candidates(ctx, j, category):
            if depth is not None and cand.injection.depth != depth:
                continue
            tries += 1
            if _confirmed(ctx, cand):
                return cand.actions, cand.injection
            if tries >= max_confirmations:
                return None
    return None


def mutated_rollout(bench: Benchmark, task_id: str, category: str, seed: int, model: str = "mutator",
                    method: str = "mutation", depth: int | None = None) -> Rollout | None:
    """The reference rollout of ``task_id`` with one confirmed ``category`` failure (at ``depth``
    when given), or None when the task offers no such site."""
    rng = random.Random(f"{seed}:{task_id}:{category}:{depth}")
    found = mutate(bench, task_id, category, rng, depth)
    if found is None:
        return None
    actions, injection = found
    reference = bench.reference_rollout(task_id)
    rid = rollout_id_for(reference.dataset, model, method, task_id, category, seed, depth)
    return assemble(reference, actions, model, method, rid, {"injected": injection.to_json(), "seed": seed})
