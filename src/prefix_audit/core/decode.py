"""The one boundary where external bytes become values: every importer and ``score`` decode here.

* :func:`iter_json_lines` — a JSON Lines file, line by line: a line that is not UTF-8 or not JSON
  is a located :class:`BadLine` and the other lines go on;
* :func:`read_json_document` — one JSON document (a τ results file, a ToolSandbox summary), or a
  :class:`DecodeError` naming the file and why;
* :func:`first_json_key`, :func:`first_json_line` and :func:`first_json_lines` — what a format's
  detector looks at;
* :func:`open_bytes` — the bytes a file holds, for everything above: a file compressed with gzip,
  bzip2, xz or zstd (told by its first bytes, never by its name) reads as the plain file, streamed;
  a corrupt or truncated stream is a :class:`DecodeError` naming the file and what is wrong, never
  the part before it taken for the whole (:func:`cut_off` reads a log's stream to its end first);
* :func:`cut_off` — whether a file's content ends inside its JSON (a copy, a download or a writer cut
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

import bz2
import gzip
import hashlib
import io
import json
import lzma
import math
import os
import re
import sys
import zlib
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


class CutOffError(DecodeError):
    """A file whose content ends before its end — inside a JSON document, before a compressed stream's
    end marker or an archive's end —; its message is the one line said of it (the file, where it ends)."""


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
    with open_bytes(path) as fh:
        for lineno, raw, size in _bounded_lines(fh):
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
        for lineno, raw, length in _bounded_lines(fh):
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
        return JsonLine(path, lineno, json.loads(raw.decode("utf-8"), parse_int=_integer), excerpt)
    except (ValueError, RecursionError) as exc:  # a UnicodeDecodeError too
        if not raw.endswith(b"\n") and ends_inside_json(raw):
            return BadLine(path, lineno, f"the log is cut off inside this line, its last: an incomplete JSON value "
                                         f"of {len(raw):,} bytes", excerpt=excerpt, cause=CUT_LINE)
        if isinstance(exc, UnicodeDecodeError):
            return BadLine(path, lineno, f"not UTF-8: {exc}", excerpt=excerpt, cause="not UTF-8")
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
    """One JSON document of at most :data:`MAX_DOCUMENT_BYTES` (a compressed file's content: read
    whole, so a corrupt stream fails before anything is parsed); :class:`DecodeError` (with the
    file's name and the cause) otherwise."""
    path = Path(path)
    try:
        compressed = compression_of(path)
        if compressed is None and (size := path.stat().st_size) > MAX_DOCUMENT_BYTES:
            raise DecodeError(f"{path.name} is {size:,} bytes, over the {MAX_DOCUMENT_BYTES:,}-byte limit of one document")
        with open_bytes(path) as fh:
            data = _read_at_most(fh, MAX_DOCUMENT_BYTES)
        if data is None:
            raise DecodeError(f"{path.name} decompresses ({compressed}) to over the {MAX_DOCUMENT_BYTES:,}-byte "
                              f"limit of one document")
        try:
            return loads(data.decode("utf-8"))
        except (ValueError, RecursionError):  # ended early (said so), or broken
            cut = _document_cut(data, path.name, _ends_at(len(data), compressed is not None))
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
            for _, raw, _ in _bounded_lines(fh):
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


# --- compressed files --------------------------------------------------------------------------

# A file's compression as its first bytes tell it (never its name: logs are passed around renamed).
MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}
# The names compressed files are given: a file's plain name is its name without one (BFCL finds a
# result file's score file by name, and either may be compressed).
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
_CHUNK = 2**20  # bytes read at a time where a whole stream is read
# zstd input fed at a time: zstd expands at most about 32,768-fold (a run-length block), so one
# step never holds more than ~32 MiB of output, however hostile the file.
_ZSTD_INPUT = 1024


def _magic(head: bytes) -> str | None:
    return next((kind for magic, kind in MAGIC.items() if head.startswith(magic)), None)


def compression_of(path: str | Path) -> str | None:
    """The compression of the file at ``path`` (``gzip``, ``bzip2``, ``xz``, ``zstd``) from its
    first bytes; None for a plain file, a folder or no file."""
    try:
        with open(path, "rb") as fh:
            return _magic(fh.read(6))
    except OSError:
        return None


