"""AgentProcessBench's BFCL trajectory records (data sources ``bfcl_multi_turn_*``) → BFCL rollouts.

A record holds one BFCL multi-turn entry run by one model as chat messages in OpenAI's shape
(``meta.bfcl_id``, ``meta.model_name``): a system prompt, before each user turn a ``<state_info>``
system message, the user's question, then the model's messages and the tool messages answering
them. Read message for message:

* each user message opens a turn; each assistant message is one step — its ``tool_calls`` the
  step's calls (``function.arguments`` a JSON text; one that is no JSON object is a schema failure),
  or, where the model wrote its calls as ``<tool_call>`` blocks in its text (Qwen's function calling)
  and the tool messages after it answer them, those calls as BFCL's Qwen handler reads them
  (:func:`.decoders.tool_call_tags`); otherwise its text;
* the tool messages after a step are the results the run recorded for its calls, in call order (a
  BFCL error is what BFCL's executor reports as one, :func:`.result_entry.recorded_error`);
* ``reward_info.reward`` is BFCL's verdict (its ``BFCL_VALIDATION``, 1 or 0); the release is
  chosen from the records as for a result file (:func:`.versions.choose_release`: the tool results
  they recorded, replayed on each release's classes, then their turns, the initial configuration in
  ``meta_info`` and the ground truth), and a run that does not fit it is flagged ``data_version``.
  The published records are a mixed case: their tool results are 2026.3.23's (``echo`` into a
  missing file errs, as it does there), their ground truth of ``multi_turn_base_10`` is 2025.9.29's
  — so they are scored on 2026.3.23, both said, and those entries flagged;
* ``meta.record_id`` is the record's ``label_record_id``; each step keeps its message's position.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, JsonLine, shape_reason
from prefix_audit.core.records import call_like_text_steps, model_in_log
from prefix_audit.plugin import (
    BadLine,
    ImportRequest,
    Located,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    TrajectoryReader,
    parse_call_string,
    rollout_id_for,
    structured_call,
)

from .data import CATEGORIES, DATASET
from .decoders import tool_call_tags
from .importer import of_known_tasks
from .reading import bfcl_reading
from .result_entry import StepError, recorded_error
from .versions import RecordedRun

SOURCE_PREFIX = "bfcl_multi_turn_"
_ROLES = {"system": "system", "user": "user", "assistant": "agent", "tool": "tool"}


@dataclass
class _Trajectory:
    """A record's messages read as BFCL turns."""

    turns: list[list[Step]]
    roles: list[str]
    questions: dict[int, tuple[str, ...]]


def _calls(m: Mapping[str, Any], where: str) -> tuple[ToolCall, ...]:
    raw = m.get("tool_calls")
    if not isinstance(raw, list):
        raise StepError(f"{where}.tool_calls must be a list")
    calls = []
    for i, c in enumerate(raw):
        function = c.get("function") if isinstance(c, dict) else None
        if not isinstance(function, dict):
            raise StepError(f"{where}.tool_calls[{i}] must be an object with a 'function'")
        calls.append(structured_call(function.get("name"), function.get("arguments"), c.get("id")))
    return tuple(calls)


def _tagged_calls(text: str) -> tuple[ToolCall, ...]:
    """The ``<tool_call>`` blocks of a step's text as BFCL's Qwen handler reads them (none where they do not read)."""
    if "<tool_call>" not in text:
        return ()
    try:
        return tuple(parse_call_string(call) for call in tool_call_tags(text))
    except RECORD_SHAPE_ERRORS:
        return ()


def _answered(messages: Sequence[Any], k: int) -> int:
    """How many tool messages follow message ``k`` before the next message of another role."""
    n = 0
    while k + 1 + n < len(messages) and isinstance(messages[k + 1 + n], dict) \
            and messages[k + 1 + n].get("role") == "tool":
        n += 1
    return n


def _role_and_content(message: Any, where: str) -> tuple[str, str | None]:
    """A message's role (one of :data:`_ROLES`) and text content, checked."""
    if not isinstance(message, dict):
        raise StepError(f"{where}: a message must be an object")
    role, content = message.get("role"), message.get("content")
    if content is not None and not isinstance(content, str):
        raise StepError(f"{where}: content must be a string")
    if role not in _ROLES:
        raise StepError(f"{where}: unknown role {role!r}")
    return role, content


