"""inspect_evals' ``bfcl`` samples of the multi-turn categories (Inspect AI logs) → BFCL rollouts.

inspect_evals runs a multi-turn entry with Inspect's own tool loop (``generate(tool_calls="loop")``
per user turn): the model calls the entry's backend methods as native tools, Inspect runs them and
hands back the results, until the model answers in text. The sample carries the entry it ran
(``metadata``: ``turns``, ``initial_config``, ``involved_classes``, ``raw_ground_truth``,
``missed_function``) and, per turn, the calls the tools actually ran and what they returned
(``model_execution_calls`` / ``model_execution_results``).

* turns: the sample's messages; each run of user messages opens a turn (a turn that reveals withheld
  functions opens with Inspect's notice, a user message too); each assistant message is a step —
  its tool calls, else its text; each tool message is the recorded result of its call;
* a call Inspect did not run — an unknown or not yet revealed tool, arguments that do not validate:
  its tool message carries Inspect's error — is not executed in replay either (its recorded result
  is marked so); the calls that ran must be, turn by turn, those of ``model_execution_calls`` (else
  the sample is refused: its turns cannot be told apart);
* data: the sample's entry is compared with each pinned bfcl-eval release's; it is scored on the
  first (newest) it equals, else on the closest, the differences said (``data_version``);
* Y: as inspect_evals' multi-turn scorer computes it (``meta["reward_rule"]`` = ``inspect_evals``,
  :mod:`.replay`) — unlike BFCL's own checker, the state only after the last turn, reached by
  replaying the calls as the solver recorded them (``meta["inspect_scored_calls"]``: where later
  calls changed a recorded argument object, ``recorded_calls_changed`` says so), the results as
  values, no empty-turn rule;
* recorded: ``bfcl_scorer``'s value (1/0) as the verdict on Y, the tool messages as the results;
* a sample with an error, or without the executed calls the solver records when it finishes, is an
  infrastructure failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from prefix_audit.core.fetch import FetchError
from prefix_audit.core.framework_samples import ChatMessage, FrameworkSample, recorded_verdict
from prefix_audit.plugin import (
    BadRecord,
    ImportRequest,
    LogIssue,
    Recorded,
    RecordedResult,
    Rollout,
    Step,
    ToolCall,
    chat_role,
    rollout_id_for,
)

from .data import DATASET, Entry
from .loader import is_error_value
from .replay import INSPECT_EVALS_RULE, REWARD_RULE_KEY, SCORED_CALLS_KEY, BfclBenchmark

SCORER = "bfcl_scorer"
MULTI_TURN_SCORER = "multi_turn"  # metadata["scorer"] of inspect_evals' multi-turn categories


class BadSample(BadRecord):
    """An inspect_evals bfcl sample that cannot be read."""


def _entry_differences(entry: Entry, metadata: Mapping[str, Any]) -> list[str]:
    """The parts of the sample's entry that differ from ``entry`` (a release's)."""
    held: dict[str, int] = {}
    for turn, names in (metadata.get("missed_function") or {}).items():
        held.update({name: int(turn) for name in names})
    theirs = {"questions": [[dict(m) for m in turn] for turn in metadata.get("turns") or []],
              "initial_config": metadata.get("initial_config"),
              "involved_classes": list(metadata.get("involved_classes") or []),
              "ground_truth": [list(turn) for turn in metadata.get("raw_ground_truth") or []],
              "withheld functions": held}
    ours = {"questions": [[dict(m) for m in turn] for turn in entry.question],
            "initial_config": entry.initial_config, "involved_classes": list(entry.involved_classes),
            "ground_truth": [list(turn) for turn in entry.ground_truth], "withheld functions": dict(entry.held_out)}
    return [name for name in theirs if theirs[name] != ours[name]]


def _release(bench: BfclBenchmark, entry_id: str, metadata: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(the release the sample is scored on, how it was chosen, where its entry differs from it)."""
    given = bench.data_release  # --bfcl-data
    if given is not None:
        entry = bench.data_of(given).entries.get(entry_id)
        return given, f"data of bfcl-eval {given} (given with --bfcl-data)", \
            ["the entry"] if entry is None else _entry_differences(entry, metadata)
    checked: dict[str, list[str]] = {}
    unavailable = []
    for release in bench.releases():
        try:
            entry = bench.data_of(release).entries.get(entry_id)
        except (OSError, FetchError) as exc:  # offline without an older wheel: the others still read
            unavailable.append(f"{release} unavailable ({' '.join(str(exc).split())[:120]})")
            continue
        checked[release] = ["the entry"] if entry is None else _entry_differences(entry, metadata)
        if not checked[release]:
            how = f"data of bfcl-eval {release} (the sample's entry equals it)"
            return release, how + (f"; not considered: {', '.join(unavailable)}" if unavailable else ""), []
    if not checked:
        raise BadSample(f"no pinned bfcl-eval release could be loaded: {'; '.join(unavailable)}")
    release = min(checked, key=lambda r: len(checked[r]))
    return release, (f"data of bfcl-eval {release}, the closest to the sample's entry: it differs from every "
                     f"pinned release"), checked[release]


