"""Folders as input: the logs a folder holds, each read as if named on the command line.

A folder a benchmark's runner wrote (BFCL's ``result/`` and ``score/`` trees, a folder of tau2 or
τ-bench v1 results files, an Inspect log directory, a ToolSandbox output folder of run folders) is
walked: its entries in natural order (``run_2`` before ``run_10``), every subfolder that is itself one
log (a ToolSandbox run folder, tau2 1.0's directory layout: :func:`registry.folder_format`) taken
whole, every other file detected as today. What is not a log is skipped and counted by cause — the
companions a log in the walk reads beside it (a BFCL result file's score file), documentation, plots,
a viewer's index, files of no known format, hidden entries, links out of the folder — never silently
and never as an error; a folder that holds no log at all is one error naming it.

Symbolic links are followed only to what lies inside the folder that was given (a link out of it is
skipped, said), each file or folder read once however many links reach it — or however often it is
named, by hand or inside several named folders. With ``kind`` (``--format``)
every file that is not documentation, a plot or a viewer's index is read as that format, as naming it
with ``--format`` does. A file named on the command line is a log as it is (a tar, a file of no known
format: the import says what it is, in its quarantine). :func:`expand_logs` is the one expansion of
``prefix-audit audit``, ``prefix-audit import`` and the workflow's ``imports:`` blocks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_audit.core.archives import is_tar
from prefix_audit.core.cut_off import cut_off
from prefix_audit.core.decode import DecodeError, plain_name
from prefix_audit.core.io import natural_key
from prefix_audit.core.quarantine import QuarantineTally

from . import registry

# Files no runner writes as a log, told by name before any is opened.
DOCUMENT_SUFFIXES = frozenset({".md", ".rst", ".txt", ".html", ".htm"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".webp"})
DOCUMENT_NAMES = frozenset({"readme", "license", "licence", "changelog", "notice", "authors"})
# A log viewer's listing of the logs beside it (Inspect's `inspect view bundle` writes logs.json; a
# figure folder's index.json): no importer's log.
VIEWER_INDEXES = frozenset({"index.json", "logs.json"})

DOCUMENTATION = "documentation (README, .md, .txt, ...)"
IMAGE = "plot or image (.png, .pdf, .svg, ...)"
VIEWER_INDEX = "a log viewer's index (index.json, logs.json)"
HIDDEN = "hidden file or folder (its name starts with '.')"
OUTSIDE = "symbolic link to a place outside the folder (not followed)"
SEEN = "the same file or folder as another reached before (by a symbolic link)"
NAMED_AGAIN = "the same log as one named before it (read once)"
NOT_A_FILE = "neither a file nor a folder (a socket, a FIFO, a device, a broken link)"


def companion_cause(fmt: str) -> str:
    return f"read beside a {fmt} log in the folder as its companion"


def unknown_cause() -> str:
    return f"not a log of any known format ({', '.join(sorted(registry.importers()))})"


@dataclass(frozen=True)
class LogSource:
    """One log to read: a file or a folder that is itself one log, and its format (None: told when it
    is read — a tar, once unpacked; a file named by hand that no detector or several recognise, which
    the import then quarantines with the reason)."""

    path: Path
    format: str | None
    companions: tuple[Path, ...] = ()  # the files its importer reads besides it (a workflow block's inputs too)


@dataclass(frozen=True)
class SkippedFile:
    """A file or folder of a walked folder that is not a log, and why."""

    path: Path
    cause: str

    def to_json(self) -> dict[str, str]:
        return {"path": str(self.path), "cause": self.cause}


@dataclass
class LogExpansion:
    """What some paths named as logs hold: the logs in order, and what was skipped in their folders."""

    logs: list[LogSource] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    def tally(self) -> QuarantineTally:
        """The skipped files by cause, with the first few named."""
        out = QuarantineTally()
        for skipped in self.skipped:
            out.count(skipped.cause, ("file", skipped.path.name))
        return out


def expand_logs(paths: Sequence[str | Path], kind: str | None = None,
                options: Mapping[str, Any] | None = None) -> LogExpansion:
    """The logs ``paths`` name: a file as it is, a folder that is itself one log whole, any other
    folder walked (see the module docstring). ``kind`` forces the format (None: detected);
    ``options`` are the importer options (the config keys the command line's options set: BFCL's
    ``score_file``), for the companions. Raises ValueError, naming it, for a folder without any log; a
    path that does not exist is a log the import then quarantines (the other logs go on)."""
    out = LogExpansion()
    taken: set[str] = set()

    def take(logs: Sequence[LogSource]) -> None:
        # A log named twice (by hand, or inside two named folders, or both) is read once.
        for source in logs:
            real = os.path.realpath(source.path)
            if real in taken:
                out.skipped.append(SkippedFile(source.path, NAMED_AGAIN))
            else:
                taken.add(real)
                out.logs.append(source)

    for path in map(Path, paths):
        if not path.exists():
            take([LogSource(path, kind)])
            continue
        if not path.is_dir():
            take([_source(path, kind if kind is not None else _named_file_format(path), options)])
            continue
        fmt = registry.folder_format(path, kind)
        if fmt is not None:
            take([_source(path, fmt, options)])
            continue
        walked = _walk(path, kind, options or {})
        if not walked.logs:
            summary = "; ".join(walked.tally().lines()) or "it is empty"
            raise ValueError(f"{path}: no log in this folder ({summary}); name the logs, or their format "
                             f"(formats: {', '.join(sorted(registry.importers()))})")
        take(walked.logs)
        out.skipped += walked.skipped
    return out


def _named_file_format(path: Path) -> str | None:
    """A file named by hand: its format when exactly one detector recognises it (a tar's is told
    once it is unpacked)."""
    found = _file_formats(path)
    return found[0] if found is not None and len(found) == 1 else None


def _file_formats(path: Path) -> list[str] | None:
    """The formats whose detectors recognise the file; None for a tar, a stream that does not read
    or a file none recognises that ends inside its JSON, which the import reads (or refuses) as a
    whole and says so — a file cut off is no file of no known format."""
    try:
        if is_tar(path):
            return None
        found = registry.file_formats(path)
        return None if not found and cut_off(path) is not None else found
    except (DecodeError, OSError):
        return None


def _source(path: Path, fmt: str | None, options: Mapping[str, Any] | None) -> LogSource:
    companions = registry.companion_files(fmt, path, options or {}) if fmt is not None else []
    return LogSource(path, fmt, tuple(companions))


def _walk(root: Path, kind: str | None, options: Mapping[str, Any]) -> LogExpansion:
    out = LogExpansion()
    inside = Path(os.path.realpath(root))
    seen: set[str] = {str(inside)}
    found: list[LogSource] = []
    for path, cause, fmt in _entries(root, inside, seen, kind):
        if cause is not None:
            out.skipped.append(SkippedFile(path, cause))
        else:
            found.append(_source(path, fmt, options))
    # A companion of a log in the walk is read with that log, not as a log of its own.
    companion_of = {os.path.realpath(c): source.format for source in found for c in source.companions
                    if source.format is not None}
    for source in found:
        fmt = companion_of.get(os.path.realpath(source.path))
        if fmt is not None and not source.path.is_dir():
            out.skipped.append(SkippedFile(source.path, companion_cause(fmt)))
        else:
            out.logs.append(source)
    return out


def _entries(folder: Path, inside: Path, seen: set[str],
             kind: str | None) -> Iterator[tuple[Path, str | None, str | None]]:
    """(path, why it is skipped or None, its format) for everything under ``folder``, depth first
    in natural order; a folder that is itself one log is one entry."""
    with os.scandir(folder) as listing:
        names = sorted((entry.name for entry in listing), key=lambda name: (natural_key(name), name))
    for name in names:
        path = folder / name
        if name.startswith("."):
            yield path, HIDDEN, None
            continue
        real = os.path.realpath(path)
        if path.is_symlink() and os.path.commonpath([real, str(inside)]) != str(inside):
            yield path, OUTSIDE, None
            continue
        if real in seen:
            yield path, SEEN, None
            continue
        seen.add(real)
        if path.is_dir():
            fmt = registry.folder_format(path, kind)
            if fmt is not None:
                yield path, None, fmt
            else:
                yield from _entries(path, inside, seen, kind)
        elif path.is_file():
            yield path, *_file_entry(path, kind)
        else:
            yield path, NOT_A_FILE, None


def _file_entry(path: Path, kind: str | None) -> tuple[str | None, str | None]:
    """(why the walked file is skipped or None, its format) — a format of None for a log read whole
    and told then (a tar, a stream that does not read)."""
    name = plain_name(path.name).lower()
    suffix = Path(name).suffix
    if suffix in IMAGE_SUFFIXES:
        return IMAGE, None
    if suffix in DOCUMENT_SUFFIXES or Path(name).stem in DOCUMENT_NAMES:
        return DOCUMENTATION, None
    if kind is not None:
        return (VIEWER_INDEX, None) if name in VIEWER_INDEXES else (None, kind)
    found = _file_formats(path)
    if found is None or len(found) > 1:  # several: the import says which, and asks for the format
        return None, None
    if found:
        return None, found[0]
    return (VIEWER_INDEX if name in VIEWER_INDEXES else registry.not_audited(path) or unknown_cause()), None
