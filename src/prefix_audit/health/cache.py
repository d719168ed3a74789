"""Task health kept per release: the findings of every task a command computed, kept on disk so that later
``prefix-audit audit`` and ``tasks`` runs — and the workflow's ``task_health`` — read them instead of
running the benchmark again. A release's health never changes unless what it reads does, so the entry of a
release is keyed by (:class:`ReleaseKey`) the dataset, the release, the benchmark's digest of what that
release's health reads (:meth:`~prefix_audit.replay.contract.Benchmark.health_digest`: its data and code; a
benchmark without one keeps nothing) and :func:`code_digest` (prefix-audit's version and the bytes of its
source, so a changed check never reads an earlier check's findings).

The entries live under ``<resources>/health/`` (:func:`cache_folder`): beside the pinned packages, in the
folder ``--resources`` or ``$PREFIX_AUDIT_RESOURCES`` names, else the user cache — one rule for both. One
JSON file per key, ``<dataset>/<release>/<hash of the key>.json``, holds every task computed so far (an
audit adds the tasks its logs ran, a later ``tasks`` the rest), each as its findings with every field of
:class:`~prefix_audit.core.health.Finding`. A task whose check raised is not kept. Several processes may fill
one release at once: a lock on the release's folder makes each merge its tasks into what is there, and the
file is replaced whole (:func:`~prefix_audit.core.io.atomic_write_text`). An entry that cannot be read is
said in one warning line and computed again; one that cannot be written, likewise (the command goes on).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import prefix_audit
from prefix_audit.core.health import Finding
from prefix_audit.core.io import atomic_write_text, files_sha256, path_label
from prefix_audit.core.output_tree import locked_folder
from prefix_audit.replay.contract import Benchmark

log = logging.getLogger(__name__)

FOLDER = "health"  # under the resources folder
# What reading an entry raises when it is not one this code wrote: a file system error, bad JSON or UTF-8, or
# JSON of another shape (a missing key, a list for an object, a field Finding does not have or refuses).
UNREADABLE = (OSError, ValueError, TypeError, KeyError, AttributeError)


def cache_folder(resources: str | Path) -> Path:
    """Where task health is kept: ``health/`` in the folder of the pinned packages."""
    return Path(resources) / FOLDER


@lru_cache(maxsize=1)
def code_digest() -> str:
    """prefix-audit's version and the sha256 of every file of its package (bytecode aside): any change to
    the code that computes findings — or to anything else of it — keys new entries."""
    root = Path(prefix_audit.__file__).parent
    files = [(p.relative_to(root).as_posix(), p) for p in root.rglob("*")
             if p.is_file() and "__pycache__" not in p.relative_to(root).parts]
    return f"{prefix_audit.__version__}:{files_sha256(files)}"


@dataclass(frozen=True)
class ReleaseKey:
    """What one release's kept health depends on."""

    dataset: str
    release: str
    data: str  # the benchmark's health_digest of the release
    code: str  # code_digest()

    def fields(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    def path(self, root: Path) -> Path:
        name = hashlib.sha256(json.dumps(self.fields(), sort_keys=True).encode("utf-8")).hexdigest()[:32]
        return root / path_label(self.dataset) / path_label(self.release) / f"{name}.json"


class HealthCache:
    """The task health kept under ``root`` (:func:`cache_folder`; None: nothing is kept)."""

    def __init__(self, root: str | Path | None) -> None:
        self.root = None if root is None else Path(root)

    def key(self, bench: Benchmark, release: str) -> ReleaseKey | None:
        """The key of ``release``'s health in ``bench``; None when nothing is kept: no folder, or a benchmark
        that names no digest for it."""
        data = bench.health_digest(release) if self.root is not None else None
        return None if data is None else ReleaseKey(bench.dataset, release, data, code_digest())

    def read(self, key: ReleaseKey) -> dict[str, tuple[Finding, ...]]:
        """The kept findings of each task computed so far (none: nothing kept, or an entry that cannot be
        read, said in one warning line)."""
        path = self.path(key)
        try:
            return self._tasks(path, key)
        except FileNotFoundError:
            return {}
        except UNREADABLE as exc:
            log.warning("the kept health of %s %s cannot be read, computed again: %s (%s: %s)", key.dataset,
                        key.release, path, type(exc).__name__, " ".join(str(exc).split()))
            return {}

    def keep(self, key: ReleaseKey, found: Mapping[str, Sequence[Finding]]) -> None:
        """Add the findings of each task of ``found`` (only tasks whose check ran) to ``key``'s entry, merged
        with what other processes kept meanwhile; a failure to write is said in one warning line."""
        if not found:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with locked_folder(path.parent):
                try:
                    kept = self._tasks(path, key)  # what other processes kept since it was read
                except UNREADABLE:
                    kept = {}  # none yet, or unreadable (said when it was read): replaced
                tasks = {**kept, **{task_id: tuple(findings) for task_id, findings in found.items()}}
                # Every field of each finding, those a later Finding adds included.
                entry = {**key.fields(), "tasks": {task_id: [dataclasses.asdict(f) for f in findings]
                                                   for task_id, findings in sorted(tasks.items())}}
                atomic_write_text(path, json.dumps(entry, sort_keys=True) + "\n")
        except OSError as exc:
            log.warning("the health of %s %s could not be kept in %s: %s", key.dataset, key.release, path,
                        " ".join(str(exc).split()))

    def path(self, key: ReleaseKey) -> Path:
        """The file of ``key``'s entry."""
        if self.root is None:
            raise ValueError("no folder to keep task health in: this cache gives no keys")
        return key.path(self.root)

    @staticmethod
    def _tasks(path: Path, key: ReleaseKey) -> dict[str, tuple[Finding, ...]]:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if {k: entry[k] for k in key.fields()} != key.fields():
            raise ValueError("the entry is of another key")
        return {task_id: tuple(Finding(**fields) for fields in findings)
                for task_id, findings in entry["tasks"].items()}
