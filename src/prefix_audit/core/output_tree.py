"""An output folder replaced whole: the new tree is built beside the old one and swapped in as one step.

A command that writes a tree of files (``audit -o DIR``, ``view -o SITE``, ``tasks``, ``score``,
``stats``, ``tables``) builds it in a hidden staging folder next to ``DIR`` (``.DIR.<pid>.staging``)
and, only once it is whole, exchanges the two folders with one ``renameat2(RENAME_EXCHANGE)``: there
is no moment at which ``DIR`` holds part of either. A run that fails, is interrupted or is killed
before that step leaves ``DIR`` byte for byte as it was — not even created when it did not exist
(nor the parent folders it would have needed); after it, ``DIR`` is the new tree. The old tree,
then at the staging name, is removed; what a killed writer leaves there is removed by the next
command that replaces a tree in the same folder.

``DIR/.prefix-audit-files.json`` lists the command's files with their sha256. Anything else in
``DIR`` (a user's notes, another tool's outputs) is carried into the new tree by hard links before
the swap — the same files, untouched — except the names the command owns (``owned``: outputs it
writes only sometimes, so that an old one is never read as the new run's). Empty folders are not
carried, nor made: the new tree holds no empty folder.

Where a swap cannot be done — ``DIR`` is a mount point or the folder the command runs in (or holds
it), a file in it cannot be hard-linked, the file system has no exchange — the tree is staged
inside ``DIR`` instead and committed with a journal (:func:`prefix_audit.core.io.commit_files`):
a crash before the journal is written leaves the old tree, after it the next command that writes
or reads there finishes the commit. Two commands replacing the same folder at once each build their
own tree; the swaps take turns (a lock on the parent folder), so the folder ends as one of them,
whole.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from .io import JOURNAL, MANIFEST, commit_files, dead_writer, file_sha256, recover

_STAGING = ".staging"
_IN_PLACE_STAGE = ".tree"  # the staging folder's name inside DIR when the tree is committed in place


@dataclass
class TreeReplacement:
    """Where a command builds its tree (``path``), and, once it is swapped in, what it replaced:
    the previous tree's files as its listing named them (``previous``, name → sha256) and the other
    files of the folder that were carried into the new tree (``kept``)."""

    out: Path
    path: Path
    previous: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    in_place: bool = False


def check_output_folder(out: str | os.PathLike[str]) -> Path:
    """``out`` as an absolute path with symbolic links resolved; a ValueError naming it when
    it is a file or when the folder that would hold it cannot be written — checked before any work."""
    path = Path(os.path.realpath(out))
    if path.exists() and not path.is_dir():
        raise ValueError(f"-o {out}: a file is in the way (the output is a folder)")
    if path == Path(path.anchor):
        raise ValueError(f"-o {out}: the root of the file system cannot be an output folder")
    existing = _nearest_existing(path if path.is_dir() else path.parent)
    if not existing.is_dir():
        raise ValueError(f"-o {out}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"-o {out}: {existing} cannot be written (permission denied)")
    return path


@contextmanager
def replaced_tree(out: str | os.PathLike[str], *, owned: tuple[str, ...] = (),
                  manifest: str = MANIFEST) -> Iterator[TreeReplacement]:
    """Build a tree in ``.path`` and, when the block ends without an error, make it ``out`` in one step
    (see the module docstring). ``owned``: glob patterns of names (relative to ``out``) that belong to
    the command, never carried from an old tree. On an error nothing of ``out`` changes."""
    target = check_output_folder(out)
    in_place = target.is_dir() and not _swappable(target)
    if in_place:
        stage, made = target / f"{_IN_PLACE_STAGE}.{os.getpid()}{_STAGING}", []
    else:
        stage, made = target.parent / f".{target.name}.{os.getpid()}{_STAGING}", _make_folders(target.parent)
    replacement = TreeReplacement(target, stage, in_place=in_place)
    try:
        _remove_dead_stages(target)
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir()
        yield replacement
        _prune_empty(stage)
        with locked_folder(target.parent):
            _swap_in(replacement, owned, manifest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for folder in reversed(made):
            _rmdir_if_empty(folder)
        raise
    shutil.rmtree(stage, ignore_errors=True)  # the old tree, after an exchange


def _swap_in(replacement: TreeReplacement, owned: tuple[str, ...], manifest: str) -> None:
    stage, out = replacement.path, replacement.out
    files = _listing(stage, manifest)
    replacement.previous = _previous_listing(out / manifest)
    (stage / manifest).write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n")
    if not out.exists():
        os.rename(stage, out)
        return
    replacement.kept, dropped = _others(out, replacement.previous, files, owned, manifest)
    if not replacement.in_place:
        if _carry(out, stage, replacement.kept):
            if _exchange(stage, out):
                os.chmod(out, stat.S_IMODE(os.stat(stage).st_mode))  # the folder keeps the mode it had
                return
            _uncarry(stage, replacement.kept)  # no exchange on this file system: commit in place after all
        replacement.in_place = True
    gone = [name for name in replacement.previous if name not in files] + dropped
    _commit_in_place(stage, out, files, gone, manifest)


def _commit_in_place(stage: Path, out: Path, files: dict[str, str], gone: list[str], manifest: str) -> None:
    """The journaled commit of the staged files into ``out``, the files ``gone`` removed in the same step,
    and then the folders that leaves empty."""
    contents: dict[str | os.PathLike[str], bytes | Path] = {out / name: stage / name for name in files}
    contents[out / manifest] = stage / manifest
    commit_files(contents, root=out, remove=[out / name for name in gone])
    for name in gone:
        for folder in (out / name).parents:
            if folder == out or not _rmdir_if_empty(folder):
                break


def _previous_listing(path: Path) -> dict[str, str]:
    """The files the listing at ``path`` names (none when there is none, or it is not one: then every file
    of the folder is someone else's, and kept)."""
    try:
        files = json.loads(path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def _listing(stage: Path, manifest: str) -> dict[str, str]:
    """The staged tree's files by relative path, with their sha256."""
    out = {}
    # os.walk, not Path.rglob: a site's thousands of pages list in a fiftieth of the time
    for root, _, names in os.walk(stage):
        folder = Path(root).relative_to(stage).as_posix()
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out[name if folder == "." else f"{folder}/{name}"] = path
    out.pop(manifest, None)
    return {name: file_sha256(out[name]) for name in sorted(out)}


def _others(out: Path, previous: dict[str, str], files: dict[str, str], owned: tuple[str, ...],
            manifest: str) -> tuple[list[str], list[str]]:
    """The files of ``out`` that neither its previous listing nor the new tree names: those carried over,
    and those the command owns (``owned``), which are not. Leftovers of crashed writers (staged files,
    journals, staging folders) are neither."""
    kept: list[str] = []
    dropped: list[str] = []
    for root, folders, names in os.walk(out):
        folders[:] = sorted(f for f in folders if not f.endswith(_STAGING))
        for name in sorted(names):
            relative = (Path(root) / name).relative_to(out).as_posix()
            if relative == manifest or relative in previous or relative in files or _leftover(name):
                continue
            (dropped if any(fnmatch(relative, pattern) for pattern in owned) else kept).append(relative)
    return kept, dropped


def _leftover(name: str) -> bool:
    return name.startswith(JOURNAL) or (name.startswith(".") and name.endswith((".staged", ".tmp")))


def _carry(out: Path, stage: Path, names: list[str]) -> bool:
    """Hard-link each of ``names`` from ``out`` into the staged tree; False (the links made undone) when
    one cannot be linked (another file system below ``out``, a file system without hard links)."""
    for n, name in enumerate(names):
        target = stage / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(out / name, target, follow_symlinks=False)
        except OSError:
            _uncarry(stage, names[:n])
            return False
    return True


def _uncarry(stage: Path, names: list[str]) -> None:
    for name in names:
        (stage / name).unlink(missing_ok=True)
    _prune_empty(stage)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders ``a`` and ``b`` in one step (Linux's ``renameat2``); False where the system or the
    file system offers no exchange."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _swappable(out: Path) -> bool:
    """Whether the existing folder ``out`` can be exchanged with a sibling: not a mount point, and not the
    folder this process works in or one above it (the working folder would be removed under it)."""
    cwd = Path.cwd().resolve()
    if cwd == out or out in cwd.parents:
        return False
    return os.stat(out).st_dev == os.stat(out.parent).st_dev and not os.path.ismount(out)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _make_folders(folder: Path) -> list[Path]:
    """``folder`` and the folders above it that do not exist yet, made; the ones made, outermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return list(reversed(missing))


def _rmdir_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


def _prune_empty(root: Path) -> None:
    """Remove the empty folders below ``root``, deepest first."""
    for current, _, _ in os.walk(root, topdown=False):
        if current != str(root):
            _rmdir_if_empty(Path(current))


def _remove_dead_stages(out: Path) -> None:
    """The staging folders that killed writers left beside ``out`` (and inside it), and a commit a crash
    cut short in it finished first."""
    for stale in out.parent.glob(f".{out.name}.*{_STAGING}"):
        if dead_writer(stale):
            shutil.rmtree(stale, ignore_errors=True)
    if out.is_dir():
        recover(out)
        for stale in out.glob(f".*{_STAGING}"):
            if stale.is_dir() and dead_writer(stale):
                shutil.rmtree(stale, ignore_errors=True)


@contextmanager
def locked_folder(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (flock on the folder itself: nothing is written for it), so that two
    commands replacing trees in one folder — or keeping task health in one (:mod:`prefix_audit.health.cache`)
    — take turns; where the file system has no locks, none."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        with suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def kept_lines(replacement: TreeReplacement) -> list[str]:
    """One line saying which files of the folder that no run of the command wrote were carried into the new
    tree (none: no line)."""
    if not replacement.kept:
        return []
    first = ", ".join(replacement.kept[:3]) + (", ..." if len(replacement.kept) > 3 else "")
    return [f"kept {len(replacement.kept)} file(s) of {replacement.out} that this command does not write: {first}"]
