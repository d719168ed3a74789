"""Content-addressed on-disk cache of model responses, so a rerun costs nothing.

The key is the SHA-256 of the canonical JSON of everything that determines the response: model,
endpoint, messages, tools and the generation parameters as sent. Entries live at
``<root>/<key[:2]>/<key[2:]>.json`` and are written atomically. Neither the key material nor the
entry holds credentials or HTTP headers.

A hit reports the usage, client-side latency, retries and wall time of the call that originally
produced the response:
Table F.2 accounts the cost of producing each response, which must not depend on whether a run
happened to be served from the cache. ``ModelResponse.cached`` tells the two apart.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.core.io import atomic_write_text
from prefix_audit.core.records import Retry, Usage

from .base import ModelResponse, ModelToolCall

log = logging.getLogger(__name__)

# Part of the key material: changing the entry format invalidates old entries instead of misreading them.
CACHE_FORMAT = 1


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cache_key(material: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"cache_format": CACHE_FORMAT, **material}).encode()).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    text: str | None
    tool_calls: tuple[ModelToolCall, ...]
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None
    latency_s: float
    sent_params: Mapping[str, Any]
    retries: tuple[Retry, ...] = ()
    wall_s: float | None = None
    estimated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                      "reasoning_tokens": self.reasoning_tokens},
            "latency_s": self.latency_s,
            "sent_params": dict(self.sent_params),
            "retries": [r.to_json() for r in self.retries],
            "wall_s": self.wall_s,
            "estimated": self.estimated,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CachedResponse:
        usage = obj["usage"]
        # Entries written before retries were recorded lack the last three fields.
        retries = tuple(Retry(r["error"], float(r["elapsed_s"]), float(r["wait_s"])) for r in obj.get("retries", ()))
        wall = obj.get("wall_s")
        return cls(obj["text"], tuple(ModelToolCall(c["id"], c["name"], c["arguments"]) for c in obj["tool_calls"]),
                   obj["finish_reason"], int(usage["input_tokens"]), int(usage["output_tokens"]),
                   usage["reasoning_tokens"], float(obj["latency_s"]), obj["sent_params"], retries,
                   None if wall is None else float(wall), bool(obj.get("estimated", False)))

    @classmethod
    def of(cls, response: ModelResponse) -> CachedResponse:
        u = response.usage
        assert u.latency_s is not None, "a response the model sent has its latency (only logs may lack one)"
        return cls(response.text, response.tool_calls, response.finish_reason, u.input_tokens, u.output_tokens,
                   u.reasoning_tokens, u.latency_s, response.sent_params, u.retries, u.wall_s, u.estimated)

    def response(self, role: str) -> ModelResponse:
        usage = Usage(role, self.input_tokens, self.output_tokens, self.latency_s, self.reasoning_tokens,
                      self.retries, self.latency_s if self.wall_s is None else self.wall_s, self.estimated,
                      dict(self.sent_params))
        return ModelResponse(self.text, self.tool_calls, usage, self.sent_params, True, self.finish_reason)


class ResponseCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> CachedResponse | None:
        path = self.path(key)
        try:
            return CachedResponse.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            # An unreadable entry is a miss; the fresh response overwrites it.
            log.warning("ignoring unreadable cache entry %s: %s", path, exc)
            return None

    def put(self, key: str, entry: CachedResponse) -> None:
        atomic_write_text(self.path(key), canonical_json(entry.to_json()) + "\n")
