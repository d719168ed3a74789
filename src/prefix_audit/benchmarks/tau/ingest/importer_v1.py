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
  :func:`detect_era`) and the reward rule Y follows (``v1_reward_rule``, :func:`..domain.v1.dated_rule`);
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
Each entry is read by the agent strategy its own messages show (:func:`entry_strategy`; one that shows
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
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.core.calls import MAX_CALL_CHARS, ToolCall, structured_call
from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, excerpt_of, plain_name, shape_reason
from prefix_audit.core.records import (
    BadLine,
    Located,
    LogIssue,
    ModelNamed,
    NamedBy,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    call_like_text_steps,
    rollout_id_for,
)
from prefix_audit.replay.contract import Benchmark

from ..adapter.replay_v1 import ERA_KEY, TauV1Benchmark, v1_dataset_of
from ..domain import semantics as sem
from ..domain import v1
from ..domain.data import TauDataError
from ..domain.embedded import KEY as EMBEDDED_KEY
from ..domain.embedded import EmbeddedTask
from .errors import TauResultsError

# A harness that refused a call before it ran says so in place of the tool's reply (the supervisors
# of asteroidai's fork answer "Execution of <Tool>.invoke was rejected|terminated. Explanation: …").
_REJECTED = re.compile(r"^\s*Execution of .{0,400}? was (?:rejected|terminated)\b", re.DOTALL)
# log_issue codes this importer finds (SPEC §3)
TOOL_SET_DIFFERS, VACUOUS_DB_CHECK, LEGACY_REWARD_RULE = "tool_set_differs", "vacuous_db_check", "legacy_reward_rule"


class V1ResultsError(TauResultsError):
    """A v1 result file that cannot be used as a whole, with the reason."""


class BadEntry(ValueError):
    pass


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
        raise BadEntry(f"{where}: content must be a string")
    return value


def _calls(message: Mapping[str, Any], where: str) -> tuple[tuple[ToolCall, ...], dict[int, ToolCall]]:
    """The message's tool calls, and (by index) those whose arguments are a Python literal rather
    than JSON, read with :func:`ast.literal_eval` (used only where the recorded reply shows the call
    ran: :func:`_with_results`)."""
    raw = message.get("tool_calls")
    if raw is None:
        return (), {}
    if not isinstance(raw, list):
        raise BadEntry(f"{where}.tool_calls must be a list")
    out, literal = [], {}
    for i, c in enumerate(raw):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not c["id"]:
            raise BadEntry(f"{at}: tool call without an id (its reply cannot be matched to it)")
        function = c.get("function") if isinstance(c.get("function"), dict) else {}
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


class _Reading:
    """What a trajectory says, collected message by message by either strategy's reader."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self.stock = v1.V1_TOOLS[domain]
        self.turns: list[list[Step]] = []
        self.user_turns: list[str] = []
        self.errors: list[int] = []
        self.unknown: list[int] = []
        self.recorded: dict[int, RecordedResult] = {}  # call position → the reply the log recorded
        self.literal: dict[int, ToolCall] = {}  # call position → its Python-literal reading
        self.extra_tools: list[str] = []
        self.n_calls = 0
        self.stopped = False
        self.last_reply: str | None = None  # tool name of the reply the trajectory ends with
        self.roles: list[str] = []  # who wrote each message read so far, by position

    def wrote(self, role: str) -> int:
        """Note the next message's author; returns its position."""
        self.roles.append(role)
        return len(self.roles) - 1

    def user(self, text: str, where: str) -> None:
        if self.stopped:
            raise BadEntry(f"{where}: message after the user's stop message")
        self.last_reply = None
        if v1.STOP_TOKEN in text and self.turns:
            self.stopped = True
            return
        self.turns.append([])
        self.user_turns.append(text)

    def step(self, calls: tuple[ToolCall, ...], text: str | None, where: str) -> list[int]:
        """Add one agent step (the message last noted, :meth:`wrote`); returns its calls' positions."""
        if self.stopped:
            raise BadEntry(f"{where}: message after the user's stop message")
        if not self.turns:
            raise BadEntry(f"{where}: the agent spoke before the user's first message")
        self.last_reply = None
        self.turns[-1].append(Step(calls, text, message=len(self.roles) - 1))
        positions = list(range(self.n_calls + 1, self.n_calls + 1 + len(calls)))
        self.n_calls += len(calls)
        return positions

    def reply(self, name: str, position: int, reply: str, where: str) -> None:
        self.recorded[position] = recorded_reply(reply)
        self.last_reply = name
        if reply.startswith(v1.UNKNOWN_ACTION_PREFIX):
            if name in self.stock:
                raise BadEntry(f"{where}: {name!r} is a stock τ-bench v1 {self.domain} tool, yet the reply is "
                               f"{reply[:60]!r}: this run did not expose v1's stock tool set")
            self.unknown.append(position)
            self.literal.pop(position, None)
        elif name not in self.stock:  # the run had a tool v1 lacks: a schema failure all the same
            self.extra_tools.append(name)
            self.literal.pop(position, None)
        elif reply.startswith(v1.ERROR_PREFIX):
            self.errors.append(position)
            self.literal.pop(position, None)  # the Python-literal arguments did not run

    def done(self, errored: bool, respond_fallbacks: list[int] = ()) -> _Conversation:
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
        return _Conversation(_with_results(self.turns, self.recorded, self.literal), tuple(self.user_turns),
                             tuple(self.errors), tuple(self.unknown), termination,
                             tuple(issues), tuple(sorted(self.literal)), tuple(respond_fallbacks), tuple(self.roles))


# who wrote a message of a v1 trajectory (Rollout.message_roles); a ReAct agent's tool output comes as
# a user message and is the tool's
_TOOL_CALLING_ROLES = {"system": "system", "user": "user", "assistant": "agent", "tool": "tool"}


def _conversation(traj: list[Any], domain: str, errored: bool) -> _Conversation:
    """A tool-calling agent's trajectory: OpenAI tool calls, ``role: tool`` replies."""
    reading = _Reading(domain)
    # call id → the calls with that id awaiting a reply (tool name, position), in call order: some
    # harnesses reuse ids within a conversation
    pending: dict[str, list[tuple[str, int]]] = {}
    for k, m in enumerate(traj):
        where = f"traj[{k}]"
        if not isinstance(m, dict):
            raise BadEntry(f"{where}: a message must be an object")
        role = m.get("role")
        if role in ("user", "assistant") and pending:
            raise BadEntry(f"{where}: tool call(s) {sorted(pending)} have no reply")
        reading.wrote(_TOOL_CALLING_ROLES.get(role, "other"))
        if role == "system":
            continue
        if role == "user":
            reading.user(_text(m.get("content"), where), where)
        elif role == "assistant":
            content = _text(m.get("content"), where)
            calls, literal = _calls(m, where)
            positions = reading.step(calls, (content or None) if calls else content, where)
            for i, c in enumerate(calls):
                pending.setdefault(c.call_id or "", []).append((c.name or "", positions[i]))
                if i in literal:
                    reading.literal[positions[i]] = literal[i]
        elif role == "tool":
            if reading.stopped:
                raise BadEntry(f"{where}: message after the user's stop message")
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str) or not pending.get(call_id):
                raise BadEntry(f"{where}: reply to an unknown or already answered call id {call_id!r}")
            # the nearest earlier unanswered call with this id: calls await replies only from the
            # latest agent message, whose replies come in call order
            name, position = pending[call_id].pop(0)
            if not pending[call_id]:
                del pending[call_id]
            reading.reply(name, position, _text(m.get("content"), where), where)
        else:
            raise BadEntry(f"{where}: unknown role {role!r}")
    if pending:
        raise BadEntry(f"truncated: tool call(s) {sorted(pending)} have no reply")
    return reading.done(errored)


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


