"""The half-duplex side of τ-bench: what the agent is told, the tools it gets, and a user.

* :class:`TauAgentEnvironment` — the agent's system prompt (the domain policy), its tools as
  :class:`~prefix_audit.models.base.ToolSchema`, and ``execute`` on a live environment.
* :class:`ScriptedUser` — an offline, deterministic stand-in for τ's LLM user simulator. It opens
  with the task's reason for calling and afterwards reveals only what the task says the user knows
  (its ``known_info`` and ``task_instructions`` sentences, never ``unknown_info``), and only when the
  agent asks for it; it confirms when asked to confirm and otherwise ends the conversation with τ's
  stop token. It does not read the scenario's behavioural instructions ("refuse unless refunded"):
  that needs a language model (:class:`ModelUser`), so offline runs approximate τ's user.
* :class:`ModelUser` — τ's user simulator as a model call (role ``user_simulator``) through any
  :class:`~prefix_audit.models.base.ModelBackend`, prompted with tau2's own simulation guidelines
  (read from the package at run time) and the task scenario.

What counts as "asking" is keyword matching on the agent's message (:data:`REQUEST_KEYWORDS`); a
fact sentence belongs to the categories whose patterns it matches (:data:`FACT_PATTERNS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prefix_audit.plugin import (
    PARTY_CALLS_KEY,
    AgentEnvironment,
    Message,
    ModelBackend,
    ModelRequest,
    Step,
    ToolCall,
    ToolSchema,
    Usage,
    unreadable_call_observation,
)
from prefix_audit.replay.values import scalars

from ..domain import semantics as sem
from ..domain.data import TauTask
from ..domain.environment import DomainBackend, LiveEnvironment

# Our own wording; the policy itself comes from the task data.
AGENT_INSTRUCTIONS = (
    "You are a customer service agent. Help the user according to the policy below. In each turn either "
    "send one message to the user or make tool calls, not both. Follow the policy strictly and emit valid JSON "
    "arguments for every tool call."
)

_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_USER_ID = r"\b[a-z]+_[a-z]+_\d+\b"
_ORDER_ID = r"#?W\d{7}\b"
_RESERVATION = r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b"
PHONE = r"\b\d{3}-\d{3}-\d{4}\b"  # telecom's phone numbers (no airline/retail task text has one)
# Identifier shapes the τ domains use; the scripted user and the fact extraction share them.
IDENTIFIER_PATTERNS = tuple(re.compile(p) for p in (_EMAIL, _USER_ID, _ORDER_ID, _RESERVATION, PHONE))

FACT_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(rf"{_EMAIL}|\bemails?\b", re.IGNORECASE),
    "user_id": re.compile(rf"{_USER_ID}|\buser id\b", re.IGNORECASE),
    "name": re.compile(r"\bname\b|^\s*[Yy]ou(?:'re| are) (?:an? [\w ]*called )?[A-Z][a-z]+", re.MULTILINE),
    "zip": re.compile(r"\bzip|\b\d{5}\b", re.IGNORECASE),
    "address": re.compile(r"\baddress(?:es)?\b|\blive in\b|\bliving in\b|\bresid|\bstreet\b|\bsuite\b|\bapt\b",
                          re.IGNORECASE),
    "reservation": re.compile(rf"{_RESERVATION}|\breservation|\bconfirmation\b|\bbooking\b"),
    "order": re.compile(rf"{_ORDER_ID}|\border\b", re.IGNORECASE),
    "payment": re.compile(r"\bcard\b|\bgift card|\bcertificate|\bpaypal|\bpay(?:ment)?\b", re.IGNORECASE),
    "passenger": re.compile(r"\bpassenger|\bborn\b|\bbirth|\bdob\b|\btravel(?:l)?er", re.IGNORECASE),
    "phone": re.compile(rf"{PHONE}|\bphone number\b", re.IGNORECASE),
}
REQUEST_KEYWORDS: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail"),
    "user_id": ("user id", "user_id", "userid", "account id"),
    "name": ("name",),
    "zip": ("zip", "postal"),
    "address": ("address",),
    "reservation": ("reservation", "confirmation number", "booking"),
    "order": ("order",),
    "payment": ("payment", "card", "pay with", "pay for"),
    "passenger": ("passenger", "birth", "traveler", "traveller"),
    "phone": ("phone number",),
}
IDENTITY = ("email", "user_id", "name", "zip")
IDENTITY_KEYWORDS = ("identity", "verify", "authenticate", "look up your account", "locate your account")
DETAIL_KEYWORDS = ("other details", "more details", "your details", "more information", "anything else", "what else")
CONFIRM_KEYWORDS = ("confirm", "proceed", "go ahead", "shall i", "should i", "would you like me to", "yes/no")

CONFIRMATION = "Yes, please go ahead."
NOT_KNOWN = "I'm sorry, I don't have that information."

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|\n+")


def sentences(text: str | None) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


@dataclass(frozen=True)
class Fact:
    text: str
    categories: frozenset[str]


def known_facts(task: TauTask) -> tuple[Fact, ...]:
    """The sentences the user may say: the reason for calling (said first), then ``known_info`` and
    ``task_instructions``."""
    return tuple(Fact(s, frozenset(c for c, p in FACT_PATTERNS.items() if p.search(s)))
                 for s in [*sentences(task.reason_for_call), *sentences(task.known_info),
                           *sentences(task.task_instructions)])


def _mentions_word(text: str, words: Sequence[str]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}", text) for w in words)


def requested_categories(agent_text: str) -> set[str]:
    lowered = agent_text.lower().replace("email address", "email")
    asked = {c for c, words in REQUEST_KEYWORDS.items() if _mentions_word(lowered, words)}
    if _mentions_word(lowered, IDENTITY_KEYWORDS):
        asked |= set(IDENTITY)
    return asked


def _asks(agent_text: str, words: Sequence[str]) -> bool:
    return _mentions_word(agent_text.lower(), words)


@dataclass
class ScriptedUser:
    """An offline user for one task (see the module docstring); ``done`` once it has stopped."""

    task: TauTask
    done: bool = False
    _facts: tuple[Fact, ...] = field(init=False)
    _revealed: set[int] = field(default_factory=set, init=False)
    _last: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._facts = known_facts(self.task)
        self._revealed = set(range(len(sentences(self.task.reason_for_call))))  # said in the first message

    def first_message(self) -> str:
        return self.task.reason_for_call

    def _stop(self) -> str:
        self.done = True
        return sem.STOP_TOKEN

    def reply(self, agent_text: str) -> str:
        """The user's answer to the agent's message (the stop token once there is nothing to add)."""
        if self.done:
            raise RuntimeError("the user has already ended the conversation")
        if sem.AGENT_STOP_TOKEN in agent_text:
            return self._stop()
        answer = self._answer(agent_text)
        if answer is None or answer == self._last:  # nothing new to say: the conversation is over
            return self._stop()
        self._last = answer
        return answer

    def _answer(self, agent_text: str) -> str | None:
        asked = requested_categories(agent_text)
        picked = [i for i, f in enumerate(self._facts) if f.categories & asked]
        if _asks(agent_text, DETAIL_KEYWORDS):
            picked = sorted(set(picked) | (set(range(len(self._facts))) - self._revealed))
        if picked:
            self._revealed |= set(picked)
            return " ".join(self._facts[i].text for i in picked)
        if _asks(agent_text, CONFIRM_KEYWORDS):
            return CONFIRMATION
        return NOT_KNOWN if asked else None


def said(value: str, text: str) -> bool:
    """Whether a message states a fact: as a whole word, case-insensitive, an order id's '#' optional."""
    return re.search(rf"(?<!\w){re.escape(value.lstrip('#'))}(?!\w)", text, re.IGNORECASE) is not None


