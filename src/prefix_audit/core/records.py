"""The rollout record: one JSON object per line, shared by every rollout source.

A rollout is a list of user turns; a turn is a list of model steps (one model response each); a
step holds the tool calls it emitted and optionally its text. This shape covers BFCL result files
(turn → step → decoded calls), half-duplex conversations (τ-bench, ToolSandbox) and our own agents.

Calls are stored either as ``{"raw": "f(a=1)"}`` — text parsed with :mod:`ast` at scoring time,
never evaluated — or as structured ``{"name": ..., "arguments": {...}}``.

The scored action sequence is every call in order plus, when the rollout ends with a text step
that has no call, one terminal no-tool action (docs/definitions.md#actions); a rollout with no call and no text at all
is one empty terminal action. A rollout with ``infra_error`` set has no action: the model call
failed before the model emitted anything.

An imported rollout also carries what its log recorded, to check the audit against (docs/definitions.md#reading-rules,
"the log checked against itself"): per step the tool results the log recorded for its calls
(:class:`RecordedResult`, aligned with the calls; ``None`` when the log records none), and per
rollout the log's own verdict, the faults of the log its importer found and the steps its decoder
could not read (:class:`Recorded`). Generated rollouts carry neither. Those records and their JSON
form are :mod:`.recorded`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from .calls import ToolCall, looks_like_calls, parse_call_string, structured_call
from .decode import BadLine, DecodeError, JsonLine, count, iter_json_lines, seconds
from .recorded import (
    MAX_ISSUE_CHARS,
    MAX_RECORDED_CHARS,
    LogIssue,
    Recorded,
    RecordedResult,
    RecordError,
    recorded_from_json,
    result_from_json,
)

# What a log recorded lives in :mod:`.recorded`; it is named here too, beside the record that carries it.
__all__ = ["MAX_ISSUE_CHARS", "MAX_RECORDED_CHARS", "MESSAGE_ROLES", "BadLine", "Located", "LogIssue", "Recorded",
           "RecordedResult", "Rollout", "RecordError", "Step", "Usage",
           "ModelNamed", "NamedBy", "ScoredOn", "UNKNOWN_MODEL", "model_in_log",
           "PARTY_CALLS_KEY", "actions_of", "agent_texts", "call_from_json", "call_like_text_steps", "call_steps",
           "call_to_json", "dumps", "read_rollouts", "rollout_from_json",
           "party_results", "result_from_json", "rollout_id_for", "unmatched_results"]

SCHEMA_VERSION = 1
REQUIRED_FIELDS = ("dataset", "task_id", "model", "method", "rollout_id", "turns")


def call_like_text_steps(turns: Sequence[Sequence[Step]]) -> list[tuple[int, int, str]]:
    """The text steps without a call whose text looks like an attempted call (the importer's reading
    found none in it): ``(turn, step, reason)``, for :class:`Recorded`'s undecodable steps."""
    return [(t, s, "the text looks like a call but this reading found none") for t, turn in enumerate(turns)
            for s, step in enumerate(turn) if not step.calls and step.text and looks_like_calls(step.text)]


@dataclass(frozen=True)
class Step:
    """One model response: the calls it emitted, its text, and — for an imported step whose log
    records them — the tool results the log recorded, aligned with ``calls`` (None for a call it
    recorded nothing for; a result beyond the calls is one the log executed for a call this
    reading of the step did not find)."""

    calls: tuple[ToolCall, ...]
    text: str | None = None
    results: tuple[RecordedResult | None, ...] | None = None  # None in it: nothing recorded for that call
    # Where the step sits in its log: the 0-based position of its message among the log's messages
    # (:attr:`Rollout.message_roles`), so a label keyed by position lands on it; None for a log
    # without messages (BFCL's result files: there the step is named by turn and step) and for
    # generated rollouts.
    message: int | None = None
    # Where each call sits, for a log that writes each call as a message of its own (ToolSandbox):
    # aligned with ``calls``; None where the calls are all in the step's ``message``.
    call_messages: tuple[int, ...] | None = None


AGENT_ROLES = ("planner", "verifier", "revision", "executor")
# Who wrote a message of a log (:attr:`Rollout.message_roles`): the benchmark's system prompt, the
# user (or the user simulator), the agent, a tool's reply; "other" for anything else a log carries.
MESSAGE_ROLES = ("system", "user", "agent", "tool", "other")
OTHER_ROLES = ("user_simulator", "evaluator")


