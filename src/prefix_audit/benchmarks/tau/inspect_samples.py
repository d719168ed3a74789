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
  :mod:`.replay`): the database after the agent's calls equals the one after the gold actions, and
  every ``communicate_info`` string occurs in what the user was shown — whatever the task's reward
  basis and however the conversation ended (no NL assertions, no premature-termination rule);
* recorded: the scorer's value (``C``/``I``, or 1/0) as the verdict on Y, the tool messages as
  recorded (an Inspect tool error is an error result);
* a sample with an error, or one whose agent never answered and whose user never stopped (the loop
  swallowed model errors until it gave up), is an infrastructure failure; a limit Inspect enforced
  ends the conversation (``max_steps``) and is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ...calls import ToolCall, structured_call
from ...records import Recorded, Rollout, call_like_text_steps, rollout_id_for
from ...registry import FrameworkSample, ImportRequest, SampleReader
from . import semantics as sem
from .data import CRITERIA_FIELDS, TauDataError, criteria_differences, parse_criteria, parse_task
from .embedded import KEY as EMBEDDED_KEY
from .embedded import TAU2_FORMAT, EmbeddedTask
from .importer import BadSimulation, read_conversation
from .replay import INSPECT_EVALS_RULE, REWARD_RULE_KEY, TauBenchmark, dataset_of

STORE_STATE = "StoredAgentState"
# Inspect's letter values (inspect_ai.scorer CORRECT / INCORRECT) and numeric ones.
CORRECT, INCORRECT = "C", "I"


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list (reasoning and other parts
    are not what the other side was shown)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def _inspect_call(obj: Any, where: str) -> ToolCall:
    """An Inspect tool call (``{id, function, arguments, parse_error}``); arguments Inspect could not
    parse are the agent's schema failure, the text kept."""
    if not isinstance(obj, dict):
        raise BadSimulation(f"{where}: a tool call must be an object")
    call_id = obj.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise BadSimulation(f"{where}: tool call without an id (results cannot be matched to it)")
    if obj.get("parse_error"):
        name = obj.get("function")
        raw = obj.get("arguments") if isinstance(obj.get("arguments"), str) else json.dumps(obj.get("arguments"))
        return ToolCall(name if isinstance(name, str) and name else None, raw=raw,
                        parse_error=f"arguments Inspect could not parse: {str(obj['parse_error'])[:300]}",
                        call_id=call_id, structured=True)
    return structured_call(obj.get("function"), obj.get("arguments"), call_id)


def _tau2_messages(messages: Sequence[Any], where: str) -> Iterator[dict[str, Any]]:
    """The store's agent messages in the shape tau2 writes (the system prompt left out)."""
    for k, m in enumerate(messages):
        if not isinstance(m, dict):
            raise BadSimulation(f"{where}[{k}]: a message must be an object")
        role = m.get("role")
        if role == "system":
            continue
        if role == "tool":
            error = m.get("error")
            text = _text(m.get("content"))
            if isinstance(error, dict) and not text:
                text = str(error.get("message") or "")
            yield {"role": "tool", "id": m.get("tool_call_id"), "content": text, "error": error is not None}
        elif role in ("user", "assistant"):
            yield {"role": role, "content": _text(m.get("content")), "tool_calls": m.get("tool_calls") or []}
        else:
            raise BadSimulation(f"{where}[{k}]: unknown role {role!r}")


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
    text = _text(last.get("message", {}).get("content")) if isinstance(last.get("message"), dict) else ""
    return text if last.get("role") == "user" and any(t in text for t in sem.USER_STOP_TOKENS) else None


def recorded_verdict(scores: Mapping[str, Mapping[str, Any]], scorer: str) -> Recorded:
    """The scorer's value as the verdict on Y: ``C``/1 success, ``I``/0 failure; any other value (or
    no such scorer) is no verdict, said."""
    score = scores.get(scorer)
    if score is None:
        named = ", ".join(sorted(scores)) or "none"
        return Recorded.of(None, f"no {scorer} score recorded (scores: {named})")
    value = score.get("value")
    explanation = str(score.get("explanation") or "").strip().splitlines()
    words = f"Inspect {scorer}: {value!r}" + (f" ({explanation[0]})" if explanation else "")
    if value in (CORRECT, 1, 1.0, True):
        return Recorded.of(1, words)
    if value in (INCORRECT, 0, 0.0, False):
        return Recorded.of(0, words)
    return Recorded.of(None, f"{words}: not a pass/fail value")


