"""FED beside human step labels: where each label lands in its audited rollout, and how the
labellers' first failure relates to the first non-executable action.

:func:`compare_labels` joins labelled entries (:mod:`prefix_audit.core.labels`) to the rollouts they
name and their episodes, and returns two tables:

* one row per label (:data:`LABEL_SCHEMA`): the entry it matched, where it landed — on an action
  (``landed = "action"``, with the depths it covers: a message with several calls is several actions),
  or on a message between actions, by who wrote it (``agent_text``: the agent's own words, ``user``: the
  user or user simulator, ``tool``: a tool's reply, ``system``, ``other``) with the actions before it —
  or ``unmatched`` with the reason (no audited entry, several, a message or action the log does not
  have);
* one row per labelled entry (:data:`ENTRY_SCHEMA`): its labels and failures, T and FED, whether FED
  fired (FED ≤ T), whether FED's action carries a human failure label, the human first failure (the
  earliest failure label in the log's order, on whatever message it sits) and FED's place beside it —
  ``at`` it, ``before`` it or ``after`` it — with the offset FED − first failure in messages (in actions
  where the log has no messages; a label between actions sits half an action before the next one).

:func:`label_summary` turns the entries into the comparison per block, with Wilson intervals on its
shares (``docs/validation.md``, "FED and human first-error labels").
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from prefix_audit.core.io import atomic_write_text, read_parquet, write_parquet
from prefix_audit.core.labels import LabelledEntry, LabelsFile, StepLabel, read_labels
from prefix_audit.core.records import Action, Located, Rollout, actions_of, read_rollouts

from .intervals import wilson_interval

log = logging.getLogger(__name__)

BLOCK_KEYS = ("dataset", "model", "method")
UNMATCHED = "unmatched"
RELATIONS = ("at", "before", "after")  # FED at, before or after the human first failure
_ROLE_LANDING = {"agent": "agent_text", "user": "user", "tool": "tool", "system": "system", "other": "other"}
LANDINGS = ("action", "agent_text", "user", "tool", "system", "other", UNMATCHED)
_LANDED_TEXT = {"action": "on an action", "agent_text": "on the agent's text", "user": "on the user's messages",
                "tool": "on tool replies", "system": "on the system prompt", UNMATCHED: "unmatched"}

_ENTRY_FIELDS: list[pa.Field[Any]] = [
    pa.field("dataset", pa.string()), pa.field("model", pa.string()), pa.field("method", pa.string()),
    pa.field("task_id", pa.string()), pa.field("trial", pa.int32()), pa.field("rollout_id", pa.string()),
    pa.field("source", pa.string(), nullable=False),  # labels file:line
    pa.field("entry", pa.string(), nullable=False),  # the key the labels gave
    pa.field("shape", pa.string(), nullable=False),  # prefix-audit | agentrx | agentprocessbench
]
LABEL_SCHEMA = pa.schema(_ENTRY_FIELDS + [
    pa.field("place", pa.string(), nullable=False),  # the step as the labeller named it
    pa.field("message", pa.int32()),  # the log message it landed on (null: none, or a log without messages)
    pa.field("verdict", pa.string(), nullable=False),
    pa.field("category", pa.string()), pa.field("blamed", pa.string()), pa.field("note", pa.string()),
    pa.field("landed", pa.string(), nullable=False),  # one of LANDINGS
    pa.field("actions", pa.list_(pa.int32()), nullable=False),  # the depths j it landed on
    pa.field("after_action", pa.int32()),  # on a message between actions: how many actions come before it
    pa.field("reason", pa.string()),  # why it is unmatched
])
ENTRY_SCHEMA = pa.schema(_ENTRY_FIELDS + [
    pa.field("unmatched", pa.string()),  # why no audited entry took the labels (then the rest is null)
    pa.field("labels", pa.int32(), nullable=False),
    pa.field("failures", pa.int32(), nullable=False),  # failure labels that landed
    pa.field("T", pa.int32()), pa.field("FED", pa.int32()),
    pa.field("fired", pa.bool_()),  # FED <= T (null: an infrastructure failure, no action)
    pa.field("fed_category", pa.string()),
    pa.field("fed_message", pa.int32()),
    pa.field("fed_on_failure", pa.bool_()),  # FED's action carries a failure label (null: FED did not fire)
    pa.field("first_failure", pa.string()),  # the human first failure's place, as labelled
    pa.field("first_failure_landed", pa.string()),
    pa.field("first_failure_category", pa.string()),
    pa.field("first_failure_blamed", pa.string()),
    pa.field("relation", pa.string()),  # FED at / before / after the first failure (null: FED or failure missing)
    pa.field("offset", pa.float64()),  # FED - first failure, in offset_unit
    pa.field("offset_unit", pa.string()),  # messages | actions
])


@dataclass(frozen=True)
class Landing:
    """Where one label sits in its rollout."""

    landed: str
    actions: tuple[int, ...] = ()
    after_action: int | None = None
    message: int | None = None
    reason: str | None = None

    def order(self) -> tuple[float, int]:
        """Its place in the log: an action by its depth, a message between actions just before the next one."""
        if self.actions:
            return float(min(self.actions)), self.message if self.message is not None else 0
        return (self.after_action or 0) + 0.5, self.message if self.message is not None else 0


def land(label: StepLabel, rollout: Rollout, actions: Sequence[Action]) -> Landing:
    """Where ``label`` lands among ``rollout``'s actions and messages."""
    if label.action is not None:
        if label.action > len(actions):
            return Landing(UNMATCHED, reason=f"action {label.action} is beyond the rollout's {len(actions)} actions")
        return Landing("action", (label.action,), message=actions[label.action - 1].message)
    if label.message is not None:
        m, roles = label.message, rollout.message_roles
        if not roles:
            return Landing(UNMATCHED, reason="the log records no message positions: name the step by 'action' or "
                                             "by 'turn' and 'step'")
        if m >= len(roles):
            return Landing(UNMATCHED, reason=f"message {m} is beyond the log's {len(roles)} messages")
        on = tuple(a.index for a in actions if a.message == m)
        if on:
            return Landing("action", on, message=m)
        before = sum(a.message is not None and a.message < m for a in actions)
        return Landing(_ROLE_LANDING[roles[m]], after_action=before, message=m)
    t, s = label.turn or 0, label.step or 0
    on = tuple(a.index for a in actions if (a.turn, a.step) == (t, s))
    if on:
        return Landing("action", on, message=actions[on[0] - 1].message)
    if t < len(rollout.turns) and s < len(rollout.turns[t]):
        step = rollout.turns[t][s]
        return Landing("agent_text", after_action=sum((a.turn, a.step) < (t, s) for a in actions),
                       message=step.message)
    return Landing(UNMATCHED, reason=f"turn {t} step {s} is not in the rollout")