@dataclass(frozen=True)
class Retry:
    """A failed attempt of a model call: what went wrong, how long it took, how long we waited after."""

    error: str  # e.g. "429 RateLimitError", "APIConnectionError"
    elapsed_s: float
    wait_s: float

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "elapsed_s": self.elapsed_s, "wait_s": self.wait_s}


@dataclass(frozen=True)
class Usage:
    """Accounting of one model call: who made it, tokens, client-side latency, how it was sent.

    ``latency_s`` is the successful attempt's (the paper's client-observed latency); ``wall_s`` the
    call's whole wall time with failed attempts and the waits between them (None: no retry, the
    same as ``latency_s``). ``estimated`` marks tokens counted locally because the provider reported
    none. ``params`` are the generation parameters as sent (None for a backend that sends none).
    Agent tokens are input + output over the agent roles; reasoning tokens are already inside
    output and are kept only for reference (docs/definitions.md#accounting).
    """

    role: str
    input_tokens: int
    output_tokens: int
    latency_s: float | None  # None: the log recorded no latency for this call
    reasoning_tokens: int | None = None
    retries: tuple[Retry, ...] = ()
    wall_s: float | None = None
    estimated: bool = False
    params: dict[str, Any] | None = None

    @property
    def attempts(self) -> int:
        return len(self.retries) + 1

    @property
    def total_s(self) -> float | None:
        """Wall time of the call with its retries and waits."""
        return self.latency_s if self.wall_s is None else self.wall_s

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "input_tokens": self.input_tokens,
                               "output_tokens": self.output_tokens, "latency_s": self.latency_s}
        if self.reasoning_tokens is not None:
            out["reasoning_tokens"] = self.reasoning_tokens
        # A call that went over the network records all of it; the simulated model's, none.
        if self.retries or self.wall_s is not None or self.estimated:
            out |= {"attempts": self.attempts, "retries": [r.to_json() for r in self.retries],
                    "wall_s": self.total_s, "estimated": self.estimated}
        if self.params is not None:
            out["params"] = self.params
        return out


@dataclass(frozen=True)
class Rollout:
    """One rollout: who ran which task how (the six fields every rollout has, in this order), its turns of
    steps, and — named, never by position — what else its source knows of it."""

    dataset: str
    task_id: str
    model: str
    method: str
    rollout_id: str
    turns: tuple[tuple[Step, ...], ...]
    _: KW_ONLY
    source: str = "unknown"
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    usage: tuple[Usage, ...] = ()
    trial: int = 0  # which repetition of the task this is (0-based), in the block
    # Why the log holds no observed action for this entry because the model call itself failed
    # (docs/definitions.md#infrastructure-failures): such an entry is an episode with T/FED null.
    infra_error: str | None = None
    # Why the log's accounting of this entry (tokens, latency) was unusable and left out; the entry
    # itself still counts (its accounting columns are null).
    accounting_error: str | None = None
    # What the log recorded about the entry (its verdict, faults, undecodable steps); None for a
    # generated rollout or a log that records nothing.
    recorded: Recorded | None = None
    # The log's messages by position, as who wrote each (:data:`MESSAGE_ROLES`), for the steps'
    # ``message`` and for labels on the messages between actions; empty for a log without messages.
    message_roles: tuple[str, ...] = ()

    @property
    def final_text(self) -> str | None:
        """Text of the terminal no-tool action, if the rollout ends with one."""
        for turn in reversed(self.turns):
            if turn:
                last = turn[-1]
                return last.text if not last.calls and last.text is not None else None
        return None


@dataclass(frozen=True)
class Action:
    """One scored action: a tool call, or the terminal no-tool action (``call is None``)."""

    index: int  # 1-based depth j
    turn: int
    step: int
    call: ToolCall | None
    text: str | None = None
    # What the log recorded as this call's result (None: nothing; ``Step.results`` is None or short).
    recorded: RecordedResult | None = None
    message: int | None = None  # its step's position among the log's messages (:attr:`Step.message`)

    @property
    def terminal(self) -> bool:
        return self.call is None


def _final_step(rollout: Rollout) -> tuple[int, int]:
    """Where the rollout's last step is (turn, step): the terminal action's step, when it ends with text."""
    last_turn = max(t for t, turn in enumerate(rollout.turns) if turn)
    return last_turn, len(rollout.turns[last_turn]) - 1


