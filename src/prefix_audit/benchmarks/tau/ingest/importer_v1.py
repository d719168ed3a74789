"""Import τ-bench v1 result files (``run.py``'s output, ``historical_trajectories/``) into rollout
records of the ``tau_v1_airline``/``tau_v1_retail`` datasets (:mod:`..adapter.replay_v1`).

The file is a JSON list of entries ``{task_id, reward, info, traj, trial}`` (:mod:`..domain.v1`). Per entry:

* turns: each user message opens a turn, except the user's stop message; the agent's messages until
  the next user message are its steps — a tool call (``function.arguments``, a JSON text, parsed as
  JSON; text that is not JSON makes an unparseable call, a schema failure) or a message to the user
  — any agent message without a tool call, as v1's tool-calling agent takes it (its ``respond``), even
  one whose text looks like a call (a model's ``<tool_call>`` text v1 said to the user and ran
  nothing of): no undecoded step, its position listed in ``meta.call_like_messages``;
  a ``role: tool`` reply answers the nearest earlier unanswered call with its ``tool_call_id`` (some
  harnesses reuse ids); the system prompt is no action;
* ``meta``: the user's messages (``user_turns``), ``termination_reason`` (v1's: ``user_stop``,
  ``transfer_to_human_agents``, ``max_steps`` — neither happened within the recorded steps — or
  ``agent_error`` when ``info.error`` is set), the recorded reward and reward info, the ids of calls
  whose reply was an error (``Error…``) or ``Unknown action…`` (as 1-based positions among its calls,
  which are their action depths: v1 logs may reuse a call id), ``user_cost``, the task as an
  embedded definition (:mod:`..domain.embedded`), the tau2 provenance, the agent strategy the entry was read
  by (``v1_agent_strategy``), the version of v1's data the run used (``v1_data_era``,
  :func:`.v1_file.detect_era`) and the reward rule Y follows (``v1_reward_rule``, :func:`..domain.v1.dated_rule`);
* ``recorded``: the reward as the log's verdict on Y (reward 1), and per call the reply the log
  recorded (:func:`recorded_reply`), for the audit to check itself against;
* ``trial`` from the entry; ``task_id`` as a string. The rollout id is made from the dataset, model,
  method, task id, trial and the task definition's sha256; a second entry with the same id is
  quarantined as a duplicate.

An entry whose run raised before any agent action (v1 writes ``traj: []`` and ``info.error``) is kept
as a rollout with ``infra_error`` set and no turns; one that raised after some actions is a normal
episode that ended with ``agent_error`` (v1 scores it 0). A call with an empty name or of a tool outside
v1's stock set is a schema failure, never a quarantine: answered ``Unknown action …`` it is the model's
invention; answered with a normal result, the run had extra tools and the entry is flagged
``tool_set_differs``. A stock tool answered ``Unknown action`` (a run without it) is quarantined.
Each entry is read by the agent strategy its own messages show (:func:`.v1_file.entry_strategy`; one that shows
none by the file's majority, said in ``meta["reading"]`` with the counts): ReAct-strategy entries
(actions as text, ``API output:`` replies) are read as v1's ReAct agent reads
them (:func:`react_action`); arguments that are a Python literal are read with :func:`ast.literal_eval`
where the reply shows the call ran (``meta.literal_argument_calls``). ``legacy_reward_rule`` (a
conditional cause, ``meta.v1_legacy_rule_y``, said where nothing dates the run; a run dated before the
rule change is scored under it) and ``vacuous_db_check`` are found from the file.
Other quarantines: an entry that is not an object or lacks ``task_id``/``traj``/``info.task``, a
malformed message or task, a reply to an unknown call, a call without a reply, a message after the
user's stop. In a ``BadLine`` from this importer, ``line``
is the entry's 1-based position in the list.

Domain: the tools of the file's gold actions and of its calls answered with a normal result, where
they belong to one domain's stock set only (:func:`..domain.v1.domain_evidence`); a file with evidence of
both domains or of none is refused unless ``--tau-v1-domain`` names it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.calls import MAX_CALL_CHARS
from prefix_audit.core.decode import excerpt_of
from prefix_audit.core.records import call_like_text_steps
from prefix_audit.plugin import (
    BadRecord,
    CallLedger,
    LogIssue,
    MessageLoop,
    OpenCall,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    chat_role,
    expect,
    numbered,
    object_at,
    rollout_id_for,
    structured_call,
    value_at,
    whole_number,
)

from ..adapter.replay_v1 import ERA_KEY, TauV1Benchmark
from ..domain import semantics as sem
from ..domain import v1
from ..domain.data import TauDataError
from ..domain.embedded import KEY as EMBEDDED_KEY
from ..domain.embedded import EmbeddedTask

# A harness that refused a call before it ran says so in place of the tool's reply (the supervisors
# of asteroidai's fork answer "Execution of <Tool>.invoke was rejected|terminated. Explanation: …").
_REJECTED = re.compile(r"^\s*Execution of .{0,400}? was (?:rejected|terminated)\b", re.DOTALL)
# log_issue codes this importer finds (docs/trust.md#log_issue-codes)
TOOL_SET_DIFFERS, VACUOUS_DB_CHECK, LEGACY_REWARD_RULE = "tool_set_differs", "vacuous_db_check", "legacy_reward_rule"


class BadEntry(BadRecord):
    """A τ-bench v1 entry that cannot be read."""


@dataclass(frozen=True)
class _Conversation:
    turns: tuple[tuple[Step, ...], ...]
    user_turns: tuple[str, ...]
    # 1-based positions among the entry's tool calls (= their action depths; v1 logs may reuse call ids)
    error_calls: tuple[int, ...]
    unknown_calls: tuple[int, ...]
    termination: str
    issues: tuple[LogIssue, ...] = ()
    literal_calls: tuple[int, ...] = ()  # calls whose arguments were read as a Python literal
    respond_fallbacks: tuple[int, ...] = ()  # ReAct: 0-based message indices read as respond (not JSON)
    roles: tuple[str, ...] = ()  # who wrote each message of ``traj``, by position (Rollout.message_roles)


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadEntry("content must be a string", where)
    return value


def _calls(message: Mapping[str, Any], where: str) -> tuple[tuple[ToolCall, ...], dict[int, ToolCall]]:
    """The message's tool calls, and (by index) those whose arguments are a Python literal rather
    than JSON, read with :func:`ast.literal_eval` (used only where the recorded reply shows the call
    ran: :meth:`_Reading.done`)."""
    raw = message.get("tool_calls")
    if raw is None:
        return (), {}
    if not isinstance(raw, list):
        raise BadEntry(f"{where}.tool_calls must be a list")
    out, literal = [], {}
    for i, c in enumerate(raw):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not c["id"]:
            raise BadEntry("tool call without an id (its reply cannot be matched to it)", at)
        function = object_at(c, "function")
        name, arguments = function.get("name"), function.get("arguments")
        if arguments is not None and not isinstance(arguments, (str, dict)):
            out.append(ToolCall(name if isinstance(name, str) else None, raw=excerpt_of(arguments),
                                parse_error=f"function.arguments must be a JSON text, got {type(arguments).__name__}",
                                call_id=c["id"], structured=True))
            continue
        call = _named_call(name, arguments, c["id"])
        if call.parse_error and isinstance(arguments, str) and call.name:
            kwargs = _literal_object(arguments)
            if kwargs is not None:
                literal[i] = ToolCall(call.name, (), kwargs, raw=arguments, call_id=c["id"], structured=True)
        out.append(call)
    return tuple(out), literal


def _named_call(name: Any, arguments: Any, call_id: str) -> ToolCall:
    """A structured call; an empty name is a call of that name (v1 answers ``Unknown action``, a
    schema failure), a missing name an unparseable call."""
    if name == "":
        return dataclasses.replace(structured_call("_", arguments, call_id), name="")
    return structured_call(name, arguments, call_id)


def _literal_object(text: str) -> dict[str, Any] | None:
    """``text`` as a Python literal dict (``{'thought': …}``), never evaluated; None otherwise."""
    if len(text) > MAX_CALL_CHARS or not text.lstrip().startswith("{"):
        return None
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


class _Reading(MessageLoop):
    """What a trajectory says, collected message by message: what v1's two dialects (tool-calling,
    ReAct) share."""

    error = BadEntry

    def __init__(self, domain: str) -> None:
        super().__init__()
        self.domain = domain
        self.stock = v1.V1_TOOLS[domain]
        self.errors: list[int] = []  # 1-based positions among the calls (their action depths)
        self.unknown_actions: list[int] = []  # calls v1 answered "Unknown action"
        self.calls = CallLedger()  # the calls and the replies the log recorded
        self.literal: dict[int, ToolCall] = {}  # call position (the ledger's) → its Python-literal reading
        self.extra_tools: list[str] = []
        self.stopped = False
        self.last_reply: str | None = None  # tool name of the reply the trajectory ends with
        self.roles: list[str] = []  # who wrote each message read so far, by position
        self.respond_fallbacks: list[int] = []  # ReAct: the messages read as respond because they are not JSON

    def wrote(self, role: str) -> int:
        """Note the next message's author; returns its position."""
        self.roles.append(role)
        return len(self.roles) - 1

    def user(self, text: str, where: str) -> None:
        if self.stopped:
            raise BadEntry("message after the user's stop message", where)
        self.last_reply = None
        if v1.STOP_TOKEN in text and self.turns:
            self.stopped = True
            return
        self.open_turn(text)

    def step(self, calls: tuple[ToolCall, ...], text: str | None, where: str) -> list[OpenCall]:
        """Add one agent step (the message last noted, :meth:`wrote`); returns its calls, opened."""
        if self.stopped:
            raise BadEntry("message after the user's stop message", where)
        if not self.turns:
            raise BadEntry("the agent spoke before the user's first message", where)
        self.last_reply = None
        self.add_step(Step(calls, text, message=len(self.roles) - 1))
        return [self.calls.open(c) for c in calls]

    def reply(self, call: OpenCall, reply: str, where: str) -> None:
        """The reply the log recorded to ``call`` (answered in :attr:`calls`)."""
        name, position = call.call.name or "", call.position
        self.calls.record(position, recorded_reply(reply))
        self.last_reply = name
        if reply.startswith(v1.UNKNOWN_ACTION_PREFIX):
            if name in self.stock:
                raise BadEntry(f"{where}: {name!r} is a stock τ-bench v1 {self.domain} tool, yet the reply is "
                               f"{reply[:60]!r}: this run did not expose v1's stock tool set")
            self.unknown_actions.append(position + 1)
            self.literal.pop(position, None)
        elif name not in self.stock:  # the run had a tool v1 lacks: a schema failure all the same
            self.extra_tools.append(name)
            self.literal.pop(position, None)
        elif reply.startswith(v1.ERROR_PREFIX):
            self.errors.append(position + 1)
            self.literal.pop(position, None)  # the Python-literal arguments did not run

    def done(self, errored: bool) -> _Conversation:
        if self.stopped:
            termination = "user_stop"
        elif self.last_reply in v1.TERMINATE_TOOLS:
            termination = "transfer_to_human_agents"
        else:
            termination = "agent_error" if errored else "max_steps"
        issues = []
        if self.extra_tools:
            names = ", ".join(sorted(set(self.extra_tools)))
            issues.append(LogIssue(TOOL_SET_DIFFERS, f"the log answers {names} (not τ-bench v1 {self.domain} "
                                                     f"tools) with a normal result: the run exposed tools v1 does "
                                                     f"not have, so replay calls them unknown"))
        # the calls with their replies, and the Python-literal reading of those whose reply shows they ran
        return _Conversation(self.calls.attach(self.turns, self.literal), tuple(self.user_turns),
                             tuple(self.errors), tuple(self.unknown_actions), termination, tuple(issues),
                             tuple(p + 1 for p in sorted(self.literal)), tuple(self.respond_fallbacks),
                             tuple(self.roles))


