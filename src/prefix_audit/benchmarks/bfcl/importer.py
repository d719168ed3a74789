"""Import BFCL multi-turn result files (as ``bfcl generate`` writes them) into rollout records.

A result file is JSON Lines: ``id`` and ``result`` = per turn a list of steps. A step is what the
model produced in one response, in the shape the handler that ran the model leaves there: call
objects (``[{"cd": "{\"folder\": \"x\"}"}]``) for function-calling API handlers, the model's text
in the handler's own format for the rest (Python call text, JSON ``{"name", "arguments"}``,
``<tool_call>`` blocks, …; :mod:`.decoders`).

Every entry becomes a rollout record:

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
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_audit.core.calls import ToolCall, looks_like_calls, parse_call_string, structured_call
from prefix_audit.core.decode import (
    RECORD_SHAPE_ERRORS,
    DecodeError,
    JsonLine,
    count,
    excerpt_of,
    first_json_line,
    iter_json_lines,
    seconds,
    shape_reason,
)
from prefix_audit.core.fetch import FetchError
from prefix_audit.core.records import (
    UNKNOWN_MODEL,
    BadLine,
    Located,
    LogIssue,
    ModelNamed,
    NamedBy,
    Recorded,
    RecordedResult,
    Rollout,
    ScoredOn,
    Step,
    Usage,
    rollout_id_for,
)
from prefix_audit.plugin import Benchmark, ImportRequest, RefusedOption
from prefix_audit.replay.record_check import literal_value

from .data import DATASET, DATASET_VERSION, V3_ERA_PIN, BfclData, Entry
from .decoders import (
    CALL_OBJECT_DECODERS,
    Decoder,
    NotEvaluated,
    Undecodable,
    content_candidates,
    decode_step,
    decoder_for,
)
from .handlers import HandlerChoice, ModelEntry, check_model_key, choose_handler, model_config
from .loader import is_error_value
from .scores import (
    SCORE_FILE_KEY,
    bfcl_file_name,
    error_type,
    find_score_file,
    is_failing_entry,
    is_score_file,
    category_named,
    named_multi_turn,
    result_file_of,
    summary_counts,
)
from .semantics import SHARED_DEFAULTS, leaves_shared_default
from .versions import DataChoice, RecordedRun, choose_release, reproduction

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
        calls = tuple(c if c.well_formed else w for c, w in zip(calls, _call_objects(raw)))
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
              unread: list[tuple[int, int, str]]) -> tuple[tuple[tuple[Step, ...], ...], list[tuple[int, int, str]], int]:
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
    decoder = decoder_for(choice.handler, choice.is_fc)
    logged = logged_steps(obj.get("inference_log"))
    turns, unread, from_log, as_strings = [], [], 0, 0
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
                   accounting_error=accounting_error, recorded=Recorded.of(*verdict, unread, undecoded_confirmed=confirmed))


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
                       seconds(t, f"latency[{n}]")) for n, (i, o, t) in enumerate(zip(inputs, outputs, latency)))


_LAYOUT_FOLDERS = ("result", "score")  # bfcl generate's result/<model>/…, bfcl evaluate's score/<model>/…


def _layout_model_folder(path: Path) -> tuple[str, str] | None:
    """The folder BFCL names after the model in its layout — the one under the nearest ``result/``
    or ``score/`` above the file's own folder — and that layout folder; None outside that layout."""
    parts = path.resolve().parts[:-1]
    for at in range(len(parts) - 2, -1, -1):
        if parts[at] in _LAYOUT_FOLDERS:
            return parts[at + 1], parts[at]
    return None


# How a model key of BFCL's config named a file's model (HandlerChoice.chosen_by without --model).
_KEY_NAMED_BY = {"result folder": (NamedBy.FOLDER, "a folder's name"),
                 "score file": (NamedBy.LOG_FIELD, "the score file's model_name"),
                 "file name": (NamedBy.FILE_NAME, "the file-name prefix")}