def agent_texts(rollout: Rollout) -> list[tuple[int, int, str]]:
    """The agent's text that is no action, as (turn, step, text) in order: what it told the user between
    actions (a text step that does not end the rollout) and what it wrote beside its calls — every
    step's text but the terminal action's (:func:`actions_of`) and blank ones."""
    terminal = _final_step(rollout) if rollout.final_text is not None else None
    return [(t, s, step.text) for t, turn in enumerate(rollout.turns) for s, step in enumerate(turn)
            if step.text and step.text.strip() and (t, s) != terminal]


def actions_of(rollout: Rollout) -> list[Action]:
    actions: list[Action] = []
    for t, turn in enumerate(rollout.turns):
        for s, step in enumerate(turn):
            results = step.results or ()
            for i, call in enumerate(step.calls):
                actions.append(Action(len(actions) + 1, t, s, call, recorded=results[i] if i < len(results) else None,
                                      message=step.call_messages[i] if step.call_messages else step.message))
    final = rollout.final_text
    if final is not None:
        last_turn, last_step = _final_step(rollout)
        actions.append(Action(len(actions) + 1, last_turn, last_step, None, final,
                              message=rollout.turns[last_turn][last_step].message))
    elif not actions and rollout.infra_error is None:
        # The model answered, with nothing: one empty terminal no-tool action (docs/definitions.md#actions), in the
        # last turn the log has (the first when it has none).
        last_turn = max(len(rollout.turns) - 1, 0)
        last_step = max(len(rollout.turns[last_turn]) - 1, 0) if rollout.turns else 0
        actions.append(Action(1, last_turn, last_step, None, ""))
    return actions


def without_action(rollout: Rollout, action: Action) -> Rollout:
    """``rollout`` without one of its calls (a step left without calls or text goes too), the rest as it was."""
    turns = [list(turn) for turn in rollout.turns]
    step = turns[action.turn][action.step]
    at = next(i for i, call in enumerate(step.calls) if call is action.call)
    calls = step.calls[:at] + step.calls[at + 1:]
    results = None if step.results is None else step.results[:at] + step.results[at + 1:]
    if calls or step.text:
        turns[action.turn][action.step] = replace(step, calls=calls, results=results)
    else:
        del turns[action.turn][action.step]
    return replace(rollout, turns=tuple(map(tuple, turns)))


def call_steps(rollout: Rollout) -> tuple[int, int]:
    """Decode health of an imported rollout: (steps with a call or that its decoder could not read,
    of those the undecodable ones) — (0, 0) for a rollout without a record."""
    if rollout.recorded is None:
        return 0, 0
    listed = {(t, s) for t, s, _ in rollout.recorded.undecoded}
    readable = sum(bool(step.calls) and (t, s) not in listed for t, turn in enumerate(rollout.turns)
                   for s, step in enumerate(turn))
    return readable + rollout.recorded.undecoded_count, rollout.recorded.undecoded_count


# The calls of another party than the agent a rollout carries (a benchmark whose user acts on the
# environment: τ² telecom's user on their phone), in ``meta``: a list of objects with the turn they came
# before, the call (name, arguments, id) and what the log recorded (``result``). They are replayed and
# checked against the log, never scored as actions; the benchmark's adapter reads them.
PARTY_CALLS_KEY = "user_calls"


def party_results(rollout: Rollout) -> int:
    """How many of another party's calls (:data:`PARTY_CALLS_KEY`) have a result the log recorded."""
    entries = rollout.meta.get(PARTY_CALLS_KEY)
    return sum(isinstance(e, dict) and e.get("result") is not None for e in entries) \
        if isinstance(entries, list) else 0


def unmatched_results(rollout: Rollout) -> list[tuple[int, int, RecordedResult]]:
    """Recorded results beyond a step's calls: the log executed calls this reading of the step did
    not find (``(turn, step, result)``)."""
    return [(t, s, result) for t, turn in enumerate(rollout.turns) for s, step in enumerate(turn)
            for result in (step.results or ())[len(step.calls):] if result is not None]


