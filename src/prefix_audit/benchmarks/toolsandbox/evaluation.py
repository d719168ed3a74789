"""Final success in the ToolSandbox way: ordered milestones, minefields, and a similarity in [0, 1].

A scenario lists *milestones*, targets the trajectory must reach in order, and *minefields*,
targets it must never reach. A target is either a tool trace (an accepted call of a tool whose
arguments match) or a database state (a row matching some fields exists, or no such row exists).
As in ToolSandbox:

* each milestone is matched to a position of the trajectory (the state right after an accepted
  call, or that call's trace), positions strictly increasing with the milestone order, so as to
  maximise the summed milestone similarity; the milestone similarity is that sum over the number of
  milestones (1.0 when there are none);
* tables no milestone constrains act as guardrails: a milestone only matches where they still
  equal their starting contents (an unwanted deletion or message spoils the match). ToolSandbox
  guards each milestone against its reference snapshot (the start, for its state milestones) and
  its predecessor's, leaving out only the tables that milestone or those constrain; guarding every
  milestone against the start is our simplification for chains;
* a minefield is hit by any *attempted* call matching its trace (accepted or not: ToolSandbox's
  minefields are "this tool must never be called"), or any reached state matching it;
* a call to a tool outside the scenario's allow list aborts a ToolSandbox scenario, similarity 0.

The similarity is 0 when a minefield was hit or the scenario aborted, the milestone similarity
otherwise. Y = 1 iff every milestone matched with similarity exactly 1, in order, no minefield was
hit and nothing aborted. The detail names each milestone short of similarity 1 in the best in-order
matching: the similarity it got there and at which executed call, or, unmatched, the best any call
reaches. Per-field similarities are 0/1 except free text, scored with a
longest-common-word-subsequence F-measure (a ROUGE-L stand-in) that is 1 only for equal words.
ToolSandbox's milestone DAGs and custom similarity functions are not modelled: milestones form a
chain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .text import lcs_f1
from .utilities import canonical_unit
from .world import TABLES, World


@dataclass(frozen=True)
class Expect:
    """An expected value: ``exact``, ``close`` (numbers, absolute tolerance ``tol``), ``text``
    (case and punctuation ignored, graded by word overlap) or ``unit`` (same unit, any spelling)."""

    value: Any
    kind: str = "exact"
    tol: float = 1e-6

    def similarity(self, actual: Any) -> float:
        if self.kind == "text":
            return lcs_f1(self.value, actual) if isinstance(actual, str) else 0.0
        if self.kind == "close":
            ok = (isinstance(actual, (int, float)) and not isinstance(actual, bool)
                  and math.isclose(actual, self.value, rel_tol=0.0, abs_tol=self.tol))
            return float(ok)
        if self.kind == "unit":
            return float(isinstance(actual, str) and canonical_unit(actual) == canonical_unit(self.value))
        return float(type(actual) is type(self.value) and actual == self.value)


def exact(value: Any) -> Expect:
    return Expect(value)


def close(value: float, tol: float = 1e-6) -> Expect:
    return Expect(value, "close", tol)


def text(value: str) -> Expect:
    return Expect(value, "text")


def unit(value: str) -> Expect:
    return Expect(value, "unit")


Fields = tuple[tuple[str, Expect], ...]


def _fields_similarity(fields: Fields, values: Mapping[str, Any]) -> float:
    if not fields:
        return 1.0
    return sum(expect.similarity(values.get(name)) if name in values else 0.0 for name, expect in fields) / len(fields)


@dataclass(frozen=True)
class TraceTarget:
    tool: str
    arguments: Fields = ()

    def describe(self) -> str:
        return f"{self.tool}({', '.join(f'{k}={e.value!r}' for k, e in self.arguments)})"


@dataclass(frozen=True)
class StateTarget:
    table: str
    fields: Fields
    present: bool = True

    def __post_init__(self) -> None:
        if self.table not in TABLES:
            raise ValueError(f"unknown table {self.table!r}")

    def similarity(self, world: World) -> float:
        rows = world.table(self.table)
        best = max((_fields_similarity(self.fields, row) for row in rows), default=0.0)
        return best if self.present else float(best < 1.0)

    def describe(self) -> str:
        what = ", ".join(f"{k}={e.value!r}" for k, e in self.fields)
        return f"{self.table} {'has' if self.present else 'lacks'} a row with {what}"


Target = TraceTarget | StateTarget


@dataclass(frozen=True)
class Position:
    """One executed call of the trajectory: its tool, bound arguments, verdict and the world after."""

    tool: str | None
    arguments: Mapping[str, Any]
    accepted: bool
    world: World


@dataclass(frozen=True)
class Evaluation:
    success: bool
    similarity: float
    milestone_similarity: float
    matched: int
    milestones: int
    minefield: str | None
    aborted: str | None
    shortfalls: tuple[str, ...] = ()  # each milestone short of similarity 1 in the best in-order matching

    def detail(self) -> str:
        parts = [f"milestones {self.matched}/{self.milestones} matched in order",
                 f"milestone similarity {self.milestone_similarity:.4f}", f"similarity {self.similarity:.4f}",
                 *self.shortfalls]
        if self.minefield:
            parts.append(f"minefield hit: {self.minefield}")
        if self.aborted:
            parts.append(f"aborted: {self.aborted}")
        return "; ".join(parts)


def _trace_similarity(target: TraceTarget, position: Position) -> float:
    if position.tool != target.tool:
        return 0.0
    return _fields_similarity(target.arguments, position.arguments)


def _milestone_similarity(target: Target, position: Position, start: World, guarded: Sequence[str]) -> float:
    if not position.accepted:
        return 0.0
    if any(position.world.table(t) != start.table(t) for t in guarded):
        return 0.0
    if isinstance(target, TraceTarget):
        return _trace_similarity(target, position)
    return target.similarity(position.world)


def _chain_table(similarity: list[list[float]]) -> list[list[tuple[float, int]]]:
    """``best[i][p]``: (summed similarity, exact matches) of the best in-order matching of the first
    ``i`` milestones to positions before ``p`` (a milestone may stay unmatched at 0)."""
    m, n = len(similarity), len(similarity[0]) if similarity else 0
    # best[i][p]: (sum, exact matches) for the first i milestones using positions < p
    best = [[(0.0, 0)] * (n + 1)] + [[(0.0, 0)] * (n + 1) for _ in range(m)]
    for i in range(1, m + 1):
        for p in range(1, n + 1):
            s = similarity[i - 1][p - 1]
            take = (best[i - 1][p - 1][0] + s, best[i - 1][p - 1][1] + (s == 1.0))
            best[i][p] = max(best[i][p - 1], best[i - 1][p], take)
    return best


def _best_chain(similarity: list[list[float]]) -> tuple[float, int]:
    """Max summed similarity of milestones matched to strictly increasing positions (a milestone
    may stay unmatched at 0), and how many milestones are matched with similarity 1 in that best
    assignment."""
    return _chain_table(similarity)[-1][-1]


def _assignment(similarity: list[list[float]]) -> list[int | None]:
    """Per milestone, the position the best in-order matching gives it (None: left unmatched)."""
    best = _chain_table(similarity)
    i, p = len(similarity), len(best[0]) - 1
    out: list[int | None] = [None] * i
    while i > 0 and p > 0:
        if best[i][p] == best[i][p - 1]:
            p -= 1
        elif best[i][p] == best[i - 1][p]:
            i -= 1
        else:
            out[i - 1] = p - 1
            i, p = i - 1, p - 1
    return out


def _shortfalls(milestones: Sequence[Target], similarity: list[list[float]],
                trajectory: Sequence[Position]) -> tuple[str, ...]:
    """Each milestone below 1 in the best in-order matching, said with its similarity and call (1-based
    over the executed calls), or — unmatched — the best similarity any call reaches, out of order."""
    out = []
    for k, (target, at) in enumerate(zip(milestones, _assignment(similarity), strict=True)):
        row = similarity[k]
        if at is not None and row[at] == 1.0:
            continue
        kind = "tool trace" if isinstance(target, TraceTarget) else "database state"
        head = f"milestone {k + 1} of {len(milestones)} ({kind}: {target.describe()})"
        if at is not None:
            out.append(f"{head}: best {row[at]:.4f} at call {at + 1} ({trajectory[at].tool})")
            continue
        top = max(range(len(row)), key=row.__getitem__, default=None)
        if top is None or row[top] == 0.0:
            out.append(f"{head}: unmatched, no call reaches it")
        else:
            out.append(f"{head}: unmatched, best {row[top]:.4f} at call {top + 1} ({trajectory[top].tool}) "
                       f"out of order")
    return tuple(out)


def evaluate(milestones: Sequence[Target], minefields: Sequence[Target], start: World,
             trajectory: Sequence[Position], aborted: str | None) -> Evaluation:
    guarded = [t for t in TABLES if not any(isinstance(m, StateTarget) and m.table == t for m in milestones)]
    table = [[_milestone_similarity(m, pos, start, guarded) for pos in trajectory] for m in milestones]
    total, matched = _best_chain(table) if milestones else (0.0, 0)
    shortfalls = _shortfalls(milestones, table, trajectory) if matched < len(milestones) else ()
    milestone_similarity = total / len(milestones) if milestones else 1.0
    hit = None
    for mine in minefields:
        if isinstance(mine, TraceTarget):
            found = any(_trace_similarity(mine, pos) == 1.0 for pos in trajectory)
        else:
            found = any(pos.accepted and mine.similarity(pos.world) == 1.0 for pos in trajectory)
        if found:
            hit = mine.describe()
            break
    success = matched == len(milestones) and hit is None and aborted is None
    similarity = 0.0 if hit or aborted else milestone_similarity
    return Evaluation(success, similarity, milestone_similarity, matched, len(milestones), hit, aborted, shortfalls)
