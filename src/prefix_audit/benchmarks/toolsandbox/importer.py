"""Import real ToolSandbox run folders into rollout records (dataset ``toolsandbox_recorded``).

A run folder (``agent_<agent>_user_<user>_<date>``) holds ``result_summary.json`` (per scenario:
name, categories, similarity, milestone/minefield similarity, ``exception_type`` and ``traceback``
when the scenario aborted) and ``trajectories/<scenario>/`` with ``execution_context.json`` (the
message log ``_dbs.SANDBOX``, database snapshots, allow/deny lists) and, unless the scenario
aborted, ``conversation.json`` (the agent's OpenAI-format view).

The rollout is rebuilt from the message log, which every scenario has: a user message to the
agent opens a turn; consecutive agent tool-call requests form one step (a parallel tool-call
message); an agent message to the user is a text step. Call arguments are read from the logged
``<id>_parameters = {...}`` line with :func:`ast.literal_eval` (literals only, never executed),
the tool from the ``<id>_response = <tool>(...)`` line. Each call's recorded outcome is matched by
its tool-call id, never by position (ToolSandbox executes a parallel message in the first ordering
that fails). When ``conversation.json`` exists its tool calls must agree with the log.

A scenario that aborted on a tool outside the allow list (``KeyError``) has no conversation and
the rejected call only in ``result_summary.json``: it is appended as a call of that tool with
unknown arguments. A scenario aborted by anything else (ToolSandbox's runner catches every
exception and scores the scenario 0) is an episode all the same: its logged actions are scored and
the exception kept in meta (``exception_type``, ``exception``), or, when the agent had done nothing
yet, it is an infrastructure failure (``infra_error``, docs/definitions.md#infrastructure-failures). The
calls of its last step may lack a response when the abort came while they were executed (ToolSandbox's
own consistency check of a tool trace, for instance): they are kept, with no recorded outcome
(``meta.toolsandbox.unanswered``), and replay takes them as accepted. A scenario whose files are missing,
malformed or inconsistent is quarantined with its reason; the other scenarios are still imported.

Run folders are found at any depth under the path given. ToolSandbox names a run folder
``agent_<agent>_user_<user>_<%m_%d_%Y_%H_%M_%S>`` after the agent's and the user's model names;
a ``/`` in a name splits that path over folders (``agent_openai/gpt-4o-mini_user_openai/gpt-4o_…``),
so the run's name and its agent model are read from the run folder and as many of its parents as
the name spans (:func:`run_name`, :func:`model_of`).

Y comes from ToolSandbox's similarity (1.0 = success); the raw similarities, categories, turn
count and exception are kept in ``meta.toolsandbox``. Exception texts are normalised
(:func:`~prefix_audit.benchmarks.toolsandbox.recorded.normalize_exception`).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, shape_reason
from prefix_audit.core.records import ModelNamed, NamedBy, call_like_text_steps
from prefix_audit.plugin import (
    BadLine,
    BadRecord,
    CallLedger,
    DecodeError,
    ImportRequest,
    Located,
    MessageLoop,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    chat_role,
    read_json_document,
    rollout_id_for,
    structured_call,
)

from .recorded import DATASET, RECORD_KEY, SCORE_NAME, normalize_exception

ABORTED_CALL_ID = "toolsandbox-aborted-call"
_RUN_NAME = re.compile(r"^agent_(?P<agent>.+?)_user_(?P<user>.+)_\d{2}_\d{2}_\d{4}_\d{2}_\d{2}_\d{2}$", re.DOTALL)
_NAME_DEPTH = 8  # the most folders one run name may span (model names with up to 7 '/' in all)
# ToolSandbox writes a call as ``<id>_parameters = {...}`` and ``<id>_response = <tool>(**<id>_parameters)``
# with the model's call id as it came, which need not be a Python name (then its run fails the call).
_PARAMETERS = re.compile(r"^(.+?)_parameters = (.*)$")
_DISALLOWED = re.compile(r"agent_facing_tool_name='([^']*)' is not a known allowed tool")
_IMPORTS = re.compile(r"^from \S+ import (.+)$", re.MULTILINE)
_ID_COLUMNS = {"CONTACT": "person_id", "MESSAGING": "message_id", "REMINDER": "reminder_id"}


class ScenarioError(BadRecord):
    """Why a scenario cannot be imported: ``reason``, and where in its files (a message), said apart so
    that quarantine summaries count scenarios by reason."""


def run_folders(source: str | Path) -> list[Path]:
    """The run folder ``source`` (or the one whose result_summary.json it is), or every run folder
    at any depth under it (a run folder's own subfolders are not searched), sorted."""
    source = Path(source)
    if source.name == "result_summary.json" and source.is_file():
        return [source.parent]
    if (source / "result_summary.json").is_file():
        return [source]
    if source.is_dir():
        runs = _runs_under(source)
        if runs:
            return runs
    raise FileNotFoundError(f"no ToolSandbox run folder (a folder with result_summary.json) at or under {source}")


def _runs_under(root: Path) -> list[Path]:
    """The run folders under ``root``, sorted; a folder that cannot be listed is an error, not skipped."""
    def fail(exc: OSError) -> None:
        raise exc

    runs = []
    for folder, subfolders, _files in os.walk(root, onerror=fail):  # symbolic links to folders are not followed
        if (Path(folder) / "result_summary.json").is_file():
            runs.append(Path(folder))
            subfolders.clear()
    return sorted(runs)


def is_run(path: Path) -> bool:
    """A ToolSandbox run folder, a folder with one at any depth, or a run's result_summary.json."""
    try:
        return bool(run_folders(path))
    except (FileNotFoundError, OSError):
        return False


def is_run_folder(path: Path) -> bool:
    """A ToolSandbox run folder itself (its result_summary.json inside), not a folder holding runs."""
    return (path / "result_summary.json").is_file()


def run_name(run: Path) -> str:
    """ToolSandbox's name of the run folder ``run``: ``agent_<agent>_user_<user>_<date>``, read from
    the folder and, where a model name held ``/``, from the parents it was split over (the fewest
    that make a whole name); the folder's own name when none does."""
    parts = Path(os.path.abspath(run)).parts
    for depth in range(1, min(_NAME_DEPTH, len(parts) - 1) + 1):
        name = "/".join(parts[-depth:])
        if _RUN_NAME.match(name):
            return name
    return run.name


def model_of(run: Path) -> tuple[str, ModelNamed]:
    """The agent's model name in the run's name (``openai/gpt-4o-mini``), else the folder's name; and
    where it came from. A model name holding ``_user_`` is ambiguous in ToolSandbox's naming; the
    first one splits."""
    name = run_name(run)
    match = _RUN_NAME.match(name)
    if match is None:
        return name, ModelNamed(NamedBy.FOLDER, "the run folder's name", str(run))
    return match.group("agent"), ModelNamed(NamedBy.FOLDER, "the agent in the run folder's name", str(run))


def _load_json(path: Path) -> Any:
    try:
        return read_json_document(path)
    except DecodeError as exc:
        raise ScenarioError(str(exc)) from None


# --- the message log -----------------------------------------------------------------------------


def _rows(context: Any, namespace: str) -> list[dict[str, Any]]:
    dbs = context.get("_dbs") if isinstance(context, dict) else None
    rows = dbs.get(namespace) if isinstance(dbs, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("sandbox_message_index"), int)
                                             for r in rows):
        raise ScenarioError(f"execution_context.json: _dbs.{namespace} must be a list of rows with a "
                            f"sandbox_message_index")
    return rows


