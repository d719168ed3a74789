"""Does a benchmark keep the contract? The checks a benchmark's author runs (``prefix-audit
check-benchmark DATASET``, :func:`check_benchmark`) before trusting its numbers, each saying what is wrong
and where (docs/adding-a-benchmark.md):

* ``registration``: every capability its adapter declares is whole, and its registration's fields agree
  (:func:`~.registry.gaps`);
* ``open``: the dataset opens with its defaults (or the settings given), and a session is a
  :class:`~.contract.ReplaySession`, a fresh one each time;
* ``tool spec``: every tool a session exposes or knows has a valid JSON Schema of an object, and its
  positional order, reference, identifying and validated parameters are parameters the schema declares;
* ``gold``: a task's reference rollout replays with Y = 1 and FED = T + 1 — unless the benchmark's own
  health says the gold fails there (``answer_unreachable``, ``gold_fails``, ``gold_not_prefix_executable``);
* ``isolation``: sessions share no state — an agent that does nothing scores the same before and after
  the gold ran in another session of the task, and the gold replays the same twice;
* ``replay``: whatever a session raises while these run.

Only the capability "reference" gives a task a rollout to replay: without it a task's tools are checked
on a session opened for an empty rollout of it, and neither ``gold`` nor ``isolation`` by replay is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from prefix_audit.core.fetch import default_resources
from prefix_audit.core.records import Rollout, Step

from .checker import EpisodeResult, replay
from .contract import Benchmark, ReplaySession, ToolSpec, capabilities_of
from .registry import OpenRequest, dataset, gaps, registration_of

# Health codes by which a benchmark says its gold of a task does not replay clean.
GOLD_NOT_CLEAN = {"y": ("answer_unreachable",), "fed": ("gold_fails", "gold_not_prefix_executable")}


@dataclass(frozen=True)
class Problem:
    """One way a benchmark breaks the contract: the check that found it, where (the dataset, a task of
    it, a tool), and what is wrong."""

    check: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.check}: {self.detail}"


def check_benchmark(name: str, resources: str | Path | None = None, settings: Mapping[str, Any] | None = None, *,
                    tasks: int | None = 5, seed: int = 0, fetch: bool = True) -> list[Problem]:
    """The problems of dataset ``name`` (registered; an empty list: it keeps the contract), opened from the
    pinned packages' folder ``resources`` (default: the user's, :func:`~prefix_audit.core.fetch.default_resources`)
    with its config entry ``settings``, on a seeded sample of ``tasks`` of its tasks (None: every task)."""
    spec = dataset(name)
    problems = [Problem("registration", name, said) for _, said in gaps(registration_of(name))]
    try:
        folder = Path(resources) if resources is not None else default_resources()
        bench = spec.open(OpenRequest(folder, dict(settings or {}), fetch))
        task_ids = bench.sample(tasks, seed).task_ids
    except Exception as exc:  # whatever the benchmark raises is its problem to report, not a crash
        return [*problems, Problem("open", name, _said(exc))]
    for task_id in task_ids:
        problems += _task_problems(bench, task_id, f"{name}/{task_id}")
    return problems


def _task_problems(bench: Benchmark, task_id: str, where: str) -> list[Problem]:
    """One task's problems of every check but ``registration``."""
    reference = "reference" in capabilities_of(type(bench))
    try:
        rollout = bench.reference_rollout(task_id) if reference else \
            Rollout(bench.dataset, task_id, "conformance", "check", "conformance", ())
        sessions = [bench.open_session(rollout), bench.open_session(rollout)]
    except Exception as exc:
        return [Problem("open", where, f"no session opens: {_said(exc)}")]
    if not all(isinstance(s, ReplaySession) for s in sessions):
        return [Problem("open", where, f"open_session returned a {type(sessions[0]).__name__}, which does not "
                                       f"derive from ReplaySession")]
    problems = [] if sessions[0] is not sessions[1] else \
        [Problem("isolation", where, "open_session returned the same session twice")]
    try:
        problems += _spec_problems(sessions[1], max(len(rollout.turns), 1), where)
        if reference:
            problems += _replay_problems(bench, rollout, where)
    except Exception as exc:
        problems.append(Problem("replay", where, _said(exc)))
    return problems


