"""The one boundary where external bytes become values: every importer and ``score`` decode here.

* :func:`iter_json_lines` — a JSON Lines file, line by line: a line that is not UTF-8 or not JSON
  is a located :class:`BadLine` and the other lines go on;
* :func:`read_json_document` — one JSON document (a τ results file, a ToolSandbox summary), or a
  :class:`DecodeError` naming the file and why;
* :func:`first_json_key`, :func:`first_json_line` and :func:`first_json_lines` — what a format's
  detector looks at;
* :func:`~.compressed.open_bytes` — the bytes a file holds, for everything above: a file compressed with gzip,
  bzip2, xz or zstd (told by its first bytes, never by its name) reads as the plain file, streamed;
  a corrupt or truncated stream is a :class:`DecodeError` naming the file and what is wrong, never
  the part before it taken for the whole (:func:`~.cut_off.cut_off` reads a log's stream to its end first);
* :func:`~.cut_off.cut_off` — whether a file's content ends inside its JSON (a copy, a download or a writer cut
  short), said in one line: the file, where it ends, what precedes the cut. The readers above say it
  too: the last line of JSON Lines that ends inside its value is a :class:`BadLine` whose cause is
  :data:`CUT_LINE`, a document that does is a :class:`CutOffError`, and so is a compressed stream
  cut short;
* :func:`count` and :func:`seconds` — the accounting numbers logs carry (token counts, latencies),
  checked with the field's location in the message.

What is decoded here is still untrusted: the record modules (:mod:`.records`, the importers)
validate its shape.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .compressed import READ_CHUNK, CutOffError, DecodeError, compression_of, open_bytes
from .json_text import document_cut, ends_inside_json, json_integer, where_it_ends

EXCERPT_BYTES = 200
# Bounds on the accounting numbers logs carry: beyond them a value is not a measurement.
MAX_COUNT = 10**15  # tokens of one model call
MAX_SECONDS = 10**7  # seconds of one model call (about 115 days)
# Bounds on what is read into memory at once: a JSON Lines entry, and a whole JSON document (a tau2
# results file, a ToolSandbox context). Real entries are kilobytes; real documents tens of megabytes.
MAX_LINE_BYTES = 64 * 2**20
MAX_DOCUMENT_BYTES = 2**30


# The cause of the quarantine record of a JSON Lines log's last line when the log ends inside it.
CUT_LINE = "the log is cut off: its last line ends inside a JSON value"


# What reading a decoded record of the wrong shape raises (a list where an id belongs is
# unhashable, an object where text belongs has no .strip, ...): caught per record, so one hostile
# record becomes a quarantine entry and the others go on.
RECORD_SHAPE_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError)


def shape_reason(exc: BaseException) -> str:
    """The reason a record could not be read: our own errors' messages as they are, anything else
    with its type (object addresses removed)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, DecodeError):
        return text
    return f"{type(exc).__name__}: {re.sub(r' at 0x[0-9a-fA-F]+', '', text)}"[:500]


def excerpt_of(value: Any) -> str:
    """The first characters of a decoded value as JSON, for a quarantine record (never raising)."""
    try:
        return json.dumps(value, default=str, ensure_ascii=False)[:EXCERPT_BYTES]
    except (ValueError, TypeError, RecursionError):
        return f"<a {type(value).__name__} that cannot be shown>"


@dataclass(frozen=True)
class BadLine:
    """A quarantined input entry: where it was and why it could not be used.

    ``reason`` says it all for this entry. ``cause`` is what is wrong without what names the entry —
    the same text for every entry it befalls, which summaries group by (None: the reason names no
    entry, so it is the cause itself) —, and ``entry`` names the entry in its log's terms for those
    summaries (``("task", "12")``; None: by its rollout id, else its line, else its log)."""

    path: str
    line: int  # 1-based line or position in the log; 0 for the log as a whole
    reason: str
    rollout_id: str | None = None
    excerpt: str = ""
    cause: str | None = None
    entry: tuple[str, str] | None = None

    @property
    def grouped_by(self) -> str:
        """The cause the summaries count this entry under."""
        return self.cause if self.cause is not None else self.reason

    @property
    def named(self) -> tuple[str, str]:
        """(what the entry is, its id): ``entry``, else its rollout id, line or log."""
        if self.entry is not None:
            return self.entry
        if self.rollout_id is not None:
            return "entry", self.rollout_id
        return ("line", str(self.line)) if self.line else ("log", Path(self.path).name)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason, "rollout_id": self.rollout_id,
                "excerpt": self.excerpt, "cause": self.grouped_by, "entry": list(self.named)}


@dataclass(frozen=True)
class JsonLine:
    path: str
    line: int
    value: Any
    excerpt: str


def loads(text: str) -> Any:
    """JSON text as values, with over-long integers read as ±inf (see :func:`json_integer`)."""
    return json.loads(text, parse_int=json_integer)


