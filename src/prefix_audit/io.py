"""Atomic, byte-deterministic file output; names as path components."""

from __future__ import annotations

import os
from collections.abc import Callable
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


def write_parquet(table: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write an Arrow table so that equal tables give equal bytes (no timestamps, pinned options)."""
    table = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", compression_level=3, use_dictionary=True,
                   write_statistics=True, data_page_version="2.0", version="2.6")
    return atomic_write_bytes(path, sink.getvalue().to_pybytes())


def read_parquet(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A Parquet table; a ValueError naming the file when it is missing or not a Parquet file."""
    try:
        return pl.read_parquet(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ValueError(f"{path}: not a readable Parquet file ({reason})") from None
