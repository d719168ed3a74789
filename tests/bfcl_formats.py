"""The same calls written in each BFCL handler family's own output format, for metamorphic tests.

Each writer takes the calls of one step (keyword arguments, JSON values) and returns the step as
that handler stores it in a result file (GLM's format holds one call: write one call per step); a
model key of BFCL's config read by that handler goes with it, so a file written in the format is
read by the matching decoder."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prefix_audit.core.calls import ToolCall

Writer = Callable[[list[ToolCall]], Any]


def _objects(calls: list[ToolCall], key: str = "arguments") -> list[dict]:
    return [{"name": c.name, key: dict(c.kwargs)} for c in calls]


def _python(calls: list[ToolCall]) -> str:
    return "[" + ", ".join(c.render() for c in calls) + "]"


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
    return "".join(f"<start_function_call>call:{c.name}{_gemma_value(dict(c.kwargs))}<end_function_call>"
                   for c in calls)


def _llama(calls: list[ToolCall]) -> str:
    """JSON objects joined by ``;``; one call alone is read with ``eval``, so it is written as a
    Python literal (JSON's true/false/null are no Python names)."""
    objects = _objects(calls, "parameters")
    return ";".join(map(json.dumps, objects)) if len(objects) > 1 else repr(objects[0])


# handler family → (a model key of the pinned config whose handler reads it, the writer)
FORMATS: dict[str, tuple[str, Writer]] = {
    "call objects (OpenAI FC)": ("gpt-4o-2024-11-20-FC",
                                 lambda calls: [{c.name: json.dumps(c.kwargs)} for c in calls]),
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
                                 lambda calls: "<|tool_call_start|>\n```python\n" + "\n".join(c.render() for c in calls)
                                 + "\n```\n<|tool_call_end|>"),
    "FunctionGemma": ("google/functiongemma-270m-it-FC", _gemma),
    "GLM name and JSON lines": ("THUDM/glm-4-9b-chat",
                                lambda calls: "\n".join(f"{c.name}\n{json.dumps(c.kwargs)}" for c in calls[:1])),
    "BitAgent JSON": ("BitAgent/BitAgent-Bounty-8B", lambda calls: json.dumps(_objects(calls))),
    "Cohere tool_name/parameters": ("command-a-03-2025-FC",
                                    lambda calls: [{"tool_name": c.name, "parameters": dict(c.kwargs)} for c in calls]),
}
