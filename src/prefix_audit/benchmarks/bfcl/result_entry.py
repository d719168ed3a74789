"""One line of a BFCL multi-turn result file (as ``bfcl generate`` writes it) as a rollout record.

A result file is JSON Lines: ``id`` and ``result`` = per turn a list of steps. A step is what the
model produced in one response, in the shape the handler that ran the model leaves there: call
objects (``[{"cd": "{\"folder\": \"x\"}"}]``) for function-calling API handlers, the model's text
in the handler's own format for the rest (Python call text, JSON ``{"name", "arguments"}``,
``<tool_call>`` blocks, …; :mod:`.decoders`).

Every entry becomes a rollout record (:func:`rollout_from_result`):

* a ``result`` that is no list of turns — BFCL's "Error during inference …" string, which comes
  with a ``traceback`` — is an infrastructure failure (``infra_error``: the model call failed, no
  action was observed; BFCL scores it 0);
* each step is read by the ``decode_execute`` of the handler ``bfcl evaluate`` would use for the
  file (:mod:`.handlers`; ``meta["bfcl_handler"]`` says which and how it was chosen): the calls it
  decodes are the step's actions (a call whose text does not parse is one too, which BFCL's
  executor fails to run: a schema failure). A step it cannot decode, or that decodes to no call,
  executes nothing and ends the turn in BFCL's runner: it holds no action, whatever the handler's
  format, only the model's message (its text; a step of call objects as written). Such a step is
  *undecodable* — listed in ``recorded.undecoded`` (``[turn, step, reason]``) and counted in the
  decode health — where it holds an attempt at a call (:func:`holds_call`: a call object, or text
  that looks like a call in any handler's format, :func:`~prefix_audit.core.calls.looks_like_calls`),
  so a call whose arguments do not parse is the same undecodable step in every format.

What the log recorded is handed over with each rollout (:class:`~prefix_audit.core.records.Recorded`),
for the audit to check itself against: BFCL's own verdict on the entry from its score file
(:mod:`.scores`), and — where the file has an ``inference_log`` — the tool result BFCL's run
recorded for each call of each step (its ``tool`` messages, in call order; an error is what
BFCL's executor reports as one). A step the handler would evaluate as Python (``str(round(…))``,
which we never do) has the calls the log shows BFCL's decoder read there (its
``model_response_decoded``), parsed with :mod:`ast` (``meta["bfcl_steps_from_log"]`` counts them).
A step without a call is also listed as undecodable when the log shows BFCL's own decoder read
calls in it.

Nothing is evaluated; call text is parsed with :mod:`ast`. Only a line that is no record at all
(not JSON, no string ``id``, turns that are not lists of steps) is quarantined, with its location
and reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.calls import looks_like_calls
from prefix_audit.core.decode import excerpt_of
from prefix_audit.plugin import (
    DecodeError,
    LogIssue,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    Usage,
    count,
    parse_call_string,
    rollout_id_for,
    seconds,
    structured_call,
)
from prefix_audit.replay.record_check import literal_value

from .data import DATASET, Entry
from .decoders import (
    CALL_OBJECT_DECODERS,
    Decoder,
    NotEvaluated,
    Undecodable,
    content_candidates,
    decode_step,
    decoder_for,
)
from .handlers import HandlerChoice
from .loader import is_error_value
from .semantics import SHARED_DEFAULTS, leaves_shared_default

INFRA_ERROR_CHARS = 500
CONTENT_SAMPLE_STEPS = 400  # steps read to choose a decoder by content


class StepError(ValueError):
    pass


def _call_objects(raw: Any) -> tuple[ToolCall, ...]:
    """The calls of a step of call objects (``{name: arguments}``, one alone or a list), as written."""
    return tuple(structured_call(name, arguments) for item in ([raw] if isinstance(raw, dict) else raw)
                 for name, arguments in item.items())


def holds_call(raw: Any) -> bool:
    """Whether a step BFCL's decoder read no call in holds an attempt at one: an item that is
    neither text nor empty (a call object, whatever its keys), or text that looks like a call in
    any handler's format (:func:`~prefix_audit.core.calls.looks_like_calls`). An empty step and
    text parts without call syntax are a message."""
    if isinstance(raw, str):
        return looks_like_calls(raw)
    return any(looks_like_calls(item) if isinstance(item, str) else item not in ({}, [], None)
               for item in ([raw] if isinstance(raw, dict) else raw))


def _message(raw: Any) -> str:
    """A step without a call as the model's message: its text (a list's text parts one per line;
    an empty step ``""``, whatever the handler's format), else the step as written, as JSON."""
    if isinstance(raw, str):
        return raw
    if not raw:
        return ""
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return "\n".join(raw)
    return excerpt_of(raw)


