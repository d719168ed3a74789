"""Dataset ``toolsandbox_recorded``: real ToolSandbox runs, replayed from their recorded outcomes.

ToolSandbox pins old libraries and cannot run in our environment, so an imported run is scored
on what ToolSandbox recorded (see :mod:`.importer`): per tool call (by
its tool-call id) the normalised exception text or the result, the scenario's allow and deny
lists, the user turns, and the object ids that recorded state transitions had removed before
each call. The session hands these to the generic checker:

* schema: tools outside the allow list (or on the deny list) are not exposed; ToolSandbox's
  interface errors (``TypeError``, ``NumberParseException``, range ``ValueError``, missing or
  unexpected arguments, "no search criteria / update information") become declared requirements
  and registered validators of the tool, learned from the run: a validator rejects exactly the
  argument value ToolSandbox rejected (validation there is a function of the arguments alone);
* dependency: person/message/reminder ids are references; an id is stale when a recorded state
  transition removed it before the call;
* precondition: the settings errors (``ConnectionError``, ``PermissionError``, "already enabled /
  disabled") recorded for the call about to execute;
* state-consistency: any other recorded exception (``NoDataError``, ``DuplicateError``, ...);
* information: a value the agent uses before the user turn that first states it.

Y is ToolSandbox's own verdict: similarity 1.0 (the raw similarities stay in the record's meta).
A terminal reply is always accepted (ToolSandbox has no notion of a rejected reply). A schema
error that names no argument and whose call has none falls back to state-consistency.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prefix_audit.core.records import actions_of
from prefix_audit.plugin import (
    Benchmark,
    Outcome,
    ReplaySession,
    Rollout,
    TaskFacts,
    ToolCall,
    ToolSpec,
    UnscorableRollout,
)
from prefix_audit.replay.values import mentions, scalars

from .validation import phone_number

DATASET = "toolsandbox_recorded"
RECORD_KEY = "toolsandbox"
SCORE_NAME = "similarity"  # ToolSandbox's own per-scenario score; its headline is the mean over scenarios
REFERENCE_PARAMS = frozenset({"person_id", "message_id", "reminder_id", "sender_person_id", "recipient_person_id"})

_ADDRESS_EXPR = re.compile(r"<(\w+) \[.*?\] at 0x[0-9a-fA-F]+>", re.DOTALL)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_CARETS = re.compile(r"^[ \t]*[\^~]+[ \t]*$\n?", re.MULTILINE)
_QUALIFIED = re.compile(r"^(?:[A-Za-z_][\w]*\.)+([A-Za-z_]\w*(?:Error|Exception|Warning)?):")


def normalize_exception(text: str) -> str:
    """Exception text without what varies between runs and Python versions: object addresses,
    traceback caret lines, and the module path of the exception class."""
    text = _ADDRESS_EXPR.sub(r"<\1 …>", text)
    text = _ADDRESS.sub("", text)
    text = _CARETS.sub("", text)
    return _QUALIFIED.sub(r"\1:", text.strip())


def exception_name(text: str) -> str:
    return text.split(":", 1)[0].strip()


_SCHEMA_VALUE_ERRORS = ("is smaller than its valid range", "is larger than its valid range",
                        "No search criteria are given", "No update information given")
_NAMED_PARAMETER = re.compile(r"Parameter '(\w+)'")
_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")
_MISSING = re.compile(r"missing \d+ required (?:positional |keyword-only )?arguments?: (.+)")


def error_category(error: str) -> str:
    """The taxonomy category of a recorded (normalised) ToolSandbox exception."""
    name = exception_name(error)
    if name in ("TypeError", "NumberParseException", "KeyError"):
        return "schema"
    if name in ("ConnectionError", "PermissionError"):
        return "precondition"
    if name == "ValueError":
        if any(marker in error for marker in _SCHEMA_VALUE_ERRORS):
            return "schema"
        if re.search(r"already (enabled|disabled)", error):
            return "precondition"
    return "state_consistency"


def harness_failed(call: ToolCall, error: str) -> bool:
    """Whether ToolSandbox's own harness failed the call: it runs ``<id>_parameters = {...}`` with the
    call's id, and an id that is no Python name (a hyphen, a dot) makes that code a SyntaxError before
    any tool runs."""
    return exception_name(error) == "SyntaxError" and not str(call.call_id).isidentifier()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _rejecting(table: dict[str, str]):
    """A validator that rejects exactly the values ToolSandbox rejected, with its message."""
    return lambda value: table.get(_canonical(value))


@dataclass
class _LearnedInterface:
    """What ToolSandbox's interface errors in this run reveal about one tool."""

    rejected: dict[str, dict[str, str]]  # parameter → canonical value → error text
    required: set[str]
    min_properties: int | None = None

    def spec(self, name: str) -> ToolSpec:
        schema: dict[str, Any] = {"type": "object"}
        if self.required:
            schema["required"] = sorted(self.required)
        if self.min_properties is not None:
            schema["minProperties"] = self.min_properties
        validators = {param: _rejecting(table) for param, table in self.rejected.items()}
        return ToolSpec(name, schema, "", (), REFERENCE_PARAMS, validators)

    def learn(self, arguments: Mapping[str, Any], error: str) -> None:
        if (m := _MISSING.search(error)) is not None:
            self.required |= set(re.findall(r"'(\w+)'", m.group(1)))
            return
        if "No search criteria are given" in error:
            self.min_properties = 1
            return
        if "No update information given" in error:
            self.min_properties = 2
            return
        named = _UNEXPECTED.search(error) or _NAMED_PARAMETER.search(error)
        if named and named.group(1) in arguments:
            params = [named.group(1)]
        elif exception_name(error) == "NumberParseException":  # the phone-number arguments that do not parse
            unparsed = [p for p, v in arguments.items() if isinstance(v, str) and phone_number(v)]
            params = [p for p in unparsed if "phone" in p] or unparsed or list(arguments)
        else:
            params = list(arguments)
        for p in params:
            self.rejected.setdefault(p, {})[_canonical(arguments[p])] = error


