"""Import BFCL multi-turn result files (as ``bfcl generate`` writes them) into rollout records.

A result file is JSON Lines: ``id`` and ``result`` = per turn a list of steps. A step is what the
model produced in one response, in any of the shapes BFCL handlers leave there:

* a list of decoded call strings, ``["cd(folder='x')", "ls()"]``;
* a list of function-calling dicts, ``[{"cd": "{\\"folder\\": \\"x\\"}"}]`` (arguments as JSON
  text or as an object), or ``[{"name": "cd", "arguments": {...}}]``;
* a string: prompting-style output (``"[cd(folder='x')]"``) or plain prose, which is a text step.

Nothing is evaluated; call text is parsed with :mod:`ast`. A line that cannot be used is
quarantined with its location and reason; every other line is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...calls import ToolCall, decode_call_list, parse_call_string, structured_call
from ...records import BadLine, Located, Rollout, Step, Usage, iter_json_lines, rollout_id_for
from ...registry import ImportRequest
from .data import DATASET


class StepError(ValueError):
    pass


def _calls_from_item(item: Any, where: str) -> list[ToolCall]:
    if isinstance(item, str):
        return [parse_call_string(item)]
    if isinstance(item, dict):
        if "name" in item and ("arguments" in item or len(item) <= 2):
            return [structured_call(item["name"], item.get("arguments"), item.get("id"))]
        if len(item) == 1:
            (name, arguments), = item.items()
            return [structured_call(name, arguments)]
        raise StepError(f"{where}: a function-call object must have one key (the tool name) or name/arguments")
    raise StepError(f"{where}: a call must be a string or an object, got {type(item).__name__}")


def step_from_result(raw: Any, where: str) -> Step:
    """One BFCL step (see module docstring) → a :class:`Step`."""
    if isinstance(raw, str):
        calls = decode_call_list(raw)
        return Step((), raw) if calls is None else Step(tuple(calls))
    if isinstance(raw, dict):
        raw = [raw]
    if isinstance(raw, list):
        calls: list[ToolCall] = []
        for i, item in enumerate(raw):
            calls.extend(_calls_from_item(item, f"{where}[{i}]"))
        return Step(tuple(calls))
    raise StepError(f"{where}: a step must be a string, an object or a list, got {type(raw).__name__}")


def rollout_from_result(obj: Any, model: str, method: str) -> Rollout:
    if not isinstance(obj, dict):
        raise StepError(f"a result line must be a JSON object, got {type(obj).__name__}")
    if not isinstance(obj.get("id"), str):
        raise StepError("missing or non-string 'id'")
    result = obj.get("result")
    if not isinstance(result, list) or not all(isinstance(t, list) for t in result):
        raise StepError("'result' must be a list of turns, each a list of steps "
                        "(single-turn BFCL categories are not multi-turn results)")
    turns = tuple(tuple(step_from_result(step, f"result[{t}][{s}]") for s, step in enumerate(turn))
                  for t, turn in enumerate(result))
    task_id = obj["id"]
    return Rollout(DATASET, task_id, model, method, rollout_id_for(DATASET, model, method, task_id),
                   turns, source="import:bfcl", usage=_usage(obj))


def _flat(value: Any, where: str) -> list[float]:
    """BFCL accounting is nested per turn and step; numbers must be non-negative."""
    if isinstance(value, list):
        return [x for item in value for x in _flat(item, where)]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise StepError(f"{where} holds {value!r}, not a non-negative number")
    return [value]


def _usage(obj: dict) -> tuple[Usage, ...]:
    """One executor call record per model step, from BFCL's per-step token counts and latency."""
    keys = ("input_token_count", "output_token_count", "latency")
    if not all(k in obj for k in keys):
        return ()
    inputs, outputs, latency = (_flat(obj[k], k) for k in keys)
    if not len(inputs) == len(outputs) == len(latency):
        raise StepError(f"token counts and latency have different lengths "
                        f"({len(inputs)}, {len(outputs)}, {len(latency)})")
    return tuple(Usage("executor", int(i), int(o), float(t)) for i, o, t in zip(inputs, outputs, latency))


def import_result_file(path: str | Path, model: str | None = None, method: str = "imported") -> Iterator[Located | BadLine]:
    """Yield a located rollout per usable line of a BFCL result file, a :class:`BadLine` otherwise.

    ``model`` defaults to the result file's parent directory name, which is where BFCL puts the
    model name (``result/<model>/.../BFCL_v4_multi_turn_base_result.json``).
    """
    path = Path(path)
    model = model or path.parent.name or "unknown"
    for item in iter_json_lines(path):
        if isinstance(item, BadLine):
            yield item
            continue
        try:
            yield Located(item.path, item.line, rollout_from_result(item.value, model, method))
        except StepError as exc:
            obj = item.value
            rid = obj.get("id") if isinstance(obj, dict) and isinstance(obj.get("id"), str) else None
            yield BadLine(item.path, item.line, f"unusable BFCL result: {exc}", rid, item.excerpt)


def import_bfcl(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import bfcl``: a result file, each entry checked against the BFCL data (the
    pinned package is fetched when absent)."""
    bench = request.open(DATASET)
    for item in import_result_file(request.source, model=request.model, method=request.method):
        if not isinstance(item, BadLine) and not bench.has_task(item.rollout.task_id):
            item = BadLine(item.path, item.line, f"unknown BFCL multi-turn id {item.rollout.task_id!r}",
                           item.rollout.task_id)
        yield item