class _ToolCallingReading(_Reading):
    """A tool-calling agent's trajectory: OpenAI tool calls, ``role: tool`` replies (some harnesses reuse
    call ids within a conversation)."""

    def before(self, kind: Any, m: Mapping[str, Any], where: str) -> None:
        if kind in ("user", "assistant") and self.calls:
            raise BadEntry(f"tool call(s) {self.calls.unanswered_ids()} have no reply", where)
        self.wrote(chat_role(kind))

    def _user_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        self.user(_text(m.get("content"), where), where)

    def _agent_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        content = _text(m.get("content"), where)
        calls, literal = _calls(m, where)
        opened = self.step(calls, (content or None) if calls else content, where)
        self.literal |= {opened[i].position: call for i, call in literal.items()}

    def _tool_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        if self.stopped:
            raise BadEntry("message after the user's stop message", where)
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str) or not self.calls.waits(call_id):
            raise BadEntry(f"reply to an unknown or already answered call id {call_id!r}", where)
        text = _text(m.get("content"), where)
        answered = self.calls.answer(call_id)
        assert answered is not None  # it waits (above)
        self.reply(answered, text, where)

    handlers = {"system": MessageLoop.skip, "user": _user_message, "assistant": _agent_message,
                "tool": _tool_message}

    def end(self) -> None:
        if self.calls:
            raise BadEntry(f"truncated: tool call(s) {self.calls.unanswered_ids()} have no reply")