def rollout_id_for(*parts: object) -> str:
    """Deterministic id from the parts that make a rollout unique."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
    return digest[:16]


# --- JSON (de)serialisation -------------------------------------------------------------------


def call_to_json(call: ToolCall) -> dict[str, Any]:
    """A call as a rollout record stores it: ``raw`` text, or ``name`` and ``arguments`` (unparseable
    argument text kept as emitted), and its ``id``."""
    if not call.structured:
        out: dict[str, Any] = {"raw": call.raw if call.raw is not None else call.render()}
    else:
        # Keep unparseable JSON argument text as emitted, so rescoring sees the same input.
        arguments: Any = call.raw if call.parse_error is not None and call.raw is not None else call.kwargs
        out = {"name": call.name, "arguments": arguments}
    if call.call_id is not None:
        out["id"] = call.call_id
    return out


def rollout_to_json(rollout: Rollout) -> dict[str, Any]:
    turns = [
        [{"calls": [call_to_json(c) for c in step.calls], **({"text": step.text} if step.text is not None else {}),
          **({"results": [r.to_json() if r is not None else None for r in step.results]}
             if step.results is not None else {}),
          **({"message": step.message} if step.message is not None else {}),
          **({"call_messages": list(step.call_messages)} if step.call_messages is not None else {})}
         for step in turn]
        for turn in rollout.turns
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "dataset": rollout.dataset,
        "task_id": rollout.task_id,
        "model": rollout.model,
        "method": rollout.method,
        "rollout_id": rollout.rollout_id,
        "trial": rollout.trial,
        "source": rollout.source,
        "turns": turns,
        "meta": rollout.meta,
        **({"usage": [u.to_json() for u in rollout.usage]} if rollout.usage else {}),
        **({"infra_error": rollout.infra_error} if rollout.infra_error is not None else {}),
        **({"accounting_error": rollout.accounting_error} if rollout.accounting_error is not None else {}),
        **({"recorded": rollout.recorded.to_json()} if rollout.recorded is not None else {}),
        **({"message_roles": list(rollout.message_roles)} if rollout.message_roles else {}),
        **rollout.extra,
    }


def dumps(rollout: Rollout) -> str:
    return json.dumps(rollout_to_json(rollout), ensure_ascii=False, sort_keys=False, separators=(",", ":"))


def call_from_json(obj: Any, where: str) -> ToolCall:
    """A call as :func:`call_to_json` writes it (:class:`RecordError` where it is not)."""
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: a call must be an object, got {type(obj).__name__}")
    call_id = obj.get("id")
    if "raw" in obj:
        if not isinstance(obj["raw"], str):
            raise RecordError(f"{where}: 'raw' must be a string")
        call = parse_call_string(obj["raw"])
        return ToolCall(call.name, call.args, call.kwargs, call.raw, call.parse_error, call_id)
    # A structured call without a usable name is still an action the model emitted: it is
    # scored (as a schema failure), not quarantined.
    if "name" in obj:
        return structured_call(obj["name"], obj.get("arguments"), call_id)
    raise RecordError(f"{where}: a call needs 'raw' or 'name'")


def _results_from_json(items: Any, where: str) -> tuple[RecordedResult | None, ...] | None:
    if items is None:
        return None
    if not isinstance(items, list):
        raise RecordError(f"{where} must be a list of recorded results (or nulls)")
    return tuple(None if item is None else result_from_json(item, f"{where}[{i}]") for i, item in enumerate(items))


def _retries_from_json(items: Any, where: str) -> tuple[Retry, ...]:
    if not isinstance(items, list):
        raise RecordError(f"{where} must be a list")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("error"), str):
            raise RecordError(f"{where}[{i}] must be an object with an 'error' string")
        out.append(Retry(item["error"], seconds(item.get("elapsed_s"), f"{where}[{i}].elapsed_s"),
                         seconds(item.get("wait_s"), f"{where}[{i}].wait_s")))
    return tuple(out)


def _usage_from_json(items: Any) -> tuple[Usage, ...]:
    if not isinstance(items, list):
        raise RecordError("field 'usage' must be a list of call records")
    out = []
    for i, item in enumerate(items):
        where = f"usage[{i}]"
        if not isinstance(item, dict):
            raise RecordError(f"{where} must be an object")
        role = item.get("role")
        if role not in AGENT_ROLES + OTHER_ROLES:
            raise RecordError(f"{where}.role must be one of {', '.join(AGENT_ROLES + OTHER_ROLES)}, got {role!r}")
        # Present and null: the log recorded no latency for the call (absent is an error).
        recorded = "latency_s" in item and item["latency_s"] is None
        latency = None if recorded else seconds(item.get("latency_s"), f"{where}.latency_s")
        reasoning = item.get("reasoning_tokens")
        retries = _retries_from_json(item.get("retries", []), f"{where}.retries")
        if "attempts" in item and item["attempts"] != len(retries) + 1:
            raise RecordError(f"{where}.attempts must be the retries plus one ({len(retries) + 1}), "
                              f"got {item['attempts']!r}")
        wall = item.get("wall_s")
        wall = None if wall is None else seconds(wall, f"{where}.wall_s")
        estimated = item.get("estimated", False)
        if not isinstance(estimated, bool):
            raise RecordError(f"{where}.estimated must be true or false, got {estimated!r}")
        params = item.get("params")
        if params is not None and not isinstance(params, dict):
            raise RecordError(f"{where}.params must be an object")
        out.append(Usage(role, count(item.get("input_tokens"), f"{where}.input_tokens"),
                         count(item.get("output_tokens"), f"{where}.output_tokens"), latency,
                         None if reasoning is None else count(reasoning, f"{where}.reasoning_tokens"),
                         retries, wall, estimated, params))
    return tuple(out)


def rollout_from_json(obj: Any) -> Rollout:
    """Validate one decoded JSON line; raise :class:`RecordError` naming the bad field."""
    obj = _record_object(obj)
    roles = obj.get("message_roles", [])
    if not isinstance(roles, list) or not all(r in MESSAGE_ROLES for r in roles):
        raise RecordError(f"field 'message_roles' must be a list of {', '.join(MESSAGE_ROLES)}")
    turns = tuple(_turn_from_json(turn, f"turns[{t}]", roles) for t, turn in enumerate(obj["turns"]))
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise RecordError("field 'meta' must be an object")
    accounting_error = obj.get("accounting_error")
    if accounting_error is not None and not isinstance(accounting_error, str):
        raise RecordError("field 'accounting_error' must be a string")
    try:
        usage = _usage_from_json(obj.get("usage", []))
    except DecodeError as exc:  # bad accounting costs the accounting, not the entry
        usage, accounting_error = (), str(exc)
    trial = obj.get("trial", 0)
    if isinstance(trial, bool) or not isinstance(trial, int) or not 0 <= trial < 2**31:
        raise RecordError(f"field 'trial' must be a whole number from 0, got {trial!r}")
    infra_error = _infra_error_from_json(obj.get("infra_error"), turns)
    recorded = recorded_from_json(obj.get("recorded"))
    known = {*REQUIRED_FIELDS, "schema_version", "source", "meta", "usage", "trial", "infra_error", "accounting_error",
             "recorded", "message_roles"}
    extra = {k: v for k, v in obj.items() if k not in known}
    return Rollout(obj["dataset"], obj["task_id"], obj["model"], obj["method"], obj["rollout_id"], turns,
                   source=str(obj.get("source", "unknown")), meta=meta, extra=extra, usage=usage, trial=trial,
                   infra_error=infra_error, accounting_error=accounting_error, recorded=recorded,
                   message_roles=tuple(roles))


def _record_object(obj: Any) -> dict[str, Any]:
    """``obj`` where it is a record of this schema version with its required fields (the string ones
    non-empty, ``turns`` a list)."""
    if not isinstance(obj, dict):
        raise RecordError(f"record must be a JSON object, got {type(obj).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in obj]
    if missing:
        raise RecordError(f"missing field(s): {', '.join(missing)}")
    for name in REQUIRED_FIELDS[:-1]:
        if not isinstance(obj[name], str) or not obj[name]:
            raise RecordError(f"field '{name}' must be a non-empty string")
    version = obj.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise RecordError(f"unsupported schema_version {version!r} (this build reads {SCHEMA_VERSION})")
    if not isinstance(obj["turns"], list):
        raise RecordError("field 'turns' must be a list of turns")
    return obj


def _turn_from_json(turn: Any, where: str, roles: list[Any]) -> tuple[Step, ...]:
    if not isinstance(turn, list):
        raise RecordError(f"{where} must be a list of steps")
    return tuple(_step_from_json(step, f"{where}[{s}]", roles) for s, step in enumerate(turn))


def _step_from_json(step: Any, where: str, roles: list[Any]) -> Step:
    """A step; the message positions it names must be the agent's messages in the record's ``roles``."""
    if not isinstance(step, dict) or not isinstance(step.get("calls", []), list):
        raise RecordError(f"{where} must be an object with a 'calls' list")
    text = step.get("text")
    if text is not None and not isinstance(text, str):
        raise RecordError(f"{where}.text must be a string")
    calls = tuple(call_from_json(c, f"{where}.calls[{i}]") for i, c in enumerate(step.get("calls", [])))
    message, call_messages = step.get("message"), step.get("call_messages")
    if call_messages is not None and (not isinstance(call_messages, list) or len(call_messages) != len(calls)):
        raise RecordError(f"{where}.call_messages must list one message position per call")
    for position in [message, *(call_messages or [])]:
        if position is not None and (isinstance(position, bool) or not isinstance(position, int)
                                     or not 0 <= position < len(roles) or roles[position] != "agent"):
            raise RecordError(f"{where}: a message position must be one of the agent's messages in "
                              f"'message_roles', got {position!r}"[:200])
    return Step(calls, text, _results_from_json(step.get("results"), f"{where}.results"), message,
                tuple(call_messages) if call_messages is not None else None)


def _infra_error_from_json(infra_error: Any, turns: tuple[tuple[Step, ...], ...]) -> str | None:
    """A record's ``infra_error``: why its model call failed, on a record with no observed action."""
    if infra_error is not None and (not isinstance(infra_error, str) or not infra_error):
        raise RecordError("field 'infra_error' must be a non-empty string (why the model call failed)")
    if infra_error is not None and any(turns):
        raise RecordError("field 'infra_error' marks an entry with no observed action, but 'turns' holds steps")
    return infra_error


