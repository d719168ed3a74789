"""Human step labels: people's judgments of where a trajectory went right or wrong, read as they
were published, to set beside the audit's FED (:mod:`prefix_audit.statistics.labels`).

A labels file holds labelled entries: which audited entry (:class:`EntryKey`) and its labelled steps
(:class:`StepLabel`), each naming the step as its labeller saw it — the 0-based position of a message
in the log (``message``), an action depth (``action``, 1-based as FED), or a BFCL-style ``turn`` and
``step`` (0-based) — with a verdict (``failure``, ``neutral`` or ``correct``) and optionally a category,
who the labeller blamed, and a note. An entry with no labelled step is an entry its labellers found
nothing in. Three shapes are read, chosen per file by content and per line where a file has lines:

* ours — JSON Lines, one entry per line: the key fields (``rollout_id``, ``dataset``, ``model``,
  ``task_id``, ``trial``, ``record_id``; at least one of ``rollout_id``, ``task_id``, ``record_id``) and
  ``labels``, a list of ``{message | action | turn+step, verdict, category?, blamed?, note?}``
  (``docs/validation.md``, "FED and human first-error labels");
* AgentRx's ground-truth file — a JSON list of ``{trajectory_id, failures: [{step_number,
  failure_category, failed_agent, step_reason, …}], root_cause}``: ``trajectory_id`` is the τ task id,
  and ``step_number`` the message's ``index`` in its trajectory, which numbers the messages from 1 (so
  the message at position ``step_number - 1``); every failure is a ``failure`` label;
* AgentProcessBench's — JSON Lines of ``{record_id, step_labels: {message index: +1 | 0 | -1}}`` (its
  label files) or of trajectory records carrying ``human_step_labels`` and ``label_record_id``; the
  entry is the record id (an audited entry carries it as ``meta.record_id`` where it was imported from
  such a record), the message index 0-based, +1 ``correct``, 0 ``neutral``, −1 ``failure``.

Nothing read is dropped silently: an entry or a step that cannot be read is a :class:`LabelProblem`
with its place and reason, and the other entries go on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .decode import (
    RECORD_SHAPE_ERRORS,
    BadLine,
    DecodeError,
    excerpt_of,
    iter_json_lines,
    open_bytes,
    read_json_document,
    shape_reason,
)

__all__ = ["VERDICTS", "EntryKey", "LabelProblem", "LabelledEntry", "LabelsFile", "StepLabel", "read_labels"]

VERDICTS = ("failure", "neutral", "correct")
_APB_VERDICTS = {1: "correct", 0: "neutral", -1: "failure"}
KEY_FIELDS = ("rollout_id", "dataset", "model", "task_id", "trial", "record_id")
MAX_TEXT = 500  # characters of a category, blamed party or note kept


class LabelError(DecodeError):
    """A labelled entry or step that cannot be used; says where and why."""


@dataclass(frozen=True)
class EntryKey:
    """Which audited entry labels are about: every field given must equal the entry's (``record_id``
    is the entry's ``meta.record_id``)."""

    rollout_id: str | None = None
    dataset: str | None = None
    model: str | None = None
    task_id: str | None = None
    trial: int | None = None
    record_id: str | None = None

    def text(self) -> str:
        return ", ".join(f"{k} {v}" for k in KEY_FIELDS if (v := getattr(self, k)) is not None)


@dataclass(frozen=True)
class StepLabel:
    """One labelled step: where (exactly one of ``message``, ``action``, ``turn`` + ``step``) and the verdict."""

    verdict: str
    message: int | None = None
    action: int | None = None
    turn: int | None = None
    step: int | None = None
    category: str | None = None
    blamed: str | None = None
    note: str | None = None
    named: str | None = None  # the step in the labeller's own numbering, where it is not ours

    def place(self) -> str:
        if self.named is not None:
            return self.named
        if self.message is not None:
            return f"message {self.message}"
        if self.action is not None:
            return f"action {self.action}"
        return f"turn {self.turn} step {self.step}"


