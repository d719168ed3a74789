"""A backend whose answers come from an injected policy: the offline default's model and the test
double. It knows nothing about agents or benchmarks — the policy does (the simulated agent of
:mod:`prefix_audit.sources.simulated`) — and accounts every call as a provider would: tokens counted
on the actual request and response text (a word/punctuation tokenizer), latency from a stated
linear model ``base_s + input · per_input_token_s + output · per_output_token_s``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..records import Usage
from .base import ModelRequest, ModelResponse, ModelToolCall

# The policy's answer to one request: its text and the tool calls it emits.
Policy = Callable[[ModelRequest], tuple["str | None", tuple[ModelToolCall, ...]]]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def request_text(request: ModelRequest) -> str:
    """Everything a request sends: message texts, earlier tool calls and the tool schemas."""
    parts = [m.content or "" for m in request.messages]
    parts += [c.name + c.arguments for m in request.messages for c in m.tool_calls]
    parts += [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters},
                         sort_keys=True) for t in request.tools]
    return "\n".join(parts)


@dataclass(frozen=True)
class LatencyModel:
    """Client-side latency of one call, in seconds, from its token counts."""

    base_s: float = 0.3
    per_input_token_s: float = 0.0002
    per_output_token_s: float = 0.02

    def __call__(self, tokens_in: int, tokens_out: int) -> float:
        return self.base_s + tokens_in * self.per_input_token_s + tokens_out * self.per_output_token_s


class PolicyBackend:
    """A :class:`~prefix_audit.models.base.ModelBackend` answering with ``policy``."""

    def __init__(self, policy: Policy, latency: LatencyModel, name: str,
                 sent_params: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.policy = policy
        self._latency = latency
        self._sent_params = dict(sent_params or {})

    async def aclose(self) -> None:
        return None

    async def complete(self, request: ModelRequest) -> ModelResponse:
        text, calls = self.policy(request)
        out_text = (text or "") + "".join(c.name + c.arguments for c in calls)
        tokens_in, tokens_out = count_tokens(request_text(request)), max(1, count_tokens(out_text))
        usage = Usage(request.role, tokens_in, tokens_out, round(self._latency(tokens_in, tokens_out), 6))
        return ModelResponse(text, calls, usage, dict(self._sent_params), False, "tool_calls" if calls else "stop")
