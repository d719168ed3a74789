"""The log checked against itself (docs/trust.md): an episode's replay compared with what its log recorded.

An imported rollout carries the log's own verdict and the tool result it recorded for each call
(:class:`~prefix_audit.core.records.Recorded`, :class:`~prefix_audit.core.records.RecordedResult`). Here each
recorded result is compared with the benchmark's own rendering of the replayed outcome
(:attr:`~prefix_audit.replay.checker.ActionVerdict.logged`), after normalising what varies without meaning:

* JSON and Python literal notation (``{"a": 1}`` and ``{'a': 1}``), key order, whitespace, tuples
  and lists, a key whose value is null and a key left out, a null result and none, and number
  printing (``100``, ``100.0``, ``1e2``; floats to 12 significant digits);
* fields the benchmark's own run does not fix (:attr:`~prefix_audit.replay.contract.Outcome.volatile`:
  BFCL's shared default mentions list), left out on both sides;
* error wording: an ``Error:``/``Error during execution:`` prefix, a module-qualified exception
  class, object addresses, the library version in a pydantic error's URL, letter case, and the name of
  the function in Python's own argument errors (one tool behind another wrapper: τ-bench v1's
  ``CancelReservation.invoke() got an unexpected keyword argument 'reason'`` is tau2's
  ``AirlineTools.cancel_reservation() got an unexpected keyword argument 'reason'``).

A call's status (:data:`STATUSES`): ``same`` (the result reproduced), ``same_verdict`` (both ok or
both errors, the content differs), ``differs`` (one side an error, the other not), ``not_replayed``
(the log ran the call; replay could not), ``not_executed`` (the log shows the call never ran, so
replay judged it without running it — not compared). A recorded result beyond a step's calls is
``unmatched``: the log ran a call this reading of the step did not find. A call the log recorded
nothing for is not compared.

Another party's calls the session replayed (τ² telecom's user on their phone,
:class:`~prefix_audit.replay.contract.PartyCall`) are compared the same way, counted with the agent's,
and a divergence among them is named as that party's (``user call k``).

``replay_agreement`` is the share of compared results that are ``same``. ``log_issue`` joins, with
``; ``, the faults the importer found in the log, ``not_executed``, ``replay_diverged`` (the first
divergence), the causes the importer found for a Y that differs from the log's verdict (only where
it does: :attr:`~prefix_audit.core.records.Recorded.if_y_differs`) and — only when Y differs from the
recorded verdict and nothing above explains it — ``undecoded`` (the entry holds steps its reading
could not decode as calls) or else ``y_differs``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.decode import loads
from prefix_audit.core.records import LogIssue, RecordedResult, unmatched_results

from .checker import ActionVerdict, EpisodeResult
from .contract import PartyCall

SAME, SAME_VERDICT, DIFFERS, NOT_REPLAYED, NOT_EXECUTED, UNMATCHED = (
    "same", "same_verdict", "differs", "not_replayed", "not_executed", "unmatched")
STATUSES = (SAME, SAME_VERDICT, DIFFERS, NOT_REPLAYED, NOT_EXECUTED)
DIVERGED = frozenset({SAME_VERDICT, DIFFERS, NOT_REPLAYED, UNMATCHED})
# Codes of log_issue found here; importers add their own (task_mismatch, data_version, ...).
NOT_EXECUTED_CODE, REPLAY_DIVERGED, UNDECODED, Y_DIFFERS = "not_executed", "replay_diverged", "undecoded", "y_differs"

MAX_PARSE_CHARS = 100_000  # a result longer than this is compared as text, never parsed
EXCERPT_CHARS = 120
_MISSING = object()
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ERROR_PREFIX = re.compile(r"^\s*(?:error during execution|error|exception)\s*:\s*", re.IGNORECASE)
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*(?:Error|Exception|Warning))\b")
# A library version in the URL an error points to (pydantic's errors.pydantic.dev/2.11/v/missing).
_VERSIONED_URL = re.compile(r"(https?://errors\.pydantic\.dev/)[\d.]+/")
# The callable Python names in its argument errors ("f() got an unexpected keyword argument 'x'",
# "f() missing 1 required positional argument: 'x'", "f() takes 2 positional arguments but 3 were given").
_ARGUMENT_ERROR_CALLABLE = re.compile(r"\b[A-Za-z_][\w.]*\(\)(?= (?:got an unexpected keyword|got multiple values|"
                                      r"missing \d+ required|takes \d+))")
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")


# --- normalising ---------------------------------------------------------------------------------


def _number(value: float) -> int | float:
    if not math.isfinite(value):
        return value
    rounded = float(f"{value:.12g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**63 else rounded


Volatile = tuple[tuple[str, Any, str], ...]


def _plain(value: Any, volatile: Volatile = ()) -> Any:
    """A parsed value in one notation: lists for tuples, sorted lists for sets, string keys,
    numbers as :func:`_number` prints them; without the ``volatile`` fields
    (:attr:`~prefix_audit.replay.contract.Outcome.volatile`)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return _number(float(value)) if isinstance(value, float) else value
    if isinstance(value, dict):  # a key whose value is null is a key left out
        dropped = {f for key, v, f in volatile if value.get(key, _MISSING) == v}
        return {str(k): _plain(v, volatile) for k, v in value.items() if v is not None and k not in dropped}
    if isinstance(value, (list, tuple)):
        return [_plain(v, volatile) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v, volatile) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return str(value)