def _request(row: Mapping[str, Any]) -> ToolCall:
    where = f"message {row['sandbox_message_index']}"
    lines = str(row.get("content") or "").splitlines()
    params = _PARAMETERS.match(lines[0]) if lines else None
    response = re.match(rf"^{re.escape(params.group(1))}_response = (\w+)\(", lines[1]) \
        if params is not None and len(lines) > 1 else None
    if params is None or response is None:
        raise ScenarioError("not a logged tool call", where)
    try:
        arguments = ast.literal_eval(params.group(2))
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ScenarioError(f"tool-call arguments are not a literal: {exc}", where) from None
    call_id = row.get("openai_tool_call_id") or params.group(1)
    return structured_call(response.group(1), arguments, str(call_id))


def _result(row: Mapping[str, Any]) -> Any:
    traces = row.get("tool_trace") or []
    for trace in traces:
        try:
            return json.loads(trace)["result"]
        except (TypeError, ValueError, KeyError):
            continue
    return row.get("content")


def _first_user_index(sandbox: list[dict[str, Any]]) -> int:
    """Where the scenario starts: the first user message that is not a user-simulator example."""
    for row in sandbox:
        if row.get("sender") == "USER" and row.get("visible_to") != ["USER"]:
            return row["sandbox_message_index"]
    raise ScenarioError("the message log has no user message")


