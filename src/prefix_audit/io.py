"""Atomic, byte-deterministic file output; names as path components."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote, unquote

import polars as pl

# The escape of path labels: "%" (percent-encoding's own) would reach sbatch's --output through the
# Slurm executor plugin's log paths, where Slurm reads it as a filename pattern and the job fails.
# quote() never emits "+" (it encodes it as %2B), so swapping the two keeps the encoding reversible.
_LABEL_ESCAPE = "+"


def path_label(name: str) -> str:
    """A model or block name as one path component and wildcard value: unchanged for letters,
    digits and ``._-``; anything else percent-encoded with ``+`` for ``%``, so
    ``meta-llama/Llama-3.1-8B`` never makes a nested folder (``meta-llama+2FLlama-3.1-8B``)."""
    return quote(name, safe="._-").replace("%", _LABEL_ESCAPE)


def name_of_label(label: str) -> str:
    """The name a :func:`path_label` stands for."""
    return unquote(label.replace(_LABEL_ESCAPE, "%"))

import pyarrow as pa
import pyarrow.parquet as pq


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
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


JOURNAL = ".prefix-audit-commit.json"
_STAGED = ".staged"


def _staged(path: Path) -> Path:
    return path.with_name(f".{path.name}{_STAGED}")


def commit_files(contents: Mapping[str | os.PathLike[str], bytes]) -> list[Path]:
    """Replace several files of one directory together: every file is staged and fsynced, then a
    journal naming them is written (the commit point), then each is renamed into place and the
    journal removed. A crash before the journal leaves the old set (its staged files are removed
    next time); after it, :func:`recover` — which every commit and :func:`read_parquet` call
    first — finishes the renames, so no reader sees a new file beside an old one."""
    paths = [Path(p) for p in contents]
    parents = {p.parent for p in paths}
    if len(parents) != 1:
        raise ValueError(f"commit_files: one directory at a time, got {sorted(map(str, parents))}")
    (directory,) = parents
    directory.mkdir(parents=True, exist_ok=True)
    recover(directory)
    for path, data in zip(paths, contents.values()):
        staged = _staged(path)
        with open(staged, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    journal = [[_staged(p).name, p.name] for p in paths]
    atomic_write_text(directory / JOURNAL, json.dumps(journal))
    recover(directory)
    return paths


def recover(directory: str | os.PathLike[str]) -> None:
    """Finish a commit that a crash interrupted after its commit point, or drop one from before it."""
    directory = Path(directory)
    journal = directory / JOURNAL
    if journal.is_file():
        for staged, final in json.loads(journal.read_text()):
            if (directory / staged).exists():
                os.replace(directory / staged, directory / final)
        journal.unlink()
    if directory.is_dir():
        for leftover in directory.glob(f".*{_STAGED}"):
            leftover.unlink(missing_ok=True)
        for leftover in directory.glob(".*.*.tmp"):  # atomic_write's, of a process that died
            pid = leftover.name.rsplit(".", 2)[-2]
            if pid.isdigit() and not _running(int(pid)):
                leftover.unlink(missing_ok=True)


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
    recover(Path(path).parent)
    try:
        return pl.read_parquet(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ValueError(f"{path}: not a readable Parquet file ({reason})") from None
