"""τ² telecom's conversation pieces: the user's own calls (on their phone) in a rollout record, the
reference conversation of a task's gold, and the users of live episodes — an offline one who carries
out the gold's user-side actions when asked (:class:`DeviceUser`) and tau2's user simulator with the
phone's tools behind a model (:class:`ToolModelUser`).

In telecom the user acts too. A rollout keeps the user's calls beside the agent's turns, in the
log's order, as ``meta["user_calls"]`` — a list of::

    {"turn": t, "name": "toggle_airplane_mode", "arguments": {}, "id": "call_7",
     "result": {"content": "...", "error": false}}        # result: what the log recorded, if anything

where ``t`` is the user turn the call came before: the user acts while they hold the floor, between
the agent's last message and their own next one, so before the agent's steps of turn ``t``; ``t`` =
the number of turns is after the last turn (before the user's stop message). They are no agent
actions: replay applies them as transitions of the environment and checks their recorded results,
T and FED count only the agent's calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.core.records import RecordError, call_from_json, call_to_json, result_from_json
from prefix_audit.models.base import to_tool_call
from prefix_audit.plugin import (
    PARTY_CALLS_KEY,
    Message,
    ModelBackend,
    ModelRequest,
    RecordedResult,
    Step,
    ToolCall,
    ToolSchema,
    structured_call,
    unreadable_call_observation,
)

from ..domain import semantics as sem
from ..domain.data import TauTask
from .conversation import PHONE, ModelUser, ReferenceConversation, ScriptedUser, closing_message

USER_CALLS_KEY = PARTY_CALLS_KEY
# The provider's look-up by the number the customer calls about (tau2's get_customer_by_phone): the
# reference agent identifies the customer with it before acting on their lines, as the policy asks.
LOOKUP = "get_customer_by_phone"
ASK_PHONE = "Could you please tell me the phone number of the line you are calling about?"


class UserCallsError(ValueError):
    """A rollout's ``meta["user_calls"]`` that cannot be used (the message says where and why)."""


@dataclass(frozen=True)
class UserCall:
    """One call the user made on their own device (see the module docstring)."""

    turn: int
    call: ToolCall
    recorded: RecordedResult | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turn": self.turn, **call_to_json(self.call)}
        if self.recorded is not None:
            out["result"] = self.recorded.to_json()
        return out


def read_user_calls(meta: Mapping[str, Any], n_turns: int) -> tuple[UserCall, ...]:
    """The user's calls a rollout carries, in replay order (raises :class:`UserCallsError`)."""
    entries = meta.get(USER_CALLS_KEY, [])
    if not isinstance(entries, list):
        raise UserCallsError(f"meta.{USER_CALLS_KEY} must be a list")
    out: list[UserCall] = []
    for k, entry in enumerate(entries):
        where = f"meta.{USER_CALLS_KEY}[{k}]"
        if not isinstance(entry, dict):
            raise UserCallsError(f"{where} must be an object (turn, the call, its recorded result)")
        turn = entry.get("turn")
        if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn <= n_turns:
            raise UserCallsError(f"{where}.turn must be a turn index from 0 to {n_turns}, got {turn!r}")
        if out and turn < out[-1].turn:
            raise UserCallsError(f"{where}: turn {turn} comes after a call before turn {out[-1].turn}")
        try:  # the call and its result as a rollout record stores an agent's
            call = call_from_json(entry, where)
            recorded = None if entry.get("result") is None else result_from_json(entry["result"], f"{where}.result")
        except RecordError as exc:
            raise UserCallsError(str(exc)) from None
        out.append(UserCall(turn, call, recorded))
    return tuple(out)


def phone_number(task: TauTask) -> str | None:
    """The phone number the user's scenario gives (the line the call is about)."""
    for text in (task.known_info, task.reason_for_call, task.task_instructions):
        found = re.search(PHONE, text or "")
        if found:
            return found.group(0)
    return None


def telecom_reference(task: TauTask, lookups: Sequence[ToolCall], live: Any) -> ReferenceConversation:
    """The gold as a conversation with the offline user (:class:`DeviceUser`), run on ``live`` (a
    fresh environment of the task): the user opens with the reason for calling; the agent asks for
    the phone number and makes ``lookups`` (identifying the customer); then the gold in order — an
    agent action is the agent's call; a user action is the agent asking for it by name, and the
    user doing it on their phone and saying what it shows (a new turn); the agent closes with
    :func:`~.conversation.closing_message`. The user's calls are the user's (``user.calls``)."""
    user = DeviceUser(task, live)
    user_turns = [user.first_message()]
    turns: list[list[Step]] = [[]]

    def say(text: str) -> None:
        turns[-1].append(Step((), text))
        answer = user.reply(text)
        if not user.done:
            turns.append([])
            user_turns.append(answer)

    def call(step: ToolCall) -> None:
        turns[-1].append(Step((step,)))
        live.run(step)

    if phone_number(task) is not None and lookups:
        say(ASK_PHONE)
        for lookup in lookups:
            call(lookup)
    for i, action in enumerate(task.gold):
        if action.requestor != "user":
            call(structured_call(action.name, dict(action.arguments), f"gold_{task.id}_{i}"))
        elif not user.done:
            say(f"Please do this on your phone: {action.name}"
                + (f" with {json.dumps(dict(action.arguments), sort_keys=True)}" if action.arguments else "") + ".")
    say(closing_message(task))
    return ReferenceConversation(tuple(tuple(t) for t in turns), tuple(user_turns), tuple(user.calls))


