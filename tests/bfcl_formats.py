"""The same calls written in each BFCL handler family's own output format, for metamorphic tests.

Each writer takes the calls of one step (keyword arguments, JSON values) and returns the step as
that handler stores it in a result file; a model key of BFCL's config read by that handler goes
with it, so a file written in the format is read by the matching decoder. A call whose arguments
do not parse (a :class:`ToolCall` that is not well formed, its arguments' text in ``raw``, as
:func:`~prefix_audit.core.calls.structured_call` reads a function-calling step) is written with
that text where the format's arguments go: BFCL's decoder then fails on the whole step, as it does
on the call object. A format that cannot write a step raises :class:`Unwritable`, saying why.

:func:`reencoded` writes a function-calling result's turns in another format, and
:func:`check_faithful` checks the re-encoding against BFCL's own decoders (``decode_execute``), so
BFCL's runner executes the same calls, and nothing where it executed nothing, in both files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from prefix_audit.core.calls import ToolCall, parse_call_string, structured_call

Writer = Callable[[list[ToolCall]], Any]


class Unwritable(ValueError):
    """A handler's format cannot write these calls as the same model behaviour."""


def _arguments(call: ToolCall) -> Any:
    """What a format writes as a call's arguments: its keyword arguments, or the text of
    arguments that do not parse."""
    return dict(call.kwargs) if call.well_formed else call.raw


def _objects(calls: list[ToolCall], key: str = "arguments") -> list[dict]:
    return [{"name": c.name, key: _arguments(c)} for c in calls]


def _call_text(call: ToolCall) -> str:
    return call.render() if call.well_formed else f"{call.name}({call.raw})"


def _python(calls: list[ToolCall]) -> str:
    return "[" + ", ".join(map(_call_text, calls)) + "]"


