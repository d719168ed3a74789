"""The native ToolSandbox adapter: replay sessions, the mutation generator's facts, a live
environment for agents and benchmark health, all over one :class:`~.sandbox.Sandbox` per episode.

What the generic checker reads here:
* schema: the scenario's allow list minus its deny list is exposed in every turn; arguments bind
  to the tool's JSON Schema and registered validators (phone numbers, timestamps, coordinates);
* dependency: person/message/reminder ids are reference parameters, and an id is stale once an
  accepted removal deleted its object;
* precondition: the settings rules (sending needs cellular, holiday search needs wifi, location
  lookup needs location service, low-battery mode blocks turning radios on, a switch cannot be set
  to the value it already has);
* state-consistency: the executor's verdict (missing or duplicate rows, unknown units, ...);
* information: a value the scripted user only gives in a later turn.

The initial values available to an agent are the phone numbers stored on the device (the user can
read them off their phone; object ids are not visible and must come from a tool's output), minus
the facts the user only gives later. A terminal reply without a tool call is accepted in
insufficient-information scenarios, and elsewhere only in the last user turn once the agent has
called a tool in a turn whose reference needs one.

As in ToolSandbox, calling a tool outside the allow list aborts the scenario (similarity 0); the
live environment still answers it with ToolSandbox's ``KeyError`` text so an agent loop can go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from prefix_audit.plugin import (
    Benchmark,
    Finding,
    Outcome,
    ReplaySession,
    Rollout,
    Step,
    TaskFacts,
    TaskIndex,
    TaskSample,
    ToolCall,
    ToolSchema,
    ToolSpec,
    UnscorableRollout,
    probe_findings,
    rollout_id_for,
    unreadable_call_observation,
)

from .evaluation import Evaluation
from .health import ToolSandboxProbe
from .sandbox import Sandbox
from .scenarios import Scenario, all_scenarios
from .scenarios import sample_task_ids as _sample
from .tools import DELETERS, PRECONDITION_GUARDS, TOOLS
from .world import device_phone_numbers, starting_world

DATASET = "toolsandbox"


def task_facts(scenario: Scenario) -> TaskFacts:
    facts = dict(scenario.user_facts)
    visible = device_phone_numbers(starting_world(scenario.settings, scenario.id)) - facts.keys()
    return TaskFacts(frozenset(visible), scenario.user_turns, facts)


class ToolSandboxSession(ReplaySession):
    """Replay of one rollout on a fresh sandbox."""

    def __init__(self, scenario: Scenario, facts: TaskFacts) -> None:
        self.scenario = scenario
        self.facts = facts
        self.sandbox = Sandbox(scenario)
        self.turn = -1
        self._turn_calls = 0
        self.evaluation: Evaluation | None = None
        self.y_detail: str | None = None
        self._specs = {name: tool.spec for name, tool in self.sandbox.exposed.items()}

    def start_turn(self, turn: int) -> None:
        self.turn = turn
        self._turn_calls = 0

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._specs

    def known_tool(self, name: str) -> ToolSpec | None:
        tool = TOOLS.get(name)
        return tool.spec if tool else None

    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        return TOOLS[spec.name].preconditions(self.sandbox.world, arguments)

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        return self.sandbox.is_stale(value)

    def execute(self, call: ToolCall) -> Outcome:
        self._turn_calls += 1
        return self.sandbox.execute(call)

    def complete(self) -> Outcome:
        last = len(self.scenario.user_turns) - 1
        if self.turn < last:
            return Outcome(False, error=f"ended in user turn {self.turn + 1} of {last + 1}: the user has more to say")
        if (not self.scenario.insufficient_information and self.scenario.reference[self.turn]
                and self._turn_calls == 0):
            return Outcome(False, error="the request needs tool calls but the agent answered without any")
        return Outcome(True)

    def final_success(self) -> int:
        self.evaluation = self.sandbox.evaluation()
        self.y_detail = self.evaluation.detail()
        return int(self.evaluation.success)


class ToolSandboxAgentEnvironment:
    """A scenario as an agent loop sees it: scripted user turns, the allow-listed tools, and calls
    executed on a live sandbox whose observations are ToolSandbox's texts (the result's ``repr``, or
    ``ExceptionName: message``)."""

    def __init__(self, scenario: Scenario) -> None:
        self.task_id = scenario.id
        self.scenario = scenario
        self.sandbox = Sandbox(scenario)

    def turn_count(self) -> int:
        return len(self.scenario.user_turns)

    def user_message(self, turn: int) -> str:
        return self.scenario.user_turns[turn]

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        return tuple(ToolSchema(t.spec.name, t.spec.description, t.spec.parameters)
                     for t in self.sandbox.exposed.values())

    def execute(self, call: ToolCall) -> str:
        if not call.well_formed:
            return unreadable_call_observation(call)
        outcome = self.sandbox.execute(call)
        return repr(outcome.result) if outcome.accepted else str(outcome.error)


class ToolSandboxBenchmark(Benchmark):
    """Dataset ``toolsandbox``: our scenario set under ToolSandbox's semantics."""

    dataset = DATASET

    def __init__(self, task_ids: Sequence[str] | None = None, scenarios: Mapping[str, Scenario] | None = None) -> None:
        self._generated = scenarios is None
        self._scenarios = dict(scenarios) if scenarios is not None else all_scenarios()
        self.tasks = TaskIndex(task_ids if task_ids is not None else list(self._scenarios))
        unknown = [t for t in self.tasks if t not in self._scenarios]
        if unknown:
            raise KeyError(f"unknown ToolSandbox scenario(s): {', '.join(unknown[:5])}")
        self._facts: dict[str, TaskFacts] = {}

    def sample(self, n: int | None, seed: int) -> TaskSample:
        """``n`` scenarios stratified by family (every scenario when ``n`` is None)."""
        return TaskSample(_sample(n, seed) if n is not None else list(self.tasks), self.task_provenance())

    def task_provenance(self) -> dict[str, Any]:
        return {"scenario_set_sha256": self.scenario_set_sha256}

    def scenario(self, task_id: str) -> Scenario:
        return self._scenarios[task_id]

    def facts_of(self, task_id: str) -> TaskFacts:
        if task_id not in self._facts:
            self._facts[task_id] = task_facts(self.scenario(task_id))
        return self._facts[task_id]

    def open_session(self, rollout: Rollout) -> ToolSandboxSession:
        scenario = self.scenario(rollout.task_id)
        if len(rollout.turns) > len(scenario.user_turns):
            raise UnscorableRollout(f"rollout has {len(rollout.turns)} user turns, scenario {scenario.id} has "
                                    f"{len(scenario.user_turns)}")
        return ToolSandboxSession(scenario, self.facts_of(rollout.task_id))

    def agent_environment(self, task_id: str) -> ToolSandboxAgentEnvironment:
        """A live environment for generating a rollout of ``task_id`` with an agent."""
        return ToolSandboxAgentEnvironment(self.scenario(task_id))

    # capabilities: reference rollouts, mutation facts (the live environment is above) -----------
    def reference_rollout(self, task_id: str) -> Rollout:
        """The reference actions, one step per user turn; insufficient-information scenarios end
        with their closing reply (a terminal no-tool action)."""
        scenario = self.scenario(task_id)
        turns = [[Step(calls)] if calls else [] for calls in scenario.reference]
        if scenario.reference_reply is not None:
            turns[-1].append(Step((), scenario.reference_reply))
        return Rollout(DATASET, task_id, "ground_truth", "reference",
                       rollout_id_for(DATASET, "ground_truth", "reference", task_id),
                       tuple(tuple(t) for t in turns), source="reference")

    def tool_universe(self) -> list[str]:
        return sorted(TOOLS)

    def precondition_guards(self) -> dict[str, frozenset[str]]:
        return dict(PRECONDITION_GUARDS)

    def deletion_call(self, spec: ToolSpec, param: str, value: Any) -> ToolCall | None:
        deleter = DELETERS.get(param)
        if deleter is None or spec.name in DELETERS.values() or not isinstance(value, str):
            return None
        return ToolCall(deleter, (), {TOOLS[deleter].spec.positional_order[0]: value})

    @cached_property
    def scenario_set_sha256(self) -> str:
        from .scenarios import scenario_set_sha256

        return scenario_set_sha256(None if self._generated else self._scenarios.values())

    # capability "health": the scenario set is the one data release ------------------------------
    def health_releases(self) -> list[str]:
        """One label, ``scenarios-`` and the first 12 hex digits of the scenario set's SHA-256."""
        return [f"scenarios-{self.scenario_set_sha256[:12]}"]

    def release_tasks(self, release: str) -> list[str]:
        self._release(release)
        return list(self.tasks)

    def release_of(self, rollout: Rollout) -> str | None:
        return self.health_releases()[0]

    def task_health(self, task_id: str, release: str) -> list[Finding]:
        self._release(release)
        if task_id not in self.tasks:
            raise KeyError(f"{task_id!r} is no scenario of ToolSandbox release {release}")
        return probe_findings(ToolSandboxProbe(self, self.scenario(task_id)))

    def health_digest(self, release: str) -> str:
        """The scenario set (the sandbox and its tools are prefix-audit's own code)."""
        self._release(release)
        return self.scenario_set_sha256

    def _release(self, release: str) -> None:
        if release not in self.health_releases():
            raise KeyError(f"ToolSandbox has no release {release!r} (this scenario set is {self.health_releases()[0]})")


def list_task_ids() -> list[str]:
    """Every scenario id, in generation order."""
    return list(all_scenarios())


def sample_task_ids(n: int = 200, seed: int = 0) -> list[str]:
    """The deterministic seeded sample of ``n`` scenarios (stratified by family)."""
    return _sample(n, seed)