def trajectory_of(messages: Any) -> _Trajectory:
    if not isinstance(messages, list):
        raise StepError("'messages' must be a list")
    read = _Trajectory([], [], {})
    pending: list[int] = []  # (turn, step) of the last step, while its calls await results
    results: list[RecordedResult] = []
    for k, m in enumerate(messages):
        where = f"messages[{k}]"
        role, content = _role_and_content(m, where)
        read.roles.append(_ROLES[role])
        if role != "tool" and pending:
            _attach(read, pending, results)
        if role == "user":
            read.questions.setdefault(len(read.turns), ())
            read.questions[len(read.turns)] += (content or "",)
            read.turns.append([])
        elif role == "assistant":
            if not read.turns:
                raise StepError(f"{where}: the model spoke before the user's first message")
            calls = _calls(m, where) if m.get("tool_calls") else ()
            if not calls:  # calls written as text: calls where the run answered them
                tagged = _tagged_calls(content or "")
                calls = tagged if tagged and _answered(messages, k) == len(tagged) else ()
            read.turns[-1].append(Step(calls, None if calls else content or "", message=k))
            if calls:
                pending = [len(read.turns) - 1, len(read.turns[-1]) - 1]
                results = []
        elif role == "tool":
            if not pending:
                raise StepError(f"{where}: a tool message that answers no call")
            results.append(RecordedResult.of(content or "", recorded_error(content or "")))
    if pending:
        _attach(read, pending, results)
    return read


def _attach(read: _Trajectory, pending: list[int], results: list[RecordedResult]) -> None:
    t, s = pending
    step = read.turns[t][s]
    if len(results) > len(step.calls):
        raise StepError(f"turn {t} step {s}: {len(results)} tool messages answer {len(step.calls)} call(s)")
    read.turns[t][s] = Step(step.calls, step.text, (*results, *[None] * (len(step.calls) - len(results))),
                            step.message)
    pending.clear()


def _run(entry_id: str, record: Mapping[str, Any], read: _Trajectory) -> RecordedRun:
    info = found if isinstance(found := record.get("meta_info"), dict) else {}
    classes, config = info.get("involved_classes"), info.get("initial_config")
    state = {k: v for k, v in config.items() if k in classes and isinstance(v, dict)} \
        if isinstance(config, dict) and isinstance(classes, list) else {}
    truth = record.get("ground_truth")
    return RecordedRun(entry_id, len(read.turns), read.questions, state,
                       tuple(map(str, classes)) if isinstance(classes, list) else None,
                       tuple(tuple(map(str, t)) for t in truth)
                       if isinstance(truth, list) and all(isinstance(t, list) for t in truth) else None)


def _verdict(record: Mapping[str, Any]) -> tuple[int | None, str]:
    info = record.get("reward_info")
    reward = info.get("reward") if isinstance(info, dict) else None
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or reward not in (0, 1):
        return None, f"AgentProcessBench records no 0/1 reward ({reward!r})"
    return int(reward), f"AgentProcessBench reward_info: BFCL's validation {int(reward)}"


def _located(line: JsonLine, request: ImportRequest, read: _Trajectory) -> Located:
    """A record as a rollout, on the benchmark's own release until one is chosen for its file, with
    where its model name came from."""
    record = line.value
    meta_in = record["meta"]
    entry_id = meta_in["bfcl_id"]
    model, named_by = model_in_log(request.model, meta_in.get("model_name"), "meta.model_name", str(line.path))
    record_id = record.get("label_record_id")
    turns = tuple(tuple(t) for t in read.turns)
    meta = {"reading": "AgentProcessBench BFCL records, calls as the run executed them",
            **({"record_id": record_id} if isinstance(record_id, str) else {})}
    rid = rollout_id_for(DATASET, model, request.method, entry_id, record_id if isinstance(record_id, str) else "")
    return Located(line.path, line.line, Rollout(DATASET, entry_id, model, request.method, rid, turns,
                                                 source="import:agentprocessbench", meta=meta,
                                                 recorded=Recorded.of(*_verdict(record), call_like_text_steps(turns)),
                                                 message_roles=tuple(read.roles)), named_by)


def read_records(lines: Sequence[JsonLine], request: ImportRequest) -> Iterator[Located | BadLine]:
    """Every record as a BFCL rollout, on the release chosen from all of them (:func:`.versions.choose_release`)."""
    bench = request.open(DATASET)
    reading = bfcl_reading(bench)
    read: list[tuple[JsonLine, _Trajectory] | BadLine] = []
    for line in lines:
        meta = line.value.get("meta")
        try:
            if not isinstance(meta, dict) or not isinstance(meta.get("bfcl_id"), str):
                raise StepError("meta.bfcl_id (the BFCL entry id) must be a string")
            read.append((line, trajectory_of(line.value.get("messages"))))
        except RECORD_SHAPE_ERRORS as exc:
            read.append(BadLine(line.path, line.line, f"unusable AgentProcessBench BFCL record: {shape_reason(exc)}",
                                None, line.excerpt))
    runs = [_run(item[0].value["meta"]["bfcl_id"], item[0].value, item[1]) for item in read
            if not isinstance(item, BadLine)]
    rollouts = [item if isinstance(item, BadLine) else _located(item[0], request, item[1]) for item in read]
    data = reading.choose(runs, request.source.name, [item.rollout for item in rollouts if isinstance(item, Located)])
    yield from of_known_tasks((item if isinstance(item, BadLine) else
                               replace(item, rollout=data.scored(item.rollout)) for item in rollouts), bench)


TRAJECTORY_SOURCES: Mapping[str, TrajectoryReader] = {f"{SOURCE_PREFIX}{c}": read_records for c in CATEGORIES}