def model_name(path: Path, model: str | None, choice: HandlerChoice | None) -> tuple[str, ModelNamed | None]:
    """The model name of the rollouts of the BFCL file ``path``, read by ``choice`` (None: no key of
    BFCL's config chose its handler), and where it came from (None: ``--model``, ``model``, gave it).

    In order: ``--model``; a model key of BFCL's config that the file's folders, its score file's
    ``model_name`` or its file-name prefix spell (the key that chose the handler, with ``_`` for ``/``
    as BFCL names folders); the model folder of BFCL's layout (``result/<model>/``, ``score/<model>/``
    for a score file); the prefix a flat copy put before BFCL's file name (``gpt-oss-20b`` of
    ``gpt-oss-20b_BFCL_v4_multi_turn_base_result.json``: a better witness than the folder it was
    copied into); the folder holding the file."""
    if model:
        return model, None
    if choice is not None and choice.key is not None:
        kind, where = _KEY_NAMED_BY[choice.chosen_by]
        return choice.key.replace("/", "_"), ModelNamed(kind, f"BFCL's model key {choice.key} ({where})", str(path))
    layout = _layout_model_folder(path)
    if layout is not None:
        return layout[0], ModelNamed(NamedBy.FOLDER, f"the model folder under {layout[1]}/", str(path))
    named = bfcl_file_name(path)
    if named is not None and named.prefix:
        return named.prefix, ModelNamed(NamedBy.FILE_NAME, "the file-name prefix", str(path))
    return path.parent.name or UNKNOWN_MODEL, ModelNamed(NamedBy.FOLDER, "the folder name", str(path))


def scored_on(path: Path, data: DataChoice) -> ScoredOn | None:
    """The release a file whose name gives another BFCL version than the dataset's (``BFCL_v4_…``) was
    scored on, said with its block; None for any other file."""
    named = bfcl_file_name(path)
    if named is None or named.version == DATASET_VERSION:
        return None
    return ScoredOn(f"BFCL_v{named.version} files", f"bfcl-eval {data.release}",
                    f"the dataset id {DATASET} names the multi-turn categories BFCL v{DATASET_VERSION} and "
                    f"v{named.version} share")


