"""inspect_evals' ``tau2_airline`` and ``tau2_retail`` samples (Inspect AI logs) → τ rollouts.

inspect_evals runs tau2 with its own agent loop (``inspect_evals.tau2.common.agents``): the user
simulator speaks first; unless its text holds a stop token, its message is handed to the agent, which
calls tools until it answers in text; that answer goes back to the user, and so on. The agent's own
view of the conversation is kept in the sample's store (``StoredAgentState:<instance>:messages``:
system prompt, the user's messages, the agent's messages and tool results), the whole exchange in
``StoredAgentState:<instance>:trajectory``; ``sample.messages`` is the user simulator's view (roles
flipped) and is not read for actions.

* turns: as for a tau2 results file (:func:`.importer.read_conversation`), from the store's messages;
  the user's closing stop message (never handed to the agent) comes from the trajectory;
* task: ``metadata.task`` — the definition the sample was scored against, embedded in every rollout;
  how it differs from ours is said once per kind (``meta["reading"]``);
* task × trial: the sample id × epoch (trial = epoch − 1);
* Y: as inspect_evals' scorer computes it (``meta["reward_rule"]`` = ``inspect_evals``,
  :mod:`..adapter.replay`): the database after the agent's calls equals the one after the gold actions, and
  every ``communicate_info`` string occurs in what the user was shown — whatever the task's reward
  basis and however the conversation ended (no NL assertions, no premature-termination rule);
* recorded: the scorer's value (``C``/``I``, or 1/0) as the verdict on Y, the tool messages as
  recorded (an Inspect tool error is an error result);
* a sample with an error, or one whose agent never answered and whose user never stopped (the loop
  swallowed model errors until it gave up), is an infrastructure failure; a limit Inspect enforced
  ends the conversation (``max_steps``) and is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from prefix_audit.core.framework_samples import (
    ChatMessage,
    FrameworkSample,
    chat_messages,
    message_text,
    recorded_verdict,
)
from prefix_audit.core.records import call_like_text_steps
from prefix_audit.plugin import (
    ImportRequest,
    LogIssue,
    Recorded,
    Rollout,
    SampleReader,
    ToolCall,
    ToolSpec,
    message_roles,
    rollout_id_for,
    value_at,
)

from ..adapter.replay import INSPECT_EVALS_RULE, RECORDED_DB_KEY, REWARD_RULE_KEY, TauBenchmark
from ..domain import semantics as sem
from ..domain.data import CRITERIA_FIELDS, TELECOM, TauDataError, criteria_differences, definition_criteria, parse_task
from ..domain.embedded import KEY as EMBEDDED_KEY
from ..domain.embedded import TAU2_FORMAT, EmbeddedTask
from ..domain.environment import LiveEnvironment
from .importer import BadSimulation, Conversation, open_tau2, read_conversation

STORE_STATE = "StoredAgentState"
# What inspect_evals' scorers read of a task: airline's and retail's the gold's database and the
# communicated information; telecom's the actions (where the basis names them), the env assertions
# and the initial state they run on.
SCORER_READS = {"default": ("gold", "communicate_info", "has_criteria", "db_compared"),
                TELECOM: ("gold", "reward_basis", "env_assertions", "initialization", "has_criteria")}


def _as_run(call: ToolCall, specs: Mapping[str, ToolSpec]) -> ToolCall:
    """The call with the arguments the tool got: Inspect converts a whole-number float to an int for an
    integer parameter before it calls the tool (tau2 would store the float: another database)."""
    spec = specs.get(call.name or "")
    if spec is None or not call.well_formed:
        return call
    properties = spec.parameters.get("properties", {})
    changed = {k: int(v) for k, v in call.kwargs.items()
               if isinstance(v, float) and v.is_integer() and properties.get(k, {}).get("type") == "integer"}
    return replace(call, kwargs={**call.kwargs, **changed}) if changed else call


def _recorded_db(store: Mapping[str, Any]) -> Any:
    """The agent's database as the store holds it at the end (``<Tools>:<instance>:db``; the scorer's
    ``expected_db_…`` instances are the gold's), None where there is not exactly one."""
    found = [value for key, value in store.items()
             if key.endswith(":db") and key.count(":") == 2 and not key.split(":")[1].startswith("expected_db_")]
    return found[0] if len(found) == 1 else None


DB_DIVERGED = ("the database the recorded calls replay to differs from the one the log's store holds: calls ran "
               "that the messages do not show (inspect_evals' loop drops a turn whose tool raised an error other "
               "than a ToolError), or a tool of inspect_evals' copy differs from tau2's")


