"""The one protocol every benchmark adapter implements.

The replay checker is generic; an adapter supplies only facts and an executor:
which tools are exposed in each turn and their declared interface (:class:`ToolSpec`), which
parameters are references and which values count as user facts (:class:`TaskFacts`), the
explicit state preconditions, staleness of a referenced value, and an executor on a fresh state
that reports whether the benchmark accepted each transition. Final success Y is the benchmark's
own definition, computed by the session on the full observed rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..calls import ToolCall
from ..records import Rollout

# A registered argument validator: returns an error message, or None when the value is valid.
Validator = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool's declared interface as the benchmark exposes it."""

    name: str
    parameters: Mapping[str, Any]  # JSON Schema of the argument object
    description: str = ""
    positional_order: tuple[str, ...] = ()  # how positional arguments bind, in order
    reference_params: frozenset[str] = frozenset()  # values that must name an existing object
    validators: Mapping[str, Validator] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """What the benchmark did with one transition."""

    accepted: bool
    result: Any = None
    error: str | None = None


@dataclass(frozen=True)
class TaskFacts:
    """Per-task knowledge the information and dependency predicates need.

    ``initial_values``: scalars visible in the initial state (available from the start).
    ``user_texts``: the user's message text per turn (empty string when the turn has none).
    ``user_facts``: task information value → the turn in which the user first gives it.
    ``always_available``: constants any action may use (e.g. ``'..'`` for a parent directory).
    """

    initial_values: frozenset[Any]
    user_texts: tuple[str, ...]
    user_facts: Mapping[Any, int]
    always_available: frozenset[Any] = frozenset()


class ReplaySession(Protocol):
    """Fresh, isolated state for one rollout of one task."""

    facts: TaskFacts

    def start_turn(self, turn: int) -> None:
        """Enter user turn ``turn`` (0-based); exposure and user facts follow it."""

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        """Tools the agent may call in the current turn."""

    def known_tool(self, name: str) -> ToolSpec | None:
        """The spec of any tool of this task, exposed now or not (None when unknown)."""

    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        """Explicit state preconditions that fail in the current state (before execution)."""

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        """Whether ``value`` referred to an object that has since been deleted."""

    def execute(self, call: ToolCall) -> Outcome:
        """Execute one parsed call on the live state, as the benchmark would."""

    def complete(self) -> Outcome:
        """The terminal no-tool action: may the episode end here without a tool call?"""

    def end_turn(self) -> None:
        """Leave the current turn (benchmarks with per-turn checks evaluate them here)."""

    def final_success(self) -> int | None:
        """Y on the full observed rollout (None when the benchmark cannot decide it)."""


class Benchmark(Protocol):
    """A dataset adapter: task lookup and fresh sessions."""

    dataset: str

    def task_ids(self) -> Sequence[str]: ...

    def has_task(self, task_id: str) -> bool: ...

    def open_session(self, rollout: Rollout) -> ReplaySession:
        """A fresh session for the rollout's task; raises KeyError for an unknown task."""
