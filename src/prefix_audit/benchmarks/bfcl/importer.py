"""Import BFCL multi-turn logs — result files (as ``bfcl generate`` writes them) and score files —
into rollout records.

A result file is JSON Lines: ``id`` and ``result`` = per turn a list of steps; each line becomes a
rollout as :mod:`.result_entry` reads it, with BFCL's own verdict from the file's score file
(:mod:`.scores`). The file is read as one :class:`~.reading.BfclReading` says: the handler whose
decoder reads its steps is chosen once per file (:mod:`.handlers`, else by content), its model is
named once (:func:`model_name`), and the data release it was made on is chosen once from all its
entries (:mod:`.versions`). A score file whose result file is missing is read as the log of the
entries that failed (:func:`import_score_file`).

Only a line that is no record at all (not JSON, no string ``id``, turns that are not lists of
steps) is quarantined, with its location and reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, JsonLine, first_json_line, shape_reason
from prefix_audit.core.records import UNKNOWN_MODEL, ModelNamed, NamedBy, ScoredOn
from prefix_audit.plugin import BadLine, ImportRequest, Located, iter_json_lines

from .data import DATASET, DATASET_VERSION
from .handlers import HandlerChoice, check_model_key, choose_handler
from .reading import BfclReading, bfcl_reading
from .result_entry import choose_by_content, rollout_from_result, shared_default_cause
from .scores import (
    SCORE_FILE_KEY,
    bfcl_file_name,
    category_named,
    error_type,
    find_score_file,
    is_failing_entry,
    is_score_file,
    named_multi_turn,
    result_file_of,
    summary_counts,
)
from .versions import DataChoice, RecordedRun

# A file read without BFCL's model config (decoder chosen by content) and scored on the benchmark's own release.
_PLAIN_READING = BfclReading()
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
                       score: str | Path | None = None,
                       reading: BfclReading = _PLAIN_READING) -> Iterator[Located | BadLine]:
    """Yield a located rollout per line of a BFCL result file, a :class:`BadLine` for a line that
    is no record at all.

    The steps are read with the decoder of the handler ``bfcl evaluate`` would use (``reading.config``:
    BFCL's model config, see :mod:`.handlers`; without it, or for a model it lacks, the decoder is
    chosen by content). ``model`` (``--model``) labels the rollouts and, when it is a key of the
    config, chooses the handler; by default the label is as :func:`model_name` says (a key of the
    config or the model folder as BFCL names it, ``result/<model>/…`` with ``/`` written ``_``, …), and
    each rollout says where it came from (``Located.named_by``). BFCL's own verdicts come from its score
    file, found as :func:`~.scores.find_score_file` says (``score``: a score file or a folder of them).
    The file's data release is chosen from ``reading.releases`` (:class:`BfclReading`).
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

    yield from _entries(path, lines, verdict, scores.models if scores is not None else (), model, method, reading,
                        meta={SCORE_FILE_KEY: scores.provenance()} if scores is not None else {})


def _entries(path: Path, lines: Sequence[JsonLine | BadLine], verdict: Callable[[str], tuple[int | None, str]],
             score_models: Iterable[str], model: str | None, method: str, reading: BfclReading,
             note: str | None = None, meta: Mapping[str, Any] | None = None) -> Iterator[Located | BadLine]:
    """The rollouts of result lines (``lines``; BadLines pass through), each with its ``verdict`` by
    id, read by the handler chosen for the file and on the release chosen for it, as ``reading`` says;
    ``note`` said in each rollout's reading, ``meta`` added to each
    rollout's."""
    values = [item.value for item in lines if isinstance(item, JsonLine)]
    choice = choose_handler(reading.config, path, model, score_models)
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
    if reading.releases:
        data = reading.choose([run for run in map(RecordedRun.of, values) if run is not None], path.name,
                               [item.rollout for item in read if isinstance(item, Located)])
        said = scored_on(path, data)
    for found in read:
        if isinstance(found, BadLine):
            yield found
            continue
        rollout = data.scored(found.rollout) if data is not None else found.rollout
        cause = shared_default_cause(rollout, reading.releases[data.release].entries.get(rollout.task_id)
                                     if data is not None else None)
        if cause is not None and rollout.recorded is not None:
            rollout = replace(rollout, recorded=replace(rollout.recorded,
                                                        if_y_differs=(*rollout.recorded.if_y_differs, cause)))
        if note is not None:
            rollout = replace(rollout, meta={**rollout.meta, "reading": f"{rollout.meta['reading']}; {note}"})
        if meta:
            rollout = replace(rollout, meta={**rollout.meta, **meta})
        yield Located(found.path, found.line, rollout, named_by, said)


def import_score_file(path: str | Path, model: str | None = None, method: str = "imported",
                      reading: BfclReading = _PLAIN_READING) -> Iterator[Located | BadLine]:
    """A BFCL score file read as the log of the entries it lists — those that failed, each with the
    model's output ``bfcl evaluate`` copied into it (``model_result_raw`` and ``inference_log``;
    ``model_result`` for an inference error), recorded Y = 0 with BFCL's error type. The entries
    that passed are not in it, and every rollout's reading says so: statistics over such a log are
    over failed entries only. An id listed again (BFCL lists an inference error twice) is
    quarantined, its first line read. Where the score file's own result file is found (``result/``
    for ``score/``, or beside it), that file holds every entry: the score file is refused whole
    with where to look, so it is never a second log of the same run. Read as ``reading`` says, as
    :func:`import_result_file` reads."""
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
                        models, model, method, reading, note)


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
    if not isinstance(first, dict):
        return None
    if not ({"id", "result"} <= set(first) or {"correct_count", "total_count"} <= set(first)):
        return None
    return (f"a BFCL file of the single-turn category {category_named(path)} (only BFCL's multi-turn "
            "categories are audited)")


def import_bfcl(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import bfcl``: a result file, each entry checked against the BFCL data of the
    release it was made on (the pinned packages are fetched when absent)."""
    bench = request.open(DATASET)
    reading = bfcl_reading(bench)
    if is_score_file(Path(request.source)):
        items = import_score_file(request.source, model=request.model, method=request.method, reading=reading)
    else:
        items = import_result_file(request.source, model=request.model, method=request.method,
                                   score=getattr(bench, "score_file", None), reading=reading)
    yield from of_known_tasks(items, bench)


def of_known_tasks(items: Iterable[Located | BadLine], bench: Any) -> Iterator[Located | BadLine]:
    """``items`` with each rollout of an entry id BFCL's multi-turn data lacks quarantined."""
    for item in items:
        if not isinstance(item, BadLine) and not bench.has_task(item.rollout.task_id):
            item = BadLine(item.path, item.line, f"unknown BFCL multi-turn id {item.rollout.task_id!r}",
                           item.rollout.task_id, cause="unknown BFCL multi-turn id")
        yield item
