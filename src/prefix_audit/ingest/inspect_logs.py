"""Inspect AI eval logs (``.eval`` and ``.json``) → rollout records: ``prefix-audit import inspect``.

Inspect is a log format, not a benchmark: this module reads a log with inspect-ai's own reader (the
optional extra ``prefix-audit[inspect]``) and hands each sample × epoch, as plain JSON values
(:class:`~prefix_audit.core.framework_samples.FrameworkSample`), to the benchmark that registered the log's task
(``Registration.inspect_tasks``: ``tau2_airline``, ``tau2_retail``, ``bfcl``), which turns it into a
rollout with what the log recorded.

Reading, sample by sample, never the whole log: the header first (task, model, sample ids, epochs);
then for ``.eval`` each sample with ``inspect_ai.log.read_eval_log_sample`` (its events left out:
they repeat the store), for ``.json`` — which inspect-ai's reader loads whole — the ``samples`` array
streamed with ijson (inspect-ai's own dependency), each sample without its events validated as
inspect-ai's ``EvalSample``. Attachments are resolved, so message texts are whole.

Every sample × epoch the header lists comes out as a rollout or a quarantine record (located by
its position in the header's order): one the benchmark cannot use (no store, no metadata, another
shape), one the log does not hold (a run that ended early, a truncated file), one that does not
read. A log of a task no benchmark registered, or one whose header does not read, is one line.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, shape_reason
from prefix_audit.core.framework_samples import FrameworkSample, chat_messages
from prefix_audit.core.records import BadLine, Located
from prefix_audit.replay import registry
from prefix_audit.replay.registry import ImportRequest, RefusedOption

EXTRA = "inspect"
FORMAT = "inspect"
SKIPPED_FIELDS = frozenset({"events"})  # the event transcript repeats the store (twice the database)
_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
HEAD_BYTES = 256


class InspectLogError(ValueError):
    """A log whose header cannot be read, or of a task no benchmark reads."""


def _api() -> Any:
    try:
        import inspect_ai.log as api
    except ImportError:
        raise RefusedOption(f"reading Inspect AI logs needs the optional extra: pip install "
                            f"'prefix-audit[{EXTRA}]'") from None
    return api


def is_inspect_log(path: Path) -> bool:
    """An Inspect log: a ``.eval`` zip, or a ``.json`` whose object opens with Inspect's ``version``
    and ``status`` (read from its first bytes only)."""
    if not path.is_file():
        return False
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path)
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as fh:
            return bool(_JSON_HEAD.match(fh.read(HEAD_BYTES)))
    except OSError:
        return False


def _task_name(task: str) -> str:
    return task.rsplit("/", 1)[-1]  # "inspect_evals/tau2_airline" → "tau2_airline"


def _message_of(error: Any) -> str:
    return " ".join(str(getattr(error, "message", error)).split())[:500]


def _plain(sample: Any, log: str, task: str, model: str, position: int) -> FrameworkSample:
    limit = sample.limit
    return FrameworkSample(
        log, task, model, str(sample.id), int(sample.epoch), position,
        metadata=sample.metadata or {}, store=sample.store or {},
        messages=chat_messages([m.model_dump(mode="json", exclude_none=True) for m in sample.messages], "messages"),
        scores={name: score.model_dump(mode="json") for name, score in (sample.scores or {}).items()},
        error=_message_of(sample.error) if sample.error is not None else None,
        limit=f"{limit.type} limit {limit.limit:g}" if limit is not None else None)


def _eval_samples(api: Any, path: Path, wanted: list[tuple[str, int]]) -> Iterator[tuple[tuple[str, int], Any]]:
    """(sample id, epoch) and the sample (or why it does not read) for each wanted one the log holds."""
    for sample_id, epoch in wanted:
        try:
            sample = api.read_eval_log_sample(str(path), id=sample_id, epoch=epoch, exclude_fields=set(SKIPPED_FIELDS),
                                              resolve_attachments=True)
        except IndexError:
            continue  # not in the log: said with the others the log lacks
        except Exception as exc:  # a member that does not read costs that sample only
            yield (sample_id, epoch), exc
            continue
        yield (sample_id, epoch), sample


def _json_sample_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Each element of the log's ``samples`` array as a JSON object, without its events."""
    import ijson
    from ijson.common import ObjectBuilder

    item, skip = "samples.item", {f"samples.item.{f}" for f in SKIPPED_FIELDS}
    builder: ObjectBuilder | None = None
    with path.open("rb") as fh:
        for prefix, event, value in ijson.parse(fh, use_float=True):
            if builder is None:
                if prefix == item and event == "start_map":
                    builder = ObjectBuilder()
                    builder.event(event, value)
                continue
            if prefix == item and event == "map_key" and f"{item}.{value}" in skip:
                continue
            if prefix in skip or any(prefix.startswith(s + ".") for s in skip):
                continue
            builder.event(event, value)
            if prefix == item and event == "end_map":
                yield builder.value
                builder = None


