"""Logs that must be unpacked onto disk to be read: a tar of a run folder, a compressed file whose
reader wants a plain one.

A ToolSandbox output folder or tau2 1.0's directory layout (``results.json`` + ``simulations/``) is
passed around as a tar — plain or compressed with anything :func:`~.compressed.open_bytes` reads —, and
its importer reads folders. :func:`unpack_tar` writes the archive's files into a folder the caller
made (a temporary one), safely:

* only files and folders are unpacked: a link, a device or a FIFO refuses the archive (a link could
  point outside the folder, or at a file the log does not hold);
* every member lands inside the folder (no absolute path, no ``..`` out of it: the standard
  library's ``data`` filter);
* at most :data:`MAX_MEMBERS` members and :data:`MAX_UNPACKED_BYTES` bytes, so a hostile archive
  cannot fill the disk;
* the archive is read as a stream, to its end: a corrupt or truncated one is one
  :class:`~.decode.DecodeError` naming the archive and what is wrong (one cut short, without its
  end-of-archive marker: a :class:`~.compressed.CutOffError` saying where), never a partial folder.

:func:`unpack_file` does the same for one compressed file (an Inspect log, whose own reader opens
files by name).
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import BinaryIO

from .compressed import CutOffError, DecodeError, compression_of, open_bytes
from .decode import plain_name

MAX_MEMBERS = 100_000  # a ToolSandbox run of every scenario has about 3,100
MAX_UNPACKED_BYTES = 8 * 2**30
_COPY_CHUNK = 2**20
_TAR_MAGIC_AT = 257  # POSIX ustar (and GNU, and pax) headers carry "ustar" here
_TAR_MAGIC = b"ustar"


def is_tar(path: str | Path) -> bool:
    """Whether the file at ``path`` is a tar archive once decompressed (its first header's magic);
    False for a folder. A compressed stream that is corrupt at its start raises a DecodeError."""
    path = Path(path)
    if not path.is_file():
        return False
    with open_bytes(path) as fh:
        head = fh.read(_TAR_MAGIC_AT + len(_TAR_MAGIC))
    return head[_TAR_MAGIC_AT:] == _TAR_MAGIC


def unpack_tar(archive: str | Path, into: str | Path) -> Path:
    """Unpack the tar ``archive`` into the empty folder ``into`` (see the module docstring); what it
    holds: its one top-level file or folder, or ``into`` where it holds several."""
    archive, into = Path(archive), Path(os.path.realpath(into))
    members, files, size = 0, 0, 0
    try:
        # the stream mode reads its file only; typeshed's protocol for it asks for a writable, seekable one
        with open_bytes(archive) as fh, \
                tarfile.open(fileobj=(stream := _Tail(fh)), mode="r|") as tar:  # type: ignore[call-overload]
            for member in tar:
                members += 1
                if members > MAX_MEMBERS:
                    raise DecodeError(f"{archive.name}: more than {MAX_MEMBERS:,} members, over the limit of an "
                                      f"archive of a log")
                member = _safe_member(member, archive, into)
                target = into / member.name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                files, size = files + 1, size + member.size
                if size > MAX_UNPACKED_BYTES:
                    raise DecodeError(f"{archive.name} unpacks to over {MAX_UNPACKED_BYTES:,} bytes, the limit of "
                                      f"an archive of a log")
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as out:  # a file member always has its bytes to extract
                    shutil.copyfileobj(tar.extractfile(member), out, _COPY_CHUNK)
            # The standard library ends a tar where its bytes end, even inside a header: a whole one
            # ends with the end-of-archive marker, a zero block, where its members end.
            end = stream.block_at(tar.offset)
            if len(end) != tarfile.BLOCKSIZE or any(end):
                raise _cut_off(archive, stream)
    except tarfile.ReadError as exc:
        if str(exc) in _TAR_ENDS_EARLY:
            raise _cut_off(archive, stream) from None
        raise DecodeError(f"{archive.name} is not a whole tar archive: {exc}") from None
    except tarfile.TarError as exc:
        raise DecodeError(f"{archive.name} is not a whole tar archive: {exc}") from None
    except OSError as exc:  # a member where a folder of an earlier one is, a name the file system refuses, ...
        raise DecodeError(f"{archive.name}: its members cannot be unpacked: {exc}") from None
    if not files:
        raise DecodeError(f"{archive.name} holds no file")
    held = sorted(into.iterdir())
    return held[0] if len(held) == 1 else into


def _safe_member(member: tarfile.TarInfo, archive: Path, into: Path) -> tarfile.TarInfo:
    """``member`` as the standard library's data filter passes it: a file or a folder that lands inside ``into``."""
    if not (member.isfile() or member.isdir()):
        raise DecodeError(f"{archive.name}: member {member.name!r} is {_type_of(member)}; an archive "
                          f"of a log is read only when it holds files and folders")
    try:
        return tarfile.data_filter(member, str(into))
    except tarfile.FilterError as exc:
        raise DecodeError(f"{archive.name}: member {member.name!r} would land outside the folder it "
                          f"is unpacked into ({exc})") from None


# What the standard library says of a tar whose bytes end inside a member's bytes, inside a header, or
# after a header that needs another (a pax header before its member's).
_TAR_ENDS_EARLY = frozenset({"unexpected end of data", "truncated header", "empty header"})


def _cut_off(archive: Path, stream: _Tail) -> CutOffError:
    """The error of a tar archive whose bytes end before its end-of-archive marker."""
    content = " of its decompressed content" if compression_of(archive) is not None else ""
    return CutOffError(f"{archive.name} is not a whole tar archive: it is cut off at byte {stream.read_bytes:,}"
                       f"{content}, without its end-of-archive marker")


class _Tail:
    """A stream read through, keeping its last bytes: enough to hold the block a tar's reading
    ended on (the standard library reads a stream a record at a time)."""

    KEEP = 4 * tarfile.RECORDSIZE

    def __init__(self, stream: BinaryIO) -> None:
        self._stream, self._read, self._tail = stream, 0, b""

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._read += len(data)
        self._tail = (self._tail + data)[-self.KEEP:]
        return data

    @property
    def read_bytes(self) -> int:
        return self._read

    def block_at(self, offset: int) -> bytes:
        """The block of the stream at ``offset`` as far as it was read (empty when not kept)."""
        start = self._read - len(self._tail)
        return self._tail[offset - start:offset - start + tarfile.BLOCKSIZE] if offset >= start else b""


def unpack_file(path: str | Path, into: str | Path) -> Path:
    """The content of the compressed file ``path`` written whole (checked to its stream's end) to
    ``into/<its plain name>`` (:func:`~.decode.plain_name`), at most :data:`MAX_UNPACKED_BYTES`."""
    path = Path(path)
    target = Path(into) / plain_name(path.name)
    written = 0
    with open_bytes(path) as fh, open(target, "wb") as out:
        while chunk := fh.read(_COPY_CHUNK):
            written += len(chunk)
            if written > MAX_UNPACKED_BYTES:
                raise DecodeError(f"{path.name} decompresses to over {MAX_UNPACKED_BYTES:,} bytes, the limit of a "
                                  f"log unpacked to read it")
            out.write(chunk)
    return target


def _type_of(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"a hard link (to {member.linkname!r})"
    if member.isdev():
        return "a device or a FIFO"
    return "neither a file nor a folder"