def plain_name(name: str) -> str:
    """A file's name without the suffix of a compressed file (``x_result.json.gz`` →
    ``x_result.json``); other names as they are."""
    return next((name[: -len(s)] for s in COMPRESSED_SUFFIXES if name.endswith(s) and len(name) > len(s)), name)


def open_bytes(path: str | Path) -> BinaryIO:
    """The bytes a file holds, as a stream: as stored, or decompressed where its first bytes say it
    is compressed (:data:`MAGIC`). Reading a stream that is corrupt or ends early raises a
    :class:`DecodeError` naming the file and what is wrong."""
    path = Path(path)
    fh = path.open("rb")
    try:
        kind = _magic(fh.peek(6)[:6])
        return fh if kind is None else io.BufferedReader(_Decompressed(fh, kind, path.name), _CHUNK)
    except BaseException:
        fh.close()
        raise


def content_sha256(path: str | Path) -> str:
    """The sha256 of the bytes a file holds — a compressed file's content, not its compressed
    bytes, so a log and its compressed copy have one digest (the plain file's ``sha256sum``)."""
    digest = hashlib.sha256()
    with open_bytes(path) as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_at_most(fh: BinaryIO, limit: int) -> bytes | None:
    """The rest of ``fh``, or None where it holds more than ``limit`` bytes (never read beyond)."""
    parts, size = [], 0
    while chunk := fh.read(min(_CHUNK, limit + 1 - size)):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return None
    return b"".join(parts)


class _Decompressed(io.RawIOBase):
    """A compressed file's content; the decompressor's errors as a :class:`DecodeError` naming the
    file and what is wrong."""

    def __init__(self, file: BinaryIO, kind: str, name: str) -> None:
        self._file, self._kind, self._name = file, kind, name
        if kind == "gzip":
            self._stream: Any = gzip.GzipFile(fileobj=file, mode="rb")
        elif kind == "bzip2":
            self._stream = bz2.BZ2File(file)
        elif kind == "xz":
            self._stream = lzma.LZMAFile(file)
        else:
            self._stream = _ZstdFrames(file, name)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self._stream.readinto(buffer)
        except EOFError:
            raise CutOffError(f"{self._name} is truncated: its {self._kind} stream ends before its end marker "
                              f"(the file is cut off at byte {os.fstat(self._file.fileno()).st_size:,})") from None
        except (OSError, lzma.LZMAError, zlib.error) as exc:  # each decompressor's own word for bad data
            raise DecodeError(f"{self._name}: its {self._kind} stream is corrupt "
                              f"({' '.join(str(exc).split())[:200]})") from None

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._file.close()
            super().close()


class _ZstdFrames(io.RawIOBase):
    """zstd frames one after another, decompressed (zstandard's own stream reader ends silently
    where a file is cut off: here that is an EOFError, as for the other compressions)."""

    def __init__(self, file: BinaryIO, name: str) -> None:
        try:
            import zstandard
        except ImportError:
            raise DecodeError(f"{name} is zstd-compressed: reading it needs the zstandard package "
                              f"(pip install zstandard)") from None
        self._zstd, self._file = zstandard, file
        self._frame: Any = None  # the decompressor of the frame being read; None between frames
        self._pending = b""  # input after a frame's end: the next frame's start
        self._out, self._at = memoryview(b""), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at == len(self._out):
            if not self._decompress_more():
                return 0
        n = min(len(buffer), len(self._out) - self._at)
        buffer[:n] = self._out[self._at:self._at + n]
        self._at += n
        return n

    def _decompress_more(self) -> bool:
        """Decompress the next piece of input; False at the end of the file between frames."""
        data, self._pending = self._pending or self._file.read(_ZSTD_INPUT), b""
        if not data:
            if self._frame is not None:
                raise EOFError("the file ends inside a frame")
            return False
        if self._frame is None:
            self._frame = self._zstd.ZstdDecompressor().decompressobj()
        try:
            self._out, self._at = memoryview(self._frame.decompress(data)), 0
        except self._zstd.ZstdError as exc:
            raise OSError(str(exc)) from None
        if self._frame.eof:
            self._pending, self._frame = self._frame.unused_data, None
        return True