class RespondText(str):
    """A ReAct message's text that v1 took as a ``respond`` because it is not JSON."""


def react_action(content: str, call_id: str) -> ToolCall | str:
    """One ReAct message as v1's ReAct agent reads it (:mod:`..domain.v1`): the JSON after the last
    ``Action:``; a ``respond`` action's ``content`` (a str) or a tool call. A text that is not JSON
    is a ``respond`` with that text (a :class:`RespondText`); a JSON value v1 cannot take as an
    action is a malformed call."""
    action = content.split(v1.REACT_ACTION_MARKER)[-1].strip()
    try:
        parsed = json.loads(action) if len(action) <= MAX_CALL_CHARS else None
    except ValueError:  # v1 catches JSONDecodeError only: such text is what the agent says
        return RespondText(action)
    except RecursionError:
        parsed = None
    raw = action[:MAX_CALL_CHARS]
    if not isinstance(parsed, dict) or "name" not in parsed or "arguments" not in parsed:
        return ToolCall(None, raw=raw, call_id=call_id, structured=True,
                        parse_error="the action is not a JSON object with name and arguments (v1's ReAct agent "
                                    "stops the run on it)")
    name, arguments = parsed["name"], parsed["arguments"]
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return ToolCall(name if isinstance(name, str) else None, raw=raw, call_id=call_id, structured=True,
                        parse_error="the action's name must be a string and its arguments an object")
    if name == v1.RESPOND:
        said = arguments.get(v1.RESPOND_FIELD)
        if isinstance(said, str):
            return said
        return ToolCall(name, raw=raw, call_id=call_id, structured=True,
                        parse_error=f"a respond action needs a {v1.RESPOND_FIELD!r} string")
    return _named_call(name, arguments, call_id)


