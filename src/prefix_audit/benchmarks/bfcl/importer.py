"""Import BFCL multi-turn result files (as ``bfcl generate`` writes them) into rollout records.

A result file is JSON Lines: ``id`` and ``result`` = per turn a list of steps. A step is what the
model produced in one response, in the shape the handler that ran the model leaves there:

* function-calling handlers: a list of ``{tool_name: arguments}`` objects, arguments as JSON text
  or as an object (``[{"cd": "{\"folder\": \"x\"}"}]``; several keys are several calls; ``[]``
  when the model answered without a call);
* prompting handlers: a string, the model's text (``"[cd(folder='x')]"`` or prose);
* a list of call strings (``["cd(folder='x')"]``): the decoded form BFCL's checker takes, which
  no BFCL handler writes but converters from other harnesses may.

Every entry becomes a rollout record:

* a ``result`` that is no list of turns — BFCL's "Error during inference …" string, which comes
  with a ``traceback`` — is an infrastructure failure (``infra_error``: the model call failed, no
  action was observed; BFCL scores it 0);
* a step's calls are the rollout's actions whatever their shape (a malformed one is a schema
  failure at scoring); what BFCL's evaluation *executes* follows its runner, which decodes each
  step whole with the handler's decoder and skips a step it cannot decode or that decodes to
  nothing — that step executes nothing. The steps it skips are listed in
  ``meta["bfcl_undecoded_steps"]`` (``[turn, step, reason]``), which Y follows (:mod:`.replay`).
  Which decoder applies is read from the file: function-calling when any step of the file is a
  call object, else prompting (``meta["bfcl_decoding"]``). Under function calling a string step
  is the model's text; under prompting it is decoded as calls when it parses as calls, and BFCL's
  decoder keeps only keyword arguments, so such a step's calls execute without their positional
  ones (``meta["bfcl_keywords_only_steps"]``). Not mirrored: the prompting decoder's coercion of
  non-literal arguments (a bare name becomes its text, arithmetic is evaluated, a nested call
  becomes text) and dotted callees — here those calls are schema failures that execute nothing —
  and the decoders of individual handlers other than the two stock ones.

Nothing is evaluated; call text is parsed with :mod:`ast`. Only a line that is no record at all
(not JSON, no string ``id``, turns that are not lists of steps) is quarantined, with its location
and reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...calls import ToolCall, decode_call_list, parse_call_string, structured_call
from ...decode import (
    RECORD_SHAPE_ERRORS,
    DecodeError,
    JsonLine,
    count,
    excerpt_of,
    iter_json_lines,
    seconds,
    shape_reason,
)
from ...records import BadLine, Located, Rollout, Step, Usage, rollout_id_for
from ...registry import ImportRequest
from .data import DATASET

FUNCTION_CALLING = "function_calling"
PROMPTING = "prompting"
INFRA_ERROR_CHARS = 500


class StepError(ValueError):
    pass


def _fc_decode_error(raw: Any) -> str | None:
    """Why BFCL's function-calling decoder fails on a step (None: it decodes). Its rule: a step
    is a list of objects (or one object); every key is a tool name, every value an object or
    the JSON text of one."""
    items = [raw] if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        return f"a {type(raw).__name__} step is the model's text, not a function call"
    for item in items:
        if not isinstance(item, dict):
            return f"a {type(item).__name__} where a function-call object belongs"
        for name, arguments in item.items():
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError) as exc:  # not JSON, or an integer too long for it
                    return f"arguments of {name!r} are not valid JSON: {exc}"
            if not isinstance(arguments, dict):
                return f"arguments of {name!r} are a {type(arguments).__name__}, not an object"
    return None


def _malformed(calls: tuple[ToolCall, ...]) -> str | None:
    broken = next((c for c in calls if not c.well_formed), None)
    return f"a call does not parse: {broken.parse_error}" if broken is not None else None


def _fc_calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for i, item in enumerate([raw] if isinstance(raw, dict) else raw):
        if isinstance(item, str):
            calls.append(parse_call_string(item))
        elif isinstance(item, dict):
            calls.extend(structured_call(name, arguments) for name, arguments in item.items())
        else:
            calls.append(ToolCall(None, raw=excerpt_of(item), parse_error=f"{where}[{i}]: a call must be an "
                                                                          f"object or a string"))
    return tuple(calls)


def _prompting_calls(text: str) -> list[ToolCall] | None:
    """The calls in prompting output, cleaned as BFCL's prompting decoder cleans it (backticks,
    newlines and spaces around it, the list brackets optional); None when it holds no call."""
    body = text.strip("`\n ")
    body = ("" if body.startswith("[") else "[") + body + ("" if body.endswith("]") else "]")
    return decode_call_list(body.strip().strip("'"))


def step_from_result(raw: Any, where: str, decoding: str) -> tuple[Step, str | None]:
    """One BFCL step → a :class:`Step` and why BFCL's runner does not execute it (None: it does)."""
    if isinstance(raw, str):
        decoded = _prompting_calls(raw) if decoding == PROMPTING else None
        step = Step((), raw) if decoded is None else Step(tuple(decoded))
    elif isinstance(raw, (dict, list)):
        step = Step(_fc_calls(raw, where))
    else:
        raise StepError(f"{where}: a step must be a string, an object or a list, got {type(raw).__name__}")
    if not step.calls:
        return step, "no call" if step.text is None else "the model's text, no call"
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return step, _malformed(step.calls)  # already the decoded calls BFCL's checker takes
    if decoding == FUNCTION_CALLING:
        return step, _fc_decode_error(raw)
    if not isinstance(raw, str):
        return step, f"a {type(raw).__name__} step is not prompting output (a string)"
    return step, _malformed(step.calls)  # the prompting decoder reads the text as a list of calls