def _gemma_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"<escape>{value}<escape>"
    if isinstance(value, list):
        return "[" + ",".join(map(_gemma_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _gemma(calls: list[ToolCall]) -> str:
    if not all(c.well_formed for c in calls):
        raise Unwritable("FunctionGemma's decoder reads whatever stands between a call's braces as its arguments: "
                         "its notation has no arguments that do not parse")
    return "".join(f"<start_function_call>call:{c.name}{_gemma_value(dict(c.kwargs))}<end_function_call>"
                   for c in calls)


def _glm(calls: list[ToolCall]) -> str:
    if len(calls) != 1:
        raise Unwritable("GLM's format holds one call per step")
    if not calls[0].well_formed:
        raise Unwritable("GLM's format with arguments that are no JSON (a name line, a line of text) is any "
                         "two-line message: nothing tells the call")
    return f"{calls[0].name}\n{json.dumps(calls[0].kwargs)}"


def _llama(calls: list[ToolCall]) -> str:
    """JSON objects joined by ``;``. One call alone is read with ``eval``: a well-formed one is
    written as a Python literal (JSON's true/false/null are no Python names); one whose arguments do
    not parse as the JSON a model writes (its arguments a string, which ``eval`` reads alike)."""
    objects = _objects(calls, "parameters")
    return repr(objects[0]) if len(calls) == 1 and calls[0].well_formed else ";".join(map(json.dumps, objects))


# handler family → (a model key of the pinned config whose handler reads it, the writer)
FORMATS: dict[str, tuple[str, Writer]] = {
    "call objects (OpenAI FC)": ("gpt-4o-2024-11-20-FC",
                                 lambda calls: [{c.name: json.dumps(c.kwargs) if c.well_formed else c.raw}
                                                for c in calls]),
    "Python call text (prompting)": ("gpt-4o-2024-11-20", _python),
    "Gemini tool_code fence": ("gemini-2.5-flash", lambda calls: "```tool_code\n" + _python(calls) + "\n```"),
    "xLAM JSON text": ("Salesforce/Llama-xLAM-2-8b-fc-r", lambda calls: json.dumps(_objects(calls))),
    "Llama 3.1 {name, parameters}": ("meta-llama/Llama-3.1-8B-Instruct-FC", _llama),
    "Qwen FC <tool_call>": ("Qwen/Qwen3-8B-FC",
                            lambda calls: "\n".join(f"<tool_call>\n{json.dumps(o)}\n</tool_call>"
                                                    for o in _objects(calls))),
    "Hammer fenced tool_calls": ("MadeAgents/Hammer2.1-7b",
                                 lambda calls: "```" + json.dumps({"tool_calls": _objects(calls)}) + "```"),
    "Granite <function_call>": ("ibm-granite/granite-20b-functioncalling",
                                lambda calls: "".join(f"<function_call> {json.dumps(o)}" for o in _objects(calls))),
    "Falcon 3 <tool_call> list": ("tiiuae/Falcon3-7B-Instruct-FC",
                                  lambda calls: "<tool_call>" + json.dumps(_objects(calls)) + "</tool_call>"),
    "MiniCPM tool_call tokens": ("openbmb/MiniCPM3-4B-FC",
                                 lambda calls: "<|tool_call_start|>\n```python\n" + "\n".join(map(_call_text, calls))
                                 + "\n```\n<|tool_call_end|>"),
    "FunctionGemma": ("google/functiongemma-270m-it-FC", _gemma),
    "GLM name and JSON lines": ("THUDM/glm-4-9b-chat", _glm),
    "BitAgent JSON": ("BitAgent/BitAgent-Bounty-8B", lambda calls: json.dumps(_objects(calls))),
    "Cohere tool_name/parameters": ("command-a-03-2025-FC",
                                    lambda calls: [{"tool_name": c.name, "parameters": _arguments(c)} for c in calls]),
}


def empty_step(write: Writer) -> Any:
    """The step a handler's format ends a turn without a call with: a list for call-object
    handlers, text for the others."""
    return [] if isinstance(write([ToolCall("x", (), {})]), list) else ""


def function_calls(raw: Any) -> list[ToolCall]:
    """The calls of a function-calling step (``[{name: arguments text}]``) as written."""
    return [structured_call(name, arguments) for item in raw for name, arguments in item.items()]


def reencoded(result: list[list[Any]], write: Writer) -> list[list[Any]]:
    """A function-calling result's turns in the format of ``write``: a step whose calls all parse
    as one step per call, a step with a call that does not (which BFCL's runner executes nothing
    of) whole, an empty step as the format's own empty step."""
    end = empty_step(write)
    turns = []
    for turn in result:
        steps = []
        for raw in turn:
            calls = function_calls(raw)
            if not calls:
                steps.append(end)
            elif all(c.well_formed for c in calls):
                steps += [write([c]) for c in calls]
            else:
                steps.append(write(calls))
        turns.append(steps)
    return turns


def executed(decode: Callable[[Any], list[str]], raw: Any) -> list[Any] | None:
    """What BFCL's runner executes of a step read with ``decode`` (a handler's ``decode_execute``):
    its calls — (name, positional, keyword arguments), or the call text without blanks where it
    does not parse (its executor fails on it however spaced) — or None where it executes nothing
    (the decoder raises, or decodes to no call)."""
    try:
        decoded = decode(raw)
    except Exception:  # BFCL's runner skips a step whatever its decoder raises  # noqa: BLE001
        return None
    if not decoded or decoded == [""]:
        return None
    return [(c.name, c.args, c.kwargs) if c.well_formed else "".join(text.split())
            for c, text in ((parse_call_string(text), text) for text in decoded)]


def check_faithful(result: list[list[Any]], turns: list[list[Any]], original: Callable[[Any], list[str]],
                   decode: Callable[[Any], list[str]]) -> None:
    """Raise :class:`Unwritable` unless BFCL's runner executes the same calls of the re-encoded
    ``turns`` (read with ``decode``) as of the function-calling ``result`` (read with ``original``),
    step by step (a step of one call per call of the original's)."""
    for turn, written in zip(result, turns, strict=True):
        ours = [call for raw in turn for call in (executed(original, raw) or [None])]
        theirs = [call for raw in written for call in (executed(decode, raw) or [None])]
        if ours != theirs:
            raise Unwritable("BFCL's own decoders execute other calls of it in this format (e.g. a name that is "
                             "no Python name, in call text)")


def reencoded_lines(lines: list[dict], write: Writer, original: Callable[[Any], list[str]],
                    decode: Callable[[Any], list[str]]) -> tuple[list[dict], Counter[str]]:
    """The result lines of a function-calling file that have steps (an inference error has none)
    written in the format of ``write`` (:func:`reencoded`), each only where BFCL's own decoders
    execute the same of it (:func:`check_faithful`); and the entries left out, by reason."""
    written, left_out = [], Counter[str]()
    for line in lines:
        if not isinstance(line["result"], list):
            continue
        try:
            turns = reencoded(line["result"], write)
            check_faithful(line["result"], turns, original, decode)
        except Unwritable as exc:
            left_out[str(exc)] += 1
            continue
        written.append({"id": line["id"], "result": turns})
    return written, left_out


class Behaviour(NamedTuple):
    """What the same model behaviour gives in every format: an imported rollout's episode."""

    T: int | None
    FED: int | None
    category: str | None
    Y: int | None
    undecodable: int  # steps


def same_behaviour(episode: Any) -> Behaviour:
    return Behaviour(episode.T, episode.FED, episode.category, episode.Y, episode.rollout.recorded.undecoded_count)
