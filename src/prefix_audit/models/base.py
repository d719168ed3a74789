"""The one small interface every model backend implements (docs/definitions.md#agents).

Agent loops build a :class:`ModelRequest` (chat messages, tool schemas and the agent role making
the call) and get back a :class:`ModelResponse` (text, tool calls with their
argument text exactly as emitted, provider-reported usage, the parameters actually sent). A backend
is anything with a ``name`` and an async ``complete``; the OpenAI-compatible client and the simulated
policy are two such backends, and nothing downstream may tell them apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from prefix_audit.core.calls import ToolCall, structured_call
from prefix_audit.core.records import AGENT_ROLES, Usage

MODEL_ROLES = AGENT_ROLES + ("user_simulator",)
MESSAGE_ROLES = ("system", "user", "assistant", "tool")
MessageRole = Literal["system", "user", "assistant", "tool"]

DEFAULT_MAX_TOKENS = 4000
DEFAULT_CONCURRENCY = 16  # an endpoint's ceiling on requests in flight
DEFAULT_TIMEOUT_S = 120.0  # per request
DEFAULT_MAX_RETRIES = 6


@dataclass(frozen=True)
class ToolSchema:
    """A tool offered to the model; ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ModelToolCall:
    """A tool call as the model emitted it; ``arguments`` is its JSON text, unparsed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    role: MessageRole
    content: str | None
    tool_calls: tuple[ModelToolCall, ...] = ()
    tool_call_id: str | None = None  # for role "tool": the call this message answers

    def __post_init__(self) -> None:
        if self.role not in MESSAGE_ROLES:
            raise ValueError(f"message role must be one of {', '.join(MESSAGE_ROLES)}, got {self.role!r}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool calls")
        if (self.role == "tool") != (self.tool_call_id is not None):
            raise ValueError("a tool_call_id is required on, and only on, tool messages")


@dataclass(frozen=True)
class GenerationParams:
    """A model's decoding settings, the paper's by default (docs/definitions.md#agents). A backend serving a reasoning
    model sends only the effort and ``max_tokens`` as a cap on total output (reasoning included),
    never the sampling controls. ``seed`` goes out where set; ``extra_body`` holds further provider
    parameters, sent as given."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    reasoning_effort: str | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRequest:
    """One call: the conversation so far, the tools offered and the agent role making it. The
    decoding settings belong to the model (its backend), not to the call."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    role: str = "executor"
    # Repeated trials (set by :class:`TrialBackend`): a later trial is a fresh sample, so the
    # trial is part of the response cache key and its seed replaces the model's own.
    trial: int = 0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.role not in MODEL_ROLES:
            raise ValueError(f"request role must be one of {', '.join(MODEL_ROLES)}, got {self.role!r}")


@dataclass(frozen=True)
class ModelResponse:
    text: str | None
    tool_calls: tuple[ModelToolCall, ...]
    usage: Usage
    sent_params: Mapping[str, Any]  # generation parameters as sent on the wire; never credentials
    cached: bool
    finish_reason: str | None

    def as_message(self) -> Message:
        """The assistant turn to append to the conversation history."""
        return Message("assistant", self.text, self.tool_calls)


@runtime_checkable
class ModelBackend(Protocol):
    name: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None:
        """Release connections opened in the running event loop (a no-op where there are none)."""


def trial_seed(run_seed: int, trial: int, model_seed: int | None) -> int | None:
    """The seed trial ``trial`` sends: the model's own for trial 0 (so adding trials keeps it), a
    31-bit value derived from the run seed, the model's seed and the trial index for later ones."""
    if trial == 0:
        return model_seed
    payload = json.dumps(["trial", run_seed, model_seed, trial]).encode()
    return int.from_bytes(hashlib.sha256(payload).digest()[:4], "big") >> 1


class TrialBackend:
    """One trial's view of a shared backend: each request carries the trial and its seed. Closing
    it leaves the shared backend to its owner."""

    def __init__(self, backend: ModelBackend, trial: int, seed: int | None) -> None:
        self.backend, self.trial, self.seed = backend, trial, seed
        self.name = backend.name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.backend.complete(replace(request, trial=self.trial, seed=self.seed))

    async def aclose(self) -> None:
        return None


def to_tool_call(call: ModelToolCall) -> ToolCall:
    """Our scored action for an emitted call; malformed argument JSON becomes a parse error."""
    return structured_call(call.name, call.arguments, call.id)


def complete_many(backend: ModelBackend, requests: Sequence[ModelRequest],
                  concurrency: int = DEFAULT_CONCURRENCY) -> list[ModelResponse]:
    """Run independent requests concurrently (at most ``concurrency`` in flight); results in order."""

    async def run() -> list[ModelResponse]:
        gate = asyncio.Semaphore(concurrency)

        async def one(request: ModelRequest) -> ModelResponse:
            async with gate:
                return await backend.complete(request)

        try:
            return list(await asyncio.gather(*(one(r) for r in requests)))
        finally:
            await backend.aclose()

    return asyncio.run(run())