def _is_call_object_step(raw: Any) -> bool:
    return isinstance(raw, dict) or (isinstance(raw, list) and any(isinstance(item, dict) for item in raw))


def decoding_of(results: list[Any]) -> str:
    """The decoder BFCL's evaluation applies to a file: function calling when any step of any
    entry is a call object, else prompting."""
    for obj in results:
        turns = obj.get("result") if isinstance(obj, dict) else None
        if isinstance(turns, list) and any(isinstance(t, list) and any(map(_is_call_object_step, t)) for t in turns):
            return FUNCTION_CALLING
    return PROMPTING


def _infra_error(result: Any) -> str:
    text = result if isinstance(result, str) else f"'result' is a {type(result).__name__}, not a list of turns"
    first = text.strip().splitlines()[0] if text.strip() else "empty 'result'"
    return first[:INFRA_ERROR_CHARS]


def rollout_from_result(obj: Any, model: str, method: str, decoding: str = FUNCTION_CALLING) -> Rollout:
    if not isinstance(obj, dict):
        raise StepError(f"a result line must be a JSON object, got {type(obj).__name__}")
    if not isinstance(obj.get("id"), str):
        raise StepError("missing or non-string 'id'")
    task_id = obj["id"]
    rid = rollout_id_for(DATASET, model, method, task_id)
    result = obj.get("result")
    if not isinstance(result, list):
        # BFCL's runner: a result that is no list is an inference error, scored 0.
        meta = {"bfcl_decoding": decoding, "bfcl_undecoded_steps": [], "bfcl_keywords_only_steps": []}
        return Rollout(DATASET, task_id, model, method, rid, (), "import:bfcl", meta, infra_error=_infra_error(result))
    if not all(isinstance(t, list) for t in result):
        raise StepError("'result' must be a list of turns, each a list of steps")
    turns, undecoded, keywords_only = [], [], []
    for t, turn in enumerate(result):
        steps = []
        for s, raw in enumerate(turn):
            step, why = step_from_result(raw, f"result[{t}][{s}]", decoding)
            steps.append(step)
            if why is not None and step.calls:
                undecoded.append([t, s, why])
            elif isinstance(raw, str) and any(c.args for c in step.calls):
                keywords_only.append([t, s])
        turns.append(tuple(steps))
    meta = {"bfcl_decoding": decoding, "bfcl_undecoded_steps": undecoded, "bfcl_keywords_only_steps": keywords_only}
    try:
        usage, accounting_error = _usage(obj), None
    except (StepError, DecodeError) as exc:  # bad accounting costs the accounting, not the entry
        usage, accounting_error = (), str(exc)
    return Rollout(DATASET, task_id, model, method, rid, tuple(turns), "import:bfcl", meta, usage=usage,
                   accounting_error=accounting_error)


