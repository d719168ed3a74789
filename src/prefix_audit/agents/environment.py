"""What an agent loop needs from a benchmark: the user's turns, the tools of each turn, and a live
environment that executes calls. Scoring never uses this; it replays the recorded rollout."""

from __future__ import annotations

from typing import Protocol

from ..calls import ToolCall
from ..models.base import ToolSchema


class AgentEnvironment(Protocol):
    task_id: str

    def turn_count(self) -> int: ...

    def user_message(self, turn: int) -> str:
        """What the user says at the start of ``turn`` (the benchmark's wording for empty turns)."""

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        """The tools offered to the model in ``turn``."""

    def execute(self, call: ToolCall) -> str:
        """Run one call on the live state; the observation text the model sees."""
