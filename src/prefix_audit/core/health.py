"""Benchmark health (SPEC §3): the closed list of finding codes, what each says about a task, and the
typed tables ``prefix-audit tasks`` and the workflow's ``task_health`` write.

A *finding* is one claim about one task of one data release, with the evidence that shows it — the
call, message or state difference a person can check by hand. Its code is one of :data:`CODES`, each of
one kind:

* ``defect`` — the task is broken as the benchmark defines and scores it: FED (or Y) on it charges the
  agent with the benchmark's error. A task with a defect is *unsound*.
* ``definition`` — the benchmark accepts the task's gold, our stricter predicates do not
  (``gold_not_prefix_executable``): a property of the audit's definitions, not a defect of the
  benchmark; reported apart, the task stays sound.
* ``caution`` — worth knowing when reading the task's numbers, not a defect by itself (the gold changes
  no checked state; the task changed between releases; every audited agent failed it, or failed it the
  same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa

DEFECT = "defect"
DEFINITION = "definition"
CAUTION = "caution"
KINDS = (DEFECT, DEFINITION, CAUTION)


@dataclass(frozen=True)
class Code:
    name: str
    kind: str
    meaning: str


# In the order findings are listed and counted.
CODES: Mapping[str, Code] = {c.name: c for c in (
    Code("gold_fails", DEFECT, "a gold call errors or is rejected in the benchmark's own environment"),
    Code("answer_unreachable", DEFECT, "executing the gold does not produce what the ground truth expects"),
    Code("passes_doing_nothing", DEFECT, "an agent that makes no call scores 1 in the benchmark's own evaluator"),
    Code("unchecked_required_action", DEFECT, "the gold without one of its writes or hand-offs still scores 1"),
    Code("gold_not_prefix_executable", DEFINITION,
         "the benchmark accepts the gold, the audit's stricter predicates do not (not a defect of the benchmark)"),
    Code("gold_no_effect", CAUTION, "the gold leaves the state the reward checks unchanged"),
    Code("changed_between_releases", CAUTION, "the task differs between the pinned data releases"),
    Code("unsolved_by_all", CAUTION, "no audited block solved the task"),
    Code("same_first_failure", CAUTION, "most failing rollouts of several blocks first fail on the same call and "
                                        "predicate"),
)}
CODE_ORDER = {name: rank for rank, name in enumerate(CODES)}
MAX_EVIDENCE_CHARS = 2_000


@dataclass(frozen=True)
class Finding:
    """One claim about one task: its code (of :data:`CODES`) and the evidence that shows it."""

    code: str
    evidence: str

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown health code {self.code!r} (known: {', '.join(CODES)})")
        if len(self.evidence) > MAX_EVIDENCE_CHARS:
            object.__setattr__(self, "evidence", self.evidence[:MAX_EVIDENCE_CHARS - 1] + "…")

    @property
    def kind(self) -> str:
        return CODES[self.code].kind


def is_sound(codes: Iterable[str]) -> bool:
    """A task is sound unless a finding of it is a defect."""
    return all(CODES[c].kind != DEFECT for c in codes)


def ordered_codes(codes: Iterable[str]) -> list[str]:
    """Distinct codes in :data:`CODES` order."""
    return sorted(set(codes), key=CODE_ORDER.__getitem__)


FINDINGS_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("release", pa.string(), nullable=False),  # the data release the task was audited on
    pa.field("task_id", pa.string(), nullable=False),  # the id the benchmark uses
    pa.field("code", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),  # defect | definition | caution (of the code)
    pa.field("evidence", pa.string(), nullable=False),
])

TASKS_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("release", pa.string(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("sound", pa.bool_()),  # no defect found; null when the check could not run (``error``)
    pa.field("codes", pa.list_(pa.string()), nullable=False),  # every code found, in CODES order
    pa.field("findings", pa.int32(), nullable=False),
    pa.field("error", pa.string()),  # why the task's check could not run; null when it ran
])
