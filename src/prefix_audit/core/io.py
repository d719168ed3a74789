"""Atomic, byte-deterministic file output; names as path components."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, unquote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

# The escape of path labels: "%" (percent-encoding's own) would reach sbatch's --output through the
# Slurm executor plugin's log paths, where Slurm reads it as a filename pattern and the job fails.
# quote() never emits "+" (it encodes it as %2B), so swapping the two keeps the encoding reversible.
_LABEL_ESCAPE = "+"


def path_label(name: str) -> str:
    """A model or block name as one path component and wildcard value: unchanged for letters,
    digits and ``._-``; anything else percent-encoded with ``+`` for ``%``, so
    ``meta-llama/Llama-3.1-8B`` never makes a nested folder (``meta-llama+2FLlama-3.1-8B``)."""
    return quote(name, safe="._-").replace("%", _LABEL_ESCAPE)


_NUMBERS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers inside names by value: ``multi_turn_base_9`` before
    ``multi_turn_base_10``, task ``2`` before ``10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _NUMBERS.split(text) if part)


def name_of_label(label: str) -> str:
    """The name a :func:`path_label` stands for."""
    return unquote(label.replace(_LABEL_ESCAPE, "%"))


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def files_sha256(files: Iterable[tuple[str, str | os.PathLike[str]]]) -> str:
    """One sha256 of several files: each ``(name, path)`` in the order of their names, the name and the
    file's bytes, so that a file renamed, added or removed changes it as a change of content does."""
    digest = hashlib.sha256()
    for name, path in sorted(files, key=lambda pair: pair[0]):
        digest.update(name.encode("utf-8") + b"\0" + file_sha256(path).encode("ascii"))
    return digest.hexdigest()


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Have ``write`` fill a temporary file beside ``path``, then rename it into place.

    The temporary name carries the pid (not ``mkstemp``, whose 0600 mode would leak into the
    outputs); the data is fsynced before the rename so a crash leaves the old file or the new one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def parquet_bytes(table: pa.Table) -> bytes:
    """An Arrow table as Parquet bytes, equal for equal tables (no timestamps, pinned options)."""
    table = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", compression_level=3, use_dictionary=True,
                   write_statistics=True, data_page_version="2.0", version="2.6")
    return sink.getvalue().to_pybytes()


def write_parquet(table: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write an Arrow table so that equal tables give equal bytes."""
    return atomic_write_bytes(path, parquet_bytes(table))


# A commit's journal and staged files carry its process id: jobs that commit into one folder at once (two
# chunks of a block, the tables and the task-health table) each finish and clean only their own, and those
# of processes that died.
JOURNAL = ".prefix-audit-commit"  # .<pid>.json
# The listing of a tree of outputs replaced whole (:mod:`prefix_audit.core.output_tree`): its files and sha256.
MANIFEST = ".prefix-audit-files.json"
_STAGED = ".staged"


def frame_parquet_bytes(frame: pl.DataFrame) -> bytes:
    """A polars frame as Parquet bytes (the statistics tables' encoding: zstd, no column statistics)."""
    sink = io.BytesIO()
    frame.write_parquet(sink, compression="zstd", statistics=False)
    return sink.getvalue()


def _staged(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{_STAGED}")


def journals(directory: str | os.PathLike[str]) -> list[Path]:
    """The commit journals in ``directory`` (of commits under way, or cut short by a crash)."""
    return sorted(Path(directory).glob(f"{JOURNAL}.*.json"))


def _left_by_us_or_the_dead(path: Path) -> bool:
    """Whether ``path`` (named ``….<pid>.<suffix>``) was left by this process or by one that ended —
    not by another writer still at work beside us."""
    pid = path.name.rsplit(".", 2)[-2]
    return not pid.isdigit() or int(pid) == os.getpid() or not _running(int(pid))


PathT = TypeVar("PathT", bound=str | os.PathLike[str])  # a mapping's keys: one kind of path, whichever


def commit_files(contents: Mapping[PathT, bytes | Path], *,
                 root: str | os.PathLike[str] | None = None,
                 remove: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """Replace a set of files together, and delete ``remove``, as one step.

    ``contents`` maps each output to its bytes, or to a file already written on the same file
    system that becomes it. Bytes are staged beside their output and fsynced; then a journal under
    ``root`` (by default the outputs' common directory) naming every rename and deletion is written
    — the commit point — then they are carried out and the journal removed. A crash before the
    journal leaves the old set (staged leftovers are removed by the next commit there); after it,
    :func:`recover` — which every commit and :func:`read_parquet` run first — finishes the job, so
    no reader sees a new file beside an old one. Processes may commit other files into one folder at
    once (each journal and staged file names its process); one process commits one set at a time."""
    paths = [Path(p) for p in contents]
    if not paths and not remove:
        return []
    base = Path(root) if root is not None else Path(os.path.commonpath([p.parent for p in paths]))
    base.mkdir(parents=True, exist_ok=True)
    recover(base)
    for parent in sorted({p.parent for p in paths} - {base}):  # once per folder: a site has thousands of files
        parent.mkdir(parents=True, exist_ok=True)
        _clean(parent)
    moves: list[list[str]] = []
    for path, data in zip(paths, contents.values(), strict=True):
        if isinstance(data, Path):
            source = data
        else:
            source = _staged(path)
            with open(source, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        moves.append([os.path.relpath(source, base), os.path.relpath(path, base)])
    gone = [os.path.relpath(p, base) for p in map(Path, remove) if Path(p) not in set(paths)]
    atomic_write_text(base / f"{JOURNAL}.{os.getpid()}.json", json.dumps({"replace": moves, "remove": gone}))
    recover(base)
    return paths


def recover(directory: str | os.PathLike[str]) -> None:
    """Finish a commit that a crash interrupted after its commit point, or drop one from before it."""
    directory = Path(directory)
    for journal in journals(directory):
        if not _left_by_us_or_the_dead(journal):  # another writer's, still at work: it finishes its own
            continue
        steps = json.loads(journal.read_text())
        for staged, final in steps["replace"]:
            if (directory / staged).exists():
                os.replace(directory / staged, directory / final)
        for gone in steps["remove"]:
            (directory / gone).unlink(missing_ok=True)
        journal.unlink()
    if directory.is_dir():
        _clean(directory)


def recover_around(path: str | os.PathLike[str]) -> None:
    """:func:`recover` the directory of ``path``, and finish any commit journaled in a directory
    above it (a command whose outputs span folders journals at their common root)."""
    parent = Path(path).absolute().parent
    for above in parent.parents:
        if journals(above):
            recover(above)
    recover(parent)


def _clean(directory: Path) -> None:
    """Remove what crashed writers left in ``directory``: staged files of commits that never
    reached their commit point, and atomic writes of processes no longer running."""
    for leftover in directory.glob(f".*{_STAGED}"):
        if _left_by_us_or_the_dead(leftover):
            leftover.unlink(missing_ok=True)
    for leftover in directory.glob(".*.*.tmp"):
        if dead_writer(leftover):
            leftover.unlink(missing_ok=True)


def dead_writer(path: Path) -> bool:
    """Whether ``path`` (named ``….<pid>.tmp``/``….<pid>.staging``) belongs to a process that ended."""
    pid = path.name.rsplit(".", 2)[-2]
    return pid.isdigit() and not _running(int(pid))


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def read_parquet(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A Parquet table (after :func:`recover` of its directory); a ValueError naming the file
    when it is missing or not a Parquet file."""
    recover_around(path)
    try:
        return pl.read_parquet(Path(path))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ValueError(f"{path}: not a readable Parquet file ({reason})") from None
