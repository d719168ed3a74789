"""Benchmark health (docs/definitions.md#health): the closed list of finding codes, what each finding says
about a task — its *intent* and its *effect* — and the typed tables ``prefix-audit tasks`` and the workflow's
``task_health`` write.

A *finding* is one claim about one task of one data release, with the evidence that shows it — the
call, message or state difference a person can check by hand. Its code is one of :data:`CODES`; its
*kind* (the intent: what the task's makers meant, as far as running the benchmark shows it) one of
:data:`KINDS`, decided per finding by execution, within the kinds its code allows:

* ``defect`` — the task is broken as the benchmark defines and scores it: an agent's fair score on it
  is wrong (or its FED charges the agent with the benchmark's error). A task with a defect is *unsound*.
* ``design`` — the task works as its makers meant, though it looks like a defect: a gold call that fails
  because the scenario scripts wrong information (and the gold recovers), a refusal task the reward
  cannot tell from an idle agent. The task stays sound; whose error an agent's same failure is, is said
  by attribution (docs/attribution.md).
* ``definition`` — the benchmark accepts the task's gold, our stricter predicates do not, on a rule the
  benchmark does not enforce: a property of the audit's definitions; the task stays sound.
* ``caution`` — worth knowing when reading the task's numbers, not a defect by itself.
* ``note`` — listed for completeness, with no bearing on what an agent sees or scores (a release change
  nothing reads).

Its *effect* (:data:`EFFECTS`) says what it changes: the score an agent's calls get (``scored``), only
where FED falls or whom it charges (``fed``), only what the model or the user simulator sees (``seen``),
nothing that the agent, the user simulator or the reward reads (``unseen``, release changes), or nothing
at all (``none``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa

KINDS: Mapping[str, str] = {
    "defect": "the task is broken as the benchmark scores it: it makes the task unsound",
    "design": "the task works as designed, though it looks like a defect: the task stays sound",
    "definition": "the audit's stricter predicates reject what the benchmark accepts and does not enforce",
    "caution": "worth knowing when reading the task's numbers",
    "note": "listed for completeness: nothing an agent sees or is scored on",
}
DEFECT, DESIGN, DEFINITION, CAUTION, NOTE = KINDS

EFFECTS: Mapping[str, str] = {
    "scored": "the score (Y) the same calls get",
    "fed": "where FED falls, or whom it charges; not the score",
    "seen": "what the model or the user simulator sees; not how the same calls are scored",
    "unseen": "nothing the agent, the user simulator or the reward reads",
    "none": "nothing: an observation",
}
SCORED, FED, SEEN, UNSEEN, NONE = EFFECTS


@dataclass(frozen=True)
class Code:
    """A finding code: what was observed, the intent and effect a finding of it has unless its check
    decides otherwise, and the other intents and effects its check may decide."""

    name: str
    kind: str
    effect: str
    meaning: str
    kinds: tuple[str, ...] = ()  # every kind a finding of the code may have (the default first)
    effects: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(dict.fromkeys((self.kind, *self.kinds))))
        object.__setattr__(self, "effects", tuple(dict.fromkeys((self.effect, *self.effects))))


# In the order findings are listed and counted.
CODES: Mapping[str, Code] = {c.name: c for c in (
    Code("gold_fails", DEFECT, SCORED, "a gold call errors or is rejected in the benchmark's own environment",
         kinds=(DESIGN,), effects=(FED,)),
    Code("answer_unreachable", DEFECT, SCORED, "executing the gold does not produce what the ground truth expects"),
    Code("passes_doing_nothing", DEFECT, SCORED,
         "an agent that makes no call scores 1 in the benchmark's own evaluator", kinds=(DESIGN,)),
    Code("unchecked_required_action", DEFECT, SCORED, "the gold without one of its writes or hand-offs still scores 1"),
    Code("gold_not_prefix_executable", DEFINITION, FED,
         "the benchmark accepts the gold, the audit's stricter predicates do not", kinds=(DEFECT,), effects=(SCORED,)),
    Code("gold_no_effect", CAUTION, NONE, "the gold leaves the state the reward checks unchanged"),
    Code("changed_between_releases", CAUTION, SCORED, "the task differs between the pinned data releases",
         kinds=(NOTE,), effects=(SEEN, UNSEEN)),
    Code("unsolved_by_all", CAUTION, NONE, "no audited block solved the task"),
    Code("same_first_failure", CAUTION, FED, "most failing rollouts of several blocks first fail on the same call "
                                             "and predicate"),
)}
CODE_ORDER = {name: rank for rank, name in enumerate(CODES)}
MAX_EVIDENCE_CHARS = 4_000
DIFF_CONTEXT_WORDS = 4  # unchanged words shown on each side of a change


@dataclass(frozen=True)
class Finding:
    """One claim about one task: its code (of :data:`CODES`) and the evidence that shows it."""

    code: str
    evidence: str
    kind: str = ""  # the intent (of KINDS; default: the code's)
    effect: str = ""  # of EFFECTS (default: the code's)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown health code {self.code!r} (known: {', '.join(CODES)})")
        code = CODES[self.code]
        object.__setattr__(self, "kind", self.kind or code.kind)
        object.__setattr__(self, "effect", self.effect or code.effect)
        if self.kind not in code.kinds:
            raise ValueError(f"a {self.code} finding is one of {', '.join(code.kinds)}, not {self.kind!r}")
        if self.effect not in code.effects:
            raise ValueError(f"a {self.code} finding's effect is one of {', '.join(code.effects)}, not {self.effect!r}")
        if len(self.evidence) > MAX_EVIDENCE_CHARS:
            object.__setattr__(self, "evidence", self.evidence[:MAX_EVIDENCE_CHARS - 1] + "…")


def is_sound(findings: Iterable[Finding]) -> bool:
    """A task is sound unless a finding of it is a defect."""
    return all(f.kind != DEFECT for f in findings)


def defect_codes(findings: Iterable[Finding]) -> list[str]:
    """The distinct codes of the defect findings, in :data:`CODES` order."""
    return ordered_codes(f.code for f in findings if f.kind == DEFECT)


def ordered_codes(codes: Iterable[str]) -> list[str]:
    """Distinct codes in :data:`CODES` order."""
    return sorted(set(codes), key=CODE_ORDER.__getitem__)


FINDINGS_SCHEMA = pa.schema((
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("release", pa.string(), nullable=False),  # the data release the task was audited on
    pa.field("task_id", pa.string(), nullable=False),  # the id the benchmark uses
    pa.field("code", pa.string(), nullable=False),
    # the intent, of KINDS: defect | design | definition | caution | note
    pa.field("kind", pa.string(), nullable=False),
    pa.field("effect", pa.string(), nullable=False),  # of EFFECTS: scored | fed | seen | unseen | none
    pa.field("evidence", pa.string(), nullable=False),
))

TASKS_SCHEMA = pa.schema((
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("release", pa.string(), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("sound", pa.bool_()),  # no defect found; null when the check could not run (``error``)
    pa.field("codes", pa.list_(pa.string()), nullable=False),  # every code found, in CODES order
    pa.field("defects", pa.list_(pa.string()), nullable=False),  # the codes of its defect findings (unsound: any)
    pa.field("findings", pa.int32(), nullable=False),
    pa.field("error", pa.string()),  # why the task's check could not run; null when it ran
))

# Beside the per-dataset health folders of an audit (``health/unaudited.json``): the scored tasks whose health
# was not audited, each group with why — a JSON list of ``{"dataset", "release" (null: none), "reason",
# "task_ids"}`` — so that a page saying "not audited" can say why.
UNAUDITED_FILE = "unaudited.json"


def changed_text(before: str, after: str, context: int = DIFF_CONTEXT_WORDS) -> str:
    """What changed from ``before`` to ``after``, every change in full within a few unchanged words on each
    side — ``…open the [first → latest] file…`` — never an ellipsis across a change; ``"(the same text)"``
    when nothing did. Words are compared, white space kept as written."""
    return " ".join(changed_hunks(before, after, context)) or "(the same text)"


def changed_hunks(before: str, after: str, context: int = DIFF_CONTEXT_WORDS) -> list[str]:
    """The hunks of :func:`changed_text`, one per group of nearby changes (none when nothing changed): a
    caller that cannot show them all can say how many it leaves out."""
    if before == after:
        return []
    old, new = re.findall(r"\S+|\s+", before), re.findall(r"\S+|\s+", after)
    hunks = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(2 * context):
        parts = ["…"] if group[0][1] > 0 else []
        for tag, i1, i2, j1, j2 in group:
            changed = f"[{''.join(old[i1:i2])!r} → {''.join(new[j1:j2])!r}]"
            parts.append("".join(old[i1:i2]) if tag == "equal" else changed)
        if group[-1][2] < len(old):
            parts.append("…")
        hunks.append("".join(parts))
    return hunks
