"""Which bfcl-eval data release a result file was made on, from the file alone.

BFCL changed its multi-turn data under the same category names (questions, initial states and
ground truths; in Nov 2025 eleven TradingBot entries lost their first turn), so a file is scored on
the release it was made with. Each entry of a result file is checked against each pinned release:
it does not fit a release that lacks its id, that has fewer turns than the file ran (BFCL only ever
cuts a run short), or whose user messages differ from the questions the file's ``inference_log``
recorded at the start of each turn (``begin_of_turn_query``; turns without a question in the data,
where withheld functions arrive, are not compared). The file's release is the one the fewest
entries contradict; then the one with the most entries fitting exactly (as many turns, every
recorded question the same); then by the file's name (``BFCL_v3_…`` files come from the v3 era's
data); ``--bfcl-data`` chooses it outright. An entry that contradicts the file's release is said
(``data_version``), never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .data import BfclData, Entry


@dataclass(frozen=True)
class RecordedRun:
    """What a result line shows of the entry it ran: its turns, and the user's messages at the
    start of each turn where its ``inference_log`` recorded them."""

    entry_id: str
    turns: int | None  # None: an inference error, no turns
    questions: Mapping[int, tuple[str, ...]]

    @classmethod
    def of(cls, obj: Any) -> RecordedRun | None:
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            return None
        result = obj.get("result")
        return cls(obj["id"], len(result) if isinstance(result, list) else None,
                   _logged_questions(obj.get("inference_log")))


def _logged_questions(log: Any) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    turns = [item for item in log if isinstance(item, dict)] if isinstance(log, list) else []
    for t, turn in enumerate(turns):
        query = turn.get("begin_of_turn_query")
        if isinstance(query, list):
            out[t] = tuple(str(m.get("content", "")) for m in query if isinstance(m, dict) and m.get("role") == "user")
    return out


def misfit(entry: Entry | None, run: RecordedRun) -> str | None:
    """Why ``run`` cannot have been made on ``entry``'s data (None: it may have been)."""
    if entry is None:
        return "no such entry"
    turns = len(entry.question)
    ran = max([run.turns or 0, *(t + 1 for t in run.questions)])
    if ran > turns:
        return f"the run has {ran} turns, the entry {turns}"
    for t, asked in sorted(run.questions.items()):
        expected = entry.user_texts(t)
        if expected and asked != expected:
            return f"turn {t}'s question differs ({asked[0][:60] if asked else 'none'!r} …)"
    return None


def _exact(entry: Entry | None, run: RecordedRun) -> bool:
    return entry is not None and run.turns == len(entry.question) and bool(run.questions)


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
    if given is not None:
        how = "given with --bfcl-data"
        release = given
    else:
        exact = {r: sum(_exact(data.entries.get(run.entry_id), run) for run in runs) for r, data in releases.items()}
        by_name = v3_era if file_name.startswith("BFCL_v3_") and v3_era in releases else next(iter(releases))
        release = min(releases, key=lambda r: (sum(w is not None for w in checked[r].values()), -exact[r],
                                               r != by_name))
        fits = {r: sum(w is None for w in checked[r].values()) for r in releases}
        how = "the recorded run fits " + ", ".join(f"{r}: {fits[r]} of {len(runs)} entries" for r in releases)
        if len(set(fits.values())) == 1 and len(set(exact.values())) == 1:
            how = f"the recorded runs fit every release alike; chosen by the file name {file_name}"
    if unavailable:
        how += "; not considered: " + ", ".join(unavailable)
    return DataChoice(release, how, {i: why for i, why in checked[release].items() if why is not None})
