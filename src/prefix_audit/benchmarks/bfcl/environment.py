"""BFCL as an agent sees it while a rollout is generated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefix_audit.plugin import ToolCall, ToolSchema, ToolSpec, unreadable_call_observation

from .data import Entry
from .loader import invoke, method_table


class BfclAgentEnvironment:
    """BFCL as an agent sees it during generation: per-turn questions and tools, and execution on
    fresh instances with BFCL's result texts as observations (the benchmark executes any public
    method of the entry's classes, exposed or not; the replay checker judges exposure later)."""

    def __init__(self, entry: Entry, tools: Mapping[str, ToolSpec], instances: Mapping[str, Any]) -> None:
        self.task_id = entry.id
        self._entry = entry
        self._tools = tools
        self._methods = method_table(instances)

    def turn_count(self) -> int:
        return len(self._entry.question)

    def user_message(self, turn: int) -> str:
        text = " ".join(self._entry.user_texts(turn))
        if text:
            return text
        # A turn without a question is where withheld functions arrive; say what BFCL says there.
        from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

        return DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        held = self._entry.held_out
        return tuple(ToolSchema(spec.name, spec.description, spec.parameters)
                     for name, spec in self._tools.items() if held.get(name, -1) <= turn)

    def execute(self, call: ToolCall) -> str:
        if not call.well_formed:
            return unreadable_call_observation(call)
        return invoke(self._methods, call)[2]
