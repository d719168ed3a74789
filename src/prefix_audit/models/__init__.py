"""Model backends behind one small interface (docs/definitions.md#agents).

Holds :mod:`.base` (the interface every backend implements: requests, responses, tool schemas),
:mod:`.openai_compat` (any OpenAI-compatible chat-completions server), :mod:`.scripted` (answers from
an injected policy: the simulated model's backend), :mod:`.endpoints` (endpoints and their ceilings on
requests in flight), :mod:`.cache` (the content-addressed response cache) and :mod:`.tokens` (local
token counts).

May import: :mod:`prefix_audit.core` only; backends know nothing about agents or benchmarks.
``OpenAICompatibleBackend`` is imported on first use, so offline runs never load the ``openai`` client.
"""

from __future__ import annotations

from typing import Any

from .base import (
    MODEL_ROLES,
    GenerationParams,
    Message,
    ModelBackend,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolSchema,
    complete_many,
    to_tool_call,
)
from .cache import CachedResponse, ResponseCache, cache_key

__all__ = ["MODEL_ROLES", "CachedResponse", "GenerationParams", "Message", "ModelBackend", "ModelRequest",
           "ModelResponse", "ModelToolCall", "OpenAICompatibleBackend", "ResponseCache", "ToolSchema", "cache_key",
           "complete_many", "to_tool_call"]


def __getattr__(name: str) -> Any:
    if name == "OpenAICompatibleBackend":
        from .openai_compat import OpenAICompatibleBackend

        return OpenAICompatibleBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