MAX_ACCOUNTING_DEPTH = 8  # BFCL nests its accounting per turn and step: two levels


def _flat(value: Any, where: str) -> list[Any]:
    """BFCL accounting is nested per turn and step; flattened without recursion."""
    out: list[Any] = []
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, list):
            out.append(item)
        elif depth >= MAX_ACCOUNTING_DEPTH:
            raise StepError(f"{where} is nested deeper than {MAX_ACCOUNTING_DEPTH} lists")
        else:
            stack.extend((x, depth + 1) for x in reversed(item))
    return out


def _usage(obj: dict) -> tuple[Usage, ...]:
    """One executor call record per model step, from BFCL's per-step token counts and latency."""
    keys = ("input_token_count", "output_token_count", "latency")
    if not all(k in obj for k in keys):
        return ()
    inputs, outputs, latency = (_flat(obj[k], k) for k in keys)
    if not len(inputs) == len(outputs) == len(latency):
        raise StepError(f"token counts and latency have different lengths "
                        f"({len(inputs)}, {len(outputs)}, {len(latency)})")
    return tuple(Usage("executor", count(i, f"input_token_count[{n}]"), count(o, f"output_token_count[{n}]"),
                       seconds(t, f"latency[{n}]")) for n, (i, o, t) in enumerate(zip(inputs, outputs, latency)))


def import_result_file(path: str | Path, model: str | None = None,
                       method: str = "imported") -> Iterator[Located | BadLine]:
    """Yield a located rollout per line of a BFCL result file, a :class:`BadLine` for a line that
    is no record at all.

    ``model`` defaults to the result file's parent directory name, which is where BFCL puts the
    model name (``result/<model>/.../BFCL_v4_multi_turn_base_result.json``).
    """
    path = Path(path)
    model = model or path.parent.name or "unknown"
    lines = list(iter_json_lines(path))
    decoding = decoding_of([item.value for item in lines if isinstance(item, JsonLine)])
    for item in lines:
        if isinstance(item, BadLine):
            yield item
            continue
        try:
            yield Located(item.path, item.line, rollout_from_result(item.value, model, method, decoding))
        except RECORD_SHAPE_ERRORS as exc:  # StepError, or a field of the wrong shape
            obj = item.value
            rid = obj.get("id") if isinstance(obj, dict) and isinstance(obj.get("id"), str) else None
            yield BadLine(item.path, item.line, f"unusable BFCL result: {shape_reason(exc)}", rid, item.excerpt)


def is_result_file(path: Path) -> bool:
    """A BFCL result file: JSON Lines whose first line is an object with ``id`` and ``result``."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            first = next((raw for raw in fh if raw.strip()), b"")
        obj = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "id" in obj and "result" in obj


def import_bfcl(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import bfcl``: a result file, each entry checked against the BFCL data (the
    pinned package is fetched when absent)."""
    bench = request.open(DATASET)
    for item in import_result_file(request.source, model=request.model, method=request.method):
        if not isinstance(item, BadLine) and not bench.has_task(item.rollout.task_id):
            item = BadLine(item.path, item.line, f"unknown BFCL multi-turn id {item.rollout.task_id!r}",
                           item.rollout.task_id)
        yield item