def _key_matches(entry: LabelledEntry, rollout: Rollout) -> bool:
    key = entry.key
    record = rollout.meta.get("record_id")
    return all(want is None or want == have for want, have in (
        (key.rollout_id, rollout.rollout_id), (key.dataset, rollout.dataset), (key.model, rollout.model),
        (key.task_id, rollout.task_id), (key.trial, rollout.trial), (key.record_id, record)))


def _index_keys(entry: LabelledEntry) -> tuple[str, str]:
    """The one field an entry is looked up by (the rest is checked by :func:`_key_matches`)."""
    key = entry.key
    if key.rollout_id is not None:
        return "rollout_id", key.rollout_id
    if key.record_id is not None:
        return "record_id", key.record_id
    return "task_id", key.task_id or ""


def _rollout_keys(rollout: Rollout) -> list[tuple[str, str]]:
    keys = [("rollout_id", rollout.rollout_id), ("task_id", rollout.task_id)]
    record = rollout.meta.get("record_id")
    return keys + ([("record_id", record)] if isinstance(record, str) else [])


def _entry_cells(entry: LabelledEntry, rollout: Rollout | None) -> dict[str, Any]:
    cells = {"source": entry.source, "entry": entry.key.text(), "shape": entry.shape}
    if rollout is None:
        return cells | dict.fromkeys((*BLOCK_KEYS, "task_id", "trial", "rollout_id"))
    return cells | {"dataset": rollout.dataset, "model": rollout.model, "method": rollout.method,
                    "task_id": rollout.task_id, "trial": rollout.trial, "rollout_id": rollout.rollout_id}


