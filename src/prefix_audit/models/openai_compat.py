"""Backend for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, ...).

Decoding follows docs/real-models.md#decoding-and-requests by default
(:class:`~prefix_audit.models.base.GenerationParams`): temperature 0, top_p 1, no penalties, a
4,000-token cap; a reasoning model gets an effort setting and a cap on total output instead, with no
sampling controls. Every setting is the model's to change.

Retries are ours alone (the client's are switched off): on 429, 5xx, timeouts and connection
failures, judged by exception type and status code, after the server's ``Retry-After`` where it
sends one (capped at ``backoff_cap_s``), else after exponential backoff with jitter. Each call's
record (:class:`~prefix_audit.core.records.Usage`) carries its failed attempts and waits, the successful
attempt's latency (the HTTP exchange; parsing the answer is not the server's time) and the whole
wall time. The first request to an endpoint that is not served from the cache gets no second
chance: an endpoint that cannot be reached or does not answer within ``timeout_s`` stops the job
with its URL and model named. A response without ``usage`` keeps locally estimated tokens, marked.

The API key is read once from the named environment variable and is never written, logged or
shown in ``repr``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
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

from prefix_audit.core.records import Retry, Usage

from .base import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    GenerationParams,
    Message,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolSchema,
)
from .cache import CachedResponse, ResponseCache, cache_key, canonical_json
from .endpoints import DEFAULT_API_KEY_ENV, Endpoint, EndpointGate
from .tokens import count_tokens, request_text, response_text

log = logging.getLogger(__name__)

DEFAULT_REASONING_EFFORT = "medium"
# Parameters of the request body that are ours to set; extra provider parameters may not replace them.
OWN_BODY_KEYS = ("model", "messages", "tools")


class BackendError(RuntimeError):
    """The endpoint failed in a way we do not retry, or kept failing; the message names it."""


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
    """The client of one event loop (it is bound to the loop that made it)."""

    loop: asyncio.AbstractEventLoop
    client: AsyncOpenAI


def wire_params(params: GenerationParams, reasoning: bool) -> dict[str, Any]:
    """The generation parameters to send, exactly as they go on the wire."""
    if reasoning:
        out: dict[str, Any] = {"max_completion_tokens": params.max_tokens,
                               "reasoning_effort": params.reasoning_effort or DEFAULT_REASONING_EFFORT}
    elif params.reasoning_effort is not None:
        raise ValueError("reasoning_effort was set for a backend that is not configured as a reasoning model")
    else:
        # Penalties are sent as explicit zeros so the record shows them, whatever the server's default.
        out = {"temperature": params.temperature, "top_p": params.top_p, "max_tokens": params.max_tokens,
               "presence_penalty": 0.0, "frequency_penalty": 0.0}
    if params.seed is not None:
        out["seed"] = params.seed
    clash = sorted(set(params.extra_body) & {*OWN_BODY_KEYS, *out})
    if clash:
        raise ValueError(f"extra_body may not set {', '.join(clash)}: those come from the model's own settings")
    return out | dict(params.extra_body)


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


def describe(exc: BaseException) -> str:
    """A failed attempt in a few words: status and exception type, never the request."""
    status = getattr(exc, "status_code", None)
    return f"{status} {type(exc).__name__}" if status is not None else type(exc).__name__


def retry_after_s(exc: BaseException) -> float | None:
    """The server's requested wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        if (value := headers.get("retry-after")) is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def _tool_calls_of(message: Any) -> tuple[ModelToolCall, ...]:
    calls = []
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        # A nameless call stays in the record: to_tool_call scores it as an invalid action.
        calls.append(ModelToolCall(call.id or "", getattr(function, "name", None) or "",
                                   getattr(function, "arguments", None) or ""))
    return tuple(calls)