def literal_value(text: str) -> Any:
    """``text`` as a JSON or Python literal value (bounded: nothing is evaluated), or None when it is
    neither."""
    value = _parsed(text)
    return None if value is _MISSING else value


def _parsed(text: str) -> Any:
    """``text`` as a JSON or Python literal value, or :data:`_MISSING` when it is neither."""
    if len(text) > MAX_PARSE_CHARS or not text:
        return _MISSING
    if text[0] in "{[\"-0123456789" or text in ("true", "false", "null"):
        try:
            return loads(text)
        except (ValueError, RecursionError):
            pass
    if text[0] in "{[('\"-0123456789" or text in ("True", "False", "None"):
        try:
            return ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    return _MISSING


def _text_form(text: str) -> str:
    return " ".join(_NUMBER.sub(lambda m: repr(_number(float(m.group()))), text).split())


def canonical(text: str, volatile: Volatile = ()) -> str:
    """A result text in one notation (module docstring): equal for the same result however printed;
    ``volatile``: fields left out (:attr:`~prefix_audit.replay.contract.Outcome.volatile`)."""
    text = text.strip()
    value = _parsed(text)
    if value is None:  # a null result and no result are the same
        return ""
    if value is _MISSING or isinstance(value, str):
        return _text_form(value if isinstance(value, str) else text)
    try:
        return json.dumps(_plain(value, volatile), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        return _text_form(text)


def canonical_error(text: str) -> str:
    """An error message without its wording's accidents (module docstring)."""
    text = _QUALIFIED.sub(r"\1", _ADDRESS.sub("", _VERSIONED_URL.sub(r"\1", text)))
    text = _ARGUMENT_ERROR_CALLABLE.sub("()", text)
    return canonical(_ERROR_PREFIX.sub("", text)).casefold()


# --- comparing -----------------------------------------------------------------------------------


def compare(recorded: RecordedResult, verdict: ActionVerdict) -> str:
    """The status of one call whose log recorded ``recorded`` (module docstring)."""
    if not recorded.executed:
        return NOT_EXECUTED
    if verdict.accepted is None or not verdict.executed:
        return NOT_REPLAYED
    return compare_result(recorded, verdict.logged or "", not verdict.accepted, verdict.volatile)


def compare_result(recorded: RecordedResult, replayed: str, replayed_error: bool, volatile: Volatile = ()) -> str:
    """``same``, ``same_verdict`` or ``differs``: a recorded result against a replayed one."""
    recorded_error = recorded.error
    if recorded.cut:
        same_content = hashlib.sha256(replayed.encode("utf-8")).hexdigest() == recorded.sha256
    elif recorded.content == replayed:  # the common case, without parsing either
        same_content = True
    elif (recorded_error if recorded_error is not None else replayed_error) and replayed_error:
        same_content = canonical_error(recorded.content) == canonical_error(replayed)
    else:
        same_content = canonical(recorded.content, volatile) == canonical(replayed, volatile)
    same_verdict = same_content if recorded_error is None else recorded_error == replayed_error
    if same_content and same_verdict:
        return SAME
    return SAME_VERDICT if same_verdict else DIFFERS


def _excerpt(text: str | None) -> str:
    text = " ".join((text or "").split())
    return f"“{text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + '…'}”"


def _where(verdict: ActionVerdict) -> str:
    call = verdict.action.call
    name = call.name if call and call.name else "no tool name"
    return f"call {verdict.action.index} ({name}, turn {verdict.action.turn})"


def _party_where(party: PartyCall, k: int) -> str:
    return f"{party.party} call {k + 1} ({party.call.name or 'no tool name'}, before turn {party.turn})"


def party_statuses(ep: EpisodeResult) -> tuple[str | None, ...]:
    """The status of each of another party's replayed calls (None: the log recorded no result)."""
    return tuple(None if p.recorded is None else NOT_EXECUTED if not p.recorded.executed
                 else compare_result(p.recorded, p.result, not p.accepted) for p in ep.party_calls)


@dataclass(frozen=True)
class RecordCheck:
    """One episode against its log: per-call statuses (by depth j; another party's calls in replay
    order), counts over both and the log issue."""

    statuses: dict[int, str]
    compared: int  # recorded results compared (the denominator of replay_agreement)
    reproduced: int  # of those, ``same``
    same_verdict: int  # of those, ``same`` or ``same_verdict``
    log_issue: str | None
    party: tuple[str | None, ...] = ()

    @property
    def replay_agreement(self) -> float | None:
        return self.reproduced / self.compared if self.compared else None


def _divergence(ep: EpisodeResult, statuses: dict[int, str], party: tuple[str | None, ...]) -> str | None:
    """The first divergence of replay from the record, in words: the agent's calls first, then
    another party's."""
    for v in ep.verdicts:
        status = statuses.get(v.action.index)
        if status not in DIVERGED:
            continue
        recorded = v.action.recorded
        assert recorded is not None
        if status == NOT_REPLAYED:
            return f"{_where(v)}: the log shows it ran ({_excerpt(recorded.content)}); replay could not run it"
        kind = "ok/error verdict agrees, content differs" if status == SAME_VERDICT else "ok/error verdict differs"
        return f"{_where(v)}: recorded {_excerpt(recorded.content)}, replayed {_excerpt(v.logged)} ({kind})"
    for t, s, result in unmatched_results(ep.rollout)[:1]:
        return (f"turn {t}, step {s}: the log ran a call this reading of the step did not find "
                f"(recorded result {_excerpt(result.content)})")
    for k, (call, status) in enumerate(zip(ep.party_calls, party, strict=True)):
        if status in DIVERGED:
            assert call.recorded is not None
            kind = "ok/error verdict agrees, content differs" if status == SAME_VERDICT else "ok/error verdict differs"
            return (f"{_party_where(call, k)}: recorded {_excerpt(call.recorded.content)}, replayed "
                    f"{_excerpt(call.result)} ({kind})")
    return None


def _issues(ep: EpisodeResult, statuses: dict[int, str], party: tuple[str | None, ...]) -> Iterator[str]:
    recorded = ep.rollout.recorded
    assert recorded is not None
    for issue in recorded.issues:
        yield issue.text()
    if recorded.y is not None and ep.Y is not None and ep.Y != recorded.y:
        for issue in recorded.if_y_differs:  # the importer's explanation of this very disagreement
            yield issue.text()
    skipped = [v for v in ep.verdicts if statuses.get(v.action.index) == NOT_EXECUTED]
    if skipped:
        yield LogIssue(NOT_EXECUTED_CODE, f"{len(skipped)} call(s) the log shows never ran, not executed in replay "
                                          f"either (first: {_where(skipped[0])})").text()
    divergence = _divergence(ep, statuses, party)
    if divergence is not None:
        yield LogIssue(REPLAY_DIVERGED, divergence).text()


def check_record(ep: EpisodeResult) -> RecordCheck | None:
    """The episode against its log's record; None for a rollout that carries no record."""
    recorded = ep.rollout.recorded
    if recorded is None:
        return None
    statuses = {v.action.index: compare(v.action.recorded, v) for v in ep.verdicts
                if v.action.recorded is not None and not v.action.terminal}
    party = party_statuses(ep)
    every = [*statuses.values(), *(s for s in party if s is not None)]
    unmatched = len(unmatched_results(ep.rollout))
    compared = sum(s != NOT_EXECUTED for s in every) + unmatched
    reproduced = sum(s == SAME for s in every)
    same_verdict = sum(s in (SAME, SAME_VERDICT) for s in every)
    issues = list(_issues(ep, statuses, party))
    if not issues and recorded.y is not None and ep.Y is not None and ep.Y != recorded.y:
        said = recorded.verdict or f"Y = {recorded.y}"
        if recorded.undecoded_count:  # the reading missed calls: the likeliest cause
            t, s, why = recorded.undecoded[0]
            issues.append(LogIssue(UNDECODED, f"the log records {said}, replay gives Y = {ep.Y} on a reading that "
                                              f"could not decode {recorded.undecoded_count} step(s) as calls "
                                              f"(first: turn {t}, step {s}: {why})").text())
        else:
            issues.append(LogIssue(Y_DIFFERS, f"the log records {said}, replay gives Y = {ep.Y}"
                                              + (f" ({ep.y_detail})" if ep.y_detail else "")).text())
    return RecordCheck(statuses, compared, reproduced, same_verdict, "; ".join(issues) or None, party)