def _turns(messages: Sequence[ChatMessage]) -> list[list[tuple[int, ChatMessage]]]:
    """The messages after the first user message with their positions, split where a run of user
    messages opens a turn."""
    turns: list[list[tuple[int, ChatMessage]]] = []
    previous = None
    for k, m in enumerate(messages):
        if m.role == "system":
            continue
        if m.role == "user":
            if previous != "user":
                turns.append([])
        elif not turns:
            raise BadSample(f"an {m.role} message before the first user message")
        else:
            turns[-1].append((k, m))
        previous = m.role
    return turns


def _executed(value: Any, where: str) -> list[list[Mapping[str, Any]]]:
    if not isinstance(value, list) or not all(isinstance(t, list) for t in value):
        raise BadSample(f"{where} must be a list of turns, each a list")
    return value


def _same_calls(executed: Sequence[ToolCall], ran: Sequence[Any]) -> bool:
    """Whether the calls that ran (the messages) are those the solver recorded, in order, by name (the
    recorded arguments are the live objects the tool got: converted by Inspect, and possibly changed by
    later calls — see :func:`_changed_arguments`)."""
    return len(executed) == len(ran) and all(isinstance(r, Mapping) and r.get("function") == c.name
                                             for c, r in zip(executed, ran, strict=True))


def _changed_arguments(executed: Sequence[ToolCall], ran: Sequence[Mapping[str, Any]]) -> str | None:
    """The first recorded call whose arguments are not those the model sent (beyond the optional
    arguments Inspect fills in with their defaults): the solver records the argument objects the tool
    got, and a later call that changes one of them (BFCL's ``post_tweet`` keeps its ``mentions`` list,
    ``mention`` appends to it) changes the record — which inspect_evals' scorer then replays."""
    for c, r in zip(executed, ran, strict=True):
        arguments = r.get("arguments")
        if not isinstance(arguments, Mapping) or any(k not in arguments or arguments[k] != v
                                                     for k, v in c.kwargs.items()):
            return f"{c.name}: sent {json.dumps(c.kwargs, default=str)[:160]}, recorded " \
                   f"{json.dumps(arguments, default=str)[:160]}"
    return None


def _turn_steps(messages: Sequence[tuple[int, ChatMessage]],
                values: Sequence[Mapping[str, Any]]) -> tuple[list[Step], list[ToolCall]]:
    """One turn's steps as its messages show them, and the calls that ran (``values``: the values of
    those calls, in their order)."""
    results = {m.call_id: m for _, m in messages if m.role == "tool"}
    ran_values = iter(values)
    steps: list[Step] = []
    executed: list[ToolCall] = []
    for k, m in messages:
        if m.role != "assistant":
            continue
        out = []
        for call in m.calls:
            answer = results.get(call.call_id)
            if answer is None or not answer.ran:  # no answer: the loop stopped before running it
                text = (answer.text or answer.error or "") if answer is not None else "no result recorded"
                out.append(RecordedResult.of(text, True, executed=False))
                continue
            executed.append(call)
            value = next(ran_values, None)  # it ran: its value tells an error as BFCL's classes report one
            out.append(RecordedResult.of(answer.text or answer.error or "",
                                         answer.error is not None or is_error_value(value)))
        steps.append(Step(m.calls, m.text or None, tuple(out), k) if m.calls else Step((), m.text, message=k))
    return steps, executed


