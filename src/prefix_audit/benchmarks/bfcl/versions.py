"""Which bfcl-eval data release a result file was made on, from the file alone.

BFCL changed its multi-turn data under the same category names (questions, initial states and
ground truths; in Nov 2025 eleven TradingBot entries lost their first turn), so a file is scored on
the release it was made with. Each entry of a file is checked against each pinned release on what
decides its verdict: it does not fit a release that lacks its id, that has fewer turns than the file
ran (BFCL only ever cuts a run short), whose initial state differs from the state the file's
``inference_log`` recorded at the start of the run (``state_info``: the involved classes and their
loaded values; a score file's ``prompt`` gives the entry's ``initial_config`` and classes outright),
or whose ground truth differs from the one a score file recorded (``possible_answer``). The user's
questions do not decide a verdict — a run on translated or reworded questions is a run of the same
entry — so they only break ties: the file's release is the one the fewest entries contradict; then
the one whose questions the most entries asked alike (``begin_of_turn_query``); then by the file's
name (``BFCL_v3_…`` files come from the v3 era's data); ``--bfcl-data`` chooses it outright. An
entry that contradicts the file's release is said (``data_version``), never dropped; questions
that differ from it are counted in how the release was chosen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.replay.record_check import canonical

from .data import BfclData, Entry


@dataclass(frozen=True)
class RecordedRun:
    """What a result line shows of the entry it ran: its turns, the user's messages at the start of
    each turn where its ``inference_log`` recorded them, the initial state of each class it loaded
    (class → values), the classes and ground truth where a score file recorded them."""

    entry_id: str
    turns: int | None  # None: an inference error, no turns
    questions: Mapping[int, tuple[str, ...]]
    initial_state: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    classes: tuple[str, ...] | None = None
    ground_truth: tuple[tuple[str, ...], ...] | None = None

    @classmethod
    def of(cls, obj: Any) -> RecordedRun | None:
        """From a result line; a score file's failing line read as one also brings ``prompt`` and
        ``possible_answer``."""
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            return None
        result = obj.get("result")
        prompt = obj.get("prompt") if isinstance(obj.get("prompt"), dict) else {}
        state = _logged_state(obj.get("inference_log"))
        classes = prompt.get("involved_classes")
        if isinstance(prompt.get("initial_config"), dict) and isinstance(classes, list):
            # an entry's config may hold classes it does not involve: only those it loads count
            state = {k: v for k, v in prompt["initial_config"].items() if k in classes and isinstance(v, dict)}
        answer = obj.get("possible_answer")
        return cls(obj["id"], len(result) if isinstance(result, list) else None,
                   _logged_questions(obj.get("inference_log")), state,
                   tuple(map(str, classes)) if isinstance(classes, list) else None,
                   tuple(tuple(map(str, t)) for t in answer)
                   if isinstance(answer, list) and all(isinstance(t, list) for t in answer) else None)


def _logged_turns(log: Any) -> list[Any]:
    return list(log) if isinstance(log, list) else []


def _logged_questions(log: Any) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    turns = [item for item in _logged_turns(log) if isinstance(item, dict)]
    for t, turn in enumerate(turns):
        query = turn.get("begin_of_turn_query")
        if isinstance(query, list):
            out[t] = tuple(str(m.get("content", "")) for m in query if isinstance(m, dict) and m.get("role") == "user")
    return out


def _logged_state(log: Any) -> dict[str, dict[str, Any]]:
    """The state the run began in: the first of the log's per-turn state lists (``state_info``)."""
    first = next((item for item in _logged_turns(log) if isinstance(item, list)), [])
    return {m["class_name"]: m["content"] for m in first
            if isinstance(m, dict) and m.get("role") == "state_info" and isinstance(m.get("class_name"), str)
            and isinstance(m.get("content"), dict)}


def _same_value(recorded: Any, data: Any) -> bool:
    if isinstance(recorded, str) != isinstance(data, str):  # a rendered object (a file system's tree): not compared
        return True
    return canonical(json.dumps(recorded, default=str)) == canonical(json.dumps(data, default=str))


def misfit(entry: Entry | None, run: RecordedRun) -> str | None:
    """Why ``run`` cannot have been made on ``entry``'s data (None: it may have been), on what
    decides a verdict."""
    if entry is None:
        return "no such entry"
    turns = len(entry.question)
    ran = max([run.turns or 0, *(t + 1 for t in run.questions)])
    if ran > turns:
        return f"the run has {ran} turns, the entry {turns}"
    if run.classes is not None and set(run.classes) != set(entry.involved_classes):
        return f"the run involves {', '.join(sorted(run.classes))}, the entry {', '.join(sorted(entry.involved_classes))}"
    for cls, state in sorted(run.initial_state.items()):
        if cls not in entry.involved_classes:
            return f"the run loaded {cls}, which the entry does not involve"
        if entry.long_context:  # the loader extends long-context states: their values are not the config's
            continue
        for key, value in entry.initial_config.get(cls, {}).items():
            if key in state and not _same_value(state[key], value):
                return f"the run's initial {cls}.{key} differs"
    if run.ground_truth is not None and run.ground_truth != entry.ground_truth:
        return "the recorded ground truth differs"
    return None


def _asked_alike(entry: Entry | None, run: RecordedRun) -> bool | None:
    """Whether the run's recorded questions are the entry's (None: it recorded none to compare)."""
    compared = [(asked, entry.user_texts(t)) for t, asked in run.questions.items()
                if entry is not None and t < len(entry.question) and entry.user_texts(t)]
    return all(a == b for a, b in compared) if compared else None


@dataclass(frozen=True)
class DataChoice:
    """The release a file is scored on, how it was chosen, and which entries contradict it."""

    release: str
    how: str
    misfits: dict[str, str]  # entry id → why its recorded run does not fit the release

    def describe(self) -> str:
        return f"data of bfcl-eval {self.release} ({self.how})"


def choose_release(releases: Mapping[str, BfclData], runs: Sequence[RecordedRun], file_name: str,
                   v3_era: str, given: str | None = None, unavailable: Sequence[str] = ()) -> DataChoice:
    """The release of ``releases`` (newest first) a result file's ``runs`` were made on;
    ``unavailable``: pinned releases not considered, and why (said with the choice)."""
    checked = {r: {run.entry_id: misfit(data.entries.get(run.entry_id), run) for run in runs}
               for r, data in releases.items()}
    asked = {r: [_asked_alike(data.entries.get(run.entry_id), run) for run in runs] for r, data in releases.items()}
    if given is not None:
        how = "given with --bfcl-data"
        release = given
    else:
        alike = {r: sum(a is True for a in asked[r]) for r in releases}
        by_name = v3_era if file_name.startswith("BFCL_v3_") and v3_era in releases else next(iter(releases))
        release = min(releases, key=lambda r: (sum(w is not None for w in checked[r].values()), -alike[r],
                                               r != by_name))
        fits = {r: sum(w is None for w in checked[r].values()) for r in releases}
        how = "the recorded run fits " + ", ".join(f"{r}: {fits[r]} of {len(checked[r])} entries" for r in releases)
        if len(set(fits.values())) == 1 and len(set(alike.values())) == 1:
            how = f"the recorded runs fit every release alike; chosen by the file name {file_name}"
    differ = sum(a is False for a in asked[release])
    if differ:
        how += (f"; {differ} entries asked other questions than this release's (translated or reworded: not what "
                f"decides a verdict)")
    if unavailable:
        how += "; not considered: " + ", ".join(unavailable)
    return DataChoice(release, how, {i: why for i, why in checked[release].items() if why is not None})
