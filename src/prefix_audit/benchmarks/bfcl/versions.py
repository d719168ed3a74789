"""Which bfcl-eval release a result file was made on, from everything it recorded.

BFCL changed its multi-turn data under the same category names (questions, initial states and
ground truths; in Nov 2025 eleven TradingBot entries lost their first turn) and its environment
classes with it (``echo`` into a missing file creates it in 2025.9.29 and errs in 2026.3.23), so a
file is scored on the release it was made with. Each entry of a file is checked against each pinned
release on what decides its verdict: it does not fit a release that lacks its id, that has fewer
turns than the file ran (BFCL only ever cuts a run short), whose initial state differs from the
state the file's ``inference_log`` recorded at the start of the run (``state_info``: the involved
classes and their loaded values; a score file's ``prompt`` gives the entry's ``initial_config`` and
classes outright), or whose ground truth differs from the one a score file recorded
(``possible_answer``). The user's questions do not decide a verdict — a run on translated or
reworded questions is a run of the same entry — so they only break ties: the data point to the
release the fewest entries contradict; then the one whose questions the most entries asked alike
(``begin_of_turn_query``); then by the file's name (``BFCL_v3_…`` files, whatever a copy put before
that name, come from the v3 era's data).

The tool results the file recorded weigh in first (:func:`reproduction`: each entry's calls replayed
on a release's data and classes, every recorded result compared as the audit compares them,
:mod:`prefix_audit.replay.record_check`): a file is scored on the release whose classes reproduce the
recorded results of the most entries, the data's release where that ties. Replay on one release is
the cheapest sufficient evidence: the release the data point to is replayed first, and the others
only when it does not reproduce every entry's results — a release that reproduces them all cannot be
bettered, so on a faithful file the check costs one replay of its recorded calls. Where the results
choose another release than the data, the choice says both, and so does the ``data_version`` of each
entry whose data contradict the chosen release; an entry whose results the chosen release does not
reproduce but another does is flagged ``data_version`` naming that release. ``--bfcl-data`` chooses
the release outright (nothing is replayed). An entry that contradicts the file's release is said
(``data_version``), never dropped; questions that differ from it are counted in how the release was
chosen.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefix_audit.core.records import MAX_ISSUE_CHARS
from prefix_audit.plugin import Benchmark, LogIssue, Rollout, UnscorableRollout
from prefix_audit.replay.checker import replay
from prefix_audit.replay.record_check import canonical, check_record

from .data import DATASET_VERSION, BfclData, Entry
from .scores import bfcl_file_name

DATA_VERSION = "data_version"


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
        prompt = found if isinstance(found := obj.get("prompt"), dict) else {}
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
        return (f"the run involves {', '.join(sorted(run.classes))}, "
                f"the entry {', '.join(sorted(entry.involved_classes))}")
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
class Reproduction:
    """A file's recorded tool results replayed on one release: how many entries recorded any, and
    the rollout ids of those whose results it does not reproduce (the audit names their first
    divergence: ``replay_diverged``)."""

    compared: int
    diverged: frozenset[str]


def reproduction(bench: Benchmark, rollouts: Sequence[Rollout], release: str) -> Reproduction:
    """``rollouts`` replayed on ``release``'s data and classes (``bench`` holds them), each recorded
    tool result compared with its replayed one as the audit compares them; an entry the release
    lacks reproduces nothing."""
    compared, diverged = 0, set()
    for rollout in rollouts:
        if (rollout.recorded is None or rollout.infra_error is not None
                or not any(step.results for turn in rollout.turns for step in turn)):
            continue
        compared += 1
        try:
            check = check_record(replay(replace(rollout, meta={**rollout.meta, "bfcl_data": release}), bench,
                                        with_gold=False))
        except UnscorableRollout:
            diverged.add(rollout.rollout_id)
            continue
        if check is not None and check.reproduced < check.compared:
            diverged.add(rollout.rollout_id)
    return Reproduction(compared, frozenset(diverged))


@dataclass(frozen=True)
class DataChoice:
    """The release a file is scored on, how it was chosen, and which entries contradict it."""

    release: str
    how: str
    misfits: dict[str, str]  # entry id → why its recorded run does not fit the release's data
    # rollout id → the release whose classes reproduce the entry's recorded tool results where this
    # release's do not
    results_of: dict[str, str] = field(default_factory=dict)
    data_point_to: str | None = None  # the release the data point to, where the recorded results chose another

    def describe(self) -> str:
        return f"data of bfcl-eval {self.release} ({self.how})"

    def issue(self, rollout: Rollout) -> LogIssue | None:
        """``data_version`` where ``rollout``'s recorded run contradicts the release (None: it fits)."""
        said = []
        if rollout.task_id in self.misfits:
            why = f"the recorded run does not fit bfcl-eval {self.release}'s data: {self.misfits[rollout.task_id]}"
            if self.data_point_to is not None:
                why += (f" — scored on {self.release} all the same: its classes reproduce the file's recorded tool "
                        f"results, while the verdict-deciding data point to {self.data_point_to}")
            said.append(why)
        other = self.results_of.get(rollout.rollout_id)
        if other is not None:
            said.append(f"the recorded tool results are bfcl-eval {other}'s: its classes reproduce them, "
                        f"{self.release}'s do not")
        return LogIssue(DATA_VERSION, ", and ".join(said)[:MAX_ISSUE_CHARS]) if said else None

    def scored(self, rollout: Rollout) -> Rollout:
        """``rollout`` on this release: named in ``meta["bfcl_data"]`` and in its reading, and
        flagged where its recorded run contradicts the release (:meth:`issue`)."""
        meta = {**rollout.meta, "bfcl_data": self.release, "reading": f"{rollout.meta['reading']}; {self.describe()}"}
        issue = self.issue(rollout)
        recorded = rollout.recorded
        if issue is not None and recorded is not None:
            recorded = replace(recorded, issues=(*recorded.issues, issue))
        return replace(rollout, meta=meta, recorded=recorded)


