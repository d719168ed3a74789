"""The user's side of an episode for benchmarks whose user turns are fixed (BFCL, ToolSandbox).

Benchmarks with a user simulator (τ-bench) supply their own
:class:`~prefix_audit.replay.contract.Conversation` through ``Benchmark.conversation``.
"""

from __future__ import annotations

from typing import Any

from prefix_audit.core.records import Usage
from prefix_audit.replay.contract import ScriptedEnvironment


class ScriptedTurns:
    """The fixed user turns of a benchmark such as BFCL or ToolSandbox."""

    system_prompt: str | None = None
    opening: str | None = None

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