def _label_row(entry_cells: Mapping[str, Any], label: StepLabel, landing: Landing) -> dict[str, Any]:
    return {**entry_cells, "place": label.place(), "message": landing.message, "verdict": label.verdict,
            "category": label.category, "blamed": label.blamed, "note": label.note, "landed": landing.landed,
            "actions": list(landing.actions), "after_action": landing.after_action, "reason": landing.reason}


def _comparison(rollout: Rollout, episode: Mapping[str, Any] | None, actions: Sequence[Action],
                placed: Sequence[tuple[StepLabel, Landing]]) -> dict[str, Any]:
    """The entry's row beyond its key: FED beside its human failure labels."""
    failures = [(label, landing) for label, landing in placed if label.verdict == "failure"
                and landing.landed != UNMATCHED]
    T: int | None = episode.get("T") if episode else None
    fed: int | None = episode.get("FED") if episode else None
    fired = None if T is None or fed is None else fed <= T
    row: dict[str, Any] = {"labels": len(placed), "failures": len(failures), "T": T, "FED": fed, "fired": fired,
                           "fed_category": episode.get("category") if episode and fired else None}
    fed_action = actions[fed - 1] if fed is not None and fired and fed <= len(actions) else None
    row |= {"fed_message": fed_action.message if fed_action else None,
            "fed_on_failure": any(fed in landing.actions for _, landing in failures) if fired else None}
    if not failures:
        return row
    label, first = min(failures, key=lambda f: f[1].order())
    row |= {"first_failure": label.place(), "first_failure_landed": first.landed,
            "first_failure_category": label.category, "first_failure_blamed": label.blamed}
    if fed is None or fed_action is None:  # no action failed (fed_action is None whenever fed is)
        return row
    fed_order = Landing("action", (fed,), message=fed_action.message).order()
    row["relation"] = "at" if fed in first.actions else ("before" if fed_order < first.order() else "after")
    if fed_action.message is not None and first.message is not None:
        row |= {"offset": float(fed_action.message - first.message), "offset_unit": "messages"}
    else:
        row |= {"offset": fed - first.order()[0], "offset_unit": "actions"}
    return row


def compare_labels(entries: Sequence[LabelledEntry], rollouts: Iterable[Rollout],
                   episodes: pl.DataFrame) -> tuple[pa.Table, pa.Table]:
    """(labels, entries) tables: every label and every labelled entry, matched or not (module docstring).

    ``rollouts`` are streamed; only those some entry names are kept. An entry that names no rollout,
    or several, is unmatched with the reason, and so are all its labels."""
    wanted: dict[tuple[str, str], list[int]] = {}
    for i, entry in enumerate(entries):
        wanted.setdefault(_index_keys(entry), []).append(i)
    matches: dict[int, list[Rollout]] = {}
    for rollout in rollouts:
        for k in _rollout_keys(rollout):
            for i in wanted.get(k, ()):
                if _key_matches(entries[i], rollout):
                    matches.setdefault(i, []).append(rollout)
    by_rollout = {r["rollout_id"]: r for r in episodes.select(
        "rollout_id", "dataset", "model", "method", "T", "FED", "category").iter_rows(named=True)}
    label_rows, entry_rows = [], []
    for i, entry in enumerate(entries):
        found = matches.get(i, [])
        if len(found) != 1:
            why = (f"no audited entry has {entry.key.text()}" if not found else
                   f"{len(found)} audited entries have {entry.key.text()}: give its rollout_id, or its trial and model")
            cells = _entry_cells(entry, None)
            label_rows += [_label_row(cells, label, Landing(UNMATCHED, reason=why)) for label in entry.labels]
            entry_rows.append(cells | {"unmatched": why, "labels": len(entry.labels), "failures": 0})
            continue
        rollout = found[0]
        actions = actions_of(rollout) if rollout.infra_error is None else []
        cells = _entry_cells(entry, rollout)
        placed = [(label, land(label, rollout, actions)) for label in entry.labels]
        label_rows += [_label_row(cells, label, landing) for label, landing in placed]
        entry_rows.append(cells | _comparison(rollout, by_rollout.get(rollout.rollout_id), actions, placed))
    return (pa.Table.from_pylist(label_rows, schema=LABEL_SCHEMA),
            pa.Table.from_pylist(entry_rows, schema=ENTRY_SCHEMA))