class NamedBy(StrEnum):
    """What of a log gave a rollout its model name."""

    FOLDER = "folder"  # a folder's name: the one holding the log, BFCL's result/<model>/, a run folder's
    FILE_NAME = "file name"
    LOG_FIELD = "log field"  # what the log (or its companion, BFCL's score file) records


UNKNOWN_MODEL = "unknown"  # the model name of rollouts whose log names no model (and --model gave none)


@dataclass(frozen=True)
class ModelNamed:
    """Where an importer took a rollout's model name from when ``--model`` gave none, said once per
    block: ``kind`` (a folder, the file name or a field of the log), ``said`` — what exactly, as the
    audit says it (``the folder name``) — and ``of``, the log (a file, a run folder) it is said of."""

    kind: NamedBy
    said: str
    of: str


def model_in_log(given: str | None, recorded: Any, field: str, log: str) -> tuple[str, ModelNamed | None]:
    """The model name of the rollouts of the log ``log`` and where it came from: ``given`` (``--model``;
    nothing to say), else what the log records in its ``field`` (``recorded``), else — the log records
    none (no non-empty string) — :data:`UNKNOWN_MODEL`, said as a stand-in."""
    if given:
        return given, None
    if isinstance(recorded, str) and recorded:
        return recorded, ModelNamed(NamedBy.LOG_FIELD, f"the model in {field}", log)
    return UNKNOWN_MODEL, ModelNamed(NamedBy.LOG_FIELD, f"a stand-in: no model in {field}", log)


