"""Inspect AI eval logs (``.eval`` and ``.json``) → rollout records: ``prefix-audit import inspect``.

Inspect is a log format, not a benchmark: this module reads a log with inspect-ai's own reader (the
optional extra ``prefix-audit[inspect]``) and hands each sample × epoch, as plain JSON values
(:class:`~prefix_audit.core.framework_samples.FrameworkSample`), to the benchmark that registered the log's task
(``Registration.inspect_tasks``: ``tau2_airline``, ``tau2_retail``, ``bfcl``), which turns it into a
rollout with what the log recorded.

Reading, sample by sample, never the whole log: the header first, with inspect-ai's reader (task,
model, sample ids, epochs); then for ``.eval`` each sample's zip member read here — decompressed
(zstd, as inspect-ai writes them, or deflate) and parsed whole with orjson, which is faster than
inspect-ai's own reader walking the member's JSON in Python to leave the events out —, for ``.json``
— which inspect-ai's reader loads whole — the ``samples`` array streamed with ijson (inspect-ai's
own dependency). Either way each sample, without its events (they repeat the store), is validated
as inspect-ai's ``EvalSample`` and its attachments resolved, so message texts are whole.
``tests/test_inspect_reader.py`` checks every sample of the generated logs against
``inspect_ai.log.read_eval_log_sample``.

Every sample × epoch the header lists comes out as a rollout or a quarantine record (located by
its position in the header's order): one the benchmark cannot use (no store, no metadata, another
shape), one the log does not hold (a run that ended early, a truncated file), one that does not
read. A log of a task no benchmark registered, or one whose header does not read, is one line.

A compressed ``.json`` (``.json.gz``, …: :func:`~prefix_audit.core.compressed.open_bytes`) is unpacked
into a temporary file first (:func:`~prefix_audit.core.archives.unpack_file`), since inspect-ai's
reader opens logs by name; its records still name the compressed file.
"""

from __future__ import annotations

import io
import re
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from prefix_audit.core.archives import unpack_file
from prefix_audit.core.compressed import compression_of, open_bytes
from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, loads, plain_name, shape_reason
from prefix_audit.core.framework_samples import FrameworkSample, chat_messages
from prefix_audit.core.records import BadLine, Located, model_in_log
from prefix_audit.replay import registry
from prefix_audit.replay.registry import ImportRequest, RefusedOption

EXTRA = "inspect"
FORMAT = "inspect"
# The event transcript repeats the store (twice the database); its pools serve only the events.
SKIPPED_FIELDS = frozenset({"events", "events_data"})
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
    """An Inspect log: a ``.eval`` zip, or a ``.json`` (compressed or not) whose object opens with
    Inspect's ``version`` and ``status`` (read from its first bytes only)."""
    if not path.is_file():
        return False
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path)
    if not plain_name(path.name).endswith(".json"):
        return False
    try:
        with open_bytes(path) as fh:
            return bool(_JSON_HEAD.match(fh.read(HEAD_BYTES)))
    except (OSError, ValueError):  # a corrupt stream (DecodeError): said when the log is read
        return False


def _task_name(task: str) -> str:
    return task.rsplit("/", 1)[-1]  # "inspect_evals/tau2_airline" → "tau2_airline"


def _message_of(error: Any) -> str:
    return " ".join(str(getattr(error, "message", error)).split())[:500]


def framework_sample(log: str, task: str, model: str, sample_id: Any, epoch: int, position: int, *,
                     metadata: Any, store: Any, messages: Any, scores: Any, error: Any,
                     limit: tuple[str, float] | None) -> FrameworkSample:
    """One sample × epoch as plain values, from inspect-ai's objects: its messages, scores (``Score``
    by scorer name) and error (``EvalError``) as a log's sample or a scorer's ``TaskState`` hold them;
    ``limit`` the limit it hit (type, value). The one reading of both ``prefix-audit import inspect``
    and the Inspect scorer (:mod:`prefix_audit.inspect_scorer`)."""
    return FrameworkSample(
        log, task, model, str(sample_id), int(epoch), position,
        metadata=metadata or {}, store=store or {},
        messages=chat_messages([m.model_dump(mode="json", exclude_none=True) for m in messages], "messages"),
        scores={name: score.model_dump(mode="json") for name, score in (scores or {}).items()},
        error=_message_of(error) if error is not None else None,
        limit=f"{limit[0]} limit {limit[1]:g}" if limit is not None else None)