@dataclass(frozen=True)
class ReadStep:
    """One step as BFCL's runner reads it: the step, why it is undecodable (None: it is not), and
    whether that is because the handler would have evaluated model text we do not."""

    step: Step
    undecodable: str | None = None
    not_evaluated: bool = False


def _no_call(raw: Any, why: str, not_evaluated: bool = False) -> ReadStep:
    return ReadStep(Step((), _message(raw)), why if not_evaluated or holds_call(raw) else None, not_evaluated)


def read_step(raw: Any, where: str, decoder: Decoder) -> ReadStep:
    """One BFCL step through its handler's decoder. A step the decoder reads becomes the calls it
    decodes (parsed with :mod:`ast`): the step's actions. A step it cannot decode, or decodes to no
    call, executes nothing and ends the turn in BFCL's runner: it holds no action, only the model's
    message (:func:`_message`), and is undecodable where it holds an attempt at a call
    (:func:`holds_call`) or text the handler would have evaluated."""
    if not isinstance(raw, (str, dict, list)):
        raise StepError(f"{where}: a step must be a string, an object or a list, got {type(raw).__name__}")
    try:
        decoded = decode_step(decoder, raw)
    except Undecodable as exc:
        return _no_call(raw, f"BFCL's decoder fails: {exc}", isinstance(exc, NotEvaluated))
    if not decoded:
        return _no_call(raw, "BFCL's decoder reads no call in it")
    calls = tuple(parse_call_string(text) for text in decoded)
    if decoder in CALL_OBJECT_DECODERS and not all(c.well_formed for c in calls):
        # A name or key that is no Python name makes the decoded text unparsable; the call object
        # (in the same order) keeps the call, which BFCL's executor then fails to run (loader.invoke).
        calls = tuple(c if c.well_formed else w for c, w in zip(calls, _call_objects(raw), strict=True))
    return ReadStep(Step(calls))


def _steps(results: list[Any]) -> Iterator[Any]:
    for obj in results:
        turns = obj.get("result") if isinstance(obj, dict) else None
        if isinstance(turns, list):
            for turn in turns:
                yield from turn if isinstance(turn, list) else ()


def choose_by_content(results: list[Any]) -> HandlerChoice:
    """For a model BFCL's config lacks: the decoder that reads the most of the file's steps (up to
    :data:`CONTENT_SAMPLE_STEPS`) as well-formed calls; ties go to the earlier of the table."""
    sample = [raw for raw in _steps(results) if raw not in ("", [], {})][:CONTENT_SAMPLE_STEPS]
    best, best_count = content_candidates()[0], -1
    for handler, is_fc in content_candidates():
        decoder = decoder_for(handler, is_fc)
        count = 0
        for raw in sample:
            try:
                count += any(parse_call_string(text).well_formed for text in decode_step(decoder, raw))
            except Undecodable:
                continue
        if count > best_count:
            best, best_count = (handler, is_fc), count
    return HandlerChoice(best[0], best[1], None, "content", decoder_for(*best).__name__)


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


def decoded_call_strings(raw: Any) -> tuple[ToolCall, ...]:
    """A step written as already-decoded calls — a list of strings each of which is a Python call
    expression (``["cd(folder='x')"]``, as custom runners write them) — as those calls; none otherwise.
    A call to no tool's name (``__import__('os').system('ls')``, which BFCL's executor fails on) is an
    action all the same, one that does not parse as a call of a tool: a schema failure, never evaluated.
    Read so only where no handler of BFCL's config was found for the file (no handler of BFCL writes it)."""
    if not isinstance(raw, list) or not raw or not all(isinstance(item, str) and _is_call_expression(item)
                                                       for item in raw):
        return ()
    return tuple(parse_call_string(item) for item in raw)


