"""The contract between the generic machinery and every benchmark adapter (docs/definitions.md#v_j,
docs/definitions.md#health).

The replay checker, scoring, the agent loops and the rollout sources know benchmarks only through
this module; a benchmark package implements it and registers itself
(:mod:`prefix_audit.replay.registry`).

An adapter (:class:`Benchmark`) supplies facts and executors, never judgements: the tools exposed in
each turn and their declared interface (:class:`ToolSpec`), which parameters are references and
which values are user facts (:class:`TaskFacts`), the explicit state preconditions, staleness of a
referenced value, and a fresh state per rollout (:class:`ReplaySession`) whose executor reports
whether the benchmark accepted each transition. Final success Y is the benchmark's own definition,
computed by the session on the full observed rollout.

Beyond replay an adapter may offer optional capabilities (:data:`CAPABILITIES`), each a group of
methods of :class:`Benchmark` whose defaults raise :class:`MissingCapability`. A capability is
declared by implementing all its methods; a block that needs one the dataset lacks is skipped with
that reason (:func:`capabilities_of`), and one implemented in part is said when the benchmark registers
(:func:`incomplete_capabilities`). A session derives from :class:`ReplaySession`, whose optional methods
have defaults.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from prefix_audit.core.calls import ToolCall
from prefix_audit.core.health import Finding
from prefix_audit.core.records import RecordedResult, Rollout, Usage
from prefix_audit.core.taxonomy import CATEGORIES, PRIORITY
from prefix_audit.models.base import ModelBackend, ToolSchema

__all__ = ["CAPABILITIES", "CATEGORIES", "PRIORITY", "USER_SOURCES", "AgentEnvironment", "Benchmark",
           "Conversation", "MissingCapability", "Outcome", "PartyCall", "ReplaySession", "ScriptedEnvironment",
           "TaskFacts", "TaskIndex", "TaskSample", "ToolSpec", "UnknownDataset", "UnscorableRollout", "Validator",
           "capabilities_of", "incomplete_capabilities", "unreadable_call_observation"]

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
    # Facts for attribution (:mod:`prefix_audit.replay.attribution`): the call changes no state (the
    # benchmark's own read/write marking), and the arguments whose values name what it looks up or acts on.
    read_only: bool = False
    identifying_params: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Outcome:
    """What the benchmark did with one transition.

    ``logged``: the text the benchmark's own runner writes in its log for this transition (its tool
    message), where that differs from ``str(result)`` or ``error`` — what a recorded result is
    compared with. ``executed``: False when the call was judged on a scratch copy of the state and
    the live state did not change (the benchmark's runner, or the log, shows it never ran).
    ``missing``: the benchmark rejected the call because a value it was given names nothing — no such
    record, or none that matches (the benchmark's own error says so; attribution reads it).
    ``harness``: the benchmark's own harness failed to run a well-formed call — its environment never
    judged it (ToolSandbox writing a call id that is no Python name into the code it runs); the failure
    is the benchmark's (attribution).
    ``volatile``: fields of the logged result that the benchmark's own run does not fix, left out
    when a recorded result is compared with it: ``(key, value, field)`` — in every object of the
    result whose ``key`` is ``value``, ``field`` (BFCL: the mentions of a tweet posted without any,
    which BFCL's run shares between entries).
    """

    accepted: bool
    result: Any = None
    error: str | None = None
    logged: str | None = None
    executed: bool = True
    volatile: tuple[tuple[str, Any, str], ...] = ()
    missing: bool = False
    harness: bool = False


@dataclass(frozen=True)
class PartyCall:
    """A call another party than the agent made and the log records (τ² telecom's user, on their
    own phone), as the session replayed it: a transition of the environment that replay applies in
    the log's order and checks against the log, never one of the agent's actions — it counts in
    neither T nor FED (docs/definitions.md#actions).

    ``turn``: the user turn it came before (the party acts while it holds the floor, so before the
    agent's steps of that turn; the rollout's number of turns: after the last); ``result``: the
    benchmark's rendering of the outcome; ``recorded``: what the log recorded (None: nothing)."""

    party: str
    turn: int
    call: ToolCall
    accepted: bool
    result: str
    recorded: RecordedResult | None = None


# Who wrote the user's messages of a rollout (:attr:`TaskFacts.user_source`): the benchmark's own text
# (BFCL's questions, a scenario's scripted turns), a simulated user as the rollout recorded it (an LLM
# playing the user in a τ or ToolSandbox log; this package's scripted or model user in a generated τ
# conversation), or the scripted user of this package's reference conversation of a τ task (a rollout
# that recorded no user messages is read against it).
USER_SOURCES = ("benchmark", "simulated", "reference")


@dataclass(frozen=True)
class TaskFacts:
    """Per-task knowledge the information and dependency predicates need.

    ``initial_values``: scalars visible in the initial state (available from the start).
    ``user_texts``: the user's message text per turn (empty string when the turn has none).
    ``user_facts``: task information value → the turn in which the user first gives it.
    ``always_available``: constants any action may use (e.g. ``'..'`` for a parent directory).
    ``id_prefixes``: prefixes the benchmark's own records put before an id that people write without it
    (τ retail's ``#`` of ``#W4284542``): a value with one is given where the rest of it is.
    ``user_source``: who wrote ``user_texts`` (:data:`USER_SOURCES`), for whoever reads them beside the
    agent's actions.
    """

    initial_values: frozenset[Any]
    user_texts: tuple[str, ...]
    user_facts: Mapping[Any, int]
    always_available: frozenset[Any] = frozenset()
    id_prefixes: tuple[str, ...] = ()
    user_source: str = "benchmark"

    def __post_init__(self) -> None:
        if self.user_source not in USER_SOURCES:
            raise ValueError(f"user_source must be one of {', '.join(USER_SOURCES)}, not {self.user_source!r}")


class UnknownDataset(KeyError):
    """No benchmark is registered for a dataset id."""


class UnscorableRollout(ValueError):
    """A rollout that is well-formed JSON but cannot be scored against its task. ``cause``: what is
    wrong without what names the rollout, for the summaries that count quarantined records by cause
    (None: the message names no rollout, so it is the cause)."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause

    @classmethod
    def unknown_task(cls, rollout: Rollout) -> UnscorableRollout:
        return cls(f"unknown task_id {rollout.task_id!r} for dataset {rollout.dataset!r}",
                   f"unknown task_id for dataset {rollout.dataset!r}")


class MissingCapability(NotImplementedError):
    """An optional capability the benchmark does not offer (see :data:`CAPABILITIES`)."""


class ReplaySession(ABC):
    """Fresh, isolated state for one rollout of one task: the base every benchmark's session derives from.

    A subclass sets ``facts`` and implements the four abstract methods — what the agent sees
    (:meth:`exposed_tools`), what the benchmark does with a call (:meth:`execute`) and Y
    (:meth:`final_success`); everything else has a default that fits a benchmark without that
    feature, said in its docstring, and is overridden where the benchmark has it. The checker calls
    them in this order: per user turn :meth:`start_turn`, then per action :meth:`known_tool`,
    :meth:`preconditions`, :meth:`is_stale`, :meth:`execute` (or :meth:`dry_execute`) or
    :meth:`complete`, then :meth:`end_turn`; at the end :meth:`final_success`, then ``y_detail`` and
    ``party_calls`` are read.
    """

    facts: TaskFacts
    y_detail: str | None = None  # how Y was decided; read after :meth:`final_success`
    # The calls of another party the session replayed (a benchmark whose user acts on the environment,
    # τ² telecom's), read after :meth:`final_success`: the log check compares their recorded results as
    # it does the agent's. None replayed: the default.
    party_calls: Sequence[PartyCall] = ()

    def start_turn(self, turn: int) -> None:  # noqa: B027 - a hook a benchmark may leave as it is: not abstract
        """Enter user turn ``turn`` (0-based); exposure and user facts follow it. Default: nothing changes
        between turns."""

    @abstractmethod
    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        """Tools the agent may call in the current turn, by name."""

    def known_tool(self, name: str) -> ToolSpec | None:
        """The spec of any tool of this task, exposed now or not (None when unknown). Default: the
        exposed tools are all the task has."""
        return self.exposed_tools().get(name)

    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        """Explicit state preconditions that fail in the current state (before execution). Default:
        the benchmark states none."""
        return []

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        """Whether ``value`` referred to an object that has since been deleted. Default: never (the
        benchmark deletes nothing)."""
        return False

    @abstractmethod
    def execute(self, call: ToolCall) -> Outcome:
        """Execute one parsed call on the live state, as the benchmark would."""

    def dry_execute(self, call: ToolCall) -> Outcome | None:
        """The benchmark's verdict on ``call`` from a scratch copy of the state, leaving the live state
        as it was (``executed=False``): for a call the log shows never ran. Default: None — such a
        call's state-consistency stays unjudged."""
        return None

    def complete(self) -> Outcome:
        """The terminal no-tool action: may the episode end here without a tool call? Default: yes
        (the benchmark lets the agent answer in text whenever it likes)."""
        return Outcome(True)

    def end_turn(self) -> None:  # noqa: B027 - a hook a benchmark may leave as it is: not abstract
        """Leave the current turn (benchmarks with per-turn checks evaluate them here). Default: no
        per-turn check."""

    @abstractmethod
    def final_success(self) -> int | None:
        """Y on the full observed rollout (None when the benchmark cannot decide it); sets ``y_detail``."""

    def holds(self, values: Sequence[Any]) -> bool | None:
        """Whether one object of the current state holds every one of ``values``, compared as the
        benchmark compares them, or a look-up of the benchmark's own finds the one value (attribution:
        a value the user gave that the benchmark holds is the agent's to find). Default: None — the
        state cannot be searched, and no look-up is attributed to the user."""
        return None


# --- what an agent loop sees ------------------------------------------------------------------


class AgentEnvironment(Protocol):
    """A live environment for generating a rollout: scoring never uses it, it replays the record."""

    task_id: str

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        """The tools offered to the model in ``turn``."""

    def execute(self, call: ToolCall) -> str:
        """Run one call on the live state; the observation text the model sees. A call that could
        not be read comes here too (the benchmark may count it, as τ counts tool errors); answer it
        with :func:`unreadable_call_observation`."""


class ScriptedEnvironment(AgentEnvironment, Protocol):
    """An environment whose user turns are fixed (BFCL, ToolSandbox)."""

    def turn_count(self) -> int: ...

    def user_message(self, turn: int) -> str:
        """What the user says at the start of ``turn`` (the benchmark's wording for empty turns)."""


def unreadable_call_observation(call: ToolCall) -> str:
    """What the model is told of a tool call that could not be read: nothing was executed."""
    return f"Error: the tool call could not be read: {call.parse_error or 'no tool name'}"


class Conversation(Protocol):
    """The user's side of one episode: scripted turns, or a user simulator answering the agent's
    closing reply of each turn (τ-bench's half-duplex protocol)."""

    system_prompt: str | None  # the benchmark's instructions for the agent (a domain policy), if any
    opening: str | None  # what the agent says before the user's first message, if anything

    async def next_user_message(self, agent_reply: str | None) -> str | None:
        """The user's message opening the next turn, given the agent's closing reply of the last
        one (None before the first turn); None when the conversation is over."""

    def limit_reached(self, steps: int) -> str | None:
        """A termination reason when the episode must stop now, else None. Asked whenever the next
        message would go to the agent or the user: after each batch of tool results and after each
        turn (``steps``: messages and tool-result batches so far)."""

    def meta(self, termination: str | None) -> dict[str, Any]:
        """What the rollout record must carry about the conversation; ``termination`` is why the
        episode stopped early (``max_steps`` when a turn used up its tool actions), None if it did not."""

    def usage(self) -> tuple[Usage, ...]:
        """Accounting of user-simulator calls (never agent cost)."""


# --- the adapter --------------------------------------------------------------------------------


class TaskIndex(Sequence[str]):
    """A dataset's task ids in their order, with constant-time membership."""

    def __init__(self, task_ids: Sequence[str]) -> None:
        self._ids = tuple(task_ids)
        self._members = frozenset(self._ids)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._ids[index]

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._members


@dataclass(frozen=True)
class TaskSample:
    """A seeded task sample and the provenance that tells samples apart (the data it came from)."""

    task_ids: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)


# Optional capability → the Benchmark methods that make it up, and what it serves.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    # the task's ground truth as a rollout: the reference block, and the reference the simulated
    # model and the mutation generator deviate from
    "reference": ("reference_rollout",),
    # facts for the mutation operators: the mutation block and the simulated model's wrong actions
    "mutation": ("tool_universe", "precondition_guards", "deletion_call"),
    # a live environment for agents to act in
    "agent": ("agent_environment",),
    # benchmark health (docs/definitions.md#health): every task of a data release audited by running the
    # benchmark's own environment and evaluator on its gold and on counterfactual trajectories;
    # ``health_digest`` is optional within it (without it a release's findings are computed by every
    # command, never kept)
    "health": ("health_releases", "release_tasks", "task_health"),
}


class Benchmark:
    """One dataset's adapter. Subclasses set ``dataset`` and ``tasks`` and implement
    :meth:`open_session`; the rest are optional capabilities (:data:`CAPABILITIES`)."""

    dataset: str
    tasks: TaskIndex

    # required --------------------------------------------------------------------------------
    def task_ids(self) -> Sequence[str]:
        return self.tasks

    def has_task(self, task_id: str) -> bool:
        return task_id in self.tasks

    def open_session(self, rollout: Rollout) -> ReplaySession:
        """A fresh session for the rollout's task; raises KeyError for an unknown task and
        :class:`UnscorableRollout` for a rollout that does not fit it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement open_session")

    def infra_error_success(self, rollout: Rollout) -> int | None:
        """Y of an entry whose model call failed before any action
        (docs/definitions.md#infrastructure-failures): what the benchmark's own scoring gives it. This
        default counts such an entry as a failure, as BFCL (``multi_turn:inference_error``) and τ (premature
        termination) do; ToolSandbox's recorded runs score it by its similarity instead."""
        return 0

    # task sampling (defaults: a seeded sample of task_ids(), no provenance) --------------------
    def sample(self, n: int | None, seed: int) -> TaskSample:
        """The seeded sample of ``n`` tasks (every task when ``n`` is None), in task order."""
        ids = list(self.task_ids())
        if n is not None and n < len(ids):
            ids = sorted(random.Random(seed).sample(ids, n), key=ids.index)
        return TaskSample(ids, self.task_provenance())

    def task_provenance(self) -> dict[str, Any]:
        """What the task list records about the data it was drawn from (versions, hashes)."""
        return {}

    def release_of(self, rollout: Rollout) -> str | None:
        """The data release a rollout is scored on, named as :meth:`health_releases` names it (None:
        one this benchmark does not audit, e.g. a task definition the log carried)."""
        return self.health_releases()[0] if "health" in capabilities_of(type(self)) else None

    # capability "reference" ------------------------------------------------------------------
    def reference_rollout(self, task_id: str) -> Rollout:
        """The task's ground truth as a rollout."""
        raise MissingCapability(f"{self.dataset} has no reference rollouts")

    def gold_rollout(self, rollout: Rollout) -> Rollout | None:
        """The gold of the task ``rollout`` is scored against, on the same data (attribution compares a
        failing action with the gold's own failures); None where there is none: no reference rollouts,
        or a rollout scored on other data than the reference's (another release, a task it carries)."""
        capabilities = capabilities_of(type(self))
        if "reference" not in capabilities:
            return None
        if "health" in capabilities and self.release_of(rollout) != self.health_releases()[0]:
            return None
        return self.reference_rollout(rollout.task_id)

    # capability "mutation" -------------------------------------------------------------------
    def tool_universe(self) -> Sequence[str]:
        """Every tool name of the benchmark (a tool outside a task's set is unknown there)."""
        raise MissingCapability(f"{self.dataset} offers no mutation facts")

    def precondition_guards(self) -> dict[str, frozenset[str]]:
        """Setter method (login/authenticate) → the methods that need it."""
        raise MissingCapability(f"{self.dataset} offers no mutation facts")

    def deletion_call(self, spec: ToolSpec, param: str, value: Any) -> ToolCall | None:
        """A call that deletes the object ``value`` names, if the benchmark has one."""
        raise MissingCapability(f"{self.dataset} offers no mutation facts")

    # capability "agent" -----------------------------------------------------------------------
    def agent_environment(self, task_id: str) -> AgentEnvironment:
        """A live environment for generating a rollout of ``task_id`` with an agent."""
        raise MissingCapability(f"{self.dataset} has no live environment for agents")

    def conversation(self, env: AgentEnvironment, user: ModelBackend | None = None) -> Conversation | None:
        """The user's side of an episode in ``env``; None (the default) means the environment's
        scripted turns. ``user`` is a model configured as user simulator, if any."""
        return None

    # capability "health" ----------------------------------------------------------------------
    def health_releases(self) -> Sequence[str]:
        """The data releases whose tasks :meth:`task_health` audits, the default (the one this
        benchmark scores on unless a rollout names another) first."""
        raise MissingCapability(f"{self.dataset} offers no benchmark health")

    def release_tasks(self, release: str) -> Sequence[str]:
        """Every task id of ``release`` (one of :meth:`health_releases`), in the benchmark's order."""
        raise MissingCapability(f"{self.dataset} offers no benchmark health")

    def task_health(self, task_id: str, release: str) -> list[Finding]:
        """The findings (:mod:`prefix_audit.core.health`) of one task of ``release``, from the
        benchmark's own environment and evaluator run on its gold and on counterfactual trajectories
        (:func:`prefix_audit.replay.health.probe_findings`); raises KeyError for a task the release
        lacks."""
        raise MissingCapability(f"{self.dataset} offers no benchmark health")

    def health_digest(self, release: str) -> str | None:
        """A digest of everything :meth:`task_health` reads for ``release`` but prefix-audit's own code: the
        release's data and the benchmark's code, every other release it is compared with, and any setting
        that changes a finding. Equal digests promise equal findings, so the findings are kept under it
        across commands (:mod:`prefix_audit.health.cache`). None (the default, and where findings depend on
        more than files — a judge model): nothing is kept."""
        return None


def _overridden(adapter: type[Benchmark], method: str) -> bool:
    return getattr(adapter, method) is not getattr(Benchmark, method)


def capabilities_of(adapter: type[Benchmark]) -> frozenset[str]:
    """The optional capabilities an adapter class implements (all methods of each overridden)."""
    return frozenset(name for name, methods in CAPABILITIES.items() if all(_overridden(adapter, m) for m in methods))


def incomplete_capabilities(adapter: type[Benchmark]) -> dict[str, tuple[str, ...]]:
    """The capabilities an adapter class implements only in part → the methods of each it leaves out:
    such a capability is not offered at all (:func:`capabilities_of`), which is seldom what was meant."""
    return {name: tuple(m for m in methods if not _overridden(adapter, m))
            for name, methods in CAPABILITIES.items()
            if 0 < sum(_overridden(adapter, m) for m in methods) < len(methods)}