def _react_conversation(traj: list[Any], domain: str, errored: bool) -> _Conversation:
    """A ReAct (or Act) agent's trajectory: each assistant message one action (:func:`react_action`),
    each answered by a user message: ``API output: …`` after a tool action, the user's reply after
    ``respond``."""
    reading = _Reading(domain)
    awaiting: tuple[str, int] | None = None  # the tool action whose API output comes next
    fallbacks: list[int] = []
    for k, m in enumerate(traj):
        where = f"traj[{k}]"
        if not isinstance(m, dict):
            raise BadEntry(f"{where}: a message must be an object")
        role = m.get("role")
        reading.wrote("tool" if role == "user" and awaiting is not None else _TOOL_CALLING_ROLES.get(role, "other"))
        if role == "system":
            continue
        if role == "user":
            text = _text(m.get("content"), where)
            if awaiting is not None:
                if not text.startswith(v1.REACT_OUTPUT_PREFIX):
                    raise BadEntry(f"{where}: traj[{k - 1}] reads as a call of {awaiting[0] or 'no name'!r}, yet "
                                   f"this reply does not start {v1.REACT_OUTPUT_PREFIX.strip()!r} as v1's ReAct "
                                   f"agent writes tool output")
                reading.reply(*awaiting, text[len(v1.REACT_OUTPUT_PREFIX):], where)
                awaiting = None
            elif text.startswith(v1.REACT_OUTPUT_PREFIX):
                raise BadEntry(f"{where}: tool output ({v1.REACT_OUTPUT_PREFIX.strip()!r}) that answers no action: "
                               f"the message before it reads as none, so this cannot be read as v1 reads it")
            else:
                reading.user(text, where)
        elif role == "assistant":
            if awaiting is not None:
                raise BadEntry(f"{where}: the call of traj[{k - 1}] has no API output")
            if m.get("tool_calls"):
                raise BadEntry(f"{where}: a tool-calling message in a ReAct trajectory")
            content = _text(m.get("content"), where)
            action = react_action(content, f"react_{k}")
            if isinstance(action, str):
                if isinstance(action, RespondText) and v1.REACT_ACTION_MARKER in content:
                    fallbacks.append(k)
                reading.step((), str(action), where)
                continue
            [position] = reading.step((action,), None, where)
            awaiting = (action.name or "", position)
        else:
            raise BadEntry(f"{where}: role {role!r} in a ReAct trajectory (its messages are system, user and "
                           f"assistant)")
    if awaiting is not None:
        raise BadEntry(f"truncated: the last action ({awaiting[0] or 'no name'}) has no API output")
    return reading.done(errored, fallbacks)