@dataclass(frozen=True)
class LabelledEntry:
    key: EntryKey
    labels: tuple[StepLabel, ...]
    source: str  # file:line (or file:[position]) it was read from
    shape: str  # "prefix-audit", "agentrx" or "agentprocessbench"


@dataclass(frozen=True)
class LabelProblem:
    """A labelled entry or step that could not be read (its place, why, what it held)."""

    source: str
    reason: str
    excerpt: str = ""


@dataclass
class LabelsFile:
    path: str
    entries: list[LabelledEntry]
    problems: list[LabelProblem]


def _whole(value: Any, what: str, least: int = 0) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value < 2**31:
        raise LabelError(f"{what} must be a whole number from {least}, got {excerpt_of(value)}")
    return value


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise LabelError(f"{what} must be a string, got {excerpt_of(value)}")
    return value[:MAX_TEXT]


def _key(obj: Mapping[str, Any]) -> EntryKey:
    fields: dict[str, Any] = {}
    for name in KEY_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if name == "trial":
            fields[name] = _whole(value, "trial")
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            fields[name] = str(value)
        else:
            raise LabelError(f"{name} must be a non-empty string, got {excerpt_of(value)}")
    key = EntryKey(**fields)
    if key.rollout_id is None and key.task_id is None and key.record_id is None:
        raise LabelError("an entry needs a rollout_id, a task_id or a record_id to be matched to an audited entry")
    return key


def _our_label(obj: Any, where: str) -> StepLabel:
    if not isinstance(obj, dict):
        raise LabelError(f"{where} must be an object")
    verdict = obj.get("verdict")
    if verdict not in VERDICTS:
        raise LabelError(f"{where}.verdict must be one of {', '.join(VERDICTS)}, got {excerpt_of(verdict)}")
    places = [k for k in ("message", "action", "turn") if obj.get(k) is not None]
    if places not in (["message"], ["action"], ["turn"]) or (places == ["turn"]) != (obj.get("step") is not None):
        raise LabelError(f"{where} must name its step one way: 'message', 'action', or 'turn' with 'step'")
    message = _whole(obj["message"], f"{where}.message") if places == ["message"] else None
    action = _whole(obj["action"], f"{where}.action", 1) if places == ["action"] else None
    turn, step = (_whole(obj["turn"], f"{where}.turn"), _whole(obj["step"], f"{where}.step")) \
        if places == ["turn"] else (None, None)
    return StepLabel(verdict, message, action, turn, step, category=_text(obj.get("category"), f"{where}.category"),
                     blamed=_text(obj.get("blamed"), f"{where}.blamed"), note=_text(obj.get("note"), f"{where}.note"))


def _apb_labels(step_labels: Any, where: str) -> tuple[list[StepLabel], list[tuple[str, str]]]:
    if not isinstance(step_labels, dict):
        raise LabelError(f"{where} must be an object of message index → +1, 0 or -1")
    labels, bad = [], []
    for index, value in step_labels.items():
        at = f"{where}[{index!r}]"
        try:
            verdict = _APB_VERDICTS.get(value) if isinstance(value, int) and not isinstance(value, bool) else None
            if verdict is None:
                raise LabelError(f"{at} must be +1, 0 or -1, got {excerpt_of(value)}")
            labels.append(StepLabel(verdict, message=_whole(index, f"{at}: the message index")))
        except LabelError as exc:
            bad.append((at, str(exc)))
    return sorted(labels, key=lambda label: label.message or 0), bad