# --- files cut off ----------------------------------------------------------------------------

# What a file's content is, as far as its cut matters: JSON Lines (the whole lines before a cut are
# entries as usual), one JSON document (nothing before a cut is the document), a zip archive (its
# index is at its end: nothing before a cut is readable).
JSON_LINES, JSON_DOCUMENT, ZIP_ARCHIVE = "JSON Lines", "JSON document", "zip archive"
_ZIP_MAGIC = b"PK\x03\x04"
# A whole zip ends with its end-of-central-directory record: this signature, 16 bytes, the length of
# the comment that ends the file (2 bytes), the comment (at most 65,535 bytes).
_ZIP_END = b"PK\x05\x06"
_ZIP_END_SIZE = 22
_HEAD = 2**12  # the first bytes of a file looked at (where its JSON opens)
_TAIL = 2**17  # the last bytes looked at first (a real log's last line or closing bracket is in them)
_CLOSER = {b"{": b"}", b"[": b"]"}
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_START = re.compile(r"-|-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][-+]?\d*)?")  # a JSON number, or its first characters
_NUMBER_CHARS = "-+.0123456789eE"
_HEX_ESCAPE_START = re.compile(r"u[0-9a-fA-F]{0,4}")
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_int=_integer)


@dataclass(frozen=True)
class CutOff:
    """A file whose content ends inside its JSON (or its zip archive), as :func:`cut_off` finds it."""

    said: str  # one line: the file, where it ends, and — a document — the complete entries before the cut
    line: int  # the line it ends inside (0: a zip archive)
    shape: str  # JSON_LINES, JSON_DOCUMENT or ZIP_ARCHIVE


def cut_off(path: str | Path, name: str | None = None) -> CutOff | None:
    """Where the content of the file at ``path`` ends inside its JSON or its zip archive, or None: it
    ends where they do, or it is neither (its reader says what it is). ``name`` names it in what is said
    (default: its file name). A compressed file whose content opens JSON or a zip is read to its
    stream's end (one cut short raises a :class:`CutOffError`, a corrupt one a :class:`DecodeError`),
    its content judged as a plain file's.

    Cheap for a whole file: its first bytes, its first line and its last line are read. JSON Lines (a
    first line that is a whole JSON value; a document on one line too) may end only inside their last
    line, which has no line break after it then. Any other file is a document: an indented one whose
    top-level bracket closes alone at the start of its last line is whole (no other bracket closes at a
    line's start); only another is parsed whole (one over :data:`MAX_DOCUMENT_BYTES` is not: its reader
    refuses it)."""
    path = Path(path)
    content = _Content(path)
    name = name or path.name
    if content.head.startswith(_ZIP_MAGIC):
        tail = content.tail(_ZIP_END_SIZE + 2**16 - 1)
        end = tail.rfind(_ZIP_END)
        if end >= 0 and len(tail) - end >= _ZIP_END_SIZE + int.from_bytes(tail[end + 20:end + 22], "little"):
            return None
        return CutOff(f"{name} is cut off: it ends at byte {content.size:,} before the end of its zip archive (its "
                      f"central directory)", 0, ZIP_ARCHIVE)
    opener = content.head.lstrip()[:1]
    if opener not in _CLOSER:
        return None
    first, first_end = content.first_line()
    if first is not None and _is_json(first):
        if first_end == content.size:  # one line, whole
            return None
        last, unended = _last_line(content)
        if last is None or not unended or not ends_inside_json(last):
            return None
        line, ends_at = content.newlines() + 1, _ends_at(content.size, content.compressed)
        return CutOff(f"{name} is cut off: it ends inside line {line:,} ({ends_at}), an incomplete JSON value", line,
                      JSON_LINES)
    last, _ = _last_line(content)
    if last is not None and last.rstrip() == _CLOSER[opener] and _opens_indented(content.head, opener):
        return None
    data = content.whole()
    return _document_cut(data, name, _ends_at(content.size, content.compressed)) if data is not None else None