def _is_call_expression(text: str) -> bool:
    """Whether ``text`` parses (never runs) as one Python call expression."""
    try:
        return isinstance(ast.parse(text.strip(), mode="eval").body, ast.Call)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False


def _logged_calls(seen: LoggedStep | None) -> tuple[ToolCall, ...]:
    """The calls BFCL's own decoder read in a step, as its ``inference_log`` recorded them (call
    text, parsed with :mod:`ast`); none unless every one of them parses. A step BFCL's handler
    evaluates as Python (``str(round(…))``), which we never do, has the calls its log shows BFCL's
    run executed."""
    if seen is None or not seen.decoded:
        return ()
    calls = tuple(parse_call_string(text) for text in seen.decoded)
    return calls if all(c.well_formed for c in calls) else ()


def _with_log(turns: list[tuple[Step, ...]], logged: Mapping[tuple[int, int], LoggedStep],
              unread: list[tuple[int, int, str]]
              ) -> tuple[tuple[tuple[Step, ...], ...], list[tuple[int, int, str]], int]:
    """The steps with the tool results the log recorded, every undecodable step — ``unread``
    (attempts at calls the decoder could not read, text it would have evaluated) and steps without a
    call in which the log's own decoder read calls (this reading then differs from BFCL's) — and how
    many of ``unread`` the log shows BFCL's own run could not decode either (no call decoded, no tool
    run there: the model's format, not this reading's)."""
    unread = list(unread)
    listed = {(t, s) for t, s, _ in unread}
    confirmed = sum(not seen.decoded and not seen.results for seen in map(logged.get, listed) if seen is not None)
    out = []
    for t, turn in enumerate(turns):
        steps = []
        for s, step in enumerate(turn):
            seen = logged.get((t, s))
            if seen is not None:
                step = Step(step.calls, step.text, tuple(RecordedResult.of(r, recorded_error(r)) for r in seen.results))
            if not step.calls and step.text and seen is not None and seen.decoded and (t, s) not in listed:
                unread.append((t, s, f"BFCL's own decoder read {len(seen.decoded)} call(s) here "
                                     f"({seen.decoded[0][:80]}); this reading found none"))
            steps.append(step)
        out.append(tuple(steps))
    return tuple(out), sorted(unread), confirmed


def _infra_error(result: Any) -> str:
    text = result if isinstance(result, str) else f"'result' is a {type(result).__name__}, not a list of turns"
    first = text.strip().splitlines()[0] if text.strip() else "empty 'result'"
    return first[:INFRA_ERROR_CHARS]


def _read_turns(result: list[list[Any]], choice: HandlerChoice, logged: Mapping[tuple[int, int], LoggedStep]
                ) -> tuple[list[tuple[Step, ...]], list[tuple[int, int, str]], int, int]:
    """The steps of a result's turns, read by the decoder of ``choice``: per turn its steps, the steps
    left undecodable (turn, step, why), and how many steps were read from the log's own decoding and
    how many as lists of call strings."""
    decoder = decoder_for(choice.handler, choice.is_fc)
    turns: list[tuple[Step, ...]] = []
    unread: list[tuple[int, int, str]] = []
    from_log = as_strings = 0
    for t, turn in enumerate(result):
        steps = []
        for s, raw in enumerate(turn):
            read = read_step(raw, f"result[{t}][{s}]", decoder)
            calls = _logged_calls(logged.get((t, s))) if read.not_evaluated else ()
            if calls:  # BFCL's decoder evaluated the text as Python, which we never do: its log says what it read
                read, from_log = ReadStep(Step(calls, raw if isinstance(raw, str) else None)), from_log + 1
            elif not read.step.calls and choice.chosen_by == "content" and decoded_call_strings(raw):
                read, as_strings = ReadStep(Step(decoded_call_strings(raw))), as_strings + 1
            steps.append(read.step)
            if read.undecodable is not None:
                unread.append((t, s, read.undecodable))
        turns.append(tuple(steps))
    return turns, unread, from_log, as_strings


