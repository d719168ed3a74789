"""BFCL's step decoders, one small pure function per family, and the table from handler class to decoder.

BFCL's evaluation reads each step of a result file with the ``decode_execute`` of the handler that
ran the model (:mod:`.handlers`): it turns what the handler stored — call objects, or the model's
text in the handler's own format — into call strings (``name(key=repr(value), …)``), or raises,
and a step that raises or decodes to nothing executes nothing. Each function here returns the call
strings that handler returns for the same input, or raises :class:`Undecodable` where it raises
(the reason says what failed); ``tests/test_bfcl_decoders.py`` checks this against every handler's
own ``decode_execute``.

Nothing is evaluated. Where a handler ``eval``s model text — Llama 3.1's single-call path, and
arithmetic or lambdas in arguments read by BFCL's Python-call parser — literals and arithmetic on
literals are computed here (:func:`literal_arithmetic`); anything else raises
:class:`NotEvaluated`: BFCL would have run it as Python, so what it made of it is not known here.
"""

from __future__ import annotations

import ast
import builtins
import json
import operator
import re
from collections.abc import Callable
from typing import Any

Decoder = Callable[[Any], list[str]]


class Undecodable(Exception):
    """BFCL's decoder fails on the step: the step executes nothing."""


class NotEvaluated(Undecodable):
    """The handler would ``eval`` model text that is no literal arithmetic; we do not."""


# -- evaluation of literal arithmetic, where BFCL evals ------------------------------------------
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
_CONTAINERS: dict[type[ast.expr], Callable[[list[Any]], Any]] = {ast.List: list, ast.Tuple: tuple, ast.Set: set}
MAX_RESULT_SIZE = 1_000_000  # digits or items an evaluated expression may produce