# --- the comparison per block ----------------------------------------------------------------------------------

def _share(s: int, n: int, confidence: float) -> dict[str, Any]:
    interval = wilson_interval(s, n, confidence)
    return {"s": s, "n": n, "estimate": s / n if n else None,
            "lo": interval[0] if interval else None, "hi": interval[1] if interval else None}


def _quantiles(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return dict.fromkeys(("min", "q1", "median", "q3", "max"))
    series = pl.Series(values, dtype=pl.Float64)
    return {"min": series.min(), "q1": series.quantile(0.25, "linear"), "median": series.median(),
            "q3": series.quantile(0.75, "linear"), "max": series.max()}


def label_summary(labels: pl.DataFrame, entries: pl.DataFrame, confidence: float = 0.95) -> list[dict[str, Any]]:
    """Per block (of the matched entries): the comparison's counts and shares with Wilson intervals,
    the offsets' quantiles, the failure labels by where they landed, and human × FED categories."""
    out = []
    matched = entries.filter(pl.col("rollout_id").is_not_null())
    for key, block in sorted(matched.group_by(list(BLOCK_KEYS)), key=lambda kv: tuple(map(str, kv[0]))):
        rows = block.to_dicts()
        failed = [r for r in rows if r["failures"]]
        fired = [r for r in rows if r["fired"]]
        compared = [r for r in fired if r["relation"] is not None]
        relations = Counter(r["relation"] for r in compared)
        block_labels = labels.filter(pl.all_horizontal(pl.col(k) == v for k, v in zip(BLOCK_KEYS, key, strict=True)))
        landed = Counter(block_labels.filter(pl.col("verdict") == "failure")["landed"].to_list())
        units = sorted({r["offset_unit"] for r in compared})
        out.append({
            **dict(zip(BLOCK_KEYS, key, strict=True)), "labelled": len(rows), "with_failure": len(failed),
            "executable": _share(sum(r["fired"] is False for r in failed), len(failed), confidence),
            "fired": _share(len(fired), len(rows), confidence),
            "fired_with_failure": sum(bool(r["failures"]) for r in fired),
            "fed_on_failure": _share(sum(bool(r["fed_on_failure"]) for r in fired), len(fired), confidence),
            **{rel: _share(relations[rel], len(compared), confidence) for rel in RELATIONS},
            "offsets": _quantiles([r["offset"] for r in compared]), "offset_unit": "/".join(units) or None,
            "offset_counts": sorted(Counter(r["offset"] for r in compared).items()),
            "failure_labels": dict(sorted(landed.items(), key=lambda kv: LANDINGS.index(kv[0]))),
            "categories": sorted(Counter((r["first_failure_category"] or "(none)",
                                          r["fed_category"] or ("fully executable" if r["fired"] is False
                                                                else "no action"))
                                         for r in failed).items()),
        })
    return out


def unmatched_summary(labels: pl.DataFrame, entries: pl.DataFrame) -> list[str]:
    """Lines naming what did not land: entries no audited entry took, labels no step took (by reason)."""
    lines = []
    missed = entries.filter(pl.col("unmatched").is_not_null())
    if missed.height:
        lines.append(f"{missed.height} labelled entr{'y' if missed.height == 1 else 'ies'} matched no single audited "
                     f"entry: " + "; ".join(f"{r['source']} ({r['unmatched']})" for r in missed.head(5).to_dicts())
                     + (" …" if missed.height > 5 else ""))
    lost = labels.filter((pl.col("landed") == UNMATCHED) & pl.col("rollout_id").is_not_null())
    if lost.height:
        reasons = Counter(r for r in lost["reason"].to_list())
        lines.append(f"{lost.height} label(s) of matched entries landed on no step: "
                     + "; ".join(f"{n} × {why}" for why, n in reasons.most_common(5)))
    return lines


# --- files in, files out --------------------------------------------------------------------------------------

LABEL_FILES = ("labels.parquet", "entries.parquet", "quarantine.jsonl")


@dataclass
class LabelReport:
    """What a comparison read and where its labels went."""

    files: int = 0
    entries: int = 0
    matched: int = 0
    labels: int = 0
    landed: Counter = field(default_factory=Counter)
    problems: int = 0
    unmatched: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        where = ", ".join(f"{n} {_LANDED_TEXT.get(k, 'on ' + k)}" for k, n in
                          sorted(self.landed.items(), key=lambda kv: LANDINGS.index(kv[0])))
        return [f"labels: {self.entries} labelled entries from {self.files} file(s), {self.matched} matched to an "
                f"audited entry; {self.labels} labels ({where or 'none'}); {self.problems} unreadable "
                f"(labels/quarantine.jsonl)", *(f"  {line}" for line in self.unmatched)]


def _rollouts(paths: Sequence[str | os.PathLike[str]]) -> Iterator[Rollout]:
    for path in paths:
        for item in read_rollouts(os.fspath(path)):
            if isinstance(item, Located):
                yield item.rollout


@dataclass(frozen=True)
class LabelGroup:
    """Labels files and the rollout files their labels are matched against (a workflow block's own;
    an audit's every block)."""

    labels: Sequence[str | os.PathLike[str] | LabelsFile]
    rollouts: Sequence[str | os.PathLike[str]]


def write_label_comparison(groups: Sequence[LabelGroup], episodes_path: str | os.PathLike[str],
                           out_dir: str | os.PathLike[str]) -> LabelReport:
    """Join each group's labels (paths, or files :func:`~prefix_audit.core.labels.read_labels` has read)
    to its rollouts and the FED table, and write :data:`LABEL_FILES` into ``out_dir``: every label, every
    labelled entry, and what could not be read."""
    out = Path(out_dir)
    episodes = read_parquet(episodes_path)
    labels, tables, problems, files = [], [], [], 0
    for group in groups:
        entries: list[LabelledEntry] = []
        for file in group.labels:
            read = file if isinstance(file, LabelsFile) else read_labels(file)
            entries += read.entries
            problems += read.problems
            files += 1
        placed, table = compare_labels(entries, _rollouts(group.rollouts), episodes)
        labels.append(placed)
        tables.append(table)
    label_table = pa.concat_tables(labels) if labels else LABEL_SCHEMA.empty_table()
    entry_table = pa.concat_tables(tables) if tables else ENTRY_SCHEMA.empty_table()
    write_parquet(label_table, out / LABEL_FILES[0])
    write_parquet(entry_table, out / LABEL_FILES[1])
    atomic_write_text(out / LABEL_FILES[2], "".join(
        json.dumps({"source": p.source, "reason": p.reason, "excerpt": p.excerpt}, ensure_ascii=False) + "\n"
        for p in problems))
    frame_labels, frame_entries = pl.DataFrame(label_table), pl.DataFrame(entry_table)
    report = LabelReport(files, frame_entries.height, frame_entries["rollout_id"].count(),
                         frame_labels.height, Counter(frame_labels["landed"].to_list()), len(problems),
                         unmatched_summary(frame_labels, frame_entries))
    for line in report.lines():
        log.info("%s", line)
    return report
