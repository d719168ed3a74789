"""What a log recorded about one rollout beyond its actions, and its JSON form: the replies the log
recorded to the rollout's tool calls (:class:`RecordedResult`), the log's own verdict and the faults its
importer found in it (:class:`Recorded`, :class:`LogIssue`) — what the audit is checked against
(docs/definitions.md#reading-rules, "the log checked against itself"). The rollout record
(:mod:`.records`) carries them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .decode import DecodeError

__all__ = ["MAX_ISSUE_CHARS", "MAX_RECORDED_CHARS", "MAX_UNDECODED_STEPS", "LogIssue", "RecordError", "Recorded",
           "RecordedResult", "clean_text", "recorded_from_json", "result_from_json"]


class RecordError(DecodeError):
    """A rollout line that cannot be used; the message says where and why."""


# A recorded tool result is kept up to this many characters; a longer one is cut and compared by
# its digest (real tool results are kilobytes; a hostile one must not be held or parsed whole).
MAX_RECORDED_CHARS = 100_000
MAX_ISSUE_CHARS = 500  # the detail of one log issue
MAX_UNDECODED_STEPS = 10_000  # steps listed as undecodable per rollout (their count is always kept)


@dataclass(frozen=True)
class RecordedResult:
    """What a log recorded as the reply to one tool call.

    ``content`` is the reply as the log wrote it (cut at :data:`MAX_RECORDED_CHARS`; then
    ``length`` and ``sha256`` are those of the whole text); ``error`` the log's own verdict on it
    (None: the log marks none); ``executed`` False when the log shows the call never ran (a harness
    refused it) — replay then does not execute it either.
    """

    content: str
    error: bool | None = None
    executed: bool = True
    length: int | None = None
    sha256: str | None = None

    @classmethod
    def of(cls, content: str, error: bool | None = None, executed: bool = True) -> RecordedResult:
        """A recorded reply, cut to :data:`MAX_RECORDED_CHARS` with the whole text's length and digest."""
        content = clean_text(content)
        if len(content) <= MAX_RECORDED_CHARS:
            return cls(content, error, executed)
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
        return cls(content[:MAX_RECORDED_CHARS], error, executed, len(content), digest)

    @property
    def cut(self) -> bool:
        return self.length is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "error": self.error}
        if not self.executed:
            out["executed"] = False
        if self.cut:
            out |= {"length": self.length, "sha256": self.sha256}
        return out


@dataclass(frozen=True)
class LogIssue:
    """A fault of the log itself found by its importer (a stable ``code`` of docs/trust.md, and a detail)."""

    code: str
    detail: str

    def text(self) -> str:
        """``code: detail``; issues are joined with ``; ``, so a detail never holds one."""
        detail = self.detail.replace("; ", ", ")
        return f"{self.code}: {detail}" if detail else self.code


@dataclass(frozen=True)
class Recorded:
    """What a log recorded about one entry beyond its actions, for checking the audit against it.

    ``y``: the log's verdict on final success as the benchmark defines Y (τ reward = 1, ToolSandbox
    similarity = 1, BFCL's score file), None when it records none; ``verdict``: that verdict in the
    log's words, or why there is none; ``issues``: faults of the log its importer found;
    ``if_y_differs``: causes the importer found that explain a Y different from the log's verdict
    (e.g. the log was scored under an older rule that gives the recorded verdict), said only where
    replay's Y does differ;
    ``undecoded``: the steps of model output the importer's decoder could not read as calls
    (``(turn, step, reason)``, at most :data:`MAX_UNDECODED_STEPS`) and ``undecoded_count`` all of them;
    ``undecoded_confirmed``: of those, the steps the log shows the benchmark's own run could not decode
    either (it executed nothing there) — the model's format, not a reader's fault;
    ``score``: the benchmark's own continuous score of the entry as the log recorded it, its headline
    averaged over entries (ToolSandbox's similarity), named ``score_name``; None where it records none.
    """

    y: int | None = None
    verdict: str | None = None
    issues: tuple[LogIssue, ...] = ()
    undecoded: tuple[tuple[int, int, str], ...] = ()
    undecoded_count: int = 0
    if_y_differs: tuple[LogIssue, ...] = ()
    score: float | None = None
    score_name: str | None = None
    undecoded_confirmed: int = 0

    @classmethod
    def of(cls, y: int | None, verdict: str | None, undecoded: Sequence[tuple[int, int, str]] = (),
           issues: Sequence[LogIssue] = (), if_y_differs: Sequence[LogIssue] = (), *, score: float | None = None,
           score_name: str | None = None, undecoded_confirmed: int = 0) -> Recorded:
        """A record with its texts and its list of undecodable steps bounded (their count kept whole).
        A ``score`` must be a finite number and comes with its ``score_name``."""
        if not 0 <= undecoded_confirmed <= len(undecoded):
            raise ValueError(f"{undecoded_confirmed} undecodable steps confirmed by the log, of {len(undecoded)}")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                  or not math.isfinite(score) or not score_name):
            raise ValueError(f"a recorded score must be a finite number with a name, got {score!r} ({score_name!r})")
        return cls(y, verdict[:MAX_ISSUE_CHARS] if verdict is not None else None,
                   tuple(LogIssue(i.code[:60], i.detail[:MAX_ISSUE_CHARS]) for i in issues),
                   tuple((t, s, why[:MAX_ISSUE_CHARS]) for t, s, why in undecoded[:MAX_UNDECODED_STEPS]),
                   len(undecoded), tuple(LogIssue(i.code[:60], i.detail[:MAX_ISSUE_CHARS]) for i in if_y_differs),
                   float(score) if score is not None else None,
                   score_name[:60] if score is not None and score_name else None, undecoded_confirmed)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"y": self.y, "verdict": self.verdict}
        if self.score is not None:
            out |= {"score": self.score, "score_name": self.score_name}
        if self.issues:
            out["issues"] = [{"code": i.code, "detail": i.detail} for i in self.issues]
        if self.if_y_differs:
            out["if_y_differs"] = [{"code": i.code, "detail": i.detail} for i in self.if_y_differs]
        if self.undecoded_count:
            out["undecoded_steps"] = [list(u) for u in self.undecoded]
            out["undecoded_count"] = self.undecoded_count
        if self.undecoded_confirmed:
            out["undecoded_confirmed"] = self.undecoded_confirmed
        return out