class OpenAICompatibleBackend:
    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = DEFAULT_API_KEY_ENV,
                 params: GenerationParams | None = None, reasoning: bool = False,
                 gate: EndpointGate | None = None, concurrency: int = DEFAULT_CONCURRENCY,
                 max_retries: int = DEFAULT_MAX_RETRIES, timeout_s: float = DEFAULT_TIMEOUT_S,
                 backoff_base_s: float = 1.0, backoff_cap_s: float = 60.0,
                 cache_dir: str | Path | None = None) -> None:
        # Explicit, so the client's own OPENAI_BASE_URL lookup cannot make the cache key lie.
        self.endpoint = Endpoint.of(base_url, api_key_env)
        self.base_url = self.endpoint.base_url
        key = os.environ.get(api_key_env, "")
        if not key:
            raise ValueError(f"environment variable {api_key_env} is not set; "
                             f"it must hold the API key for {self.base_url}")
        self._api_key = _Secret(key)
        self.name = model
        self.model = model
        self.params = params or GenerationParams()
        self.reasoning = reasoning
        # A bad setting fails here, before any call. Keys sorted at every level, as the cache stores
        # them, so a fresh and a cached response record the same bytes.
        self._wire_params = json.loads(canonical_json(wire_params(self.params, reasoning)))
        self.gate = gate or EndpointGate(self.endpoint, concurrency)
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self._session: _Session | None = None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
                f"reasoning={self.reasoning!r})")

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = self._wire_params
        if request.seed is not None and request.seed != params.get("seed"):
            params = json.loads(canonical_json({**params, "seed": request.seed}))
        body: dict[str, Any] = {"model": self.model, "messages": [wire_message(m) for m in request.messages],
                                **({"tools": [wire_tool(t) for t in request.tools]} if request.tools else {}),
                                **params}
        # A later trial must not be served trial 0's answer, even where the provider ignores seed.
        key = cache_key({"base_url": self.base_url, **body, **({"trial": request.trial} if request.trial else {})})
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit.response(request.role)
        response = await self._call(body, params, request)
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
            # The client loads its chat resources on first access (about 0.4 s); done here, that
            # time is not counted as the first call's latency.
            client.chat.completions.with_raw_response  # noqa: B018
            self._session = _Session(loop, client)
        return self._session

    def _wait_s(self, exc: BaseException, attempt: int) -> float:
        asked = retry_after_s(exc)
        if asked is not None:
            # At least what the server asked (up to the cap), spread a little so waiters do not return together.
            return min(self.backoff_cap_s, asked * random.uniform(1.0, 1.1))
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * 2 ** attempt)
        return random.uniform(ceiling / 2, ceiling)

    def _unreachable(self, exc: BaseException) -> BackendError:
        what = (f"no answer within {self.timeout_s:g} s (timeout_s)" if isinstance(exc, openai.APITimeoutError)
                else f"cannot be reached ({type(exc).__name__}: {exc})")
        return BackendError(f"model {self.model!r} at {self.base_url}: {what}; nothing was retried, since the "
                            f"endpoint has not answered yet in this job — check base_url and that the server runs")

    async def _call(self, body: Mapping[str, Any], params: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        session = self._current_session()
        completions = session.client.chat.completions.with_raw_response
        # Provider parameters the client does not know go out through its extra_body.
        extra = dict(self.params.extra_body)
        known = {k: v for k, v in body.items() if k not in extra}
        # The slot is held through the waits too, so a rate-limited server sees fewer requests, not more.
        async with self.gate.slot():
            retries: list[Retry] = []
            started = time.perf_counter()
            while True:
                attempt_start = time.perf_counter()
                try:
                    raw = await completions.create(**known, extra_body=extra or None)
                    latency_s = time.perf_counter() - attempt_start
                    completion = raw.parse()
                except openai.APIError as exc:
                    elapsed = time.perf_counter() - attempt_start
                    if isinstance(exc, openai.APIConnectionError) and not self.gate.answered:
                        raise self._unreachable(exc) from None
                    self.gate.answered = True  # an error status is an answer: the endpoint is there
                    if not is_retryable(exc) or len(retries) == self.max_retries:
                        tried = f" after {len(retries) + 1} attempts" if retries else ""
                        raise BackendError(f"model {self.model!r} at {self.base_url}: {describe(exc)}{tried}: "
                                           f"{exc}") from None
                    wait = self._wait_s(exc, len(retries))
                    retries.append(Retry(describe(exc), round(elapsed, 6), round(wait, 6)))
                    log.warning("%s at %s: %s; retry %d/%d in %.2f s", self.model, self.base_url, describe(exc),
                                len(retries), self.max_retries, wait)
                    await asyncio.sleep(wait)
                    continue
                self.gate.answered = True
                wall_s = time.perf_counter() - started
                return self._response(completion, latency_s, wall_s, tuple(retries), params, request)

    def _response(self, completion: Any, latency_s: float, wall_s: float, retries: tuple[Retry, ...],
                  params: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        if not getattr(completion, "choices", None):
            raise BackendError(f"model {self.model!r} at {self.base_url}: the response has no choices")
        choice = completion.choices[0]
        text, calls = choice.message.content, _tool_calls_of(choice.message)
        usage = completion.usage
        if usage is not None and isinstance(usage.prompt_tokens, int) and isinstance(usage.completion_tokens, int):
            details = getattr(usage, "completion_tokens_details", None)
            tokens = (usage.prompt_tokens, usage.completion_tokens, getattr(details, "reasoning_tokens", None))
            estimated = False
        else:
            # Some servers (Ollama in places, proxies) send no usage: count locally and say so.
            tokens = (count_tokens(request_text(request)), count_tokens(response_text(text, calls)), None)
            estimated = True
            log.info("%s at %s reported no token usage; tokens estimated locally", self.model, self.base_url)
        record = Usage(request.role, tokens[0], tokens[1], round(latency_s, 6), tokens[2], retries,
                       round(wall_s, 6), estimated, dict(params))
        return ModelResponse(text, calls, record, dict(params), False, choice.finish_reason)
