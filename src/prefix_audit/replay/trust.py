"""How far to trust a block's audit: its episodes against what their logs recorded (docs/trust.md).

From the trust columns of an episodes table (:mod:`prefix_audit.replay.record_check`, written by scoring
for imported rollouts) this module sums up each block — how often Y agrees with the log's own
verdict, how much of the log's recorded tool results replay reproduces, the decode health (steps the
decoder could not read, entries without any call, calls to unknown or unnamed tools) and the
entries flagged per ``log_issue`` code — and names what is low, worst first. ``audit``, ``score``,
the trust table and the audit browser all say the same, from here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

BLOCK_KEYS = ("dataset", "model", "method")
DEFAULT_MIN_AGREEMENT = 0.95  # below this, agreement with the record is reported as low
UNDECODED_LOUD = 0.5  # more than this share of call steps undecodable: the decoder does not read the format
# Why a decoder reads so little of a log: ours is not the log's, or the model wrote its calls in a
# format the benchmark's own decoder does not read either (its run executed none of them).
UNDECODED_CAUSES = "a wrong decoder, or a model writing calls its benchmark's own decoder cannot read either"
NO_CALL_LOUD = 0.5  # more than this share of entries without any call
STRICT_SEVERITY = 2  # warnings from this severity up are WARNINGs (what `audit --strict` fails on); below, notes


@dataclass(frozen=True)
class TrustWarning:
    severity: int  # 3: the numbers rest on a misreading; 2: they disagree with the log; 1: worth a look
    text: str

    @property
    def label(self) -> str:
        return "WARNING" if self.severity >= STRICT_SEVERITY else "note"


def undecoded_warning(call_steps: int, undecoded: int, confirmed: int) -> TrustWarning | None:
    """What it means that ``undecoded`` of ``call_steps`` call steps could not be decoded, ``confirmed``
    of them where the log shows the benchmark's own run could not decode them either: over
    :data:`UNDECODED_LOUD` of the steps unread *without* that confirmation, the decoder likely does not
    read the log's format (a WARNING); as many read by neither, the model wrote calls its benchmark
    cannot read — a faithful log, which the numbers count as the benchmark does (a note)."""
    if not call_steps or undecoded / call_steps <= UNDECODED_LOUD:
        return None
    if (undecoded - confirmed) / call_steps > UNDECODED_LOUD:
        return TrustWarning(3, f"{undecoded} of {call_steps} call steps could not be decoded: the decoder does not "
                               f"read this log's format ({UNDECODED_CAUSES}), so its calls are missing from every "
                               f"number here")
    return TrustWarning(1, f"{undecoded} of {call_steps} call steps could not be decoded, {confirmed} of them by the "
                           f"benchmark's own run either (its log shows nothing executed there): the model wrote calls "
                           f"its benchmark cannot read, and they count as the benchmark counts them (no action)")


@dataclass(frozen=True)
class BlockTrust:
    """One block's audit against its logs' records (only the entries that carry a record count)."""

    dataset: str
    model: str
    method: str
    entries: int  # entries of the block that carry a record
    with_verdict: int  # of those, with a recorded verdict
    y_agrees: int  # of those, where Y equals it
    missing_verdict: tuple[str, ...]  # why entries have no recorded verdict (distinct reasons)
    compared: int  # recorded tool results compared
    reproduced: int
    same_verdict: int
    call_steps: int
    undecoded: int
    no_call_entries: int  # entries (not infrastructure failures) with no tool call at all
    acted_entries: int  # entries that are not infrastructure failures
    unknown_calls: int
    flagged: Mapping[str, int] = field(default_factory=dict)  # log_issue code → entries flagged
    y_known: int = 0  # entries with Y decided
    y_success: int = 0  # of those, with Y = 1
    score_name: str | None = None  # the benchmark's own score the log recorded (ToolSandbox: similarity)
    score_n: int = 0  # entries that record it
    score_mean: float | None = None  # its mean over them: the benchmark's own headline
    undecoded_confirmed: int = 0  # of the undecodable steps, those the log shows its own run could not read either

    @property
    def key(self) -> tuple[str, str, str]:
        return self.dataset, self.model, self.method

    def headline(self) -> str | None:
        """The benchmark's own headline as its logs recorded it (``mean similarity 0.612 of 60``),
        None when they record no score."""
        if self.score_mean is None:
            return None
        return f"mean {self.score_name} {self.score_mean:.3f} of {self.score_n}"

    @property
    def y_agreement(self) -> float | None:
        return self.y_agrees / self.with_verdict if self.with_verdict else None

    @property
    def replay_agreement(self) -> float | None:
        return self.reproduced / self.compared if self.compared else None

    @property
    def verdict_agreement(self) -> float | None:
        return self.same_verdict / self.compared if self.compared else None

    def summary(self) -> str:
        """One line: the verdicts, the tool results, the decode health."""
        if self.with_verdict:
            verdict = f"Y agrees with the recorded verdict on {self.y_agrees}/{self.with_verdict}"
        else:
            why = f" ({'; '.join(self.missing_verdict)})" if self.missing_verdict else ""
            verdict = f"no recorded verdict{why}"
        if self.compared:
            results = (f"replay reproduces {_percent(self.replay_agreement)} of {self.compared} recorded tool results "
                       f"(ok/error {_percent(self.verdict_agreement)})")
        else:
            results = "no recorded tool results to compare"
        decode = (f"decode: {self.undecoded} of {self.call_steps} call steps undecodable, {self.no_call_entries} of "
                  f"{self.acted_entries} entries without any call, {self.unknown_calls} calls to unknown or "
                  f"unnamed tools")
        return f"{verdict}; {results}; {decode}"

    def flagged_text(self) -> str:
        return ", ".join(f"{code} {n}" for code, n in sorted(self.flagged.items(), key=lambda cn: (-cn[1], cn[0])))

    def warnings(self, min_agreement: float = DEFAULT_MIN_AGREEMENT) -> list[TrustWarning]:
        """What is low, worst first."""
        out = [w for w in (undecoded_warning(self.call_steps, self.undecoded, self.undecoded_confirmed),) if w]
        if self.y_agreement is not None and self.y_agreement < min_agreement:
            disagreeing = self.with_verdict - self.y_agrees
            flagged = f" (flagged: {self.flagged_text()})" if self.flagged else ""
            out.append(TrustWarning(2, f"Y disagrees with the recorded verdict on {disagreeing} of "
                                       f"{self.with_verdict} entries{flagged}"))
        if self.replay_agreement is not None and self.replay_agreement < min_agreement:
            share = _percent(self.replay_agreement)
            out.append(TrustWarning(2, f"replay reproduces only {share} of the {self.compared} "
                                       f"tool results the log recorded"))
        if self.acted_entries and self.no_call_entries / self.acted_entries > NO_CALL_LOUD:
            out.append(TrustWarning(1, f"{self.no_call_entries} of {self.acted_entries} entries hold no tool call "
                                       f"at all"))
        return sorted(out, key=lambda w: -w.severity)

    def lines(self, min_agreement: float = DEFAULT_MIN_AGREEMENT) -> list[str]:
        """The summary, the flagged entries and the warnings, as ``audit`` prints them."""
        out = [self.summary()]
        if self.flagged:
            out.append(f"flagged entries by log_issue: {self.flagged_text()}")
        out += [f"{w.label}: {w.text}" for w in self.warnings(min_agreement)]
        return out


def share_text(part: int, whole: int) -> str:
    """``part/whole (share)``, or n/a when there is nothing to share."""
    return f"{part}/{whole} ({part / whole:.3f})" if whole else "n/a"


def _percent(x: float | None) -> str:
    if x is None:
        return "n/a"
    text = f"{100 * x:.1f}%"
    # Never round a disagreement away: 99.96% is not 100.0%.
    return "99.9%" if text == "100.0%" and x < 1 else text


def issue_codes(log_issue: str | None) -> list[str]:
    """The codes of a ``log_issue`` value (``code: detail; code: detail``)."""
    if not log_issue:
        return []
    return [part.split(":", 1)[0].strip() for part in log_issue.split("; ") if part.strip()]


def _block(key: tuple[str, str, str], rows: pl.DataFrame) -> BlockTrust:
    verdict = rows.filter(pl.col("recorded_y").is_not_null())
    agree = int((verdict["Y"] == verdict["recorded_y"]).fill_null(False).sum()) if verdict.height else 0
    missing = rows.filter(pl.col("recorded_y").is_null())["recorded_verdict"].drop_nulls().unique().sort()
    acted = rows.filter(pl.col("infra_error").is_null())
    flagged: Counter[str] = Counter()
    for value in rows["log_issue"].drop_nulls():
        flagged.update(set(issue_codes(value)))

    def total(column: str, frame: pl.DataFrame = rows) -> int:
        return int(frame[column].fill_null(0).sum())

    known = rows.filter(pl.col("Y").is_not_null())
    name, scored, mean = _score(rows)
    return BlockTrust(*key, rows.height, verdict.height, agree, tuple(missing.to_list()[:3]),
                      total("results_compared"), total("results_reproduced"), total("results_same_verdict"),
                      total("call_steps"), total("undecoded_steps"),
                      int((acted["tool_calls"].fill_null(0) == 0).sum()), acted.height,
                      total("unknown_tool_calls"), dict(sorted(flagged.items())),
                      known.height, int((known["Y"] == 1).sum()), name, scored, mean,
                      total("undecoded_confirmed") if "undecoded_confirmed" in rows.columns else 0)


def _score(rows: pl.DataFrame) -> tuple[str | None, int, float | None]:
    """The name, count and mean of the score the block's logs recorded (none: ``(None, 0, None)``);
    a block whose entries name different scores has no one headline (ValueError)."""
    if "recorded_score" not in rows.columns:
        return None, 0, None  # an episodes table of an older version
    scored = rows.filter(pl.col("recorded_score").is_not_null())
    if not scored.height:
        return None, 0, None
    names = scored["recorded_score_name"].unique().sort().to_list()
    if len(names) != 1 or names[0] is None:
        raise ValueError(f"entries of one block record different scores: {names}")
    return names[0], scored.height, float(scored["recorded_score"].cast(pl.Float64).sum()) / scored.height


def block_trust(episodes: pl.DataFrame) -> list[BlockTrust]:
    """Each block of ``episodes`` whose entries carry a record (imported logs), in block order."""
    needed = ("recorded_y", "call_steps")
    if any(column not in episodes.columns for column in needed):
        return []  # an episodes table of an older version: nothing recorded to compare
    carrying = episodes.filter(pl.col("call_steps").is_not_null())
    parts = carrying.partition_by(list(BLOCK_KEYS), as_dict=True, maintain_order=True)
    return [_block(key, rows) for key, rows in sorted(parts.items())]


def worst(blocks: Sequence[BlockTrust], min_agreement: float = DEFAULT_MIN_AGREEMENT) -> int:
    """The highest warning severity of ``blocks`` (0: nothing low; from :data:`STRICT_SEVERITY`: a WARNING)."""
    return max((w.severity for b in blocks for w in b.warnings(min_agreement)), default=0)