def recorded_reply(reply: str) -> RecordedResult:
    """A v1 tool reply as the log recorded it: v1 marks no errors, its replies say so
    (``Error: …``, ``Unknown action …``); a harness's refusal (``Execution of … was rejected``)
    shows the call never ran."""
    executed = _REJECTED.match(reply) is None
    error = reply.startswith((v1.ERROR_PREFIX, v1.UNKNOWN_ACTION_PREFIX)) or not executed
    return RecordedResult.of(reply, error, executed)


def _with_results(turns: list[list[Step]], recorded: Mapping[int, RecordedResult],
                  literal: Mapping[int, ToolCall]) -> tuple[tuple[Step, ...], ...]:
    """The steps with each call's recorded reply (by the call's position in the trajectory), and
    the Python-literal reading of the calls whose reply shows they ran."""
    out, position = [], 0
    for turn in turns:
        steps = []
        for step in turn:
            if step.calls:
                positions = range(position + 1, position + 1 + len(step.calls))
                calls = tuple(literal.get(p, c) for p, c in zip(positions, step.calls))
                step = Step(calls, step.text, tuple(recorded.get(p) for p in positions), step.message)
                position += len(step.calls)
            steps.append(step)
        out.append(tuple(steps))
    return tuple(out)


def _whole(value: Any, what: str, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise BadEntry(f"{what} must be a whole number from 0, got {value!r}")
    return value


def _recorded_reward(entry: Mapping[str, Any], info: Mapping[str, Any]) -> tuple[float | None, Any]:
    reward = entry.get("reward")
    reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    reward_info = info.get("reward_info") if isinstance(info.get("reward_info"), dict) else None
    return reward, (reward_info or {}).get("info")


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
    gold_hash = reward_info.get("gt_data_hash") if isinstance(reward_info, dict) else None
    era = v1.untouched_era(bench.domain.name, gold_hash)
    if era is None or not bench.gold_writes(task):
        return None
    return LogIssue(VACUOUS_DB_CHECK, f"the recorded gold DB hash ({gold_hash[:12]}…) is that of v1's untouched "
                                      f"{bench.domain.name} database (its data of {era.commits}), yet the gold "
                                      f"actions write: the run's tools did not write to the database v1 hashed, "
                                      f"so its DB verdict is vacuous")


@dataclass(frozen=True)
class FileReading:
    """What holds for every entry of a file: the strategy an entry that shows none is read as, the
    data version of the run, the reward rule it was scored under, and the reading in words
    (``meta["reading"]``, said once per file)."""

    default_strategy: str
    era: v1.DataEra
    current_rule: bool  # an entry shows v1's current reward rule
    rule: str  # the reward rule Y follows (:func:`..domain.v1.dated_rule`)
    summary: str


def rollout_from_entry(entry: Any, bench: TauV1Benchmark, model: str, method: str, source: str,
                       file: FileReading) -> Rollout:
    """One entry as a rollout, read by the agent strategy its own messages show (:func:`entry_strategy`,
    else the file's)."""
    if not isinstance(entry, dict):
        raise BadEntry("an entry must be an object")
    task_id = _whole(entry.get("task_id"), "task_id")
    trial = _whole(entry.get("trial"), "trial", default=0)
    info = entry.get("info")
    if not isinstance(info, dict):
        raise BadEntry("info must be an object")
    traj = entry.get("traj")
    if not isinstance(traj, list):
        raise BadEntry("traj must be a list of messages")
    error = info.get("error")
    if error is not None and not isinstance(error, str):
        raise BadEntry("info.error must be a string")
    domain = bench.domain.name
    strategy = entry_strategy(entry) or file.default_strategy
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
    read = _react_conversation if strategy == "react" else _conversation
    convo = read(traj, domain, errored=error is not None)
    meta |= {"user_turns": list(convo.user_turns), "termination_reason": convo.termination,
             "recorded_error_calls": list(convo.error_calls),
             "recorded_unknown_action_calls": list(convo.unknown_calls)}
    if convo.literal_calls:
        meta["literal_argument_calls"] = list(convo.literal_calls)
    if strategy == "react":
        meta["react_respond_fallbacks"] = len(convo.respond_fallbacks)
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


def _messages(entry: Any) -> list[dict[str, Any]]:
    traj = entry.get("traj") if isinstance(entry, dict) and isinstance(entry.get("traj"), list) else []
    return [m for m in traj if isinstance(m, dict)]


def _content(message: Mapping[str, Any]) -> str:
    return message["content"] if isinstance(message.get("content"), str) else ""


def entry_strategy(entry: Any) -> str | None:
    """The agent strategy an entry's own messages show: ``tool-calling`` where it holds tool calls
    or tool replies; ``react`` where a user message carries tool output as v1's ReAct agent writes it
    (``API output: …``) or an agent message an ``Action:`` that v1's ReAct agent reads as a JSON
    action; None where it shows neither (its messages then read alike either way, but for prose that
    happens to hold ``Action:``)."""
    messages = _messages(entry)
    if any(m.get("tool_calls") or m.get("role") == "tool" for m in messages):
        return "tool-calling"
    for m in messages:
        content = _content(m)
        if m.get("role") == "user" and content.startswith(v1.REACT_OUTPUT_PREFIX):
            return "react"
        if m.get("role") == "assistant" and v1.REACT_ACTION_MARKER in content \
                and not isinstance(react_action(content, ""), RespondText):
            return "react"
    return None


def _strategies(entries: list[Any]) -> tuple[list[str | None], str]:
    """Each entry's own strategy (:func:`entry_strategy`) and the one an entry that shows none is
    read as: that of most entries that show one (tool-calling, v1's default, on a tie or when none does)."""
    shown = [entry_strategy(e) for e in entries]
    counts = Counter(s for s in shown if s)
    default = "react" if counts["react"] > counts["tool-calling"] else "tool-calling"
    return shown, default


def shows_current_rule(entries: list[Any]) -> bool:
    """Whether the file shows v1's reward rule since 2024-11-10: an entry whose outputs were all
    found (``r_outputs`` 1) and still scored 0 — only the DB check, new for tasks with outputs, does
    that."""
    for entry in entries:
        info = entry.get("info") if isinstance(entry, dict) and isinstance(entry.get("info"), dict) else {}
        reward_info = info.get("reward_info") if isinstance(info.get("reward_info"), dict) else {}
        checks = reward_info.get("info") if isinstance(reward_info.get("info"), dict) else {}
        if checks.get("r_outputs") == 1 and entry.get("reward") == 0:
            return True
    return False


def _replies(entry: Any, strategy: str) -> Iterator[str]:
    """The tool replies an entry recorded (tool messages; a ReAct entry's ``API output:`` messages)."""
    for m in _messages(entry):
        content = _content(m)
        if strategy == "react" and m.get("role") == "user" and content.startswith(v1.REACT_OUTPUT_PREFIX):
            yield content[len(v1.REACT_OUTPUT_PREFIX):]
        elif strategy != "react" and m.get("role") == "tool":
            yield content


def _names_province(reply: str) -> bool:
    """A reply holding a user's address that names its state ``province`` (v1's data before 2025-01-16)."""
    key = v1.PROVINCE_ERA.region_key
    if key not in reply:
        return False
    try:
        value = json.loads(reply)
    except (ValueError, RecursionError):
        return False
    address = value.get("address") if isinstance(value, dict) else None
    return isinstance(address, dict) and key in address


def detect_era(entries: list[Any], strategies: list[str], domain: str) -> tuple[v1.DataEra, str]:
    """The version of v1's data the run used (:data:`..domain.v1.V1_DATA_ERAS`) and the evidence in words:
    replies holding a user's address with ``province`` (only the older data has it) and recorded gold
    hashes equal to an untouched database's. Without either, the current version (its addresses then
    show no difference)."""
    province = sum(_names_province(r) for e, s in zip(entries, strategies) for r in _replies(e, s))
    hashes: Counter = Counter()
    for entry in entries:
        info = entry.get("info") if isinstance(entry, dict) and isinstance(entry.get("info"), dict) else {}
        reward_info = info.get("reward_info") if isinstance(info.get("reward_info"), dict) else {}
        checks = reward_info.get("info") if isinstance(reward_info.get("info"), dict) else {}
        era = v1.untouched_era(domain, checks.get("gt_data_hash"))
        if era is not None:
            hashes[era.name] += 1
    era = v1.PROVINCE_ERA if province or hashes[v1.PROVINCE_ERA.name] else v1.DEFAULT_ERA
    shown = [f"{province} replies with a user address naming its 'province'"] if province else []
    shown += [f"{n} recorded gold hashes of the untouched {name!r}-version database" for name, n in sorted(hashes.items())]
    evidence = "; ".join(shown) if shown else "nothing in the file tells the versions apart: the current one"
    return era, f"v1's data of {era.commits} ({evidence})"


def _summary(shown: list[str | None], default: str, era_text: str) -> str:
    """The file's reading in words: how many entries each strategy read, and the data version."""
    read = [shown_strategy or default for shown_strategy in shown]
    parts = []
    for strategy in v1.STRATEGIES:
        lines = [i for i, s in enumerate(read, start=1) if s == strategy]
        if lines:
            where = f" (entries {', '.join(map(str, lines[:5]))}{', …' if len(lines) > 5 else ''})" \
                if len(lines) < len(read) else ""
            parts.append(f"{len(lines)} as the {strategy} agent wrote them{where}")
    unshown = sum(s is None for s in shown)
    said = f"; {unshown} of them show neither strategy's messages, read as {default}" if unshown else ""
    return f"τ-bench v1 results, per entry: {', '.join(parts)}{said}; {era_text}"


def _react_tools(traj: list[Any]) -> set[str]:
    """The tools of a ReAct trajectory's actions answered with a normal API output."""
    names: set[str] = set()
    for m, reply in zip(traj, traj[1:]):
        if not isinstance(m, dict) or not isinstance(reply, dict) or m.get("role") != "assistant" \
                or not isinstance(m.get("content"), str) or not isinstance(reply.get("content"), str):
            continue
        output = reply["content"]
        if not output.startswith(v1.REACT_OUTPUT_PREFIX) \
                or output[len(v1.REACT_OUTPUT_PREFIX):].startswith(v1.UNKNOWN_ACTION_PREFIX):
            continue
        action = react_action(m["content"], "")
        if isinstance(action, ToolCall) and action.name:
            names.add(action.name)
    return names


def _called_tools(traj: list[Any]) -> set[str]:
    """The tools of a tool-calling trajectory's calls answered with a normal result."""
    names: set[str] = set()
    calls: dict[Any, Any] = {}
    for m in traj:
        if not isinstance(m, dict):
            continue
        for c in m.get("tool_calls") or []:
            if isinstance(c, dict) and isinstance(c.get("function"), dict):
                calls[c.get("id")] = c["function"].get("name")
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and not content.startswith(v1.UNKNOWN_ACTION_PREFIX):
            name = calls.get(m.get("tool_call_id"))
            if isinstance(name, str):
                names.add(name)
    return names


def detect_domain(entries: list[Any], where: str, strategies: list[str]) -> str:
    """The file's domain from the tools of its gold actions and of calls answered with a normal
    result, each entry read by its strategy (raises :class:`V1ResultsError` when they name both
    domains or neither)."""
    names: set[str] = set()
    for entry, strategy in zip(entries, strategies):
        if not isinstance(entry, dict):
            continue
        info = entry.get("info") if isinstance(entry.get("info"), dict) else {}
        task = info.get("task") if isinstance(info.get("task"), dict) else {}
        names |= {a.get("name") for a in task.get("actions") or [] if isinstance(a, dict)}
        traj = entry.get("traj") if isinstance(entry.get("traj"), list) else []
        names |= _react_tools(traj) if strategy == "react" else _called_tools(traj)
    found = v1.domain_evidence(n for n in names if isinstance(n, str))
    if len(found) != 1:
        said = "both airline and retail" if found else "neither airline nor retail"
        raise V1ResultsError(f"{where}: the tools of its gold actions and calls name {said}; pass "
                             f"--tau-v1-domain airline|retail")
    return found.pop()


def is_v1_results(doc: Any) -> bool:
    """A JSON list whose entries have a ``traj``: v1's format."""
    return isinstance(doc, list) and any(isinstance(e, dict) and "traj" in e for e in doc)


def import_v1_results(path: str | Path, doc: list[Any], benchmark_for: Callable[[str], Benchmark],
                      model: str | None = None, method: str = "imported",
                      domain: str | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per usable entry of a parsed v1 result file, a :class:`BadLine` otherwise.

    ``domain`` overrides the detected one; ``benchmark_for`` maps ``tau_v1_<domain>`` to its adapter."""
    path = Path(path)
    shown, default = _strategies(doc)
    strategies = [s or default for s in shown]
    if domain is None:
        domain = detect_domain(doc, str(path), strategies)
    elif domain not in v1.V1_TOOLS:
        raise V1ResultsError(f"--tau-v1-domain is {domain!r}; expected airline or retail")
    bench = benchmark_for(v1_dataset_of(domain))
    assert isinstance(bench, TauV1Benchmark)
    era, era_text = detect_era(doc, strategies, domain)
    current = shows_current_rule(doc)
    rule, rule_text = v1.dated_rule(plain_name(path.name), era, current)
    summary = f"{_summary(shown, default, era_text)}; Y by v1's reward rule {rule} ({rule_text})"
    file = FileReading(default, era, current, rule, summary)
    # v1's entries record no model: its name is the file's (a compressed copy's too)
    named_by = None if model else ModelNamed(NamedBy.FILE_NAME, "the file name", str(path))
    model = model or Path(plain_name(path.name)).stem
    seen: dict[str, int] = {}
    for i, entry in enumerate(doc, start=1):
        task = excerpt_of(entry.get("task_id"))[:40] if isinstance(entry, dict) else "?"
        try:
            rollout = rollout_from_entry(entry, bench, model, method, str(path), file)
            if rollout.rollout_id in seen:
                raise BadEntry(f"duplicate of entry {seen[rollout.rollout_id]} (same task, trial and task definition)")
            seen[rollout.rollout_id] = i
            yield Located(str(path), i, rollout, named_by)
        except RECORD_SHAPE_ERRORS as exc:  # BadEntry, or a field of the wrong shape
            why = shape_reason(exc)
            yield BadLine(str(path), i, f"unusable τ-bench v1 entry (task {task}): {why}", None, excerpt_of(entry),
                          f"unusable τ-bench v1 entry: {why}", ("task", task))
