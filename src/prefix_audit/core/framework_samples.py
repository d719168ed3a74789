"""Samples of evaluation-framework logs (Inspect AI) in plain terms, for the benchmarks that read them.

The format reader (:mod:`prefix_audit.ingest.inspect_logs`) turns each sample × epoch of a log into a
:class:`FrameworkSample`; a benchmark that registered the log's task
(``Registration.inspect_tasks``) turns that into a rollout. Chat messages — the sample's own and
those a solver keeps in the store — read through :func:`chat_messages`, in Inspect's JSON shape
(``role``, ``content`` a string or a list of parts, ``tool_calls`` of ``{id, function, arguments,
parse_error}``, a tool message's ``tool_call_id`` and ``error``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .calls import ToolCall, structured_call
from .reading import CHAT_ROLES
from .records import Recorded

ROLES = tuple(CHAT_ROLES)
# Inspect's ToolCallError types for calls that never reached the tool (``parsing``: an unknown tool,
# arguments that do not parse or do not validate against its schema; ``approval``: an approver
# refused it). Every other type (``unknown`` for a ToolError, timeouts, limits, ...) was raised by a
# running tool.
REFUSED = frozenset({"parsing", "approval"})
# Inspect's pass/fail score values: its CORRECT / INCORRECT letters, and numbers.
PASSED, FAILED = ("C", 1, 1.0, True), ("I", 0, 0.0, False)


@dataclass(frozen=True)
class ChatMessage:
    """One message: its role and text; an assistant's tool calls; a tool message's call id and the
    error Inspect recorded for the call — a tool that raised, or a call Inspect refused before
    running it (:data:`REFUSED`: an unknown tool, arguments that do not parse or validate, an
    approver's no) — None where the tool returned normally, whatever it returned."""

    role: str
    text: str
    calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None
    error: str | None = None  # the error's message, as the model was shown it
    error_type: str | None = None
    source: str | None = None  # "input": a message of the dataset, not of a model

    @property
    def ran(self) -> bool:
        """Whether the tool ran (a tool message): not when the framework refused the call first."""
        return self.error_type not in REFUSED


@dataclass(frozen=True)
class FrameworkSample:
    """One sample × epoch of a framework's log, as plain values.

    ``messages`` are the sample's own messages (the solver's view); ``store`` its store (JSON values,
    read by the benchmark); ``scores`` the scorers' results by scorer name (each ``{"value",
    "answer", "explanation", "metadata"}``); ``error`` the sample's error message and ``limit`` the
    limit it hit (``"message limit 100"``), None where there is none; ``position`` its 1-based place
    among the samples the log's header lists; ``model`` the label its rollout takes."""

    log: str
    task: str  # the framework's task name without its package (``tau2_airline``, ``bfcl``)
    model: str
    sample_id: str
    epoch: int
    position: int
    metadata: Mapping[str, Any]
    store: Mapping[str, Any]
    messages: tuple[ChatMessage, ...]
    scores: Mapping[str, Mapping[str, Any]]
    error: str | None = None
    limit: str | None = None


def message_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list (reasoning and other parts
    are not what the other side was shown)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def framework_call(obj: Any, where: str) -> ToolCall:
    """An Inspect tool call; arguments Inspect could not parse are the model's schema failure, their
    text kept. A call without an id cannot be matched to its result (ValueError)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: a tool call must be an object")
    call_id = obj.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{where}: tool call without an id (results cannot be matched to it)")
    name, arguments = obj.get("function"), obj.get("arguments")
    if obj.get("parse_error"):
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
        return ToolCall(name if isinstance(name, str) and name else None, raw=raw[:2000],
                        parse_error=f"arguments the framework could not parse: {str(obj['parse_error'])[:300]}",
                        call_id=call_id, structured=True)
    return structured_call(name, arguments, call_id)


def chat_messages(values: Any, where: str) -> tuple[ChatMessage, ...]:
    """A list of Inspect chat messages (JSON) in plain terms (ValueError, located, on another shape)."""
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
        raise ValueError(f"{where}: messages must be a list")
    out = []
    for k, m in enumerate(values):
        at = f"{where}[{k}]"
        if not isinstance(m, Mapping) or m.get("role") not in ROLES:
            raise ValueError(f"{at}: a message must be an object with a role of {', '.join(ROLES)}")
        text = message_text(m.get("content"))
        if m["role"] == "assistant":
            calls = m.get("tool_calls") or []
            if not isinstance(calls, list):
                raise ValueError(f"{at}: tool_calls must be a list")
            out.append(ChatMessage("assistant", text, tuple(framework_call(c, f"{at}.tool_calls[{i}]")
                                                             for i, c in enumerate(calls))))
        elif m["role"] == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise ValueError(f"{at}: a tool message without the id of its call")
            error = m.get("error")
            if error is not None and not isinstance(error, Mapping):
                raise ValueError(f"{at}: a tool error must be an object with a type and a message")
            out.append(ChatMessage("tool", text, call_id=call_id,
                                   error=str(error.get("message") or "") if error is not None else None,
                                   error_type=str(error.get("type")) if error is not None else None))
        else:
            source = m.get("source")
            out.append(ChatMessage(m["role"], text, source=source if isinstance(source, str) else None))
    return tuple(out)


def recorded_verdict(scores: Mapping[str, Mapping[str, Any]], scorer: str) -> Recorded:
    """A scorer's value as the log's verdict on Y: ``C``/1 success, ``I``/0 failure; another value
    (partial credit, no answer), or no such scorer, is no verdict, said."""
    score = scores.get(scorer)
    if score is None:
        return Recorded.of(None, f"no {scorer} score recorded (scores: {', '.join(sorted(scores)) or 'none'})")
    value = score.get("value")
    explanation = str(score.get("explanation") or "").strip().splitlines()
    words = f"Inspect {scorer}: {value!r}" + (f" ({explanation[0][:200]})" if explanation else "")
    if any(value == v and type(value) is type(v) for v in PASSED):
        return Recorded.of(1, words)
    if any(value == v and type(value) is type(v) for v in FAILED):
        return Recorded.of(0, words)
    return Recorded.of(None, f"{words}: not a pass/fail value")