def _plain(sample: Any, log: str, task: str, model: str, position: int) -> FrameworkSample:
    limit = sample.limit
    return framework_sample(log, task, model, sample.id, sample.epoch, position, metadata=sample.metadata,
                            store=sample.store, messages=sample.messages, scores=sample.scores, error=sample.error,
                            limit=(limit.type, limit.limit) if limit is not None else None)


ZIP_ZSTANDARD = 93  # the ZIP compression method inspect-ai writes sample members with
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then the name's and the extra field's lengths
_LOCAL_HEADER_SIGNATURE = b"PK\x03\x04"


def _member_bytes(archive: zipfile.ZipFile, fh: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """A member's uncompressed bytes: stored and deflated members as the standard library reads
    them, zstd members (which it reads only from Python 3.14) decompressed here, every frame."""
    if info.compress_type != ZIP_ZSTANDARD:
        return archive.read(info)
    import zstandard

    fh.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(fh.read(_LOCAL_HEADER.size))
    if signature != _LOCAL_HEADER_SIGNATURE:
        raise zipfile.BadZipFile(f"{info.filename}: no local file header at offset {info.header_offset}")
    fh.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    compressed = fh.read(info.compress_size)
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True) as reader:
        data = reader.read()
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"{info.filename}: CRC check failed")
    return data


_EVENTS_KEY = b'"events":'


def _json_object(data: bytes, later_fields: list[str]) -> Any:
    """A sample member's JSON without its events, which are most of its bytes and objects: the
    object before them and the one after them parsed by orjson, the events' bytes between never
    parsed; the whole member parsed (then by the standard library where orjson refuses it: NaN,
    integers beyond 64 bits) where the events cannot be cut out as below.

    The events' value ends where the first field the sample model defines after ``events``
    (``later_fields``, in the model's order, as inspect-ai writes them) begins. Only a cut at the
    top level leaves JSON that parses: a key of the same name deeper down leaves a brace open."""
    import orjson

    def parsed(text: bytes) -> dict | None:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    head = None
    at = data.find(_EVENTS_KEY)
    while at != -1 and head is None:
        before = data[:at].rstrip()
        head = parsed(before[:-1] + b"}") if before.endswith(b",") else None
        at = data.find(_EVENTS_KEY, at + 1) if head is None else at
    if head is not None:
        start = at + len(_EVENTS_KEY)
        for name in later_fields:
            marker = b',"' + name.encode("utf-8") + b'":'
            cut = data.find(marker, start)
            while cut != -1:
                events = data[start:cut].strip()
                tail = parsed(b"{" + data[cut + 1:]) if events[:1] == b"[" and events[-1:] == b"]" else None
                if tail is not None:
                    return {**head, **tail}
                cut = data.find(marker, cut + 1)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return loads(data.decode("utf-8"))


def _sample_of(api: Any, obj: Any) -> Any:
    """A sample's JSON object without the fields it is read without, as inspect-ai's ``EvalSample``
    with its attachments resolved."""
    if not isinstance(obj, dict):
        raise InspectLogError(f"a sample is a JSON object, not {type(obj).__name__}")
    kept = {key: value for key, value in obj.items() if key not in SKIPPED_FIELDS}
    return api.resolve_sample_attachments(api.EvalSample.model_validate(kept), "full")


