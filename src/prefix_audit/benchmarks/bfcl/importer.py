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

What the log recorded is handed over with each rollout (:class:`~prefix_audit.records.Recorded`),
for the audit to check itself against: BFCL's own verdict on the entry from its score file
(:mod:`.scores`), and — where the file has an ``inference_log`` — the tool result BFCL's run
recorded for each call of each step (its ``tool`` messages, in call order; an error is what
BFCL's executor reports as one). A text step is listed as undecodable when the log shows BFCL's
own decoder read calls in it (its ``model_response_decoded``), or — in a file without an
``inference_log`` — when it looks like a call (:func:`~prefix_audit.calls.looks_like_calls`).

Nothing is evaluated; call text is parsed with :mod:`ast`. Only a line that is no record at all
(not JSON, no string ``id``, turns that are not lists of steps) is quarantined, with its location
and reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
from ...record_check import literal_value
from ...records import (
    BadLine,
    Located,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    Usage,
    call_like_text_steps,
    rollout_id_for,
)
from ...registry import ImportRequest
from .data import DATASET
from .loader import is_error_value
from .scores import find_score_file

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


@dataclass(frozen=True)
class LoggedStep:
    """What BFCL's ``inference_log`` recorded of one step: the calls its decoder read (None: it
    could not decode the step) and the tool results, in call order."""

    decoded: tuple[str, ...] | None
    results: tuple[str, ...]


_STEP_KEY = re.compile(r"^step_(\d+)$")


def logged_steps(log: Any) -> dict[tuple[int, int], LoggedStep]:
    """(turn, step) → what the ``inference_log`` recorded there. The log lists, per turn, the state
    it began in (a list) and the turn itself (an object with ``step_<n>`` message lists); anything
    of another shape is left out."""
    out: dict[tuple[int, int], LoggedStep] = {}
    if not isinstance(log, list):
        return out
    turns = [item for item in log if isinstance(item, dict)]
    for t, turn in enumerate(turns):
        for key, messages in turn.items():
            match = _STEP_KEY.match(key) if isinstance(key, str) else None
            if match is None or not isinstance(messages, list):
                continue
            decoded: tuple[str, ...] | None = None
            results = []
            for m in messages:
                if not isinstance(m, dict):
                    continue
                if m.get("role") == "tool":
                    content = m.get("content")
                    results.append(content if isinstance(content, str) else excerpt_of(content))
                elif m.get("role") == "handler_log" and isinstance(m.get("model_response_decoded"), list):
                    decoded = tuple(str(c) for c in m["model_response_decoded"])
            out[(t, int(match.group(1)))] = LoggedStep(decoded, tuple(results))
    return out


def recorded_error(content: str) -> bool:
    """Whether a recorded BFCL tool result is an error as BFCL's executor reports one: an exception
    (``Error during execution: …``) or a returned error value (see :func:`~.loader.is_error_value`)."""
    if content.startswith("Error during execution"):
        return True
    return content[:1] in ("[", "{") and is_error_value(literal_value(content))


def _with_log(turns: list[tuple[Step, ...]], logged: Mapping[tuple[int, int], LoggedStep],
              undecoded: list[list[Any]]) -> tuple[tuple[tuple[Step, ...], ...], list[tuple[int, int, str]]]:
    """The steps with the tool results the log recorded, and every step the decoder could not read:
    those BFCL's runner skips (``undecoded``) and text steps in which the log's own decoder read
    calls (or, without a log, that look like calls)."""
    unread = [(t, s, str(why)) for t, s, why in undecoded]
    out = []
    for t, turn in enumerate(turns):
        steps = []
        for s, step in enumerate(turn):
            seen = logged.get((t, s))
            if seen is not None:
                step = Step(step.calls, step.text, tuple(RecordedResult.of(r, recorded_error(r)) for r in seen.results))
            if not step.calls and step.text and seen is not None and seen.decoded:
                unread.append((t, s, f"BFCL's own decoder read {len(seen.decoded)} call(s) here "
                                     f"({seen.decoded[0][:80]}); this reading found none"))
            steps.append(step)
        out.append(tuple(steps))
    if not logged:  # no record of BFCL's own decoding: text that looks like a call
        unread += call_like_text_steps(out)
    return tuple(out), sorted(unread)


def _infra_error(result: Any) -> str:
    text = result if isinstance(result, str) else f"'result' is a {type(result).__name__}, not a list of turns"
    first = text.strip().splitlines()[0] if text.strip() else "empty 'result'"
    return first[:INFRA_ERROR_CHARS]


def rollout_from_result(obj: Any, model: str, method: str, decoding: str = FUNCTION_CALLING,
                        verdict: tuple[int | None, str] = (None, "no BFCL score file given")) -> Rollout:
    """One result line as a rollout; ``verdict`` is BFCL's own (recorded Y and its words, from the
    score file) or None and why there is none."""
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
        return Rollout(DATASET, task_id, model, method, rid, (), "import:bfcl", meta, infra_error=_infra_error(result),
                       recorded=Recorded.of(*verdict))
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
    logged_turns, unread = _with_log(turns, logged_steps(obj.get("inference_log")), undecoded)
    return Rollout(DATASET, task_id, model, method, rid, logged_turns, "import:bfcl", meta, usage=usage,
                   accounting_error=accounting_error, recorded=Recorded.of(*verdict, unread))


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


def import_result_file(path: str | Path, model: str | None = None, method: str = "imported",
                       score: str | Path | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per line of a BFCL result file, a :class:`BadLine` for a line that
    is no record at all.

    ``model`` defaults to the result file's parent directory name, which is where BFCL puts the
    model name (``result/<model>/.../BFCL_v4_multi_turn_base_result.json``). BFCL's own verdicts
    come from its score file, found as :func:`~.scores.find_score_file` says (``score``: a score
    file or a folder of them, given by the user).
    """
    path = Path(path)
    model = model or path.parent.name or "unknown"
    lines = list(iter_json_lines(path))
    values = [item.value for item in lines if isinstance(item, JsonLine)]
    decoding = decoding_of(values)
    ids = [v["id"] for v in values if isinstance(v, dict) and isinstance(v.get("id"), str)]
    scores, why = find_score_file(path, ids, Path(score) if score is not None else None)
    for item in lines:
        if isinstance(item, BadLine):
            yield item
            continue
        entry_id = item.value.get("id") if isinstance(item.value, dict) else None
        verdict = scores.verdict(entry_id) if scores is not None and isinstance(entry_id, str) else (None, why)
        try:
            yield Located(item.path, item.line, rollout_from_result(item.value, model, method, decoding, verdict))
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
    score = getattr(bench, "score_file", None)  # --bfcl-score
    for item in import_result_file(request.source, model=request.model, method=request.method, score=score):
        if not isinstance(item, BadLine) and not bench.has_task(item.rollout.task_id):
            item = BadLine(item.path, item.line, f"unknown BFCL multi-turn id {item.rollout.task_id!r}",
                           item.rollout.task_id)
        yield item
