"""FED as an Inspect AI scorer: ``inspect score LOG --scorer prefix_audit/fed``.

Registered with Inspect through its ``inspect_ai`` entry-point group (``prefix_audit =
"prefix_audit.inspect_scorer"`` in pyproject.toml): Inspect resolves ``prefix_audit/fed`` by loading
the entry point named like the name's package, which imports this module and so registers the
decorated scorer and metric. ``from prefix_audit.inspect_scorer import fed`` works in a
``Task(scorer=[...])`` too.

Per sample × epoch the scorer reads the sample as ``prefix-audit import inspect`` reads it
(:func:`prefix_audit.ingest.inspect_logs.framework_sample`, then the reader of the benchmark that
registered the task), writes the rollout as the audit writes it and scores that line with the audit's
own scoring (:func:`prefix_audit.replay.scoring.score_line`: replay, FED, Y, the check against the
log's record). So FED, T, category and Y are those of ``prefix-audit audit`` of the same log.

What a scorer sees is the sample, not the log: the task is the one whose own scorer recorded a score
on the sample (its score, or the ``ScoreEvent`` the log kept: ``Registration.inspect_scorers``), else
the one its metadata shows (``Registration.inspect_sample_task``: a sample that errored has no score),
or the ``task`` argument; the sample's error and limit are its ``ErrorEvent`` and ``SampleLimitEvent``.

The value is a dict: ``FED``, ``T``, ``fully_executable``, ``category``, ``Y``, ``replayed``, and whose error the
first failure is (``origin``) with ``FED_agent`` (docs/attribution.md); the metadata holds every action's
verdict and the per-rollout tallies the metric reads (``metadata.tallies``, out of the value so that
Inspect's viewer shows the value's eight fields, not twenty-one: (``prefix``: in the prefix-metric cohort —
replayed and no infrastructure failure; ``executable``, ``E1``..``E4``: 1{FED = T + 1}, 1{FED > k} in that cohort;
``FED_in_prefix``; ``final``: replayed, and ``Y``; ``eligible``, ``recovered``: a prefix failure, and
success after one)). A sample that cannot be replayed (another task, a sample the benchmark cannot
read, a replay error) is a score with ``replayed`` false, zero tallies and the reason as explanation:
outside every denominator, as the audit quarantines it.

The metric (:func:`fed_metrics`) reads every sample-epoch's score (``@metric(scores="unreduced")``: no
epoch reducer ever sees FED, so Inspect's default mean cannot average it into a number no rollout has):
each figure is a ratio of the tallies' sums over rollouts, the audit's point estimate, and each stderr
is over rollouts too (the audit's bootstrap resamples tasks instead; ``prefix-audit audit`` has those
intervals).

Integers stay integers where Inspect lets them: the value's FED, T, Y and FED_agent are written to the log
as ints (no reducer touches them: with only an unreduced metric Inspect writes no reduction for this
scorer), and the metric computes its counts as ints. Inspect's results then cast every metric value to
float (a count is 16.0 in the log's header), and its viewer prints every number with decimals (its
``formatPrettyDecimal``: FED 2 as "2.0"; 0 as "0") — neither is the scorer's to change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai.event import ErrorEvent, SampleLimitEvent, ScoreEvent
from inspect_ai.log import transcript
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from .core.decode import RECORD_SHAPE_ERRORS, shape_reason
from .core.fetch import default_resources
from .core.records import dumps
from .ingest.imports import IMPORTED
from .ingest.inspect_logs import framework_sample
from .replay import registry
from .replay.registry import ImportRequest
from .replay.scoring import ScoredLine, score_line
from .statistics.settings import K_MAX

TALLIES = ("prefix", "executable", *(f"E{k}" for k in range(1, K_MAX + 1)), "FED_in_prefix", "final", "Y_final",
           "eligible", "recovered", "executable_agent", "FED_agent_in_prefix", "origin_user", "origin_benchmark")
SOURCE = "inspect-scorer"  # the path a scored line names (a scorer sees no log path)


def _task_of(task: str | None, recorded: Mapping[str, Any], metadata: Mapping[str, Any]) -> str:
    """The named task, else the one whose own scorer scored the sample, else the one its metadata shows
    (a sample that errored has no score)."""
    if task is not None:
        return task
    owners = registry.inspect_task_scorers()
    found = {owners[name] for name in recorded if name in owners} or registry.inspect_tasks_of_metadata(metadata)
    if len(found) != 1:
        raise ValueError(f"cannot tell the sample's task from its scores ({', '.join(sorted(recorded)) or 'none'}) "
                         f"or its metadata; name it: -S task=<{'|'.join(sorted(registry.inspect_tasks()))}>")
    return found.pop()


def _recorded_scores(state: TaskState, events: Sequence[Any]) -> dict[str, Any]:
    """The sample's own scores by scorer name: as Inspect kept them on the state (``--action append``),
    else the last score each scorer's event recorded in the sample's transcript."""
    scores = {event.scorer: event.score for event in events if isinstance(event, ScoreEvent) and event.scorer}
    return {**scores, **(state.scores or {})}


def _scored(state: TaskState, task: str | None, open_dataset: registry.Resolver) -> ScoredLine | str:
    """The sample scored as the audit scores it, or why it cannot be."""
    events = list(transcript().events)
    recorded = _recorded_scores(state, events)
    error = next((e.error for e in events if isinstance(e, ErrorEvent)), None)
    limit = next(((e.type, e.limit) for e in events if isinstance(e, SampleLimitEvent) and e.limit is not None),
                 None)
    name = _task_of(task, recorded, state.metadata or {})
    readers = registry.inspect_tasks()
    if name not in readers:
        return f"an Inspect sample of task {name!r}; prefix-audit reads {', '.join(sorted(readers))}"
    sample = framework_sample(SOURCE, name, str(state.model), state.sample_id, state.epoch, 1,
                              metadata=state.metadata, store=dict(state.store.items()), messages=state.messages,
                              scores=recorded, error=error, limit=limit)
    try:
        rollout = readers[name](sample, ImportRequest(Path(SOURCE), None, IMPORTED, open_dataset))
    except RECORD_SHAPE_ERRORS as exc:
        return f"unusable Inspect sample ({name}): {shape_reason(exc)}"
    scored = score_line(open_dataset, SOURCE, (1, dumps(rollout).encode("utf-8")))
    return scored.bad.reason if scored.bad is not None else scored


def _tallies(episode: Mapping[str, Any] | None) -> dict[str, int]:
    if episode is None:
        return dict.fromkeys(TALLIES, 0)
    fed, t, y = episode["FED"], episode["T"], episode["Y"]
    prefix = int(t is not None)
    failed = bool(prefix and fed <= t)
    return {"prefix": prefix, "executable": int(prefix and fed == t + 1),
            **{f"E{k}": int(prefix and fed > k) for k in range(1, K_MAX + 1)},
            "FED_in_prefix": fed if prefix else 0, "final": int(y is not None), "Y_final": int(y or 0),
            "eligible": int(failed), "recovered": int(failed and y == 1),
            "executable_agent": int(prefix and episode["FED_agent"] == t + 1),
            "FED_agent_in_prefix": episode["FED_agent"] if prefix else 0,
            "origin_user": int(failed and episode["origin"] == "user"),
            "origin_benchmark": int(failed and episode["origin"] == "benchmark")}


def _first_failure(actions: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((a for a in actions if a["V"] is False), None)


def _explanation(episode: Mapping[str, Any], failing: Mapping[str, Any] | None) -> str:
    if episode["T"] is None:
        return f"not in the prefix metrics: an infrastructure failure ({episode['infra_error']})"
    if failing is None:
        return f"every one of the {episode['T']} actions was executable (FED = T + 1 = {episode['FED']})"
    return (f"action {failing['j']} ({failing['call']}) failed {episode['category']} "
            f"[{episode['failure_code']}]: {episode['failure_detail']} — {episode['origin']}'s error: "
            f"{episode['origin_evidence']}")


def _action_verdicts(actions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{key: a[key] for key in ("j", "turn", "tool", "call", "V", "failure_categories", "failure_codes",
                                     "failure_details", "origin", "origin_evidence", "record_match")} for a in actions]


def _score_of(result: ScoredLine | str) -> Score:
    if isinstance(result, str):
        value = {"replayed": False, "FED": None, "T": None, "fully_executable": None, "category": None, "Y": None,
                 "origin": None, "FED_agent": None}
        return Score(value=value, explanation=f"not replayed: {result}", metadata={"tallies": _tallies(None)})
    episode, actions = result.episode, result.actions
    assert episode is not None, "a line scored without a reason to refuse it has its episode row"
    failing = _first_failure(actions)
    value = {"replayed": True, "FED": episode["FED"], "T": episode["T"],
             "fully_executable": None if episode["T"] is None else episode["FED"] == episode["T"] + 1,
             "category": episode["category"], "Y": episode["Y"], "origin": episode["origin"],
             "FED_agent": episode["FED_agent"]}
    return Score(value=value, answer=failing["call"] if failing is not None else None,
                 explanation=_explanation(episode, failing),
                 metadata={"dataset": episode["dataset"], "task_id": episode["task_id"], "trial": episode["trial"],
                           "failure_code": episode["failure_code"], "origin_evidence": episode["origin_evidence"],
                           "log_issue": episode["log_issue"],
                           "replay_agreement": episode["replay_agreement"], "tallies": _tallies(episode),
                           "actions": _action_verdicts(actions)})


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def _stderr(values: Sequence[float]) -> float:
    """Inspect's usual standard error of a mean (sample standard deviation over √n), per rollout."""
    n = len(values)
    if n < 2:
        return math.nan
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