class _ReactReading(_Reading):
    """A ReAct (or Act) agent's trajectory: each assistant message one action (:func:`react_action`),
    each answered by a user message: ``API output: …`` after a tool action, the user's reply after
    ``respond``. The tool action whose API output comes next is the one call waiting."""

    def before(self, kind: Any, m: Mapping[str, Any], where: str) -> None:
        # a ReAct agent's tool output comes as a user message and is the tool's
        self.wrote("tool" if kind == "user" and self.calls else chat_role(kind))

    def _user_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        """The API output of the action that awaits one, else what the user says."""
        text = _text(m.get("content"), where)
        if self.calls:
            if not text.startswith(v1.REACT_OUTPUT_PREFIX):
                raise BadEntry(f"traj[{position - 1}] reads as a call of {_awaited(self)!r}, yet this reply does "
                               f"not start {v1.REACT_OUTPUT_PREFIX.strip()!r} as v1's ReAct agent writes tool output",
                               where)
            answered = self.calls.answer_oldest()
            assert answered is not None  # one waits (above)
            self.reply(answered, text[len(v1.REACT_OUTPUT_PREFIX):], where)
        elif text.startswith(v1.REACT_OUTPUT_PREFIX):
            raise BadEntry(f"{where}: tool output ({v1.REACT_OUTPUT_PREFIX.strip()!r}) that answers no action: "
                           f"the message before it reads as none, so this cannot be read as v1 reads it")
        else:
            self.user(text, where)

    def _agent_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        if self.calls:
            raise BadEntry(f"the call of traj[{position - 1}] has no API output", where)
        if m.get("tool_calls"):
            raise BadEntry("a tool-calling message in a ReAct trajectory", where)
        content = _text(m.get("content"), where)
        action = react_action(content, f"react_{position}")
        if isinstance(action, str):
            if isinstance(action, RespondText) and v1.REACT_ACTION_MARKER in content:
                self.respond_fallbacks.append(position)
            self.step((), str(action), where)
            return
        self.step((action,), None, where)

    handlers = {"system": MessageLoop.skip, "user": _user_message, "assistant": _agent_message}

    def unknown(self, kind: Any, m: Mapping[str, Any], where: str) -> None:
        raise BadEntry(f"{where}: role {kind!r} in a ReAct trajectory (its messages are system, user and "
                       f"assistant)")

    def end(self) -> None:
        if self.calls:
            raise BadEntry(f"truncated: the last action ({_awaited(self)}) has no API output")


