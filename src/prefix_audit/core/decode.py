"""The one boundary where external bytes become values: every importer and ``score`` decode here.

* :func:`iter_json_lines` — a JSON Lines file, line by line: a line that is not UTF-8 or not JSON
  is a located :class:`BadLine` and the other lines go on;
* :func:`read_json_document` — one JSON document (a τ results file, a ToolSandbox summary), or a
  :class:`DecodeError` naming the file and why;
* :func:`first_json_key` and :func:`first_json_line` — what a format's detector looks at;
* :func:`count` and :func:`seconds` — the accounting numbers logs carry (token counts, latencies),
  checked with the field's location in the message.

What is decoded here is still untrusted: the record modules (:mod:`.records`, the importers)
validate its shape.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

EXCERPT_BYTES = 200
# Bounds on the accounting numbers logs carry: beyond them a value is not a measurement.
MAX_COUNT = 10**15  # tokens of one model call
MAX_SECONDS = 10**7  # seconds of one model call (about 115 days)
# Bounds on what is read into memory at once: a JSON Lines entry, and a whole JSON document (a tau2
# results file, a ToolSandbox context). Real entries are kilobytes; real documents tens of megabytes.
MAX_LINE_BYTES = 64 * 2**20
MAX_DOCUMENT_BYTES = 2**30


class DecodeError(ValueError):
    """Input that cannot be decoded or a field that does not hold what it must; says where."""


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


def _integer(digits: str) -> int | float:
    """A JSON integer; one longer than Python converts (``sys.get_int_max_str_digits``, 4,300 by
    default) is read as the float it overflows to (±inf), as JSON's ``1e999`` is — so it fails the
    field's own check (an accounting number, an argument) instead of the whole line or document."""
    limit = sys.get_int_max_str_digits()
    return int(digits) if not limit or len(digits.lstrip("-")) <= limit else float(digits)


def loads(text: str) -> Any:
    """JSON text as values, with over-long integers read as ±inf (see :func:`_integer`)."""
    return json.loads(text, parse_int=_integer)


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
    with path.open("rb") as fh:
        for lineno, raw, size in _bounded_lines(fh):
            if raw is None:
                yield over_limit(str(path), lineno, size)
            elif raw.strip():
                yield lineno, raw


def over_limit(path: str, lineno: int, size: int) -> BadLine:
    """The quarantine record of a line longer than :data:`MAX_LINE_BYTES`."""
    return BadLine(path, lineno, f"a line of {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit",
                   cause=f"a line over the {MAX_LINE_BYTES:,}-byte limit")


def decode_json_line(path: str, lineno: int, raw: bytes) -> JsonLine | BadLine:
    """One line of :func:`raw_json_lines` as its JSON value, or why it is not JSON."""
    excerpt = raw[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    try:  # json.loads itself, not loads(): JSON's nesting counts against the stack's depth, kept as it was
        return JsonLine(path, lineno, json.loads(raw.decode("utf-8"), parse_int=_integer), excerpt)
    except UnicodeDecodeError as exc:
        return BadLine(path, lineno, f"not UTF-8: {exc}", excerpt=excerpt, cause="not UTF-8")
    except (ValueError, RecursionError) as exc:
        return BadLine(path, lineno, f"invalid JSON: {exc}", excerpt=excerpt, cause="invalid JSON")


def _bounded_lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None, int]]:
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
    """One JSON document of at most :data:`MAX_DOCUMENT_BYTES`; :class:`DecodeError` (with the
    file's name and the cause) otherwise."""
    path = Path(path)
    try:
        if (size := path.stat().st_size) > MAX_DOCUMENT_BYTES:
            raise DecodeError(f"{path.name} is {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,}-byte limit of one document")
        return loads(path.read_bytes().decode("utf-8"))
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
        with Path(path).open("rb") as fh:
            match = _FIRST_KEY.match(fh.read(head).decode("utf-8", errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def first_json_line(path: str | Path) -> Any:
    """The value of a file's first non-blank line as JSON, or None (no file, not JSON, a line over
    :data:`MAX_LINE_BYTES`): what a detector of a JSON Lines format looks at."""
    try:
        with Path(path).open("rb") as fh:
            first = next((raw for raw in fh if raw.strip()), b"")
        return json.loads(first) if len(first) <= MAX_LINE_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None


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