def _line_entry(obj: Any, source: str) -> tuple[LabelledEntry, list[tuple[str, str]]]:
    """One line of a JSON Lines labels file, in whichever shape it is (with its unreadable steps)."""
    if not isinstance(obj, dict):
        raise LabelError("a labelled entry must be a JSON object")
    if "labels" in obj:
        items = obj["labels"]
        if not isinstance(items, list):
            raise LabelError("'labels' must be a list of labelled steps")
        labels, bad = [], []
        for i, item in enumerate(items):
            try:
                labels.append(_our_label(item, f"labels[{i}]"))
            except LabelError as exc:
                bad.append((f"labels[{i}]", str(exc)))
        return LabelledEntry(_key(obj), tuple(labels), source, "prefix-audit"), bad
    for labels_field, id_field in (("step_labels", "record_id"), ("human_step_labels", "label_record_id")):
        if labels_field in obj:
            record = obj.get(id_field)
            if not isinstance(record, str) or not record:
                raise LabelError(f"an AgentProcessBench record with {labels_field!r} needs its {id_field!r}")
            labels, bad = _apb_labels(obj[labels_field], labels_field)
            return LabelledEntry(EntryKey(record_id=record), tuple(labels), source, "agentprocessbench"), bad
    raise LabelError("neither a labelled entry of ours ('labels') nor an AgentProcessBench record "
                     "('step_labels' or 'human_step_labels')")


def _agentrx_entry(obj: Any, source: str) -> tuple[LabelledEntry, list[tuple[str, str]]]:
    if not isinstance(obj, dict) or "trajectory_id" not in obj or not isinstance(obj.get("failures", []), list):
        raise LabelError("an AgentRx ground-truth item needs 'trajectory_id' and a 'failures' list")
    key = EntryKey(task_id=str(_whole(obj["trajectory_id"], "trajectory_id")))
    labels, bad = [], []
    for i, failure in enumerate(obj.get("failures", [])):
        at = f"failures[{i}]"
        try:
            if not isinstance(failure, dict):
                raise LabelError(f"{at} must be an object")
            number = _whole(failure.get("step_number"), f"{at}.step_number", 1)
            labels.append(StepLabel("failure", message=number - 1,
                                    category=_text(failure.get("failure_category"), f"{at}.failure_category"),
                                    blamed=_text(failure.get("failed_agent"), f"{at}.failed_agent"),
                                    note=_text(failure.get("step_reason"), f"{at}.step_reason"),
                                    named=f"step_number {number}"))
        except LabelError as exc:
            bad.append((at, str(exc)))
    return LabelledEntry(key, tuple(labels), source, "agentrx"), bad


def _entries(path: str) -> Iterator[tuple[str, Any] | LabelProblem]:
    """(source, decoded entry) of a labels file, or a problem where one cannot be decoded."""
    with open_bytes(path) as fh:  # a compressed labels file too
        head = fh.read(4096).lstrip()
    if head.startswith(b"["):  # one JSON document: AgentRx's list
        document = read_json_document(path)
        if not isinstance(document, list):
            raise LabelError(f"{path}: a labels document must be a JSON list")
        for i, item in enumerate(document):
            yield f"{path}:[{i}]", ("agentrx", item)
        return
    for item in iter_json_lines(path):
        if isinstance(item, BadLine):
            yield LabelProblem(f"{path}:{item.line}", item.reason, item.excerpt)
        else:
            yield f"{path}:{item.line}", ("lines", item.value)


def read_labels(path: str | os.PathLike[str]) -> LabelsFile:
    """Every labelled entry of the file, and every entry or step that could not be read.

    Raises :class:`DecodeError` only where the file as a whole cannot be read (missing, not JSON)."""
    path = os.fspath(path)
    out = LabelsFile(path, [], [])
    try:
        items = list(_entries(path))
    except OSError as exc:
        raise LabelError(f"{path}: {exc.strerror or exc}") from None
    for item in items:
        if isinstance(item, LabelProblem):
            out.problems.append(item)
            continue
        source, (shape, value) = item
        try:
            entry, bad = (_agentrx_entry if shape == "agentrx" else _line_entry)(value, source)
        except RECORD_SHAPE_ERRORS as exc:
            out.problems.append(LabelProblem(source, shape_reason(exc), excerpt_of(value)))
            continue
        out.entries.append(entry)
        out.problems += [LabelProblem(f"{source} {at}", why) for at, why in bad]
    return out