def _opens_indented(head: bytes, opener: bytes) -> bool:
    """Whether a document opens as an indented one: its bracket alone on its first line, the next
    line indented (then only its top-level bracket closes at the start of a line)."""
    first, _, rest = head.lstrip().partition(b"\n")
    return first.rstrip() == opener and rest[:1] in (b" ", b"\t")


def ends_inside_json(data: bytes) -> bool:
    """Whether ``data`` is JSON text cut off inside its value: a prefix of JSON, not whole JSON and not
    broken before its end."""
    text = _utf8_before_cut(data)
    if text is None or not text.strip():  # no JSON begun
        return False
    try:
        _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return _ends_inside_value(text, exc)
    except (ValueError, RecursionError):
        return False
    return False


def _ends_inside_value(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the parser's error ``exc`` on ``text`` is the text's end: nothing but white space after
    where it stopped, a string left open, or a literal, a number or a \\u escape begun and not finished."""
    # (nothing is copied from the text, which may be a whole document)
    if _SPACE.match(text, exc.pos).end() == len(text) or exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return bool(_HEX_ESCAPE_START.fullmatch(text, exc.pos))
    if exc.msg == "Expecting value" and len(text) - exc.pos < max(map(len, _LITERALS)) and \
            any(literal.startswith(text[exc.pos:]) for literal in _LITERALS):
        return True
    # A number is read as far as it is one (``1.`` as ``1``): the error is then after that part, else at
    # its start (``-``); either way the number runs from its start to the text's end.
    begun = exc.pos
    while begun and text[begun - 1] in _NUMBER_CHARS:
        begun -= 1
    inside = begun < exc.pos if exc.msg == "Expecting ',' delimiter" else exc.msg == "Expecting value"
    return inside and bool(_NUMBER_START.fullmatch(text, begun))


def _utf8_before_cut(data: bytes) -> str | None:
    """``data`` as text, a character cut off at its very end left out; None where it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end != len(data) or exc.reason != "unexpected end of data":
            return None
        return data[:exc.start].decode("utf-8", errors="strict")


def _is_json(data: bytes) -> bool:
    try:
        _DECODER.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return True


def _ends_at(size: int, compressed: bool) -> str:
    return f"byte {size:,} of its decompressed content" if compressed else f"byte {size:,}"


def _document_cut(data: bytes, name: str, ends_at: str) -> CutOff | None:
    """The cut of a JSON document (an object or a list) that ends inside its value, said with where it
    ends and the complete entries before the cut; None where it is whole, or broken before its end."""
    text = _utf8_before_cut(data)
    if text is None or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        _DECODER.decode(text)
        return None
    except json.JSONDecodeError as exc:
        if not _ends_inside_value(text, exc):
            return None
    except (ValueError, RecursionError):
        return None
    body = data.rstrip()  # counted in bytes, which is quicker; the column in characters
    line, column = body.count(b"\n") + 1, len(body[body.rfind(b"\n") + 1:].decode("utf-8", errors="replace"))
    entries = _entries_before_cut(text)
    before = "" if entries is None else (
        f" with {_entries(entries[0], 'complete entry', 'complete entries')} in its "
        f"{'top-level list' if entries[1] is None else json.dumps(entries[1][:100], ensure_ascii=False) + ' list'} "
        f"before the cut")
    return CutOff(f"{name} is cut off: it ends inside line {line:,}, column {column:,} ({ends_at}), an incomplete "
                  f"JSON document{before}", line, JSON_DOCUMENT)


def _entries(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _entries_before_cut(text: str) -> tuple[int, str | None] | None:
    """The complete elements of the list a cut-off document ends inside, read value by value: its
    top-level list (τ-bench v1's results), or a list that is a member of its top-level object (tau2's
    ``simulations``, Inspect's ``samples``), with that member's key; None where the cut is elsewhere."""
    at = _SPACE.match(text).end()
    if text[at] == "[":
        return _complete_elements(text, at), None
    at = _SPACE.match(text, at + 1).end()
    while text[at:at + 1] == '"':
        try:
            key, at = _DECODER.raw_decode(text, at)
            at = _SPACE.match(text, at).end()
            if text[at:at + 1] != ":":
                return None
            at = _SPACE.match(text, at + 1).end()
            _, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):  # the member the cut is inside
            return (_complete_elements(text, at), key) if text[at:at + 1] == "[" else None
        at = _SPACE.match(text, end).end()
        if text[at:at + 1] != ",":
            return None
        at = _SPACE.match(text, at + 1).end()
    return None


def _complete_elements(text: str, at: int) -> int:
    """How many elements of the list opening at ``at`` are whole before the text ends inside it."""
    n, at = 0, _SPACE.match(text, at + 1).end()
    while True:
        try:
            _, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            return n
        n += 1
        at = _SPACE.match(text, end).end()
        if text[at:at + 1] != ",":
            return n
        at = _SPACE.match(text, at + 1).end()


def _first_line(fh: BinaryIO) -> tuple[bytes | None, int]:
    end = 0
    for _, raw, size in _bounded_lines(fh):
        end += size
        if raw is None or raw.strip():
            return raw, end
    return None, end


def _last_line(content: _Content) -> tuple[bytes | None, bool]:
    """The last non-blank line of ``content`` (None when it is over :data:`MAX_LINE_BYTES`), and
    whether no line break follows it — then with the white space it ends with, as a JSON Lines reader
    reads it."""
    size = _TAIL
    while True:
        tail = content.tail(size)
        body = tail.rstrip()
        unended = b"\n" not in tail[len(body):]
        start = body.rfind(b"\n") + 1
        if start or len(tail) == content.size:
            return (tail if unended else body)[start:], unended
        if size > MAX_LINE_BYTES:
            return None, unended
        size = min(size * 8, MAX_LINE_BYTES + 2)  # the line and the line break before it


class _Content:
    """The bytes a file holds, for :func:`cut_off`: its size and first bytes, its last bytes and more
    on demand. A compressed file is read through once to its end (which checks its stream), keeping
    its first megabyte and its last bytes — unless its content opens neither JSON nor a zip (no log
    whose end is told here: not decompressed on) —; what more is asked of it is read anew."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.compressed = compression_of(path) is not None
        self._start, self._tail = b"", b""
        if not self.compressed:
            with path.open("rb") as fh:
                self.size = os.fstat(fh.fileno()).st_size
                self.head = fh.read(_HEAD)
            return
        with open_bytes(path) as fh:
            self._start = self._tail = fh.read(_CHUNK)
            self.size, self.head = len(self._start), self._start[:_HEAD]
            if not self.head.startswith(_ZIP_MAGIC) and self.head.lstrip()[:1] not in _CLOSER:
                return
            while chunk := fh.read(_CHUNK):
                self.size += len(chunk)
                self._tail = (self._tail + chunk)[-_TAIL:]
        self._tail = self._tail[-_TAIL:]

    def tail(self, size: int) -> bytes:
        """The last ``size`` bytes (all, where it holds fewer)."""
        size = min(size, self.size)
        if not self.compressed:
            with self.path.open("rb") as fh:
                fh.seek(self.size - size)
                return fh.read(size)
        if size > len(self._tail):  # read anew once, keeping as much as a last line may need
            keep, kept = max(size, min(self.size, MAX_LINE_BYTES + 2)), b""
            with open_bytes(self.path) as fh:
                while chunk := fh.read(_CHUNK):
                    kept = (kept + chunk)[-keep:]
            self._tail = kept
        return self._tail[len(self._tail) - size:]

    def first_line(self) -> tuple[bytes | None, int]:
        """The first non-blank line (None when it is over :data:`MAX_LINE_BYTES`), and where it ends."""
        if self._start:  # a compressed file's, when its first megabyte holds it (it is not decompressed anew)
            line, end = _first_line(io.BytesIO(self._start))
            if line is not None and (line.endswith(b"\n") or end == self.size):
                return line, end
        with open_bytes(self.path) as fh:
            return _first_line(fh)

    def newlines(self) -> int:
        with open_bytes(self.path) as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(_CHUNK), b""))

    def whole(self) -> bytes | None:
        """All of it; None when it is over :data:`MAX_DOCUMENT_BYTES`."""
        if self.size > MAX_DOCUMENT_BYTES:
            return None
        with open_bytes(self.path) as fh:
            return fh.read()


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