def choose_release(releases: Mapping[str, BfclData], runs: Sequence[RecordedRun], file_name: str,
                   v3_era: str, given: str | None = None, unavailable: Sequence[str] = (),
                   reproduce: Callable[[str], Reproduction] | None = None) -> DataChoice:
    """The release of ``releases`` (newest first) a result file's ``runs`` were made on;
    ``unavailable``: pinned releases not considered, and why (said with the choice); ``reproduce``:
    the file's recorded tool results replayed on a release (None: they do not weigh in)."""
    checked = {r: [(run.entry_id, misfit(data.entries.get(run.entry_id), run)) for run in runs]
               for r, data in releases.items()}
    asked = {r: [_asked_alike(data.entries.get(run.entry_id), run) for run in runs] for r, data in releases.items()}
    results_of: dict[str, str] = {}
    data_point_to = None
    if given is not None:
        how = "given with --bfcl-data"
        release = given
    else:
        alike = {r: sum(a is True for a in asked[r]) for r in releases}
        named = bfcl_file_name(Path(file_name))  # a flat copy's prefix before BFCL's name is read past
        by_name = (v3_era if named is not None and named.version == DATASET_VERSION and v3_era in releases
                   else next(iter(releases)))
        ranked = sorted(releases, key=lambda r: (sum(w is not None for _, w in checked[r]), -alike[r], r != by_name))
        fits = {r: sum(w is None for _, w in checked[r]) for r in releases}
        data_said = "the recorded run fits " + ", ".join(f"{r}: {fits[r]} of {len(checked[r])} entries"
                                                          for r in releases)
        data_alike = len(set(fits.values())) == 1 and len(set(alike.values())) == 1
        if data_alike:
            data_said = "the recorded runs fit every release alike"
        reproduced = _reproduced(ranked, reproduce)
        release = (min(reproduced, key=lambda r: (len(reproduced[r].diverged), ranked.index(r))) if reproduced
                   else ranked[0])
        results_decide = len(reproduced) > 1 and all(
            len(reproduced[release].diverged) < len(reproduced[r].diverged) for r in reproduced if r != release)
        if release != ranked[0]:  # the results chose another release than the data: both are said
            data_point_to = None if data_alike else ranked[0]
            how = _results_said(release, reproduced) + (
                f"; {data_said}" if data_alike else f"; the verdict-deciding data point to {ranked[0]} ({data_said})")
        else:
            how = data_said + (f"; chosen by the file name {file_name}" if data_alike and not results_decide else "")
            if reproduced and reproduced[release].compared:
                how += f"; {_results_said(release, reproduced)}"
        for rid in sorted(reproduced[release].diverged) if reproduced else ():
            other = next((r for r in reproduced if r != release and rid not in reproduced[r].diverged), None)
            if other is not None:  # the entry's results are another release's
                results_of[rid] = other
    differ = sum(a is False for a in asked[release])
    if differ:
        how += (f"; {differ} entries asked other questions than this release's (translated or reworded: not what "
                f"decides a verdict)")
    if unavailable:
        how += "; not considered: " + ", ".join(unavailable)
    return DataChoice(release, how, {i: why for i, why in checked[release] if why is not None}, results_of,
                      data_point_to)


def _reproduced(ranked: Sequence[str], reproduce: Callable[[str], Reproduction] | None) -> dict[str, Reproduction]:
    """The recorded tool results replayed on the release the data point to (``ranked[0]``), and on the
    others only where it does not reproduce them all: a release that reproduces every one cannot be
    bettered, so a faithful file costs one replay."""
    if reproduce is None:
        return {}
    out = {ranked[0]: reproduce(ranked[0])}
    if out[ranked[0]].diverged:
        out |= {r: reproduce(r) for r in ranked[1:]}
    return out


def _results_said(release: str, reproduced: Mapping[str, Reproduction]) -> str:
    """Where the recorded tool results reproduce: on ``release``'s classes, then on the others replayed."""
    def share(r: str) -> str:
        return f"{reproduced[r].compared - len(reproduced[r].diverged)} of {reproduced[r].compared} entries"

    others = [f"on {r}'s in {share(r)}" for r in reproduced if r != release]
    return f"the recorded tool results reproduce on its classes in {share(release)}" + "".join(f", {o}" for o in others)
