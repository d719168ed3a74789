"""Safe parsing of model-emitted tool calls.

Model output is never evaluated. A call string is parsed with :mod:`ast` and accepted only in the
form ``name(literal, ..., key=literal, ...)``: the callee must be a bare name and every argument a
Python literal (what :func:`ast.literal_eval` accepts). Anything else — attribute access,
``__import__``, lambdas, comprehensions, names, starred arguments — is a parse error, which the
checker scores as a schema failure. Nothing in this module executes anything.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

# Generous for real tool calls, small enough that a hostile payload cannot make parsing slow. It
# bounds call text and structured arguments (as JSON) alike.
MAX_CALL_CHARS = 100_000
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# Call syntax: a name and "(", or a bracketed list whose first item is a word and "(" (a name no
# Python name, as models leak into it, still makes a list of calls).
_LOOKS_LIKE_CALLS = re.compile(r"^\s*(?:\[\s*[^\s()\[\],]+|[A-Za-z_]\w*)\s*\(")


def _reason(exc: BaseException) -> str:
    """An exception's message without object addresses (``<ast.Call object at 0x…>``), so the
    same input always gives the same text."""
    return _ADDRESS.sub("", str(exc))


@dataclass(frozen=True)
class ToolCall:
    """One emitted tool call.

    ``name is None`` or ``parse_error`` set means the call could not be read as a well-formed
    call; ``raw`` keeps the text exactly as emitted for the audit trail.
    """

    name: str | None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None
    parse_error: str | None = None
    call_id: str | None = None
    structured: bool = False  # came as JSON name/arguments rather than call text

    @property
    def well_formed(self) -> bool:
        return self.parse_error is None and self.name is not None

    def render(self) -> str:
        """A canonical ``name(k=v, ...)`` text, used for display and mutation bookkeeping."""
        if self.raw is not None and not self.well_formed:
            return self.raw
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


def _literal(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def _call_from_node(node: ast.expr, raw: str) -> ToolCall:
    if not isinstance(node, ast.Call):
        return ToolCall(None, raw=raw, parse_error=f"not a call expression: {type(node).__name__}")
    if not isinstance(node.func, ast.Name):
        kind = type(node.func).__name__
        return ToolCall(None, raw=raw, parse_error=f"callee must be a bare tool name, got {kind}")
    name = node.func.id
    try:
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise ValueError("starred arguments are not allowed")
            args.append(_literal(arg))
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ValueError("**kwargs expansion is not allowed")
            if kw.arg in kwargs:
                raise ValueError(f"keyword argument repeated: {kw.arg}")
            kwargs[kw.arg] = _literal(kw.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        return ToolCall(name, raw=raw, parse_error=f"non-literal argument: {_reason(exc)}")
    return ToolCall(name, tuple(args), kwargs, raw=raw)


def _parse_expression(text: str) -> ast.expr | str:
    if len(text) > MAX_CALL_CHARS:
        return f"call text of {len(text)} characters exceeds the {MAX_CALL_CHARS} limit"
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return f"unparseable call: {type(exc).__name__}: {_reason(exc)}"


def parse_call_string(text: str) -> ToolCall:
    """Parse exactly one call such as ``cd(folder='document')``."""
    if not isinstance(text, str):
        return ToolCall(None, raw=repr(text), parse_error=f"call must be a string, got {type(text).__name__}")
    node = _parse_expression(text)
    if isinstance(node, str):
        return ToolCall(None, raw=text, parse_error=node)
    return _call_from_node(node, text)


# What marks model text as an attempted tool call in the formats handlers and agents write: tagged
# calls, fenced call code, a ReAct ``Action:`` with JSON, a JSON object or list naming a function or
# listing ``tool_calls`` (fenced or not), or call syntax.
_CALL_MARKERS = re.compile(r"<tool_call>|<function_?call>|<toolcall>|\[TOOL_CALLS\]|<\|python_tag\|>"
                           r"|```\s*(?:tool_code|tool_call|json|python)\b|\bAction:\s*[\[{]", re.IGNORECASE)
_JSON_CALL = re.compile(r'^\s*(?:```\w*\s*)?[\[{]\s*(?:\{\s*)?"(?:name|function|tool_name|tool|tool_calls)"\s*:')


def looks_like_calls(text: str) -> bool:
    """Whether model text looks like an attempt at a tool call (whatever its format), so that a
    decoder that reads no call in it has likely misread it — never whether it is one."""
    bounded = text[:MAX_CALL_CHARS]  # a leaked name may run to thousands of characters before its "("
    return bool(_CALL_MARKERS.search(bounded) or _JSON_CALL.match(bounded[:2000]) or _LOOKS_LIKE_CALLS.match(bounded))


def structured_call(name: Any, arguments: Any, call_id: str | None = None) -> ToolCall:
    """A structured (JSON) tool call: ``arguments`` is an object or a JSON text of one. An empty
    name is a call of a tool named ``""``: the benchmarks dispatch it like any unknown name and
    answer with an error (a schema failure); a name that is no string makes an unparseable call."""
    raw = arguments if isinstance(arguments, str) else None

    def bad(reason: str) -> ToolCall:
        return ToolCall(name if isinstance(name, str) else None, raw=raw, parse_error=reason,
                        call_id=call_id, structured=True)

    if not isinstance(name, str):
        return bad("tool call has no name")
    if isinstance(arguments, str):
        if len(arguments) > MAX_CALL_CHARS:
            return bad(f"arguments of {len(arguments)} characters exceed the {MAX_CALL_CHARS} limit")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:  # not JSON, or an integer too long for it
            return bad(f"arguments are not valid JSON: {exc}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return bad(f"arguments must be an object, got {type(arguments).__name__}")
    if raw is None:  # given as an object: the same limit as on its JSON text
        try:
            size = len(json.dumps(arguments, ensure_ascii=False, default=str))
        except (ValueError, RecursionError):
            return bad("arguments cannot be written as JSON (nested too deep)")
        if size > MAX_CALL_CHARS:
            return bad(f"arguments of {size} characters (as JSON) exceed the {MAX_CALL_CHARS} limit")
    return ToolCall(name, (), dict(arguments), raw=raw, call_id=call_id, structured=True)
