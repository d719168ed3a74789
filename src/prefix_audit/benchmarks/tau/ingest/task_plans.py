"""What a tau2 results file's simulations are scored against, per task (:func:`task_plan`; the
**Tasks** section of :mod:`.importer`), and the conversation that acts for another task's customer
(:func:`conversation_user_mismatch`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefix_audit.plugin import LogIssue, Step

from ..adapter.replay import TauBenchmark
from ..domain.data import CRITERIA_FIELDS, TauDataError, criteria_differences, definition_criteria, parse_task
from ..domain.embedded import TAU2_FORMAT, EmbeddedTask
from ..domain.releases import EvaluationCheck, evaluation_fingerprint, known_releases, rerun_hint


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
    criteria, refused = _file_criteria(recorded_tasks, bench)
    embedded = {}
    differ: dict[str, list[str]] = {}
    outside: dict[str, list[str]] = {}
    for task_id in sorted(set(task_ids) - set(refused)):
        if task_id not in criteria:
            if task_id not in bench.tasks:
                refused[task_id] = _undefined_task(bench, task_id)
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
    reading = _reading(bench, len(set(task_ids)), shape, domain_how, carries_tasks, differ, outside)
    check, users = _evaluation_check(criteria, bench)
    return TaskPlan(embedded, refused, check, reading, users)


def _file_criteria(recorded_tasks: Mapping[str, Any], bench: TauBenchmark
                   ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The criteria of the file's task definitions, by task id, and why those that have none are refused."""
    criteria, refused = {}, {}
    for task_id, definition in recorded_tasks.items():
        try:
            criteria[task_id] = definition_criteria(definition, bench.domain.name, f"task {task_id} in the results")
        except TauDataError as exc:
            refused[task_id] = str(exc)
    return criteria, refused


def _undefined_task(bench: TauBenchmark, task_id: str) -> str:
    """Why a task neither we nor the file define is refused (naming the releases that define it)."""
    releases = known_releases().defining(bench.domain.name, task_id)
    elsewhere = f"; it is a task of {known_releases().names(releases)}: {rerun_hint(releases)}" if releases else ""
    return (f"unknown {bench.dataset} task id {task_id!r} in {bench.domain.files.tasks}, "
            f"and the results file does not define it{elsewhere}")


def _reading(bench: TauBenchmark, tasks: int, shape: str, domain_how: str, carries_tasks: bool,
             differ: Mapping[str, list[str]], outside: Mapping[str, list[str]]) -> str:
    """What the plan says of the file's ``tasks`` tasks, once per file."""
    installed = f"the {bench.domain.name} tasks in use (sha256 {bench.domain.provenance['tasks_sha256'][:12]})"
    shown = shape if shape != "tau2 results.json" else "tau2 results"  # the usual container is not remarked on
    parts = [f"{shown} of {tasks} tasks" + (f", {domain_how}" if domain_how else "")]
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
    return "; ".join(parts)


def _evaluation_check(criteria: Mapping[str, Mapping[str, Any]], bench: TauBenchmark
                      ) -> tuple[EvaluationCheck, dict[str, frozenset[str]]]:
    """Each task's evaluation checks in use (the file's definitions first, then ours), and the user
    ids its gold acts for."""
    evaluations = {t: evaluation_fingerprint(c["gold"], c["nl_assertions"], c["communicate_info"])
                   for t, c in criteria.items()}
    users = {t: _gold_users(c["gold"]) for t, c in criteria.items()}
    for task_id in bench.tasks:
        if task_id not in evaluations:
            task = bench.task(task_id)
            evaluations[task_id] = evaluation_fingerprint(task.gold, task.nl_assertions, task.communicate_info)
            users[task_id] = _gold_users(task.gold)
    return EvaluationCheck(bench.domain.name, evaluations, frozenset(criteria), known_releases()), users


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
            for c, r in zip(step.calls, step.results or (), strict=False):  # no results: none recorded
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