def _eval_samples(api: Any, path: Path, wanted: list[tuple[str, int]]) -> Iterator[tuple[tuple[str, int], Any]]:
    """(sample id, epoch) and the sample (or why it does not read) for each wanted one the log holds:
    each member decompressed and parsed whole by us — the events left out after parsing, which
    costs a fraction of inspect-ai's walk around them —, then validated by inspect-ai's model."""
    fields = list(api.EvalSample.model_fields)
    later_fields = fields[fields.index("events") + 1:]
    with path.open("rb") as fh, zipfile.ZipFile(fh) as archive:
        members = {info.filename: info for info in archive.infolist()}
        for sample_id, epoch in wanted:
            info = members.get(f"samples/{sample_id}_epoch_{epoch}.json")
            if info is None:
                continue  # not in the log: said with the others the log lacks
            try:
                yield (sample_id, epoch), _sample_of(api, _json_object(_member_bytes(archive, fh, info), later_fields))
            except Exception as exc:  # a member that does not read costs that sample only
                yield (sample_id, epoch), exc


def _json_sample_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Each element of the log's ``samples`` array as a JSON object, without its events."""
    import ijson
    from ijson.common import ObjectBuilder

    item = "samples.item"
    builder: ObjectBuilder | None = None
    skipping = False  # inside the value of a sample's skipped field: until the sample's next key or end
    with path.open("rb") as fh:
        for prefix, event, value in ijson.parse(fh, use_float=True):
            if builder is None:
                if prefix == item and event == "start_map":
                    builder = ObjectBuilder()
                    builder.event(event, value)
                continue
            if prefix == item:
                skipping = event == "map_key" and value in SKIPPED_FIELDS
            if skipping:
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
        key = (str(obj.get("id")), epoch if isinstance(epoch := obj.get("epoch"), int) else 0)
        try:
            yield key, _sample_of(api, obj)
        except Exception as exc:
            yield key, exc


def read_inspect_log(request: ImportRequest) -> Iterator[Located | BadLine]:
    """Every sample × epoch of an Inspect log as a located rollout or a quarantine record."""
    if compression_of(request.source) is None:
        yield from _read_log(request, Path(request.source))
        return
    with tempfile.TemporaryDirectory(prefix="prefix-audit-inspect-") as folder:
        yield from _read_log(request, unpack_file(request.source, folder))


def _read_log(request: ImportRequest, path: Path) -> Iterator[Located | BadLine]:
    """The samples of the log ``request`` names, read from ``path`` (the log itself, or its
    content unpacked)."""
    api = _api()
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
    where = str(request.source)
    model, named_by = model_in_log(request.model, header.eval.model, "eval.model", where)
    epochs = header.eval.config.epochs or 1
    ids = list(header.eval.dataset.sample_ids or ())
    wanted = [(str(i), e) for i in ids for e in range(1, epochs + 1)]
    if not ids and path.suffix != ".json":  # a log written before headers listed their sample ids
        wanted = [(str(s.id), s.epoch) for s in api.read_eval_log_sample_summaries(str(path))]
    position = {key: n + 1 for n, key in enumerate(wanted)}
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
        entry = ("sample", f"{key[0]} epoch {key[1]}")
        if isinstance(sample, Exception):
            why = f"{type(sample).__name__}: {_message_of(sample)}"
            yield BadLine(where, line, f"unreadable {label}: {why}", cause=f"unreadable Inspect sample: {why}",
                          entry=entry)
            continue
        try:
            yield Located(where, line, read(_plain(sample, where, task, model, line), request), named_by)
        except RECORD_SHAPE_ERRORS as exc:
            why = shape_reason(exc)
            yield BadLine(where, line, f"unusable {label} ({task}): {why}",
                          cause=f"unusable Inspect sample ({task}): {why}", entry=entry)
    why = stopped or f"the log (status {header.status}) does not hold it"
    for key in wanted:
        if key not in seen:
            yield BadLine(where, position[key], f"missing Inspect sample {key[0]!r} epoch {key[1]}: {why}",
                          cause=f"missing Inspect sample: {why}", entry=("sample", f"{key[0]} epoch {key[1]}"))


registry.register(registry.Registration(__name__, (), importers={FORMAT: read_inspect_log},
                                        detectors={FORMAT: is_inspect_log},
                                        reads_cut_documents=frozenset({FORMAT})))  # .json: sample by sample
