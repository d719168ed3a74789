"""Benchmark health of the native ToolSandbox scenarios (docs/definitions.md#health), on the sandbox's own executor and
evaluator.

Per scenario (:class:`ToolSandboxProbe`, run by :func:`prefix_audit.replay.health.probe_findings`):

* the gold is the scenario's reference rollout, replayed and scored as any rollout is
  (:mod:`.adapter`, :mod:`.evaluation`); the replay is the benchmark here, so ``confirm`` adds nothing;
* the *checked state* is the four databases (``contacts``, ``messages``, ``reminders``, ``settings``)
  after each executed call: what database-state milestones and minefields match, and what the guard
  compares for tables no state milestone constrains. Tool-trace milestones and minefields read the
  calls themselves (tool and arguments), not the state;
* a *write* is a reference call that, executed after the reference calls before it on a fresh
  sandbox, changes a table of that state (found by running it, not from the tools' names);
* ``gold_no_effect``: no reference call is a write, so the state history is the start throughout;
  the evidence says what the scenario is scored on instead (its tool-trace milestones, or its
  minefields alone);
* the idle agent answers each user turn with a reply and no call. An insufficient-information scenario
  scored by minefields alone passes it: whether its reference declines outright or looks something up
  first, the scenario cannot tell a considered refusal from an ignored request (``passes_doing_nothing``,
  the class of τ's refusal tasks; the evidence says which);
* the required actions are the writes, each left out once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from prefix_audit.plugin import (
    Benchmark,
    Counterfactual,
    EpisodeResult,
    Finding,
    Rollout,
    Step,
    call_text,
    rollout_id_for,
    without_action,
)

from .evaluation import StateTarget, TraceTarget
from .sandbox import Sandbox
from .scenarios import Scenario
from .world import ID_COLUMNS, TABLES, World, starting_world

HEALTH_MODEL = "health"
IDLE_REPLY = "I won't make any tool call for this request."
MAX_LISTED = 4


def world_changes(before: World, after: World) -> list[tuple[str, str]]:
    """What differs between two states of the checked databases, as (table, change) — row by row,
    settings field by field."""
    out: list[tuple[str, str]] = []
    for name in TABLES:
        old, new = before.table(name), after.table(name)
        if old == new:
            continue
        if name == "settings":
            out += [(name, f"sets settings.{k} {old[0].get(k)!r} → {new[0].get(k)!r}")
                    for k in sorted(old[0].keys() | new[0].keys()) if old[0].get(k) != new[0].get(k)]
            continue
        column = ID_COLUMNS[name]
        was, now = {r[column]: r for r in old}, {r[column]: r for r in new}
        said = len(out)
        out += [(name, f"adds {name} row {k}") for k in now if k not in was]
        out += [(name, f"removes {name} row {k}") for k in was if k not in now]
        out += [(name, f"changes {name} row {k} ({', '.join(sorted(f for f in now[k] if now[k][f] != was[k].get(f)))})")
                for k in now if k in was and now[k] != was[k]]
        if len(out) == said:
            out.append((name, f"reorders {name}"))
    return out


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


class ToolSandboxProbe:
    """One scenario, as :func:`~prefix_audit.replay.health.probe_findings` reads it."""

    def __init__(self, bench: Benchmark, scenario: Scenario) -> None:
        self.benchmark = bench
        self.scenario = scenario
        self.calls = [c for turn in scenario.reference for c in turn]

    @cached_property
    def effects(self) -> dict[int, list[tuple[str, str]]]:
        """Per reference call (by its depth), what it changed in the checked state, run after the
        reference calls before it on a fresh sandbox (empty: a read, or a call the sandbox rejected)."""
        sandbox = Sandbox(self.scenario)
        out = {}
        for depth, call in enumerate(self.calls, 1):
            before = sandbox.world
            sandbox.execute(call)
            out[depth] = world_changes(before, sandbox.world)
        return out

    @property
    def writes(self) -> list[int]:
        return [depth for depth, changes in self.effects.items() if changes]

    def gold(self) -> Rollout:
        return self.benchmark.reference_rollout(self.scenario.id)

    def idle(self) -> Counterfactual:
        turns = len(self.scenario.user_turns)
        rollout = Rollout(self.benchmark.dataset, self.scenario.id, HEALTH_MODEL, "idle",
                          rollout_id_for(self.benchmark.dataset, HEALTH_MODEL, "idle", self.scenario.id),
                          ((Step((), IDLE_REPLY),),) * turns, source="reference")
        s = self.scenario
        cause = ("it has no milestone: it is scored by its minefields alone, which an agent that calls no tool "
                 "cannot hit" if not s.milestones else "its milestones hold without a call")
        if self.calls:
            first = _listed([c.name or "?" for c in self.calls])
            cause += f"; what the reference does first ({first}) is checked by nothing"
        elif s.reference_reply is not None:
            cause += ("; the reference declines without a call too, so the scenario cannot tell its refusal from an "
                      "agent that ignores the request")
        return Counterfactual(f"an agent that answers each of the {turns} user turn(s) with a reply and no call",
                              rollout, cause)

    def _readers(self, tables: Sequence[str]) -> list[str]:
        return [t.describe() for t in (*self.scenario.milestones, *self.scenario.minefields)
                if isinstance(t, StateTarget) and t.table in tables]

    def without_required(self, gold: EpisodeResult) -> list[Counterfactual]:
        out = []
        for verdict in gold.verdicts:
            action = verdict.action
            changes = self.effects.get(action.index) if action.call is not None else None
            if not changes or verdict.accepted is not True:
                continue
            tables = [t for t in TABLES if any(table == t for table, _ in changes)]
            readers = self._readers(tables)
            cause = (f"the database-state milestones and minefields on {', '.join(tables)} ({_listed(readers)}) "
                     f"are met the same without it" if readers else
                     f"no database-state milestone or minefield reads {', '.join(tables)}")
            said = [text for _, text in changes]
            out.append(Counterfactual(f"the reference without {call_text(action)} (a write: it {_listed(said)})",
                                      without_action(gold.rollout, action), cause))
        return out

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        if self.writes:
            return None
        s = self.scenario
        checked = ("the checked state (the contacts, messages, reminders and settings databases, which "
                   "database-state milestones and minefields match and the guard compares)")
        head = (f"none of the reference's {len(self.calls)} call(s) ({_listed([c.name or '?' for c in self.calls])}) "
                f"changes {checked}" if self.calls else f"the reference makes no call: {checked} stays as it starts")
        traces = [m.describe() for m in s.milestones if isinstance(m, TraceTarget)]
        states = [m for m in s.milestones if isinstance(m, StateTarget)]
        mines = [m.describe() for m in s.minefields]
        if states:
            start = starting_world(s.settings, s.id)
            held = [m.describe() for m in states if m.similarity(start) == 1.0]
            unmet = [m.describe() for m in states if m.similarity(start) != 1.0]
            how = "; ".join(
                ([f"its database-state milestone(s) ({_listed(held)}) already hold at the start"] if held else [])
                + ([f"its database-state milestone(s) ({_listed(unmet)}) are never reached"] if unmet else []))
        elif traces:
            how = (f"it is scored by its {len(traces)} tool-trace milestone(s) ({_listed(traces)}) — which calls, "
                   f"with which arguments — and no database-state milestone")
        else:
            how = "it has no milestone: it is scored by its minefields alone (" + (
                f"never: {_listed(mines)})" if mines else
                "it has none either: any trajectory that does not abort scores 1)")
        if not self.calls and s.reference_reply is not None:
            how += f"; its reference declines without a call ({s.reference_reply!r})"
        return f"{head}; {how}"

    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        return ""  # Y is the sandbox's own evaluation: the replay is the benchmark here

    def own_findings(self, gold: EpisodeResult) -> list[Finding]:
        return []
