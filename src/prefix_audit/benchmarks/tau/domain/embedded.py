"""Task definitions carried inside rollout records (``meta["embedded_task"]``).

A results file may hold the definition of the task each of its runs was scored against: tau2's
``results.json`` has its ``tasks`` list, a τ-bench v1 entry its ``info.task``. When the importer
takes that definition (always for v1; for tau2 with ``--tasks-from-results``) it stores it in each
rollout's meta with its provenance::

    "embedded_task": {"format": "tau2" | "tau-bench-v1", "origin": "results file",
                      "source": "<the results file as given>", "sha256": "<of the definition>",
                      "definition": {...the task object as the file has it...}}

``sha256`` is that of the definition's canonical JSON (sorted keys, no spaces, UTF-8). A session
opened on such a rollout scores it against the embedded task — gold actions, checks, reward basis —
not against the task files in use, so ``score`` needs no option; the sha256 is checked on reading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_audit.plugin import UnscorableRollout

from .data import TauDataError, TauTask, parse_task
from .v1 import RESULTS_FORMAT as V1_FORMAT
from .v1 import parse_v1_task

KEY = "embedded_task"
TAU2_FORMAT = "tau2"
FORMATS = (TAU2_FORMAT, V1_FORMAT)
ORIGIN = "results file"


def definition_sha256(definition: Any) -> str:
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class EmbeddedTask:
    """A task definition a rollout carries, and where it came from."""

    format: str
    source: str
    sha256: str
    definition: Mapping[str, Any]
    origin: str = ORIGIN

    @classmethod
    def of(cls, definition: Mapping[str, Any], format: str, source: str) -> EmbeddedTask:
        return cls(format, source, definition_sha256(definition), definition)

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "origin": self.origin, "source": self.source, "sha256": self.sha256,
                "definition": self.definition}

    def task(self, task_id: str, domain: str) -> TauTask:
        """The definition as a :class:`TauTask` (raises :class:`TauDataError`)."""
        where = f"task {task_id} embedded from {self.source}"
        if self.format == TAU2_FORMAT:
            task = parse_task(self.definition, domain, where)
            if task.id != task_id:
                raise TauDataError(f"{where}: the definition is task {task.id}")
        else:
            task = parse_v1_task(self.definition, task_id, domain, where)
        return dataclasses.replace(task, embedded_sha256=self.sha256)


def read(meta: Mapping[str, Any]) -> EmbeddedTask | None:
    """The embedded task of a rollout's meta (None without one); raises :class:`UnscorableRollout`
    for a malformed entry or a definition whose sha256 is not the recorded one."""
    entry = meta.get(KEY)
    if entry is None:
        return None
    if not isinstance(entry, dict) or entry.get("format") not in FORMATS \
            or not isinstance(entry.get("definition"), dict) or not isinstance(entry.get("sha256"), str) \
            or not isinstance(entry.get("source"), str):
        raise UnscorableRollout(f"meta.{KEY} must be an object with format ({' or '.join(FORMATS)}), source, "
                                f"sha256 and a definition object")
    embedded = EmbeddedTask(entry["format"], entry["source"], entry["sha256"], entry["definition"],
                            str(entry.get("origin", ORIGIN)))
    actual = definition_sha256(embedded.definition)
    if actual != embedded.sha256:
        raise UnscorableRollout(f"meta.{KEY}: the definition's sha256 is {actual[:12]}, the record says "
                                f"{embedded.sha256[:12]} (the definition was changed after import)")
    return embedded


def embedded_task(meta: Mapping[str, Any], task_id: str, domain: str) -> TauTask | None:
    """The task a rollout carries, parsed (None without one; :class:`UnscorableRollout` if unusable)."""
    embedded = read(meta)
    if embedded is None:
        return None
    try:
        return embedded.task(task_id, domain)
    except TauDataError as exc:
        raise UnscorableRollout(str(exc)) from None