def iter_json_lines(path: str | Path) -> Iterator[JsonLine | BadLine]:
    """Decode a JSON Lines file line by line; a line that is not UTF-8, not JSON or over
    :data:`MAX_LINE_BYTES` becomes a located :class:`BadLine` instead of failing the whole file
    (an over-long line is skipped without being held in memory). Blank lines are skipped."""
    for item in raw_json_lines(path):
        yield item if isinstance(item, BadLine) else decode_json_line(str(path), *item)


def raw_json_lines(path: str | Path) -> Iterator[tuple[int, bytes] | BadLine]:
    """(line number, bytes) of every non-blank line of a JSON Lines file, undecoded (for
    :func:`decode_json_line`, maybe in another process); a line over the limit is a BadLine."""
    path = Path(path)
    with open_bytes(path) as fh:
        for lineno, raw, size in bounded_lines(fh):
            if raw is None:
                yield over_limit(str(path), lineno, size)
            elif raw.strip():
                yield lineno, raw


def raw_json_line_range(path: str | Path, part: int, parts: int) -> Iterator[tuple[int, bytes] | BadLine]:
    """The lines of :func:`raw_json_lines` that start in part ``part`` (from 0) of ``parts`` equal
    byte ranges of a plain (uncompressed) file, with their numbers in the whole file. Each boundary
    moves forward to the next line's start, so every line is in exactly one part and the parts, in
    order, are the file's lines in order; a part may have none. Decided from the file alone: no
    part needs to know another's."""
    if not 0 <= part < parts:
        raise ValueError(f"part {part} of {parts}: want 0 <= part < parts")
    path = Path(path)
    if compression_of(path) is not None:
        raise ValueError(f"{path}: a compressed file cannot be read by byte range")
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        start, end = (_line_start(fh, size * k // parts) for k in (part, part + 1))
        before = _newlines_before(fh, start)
        fh.seek(start)
        position = start
        for lineno, raw, length in bounded_lines(fh):
            if position >= end:
                break
            position += length
            if raw is None:
                yield over_limit(str(path), before + lineno, length)
            elif raw.strip():
                yield before + lineno, raw


def _line_start(fh: BinaryIO, offset: int) -> int:
    """The offset of the first line that starts at or after ``offset``."""
    if offset <= 0:
        return 0
    fh.seek(offset - 1)
    while (raw := fh.readline(2**20)) and not raw.endswith(b"\n"):
        pass
    return fh.tell()


def _newlines_before(fh: BinaryIO, offset: int) -> int:
    """The line breaks in the file's first ``offset`` bytes."""
    fh.seek(0)
    count = 0
    while offset > 0 and (block := fh.read(min(offset, 2**24))):
        count += block.count(b"\n")
        offset -= len(block)
    return count


def over_limit(path: str, lineno: int, size: int) -> BadLine:
    """The quarantine record of a line longer than :data:`MAX_LINE_BYTES`."""
    return BadLine(path, lineno, f"a line of {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit",
                   cause=f"a line over the {MAX_LINE_BYTES:,}-byte limit")


def decode_json_line(path: str, lineno: int, raw: bytes) -> JsonLine | BadLine:
    """One line of :func:`raw_json_lines` as its JSON value, or why it is not JSON: a last line (no
    line break after it) that ends inside its value is the log cut off there (:data:`CUT_LINE`)."""
    excerpt = raw[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    try:  # json.loads itself, not loads(): JSON's nesting counts against the stack's depth, kept as it was
        return JsonLine(path, lineno, json.loads(raw.decode("utf-8"), parse_int=json_integer), excerpt)
    except (ValueError, RecursionError) as exc:  # a UnicodeDecodeError too
        if not raw.endswith(b"\n") and ends_inside_json(raw):
            return BadLine(path, lineno, f"the log is cut off inside this line, its last: an incomplete JSON value "
                                         f"of {len(raw):,} bytes", excerpt=excerpt, cause=CUT_LINE)
        if isinstance(exc, UnicodeDecodeError):
            return BadLine(path, lineno, f"not UTF-8: {exc}", excerpt=excerpt, cause="not UTF-8")
        return BadLine(path, lineno, f"invalid JSON: {exc}", excerpt=excerpt, cause="invalid JSON")


def bounded_lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, bytes or None when over the limit, size) of each line, reading at most
    :data:`MAX_LINE_BYTES` + 1 bytes at a time."""
    lineno = 0
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        lineno += 1
        size = len(raw)
        if size <= MAX_LINE_BYTES:
            yield lineno, raw, size
            continue
        while not raw.endswith(b"\n") and (raw := fh.readline(MAX_LINE_BYTES)):
            size += len(raw)
        yield lineno, None, size


def read_json_document(path: str | Path) -> Any:
    """One JSON document of at most :data:`MAX_DOCUMENT_BYTES` (a compressed file's content: read
    whole, so a corrupt stream fails before anything is parsed); :class:`DecodeError` (with the
    file's name and the cause) otherwise."""
    path = Path(path)
    try:
        compressed = compression_of(path)
        if compressed is None and (size := path.stat().st_size) > MAX_DOCUMENT_BYTES:
            raise DecodeError(f"{path.name} is {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,}-byte limit of "
                              "one document")
        with open_bytes(path) as fh:
            data = _read_at_most(fh, MAX_DOCUMENT_BYTES)
        if data is None:
            raise DecodeError(f"{path.name} decompresses ({compressed}) to over the {MAX_DOCUMENT_BYTES:,}-byte "
                              f"limit of one document")
        try:
            return loads(data.decode("utf-8"))
        except (ValueError, RecursionError):  # ended early (said so), or broken
            cut = document_cut(data, path.name, where_it_ends(len(data), compressed is not None))
            if cut is not None:
                raise CutOffError(cut.said) from None
            raise
    except DecodeError:
        raise
    except FileNotFoundError:
        raise DecodeError(f"missing {path.name}") from None
    except OSError as exc:  # a folder in its place, no permission, ...
        raise DecodeError(f"{path.name} cannot be read: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{path.name} is not UTF-8: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"{path.name} is not valid JSON: {exc}") from None


_FIRST_KEY = re.compile(r'^\s*\{\s*"((?:[^"\\]|\\.){0,200})"\s*:')


def first_json_key(path: str | Path, head: int = 4096) -> str | None:
    """The first key of the JSON object a file opens with, read from its first ``head`` bytes only
    (None: no object, or its first key is not there): what a detector looks at before parsing a
    document that may be large."""
    try:
        with open_bytes(path) as fh:
            match = _FIRST_KEY.match(fh.read(head).decode("utf-8", errors="replace"))
    except (OSError, DecodeError):
        return None
    return match.group(1) if match else None


def first_json_lines(path: str | Path, lines: int) -> list[Any] | None:
    """The values of a file's first ``lines`` non-blank lines as JSON (fewer where it has fewer, or
    where the file is cut off inside one: the lines before it), or None (no file, a line that is not
    JSON or over :data:`MAX_LINE_BYTES`): what a detector of a JSON Lines format looks at."""
    values: list[Any] = []
    try:
        with open_bytes(path) as fh:
            for _, raw, _ in bounded_lines(fh):
                if raw is None:
                    return None
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n") and ends_inside_json(raw):  # the cut: what is whole is the log's
                    break
                values.append(json.loads(raw))
                if len(values) == lines:
                    break
    except (OSError, ValueError, RecursionError):  # a DecodeError (a corrupt stream) too
        return None
    return values


def first_json_line(path: str | Path) -> Any:
    """The value of a file's first non-blank line as JSON, or None (see :func:`first_json_lines`)."""
    values = first_json_lines(path, 1)
    return values[0] if values else None


# The names compressed files are given: a file's plain name is its name without one (BFCL finds a
# result file's score file by name, and either may be compressed).
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


def plain_name(name: str) -> str:
    """A file's name without the suffix of a compressed file (``x_result.json.gz`` →
    ``x_result.json``); other names as they are."""
    return next((name[: -len(s)] for s in COMPRESSED_SUFFIXES if name.endswith(s) and len(name) > len(s)), name)


def _read_at_most(fh: BinaryIO, limit: int) -> bytes | None:
    """The rest of ``fh``, or None where it holds more than ``limit`` bytes (never read beyond)."""
    parts, size = [], 0
    while chunk := fh.read(min(READ_CHUNK, limit + 1 - size)):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return None
    return b"".join(parts)


def count(value: Any, where: str) -> int:
    """A whole number from 0 to :data:`MAX_COUNT` (a token count)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_COUNT \
            or value != int(value):
        raise DecodeError(f"{where} must be a whole number from 0 to {MAX_COUNT:.0e}, got {_shown(value)}")
    return int(value)


def seconds(value: Any, where: str) -> float:
    """A number from 0 to :data:`MAX_SECONDS` (a latency); never NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_SECONDS:
        raise DecodeError(f"{where} must be a finite non-negative number of at most {MAX_SECONDS:.0e} s, "
                          f"got {_shown(value)}")
    return float(value)


def _shown(value: Any) -> str:
    """A value for an error message: short, and never a huge number spelled out."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_COUNT:
        return f"an integer of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4000'} digits"
    text = repr(value) if isinstance(value, (int, float, str, type(None), bool)) else f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def finite_json(value: Any) -> Any:
    """``value`` with every NaN or infinite float written as its name (``"NaN"``, ``"Infinity"``),
    so that the JSON it is written as stays valid JSON (logs may carry them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value