# --- users who act on their phone in live episodes ---------------------------------------------

# Everyday phrases an agent uses for a user action, beside the tool's own name (our wording): what
# the offline user takes as being asked to do it.
ACTION_PHRASES: dict[str, tuple[str, ...]] = {
    "toggle_airplane_mode": ("airplane mode", "flight mode"),
    "toggle_data": ("mobile data", "cellular data"),
    "toggle_roaming": ("roaming",),
    "reboot_device": ("reboot", "restart your phone", "restart the phone", "restart your device"),
    "reseat_sim_card": ("sim card", "reseat"),
    "reset_apn_settings": ("apn",),
    "set_network_mode_preference": ("network mode", "preferred network"),
    "toggle_wifi_calling": ("wi-fi calling", "wifi calling"),
    "grant_app_permission": ("permission",),
    "disconnect_vpn": ("vpn",),
    "toggle_data_saver_mode": ("data saver",),
    "make_payment": ("make the payment", "pay the bill", "make a payment"),
}


def asks_for(agent_text: str, tool: str) -> bool:
    """Whether an agent's message asks the user to use ``tool``: it names the tool or says one of its
    everyday phrases (:data:`ACTION_PHRASES`), as whole words (``toggle_data`` is not asked for by
    ``toggle_data_saver_mode``)."""
    text = agent_text.lower()
    return any(re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text)
               for phrase in (tool, *ACTION_PHRASES.get(tool, ())))


class DeviceUser:
    """The offline telecom user: a :class:`~.conversation.ScriptedUser` for what they know, who also
    carries out on their phone (``live``, the episode's environment) the user-side actions of the
    task's gold when the agent asks for them (:func:`asks_for`), each once and in the gold's order,
    and then says what the phone showed. Deterministic; the scenario's behavioural instructions
    ("express mild frustration") need a model (:class:`ToolModelUser`)."""

    def __init__(self, task: TauTask, live: Any) -> None:
        self._knows = ScriptedUser(task)
        self._live = live
        self._pending = list(task.user_gold)
        self.calls: list[UserCall] = []
        self._replies = 0  # reply k opens turn k (the first message opens turn 0)
        self.done = False

    def first_message(self) -> str:
        return self._knows.first_message()

    def reply(self, agent_text: str) -> str:
        self._replies += 1
        if sem.AGENT_STOP_TOKEN not in agent_text:
            # Per tool asked for, its next pending action (an action repeated in the gold is done once per request).
            asked = {}
            for action in self._pending:
                if action.name not in asked and asks_for(agent_text, action.name):
                    asked[action.name] = action
            shown = [self._act(a) for a in asked.values()]
            if shown:
                return "I did that. My phone shows: " + " ".join(" ".join(text.split()) for text in shown)
        answer = self._knows.reply(agent_text)
        self.done = self._knows.done
        return answer

    def _act(self, action: Any) -> str:
        self._pending.remove(action)
        call = structured_call(action.name, dict(action.arguments), f"user_{len(self.calls)}")
        self.calls.append(UserCall(self._replies, call))
        return self._live.run(call, "user")[1]


class ToolModelUser(ModelUser):
    """tau2's user simulator with the user's tools (role ``user_simulator``), prompted with tau2's
    guidelines for users with tools: the model may call the phone's tools before it answers; each
    call runs on the episode's environment as the user's, and its result goes back to the model."""

    def __init__(self, backend: ModelBackend, task: TauTask, guidelines_path: Path, live: Any,
                 tools: Sequence[ToolSchema]) -> None:
        super().__init__(backend, task, guidelines_path)
        self._live = live
        self._tools = tuple(tools)
        self.calls: list[UserCall] = []
        self._replies = -1  # its reply to the opening greeting is the first message, opening turn 0

    async def reply(self, agent_text: str) -> str:
        self._replies += 1
        return await super().reply(agent_text)

    async def _respond(self) -> str:
        for _ in range(sem.MAX_STEPS):
            response = await self._backend.complete(ModelRequest(tuple(self._messages), self._tools,
                                                                 role="user_simulator"))
            self.usage.append(response.usage)
            self._messages.append(response.as_message())
            if not response.tool_calls:
                return response.text or ""
            for model_call in response.tool_calls:
                call = to_tool_call(model_call)
                self.calls.append(UserCall(self._replies, call))
                text = self._live.run(call, "user")[1] if call.well_formed else unreadable_call_observation(call)
                self._messages.append(Message("tool", text, tool_call_id=model_call.id))
        return sem.STOP_TOKEN  # a user who only ever calls tools has nothing more to say