def rollout_from_result(obj: Any, model: str, method: str, choice: HandlerChoice,
                        verdict: tuple[int | None, str] = (None, "no BFCL score file given")) -> Rollout:
    """One result line as a rollout, its steps read by the decoder of ``choice``; ``verdict`` is
    BFCL's own (recorded Y and its words, from the score file) or None and why there is none. It is
    scored on the benchmark's own release until a release is chosen for its file
    (:meth:`.versions.DataChoice.scored`)."""
    if not isinstance(obj, dict):
        raise StepError(f"a result line must be a JSON object, got {type(obj).__name__}")
    if not isinstance(obj.get("id"), str):
        raise StepError("missing or non-string 'id'")
    task_id = obj["id"]
    rid = rollout_id_for(DATASET, model, method, task_id)
    result = obj.get("result")
    meta: dict[str, Any] = {"bfcl_handler": choice.to_json(), "reading": f"BFCL {choice.describe()}"}
    if not isinstance(result, list):
        # BFCL's runner: a result that is no list is an inference error, scored 0.
        return Rollout(DATASET, task_id, model, method, rid, (),
                       source="import:bfcl", meta=meta, infra_error=_infra_error(result),
                       recorded=Recorded.of(*verdict))
    if not all(isinstance(t, list) for t in result):
        raise StepError("'result' must be a list of turns, each a list of steps")
    logged = logged_steps(obj.get("inference_log"))
    turns, unread, from_log, as_strings = _read_turns(result, choice, logged)
    try:
        usage, accounting_error = _usage(obj), None
    except (StepError, DecodeError) as exc:  # bad accounting costs the accounting, not the entry
        usage, accounting_error = (), str(exc)
    logged_turns, unread, confirmed = _with_log(turns, logged, unread)
    if as_strings:  # a custom runner's own format: said, so the summary counts the entries read so
        meta["bfcl_steps_as_call_strings"] = as_strings
        meta["reading"] += "; steps that are lists of call strings (already decoded) read as those calls"
    if from_log:  # said in the reading, so the import summary counts the entries read this way
        meta["bfcl_steps_from_log"] = from_log
        meta["reading"] += "; steps BFCL's handler evaluated as Python read from its own decoding (inference_log)"
    return Rollout(DATASET, task_id, model, method, rid, logged_turns, source="import:bfcl", meta=meta, usage=usage,
                   accounting_error=accounting_error,
                   recorded=Recorded.of(*verdict, unread, undecoded_confirmed=confirmed))


SHARED_DEFAULT = "shared_default"


def shared_default_cause(rollout: Rollout, entry: Entry | None) -> LogIssue | None:
    """Why BFCL's own verdict on an entry may differ from replay's: the model's calls or the ground
    truth's post a tweet without mentions, so the state ``bfcl evaluate`` compared held its shared
    default list as the entries run before this one left it (:data:`~.semantics.SHARED_DEFAULTS`)."""
    def leaves(calls: Sequence[ToolCall]) -> ToolCall | None:
        return next((c for c in calls if leaves_shared_default(c.name, c.args, c.kwargs)), None)

    model = leaves([c for turn in rollout.turns for step in turn for c in step.calls])
    truth = leaves([parse_call_string(text) for turn in entry.ground_truth for text in turn]) if entry else None
    call = model or truth
    if call is None:
        return None
    param = SHARED_DEFAULTS[call.name or ""][0]
    side = "the model's" if model is not None else "the ground truth's"
    return LogIssue(SHARED_DEFAULT, f"{side} {call.name} leaves {param} to its default list, which BFCL's run shares "
                                    f"between all entries of its process (a Python default, kept by reference and "
                                    f"extended by mention()): the recorded verdict compared that list as earlier "
                                    f"entries left it; replay gives each call a list of its own")


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
                       seconds(t, f"latency[{n}]"))
                 for n, (i, o, t) in enumerate(zip(inputs, outputs, latency, strict=True)))