def _database_check(bench: TauBenchmark, store: Mapping[str, Any], convo: Conversation) -> tuple[list[LogIssue],
                                                                                                 dict[str, str]]:
    """The log's final database checked against replay: (issues, ``{recorded_db_sha256: …}`` for Y)."""
    recorded = _recorded_db(store)
    if recorded is None:
        return [], {}
    try:
        recorded_dump = bench.backend.dump_of(recorded)
    except ValueError as exc:
        return [LogIssue("replay_diverged", f"the database in the log's store is not a {bench.domain.name} database: "
                                            f"{' '.join(str(exc).split())[:200]}")], {}
    live = LiveEnvironment(bench.backend)
    for turn in convo.turns:
        for step in turn:
            for call, result in zip(step.calls, step.results or (), strict=False):  # no results: none recorded
                if call.well_formed and (result is None or result.executed):
                    live.run(call)
    live_hash, recorded_hash = live.hashes_beside(recorded_dump)
    return [] if live_hash == recorded_hash else [LogIssue("replay_diverged", DB_DIVERGED)], \
        {RECORDED_DB_KEY: recorded_hash}


def _tau2_messages(messages: Sequence[ChatMessage]) -> Iterator[dict[str, Any]]:
    """The agent's messages in the shape tau2 writes, one for one (so a message keeps its position; the
    system prompt is no action); an Inspect tool error is an error result, one of a call Inspect refused
    (``executed`` false) is not run in replay."""
    for m in messages:
        if m.role == "tool":
            yield {"role": "tool", "id": m.call_id, "content": m.text or m.error or "", "error": m.error is not None,
                   "executed": m.ran}
        elif m.role == "system":
            yield {"role": "system", "content": m.text}
        else:
            yield {"role": m.role, "content": m.text, "tool_calls": list(m.calls)}


def _both_parties(trajectory: Any) -> Iterator[dict[str, Any]]:
    """Telecom: the whole exchange from the store's trajectory, in the shape tau2 writes — the user's
    own calls (their loop's assistant messages with tool calls, and the results) as a tau2 user
    message with tool calls, the user's text as a user message, the agent's messages as they are."""
    if not isinstance(trajectory, list) or not all(isinstance(e, dict) and e.get("role") in ("user", "assistant")
                                                   for e in trajectory):
        raise BadSimulation("the store's trajectory must be a list of {role: user|assistant, message} entries")
    messages = chat_messages([e.get("message") for e in trajectory], "store trajectory")
    for entry, m in zip(trajectory, messages, strict=True):  # a message an entry
        shaped = next(_tau2_messages([m]))
        if entry["role"] == "user" and m.role == "assistant":
            shaped["role"] = "user"
        if entry["role"] == "user" and m.role == "tool":
            shaped["requestor"] = "user"
        yield shaped


def _state(store: Mapping[str, Any], instance: str, field: str) -> Any:
    key = f"{STORE_STATE}:{instance}:{field}"
    if key not in store:
        raise BadSimulation(f"the sample's store has no {key!r} (not an inspect_evals tau2 run, or its store was "
                            f"not logged)")
    return store[key]


def _stop_message(trajectory: Any) -> str | None:
    """The user's closing message when the conversation ended on a stop token (the last message of
    the trajectory, the user's); None otherwise."""
    if not isinstance(trajectory, list) or not trajectory or not isinstance(trajectory[-1], dict):
        return None
    last = trajectory[-1]
    text = message_text(value_at(last, "message", "content"))
    return text if last.get("role") == "user" and any(t in text for t in sem.USER_STOP_TOKENS) else None


def _difference(task: Mapping[str, Any], bench: TauBenchmark, where: str) -> str:
    """How the sample's task definition compares with ours, in what inspect_evals' scorer reads."""
    task_id = task["id"]
    if task_id not in bench.tasks:
        return f"task {task_id} is not among the installed {bench.domain.name} tasks"
    ours = bench.task(task_id)
    try:
        theirs = definition_criteria(task, bench.domain.name, where)
    except TauDataError as exc:
        raise BadSimulation(str(exc)) from None
    read = {f: theirs[f] for f in CRITERIA_FIELDS}
    scored = SCORER_READS[TELECOM if bench.user_acts else "default"]
    differing = [f for f in sum(criteria_differences(read, {f: getattr(ours, f) for f in CRITERIA_FIELDS}), [])
                 if f in scored]
    if differing:
        return f"differs from the installed task in {', '.join(differing)}"
    return "equals the installed task in what the scorer reads"


