"""Local token counts: the simulated model's accounting, and the stated estimate for a provider
response that reports no ``usage``.

No tokenizer vocabulary is downloaded (tiktoken and Hugging Face tokenizers fetch theirs at first
use, which fails offline and on many clusters): text is split into words and single punctuation
characters. That is an estimate, not the provider's count — calls counted this way are marked
``estimated`` and Table F.2 shows their share.
"""

from __future__ import annotations

import json
import re

from .base import ModelRequest

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


def response_text(text: str | None, calls: tuple) -> str:
    """What a response emits: its text and each tool call's name and argument text."""
    return (text or "") + "".join(c.name + c.arguments for c in calls)