def _snapshots(context: Any) -> list[tuple[int, frozenset[str]]]:
    """(index, object ids present) after every database snapshot, in index order. A table without
    a snapshot at an index keeps its previous contents; the all-null headguard row is no object."""
    per_table: dict[str, dict[int, set[str]]] = {}
    for namespace, column in _ID_COLUMNS.items():
        snaps = per_table[namespace] = {}
        for row in _rows(context, namespace):
            ids = snaps.setdefault(row["sandbox_message_index"], set())
            if row.get(column) is not None:
                ids.add(str(row[column]))
    current: dict[str, set[str]] = {ns: set() for ns in _ID_COLUMNS}
    merged = []
    for index in sorted({i for snaps in per_table.values() for i in snaps}):
        for namespace, snaps in per_table.items():
            current[namespace] = snaps.get(index, current[namespace])
        merged.append((index, frozenset().union(*current.values())))
    return merged


def _gone_before(snapshots: list[tuple[int, frozenset[str]]], index: int) -> list[str]:
    seen: set[str] = set()
    now: frozenset[str] = frozenset()
    for at, present in snapshots:
        if at > index:
            break
        seen |= present
        now = present
    return sorted(seen - now)


def _universe(sandbox: list[dict[str, Any]]) -> list[str]:
    for row in sandbox:
        if row.get("sender") == "SYSTEM" and row.get("recipient") == "EXECUTION_ENVIRONMENT":
            return sorted({name.strip() for line in _IMPORTS.findall(str(row.get("content") or ""))
                           for name in line.split(",") if name.strip()})
    return []


# The routes (sender, recipient) of the messages a rollout is read from; the others (the system's) are no
# part of the agent's record.
_CALL, _USER_SAYS, _AGENT_SAYS, _RESPONSE = (("AGENT", "EXECUTION_ENVIRONMENT"), ("USER", "AGENT"), ("AGENT", "USER"),
                                             ("EXECUTION_ENVIRONMENT", "AGENT"))


