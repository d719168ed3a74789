"""The bytes a log file holds, whatever it is compressed with (:func:`open_bytes`): gzip, bzip2, xz or zstd,
told by the file's first bytes (never by its name: logs are passed around renamed), streamed; a corrupt stream
is a :class:`DecodeError` naming the file and what is wrong, one cut short a :class:`CutOffError`, never the part
before it taken for the whole. The errors of decoding are defined here, the lowest layer that raises them
(:mod:`.decode` reads every log through this module)."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import zlib
from pathlib import Path
from typing import Any, BinaryIO


class DecodeError(ValueError):
    """Input that cannot be decoded or a field that does not hold what it must; says where."""


class CutOffError(DecodeError):
    """A file whose content ends before its end — inside a JSON document, before a compressed stream's
    end marker or an archive's end —; its message is the one line said of it (the file, where it ends)."""


# A file's compression as its first bytes tell it (never its name: logs are passed around renamed).
MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}
READ_CHUNK = 2**20  # bytes read at a time where a whole stream is read
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


def open_bytes(path: str | Path) -> BinaryIO:
    """The bytes a file holds, as a stream: as stored, or decompressed where its first bytes say it
    is compressed (:data:`MAGIC`). Reading a stream that is corrupt or ends early raises a
    :class:`DecodeError` naming the file and what is wrong."""
    path = Path(path)
    fh = path.open("rb")
    try:
        kind = _magic(fh.peek(6)[:6])
        return fh if kind is None else io.BufferedReader(_Decompressed(fh, kind, path.name), READ_CHUNK)
    except BaseException:
        fh.close()
        raise


def content_sha256(path: str | Path) -> str:
    """The sha256 of the bytes a file holds — a compressed file's content, not its compressed
    bytes, so a log and its compressed copy have one digest (the plain file's ``sha256sum``)."""
    digest = hashlib.sha256()
    with open_bytes(path) as fh:
        while chunk := fh.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


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
            self._stream = lzma.LZMAFile(file)  # noqa: SIM115 -- the stream lives as long as this file: close() closes it
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