class RecordError(ValueError):
    pass


def _require(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if not isinstance(obj.get(key), kind):
        raise RecordError(f"{where}: '{key}' missing or not a {kind.__name__}")
    return obj[key]


@dataclass(frozen=True)
class RecordedCall:
    error: str | None
    result: Any
    gone: frozenset[str]


def _recorded_calls(record: dict[str, Any], where: str) -> dict[str, RecordedCall]:
    """The record's outcome of each call, by call id."""
    calls: dict[str, RecordedCall] = {}
    for cid, item in _require(record, "calls", dict, where).items():
        error = item.get("error") if isinstance(item, dict) else 0
        gone = item.get("gone", []) if isinstance(item, dict) else None
        if not (error is None or isinstance(error, str)) or not isinstance(gone, list):
            raise RecordError(f"{where}: call {cid!r} must have 'error' (string or null) and 'gone' (list)")
        calls[cid] = RecordedCall(error, item.get("result"), frozenset(map(str, gone)))
    return calls


def _run_meta(rollout: Rollout) -> tuple[dict[str, Any], float | None]:
    """The run's meta fields, and its similarity (None: not a number)."""
    meta = found if isinstance(found := rollout.meta.get(RECORD_KEY), dict) else {}
    similarity = meta.get("similarity")
    if isinstance(similarity, bool) or not isinstance(similarity, (int, float)):
        return meta, None
    return meta, float(similarity)


class RecordedRun:
    """The recorded facts of one imported scenario run, validated."""

    def __init__(self, rollout: Rollout) -> None:
        record = rollout.extra.get(RECORD_KEY)
        where = f"record field '{RECORD_KEY}'"
        if not isinstance(record, dict):
            raise RecordError(f"{where} is missing: not an imported ToolSandbox run")
        self.user_turns = tuple(_require(record, "user_turns", list, where))
        if not all(isinstance(t, str) for t in self.user_turns) or len(self.user_turns) < len(rollout.turns):
            raise RecordError(f"{where}: 'user_turns' must hold one text per rollout turn")
        allowed, denied = record.get("allowed"), record.get("denied")
        for key, value in (("allowed", allowed), ("denied", denied)):
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise RecordError(f"{where}: '{key}' must be null or a list of tool names")
        universe = set(_require(record, "tools", list, where)) | set(allowed or ()) | set(denied or ())
        self.calls = _recorded_calls(record, where)
        self.ordered: list[ToolCall] = []
        errors: list[str | None] = []  # the recorded error of each ordered call
        for action in actions_of(rollout):
            call = action.call
            if call is not None and call.well_formed:
                if call.call_id is None or call.call_id not in self.calls:
                    raise RecordError(f"tool call {call.call_id!r} ({call.name}) has no recorded outcome")
                self.ordered.append(call)
                errors.append(self.calls[call.call_id].error)
        # A tool that executed without ToolSandbox refusing it by name was available, even when the
        # run's import statement is missing.
        universe |= {c.name for c, error in zip(self.ordered, errors, strict=True)
                     if exception_name(error or "") != "KeyError"}
        self.exposed_names = sorted((universe if allowed is None else set(allowed)) - set(denied or ()))
        self.universe = universe
        meta, similarity = _run_meta(rollout)
        if similarity is None:
            raise RecordError(f"meta field '{RECORD_KEY}.similarity' must be a number")
        self.similarity = similarity
        self.detail = (f"ToolSandbox similarity {self.similarity:g} (milestone {meta.get('milestone_similarity')}, "
                       f"minefield {meta.get('minefield_similarity')})"
                       + (f"; aborted by {meta['exception_type']}" if meta.get("exception_type") else ""))
        self.interfaces: dict[str, _LearnedInterface] = {}
        for c, error in zip(self.ordered, errors, strict=True):
            if error is not None and error_category(error) == "schema" and exception_name(error) != "KeyError":
                self.interfaces.setdefault(c.name or "", _LearnedInterface({}, set())).learn(c.kwargs, error)

    def spec(self, name: str) -> ToolSpec:
        return self.interfaces.get(name, _LearnedInterface({}, set())).spec(name)


def _user_facts(run: RecordedRun) -> dict[Any, int]:
    """Values the agent used that the user first states in a later turn (turn > 0)."""
    facts: dict[Any, int] = {}
    for c in run.ordered:
        for value in scalars(list(c.kwargs.values())):
            if isinstance(value, str) and len(value) < 2 or value in facts:
                continue
            first = next((t for t, text in enumerate(run.user_turns) if mentions(text, value)), None)
            if first is not None and first > 0:
                facts[value] = first
    return facts


class RecordedSession(ReplaySession):
    def __init__(self, run: RecordedRun) -> None:
        self.run = run
        # ToolSandbox's user is a model playing the user: its messages as the log recorded them
        self.facts = TaskFacts(frozenset(), run.user_turns, _user_facts(run), user_source="simulated")
        self._specs = {name: run.spec(name) for name in run.exposed_names}
        self._next = 0  # position in run.ordered of the call about to execute
        self.y_detail: str | None = run.detail

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return self._specs

    def known_tool(self, name: str) -> ToolSpec | None:
        return self.run.spec(name) if name in self.run.universe else None

    def _current(self) -> RecordedCall:
        return self.run.calls[self.run.ordered[self._next].call_id]  # type: ignore[index]  # ordered: calls with ids

    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        error = self._current().error
        return [error] if error is not None and error_category(error) == "precondition" else []

    def is_stale(self, spec: ToolSpec, param: str, value: Any) -> bool:
        return value in self._current().gone

    def execute(self, call: ToolCall) -> Outcome:
        expected = self.run.ordered[self._next]
        if call.call_id != expected.call_id:
            raise UnscorableRollout(f"replay out of step with the recording at call {call.call_id!r}")
        recorded = self._current()
        self._next += 1
        if recorded.error is not None:
            return Outcome(False, error=recorded.error, harness=harness_failed(call, recorded.error))
        return Outcome(True, recorded.result)

    def dry_execute(self, call: ToolCall) -> Outcome:
        """A recorded outcome changes no state here: the same verdict, marked as not run."""
        return replace(self.execute(call), executed=False)

    def final_success(self) -> int:
        return int(self.run.similarity >= 1.0)


class RecordedToolSandboxBenchmark(Benchmark):
    """Every imported scenario is its own task: the record carries the facts (nothing to list,
    sample or generate)."""

    dataset = DATASET

    def task_ids(self) -> Sequence[str]:
        return ()

    def has_task(self, task_id: str) -> bool:
        return bool(task_id)

    def infra_error_success(self, rollout: Rollout) -> int | None:
        """ToolSandbox scores an aborted scenario by its similarity, like any other."""
        _, similarity = _run_meta(rollout)
        if similarity is None:
            raise UnscorableRollout(f"unusable ToolSandbox record: meta field '{RECORD_KEY}.similarity' "
                                    "must be a number")
        return int(similarity >= 1.0)

    def open_session(self, rollout: Rollout) -> RecordedSession:
        try:
            return RecordedSession(RecordedRun(rollout))
        except RecordError as exc:
            raise UnscorableRollout(f"unusable ToolSandbox record: {exc}") from None
