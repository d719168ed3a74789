"""Backend for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, ...).

Decoding follows SPEC §4: temperature 0, top_p 1, no penalties, a 4,000-token cap; a reasoning model
gets an effort setting and a cap on total output instead, with no sampling controls. Retries are
ours alone (the client's are switched off): exponential backoff with jitter on 429, 5xx, timeouts
and connection failures, judged by exception type and status code. The API key is read once from
the named environment variable and is never written, logged or shown in ``repr``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI

from ..records import Usage
from .base import DEFAULT_CONCURRENCY, GenerationParams, Message, ModelRequest, ModelResponse, ModelToolCall, ToolSchema
from .cache import CachedResponse, ResponseCache, cache_key

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_REASONING_EFFORT = "medium"


class BackendError(RuntimeError):
    """The server answered, but not with something we can account for."""


class _Secret:
    """Holds the API key so that no repr, vars() dump or log line can show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"


@dataclass(frozen=True)
class _Session:
    """Client and concurrency gate of one event loop; both are bound to the loop that made them."""

    loop: asyncio.AbstractEventLoop
    client: AsyncOpenAI
    gate: asyncio.Semaphore


def wire_params(params: GenerationParams, reasoning: bool) -> dict[str, Any]:
    """The generation parameters to send, exactly as they go on the wire."""
    if reasoning:
        return {"max_completion_tokens": params.max_tokens,
                "reasoning_effort": params.reasoning_effort or DEFAULT_REASONING_EFFORT}
    if params.reasoning_effort is not None:
        raise ValueError("reasoning_effort was set for a backend that is not configured as a reasoning model")
    # Penalties are sent as explicit zeros so the record shows them, whatever the server's default.
    return {"temperature": params.temperature, "top_p": params.top_p, "max_tokens": params.max_tokens,
            "presence_penalty": 0.0, "frequency_penalty": 0.0}


def wire_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                             for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def wire_tool(tool: ToolSchema) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}}


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500)


def _tool_calls_of(message: Any) -> tuple[ModelToolCall, ...]:
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        # A nameless call stays in the record: to_tool_call scores it as an invalid action.
        calls.append(ModelToolCall(call.id or "", getattr(function, "name", None) or "",
                                   getattr(function, "arguments", None) or ""))
    return tuple(calls)


class OpenAICompatibleBackend:
    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = DEFAULT_CONCURRENCY, max_retries: int = 6, timeout_s: float = 60,
                 cache_dir: str | Path | None = None, reasoning: bool = False,
                 backoff_base_s: float = 1.0, backoff_cap_s: float = 60.0) -> None:
        # Explicit, so the client's own OPENAI_BASE_URL lookup cannot make the cache key lie.
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        key = os.environ.get(api_key_env, "")
        if not key:
            raise ValueError(f"environment variable {api_key_env} is not set; "
                             f"it must hold the API key for {self.base_url}")
        self._api_key = _Secret(key)
        self.name = model
        self.model = model
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.reasoning = reasoning
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self._session: _Session | None = None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
                f"reasoning={self.reasoning!r})")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = wire_params(request.params, self.reasoning)
        body: dict[str, Any] = {"model": self.model, "messages": [wire_message(m) for m in request.messages],
                                **({"tools": [wire_tool(t) for t in request.tools]} if request.tools else {}),
                                **params}
        key = cache_key({"base_url": self.base_url, **body})
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit.response(request.role)
        response = await self._call(body, params, request.role)
        if self.cache is not None:
            self.cache.put(key, CachedResponse.of(response))
        return response

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.client.close()

    def _current_session(self) -> _Session:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.loop is not loop:
            client = AsyncOpenAI(api_key=self._api_key.reveal(), base_url=self.base_url,
                                 timeout=self.timeout_s, max_retries=0)
            self._session = _Session(loop, client, asyncio.Semaphore(self.concurrency))
        return self._session

    def _backoff_s(self, attempt: int) -> float:
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * 2 ** attempt)
        return random.uniform(ceiling / 2, ceiling)

    async def _call(self, body: Mapping[str, Any], params: Mapping[str, Any], role: str) -> ModelResponse:
        session = self._current_session()
        # The gate is held through backoff too, so a rate-limited server sees fewer requests, not more.
        async with session.gate:
            attempt = 0
            while True:
                start = time.perf_counter()
                try:
                    completion = await session.client.chat.completions.create(**body)
                except openai.APIError as exc:
                    if not is_retryable(exc) or attempt == self.max_retries:
                        raise
                    delay = self._backoff_s(attempt)
                    attempt += 1
                    log.warning("%s: %s (status %s); retry %d/%d in %.2fs", self.name, type(exc).__name__,
                                getattr(exc, "status_code", "-"), attempt, self.max_retries, delay)
                    await asyncio.sleep(delay)
                    continue
                return self._response(completion, time.perf_counter() - start, params, role)

    def _response(self, completion: Any, latency_s: float, params: Mapping[str, Any], role: str) -> ModelResponse:
        if not completion.choices:
            raise BackendError(f"{self.name}: response has no choices")
        if completion.usage is None:
            raise BackendError(f"{self.name}: server reported no token usage, which Table F.2 accounting needs")
        choice = completion.choices[0]
        details = getattr(completion.usage, "completion_tokens_details", None)
        usage = Usage(role, completion.usage.prompt_tokens, completion.usage.completion_tokens, latency_s,
                      getattr(details, "reasoning_tokens", None))
        return ModelResponse(choice.message.content, _tool_calls_of(choice.message), usage, dict(params),
                             False, choice.finish_reason)