def _spec_problems(session: ReplaySession, turns: int, where: str) -> list[Problem]:
    """The problems of every tool a session exposes in any turn or knows by an exposed name."""
    specs: dict[str, ToolSpec] = {}
    problems = []
    for turn in range(turns):
        session.start_turn(turn)
        for name, spec in session.exposed_tools().items():
            if spec.name != name:
                problems.append(Problem("tool spec", f"{where}: {name}", f"exposed under another name than its "
                                                                       f"spec's {spec.name!r}"))
            if session.known_tool(name) is None:
                problems.append(Problem("tool spec", f"{where}: {name}", "exposed, but known_tool does not know it"))
            specs.setdefault(name, spec)
        session.end_turn()
    for name, spec in sorted(specs.items()):
        problems += [Problem("tool spec", f"{where}: {name}", said) for said in spec_problems(spec)]
    return problems


def spec_problems(spec: ToolSpec) -> list[str]:
    """What is wrong with one tool's declared interface (nothing: an empty list)."""
    schema = spec.parameters
    try:
        # types-jsonschema's Validator protocol asks a dict; jsonschema's own reads any Mapping.
        validator_for(schema).check_schema(schema)  # type: ignore[arg-type]
    except SchemaError as exc:
        return [f"its parameters are no valid JSON Schema: {exc.message}"]
    if schema.get("type") != "object":
        return [f"its parameters' schema is of type {schema.get('type')!r}, not an object of arguments"]
    declared = set(schema.get("properties", {}))
    named = {"positional_order": set(spec.positional_order), "reference_params": set(spec.reference_params),
             "identifying_params": set(spec.identifying_params), "validators": set(spec.validators)}
    return [f"{field} names {', '.join(sorted(names - declared))}, which its schema does not declare"
            for field, names in named.items() if names - declared]


def _replay_problems(bench: Benchmark, gold: Rollout, where: str) -> list[Problem]:
    idle = dataclasses.replace(gold, rollout_id="conformance-idle",
                               turns=tuple(() for _ in gold.turns[:-1]) + ((Step((), ""),),))
    idle_before = replay(idle, bench, with_gold=False)
    first, second = replay(gold, bench, with_gold=False), replay(gold, bench, with_gold=False)
    idle_after = replay(idle, bench, with_gold=False)
    problems = []
    if _outcome(idle_before) != _outcome(idle_after):
        problems.append(Problem("isolation", where, f"an agent that does nothing scores {_said_of(idle_before)} "
                                                    f"before the gold ran in another session, {_said_of(idle_after)} "
                                                    f"after"))
    if _outcome(first) != _outcome(second):
        problems.append(Problem("isolation", where, f"the gold replays to {_said_of(first)}, then to "
                                                    f"{_said_of(second)}"))
    excused = None  # the task's health codes, read only when the gold does not replay clean

    def says(kind: str) -> bool:
        nonlocal excused
        if excused is None:
            excused = _health_codes(bench, gold.task_id)
        return bool(excused & set(GOLD_NOT_CLEAN[kind]))

    if first.Y != 1 and not says("y"):
        problems.append(Problem("gold", where, f"the reference rollout scores Y = {first.Y} ({first.y_detail}), "
                                               f"and the benchmark's health does not say its answer is unreachable"))
    if first.T is not None and first.FED is not None and first.FED <= first.T and not says("fed"):
        failed = first.verdicts[first.FED - 1]
        problems.append(Problem("gold", where, f"the reference rollout fails at action {first.FED} of {first.T} "
                                               f"({', '.join(f.code for f in failed.failures)}), and the "
                                               f"benchmark's health does not say its gold fails there"))
    return problems


def _outcome(episode: EpisodeResult) -> tuple[Any, ...]:
    return episode.T, episode.FED, episode.Y, episode.y_detail


def _said_of(episode: EpisodeResult) -> str:
    return f"T = {episode.T}, FED = {episode.FED}, Y = {episode.Y} ({episode.y_detail})"


def _health_codes(bench: Benchmark, task_id: str) -> set[str]:
    """The health codes the benchmark finds on a task of its default release (none without health)."""
    if "health" not in capabilities_of(type(bench)):
        return set()
    return {f.code for f in bench.task_health(task_id, bench.health_releases()[0])}


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