class _Builder(MessageLoop):
    """ToolSandbox's dialect: the message log of one scenario, from the user's first message, into turns,
    steps and recorded outcomes. A message's kind is its route (sender → recipient); the agent's calls in
    a row are one step."""

    error = ScenarioError

    def __init__(self, context: Any) -> None:
        super().__init__()
        rows = _rows(context, "SANDBOX")
        for row in rows:  # only the all-null headguard row of a snapshot may lack a sender
            if row.get("sender") is None and any(v is not None for k, v in row.items() if k != "sandbox_message_index"):
                raise ScenarioError("a logged message without a sender", f"message {row['sandbox_message_index']}")
        self.sandbox = sorted((r for r in rows if r.get("sender") is not None),
                              key=lambda r: r["sandbox_message_index"])
        self.start = _first_user_index(self.sandbox)
        self.snapshots = _snapshots(context)
        self.calls: dict[str, dict[str, Any]] = {}  # call id → what the rollout's record keeps of it
        self.ledger = CallLedger()  # each call's outcome, matched by its tool-call id
        self.roles = _message_roles(self.sandbox)
        self.pending: list[ToolCall] = []  # the agent's calls in a row so far: one step
        self.pending_at: list[int] = []  # the pending calls' messages
        self.read((index, f"message {index}", row) for row in self.sandbox
                  if (index := row["sandbox_message_index"]) >= self.start)

    def kind(self, row: Mapping[str, Any]) -> Any:
        return row.get("sender"), row.get("recipient")

    def before(self, kind: Any, row: Mapping[str, Any], where: str) -> None:
        if kind != _CALL:
            self._end_step()

    def _call(self, row: Mapping[str, Any], index: int, where: str) -> None:
        call = _request(row)
        assert call.call_id is not None  # _request names every call (its OpenAI id, else its variable)
        if call.call_id in self.calls:
            raise ScenarioError(f"tool-call id {call.call_id!r} appears twice")
        self.calls[call.call_id] = {"error": None, "result": None, "gone": _gone_before(self.snapshots, index)}
        self.ledger.open(call)
        self.pending.append(call)
        self.pending_at.append(index)

    def _user_says(self, row: Mapping[str, Any], index: int, where: str) -> None:
        self.open_turn(str(row.get("content") or ""))

    def _agent_says(self, row: Mapping[str, Any], index: int, where: str) -> None:
        self.add_step(Step((), str(row.get("content") or ""), message=index))

    def _end_step(self) -> None:
        """The agent's calls in a row so far, as one step."""
        if self.pending:
            self.add_step(Step(tuple(self.pending), message=self.pending_at[0], call_messages=tuple(self.pending_at)))
            self.pending, self.pending_at = [], []

    def _response(self, row: Mapping[str, Any], index: int, where: str) -> None:
        cid = row.get("openai_tool_call_id")
        if cid not in self.calls:
            raise ScenarioError("a response to an unknown tool call",
                                f"message {row['sandbox_message_index']} ({cid!r})")
        if not self.ledger.waits(cid):
            raise ScenarioError("a second response to a tool call", f"message {row['sandbox_message_index']} ({cid!r})")
        exception = row.get("tool_call_exception")
        if not (exception is None or isinstance(exception, str)):
            raise ScenarioError("tool_call_exception must be text or null", f"message {row['sandbox_message_index']}")
        entry = self.calls[cid]
        if exception:
            entry["error"] = normalize_exception(str(exception))
            self.ledger.answer(cid, RecordedResult.of(entry["error"], True))
        else:
            value = entry["result"] = _result(row)
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
            self.ledger.answer(cid, RecordedResult.of(text, False))

    handlers = {_CALL: _call, _USER_SAYS: _user_says, _AGENT_SAYS: _agent_says, _RESPONSE: _response}

    def unknown(self, kind: Any, row: Mapping[str, Any], where: str) -> None:
        """A message of another route (the system's): no part of the agent's record."""

    def end(self) -> None:
        self._end_step()


# who sent a message of the execution context (Rollout.message_roles), and how many messages one may have
MAX_MESSAGES = 10**6
SENDER_ROLES = {"SYSTEM": "system", "USER": "user", "AGENT": "agent", "EXECUTION_ENVIRONMENT": "tool"}


def _message_roles(sandbox: list[dict[str, Any]]) -> tuple[str, ...]:
    """Who sent each message of the log, by its ``sandbox_message_index`` (a number the log skips: ``other``)."""
    indices = [row["sandbox_message_index"] for row in sandbox]
    bad = next((i for i in indices if isinstance(i, bool) or not 0 <= i < MAX_MESSAGES), None)
    if bad is not None:
        raise ScenarioError(f"sandbox_message_index {bad!r} is no message position (0 to {MAX_MESSAGES - 1})")
    roles = ["other"] * (max(indices, default=-1) + 1)
    for row in sandbox:
        roles[row["sandbox_message_index"]] = chat_role(row.get("sender"), SENDER_ROLES)
    return tuple(roles)