def _difference(task: Mapping[str, Any], bench: TauBenchmark, where: str) -> str:
    """How the sample's task definition compares with ours, in what inspect_evals' scorer reads."""
    task_id = task["id"]
    if task_id not in bench.tasks:
        return f"task {task_id} is not among the installed {bench.domain.name} tasks"
    ours = bench.task(task_id)
    try:
        theirs = parse_criteria(task.get("evaluation_criteria"), where)
    except TauDataError as exc:
        raise BadSimulation(str(exc)) from None
    read = {f: theirs[f] for f in CRITERIA_FIELDS}
    differing = [f for f in sum(criteria_differences(read, {f: getattr(ours, f) for f in CRITERIA_FIELDS}), [])
                 if f in ("gold", "communicate_info", "has_criteria", "db_compared")]
    if differing:
        return f"differs from the installed task in {', '.join(differing)}"
    return "equals the installed task in what the scorer reads"


def read_sample(domain: str) -> SampleReader:
    """How a sample of inspect_evals' ``tau2_<domain>`` reads as a rollout of ``tau_<domain>``."""
    scorer = f"{domain}_scorer"

    def read(sample: FrameworkSample, request: ImportRequest) -> Rollout:
        bench = request.open(dataset_of(domain))
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
        messages = list(_tau2_messages(_state(sample.store, instance, "messages"), "store messages"))
        stop = _stop_message(_state(sample.store, instance, "trajectory"))
        if stop is not None:
            messages.append({"role": "user", "content": stop})
        termination = "user_stop" if stop is not None else "max_steps"
        convo = read_conversation(messages, bench, termination, _inspect_call)
        acted = any(convo.turns)
        infra = f"Inspect recorded an error: {sample.error}" if sample.error else None
        if infra is None and not acted and stop is None:
            infra = "the agent never answered and the user never stopped (no agent output)"
        user_texts = [_text(m.get("content")) for m in sample.messages
                      if isinstance(m, dict) and m.get("role") == "user"]
        meta = {
            "user_turns": list(convo.user_turns), "termination_reason": termination,
            "recorded_error_call_ids": list(convo.error_call_ids), REWARD_RULE_KEY: INSPECT_EVALS_RULE,
            # What inspect_evals' communicate check reads besides the agent's answers: the user
            # simulator's view holds the task's opening message as a user message too.
            "communicate_also_reads": [t for t in user_texts if t][:1],
            "inspect_log": sample.log, "inspect_sample": [sample.sample_id, sample.epoch],
            "inspect_limit": sample.limit, **bench.provenance,
            "reading": f"inspect_evals tau2_{domain}, scored as its {scorer} scores (database and communicated "
                       f"information, whatever the reward basis) against the sample's task definition, which "
                       f"{comparison}",
        }
        del meta["tasks_sha256"]
        meta[EMBEDDED_KEY] = EmbeddedTask.of(task, TAU2_FORMAT, sample.log).to_json()
        recorded = recorded_verdict(sample.scores, scorer)
        recorded = Recorded.of(recorded.y, recorded.verdict, call_like_text_steps(convo.turns))
        rid = rollout_id_for(bench.dataset, sample.model, request.method, sample.sample_id,
                             "inspect", sample.epoch)
        return Rollout(bench.dataset, sample.sample_id, sample.model, request.method, rid,
                       convo.turns if acted else (), "import:inspect", meta, trial=sample.epoch - 1,
                       infra_error=infra, recorded=recorded)

    return read


INSPECT_TASKS: Mapping[str, Callable[[FrameworkSample, ImportRequest], Rollout]] = {
    "tau2_airline": read_sample("airline"), "tau2_retail": read_sample("retail")}