def _awaited(reading: _Reading) -> str:
    """The name of the ReAct action whose API output comes next."""
    return reading.calls.waiting()[0].call.name or "no name"


def recorded_reply(reply: str) -> RecordedResult:
    """A v1 tool reply as the log recorded it: v1 marks no errors, its replies say so
    (``Error: …``, ``Unknown action …``); a harness's refusal (``Execution of … was rejected``)
    shows the call never ran."""
    executed = _REJECTED.match(reply) is None
    error = reply.startswith((v1.ERROR_PREFIX, v1.UNKNOWN_ACTION_PREFIX)) or not executed
    return RecordedResult.of(reply, error, executed)


def _recorded_reward(entry: Mapping[str, Any], info: Mapping[str, Any]) -> tuple[float | None, Any]:
    reward = entry.get("reward")
    reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    return reward, value_at(info, "reward_info", "info")


def _legacy_y(task: Any, convo: _Conversation) -> int | None:
    """Y under v1's reward rule before 2024-11-10, from the trajectory alone: a task with outputs was
    scored on them only (every output in a message the agent sent the user), after a normal end;
    None for a task without outputs (the rule did not change for it)."""
    if not task.communicate_info:
        return None
    if convo.termination not in v1.NORMAL_TERMINATIONS:
        return 0
    said = [step.text.lower().replace(",", "") for turn in convo.turns for step in turn
            if step.text and not step.calls]
    return int(all(any(o.lower() in t for t in said) for o in task.communicate_info))


def _vacuous(bench: TauV1Benchmark, task: Any, reward_info: Any) -> LogIssue | None:
    """``vacuous_db_check`` where the recorded gold DB hash is that of v1's untouched database (of
    either version of v1's data) although the gold writes: the run's tools did not write to the
    database v1 hashed."""
    gold_hash = value_at(reward_info, "gt_data_hash")
    era = v1.untouched_era(bench.domain.name, gold_hash)
    if era is None or not bench.gold_writes(task):
        return None
    return LogIssue(VACUOUS_DB_CHECK, f"the recorded gold DB hash ({gold_hash[:12]}…) is that of v1's untouched "
                                      f"{bench.domain.name} database (its data of {era.commits}), yet the gold "
                                      f"actions write: the run's tools did not write to the database v1 hashed, "
                                      f"so its DB verdict is vacuous")


@dataclass(frozen=True)
class FileReading:
    """What holds for every entry of a file: the data version of the run, the reward rule it was
    scored under, and the reading in words (``meta["reading"]``, said once per file)."""

    era: v1.DataEra
    current_rule: bool  # an entry shows v1's current reward rule
    rule: str  # the reward rule Y follows (:func:`..domain.v1.dated_rule`)
    summary: str


