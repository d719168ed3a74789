"""Whether a log file's content ends inside its JSON or its zip archive (:func:`cut_off`: a copy, a download or
a writer cut short), said in one line: the file, where it ends, what precedes the cut. Cheap for a whole file:
its first bytes, its first line and its last line are read."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

from . import decode  # its limits read where they are set, so lowering one (tests do) holds here too
from .compressed import READ_CHUNK, compression_of, open_bytes
from .decode import bounded_lines
from .json_text import JSON_DECODER, JSON_LINES, ZIP_ARCHIVE, CutOff, document_cut, ends_inside_json, where_it_ends

_ZIP_MAGIC = b"PK\x03\x04"
# A whole zip ends with its end-of-central-directory record: this signature, 16 bytes, the length of
# the comment that ends the file (2 bytes), the comment (at most 65,535 bytes).
_ZIP_END = b"PK\x05\x06"
_ZIP_END_SIZE = 22
_HEAD = 2**12  # the first bytes of a file looked at (where its JSON opens)
_TAIL = 2**17  # the last bytes looked at first (a real log's last line or closing bracket is in them)
_CLOSER = {b"{": b"}", b"[": b"]"}


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
    line's start); only another is parsed whole (one over :data:`~.decode.MAX_DOCUMENT_BYTES` is not: its reader
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
        line, ends_at = content.newlines() + 1, where_it_ends(content.size, content.compressed)
        return CutOff(f"{name} is cut off: it ends inside line {line:,} ({ends_at}), an incomplete JSON value", line,
                      JSON_LINES)
    last, _ = _last_line(content)
    if last is not None and last.rstrip() == _CLOSER[opener] and _opens_indented(content.head, opener):
        return None
    data = content.whole()
    return document_cut(data, name, where_it_ends(content.size, content.compressed)) if data is not None else None


def _opens_indented(head: bytes, opener: bytes) -> bool:
    """Whether a document opens as an indented one: its bracket alone on its first line, the next
    line indented (then only its top-level bracket closes at the start of a line)."""
    first, _, rest = head.lstrip().partition(b"\n")
    return first.rstrip() == opener and rest[:1] in (b" ", b"\t")


def _is_json(data: bytes) -> bool:
    try:
        JSON_DECODER.decode(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return True


def _first_line(fh: BinaryIO) -> tuple[bytes | None, int]:
    end = 0
    for _, raw, size in bounded_lines(fh):
        end += size
        if raw is None or raw.strip():
            return raw, end
    return None, end


def _last_line(content: _Content) -> tuple[bytes | None, bool]:
    """The last non-blank line of ``content`` (None when it is over :data:`~.decode.MAX_LINE_BYTES`), and
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
        if size > decode.MAX_LINE_BYTES:
            return None, unended
        size = min(size * 8, decode.MAX_LINE_BYTES + 2)  # the line and the line break before it


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
            self._start = self._tail = fh.read(READ_CHUNK)
            self.size, self.head = len(self._start), self._start[:_HEAD]
            if not self.head.startswith(_ZIP_MAGIC) and self.head.lstrip()[:1] not in _CLOSER:
                return
            while chunk := fh.read(READ_CHUNK):
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
            keep, kept = max(size, min(self.size, decode.MAX_LINE_BYTES + 2)), b""
            with open_bytes(self.path) as fh:
                while chunk := fh.read(READ_CHUNK):
                    kept = (kept + chunk)[-keep:]
            self._tail = kept
        return self._tail[len(self._tail) - size:]

    def first_line(self) -> tuple[bytes | None, int]:
        """The first non-blank line (None when it is over :data:`~.decode.MAX_LINE_BYTES`), and where it ends."""
        if self._start:  # a compressed file's, when its first megabyte holds it (it is not decompressed anew)
            line, end = _first_line(io.BytesIO(self._start))
            if line is not None and (line.endswith(b"\n") or end == self.size):
                return line, end
        with open_bytes(self.path) as fh:
            return _first_line(fh)

    def newlines(self) -> int:
        with open_bytes(self.path) as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(READ_CHUNK), b""))

    def whole(self) -> bytes | None:
        """All of it; None when it is over :data:`~.decode.MAX_DOCUMENT_BYTES`."""
        if self.size > decode.MAX_DOCUMENT_BYTES:
            return None
        with open_bytes(self.path) as fh:
            return fh.read()