def _size(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 1


def _checked(op: type[ast.operator], left: Any, right: Any) -> Any:
    """``left op right`` as Python computes it, refused where the result would be enormous."""
    if (op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0
            and max(_size(left), 1) * right > MAX_RESULT_SIZE):
        raise NotEvaluated(f"{left!r} ** {right!r} is too large to compute")
    if op is ast.LShift and isinstance(right, int) and right > 3 * MAX_RESULT_SIZE:
        raise NotEvaluated(f"{left!r} << {right!r} is too large to compute")
    if op is ast.Mult and isinstance(right, int) and isinstance(left, (str, bytes, list, tuple)):
        left, right = right, left
    if (op is ast.Mult and isinstance(left, int) and isinstance(right, (str, bytes, list, tuple))
            and left * len(right) > MAX_RESULT_SIZE):
        raise NotEvaluated(f"a sequence of {len(right)} items times {left} is too large to compute")
    return _BINARY[op](left, right)


def literal_arithmetic(node: ast.AST) -> Any:
    """The value Python's ``eval`` gives an expression of literals, containers and operators on
    them; :class:`NotEvaluated` for anything else, the error ``eval`` would raise for what fails."""
    if isinstance(node, ast.Expression):
        return literal_arithmetic(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _checked(type(node.op), literal_arithmetic(node.left), literal_arithmetic(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](literal_arithmetic(node.operand))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        items = [literal_arithmetic(e) for e in node.elts]
        return _CONTAINERS[type(node)](items)
    if isinstance(node, ast.Dict):
        pairs = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
        if len(pairs) == len(node.keys):  # no ``**`` entry (its key is None)
            return {literal_arithmetic(k): literal_arithmetic(v) for k, v in pairs}
    # Python evaluates a call's callee, an attribute's or a subscript's object first: an unknown
    # name there fails as it would in BFCL's eval, before anything is run.
    first = node
    while isinstance(first, (ast.Call, ast.Attribute, ast.Subscript)):
        first = first.func if isinstance(first, ast.Call) else first.value
    if isinstance(first, ast.Name) and not hasattr(builtins, first.id):
        raise NameError(f"name {first.id!r} is not defined")
    if first is node and isinstance(node, ast.Name):
        raise NotEvaluated(f"{node.id!r} names a Python builtin, which BFCL's eval would use")
    raise NotEvaluated(f"{ast.unparse(node)[:80]!r} is no literal arithmetic; BFCL would run it as Python")


def literal_text(text: str) -> Any:
    """The value of ``text`` where it is literal arithmetic, computed from its syntax tree (a syntax
    error as Python's parser raises it); nothing is evaluated."""
    return literal_arithmetic(ast.parse(text.strip(" \t"), "<string>", "eval"))


# -- BFCL's Python-call parser ------------------------------------------------------------------
def _argument(node: ast.AST | None) -> Any:
    """What BFCL's parser makes of an argument's expression (its ``resolve_ast_by_type``; None: the key of a
    dict's ``**`` entry, unsupported)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):  # BFCL negates whatever the operator
        if not isinstance(node.operand, ast.Constant):
            raise TypeError(f"unsupported operand {type(node.operand).__name__}")
        value: Any = node.operand.value
        return -value
    if isinstance(node, ast.List):
        return [_argument(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_argument(k): _argument(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.BinOp):  # evaluated by BFCL
        return literal_arithmetic(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Tuple):
        return tuple(_argument(e) for e in node.elts)
    if isinstance(node, ast.Lambda):  # BFCL's lambda branch indexes the body and always fails
        raise TypeError("a lambda argument")
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise TypeError(f"unsupported argument {type(node).__name__}")


def _call(node: ast.Call) -> dict[str, dict[Any, Any]]:
    parts = []
    func: ast.AST = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return {".".join(reversed(parts)): {kw.arg: _argument(kw.value) for kw in node.keywords}}


def python_calls(text: str) -> list[dict[str, dict[Any, Any]]]:
    """The calls of a Python expression that is one call or a list of calls (BFCL's ``ast_parse``)."""
    tree = ast.parse(text.strip().strip("'"), mode="eval")
    if isinstance(tree.body, ast.Call):
        return [_call(tree.body)]
    elements = tree.body.elts  # type: ignore[attr-defined]  # AttributeError: no list of calls
    if not all(isinstance(e, ast.Call) for e in elements):
        raise ValueError("an element of the list is no call")
    return [_call(e) for e in elements]


def _nested(value: Any) -> str:
    """An argument rendered as BFCL's prompting decoder renders it: a dict whose values are all
    dicts as a nested call of its first key, other dicts with quoted keys, the rest as ``repr``."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            if not value:
                raise IndexError("an empty object where BFCL's decoder expects a nested call")
            name = next(iter(value))
            return f"{name}({', '.join(f'{k}={_nested(v)}' for k, v in value[name].items())})"
        return "{" + ", ".join(f"'{k}': {_nested(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _render(name: Any, arguments: Any, sep: str = ",") -> str:
    """``name(key=repr(value), …)``: the call string most decoders produce."""
    return f"{name}({sep.join(f'{k}={v!r}' for k, v in arguments.items())})"


# -- the decoders -------------------------------------------------------------------------------
def call_objects(raw: Any) -> list[str]:
    """Function-calling handlers: ``[{name: arguments}, …]`` (one object alone too), arguments an
    object or its JSON text."""
    out = []
    for item in [raw] if type(raw) is dict else raw:
        for name, arguments in item.items():
            out.append(_render(name, json.loads(arguments) if type(arguments) is str else arguments))
    return out


def call_object_list(raw: Any) -> list[str]:
    """Call objects that must come as a list of objects (Arch, Granite 3, Phi FC)."""
    if type(raw) is not list or any(type(item) is not dict for item in raw):
        raise ValueError("the step is no list of call objects")
    return call_objects(raw)


def call_list(raw: Any) -> list[str]:
    """Call objects that must come as a list (Mistral FC local, Nova)."""
    if type(raw) is not list:
        raise ValueError("the step is no list")
    return call_objects(raw)


def python_call_text(raw: str) -> list[str]:
    """Prompting handlers: Python call text, brackets and fences optional (``[cd(folder='x')]``);
    keyword arguments only."""
    body = raw.strip("`\n ")
    body = ("" if body.startswith("[") else "[") + body + ("" if body.endswith("]") else "]")
    return [f"{name}({', '.join(f'{k}={_nested(v)}' for k, v in arguments.items())})"
            for call in python_calls(body) for name, arguments in call.items()]


def tool_code_text(raw: str) -> list[str]:
    """Gemini prompting: Python call text in a ```` ```tool_code ```` fence."""
    return python_call_text(raw.replace("```tool_code\n", "").replace("\n```", ""))


def fenced_python_text(raw: str) -> list[str]:
    """Phi prompting: Python call text, a leading ```` ```json ```` or ```` ```python ```` dropped."""
    for fence in ("```json", "```python"):
        if raw.startswith(fence):
            raw = raw[len(fence):]
    return python_call_text(raw)


def toolcall_tag_text(raw: str) -> list[str]:
    """Nemotron: Python call text inside ``<TOOLCALL>…</TOOLCALL>``; no tag, no call."""
    match = re.search(r"<TOOLCALL>(.*?)</TOOLCALL>", raw, re.DOTALL)
    return python_call_text(match.group(1)) if match else []


def gorilla_text(raw: Any) -> list[str]:
    """Gorilla OpenFunctions, as BFCL's handler behaves: it hands its Python parser ``False`` where
    the parser takes the output language, which it does not support, so no step decodes."""
    raise NotImplementedError("BFCL's Gorilla decoder passes no supported language to its parser")


def gemini_call_objects(raw: Any) -> list[str]:
    """Gemini function calling: ``[{name: {arguments}}, …]``, arguments objects only."""
    return [_render(name, arguments) for item in raw for name, arguments in item.items()]


def _name_arguments(calls: Any, sep: str = ",") -> list[str]:
    return [_render(call["name"], call["arguments"], sep) for call in calls]


def json_name_arguments(raw: str) -> list[str]:
    """BitAgent: JSON ``{"name", "arguments"}`` objects, a list or one."""
    calls = json.loads(raw)
    return _name_arguments(calls if isinstance(calls, list) else [calls])


def xlam_json(raw: str) -> list[str]:
    """Salesforce xLAM (Llama and Qwen): JSON ``{"name", "arguments"}`` objects, a list or one, or
    ``;``-separated objects."""
    try:
        calls = json.loads(raw)
        calls = calls if isinstance(calls, list) else [calls]
    except json.JSONDecodeError:
        calls = [json.loads(part.strip()) for part in raw.split(";")]
    return _name_arguments(calls)


def _lenient_name_arguments(calls: Any) -> list[str]:
    """Objects with ``name`` and ``arguments`` (missing ones empty), anything else skipped."""
    return [_render(call.get("name", ""), call.get("arguments", {}), ", ")
            for call in (calls if isinstance(calls, list) else [calls]) if isinstance(call, dict)]


def hammer_json(raw: str) -> list[str]:
    """Hammer: JSON ``{"name", "arguments"}`` objects (fences dropped) or ``{"tool_calls": […]}``;
    text that is no JSON is no call."""
    try:
        value = json.loads(raw.replace("```", ""))
    except (ValueError, RecursionError):
        return []
    calls = value if isinstance(value, list) else value.get("tool_calls", []) if isinstance(value, dict) else []
    return _lenient_name_arguments(calls)


def mining_objects(raw: Any) -> list[str]:
    """Mining: a list of ``{"name", "arguments"}`` objects, other items skipped."""
    return [_render(call.get("name", ""), call.get("arguments", {}), ", ") for call in raw if isinstance(call, dict)]


def llama_json_parameters(raw: str) -> list[str]:
    """Llama 3.1/3.2 function calling: ``{"name", "parameters"}`` objects, ``;``-separated JSON, or
    else one Python literal (which Llama's handler ``eval``s)."""
    text = raw.replace("<|python_tag|>", "")
    if ";" in text:
        calls: Any = [json.loads(part) for part in text.split(";")]
    else:
        calls = literal_text(text)
        if type(calls) is dict:
            calls = [calls]
    return [_render(call["name"], call["parameters"]) for call in calls]


def _tool_call_blocks(raw: str) -> list[Any]:
    found = []
    for block in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", raw, re.DOTALL):
        try:
            found.append(json.loads(block))
        except (ValueError, RecursionError):
            continue
    return found


def tool_call_tags(raw: str) -> list[str]:
    """Qwen FC, Granite 4, Nanbeige, PelicanVL: JSON ``{"name", "arguments"}`` in ``<tool_call>``
    blocks, each on its own lines; a block that is no JSON is dropped."""
    calls = _tool_call_blocks(raw)
    if any(type(call) is not dict for call in calls):
        raise ValueError("a <tool_call> block is no object")
    return call_objects([{call["name"]: call["arguments"]} for call in calls])


def falcon_tool_call(raw: str) -> list[str]:
    """Falcon 3: the first ``<tool_call>…</tool_call>`` holds JSON calls (a ```` ```json ```` fence
    allowed)."""
    if "<tool_call>" not in raw:
        raise ValueError("no <tool_call> in the step")
    body = raw.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.strip("`").strip()
        if body.startswith("json"):
            body = body[4:].strip()
    calls = json.loads(body)
    return _name_arguments(calls if isinstance(calls, list) else [calls])


def granite_function_call(raw: str) -> list[str]:
    """Granite 20B: ``<function_call>``-separated JSON calls; a part that is no JSON is kept as
    it stands (BFCL then executes it as call text), ``no_function`` stands for no call."""
    out = []
    for part in (p.strip() for p in raw.split("<function_call>")):
        if not part:
            continue
        try:
            call = json.loads(part.strip())
        except (ValueError, RecursionError):
            out.append(part)
            continue
        name = call.get("name", "").strip()
        if name == "no_function":
            out.append("No function is called")
            continue
        out.append(_render(name, call.get("arguments", {})))
    return out


def cohere_tool_calls(raw: Any) -> list[str]:
    """Cohere: a list of ``{"tool_name", "parameters"}`` objects; anything else is no call."""
    if not isinstance(raw, list):
        return []
    return [_render(call["tool_name"], call["parameters"]) for call in raw]


def glm_lines(raw: str) -> list[str]:
    """GLM (local): the tool name on the first line, its JSON arguments on the second."""
    lines = raw.split("\n")
    return call_objects(lines[0] if len(lines) == 1 else [{lines[0]: lines[1]}])


def _between(text: str, start: str, end: str) -> tuple[str, str] | None:
    """(what lies between the first ``start`` and the last ``end``, what follows it), None when a
    tag is missing; IndexError where ``start`` occurs only after the last ``end``."""
    if start not in text or end not in text:
        return None
    before, after = text.rsplit(end, 1)
    return before.split(start, 1)[1], after


def minicpm_calls(raw: str) -> list[str]:
    """MiniCPM function calling: Python call statements between ``<|tool_call_start|>`` and
    ``<|tool_call_end|>`` (after any thought block, a ```` ```python ```` fence allowed); text that
    does not parse there is no call."""
    if not isinstance(raw, str):
        raise TypeError("the step is no text")
    thought = _between(raw, "<|thought_start|>", "<|thought_end|>")
    text = thought[1] if thought is not None else raw
    tagged = _between(text, "<|tool_call_start|>", "<|tool_call_end|>")
    if tagged is None:
        return []
    body = tagged[0].strip()
    if body.startswith("```"):
        body = body.lstrip("`").strip()
        if body.startswith("python"):
            body = body.lstrip("python").strip()
    if body.endswith("```"):
        body = body.rstrip("`").strip()
    try:
        statements = ast.parse(body).body
        if not all(isinstance(getattr(s, "value", None), ast.Call) for s in statements):
            return []
        calls = [_call(s.value) for s in statements]  # type: ignore[attr-defined]  # each an ast.Expr of a call (above)
    except NotEvaluated:
        raise
    except Exception:  # MiniCPM's parser answers "no call" for whatever fails  # noqa: BLE001
        return []
    return [f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
            for call in calls for name, arguments in call.items()]


# FunctionGemma: <start_function_call>call:NAME{key:value,…}<end_function_call>, strings in <escape>…<escape>.
_GEMMA_CALL = re.compile(r"<start_function_call>(.*?)<end_function_call>", re.DOTALL)
_GEMMA_ESCAPE = "<escape>"


def _gemma_scalar(text: str) -> Any:
    if text in ("null", "true", "false"):
        return {"null": None, "true": True, "false": False}[text]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


class _GemmaArguments:
    """FunctionGemma's argument notation read into values, as its handler reads it: ``{`` and
    ``[`` open an object or a list wherever they stand, ``}`` and ``]`` close the innermost open
    container (``}`` also forgets the innermost object's awaited key); a value read in an object
    that awaits no key is held, and a ``:`` after it makes it (as text) the key of the next value;
    a ``,`` drops a held value."""

    def __init__(self) -> None:
        self.top: list[Any] = []
        self.open: list[Any] = [self.top]
        self.keys: list[str | None] = []  # per ``{`` still open: the key awaiting a value
        self.held: Any = None
        self.token: list[str] = []

    def read(self, text: str) -> dict[str, Any]:
        i = 0
        while i < len(text):
            if text.startswith(_GEMMA_ESCAPE, i):
                i = self._escaped(text, i)
                continue
            if text[i] in "{[:]},":
                self._flush()
                self._structure(text[i])
            else:
                self.token.append(text[i])
            i += 1
        self._flush()
        return self.top[0] if self.top and isinstance(self.top[0], dict) else {}

    def _escaped(self, text: str, at: int) -> int:
        start = at + len(_GEMMA_ESCAPE)
        end = text.find(_GEMMA_ESCAPE, start)
        value, after = (text[at:], len(text)) if end == -1 else (text[start:end], end + len(_GEMMA_ESCAPE))
        self._flush()
        self._put(value)
        return after

    def _structure(self, char: str) -> None:
        if char == ":":
            if self.held is not None:
                key, self.held = str(self.held), None
                if isinstance(self.open[-1], dict) and self.keys:
                    self.keys[-1] = key
            return
        if char in "{[":
            container: Any = {} if char == "{" else []
            self._put(container)
            self.open.append(container)
            if char == "{":
                self.keys.append(None)
        elif char in "}]" and len(self.open) > 1:
            self.open.pop()
            if char == "}" and self.keys:
                self.keys.pop()
        self.held = None

    def _flush(self) -> None:
        text = "".join(self.token).strip()
        self.token.clear()
        if text:
            self._put(_gemma_scalar(text))

    def _put(self, value: Any) -> None:
        container = self.open[-1]
        if isinstance(container, list):
            container.append(value)
        elif self.keys and self.keys[-1] is not None:
            container[self.keys[-1]] = value
            self.keys[-1] = None
        else:
            self.held = value


def function_gemma_calls(raw: str) -> list[str]:
    """FunctionGemma: ``call:NAME{…}`` between ``<start_function_call>`` and ``<end_function_call>``."""
    out = []
    for block in _GEMMA_CALL.findall(raw):
        block = block.strip()
        if not block.startswith("call:"):
            continue
        brace = block.find("{")
        if brace == -1:
            out.append(f"{block[len('call:'):].strip()}()")
            continue
        arguments = _GemmaArguments().read(block[brace:])
        out.append(_render(block[len("call:"):brace].strip(), arguments, ", "))
    return out


def think_agent_json(raw: str) -> list[str]:
    """ThinkAgent, as BFCL's handler behaves: it builds call text and then reads it as objects, so
    only an empty answer after ``</think>`` decodes (to no call); every call fails."""
    after = raw.strip().replace("'", '"').split("</think>", 1)
    calls = json.loads(after[1].strip() if len(after) > 1 else "[]")
    if isinstance(calls, (list, dict, str)) and not calls:
        return []
    raise ValueError("BFCL's ThinkAgent decoder fails on every call")


# The decoders that read ``{name: arguments}`` objects, one call per key in order.
CALL_OBJECT_DECODERS: frozenset[Decoder] = frozenset({call_objects, call_object_list, call_list, gemini_call_objects})


# -- handler class → decoder --------------------------------------------------------------------
_BY_MODE = "by is_fc_model"  # the handler reads call objects with function calling, Python text without
HANDLER_DECODERS: dict[str, Decoder | str] = {
    # call objects with function calling, Python call text without
    **dict.fromkeys(("ClaudeHandler", "MistralHandler", "OpenAICompletionsHandler", "OpenAIResponsesHandler",
                     "DeepSeekAPIHandler", "FireworksHandler", "FunctionaryHandler", "GLMAPIHandler",
                     "GoGoAgentHandler", "GrokHandler", "KimiHandler", "LingAPIHandler", "NanbeigeAPIHandler",
                     "NovitaHandler", "QwenAPIHandler", "QwenAgentThinkHandler", "QwenAgentNoThinkHandler",
                     "WriterHandler"), _BY_MODE),
    "GeminiHandler": _BY_MODE,
    # Python call text
    **dict.fromkeys(("BielikHandler", "DeepseekReasoningHandler", "GemmaHandler", "LlamaHandler", "MiniCPMHandler",
                     "QwenHandler", "NvidiaHandler"), python_call_text),
    "PhiHandler": fenced_python_text,
    "NemotronHandler": toolcall_tag_text,
    "GorillaHandler": gorilla_text,
    # call objects
    **dict.fromkeys(("ArchHandler", "Granite3FCHandler", "PhiFCHandler"), call_object_list),
    **dict.fromkeys(("MistralFCHandler", "NovaHandler"), call_list),
    "MiningHandler": mining_objects,
    "DMCitoHandler": mining_objects,
    "CohereHandler": cohere_tool_calls,
    # JSON text
    **dict.fromkeys(("SalesforceLlamaHandler", "SalesforceQwenHandler"), xlam_json),
    "BitAgentHandler": json_name_arguments,
    "HammerHandler": hammer_json,
    "LlamaHandler_3_1": llama_json_parameters,
    **dict.fromkeys(("QwenFCHandler", "Granite4FCHandler", "NanbeigeFCHandler", "PelicanVLFCHandler"), tool_call_tags),
    "Falcon3FCHandler": falcon_tool_call,
    "GraniteFunctionCallingHandler": granite_function_call,
    "GLMHandler": glm_lines,
    "MiniCPMFCHandler": minicpm_calls,
    "FunctionGemmaHandler": function_gemma_calls,
    "ThinkAgentHandler": think_agent_json,
}
_BY_MODE_DECODERS: dict[str, tuple[Decoder, Decoder]] = {"GeminiHandler": (tool_code_text, gemini_call_objects)}


def decoder_for(handler: str, is_fc: bool) -> Decoder:
    """The decoder of a handler class (KeyError for a class the table lacks)."""
    decoder = HANDLER_DECODERS[handler]
    if isinstance(decoder, str):
        prompting, calling = _BY_MODE_DECODERS.get(handler, (python_call_text, call_objects))
        return calling if is_fc else prompting
    return decoder


def decode_step(decoder: Decoder, raw: Any) -> list[str]:
    """The call strings BFCL's runner takes from a step: :class:`Undecodable` (with what failed)
    where its decoder raises; an empty list where it decodes to nothing."""
    try:
        decoded = decoder(raw)
    except Undecodable:
        raise
    except Exception as exc:  # BFCL's runner skips a step whatever its decoder raises  # noqa: BLE001
        raise Undecodable(f"{type(exc).__name__}: {str(exc)[:160]}") from None
    if len(decoded) == 1 and not decoded[0]:  # BFCL's runner: one empty call is no call
        return []
    return decoded


def content_candidates() -> list[tuple[str, bool]]:
    """One (handler class, is_fc_model) per distinct decoder, in the table's order: what a file of a
    model BFCL's config lacks is tried with."""
    seen: dict[Decoder, tuple[str, bool]] = {}
    for handler, decoder in HANDLER_DECODERS.items():
        for is_fc in ((True, False) if isinstance(decoder, str) else (True,)):
            seen.setdefault(decoder_for(handler, is_fc), (handler, is_fc))
    return list(seen.values())