def identifiers(text: str) -> set[str]:
    return {m for pattern in IDENTIFIER_PATTERNS for m in pattern.findall(text)}


def user_fact_values(task: TauTask) -> frozenset[str]:
    """The task's user facts: values of information parameters in the gold actions that the user's
    scenario states, and every identifier (email, user id, order id, reservation code) it states."""
    knowable = "\n".join(p for p in (task.reason_for_call, task.known_info, task.task_instructions) if p)
    params = sem.INFORMATION_PARAMS[task.domain]
    values = identifiers(knowable)
    for action in task.gold:
        for param, value in action.arguments.items():
            if param in params:
                values |= {v for v in scalars(value) if isinstance(v, str) and len(v) >= 2 and said(v, knowable)}
    return frozenset(values)


def request_for(categories: set[str], details: bool) -> str:
    """An agent message asking for facts of these categories (and for any other details)."""
    asked = [REQUEST_KEYWORDS[c][0] for c in sorted(categories)]
    if details:
        asked.append("any other details of your request")
    listed = asked[0] if len(asked) == 1 else f"{', '.join(asked[:-1])} and {asked[-1]}"
    return f"Could you please tell me your {listed}?"


@dataclass(frozen=True)
class ReferenceConversation:
    """The gold actions as a conversation with the scripted user: per turn, the agent's steps; and the
    user's message that opened each turn."""

    turns: tuple[tuple[Step, ...], ...]
    user_turns: tuple[str, ...]
    user_calls: tuple[Any, ...] = ()  # a user who acts (telecom): their calls (:class:`.telecom.UserCall`)