def read_sample(domain: str) -> SampleReader:
    """How a sample of inspect_evals' ``tau2_<domain>`` reads as a rollout of ``tau_<domain>``."""
    scorer = f"{domain}_scorer"

    def read(sample: FrameworkSample, request: ImportRequest) -> Rollout:
        bench = open_tau2(request, domain)
        task = sample.metadata.get("task")
        instance = sample.metadata.get("instance")
        if not isinstance(task, dict) or not isinstance(instance, str):
            raise BadSimulation("the sample's metadata has no task and instance (not an inspect_evals tau2 sample)")
        if str(task.get("id")) != sample.sample_id:
            raise BadSimulation(f"sample id {sample.sample_id!r} is not its task's id {task.get('id')!r}")
        task = {**task, "id": sample.sample_id}
        where = f"task {sample.sample_id} of the sample"
        try:
            parse_task(task, domain, where)
        except TauDataError as exc:
            raise BadSimulation(f"{exc} (the task the sample was scored against cannot be read)") from None
        comparison = _difference(task, bench, where)
        if bench.user_acts:  # both parties' calls: the trajectory holds them in order, the stop message too
            trajectory = _state(sample.store, instance, "trajectory")
            messages = list(_both_parties(trajectory))
            stop = _stop_message(trajectory)
        else:
            messages = list(_tau2_messages(chat_messages(_state(sample.store, instance, "messages"),
                                                         "store messages")))
            stop = _stop_message(_state(sample.store, instance, "trajectory"))
            if stop is not None:
                messages.append({"role": "user", "content": stop})
        termination = "user_stop" if stop is not None else "max_steps"
        specs = bench.tools
        convo = read_conversation(messages, bench, termination, lambda call, where: _as_run(call, specs))
        # The store's final databases are compared for airline and retail; telecom's two (the provider's
        # and the phone's, inspect_evals' copies of them) are not.
        issues, db_meta = ([], {}) if bench.user_acts else _database_check(bench, sample.store, convo)
        acted = any(convo.turns)
        infra = f"Inspect recorded an error: {sample.error}" if sample.error else None
        if infra is None and not acted and stop is None:
            infra = "the agent never answered and the user never stopped (no agent output)"
        meta: dict[str, Any] = {
            "user_turns": list(convo.user_turns), "termination_reason": termination,
            "recorded_error_call_ids": list(convo.error_call_ids), REWARD_RULE_KEY: INSPECT_EVALS_RULE,
            # What inspect_evals' communicate check reads besides the agent's answers: the user
            # simulator's view holds the dataset's opening message as a user message too.
            "communicate_also_reads": [m.text for m in sample.messages if m.role == "user" and m.source == "input"],
            "inspect_log": sample.log, "inspect_sample": [sample.sample_id, sample.epoch],
            "inspect_limit": sample.limit, **bench.provenance,
            "reading": f"inspect_evals tau2_{domain}, scored as its {scorer} scores ("
                       + ("the actions where the reward basis names them, and the env assertions, on both parties' "
                          "replayed calls" if bench.user_acts else
                          "database and communicated information, whatever the reward basis")
                       + f") against the sample's task definition, which {comparison}",
        }
        del meta["tasks_sha256"]
        meta[EMBEDDED_KEY] = EmbeddedTask.of(task, TAU2_FORMAT, sample.log).to_json()
        meta.update(db_meta)
        meta.update(convo.user_calls_meta())
        recorded = recorded_verdict(sample.scores, scorer)
        recorded = Recorded.of(recorded.y, recorded.verdict, call_like_text_steps(convo.turns), issues)
        rid = rollout_id_for(bench.dataset, sample.model, request.method, sample.sample_id,
                             "inspect", sample.epoch)
        return Rollout(bench.dataset, sample.sample_id, sample.model, request.method, rid,
                       convo.turns if acted else (), source="import:inspect", meta=meta, trial=sample.epoch - 1,
                       infra_error=infra, recorded=recorded, message_roles=message_roles(messages) if acted else ())

    return read


INSPECT_TASKS: Mapping[str, Callable[[FrameworkSample, ImportRequest], Rollout]] = {
    "tau2_airline": read_sample("airline"), "tau2_retail": read_sample("retail"),
    "tau2_telecom": read_sample("telecom")}
# Each task's own scorer (inspect_evals' ``<domain>_scorer``), as read_sample reads its verdict.
INSPECT_SCORERS: Mapping[str, str] = {f"{domain}_scorer": f"tau2_{domain}"
                                      for domain in ("airline", "retail", "telecom")}


def inspect_sample_task(metadata: Mapping[str, Any]) -> str | None:
    """The task a sample's metadata shows (inspect_evals' ``tau2_<domain>`` names its agent instance
    ``<Domain>Agent`` and keeps the τ task beside it): ``tau2_banking`` too, which is not read."""
    instance = metadata.get("instance")
    if isinstance(instance, str) and instance.endswith("Agent") and isinstance(metadata.get("task"), dict):
        return f"tau2_{instance.removesuffix('Agent').lower()}"
    return None