def import_result_file(path: str | Path, model: str | None = None, method: str = "imported",
                       score: str | Path | None = None, config: Mapping[str, ModelEntry] | None = None,
                       releases: Mapping[str, BfclData] | None = None, data_release: str | None = None,
                       unavailable: Sequence[str] = (), bench: Benchmark | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per line of a BFCL result file, a :class:`BadLine` for a line that
    is no record at all.

    The steps are read with the decoder of the handler ``bfcl evaluate`` would use (``config``:
    BFCL's model config, see :mod:`.handlers`; without it, or for a model it lacks, the decoder is
    chosen by content). ``model`` (``--model``) labels the rollouts and, when it is a key of the
    config, chooses the handler; by default the label is as :func:`model_name` says (a key of the
    config or the model folder as BFCL names it, ``result/<model>/…`` with ``/`` written ``_``, …), and
    each rollout says where it came from (``Located.named_by``). BFCL's own verdicts come from its score
    file, found as :func:`~.scores.find_score_file` says (``score``: a score file or a folder of them).
    ``releases`` (newest first): the data releases the file may have been made on, chosen from as
    :mod:`.versions` says (``data_release``: ``--bfcl-data``; ``unavailable``: pinned releases that
    could not be loaded, and why, said with the choice; ``bench``: the benchmark that replays the
    file's recorded tool results on them, which then weigh in); without them nothing is chosen.
    """
    path = Path(path)
    if model:
        check_model_key(model)
    lines = list(iter_json_lines(path))
    values = [item.value for item in lines if isinstance(item, JsonLine)]
    ids = [v["id"] for v in values if isinstance(v, dict) and isinstance(v.get("id"), str)]
    scores, why = find_score_file(path, ids, Path(score) if score is not None else None)

    def verdict(entry_id: str) -> tuple[int | None, str]:
        return scores.verdict(entry_id) if scores is not None else (None, why)

    yield from _entries(path, lines, verdict, scores.models if scores is not None else (), model, method, config,
                        Releases.of(releases, data_release, unavailable, bench),
                        meta={SCORE_FILE_KEY: scores.provenance()} if scores is not None else {})


def _entries(path: Path, lines: Sequence[JsonLine | BadLine], verdict: Callable[[str], tuple[int | None, str]],
             score_models: Iterable[str], model: str | None, method: str, config: Mapping[str, ModelEntry] | None,
             releases: Releases | None, note: str | None = None,
             meta: Mapping[str, Any] | None = None) -> Iterator[Located | BadLine]:
    """The rollouts of result lines (``lines``; BadLines pass through), each with its ``verdict`` by
    id, read by the handler chosen for the file and on the release chosen for it from ``releases``
    (none chosen without them); ``note`` said in each rollout's reading, ``meta`` added to each
    rollout's."""
    values = [item.value for item in lines if isinstance(item, JsonLine)]
    choice = choose_handler(config or {}, path, model, score_models)
    if choice is None:
        choice = choose_by_content(values)
    label, named_by = model_name(path, model, choice)
    read: list[Located | BadLine] = []
    for item in lines:
        if isinstance(item, BadLine):
            read.append(item)
            continue
        entry_id = item.value.get("id") if isinstance(item.value, dict) else None
        try:
            rollout = rollout_from_result(item.value, label, method, choice,
                                          verdict(entry_id) if isinstance(entry_id, str) else (None, "no id"))
        except RECORD_SHAPE_ERRORS as exc:  # StepError, or a field of the wrong shape
            obj = item.value
            rid = obj.get("id") if isinstance(obj, dict) and isinstance(obj.get("id"), str) else None
            read.append(BadLine(item.path, item.line, f"unusable BFCL result: {shape_reason(exc)}", rid, item.excerpt))
            continue
        read.append(Located(item.path, item.line, rollout))
    data = said = None
    if releases is not None:
        data = releases.choose([run for run in map(RecordedRun.of, values) if run is not None], path.name,
                               [item.rollout for item in read if isinstance(item, Located)])
        said = scored_on(path, data)
    for item in read:
        if isinstance(item, BadLine):
            yield item
            continue
        rollout = data.scored(item.rollout) if data is not None else item.rollout
        cause = shared_default_cause(rollout, releases.data[data.release].entries.get(rollout.task_id)
                                     if releases is not None and data is not None else None)
        if cause is not None and rollout.recorded is not None:
            rollout = replace(rollout, recorded=replace(rollout.recorded,
                                                        if_y_differs=(*rollout.recorded.if_y_differs, cause)))
        if note is not None:
            rollout = replace(rollout, meta={**rollout.meta, "reading": f"{rollout.meta['reading']}; {note}"})
        if meta:
            rollout = replace(rollout, meta={**rollout.meta, **meta})
        yield Located(item.path, item.line, rollout, named_by, said)


def import_score_file(path: str | Path, model: str | None = None, method: str = "imported",
                      config: Mapping[str, ModelEntry] | None = None, releases: Mapping[str, BfclData] | None = None,
                      data_release: str | None = None, unavailable: Sequence[str] = (),
                      bench: Benchmark | None = None) -> Iterator[Located | BadLine]:
    """A BFCL score file read as the log of the entries it lists — those that failed, each with the
    model's output ``bfcl evaluate`` copied into it (``model_result_raw`` and ``inference_log``;
    ``model_result`` for an inference error), recorded Y = 0 with BFCL's error type. The entries
    that passed are not in it, and every rollout's reading says so: statistics over such a log are
    over failed entries only. An id listed again (BFCL lists an inference error twice) is
    quarantined, its first line read. Where the score file's own result file is found (``result/``
    for ``score/``, or beside it), that file holds every entry: the score file is refused whole
    with where to look, so it is never a second log of the same run."""
    path = Path(path)
    if model:
        check_model_key(model)
    sibling = result_file_of(path)
    if sibling is not None:
        raise ValueError(f"{path.name} is BFCL's score file of {sibling}, which holds every entry: audit that file "
                         f"(its verdicts are read from here)")
    lines: list[JsonLine | BadLine] = []
    failing: dict[str, str] = {}
    summary: tuple[int, int] | None = None
    seen: set[str] = set()
    models: set[str] = set()
    for item in iter_json_lines(path):
        if isinstance(item, BadLine):
            lines.append(item)
            continue
        obj = item.value
        if summary is None:
            summary = summary_counts(obj, path)
            continue
        if not is_failing_entry(obj):
            lines.append(BadLine(item.path, item.line, "not a failing entry of BFCL's score file (an object with an "
                                                       "id and valid: false)", None, item.excerpt))
            continue
        if obj["id"] in seen:
            lines.append(BadLine(item.path, item.line, f"listed again in BFCL's score file: entry {obj['id']!r} "
                                                       f"(its first line is read)", obj["id"], item.excerpt,
                                 "listed again in BFCL's score file (its first line is read)"))
            continue
        seen.add(obj["id"])
        if isinstance(obj.get("model_name"), str):
            models.add(obj["model_name"])
        result = obj.get("model_result_raw", obj.get("model_result"))
        lines.append(JsonLine(item.path, item.line, {"id": obj["id"], "result": result,
                                                     "inference_log": obj.get("inference_log"),
                                                     "prompt": obj.get("prompt"),
                                                     "possible_answer": obj.get("possible_answer")}, item.excerpt))
        failing[obj["id"]] = error_type(obj)
    if summary is None:
        raise ValueError(f"{path.name} is empty")
    correct, total = summary
    note = (f"BFCL score file read as a log: only the {len(seen)} entries that failed, of {total} "
            f"(the {correct} that passed are not in it)")
    yield from _entries(path, lines, lambda entry_id: (0, f"BFCL score file: {failing.get(entry_id, 'invalid')}"),
                        models, model, method, config, Releases.of(releases, data_release, unavailable, bench),
                        note)


def is_result_file(path: Path) -> bool:
    """A BFCL multi-turn result file: JSON Lines whose first line is an object with ``id`` and
    ``result``, not named after a single-turn category (``bfcl generate`` writes those beside the
    multi-turn ones: in a folder of its results they are no log of ours, as their score files are not)."""
    if named_multi_turn(path) is False:
        return False
    obj = first_json_line(path) if path.is_file() else None
    return isinstance(obj, dict) and "id" in obj and "result" in obj


def is_bfcl_log(path: Path) -> bool:
    """A BFCL result file, or a score file (read as the log of its failed entries)."""
    return is_result_file(path) or is_score_file(path)


def single_turn_file(path: Path) -> str | None:
    """Why a result or score file ``bfcl generate``/``bfcl evaluate`` wrote for a single-turn category
    is no log to audit (FED needs the multi-turn categories' executable state); None for any other file."""
    if named_multi_turn(path) is not False or not path.is_file():
        return None
    first = first_json_line(path)
    if not isinstance(first, dict) or not ({"id", "result"} <= set(first) or {"correct_count", "total_count"} <= set(first)):
        return None
    return (f"a BFCL file of the single-turn category {category_named(path)} (only BFCL's multi-turn "
            "categories are audited)")


@dataclass(frozen=True)
class Releases:
    """The data releases a log may have been made on (newest first), the one ``--bfcl-data`` gives
    (None: chosen per file), the pinned ones that could not be loaded, and why, and the benchmark
    that replays a log's recorded tool results on them (None: the results do not weigh in)."""

    data: Mapping[str, BfclData]
    given: str | None
    unavailable: tuple[str, ...]
    bench: Benchmark | None = None

    @classmethod
    def of(cls, data: Mapping[str, BfclData] | None, given: str | None, unavailable: Sequence[str],
                 bench: Benchmark | None) -> Releases | None:
        """The releases an importer's arguments name (None: none, so no release is chosen)."""
        return cls(data, given, tuple(unavailable), bench) if data else None

    def choose(self, runs: Sequence[RecordedRun], file_name: str, rollouts: Sequence[Rollout]) -> DataChoice:
        """The release a file was made on (:func:`.versions.choose_release`): from its recorded
        ``runs`` and, replayed on the releases, the tool results its ``rollouts`` recorded."""
        reproduce = functools.partial(reproduction, self.bench, rollouts) if self.bench is not None else None
        return choose_release(self.data, runs, file_name, V3_ERA_PIN.version, self.given, self.unavailable, reproduce)


def data_releases(bench: Any) -> Releases:
    """The releases of the BFCL benchmark ``bench`` a log is chosen from (the pinned packages are
    fetched when absent; an older one that cannot be is left out, and said)."""
    given = getattr(bench, "data_release", None)  # --bfcl-data
    if given is not None and given not in bench.releases():
        raise RefusedOption(f"--bfcl-data {given!r} is no pinned bfcl-eval release ({', '.join(bench.releases())})")
    releases, unavailable = {}, []
    for release in [given] if given else bench.releases():
        try:
            releases[release] = bench.data_of(release)
        except (OSError, FetchError) as exc:  # offline without the older wheel: today's data still reads
            if release == bench.data.release or release == given:
                raise
            unavailable.append(f"bfcl-eval {release} unavailable ({' '.join(str(exc).split())[:200]})")
    return Releases(releases, given, tuple(unavailable), bench)


def import_bfcl(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import bfcl``: a result file, each entry checked against the BFCL data of the
    release it was made on (the pinned packages are fetched when absent)."""
    bench = request.open(DATASET)
    chosen = data_releases(bench)
    releases = {"releases": dict(chosen.data), "data_release": chosen.given, "unavailable": chosen.unavailable,
                "bench": bench}
    if is_score_file(Path(request.source)):
        items = import_score_file(request.source, model=request.model, method=request.method,
                                  config=model_config(bench.data.root), **releases)
    else:
        items = import_result_file(request.source, model=request.model, method=request.method,
                                   score=getattr(bench, "score_file", None), config=model_config(bench.data.root),
                                   **releases)
    yield from of_known_tasks(items, bench)


def of_known_tasks(items: Iterable[Located | BadLine], bench: Any) -> Iterator[Located | BadLine]:
    """``items`` with each rollout of an entry id BFCL's multi-turn data lacks quarantined."""
    for item in items:
        if not isinstance(item, BadLine) and not bench.has_task(item.rollout.task_id):
            item = BadLine(item.path, item.line, f"unknown BFCL multi-turn id {item.rollout.task_id!r}",
                           item.rollout.task_id, cause="unknown BFCL multi-turn id")
        yield item