def _json_samples(api: Any, path: Path) -> Iterator[tuple[tuple[str, int] | None, Any]]:
    """(sample id, epoch) and the sample (or why it does not read); (None, why) where the file stops
    reading."""
    objects = _json_sample_objects(path)
    while True:
        try:
            obj = next(objects)
        except StopIteration:
            return
        except Exception as exc:  # a truncated or broken file: what it gave counts, the rest is missing
            yield None, InspectLogError(f"the samples stop reading: {_message_of(exc)}")
            return
        key = (str(obj.get("id")), obj.get("epoch") if isinstance(obj.get("epoch"), int) else 0)
        try:
            sample = api.EvalSample.model_validate(obj)
            yield key, api.resolve_sample_attachments(sample, "full")
        except Exception as exc:
            yield key, exc


def read_inspect_log(request: ImportRequest) -> Iterator[Located | BadLine]:
    """Every sample × epoch of an Inspect log as a located rollout or a quarantine record."""
    api = _api()
    path = request.source
    try:
        header = api.read_eval_log(str(path), header_only=True)
    except Exception as exc:  # inspect-ai raises zip, JSON, validation and runtime errors alike
        raise InspectLogError(f"not a readable Inspect log: {type(exc).__name__}: {_message_of(exc)}") from None
    task = _task_name(header.eval.task)
    readers = registry.inspect_tasks()
    if task not in readers:
        raise InspectLogError(f"an Inspect log of task {header.eval.task!r}; prefix-audit reads Inspect logs of "
                              f"{', '.join(sorted(readers))}")
    read = readers[task]
    model = request.model or header.eval.model
    epochs = header.eval.config.epochs or 1
    ids = list(header.eval.dataset.sample_ids or ())
    wanted = [(str(i), e) for i in ids for e in range(1, epochs + 1)]
    if not ids and path.suffix != ".json":  # a log written before headers listed their sample ids
        wanted = [(str(s.id), s.epoch) for s in api.read_eval_log_sample_summaries(str(path))]
    position = {key: n + 1 for n, key in enumerate(wanted)}
    where = str(path)
    samples = _json_samples(api, path) if path.suffix == ".json" else _eval_samples(api, path, wanted)
    seen: set[tuple[str, int]] = set()
    stopped = None
    for key, sample in samples:
        if key is None:
            stopped = str(sample)
            break
        line = position.get(key, len(wanted) + len(seen) + 1)
        seen.add(key)
        label = f"Inspect sample {key[0]!r} epoch {key[1]}"
        if isinstance(sample, Exception):
            yield BadLine(where, line, f"unreadable {label}: {type(sample).__name__}: {_message_of(sample)}")
            continue
        try:
            yield Located(where, line, read(_plain(sample, where, task, model, line), request))
        except RECORD_SHAPE_ERRORS as exc:
            yield BadLine(where, line, f"unusable {label} ({task}): {shape_reason(exc)}")
    why = stopped or f"the log (status {header.status}) does not hold it"
    for key in wanted:
        if key not in seen:
            yield BadLine(where, position[key], f"missing Inspect sample {key[0]!r} epoch {key[1]}: {why}")


registry.register(registry.Registration(__name__, (), importers={FORMAT: read_inspect_log},
                                        detectors={FORMAT: is_inspect_log}))