@metric(scores="unreduced")
def fed_metrics() -> Metric:
    """TER, mean FED and PEC@1..4 over the prefix cohort, final success over every replayed rollout, and
    the recovery rate over the rollouts with a prefix failure (NaN where a cohort is empty), with
    stderrs; and the cohorts' sizes and the first failures by origin, as ints (Inspect's results cast
    every value of a metric to float, ``inspect_ai._eval.task.results.scorer_for_metrics``: the log's
    header holds them as 16.0, but ``int(value)`` gives back what is computed here)."""

    def compute(scores: list[SampleScore]) -> dict[str, int | float]:
        sums = dict.fromkeys(TALLIES, 0)  # counts of rollouts (and a sum of depths): integers
        tallies = ((s.score.metadata or {}).get("tallies") for s in scores)
        values = [v for v in tallies if isinstance(v, dict)]  # a score of the fed scorer has its tallies
        for value in values:
            for key in TALLIES:
                sums[key] += int(value.get(key) or 0)
        # Per-rollout indicators for the stderrs: one score per sample-epoch (``scores="unreduced"``).
        prefix = [v for v in values if v.get("prefix")]
        final = [v for v in values if v.get("final")]
        eligible = [v for v in values if v.get("eligible")]
        out = {"TER": _ratio(sums["executable"], sums["prefix"]),
               "TER_stderr": _stderr([float(v["executable"]) for v in prefix]),
               "mean_FED": _ratio(sums["FED_in_prefix"], sums["prefix"]),
               "mean_FED_stderr": _stderr([float(v["FED_in_prefix"]) for v in prefix]),
               **{f"PEC@{k}": _ratio(sums[f"E{k}"], sums["prefix"]) for k in range(1, K_MAX + 1)},
               "final_success": _ratio(sums["Y_final"], sums["final"]),
               "final_success_stderr": _stderr([float(v["Y_final"]) for v in final]),
               "recovery": _ratio(sums["recovered"], sums["eligible"]),
               "recovery_stderr": _stderr([float(v["recovered"]) for v in eligible]),
               # on FED_agent, the first failure attributed to the agent (docs/attribution.md)
               "TER_agent": _ratio(sums["executable_agent"], sums["prefix"]),
               "mean_FED_agent": _ratio(sums["FED_agent_in_prefix"], sums["prefix"]),
               "first_failures_user": sums["origin_user"], "first_failures_benchmark": sums["origin_benchmark"],
               "n_prefix": sums["prefix"], "n_final": sums["final"], "n_recovery_eligible": sums["eligible"],
               "n_not_replayed": sum(isinstance(s.score.value, dict) and s.score.value.get("replayed") is False
                                     for s in scores)}
        return out

    return compute


@scorer(metrics=[fed_metrics()])
def fed(task: str | None = None, resources: str | None = None) -> Scorer:
    """First Error Depth of each sample, replayed as ``prefix-audit audit`` replays it.

    Args:
        task: the Inspect task the samples are of (``tau2_airline``, ``bfcl``, ...); by default the one
            whose own scorer scored the sample.
        resources: the folder of the pinned benchmark packages, as ``prefix-audit --resources`` (by default
            the same: ``$PREFIX_AUDIT_RESOURCES``, else the user cache folder).
    """
    registry.load()
    open_dataset = registry.resolver(resources or default_resources())

    async def score(state: TaskState, target: Target) -> Score:
        try:
            return _score_of(_scored(state, task, open_dataset))
        except Exception as exc:  # one sample that cannot be replayed costs that sample only
            return _score_of(f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}")

    return score
