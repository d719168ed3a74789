"""The kit every log importer reads with: a format's importer is a small dialect that says where its
calls, replies and stops are, and reads them with these.

* :class:`BadRecord` — one record of a log that cannot be read, with why and where; each format names
  its own subclass (the name shows in the quarantine reasons written today: ``BadSimulation: …``);
* :func:`object_at`, :func:`value_at`, :func:`expect`, :func:`whole_number` — untrusted JSON read as
  typed values: leniently (an empty object where a reading may do without one) or strictly (the
  format's located error);
* :class:`CallLedger` — calls awaiting their replies, by call id and by position among the calls:
  a reply answers the nearest earlier unanswered call with its id (ids may repeat within a log);
  the ledger keeps the recorded results and attaches them to the steps (:meth:`CallLedger.attach`);
* :class:`TurnLog` — the turns as a reader finds them, and :class:`MessageLoop`, the one loop every
  message-shaped log is read with: a format's dialect says what kind each message is and what each
  kind does (where its calls, replies and stops are), the loop walks the messages and refuses what
  no kind names;
* :data:`CHAT_ROLES`, :func:`message_roles` — who wrote each message of a chat-shaped log
  (:attr:`~.records.Rollout.message_roles`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .calls import ToolCall
from .records import RecordedResult, Step

T = TypeVar("T")

__all__ = ["CHAT_ROLES", "BadRecord", "CallLedger", "MessageLoop", "OpenCall", "TurnLog", "chat_role", "expect",
           "message_roles", "numbered", "object_at", "value_at", "whole_number"]


class BadRecord(ValueError):
    """A record of a log that cannot be read: ``reason``, and ``where`` in the record (a message, a
    field; None for the record as a whole). The text is ``"<where>: <reason>"``; quarantine summaries
    count records by ``reason``. Each format raises its own subclass, whose name its quarantine
    reasons show."""

    def __init__(self, reason: str, where: str | None = None) -> None:
        super().__init__(f"{where}: {reason}" if where else reason)
        self.reason = reason
        self.where = where


# --- untrusted JSON -------------------------------------------------------------------------------


def value_at(value: Any, *path: str) -> Any:
    """The value at ``path`` (keys of nested JSON objects) inside ``value``; None where a step is
    missing or is not an object."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def object_at(value: Any, *path: str) -> Mapping[str, Any]:
    """The JSON object at ``path`` inside ``value`` (:func:`value_at`); an empty one where there is
    none — for what a reading can do without."""
    found = value_at(value, *path)
    return found if isinstance(found, dict) else {}


def expect(value: Any, kind: type[T], message: str, error: type[Exception] = BadRecord) -> T:
    """``value`` where it is a ``kind`` (a bool is no number), else ``error(message)``."""
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise error(message)
    return value


def whole_number(value: Any, what: str, error: type[Exception] = BadRecord, default: int | None = None) -> int:
    """``value`` as a whole number from 0 (below 2**31: a trial, a task index), ``default`` where it
    is null and there is one, else ``error``."""
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise error(f"{what} must be a whole number from 0, got {value!r}")
    return value


# --- calls and their replies ----------------------------------------------------------------------


@dataclass(frozen=True)
class OpenCall:
    """A call the ledger opened: the call, and its position among the ledger's calls (from 0)."""

    call: ToolCall
    position: int


class CallLedger:
    """The calls of one conversation and their replies.

    :meth:`open` adds a call (keyed by its call id, ``""`` where it has none); :meth:`answer` takes
    a reply to an id: the nearest earlier call with that id still waiting — calls await replies only
    from the latest agent message, whose replies come in call order, so the first one still waiting —
    and keeps the recorded result by the call's position; :meth:`attach` gives the steps their
    calls' results."""

    def __init__(self) -> None:
        self._waiting: dict[Any, list[OpenCall]] = {}
        self._ids: set[Any] = set()
        self.calls: list[OpenCall] = []  # every call opened, in order
        self.results: dict[int, RecordedResult] = {}

    def open(self, call: ToolCall) -> OpenCall:
        opened = OpenCall(call, len(self.calls))
        key = call.call_id or ""
        self._waiting.setdefault(key, []).append(opened)
        self._ids.add(key)
        self.calls.append(opened)
        return opened

    def waits(self, call_id: Any) -> bool:
        """Whether a call with this id awaits its reply."""
        return bool(self._waiting.get(call_id))

    def knows(self, call_id: Any) -> bool:
        """Whether a call with this id was opened, answered or not."""
        return call_id in self._ids

    def answer(self, call_id: Any, result: RecordedResult | None = None) -> OpenCall | None:
        """The nearest earlier unanswered call with ``call_id``, now answered with ``result`` (kept
        by its position); None where no such call waits."""
        waiting = self._waiting.get(call_id)
        if not waiting:
            return None
        opened = waiting.pop(0)
        if not waiting:
            del self._waiting[call_id]
        if result is not None:
            self.results[opened.position] = result
        return opened

    def answer_oldest(self, result: RecordedResult | None = None) -> OpenCall | None:
        """The earliest call still waiting, whatever its id, answered (a log whose replies name no call)."""
        oldest = min(self.waiting(), key=lambda c: c.position, default=None)
        return None if oldest is None else self.answer(oldest.call.call_id or "", result)

    def record(self, position: int, result: RecordedResult) -> None:
        """Keep a result for the call at ``position`` (one the log recorded outside a reply)."""
        self.results[position] = result

    def waiting(self) -> list[OpenCall]:
        """The calls without a reply, in the order they were opened."""
        return sorted((c for calls in self._waiting.values() for c in calls), key=lambda c: c.position)

    def unanswered_ids(self) -> list[str]:
        """The ids of the calls without a reply, sorted (as errors name them)."""
        return sorted(self._waiting)

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def attach(self, turns: Iterable[Iterable[Step]], replaced: Mapping[int, ToolCall] | None = None
               ) -> tuple[tuple[Step, ...], ...]:
        """The turns with each call's recorded result (None where there is none), the calls counted
        in the order the ledger opened them; ``replaced``: calls read otherwise, by position."""
        replaced = replaced or {}
        out, position = [], 0
        for turn in turns:
            steps = []
            for step in turn:
                if step.calls:
                    positions = range(position, position + len(step.calls))
                    calls = tuple(replaced.get(p, c) for p, c in zip(positions, step.calls, strict=True))
                    step = dataclasses.replace(step, calls=calls, results=tuple(self.results.get(p) for p in positions))
                    position += len(step.calls)
                steps.append(step)
            out.append(tuple(steps))
        return tuple(out)