def reference_conversation(task: TauTask, gold_calls: Sequence[ToolCall]) -> ReferenceConversation:
    """The user opens with the reason for calling; the agent makes the gold calls in order and, just
    before a call that needs a user fact not yet given, asks for that fact's kind (a new turn opens
    with the scripted user's answer); it closes with :func:`closing_message`. Facts are revealed when
    first needed, so earlier calls sit in earlier turns."""
    user = ScriptedUser(task)
    facts = user_fact_values(task)
    sentences_known = known_facts(task)
    user_turns = [user.first_message()]
    turns: list[list[Step]] = [[]]
    for call in gold_calls:
        needed = {v for v in scalars(call.kwargs) if v in facts and not any(said(v, t) for t in user_turns)}
        for details in (False, True):  # ask by kind first; if that is not enough, for everything else
            if not needed or user.done:
                break
            stating = [f for f in sentences_known if any(said(v, f.text) for v in needed)]
            ask = request_for(set().union(*(f.categories for f in stating)),
                              details or not all(f.categories for f in stating))
            answer = user.reply(ask)
            if user.done:
                break
            turns[-1].append(Step((), ask))
            turns.append([])
            user_turns.append(answer)
            needed = {v for v in needed if not said(v, answer)}
        turns[-1].append(Step((call,)))
    turns[-1].append(Step((), closing_message(task)))
    return ReferenceConversation(tuple(tuple(t) for t in turns), tuple(user_turns))


def closing_message(task: TauTask) -> str:
    """The reference agent's last message: it states every fact τ's communicate check looks for."""
    facts = f" For your records: {', '.join(task.communicate_info)}." if task.communicate_info else ""
    return f"Thank you for your patience. I have completed your request.{facts}"


def agent_system_prompt(policy: str) -> str:
    return f"<instructions>\n{AGENT_INSTRUCTIONS}\n</instructions>\n<policy>\n{policy}\n</policy>"


def tau_environment(env: AgentEnvironment) -> TauAgentEnvironment:
    """``env`` as a τ conversation runs on it: the environment the benchmark's ``agent_environment`` made."""
    if not isinstance(env, TauAgentEnvironment):
        raise TypeError(f"a τ conversation runs on a τ agent environment, not on {type(env).__name__}")
    return env


class TauAgentEnvironment:
    """A live τ environment for generating one rollout with an agent (half-duplex; the orchestrator
    decides turns). ``errors`` counts tool results flagged as errors, for τ's
    :data:`~..domain.semantics.MAX_ERRORS`."""

    def __init__(self, backend: DomainBackend, task: TauTask, live: Any = None) -> None:
        self.task_id = task.id
        self.task = task
        self.system_prompt = agent_system_prompt(backend.domain.policy)
        self.first_agent_message = sem.FIRST_AGENT_MESSAGE
        self._tools = tuple(ToolSchema(i.spec.name, i.spec.description, i.schema) for i in backend.tools.values())
        # The episode's environment (telecom's holds the user's phone too): a fresh airline/retail one by default.
        self.live = live if live is not None else LiveEnvironment(backend)

    @property
    def errors(self) -> int:
        return self.live.errors

    def tools(self, turn: int = 0) -> tuple[ToolSchema, ...]:
        """Every tool of the domain, in every turn."""
        return self._tools

    def execute(self, call: ToolCall) -> str:
        """Run one call on the live state; the observation text τ's environment would return."""
        if not call.well_formed:
            self.live.errors += 1
            return unreadable_call_observation(call)
        return self.live.run(call)[1]


