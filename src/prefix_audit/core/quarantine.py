"""Quarantined records summed up by cause: one line per cause, with its count and the first entries.

A quarantine file keeps one record per entry (:class:`~.decode.BadLine`); what a person reads — the
command line's output, the logs of a workflow's stages, the audit browser — is one line per cause
(:attr:`BadLine.grouped_by`: the reason without what names the entry), e.g.
``70 × unusable τ simulation: tau2 domain 'airline-relaxed' is not one this release replays (…) (tasks 0, 1, 2, …)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compressed import open_bytes
from .decode import BadLine

SHOWN_ENTRIES = 3  # entries named per cause; the count says how many there are
_ID_CHARS = 60  # an entry's id as shown (a hostile log's ids may be long)


@dataclass
class QuarantineTally:
    """Quarantined records counted by cause, with the first distinct entries of each (in the order
    met) and whether it befell more entries than those."""

    counts: dict[str, int] = field(default_factory=dict)
    entries: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    more: set[str] = field(default_factory=set)  # the causes of more distinct entries than listed

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, bad: BadLine) -> None:
        self._count(bad.grouped_by, 1, [bad.named])

    def count(self, cause: str, entry: tuple[str, str]) -> None:
        """Count one more of ``cause``, befalling ``entry`` (what it is, its id): a tally of other
        things than quarantined records (the files a folder of logs holds that are no log)."""
        self._count(cause, 1, [entry])

    def merge(self, other: QuarantineTally) -> None:
        """Count ``other``'s records in, after this tally's own."""
        for cause, n in other.counts.items():
            self._count(cause, n, other.entries[cause])
        self.more |= other.more

    def _count(self, cause: str, n: int, entries: Iterable[tuple[str, str]]) -> None:
        self.counts[cause] = self.counts.get(cause, 0) + n
        listed = self.entries.setdefault(cause, [])
        for entry in entries:
            if entry in listed:
                continue
            if len(listed) < SHOWN_ENTRIES:
                listed.append(entry)
            else:
                self.more.add(cause)

    def lines(self) -> list[str]:
        """``N × cause (the first entries, …)`` per cause, the most frequent first."""
        order = sorted(self.counts, key=lambda cause: (-self.counts[cause], cause))
        return [f"{self.counts[c]} × {c} ({_entries_text(self.entries[c], c in self.more)})" for c in order]


def _entries_text(entries: list[tuple[str, str]], more: bool) -> str:
    """``tasks 0, 1, 2, …`` (entries of one kind) or ``task 0, line 7`` (of several kinds)."""
    tail = ", …" if more else ""
    ids = [ident if len(ident) <= _ID_CHARS else ident[:_ID_CHARS - 1] + "…" for _, ident in entries]
    kinds = {kind for kind, _ in entries}
    if len(kinds) == 1:
        kind = kinds.pop()
        if len(ids) > 1 or more:
            kind = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
        return f"{kind} {', '.join(ids)}{tail}"
    return ", ".join(f"{kind} {ident}" for (kind, _), ident in zip(entries, ids, strict=True)) + tail


def tally(bad: Iterable[BadLine]) -> QuarantineTally:
    out = QuarantineTally()
    for b in bad:
        out.add(b)
    return out


def read_quarantine(path: str | Path) -> Iterator[BadLine]:
    """The records of a quarantine file as this package writes them (a record an older version wrote
    has no cause: its reason is its cause); a line that does not read is a record saying so."""
    with open_bytes(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                yield _record(str(path), number, raw)


def _record(path: str, number: int, raw: bytes) -> BadLine:
    try:
        obj: Any = json.loads(raw)
        entry = obj.get("entry")
        return BadLine(str(obj["path"]), int(obj["line"]), str(obj["reason"]), obj.get("rollout_id"),
                       str(obj.get("excerpt", "")), obj.get("cause"),
                       (str(entry[0]), str(entry[1])) if isinstance(entry, list) and len(entry) == 2 else None)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return BadLine(path, number, f"not a quarantine record: {type(exc).__name__}: {exc}"[:300],
                       cause="not a quarantine record")
