"""What an agent loop needs from a benchmark: a live environment that executes calls, and the
user's side of the conversation. Scoring never uses this; it replays the recorded rollout.

Two kinds of user: benchmarks with scripted turns (BFCL, ToolSandbox: the user's message of each
turn is fixed) and half-duplex conversations (τ-bench: a user simulator answers the agent's last
message and ends the conversation with a stop token).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..calls import ToolCall
from ..models.base import ToolSchema
from ..records import Usage


class AgentEnvironment(Protocol):
    task_id: str

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        """The tools offered to the model in ``turn``."""

    def execute(self, call: ToolCall) -> str:
        """Run one call on the live state; the observation text the model sees. A call that could
        not be read comes here too (the benchmark may count it, as τ counts tool errors); answer it
        with :func:`unreadable_call_observation`."""


def unreadable_call_observation(call: ToolCall) -> str:
    """What the model is told of a tool call that could not be read: nothing was executed."""
    return f"Error: the tool call could not be read: {call.parse_error or 'no tool name'}"


class ScriptedEnvironment(AgentEnvironment, Protocol):
    def turn_count(self) -> int: ...

    def user_message(self, turn: int) -> str:
        """What the user says at the start of ``turn`` (the benchmark's wording for empty turns)."""


class Conversation(Protocol):
    """The user's side of one episode."""

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


class ScriptedTurns:
    """The fixed user turns of a benchmark such as BFCL or ToolSandbox."""

    system_prompt = None
    opening = None

    def __init__(self, env: ScriptedEnvironment) -> None:
        self._env = env
        self._turn = 0

    async def next_user_message(self, agent_reply: str | None) -> str | None:
        if self._turn >= self._env.turn_count():
            return None
        self._turn += 1
        return self._env.user_message(self._turn - 1)

    def limit_reached(self, steps: int) -> str | None:
        return None

    def meta(self, termination: str | None) -> dict[str, Any]:
        return {}

    def usage(self) -> tuple[Usage, ...]:
        return ()