class OfflineUser(Protocol):
    """A user without a model, who answers at once: :class:`ScriptedUser`, telecom's ``DeviceUser``."""

    @property
    def done(self) -> bool: ...

    def first_message(self) -> str: ...

    def reply(self, agent_text: str) -> str: ...


class TauConversation:
    """τ-bench's half-duplex protocol for one episode (a :class:`~prefix_audit.replay.contract.Conversation`):
    the agent greets, the user (scripted or a model) opens with the reason for the
    call and then answers the agent's closing reply of every turn, until it sends a stop token; the
    agent's stop token, :data:`~..domain.semantics.MAX_ERRORS` tool errors or :data:`~..domain.semantics.MAX_STEPS`
    steps end it too. Each user message that the agent answers opens a turn (``meta["user_turns"]``)."""

    def __init__(self, env: TauAgentEnvironment, user: OfflineUser | ModelUser, provenance: dict[str, str]) -> None:
        self.system_prompt: str | None = env.system_prompt
        self.opening: str | None = env.first_agent_message
        self._env, self._user, self._provenance = env, user, provenance
        self._user_turns: list[str] = []
        self._ended: str | None = None

    async def next_user_message(self, agent_reply: str | None) -> str | None:
        if agent_reply is not None and sem.AGENT_STOP_TOKEN in agent_reply:
            self._ended = "agent_stop"
            return None
        if isinstance(self._user, ModelUser):
            text = await self._user.reply(agent_reply if agent_reply is not None else self._env.first_agent_message)
        else:
            text = self._user.first_message() if agent_reply is None else self._user.reply(agent_reply)
        if self._user.done:
            self._ended = "user_stop"
            return None
        self._user_turns.append(text)
        return text

    def limit_reached(self, steps: int) -> str | None:
        if self._env.errors >= sem.MAX_ERRORS:
            return "too_many_errors"
        return "max_steps" if steps >= sem.MAX_STEPS else None

    def meta(self, termination: str | None) -> dict[str, Any]:
        meta = {"user_turns": list(self._user_turns), "termination_reason": termination or self._ended or "user_stop",
                **self._provenance}
        calls = getattr(self._user, "calls", None)  # a user who acts on their own phone (telecom)
        if calls is not None:
            meta[PARTY_CALLS_KEY] = [c.to_json() for c in calls]
        return meta

    def usage(self) -> tuple[Usage, ...]:
        return tuple(self._user.usage) if isinstance(self._user, ModelUser) else ()


def user_simulator_prompt(task: TauTask, guidelines_path: Path) -> str:
    """τ's user-simulator system prompt: tau2's guidelines file and the task scenario."""
    guidelines = guidelines_path.read_text(encoding="utf-8")
    return f"{guidelines}\n\n<scenario>\n{task.scenario_text}\n</scenario>"


class ModelUser:
    """τ's user simulator as a model (role ``user_simulator``). The conversation is presented from
    the user's side: the agent's messages are the simulator's input, its own replies the assistant's."""

    def __init__(self, backend: ModelBackend, task: TauTask, guidelines_path: Path) -> None:
        self._backend = backend
        self._messages: list[Message] = [Message("system", user_simulator_prompt(task, guidelines_path))]
        self.usage: list[Usage] = []
        self.done = False

    async def reply(self, agent_text: str) -> str:
        if self.done:
            raise RuntimeError("the user has already ended the conversation")
        self._messages.append(Message("user", agent_text))
        text = await self._respond()
        self.done = any(token in text for token in sem.USER_STOP_TOKENS)
        return text

    async def _respond(self) -> str:
        """The simulator's next message to the agent (a user with tools may act first)."""
        response = await self._backend.complete(ModelRequest(tuple(self._messages), (), role="user_simulator"))
        self.usage.append(response.usage)
        text = response.text or ""
        self._messages.append(Message("assistant", text))
        return text