def _check_conversation(path: Path, requests: list[ToolCall], sandbox: list[dict[str, Any]]) -> None:
    """The tool calls of conversation.json, in order, must be the logged requests."""
    conversation = _load_json(path)
    if not isinstance(conversation, list):
        raise ScenarioError("conversation.json must be a list of messages")
    names = {r.get("openai_tool_call_id"): r.get("openai_function_name") for r in sandbox}
    emitted = []
    for position, message in enumerate(conversation, start=1):
        if isinstance(message, dict) and message.get("role") == "assistant":
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise ScenarioError(f"conversation.json: message {position} has tool_calls that are not a list")
            for k, tc in enumerate(tool_calls, start=1):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict):
                    raise ScenarioError(f"conversation.json: tool call {k} of message {position} is not an object "
                                        "with a 'function' object")
                try:
                    arguments = json.loads(fn.get("arguments") or "{}")
                except (TypeError, ValueError):
                    arguments = fn.get("arguments")
                emitted.append((tc.get("id"), fn.get("name"), arguments))
    logged = [(c.call_id, names.get(c.call_id), c.kwargs) for c in requests]
    if emitted != logged:
        raise ScenarioError(f"conversation.json tool calls {[e[:2] for e in emitted]} disagree with the "
                            f"execution log {[entry[:2] for entry in logged]}")