@dataclass(frozen=True)
class ScoredOn:
    """The benchmark data a rollout was scored on where its log's name gives another version of the
    benchmark than its dataset's id (a ``BFCL_v4`` file in dataset ``bfcl_v3``), said once per block:
    the logs as their names give them (``named``), the data (``release``) and why the dataset's id
    stays (``note``)."""

    named: str
    release: str
    note: str


@dataclass(frozen=True)
class Located:
    """A rollout and the line it was read from, so later failures can still name their place; where
    the importer chose the rollout's model name, where from (``named_by``), and the data release it
    says with the block (``scored_on``)."""

    path: str
    line: int
    rollout: Rollout
    named_by: ModelNamed | None = None
    scored_on: ScoredOn | None = None


def read_rollouts(path: str | Path) -> Iterator[Located | BadLine]:
    """Yield every rollout of a JSONL file, or a :class:`BadLine` for each unusable line."""
    for item in iter_json_lines(path):
        yield item if isinstance(item, BadLine) else located_rollout(item)


def located_rollout(item: JsonLine) -> Located | BadLine:
    """A JSON line as the rollout it holds, or why it holds none."""
    try:
        return Located(item.path, item.line, rollout_from_json(item.value))
    except DecodeError as exc:
        obj = item.value
        rid = obj.get("rollout_id") if isinstance(obj, dict) else None
        return BadLine(item.path, item.line, str(exc), rid if isinstance(rid, str) else None, item.excerpt)