def read_sample(sample: FrameworkSample, request: ImportRequest) -> Rollout:
    """How a sample of inspect_evals' ``bfcl`` reads as a rollout of ``bfcl_v3``."""
    bench = request.open(DATASET)
    if not isinstance(bench, BfclBenchmark):
        raise BadSample(f"dataset {DATASET} is not BFCL's adapter")
    md = sample.metadata
    if "scorer" not in md:
        raise BadSample("the sample's metadata has no scorer and no turns (not an inspect_evals bfcl sample, or its "
                        "metadata was not logged)")
    if md["scorer"] != MULTI_TURN_SCORER:
        raise BadSample(f"BFCL category {md.get('category_name')!r} is not multi-turn: only multi-turn entries "
                        f"are audited")
    entry_id = sample.sample_id
    if not isinstance(md.get("turns"), list):
        raise BadSample("the sample's metadata has no turns")
    release, how, differs = _release(bench, entry_id, md)
    issues = [LogIssue("data_version", f"the sample's entry differs from bfcl-eval {release}'s in "
                                       f"{', '.join(differs)}")] if differs else []
    meta: dict[str, Any] = {"bfcl_data": release, REWARD_RULE_KEY: INSPECT_EVALS_RULE,
                            "inspect_log": sample.log, "inspect_sample": [entry_id, sample.epoch],
                            "inspect_limit": sample.limit,
                            "reading": f"inspect_evals bfcl ({md.get('category_name')}), scored as its bfcl_scorer "
                                       f"scores multi-turn entries; {how}"}
    rid = rollout_id_for(DATASET, sample.model, request.method, entry_id, "inspect", sample.epoch)
    recorded = recorded_verdict(sample.scores, SCORER)
    calls_ran, results_ran = md.get("model_execution_calls"), md.get("model_execution_results")
    infra = f"Inspect recorded an error: {sample.error}" if sample.error else None
    if infra is None and (calls_ran is None or results_ran is None):
        infra = "the sample holds no model_execution_calls (the solver did not finish)"
    if infra is not None:
        return Rollout(DATASET, entry_id, sample.model, request.method, rid, (), source="import:inspect", meta=meta,
                       trial=sample.epoch - 1, infra_error=infra, recorded=Recorded.of(recorded.y, recorded.verdict,
                                                                                        issues=issues))
    calls_ran, results_ran = _executed(calls_ran, "model_execution_calls"), _executed(results_ran,
                                                                                       "model_execution_results")
    message_turns = _turns(sample.messages)
    if not (len(message_turns) == len(calls_ran) == len(results_ran)):
        raise BadSample(f"the messages hold {len(message_turns)} turns, model_execution_calls "
                        f"{len(calls_ran)} and model_execution_results {len(results_ran)}: the turns cannot be "
                        f"told apart")
    turns = []
    changed = None
    for t, (messages, ran, values) in enumerate(zip(message_turns, calls_ran, results_ran, strict=True)):
        steps, executed = _turn_steps(messages, values)
        if not _same_calls(executed, ran):
            raise BadSample(f"turn {t}: the calls the messages show running are not those of "
                            f"model_execution_calls[{t}]")
        changed = changed or _changed_arguments(executed, ran)
        turns.append(tuple(steps))
    # inspect_evals' scorer replays the recorded calls for its state check, as recorded.
    meta[SCORED_CALLS_KEY] = [[{"function": r["function"], "arguments": r.get("arguments") or {}} for r in turn]
                              for turn in calls_ran]
    if changed is not None:
        issues.append(LogIssue("recorded_calls_changed", f"the recorded arguments of a call are not those the model "
                                                         f"sent, and inspect_evals' scorer replays the recorded "
                                                         f"ones (first: {changed})"))
    return Rollout(DATASET, entry_id, sample.model, request.method, rid, tuple(turns),
                   source="import:inspect", meta=meta,
                   trial=sample.epoch - 1, recorded=Recorded.of(recorded.y, recorded.verdict, issues=issues),
                   message_roles=tuple(chat_role(m.role) for m in sample.messages))


INSPECT_TASKS = {"bfcl": read_sample}
INSPECT_SCORERS = {SCORER: "bfcl"}  # the task's own scorer, whose verdict read_sample reads


def inspect_sample_task(metadata: Mapping[str, Any]) -> str | None:
    """``bfcl`` where the metadata holds a BFCL entry as inspect_evals' bfcl keeps it."""
    return "bfcl" if {"category_name", "involved_classes", "initial_config"} <= set(metadata) else None