def clean_text(text: str) -> str:
    """Text that can be written as UTF-8: lone surrogates (which JSON may carry) replaced."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def result_from_json(item: Any, at: str) -> RecordedResult:
    """A recorded result as :meth:`RecordedResult.to_json` writes it (:class:`RecordError` where it is not)."""
    if not isinstance(item, dict) or not isinstance(item.get("content"), str):
        raise RecordError(f"{at} must be an object with a 'content' string")
    error, executed = item.get("error"), item.get("executed", True)
    if error is not None and not isinstance(error, bool) or not isinstance(executed, bool):
        raise RecordError(f"{at}: 'error' must be true, false or null and 'executed' true or false")
    length, digest = item.get("length"), item.get("sha256")
    if length is None:
        return RecordedResult.of(item["content"], error, executed)
    if isinstance(length, bool) or not isinstance(length, int) or length <= MAX_RECORDED_CHARS \
            or not isinstance(digest, str) or len(item["content"]) != MAX_RECORDED_CHARS:
        raise RecordError(f"{at}: a cut result needs its whole 'length' and 'sha256'")
    return RecordedResult(clean_text(item["content"]), error, executed, length, digest)


def recorded_from_json(obj: Any) -> Recorded | None:
    if obj is None:
        return None
    where = "recorded"
    if not isinstance(obj, dict):
        raise RecordError(f"{where} must be an object")
    y, verdict = obj.get("y"), obj.get("verdict")
    if y is not None and (isinstance(y, bool) or not isinstance(y, int) or y not in (0, 1)):
        raise RecordError(f"{where}.y must be 0, 1 or null, got {y!r}"[:200])
    if verdict is not None and not isinstance(verdict, str):
        raise RecordError(f"{where}.verdict must be a string")
    issues, conditional = obj.get("issues", []), obj.get("if_y_differs", [])
    for key, items in (("issues", issues), ("if_y_differs", conditional)):
        if not isinstance(items, list) or not all(
                isinstance(i, dict) and isinstance(i.get("code"), str) and i["code"]
                and isinstance(i.get("detail", ""), str)
                for i in items):
            raise RecordError(f"{where}.{key} must be a list of {{code, detail}} objects")
    steps = obj.get("undecoded_steps", [])
    if not isinstance(steps, list) or not all(
            isinstance(u, list) and len(u) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in u[:2])
            and isinstance(u[2], str) for u in steps):
        raise RecordError(f"{where}.undecoded_steps must be a list of [turn, step, reason] items")
    total = obj.get("undecoded_count", len(steps))
    if isinstance(total, bool) or not isinstance(total, int) or total < len(steps):
        raise RecordError(f"{where}.undecoded_count must be a whole number of at least the steps listed")
    confirmed = obj.get("undecoded_confirmed", 0)
    if isinstance(confirmed, bool) or not isinstance(confirmed, int) or not 0 <= confirmed <= total:
        raise RecordError(f"{where}.undecoded_confirmed must be a whole number from 0 to undecoded_count")
    score, score_name = obj.get("score"), obj.get("score_name")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
                              or not isinstance(score_name, str) or not score_name):
        raise RecordError(f"{where}.score must be a finite number with a non-empty score_name, or absent")
    record = Recorded.of(y, verdict, [(u[0], u[1], u[2]) for u in steps],
                         [LogIssue(i["code"], i.get("detail", "")) for i in issues],
                         [LogIssue(i["code"], i.get("detail", "")) for i in conditional],
                         score=score, score_name=score_name if score is not None else None)
    return dataclasses.replace(record, undecoded_count=total, undecoded_confirmed=confirmed)
