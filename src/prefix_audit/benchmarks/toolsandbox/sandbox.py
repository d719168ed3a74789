"""One episode of a scenario on the sandbox: the live world, the executed trajectory and its
evaluation — what the replay session, the live environment for agents and benchmark health all run on.

As in ToolSandbox, calling a tool outside the allow list aborts the scenario (similarity 0); the call
is still answered with ToolSandbox's ``KeyError`` text so an agent loop can go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prefix_audit.plugin import Outcome, ToolCall

from .evaluation import Evaluation, Position, evaluate
from .scenarios import Scenario
from .tools import TOOLS, execute
from .world import World, starting_world


def disallowed_tool_error(name: str | None, allowed: Sequence[str]) -> str:
    return (f"KeyError: Agent tool call agent_facing_tool_name={name!r} is not a known allowed tool. "
            f"Options are available_tool_names={sorted(allowed)}")


class Sandbox:
    """One episode of a scenario: the live world, the executed trajectory and its evaluation."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.start: World = starting_world(scenario.settings, scenario.id)
        self.world = self.start
        self.trajectory: list[Position] = []
        self.aborted: str | None = None
        self.deleted: set[str] = set()
        self.exposed = {name: TOOLS[name] for name in scenario.allowed if name in scenario.exposed}

    def execute(self, call: ToolCall) -> Outcome:
        tool = self.exposed.get(call.name or "")
        if tool is None:
            error = disallowed_tool_error(call.name, list(self.exposed))
            self.aborted = self.aborted or error
            self.trajectory.append(Position(call.name, dict(call.kwargs), False, self.world))
            return Outcome(False, error=error)
        executed = execute(self.world, tool, call)
        if executed.outcome.accepted and executed.world is not self.world:
            self.deleted |= self.world.ids() - executed.world.ids()
        self.world = executed.world
        self.trajectory.append(Position(call.name, executed.arguments, executed.outcome.accepted, executed.world))
        return executed.outcome

    def is_stale(self, value: Any) -> bool:
        return value in self.deleted and value not in self.world.ids()

    def evaluation(self) -> Evaluation:
        s = self.scenario
        return evaluate(s.milestones, s.minefields, self.start, self.trajectory, self.aborted)