# --- turns ---------------------------------------------------------------------------------------


class TurnLog:
    """The turns of a conversation being read, for an importer's reader to build on: a user message
    opens a turn (its text kept in :attr:`user_turns`), and the agent's steps until the next one are
    that turn's. Each format says where its user messages and steps are, and what to do with an agent
    that speaks first (:meth:`add_step`'s ``opening``, or refuse the record)."""

    def __init__(self) -> None:
        self.turns: list[list[Step]] = []
        self.user_turns: list[str] = []

    def open_turn(self, user_text: str | None) -> None:
        """A turn a user message with ``user_text`` opens (None: a turn no user opened, whose text is
        not kept: a run without a user)."""
        self.turns.append([])
        if user_text is not None:
            self.user_turns.append(user_text)

    def add_step(self, step: Step, opening: str | None = "") -> None:
        """``step`` in the current turn; before any turn, in a first turn it opens, as :meth:`open_turn`
        with ``opening`` (the agent spoke before the user)."""
        if not self.turns:
            self.open_turn(opening)
        self.turns[-1].append(step)


def numbered(messages: Iterable[Any], name: str) -> Iterable[tuple[int, str, Any]]:
    """Each message with its position and where errors say it is (``name[k]``)."""
    return ((k, f"{name}[{k}]", m) for k, m in enumerate(messages))


# What a dialect does with one message: (the reading, the message, its position, where it is).
Handler = Callable[[Any, Mapping[str, Any], int, str], None]


class MessageLoop(TurnLog):
    """The loop every message-shaped log is read with. :meth:`read` walks the messages in order; each
    must be a JSON object (else the dialect's :attr:`error`, located), is checked by :meth:`before`, and
    goes to the handler of its :meth:`kind`; a kind with no handler goes to :meth:`unknown` (refused);
    :meth:`end` checks what the whole log says once it is read.

    A format's dialect is a subclass that says only that: its :attr:`handlers` (kind → a function of
    the class: where the user speaks, the agent acts or speaks, a call is answered, the user stops),
    and, where its format has them, its checks before a message and at the end."""

    error: ClassVar[type[BadRecord]] = BadRecord
    handlers: ClassVar[Mapping[Any, Handler]] = {}

    def read(self, messages: Iterable[tuple[int, str, Any]]) -> None:
        """Read ``messages``: (position, where, message) each (:func:`numbered`)."""
        for position, where, message in messages:
            if not isinstance(message, dict):
                raise self.error("a message must be an object", where)
            kind = self.kind(message)
            self.before(kind, message, where)
            try:
                handler = self.handlers.get(kind)
            except TypeError:  # a kind no dialect names: a list or an object where a role should be
                handler = None
            if handler is None:
                self.unknown(kind, message, where)
            else:
                handler(self, message, position, where)
        self.end()

    def kind(self, message: Mapping[str, Any]) -> Any:
        """What kind of message this is (its ``role``, where the dialect says nothing else)."""
        return message.get("role")

    def before(self, kind: Any, message: Mapping[str, Any], where: str) -> None:
        """Checks before any message is handled (none, where the dialect has none)."""

    def unknown(self, kind: Any, message: Mapping[str, Any], where: str) -> None:
        """A message of a kind the dialect does not read: refused."""
        raise self.error(f"unknown role {kind!r}", where)

    def end(self) -> None:
        """Checks once every message is read (none, where the dialect has none)."""

    def skip(self, message: Mapping[str, Any], position: int, where: str) -> None:
        """A message with nothing to read (a system prompt): a handler for the kinds that say nothing."""


# --- who wrote a message --------------------------------------------------------------------------

# The roles of chat-shaped logs (OpenAI's, tau2's, Inspect's) as Rollout.message_roles names them.
CHAT_ROLES: Mapping[str, str] = {"system": "system", "user": "user", "assistant": "agent", "tool": "tool"}


def chat_role(role: Any, roles: Mapping[str, str] = CHAT_ROLES) -> str:
    """Who wrote a message with this role (``other`` for a role the log's format does not have, a list
    or an object where a role should be included)."""
    try:
        return roles.get(role, "other")
    except TypeError:  # unhashable: no role of any format
        return "other"


def message_roles(messages: Sequence[Any], roles: Mapping[str, str] = CHAT_ROLES, key: str = "role") -> tuple[str, ...]:
    """Who wrote each of a chat-shaped log's messages (JSON objects), by position."""
    return tuple(chat_role(m.get(key) if isinstance(m, dict) else None, roles) for m in messages)