def _summary_entry(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ScenarioError("a per_scenario_results entry needs a non-empty 'name'")
    similarity = entry.get("similarity")
    if isinstance(similarity, bool) or not isinstance(similarity, (int, float)) or not 0.0 <= similarity <= 1.0:
        raise ScenarioError(f"similarity must be a number in [0, 1], got {similarity!r}")
    if "/" in entry["name"] or "\x00" in entry["name"] or entry["name"] in (".", ".."):
        raise ScenarioError(f"scenario name {entry['name']!r} is not a folder name")
    return entry


def _abort(entry: dict[str, Any]) -> tuple[ToolCall | None, str]:
    """The call a scenario aborted on (None: it aborted outside an agent tool call, e.g. the model
    call failed) and the exception's last line."""
    traceback = normalize_exception(str(entry.get("traceback") or ""))
    last = next((line for line in reversed(traceback.splitlines()) if line.strip()), "")
    match = _DISALLOWED.search(last)
    if entry.get("exception_type") != "KeyError" or match is None:
        return None, last
    return ToolCall(match.group(1), (), {}, call_id=ABORTED_CALL_ID, structured=True), last


def _unanswered(built: _Builder, aborted: str | None) -> list[str]:
    """The tool calls without a recorded response: allowed only in the last step of a scenario
    that aborted (it aborted while they executed); anything else is an inconsistent log."""
    unanswered = [c.call.call_id or "" for c in built.ledger.waiting()]
    last = next((turn[-1] for turn in reversed(built.turns) if turn), None)
    in_last_step = last is not None and set(unanswered) <= {c.call_id for c in last.calls}
    if unanswered and not (aborted and in_last_step):
        raise ScenarioError(f"tool call(s) without a recorded response: {', '.join(unanswered)}")
    for cid in unanswered:
        built.calls[cid]["unanswered"] = True
    return unanswered


def scenario_rollout(run: Path, entry: Any, model: str, method: str) -> Rollout:
    entry = _summary_entry(entry)
    name = entry["name"]
    folder = run / "trajectories" / name
    context = _load_json(folder / "execution_context.json")
    if not isinstance(context, dict):
        raise ScenarioError("execution_context.json must be an object")
    built = _Builder(context)
    logged = [c.call for c in built.ledger.calls]  # the calls of the message log (not the one it aborted on)
    aborted = entry.get("exception_type")
    if not (aborted is None or isinstance(aborted, str)):
        raise ScenarioError(f"exception_type must be text or null, got {aborted!r}")
    unanswered = _unanswered(built, aborted)
    infra_error, exception = None, None
    if aborted:
        call, error = _abort(entry)
        exception = (error if error.startswith(aborted) else f"{aborted}: {error}")[:500]
        if call is not None:
            built.add_step(Step((call,)))
            built.calls[ABORTED_CALL_ID] = {"error": error, "result": None, "gone": [], "arguments_unknown": True}
            built.ledger.record(built.ledger.open(call).position, RecordedResult.of(error, True))
        elif not any(turn for turn in built.turns):
            # Aborted before the agent did anything: the model call itself failed
            # (docs/definitions.md#infrastructure-failures).
            infra_error = exception
        # Aborted after some actions: those are scored, the abort is in meta.
    if (folder / "conversation.json").exists():
        _check_conversation(folder / "conversation.json", logged, built.sandbox)
    elif not aborted:
        raise ScenarioError("missing conversation.json although the scenario did not abort")
    record = {"user_turns": built.user_turns, "allowed": context.get("tool_allow_list"),
              "denied": context.get("tool_deny_list"), "tools": _universe(built.sandbox), "calls": built.calls}
    label = run_name(run)
    meta = {RECORD_KEY: {"run": label, "scenario": name, "similarity": entry["similarity"],
                         "milestone_similarity": entry.get("milestone_similarity"),
                         "minefield_similarity": entry.get("minefield_similarity"),
                         "categories": entry.get("categories"), "turn_count": entry.get("turn_count"),
                         "exception_type": aborted or None, "exception": exception,
                         "unanswered": unanswered}}
    rid = rollout_id_for(DATASET, model, method, name, label)
    turns = () if infra_error is not None else built.ledger.attach(built.turns)
    similarity = float(entry["similarity"])
    verdict = Recorded.of(int(similarity >= 1.0), f"similarity {similarity:g}", call_like_text_steps(turns),
                          score=similarity, score_name=SCORE_NAME)
    return Rollout(DATASET, name, model, method, rid, turns,
                   source="import:toolsandbox", meta=meta, extra={RECORD_KEY: record},
                   infra_error=infra_error, recorded=verdict, message_roles=built.roles if turns else ())


def import_runs(source: str | Path, model: str | None = None, method: str = "imported") -> Iterator[Located | BadLine]:
    """A located rollout per usable scenario of every run folder under ``source``, a
    :class:`BadLine` (path, 1-based position in ``per_scenario_results``, reason) otherwise."""
    for run in run_folders(source):
        summary_path = run / "result_summary.json"
        try:
            summary = _load_json(summary_path)
            entries = summary.get("per_scenario_results") if isinstance(summary, dict) else None
            if not isinstance(entries, list):
                raise ScenarioError("result_summary.json has no 'per_scenario_results' list")
        except ScenarioError as exc:
            yield BadLine(str(summary_path), 0, f"unusable ToolSandbox run: {exc}")
            continue
        seen: set[str | None] = set()  # an entry without a name counts as None: a second one is refused
        agent, named_by = (model, None) if model else model_of(run)
        for position, entry in enumerate(entries, start=1):
            label = entry.get("name") if isinstance(entry, dict) and isinstance(entry.get("name"), str) else None
            try:
                if label in seen:
                    raise ScenarioError(f"scenario {label!r} listed twice")
                rollout = scenario_rollout(run, entry, agent, method)
                seen.add(label)
                yield Located(str(summary_path), position, rollout, named_by)
            except RECORD_SHAPE_ERRORS as exc:  # ScenarioError, or a field of the wrong shape
                why = shape_reason(exc)
                cause = exc.reason if isinstance(exc, ScenarioError) else why
                yield BadLine(str(summary_path), position, f"unusable ToolSandbox scenario {label!r}: {why}",
                              excerpt=str(label or "")[:200], cause=f"unusable ToolSandbox scenario: {cause}",
                              entry=("scenario", label) if label is not None else None)


def import_toolsandbox(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import toolsandbox``: run folders, scored from what they recorded."""
    return import_runs(request.source, model=request.model, method=request.method)
