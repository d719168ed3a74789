"""Import τ-bench v1 result files (``run.py``'s output, ``historical_trajectories/``) into rollout
records of the ``tau_v1_airline``/``tau_v1_retail`` datasets (:mod:`.replay_v1`).

The file is a JSON list of entries ``{task_id, reward, info, traj, trial}`` (:mod:`.v1`). Per entry:

* turns: each user message opens a turn, except the user's stop message; the agent's messages until
  the next user message are its steps — a tool call (``function.arguments``, a JSON text, parsed as
  JSON; text that is not JSON makes an unparseable call, a schema failure) or a message to the user;
  ``role: tool`` replies are matched to their call by ``tool_call_id``; the system prompt is no action;
* ``meta``: the user's messages (``user_turns``), ``termination_reason`` (v1's: ``user_stop``,
  ``transfer_to_human_agents``, ``max_steps`` — neither happened within the recorded steps — or
  ``agent_error`` when ``info.error`` is set), the recorded reward and reward info, the ids of calls
  whose reply was an error (``Error…``) or ``Unknown action…`` (as 1-based positions among its calls,
  which are their action depths: v1 logs may reuse a call id), ``user_cost``, the task as an
  embedded definition (:mod:`.embedded`), the tau2 provenance, and ``v1_db_differs``: the ids of v1
  database records that differ from tau2's which the entry's calls, replies or gold name
  (:data:`.v1.V1_DB_DIFFERS`);
* ``recorded``: the reward as the log's verdict on Y (reward 1), and per call the reply the log
  recorded (:func:`recorded_reply`), for the audit to check itself against;
* ``trial`` from the entry; ``task_id`` as a string. The rollout id is made from the dataset, model,
  method, task id, trial and the task definition's sha256; a second entry with the same id is
  quarantined as a duplicate.

An entry whose run raised before any agent action (v1 writes ``traj: []`` and ``info.error``) is kept
as a rollout with ``infra_error`` set and no turns; one that raised after some actions is a normal
episode that ended with ``agent_error`` (v1 scores it 0). A call of a tool outside v1's stock set whose
reply is ``Unknown action …`` is the model's invention and is kept (a schema failure); one whose reply
is a normal result shows a run with extra tools, and the entry is quarantined — as is a stock tool
answered ``Unknown action`` (a run without it). Other quarantines: an entry that is not an object or
lacks ``task_id``/``traj``/``info.task``, a malformed message or task, a reply to an unknown call, a
call without a reply, a message after the user's stop. In a ``BadLine`` from this importer, ``line``
is the entry's 1-based position in the list.

Domain: the tools of the file's gold actions and of its calls answered with a normal result, where
they belong to one domain's stock set only (:func:`.v1.domain_evidence`); a file with evidence of
both domains or of none is refused unless ``--tau-v1-domain`` names it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...calls import ToolCall, structured_call
from ...contract import Benchmark
from ...decode import RECORD_SHAPE_ERRORS, excerpt_of, shape_reason
from ...records import (
    BadLine,
    Located,
    RecordedResult,
    Rollout,
    Step,
    call_like_text_steps,
    rollout_id_for,
)
from . import semantics as sem
from . import v1
from .data import TauDataError
from .embedded import KEY as EMBEDDED_KEY
from .embedded import EmbeddedTask
from .errors import TauResultsError
from .replay_v1 import TauV1Benchmark, v1_dataset_of


# A harness that refused a call before it ran says so in place of the tool's reply.
_REJECTED = re.compile(r"^\s*Execution of .{0,400}? was rejected\b", re.DOTALL)


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
    texts: tuple[str, ...]  # call arguments and replies, for the database-difference flag


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadEntry(f"{where}: content must be a string")
    return value


def _calls(message: Mapping[str, Any], where: str) -> tuple[ToolCall, ...]:
    raw = message.get("tool_calls")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadEntry(f"{where}.tool_calls must be a list")
    out = []
    for i, c in enumerate(raw):
        at = f"{where}.tool_calls[{i}]"
        function = c.get("function") if isinstance(c, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise BadEntry(f"{at}: a tool call needs a function with a name")
        if not isinstance(c.get("id"), str) or not c["id"]:
            raise BadEntry(f"{at}: tool call without an id (its reply cannot be matched to it)")
        arguments = function.get("arguments")
        if not isinstance(arguments, (str, dict)):
            raise BadEntry(f"{at}: function.arguments must be a JSON text")
        out.append(structured_call(function["name"], arguments, c["id"]))
    return tuple(out)


def _conversation(traj: list[Any], domain: str, errored: bool) -> _Conversation:
    stock = v1.V1_TOOLS[domain]
    turns: list[list[Step]] = []
    user_turns: list[str] = []
    pending: dict[str, tuple[str, int]] = {}  # call id → tool name and position, awaiting its reply
    errors: list[int] = []
    unknown: list[int] = []
    texts: list[str] = []
    recorded: dict[int, RecordedResult] = {}  # call position → the reply the log recorded
    stopped = False
    n_calls = 0
    last_reply: str | None = None  # tool name of the reply the trajectory ends with
    for k, m in enumerate(traj):
        where = f"traj[{k}]"
        if not isinstance(m, dict):
            raise BadEntry(f"{where}: a message must be an object")
        role = m.get("role")
        if stopped:
            raise BadEntry(f"{where}: message after the user's stop message")
        if role in ("user", "assistant") and pending:
            raise BadEntry(f"{where}: tool call(s) {sorted(pending)} have no reply")
        last_reply = None
        if role == "system":
            continue
        if role == "user":
            text = _text(m.get("content"), where)
            if v1.STOP_TOKEN in text and turns:
                stopped = True
                continue
            turns.append([])
            user_turns.append(text)
        elif role == "assistant":
            content = _text(m.get("content"), where)
            calls = _calls(m, where)
            if not turns:
                raise BadEntry(f"{where}: the agent spoke before the user's first message")
            turns[-1].append(Step(calls, (content or None) if calls else content))
            for c in calls:
                if c.call_id in pending:
                    raise BadEntry(f"{where}: call id {c.call_id!r} is used by two calls awaiting a reply")
                n_calls += 1
                pending[c.call_id or ""] = (c.name or "", n_calls)
            texts += [c.raw if c.raw is not None else json.dumps(c.kwargs, sort_keys=True) for c in calls]
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in pending:
                raise BadEntry(f"{where}: reply to an unknown or already answered call id {call_id!r}")
            name, position = pending.pop(call_id)
            reply = _text(m.get("content"), where)
            recorded[position] = recorded_reply(reply)
            texts.append(reply)
            last_reply = name
            if reply.startswith(v1.UNKNOWN_ACTION_PREFIX):
                if name in stock:
                    raise BadEntry(f"{where}: {name!r} is a stock τ-bench v1 {domain} tool, yet the reply is "
                                   f"{reply[:60]!r}: this run did not expose v1's stock tool set")
                unknown.append(position)
            elif name not in stock:
                raise BadEntry(f"{where}: tool {name!r} is not one of τ-bench v1's {domain} tools, yet its reply is a "
                               f"normal result: this run exposed extra tools")
            elif reply.startswith(v1.ERROR_PREFIX):
                errors.append(position)
        else:
            raise BadEntry(f"{where}: unknown role {role!r}")
    if pending:
        raise BadEntry(f"truncated: tool call(s) {sorted(pending)} have no reply")
    if stopped:
        termination = "user_stop"
    elif last_reply in v1.TERMINATE_TOOLS:
        termination = "transfer_to_human_agents"
    else:
        termination = "agent_error" if errored else "max_steps"
    return _Conversation(_with_results(turns, recorded), tuple(user_turns), tuple(errors), tuple(unknown),
                         termination, tuple(texts))


def recorded_reply(reply: str) -> RecordedResult:
    """A v1 tool reply as the log recorded it: v1 marks no errors, its replies say so
    (``Error: …``, ``Unknown action …``); a harness's refusal (``Execution of … was rejected``)
    shows the call never ran."""
    executed = _REJECTED.match(reply) is None
    error = reply.startswith((v1.ERROR_PREFIX, v1.UNKNOWN_ACTION_PREFIX)) or not executed
    return RecordedResult.of(reply, error, executed)


def _with_results(turns: list[list[Step]], recorded: Mapping[int, RecordedResult]) -> tuple[tuple[Step, ...], ...]:
    """The steps with each call's recorded reply (by the call's position in the trajectory)."""
    out, position = [], 0
    for turn in turns:
        steps = []
        for step in turn:
            if step.calls:
                positions = range(position + 1, position + 1 + len(step.calls))
                step = Step(step.calls, step.text, tuple(recorded.get(p) for p in positions))
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


def _db_differs(domain: str, texts: tuple[str, ...], gold: list[Any]) -> list[str]:
    haystack = "\n".join([*texts, json.dumps(gold, sort_keys=True, default=str)])
    return sorted(i for i in v1.V1_DB_DIFFERS[domain] if re.search(rf"\b{re.escape(i)}\b", haystack))


def _recorded_reward(entry: Mapping[str, Any], info: Mapping[str, Any]) -> tuple[float | None, Any]:
    reward = entry.get("reward")
    reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    reward_info = info.get("reward_info") if isinstance(info.get("reward_info"), dict) else None
    return reward, (reward_info or {}).get("info")


def rollout_from_entry(entry: Any, bench: TauV1Benchmark, model: str, method: str, source: str) -> Rollout:
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
    reward, reward_info = _recorded_reward(entry, info)
    meta: dict[str, Any] = {"results_format": v1.RESULTS_FORMAT, "recorded_reward": reward,
                            "recorded_reward_info": reward_info, "user_cost": info.get("user_cost"),
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
    convo = _conversation(traj, domain, errored=error is not None)
    meta |= {"user_turns": list(convo.user_turns), "termination_reason": convo.termination,
             "recorded_error_calls": list(convo.error_calls),
             "recorded_unknown_action_calls": list(convo.unknown_calls),
             "v1_db_differs": _db_differs(domain, convo.texts, task_obj.get("actions") or [])}
    rid = rollout_id_for(bench.dataset, model, method, task.id, trial, embedded.sha256)
    if not any(convo.turns):  # no agent action: the model call failed (or never came)
        return _infra(bench, task.id, trial, model, method, meta, error or "no agent action in the trajectory", rid)
    return Rollout(bench.dataset, task.id, model, method, rid, convo.turns, "import:tau-v1", meta, trial=trial,
                   recorded=sem.recorded_reward(reward, call_like_text_steps(convo.turns)))


def _infra(bench: TauV1Benchmark, task_id: str, trial: int, model: str, method: str, meta: dict[str, Any],
           error: str, rid: str | None = None) -> Rollout:
    rid = rid or rollout_id_for(bench.dataset, model, method, task_id, trial, "infra_error")
    meta = {"user_turns": [], "termination_reason": "agent_error", **meta}
    return Rollout(bench.dataset, task_id, model, method, rid, (), "import:tau-v1", meta, trial=trial,
                   recorded=sem.recorded_reward(meta.get("recorded_reward")),
                   infra_error=error.strip().splitlines()[-1][:500] if error.strip() else "model call failed")


def detect_domain(entries: list[Any], where: str) -> str:
    """The file's domain from the tools of its gold actions and of calls answered with a normal
    result (raises :class:`V1ResultsError` when they name both domains or neither)."""
    names: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        info = entry.get("info") if isinstance(entry.get("info"), dict) else {}
        task = info.get("task") if isinstance(info.get("task"), dict) else {}
        names |= {a.get("name") for a in task.get("actions") or [] if isinstance(a, dict)}
        calls: dict[Any, Any] = {}
        for m in entry.get("traj") or []:
            if not isinstance(m, dict):
                continue
            for c in m.get("tool_calls") or []:
                if isinstance(c, dict) and isinstance(c.get("function"), dict):
                    calls[c.get("id")] = c["function"].get("name")
            content = m.get("content")
            if m.get("role") == "tool" and isinstance(content, str) \
                    and not content.startswith(v1.UNKNOWN_ACTION_PREFIX):
                names.add(calls.get(m.get("tool_call_id")))
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
    if domain is None:
        domain = detect_domain(doc, str(path))
    elif domain not in v1.V1_TOOLS:
        raise V1ResultsError(f"--tau-v1-domain is {domain!r}; expected airline or retail")
    bench = benchmark_for(v1_dataset_of(domain))
    assert isinstance(bench, TauV1Benchmark)
    model = model or path.stem
    seen: dict[str, int] = {}
    for i, entry in enumerate(doc, start=1):
        task = excerpt_of(entry.get("task_id"))[:40] if isinstance(entry, dict) else "?"
        try:
            rollout = rollout_from_entry(entry, bench, model, method, str(path))
            if rollout.rollout_id in seen:
                raise BadEntry(f"duplicate of entry {seen[rollout.rollout_id]} (same task, trial and task definition)")
            seen[rollout.rollout_id] = i
            yield Located(str(path), i, rollout)
        except RECORD_SHAPE_ERRORS as exc:  # BadEntry, or a field of the wrong shape
            yield BadLine(str(path), i, f"unusable τ-bench v1 entry (task {task}): {shape_reason(exc)}", None,
                          excerpt_of(entry))