def rollout_from_entry(entry: Any, bench: TauV1Benchmark, model: str, method: str, source: str,
                       file: FileReading, strategy: str) -> Rollout:
    """One entry as a rollout, read as the agent ``strategy`` wrote it (the one its own messages show,
    else the file's: :func:`.v1_file.entry_strategy`)."""
    if not isinstance(entry, dict):
        raise BadEntry("an entry must be an object")
    task_id = whole_number(entry.get("task_id"), "task_id", BadEntry)
    trial = whole_number(entry.get("trial"), "trial", BadEntry, default=0)
    info = expect(entry.get("info"), dict, "info must be an object", BadEntry)
    traj = expect(entry.get("traj"), list, "traj must be a list of messages", BadEntry)
    error = info.get("error")
    if error is not None and not isinstance(error, str):
        raise BadEntry("info.error must be a string")
    domain = bench.domain.name
    reward, reward_info = _recorded_reward(entry, info)
    meta: dict[str, Any] = {"results_format": v1.RESULTS_FORMAT, "recorded_reward": reward,
                            "recorded_reward_info": reward_info, "user_cost": info.get("user_cost"),
                            "v1_agent_strategy": strategy, ERA_KEY: file.era.name, v1.RULE_KEY: file.rule,
                            "reading": file.summary,
                            **({"recorded_error": error} if error else {}), **bench.provenance}
    task_obj = info.get("task")
    if task_obj is None and not traj:  # the run raised before it started: v1 records neither
        return _infra(bench, str(task_id), trial, model, method, meta, error or "empty trajectory")
    if not isinstance(task_obj, dict):
        raise BadEntry("info.task must be an object (the task and its gold)")
    embedded = EmbeddedTask.of(task_obj, v1.RESULTS_FORMAT, source)
    try:
        task = embedded.task(str(task_id), domain)
    except TauDataError as exc:
        raise BadEntry(str(exc)) from None
    meta[EMBEDDED_KEY] = embedded.to_json()
    reading = (_ReactReading if strategy == "react" else _ToolCallingReading)(domain)
    reading.read(numbered(traj, "traj"))
    convo = reading.done(errored=error is not None)
    meta |= _conversation_meta(convo, strategy)
    issues = list(convo.issues)
    vacuous = _vacuous(bench, task, reward_info)
    if vacuous is not None:
        issues.append(vacuous)
    conditional = []
    legacy = _legacy_y(task, convo)
    if legacy is not None:
        meta["v1_legacy_rule_y"] = legacy
        # Y follows the legacy rule where the file dates its run before the change; where nothing
        # dates it, a recorded reward that only the legacy rule gives is the cause of a differing Y.
        if reward is not None and file.rule != v1.LEGACY_RULE and not file.current_rule \
                and legacy == int(reward >= 1.0):
            conditional.append(LogIssue(LEGACY_REWARD_RULE, (
                f"the recorded reward {reward:g} is v1's rule before {v1.REWARD_RULE_CHANGE} (a task with outputs "
                f"scored on them alone, Y = {legacy} here, meta.v1_legacy_rule_y); replay scores the current rule, "
                f"which also compares the database")))
    rid = rollout_id_for(bench.dataset, model, method, task.id, trial, embedded.sha256)
    if not any(convo.turns):  # no agent action: the model call failed (or never came)
        return _infra(bench, task.id, trial, model, method, meta, error or "no agent action in the trajectory", rid)
    if strategy != "react":
        said = [convo.turns[t][s].message for t, s, _ in call_like_text_steps(convo.turns)]
        if said:
            meta["call_like_messages"] = said
    # Each entry is read exactly as v1 reads it: text v1 took as a message to the user (the tool-calling
    # agent's message without a tool call, a ReAct action that is no JSON) is no undecoded call.
    recorded = Recorded.of(*_verdict(reward), (), issues, conditional)
    return Rollout(bench.dataset, task.id, model, method, rid, convo.turns,
                   source="import:tau-v1", meta=meta, trial=trial,
                   recorded=recorded, message_roles=convo.roles)


def _conversation_meta(convo: _Conversation, strategy: str) -> dict[str, Any]:
    """What a rollout's meta says of its conversation, read as the agent ``strategy`` wrote it."""
    meta: dict[str, Any] = {"user_turns": list(convo.user_turns), "termination_reason": convo.termination,
                            "recorded_error_calls": list(convo.error_calls),
                            "recorded_unknown_action_calls": list(convo.unknown_calls)}
    if convo.literal_calls:
        meta["literal_argument_calls"] = list(convo.literal_calls)
    if strategy == "react":
        meta["react_respond_fallbacks"] = len(convo.respond_fallbacks)
    return meta


def _verdict(reward: float | None) -> tuple[int | None, str]:
    recorded = sem.recorded_reward(reward)
    return recorded.y, recorded.verdict or ""


def _infra(bench: TauV1Benchmark, task_id: str, trial: int, model: str, method: str, meta: dict[str, Any],
           error: str, rid: str | None = None) -> Rollout:
    rid = rid or rollout_id_for(bench.dataset, model, method, task_id, trial, "infra_error")
    meta = {"user_turns": [], "termination_reason": "agent_error", **meta}
    return Rollout(bench.dataset, task_id, model, method, rid, (), source="import:tau-v1", meta=meta, trial=trial,
                   recorded=sem.recorded_reward(meta.get("recorded_reward")),
                   infra_error=error.strip().splitlines()[-1][:500] if error.strip() else "model call failed")
