"""A backend whose answers come from an injected policy: the offline default's model and the test
double. It knows nothing about agents or benchmarks — the policy does (the simulated agent of
:mod:`prefix_audit.generation.sources.simulated`) — and accounts every call as a provider would: tokens counted
on the actual request and response text (:mod:`prefix_audit.models.tokens`), latency from a stated
linear model ``base_s + input · per_input_token_s + output · per_output_token_s``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.records import Usage

from .base import ModelRequest, ModelResponse, ModelToolCall
from .tokens import count_tokens, request_text, response_text

# The policy's answer to one request: its text and the tool calls it emits.
Policy = Callable[[ModelRequest], tuple["str | None", tuple[ModelToolCall, ...]]]

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
        tokens_in = count_tokens(request_text(request))
        tokens_out = max(1, count_tokens(response_text(text, calls)))
        usage = Usage(request.role, tokens_in, tokens_out, round(self._latency(tokens_in, tokens_out), 6))
        return ModelResponse(text, calls, usage, dict(self._sent_params), False, "tool_calls" if calls else "stop")
