"""The run grid: which blocks (model × method) a config asks for, with each block's settings, and
the F.3 pairs its verifier conditions imply.

A block's settings are everything its rollouts depend on and nothing else, so that Snakemake
(which passes them as ``params``) reruns exactly the blocks whose inputs changed: editing one
model's backend reruns that model's blocks (and a condition that borrows it as verifier), and
adding a method adds only its blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import registry
from .agents.methods import METHODS
from .settings import BlockSettings

BASELINE_OF_CONDITIONS = "plan_conditioned"


def condition_method(condition: str) -> str:
    """The method label of a Dual-Loop verifier condition."""
    return f"dual_loop.{condition}"


def _canonical(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Keys sorted at every level: Snakemake compares params by their text, and reordering keys in
    a config file changes nothing a block depends on."""
    return json.loads(json.dumps(settings, sort_keys=True))


def blocks(config: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(model, method) → settings of every block of the run, in a stable order."""
    return {key: _canonical(settings) for key, settings in _blocks(config).items()}


def _blocks(config: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    grid: dict[tuple[str, str], dict[str, Any]] = {}
    for name, source in sorted(config.get("sources", {}).items()):
        grid[(name, source["kind"])] = dict(source)
    agents = config.get("agents")
    if not agents:
        return grid
    models = config["models"]
    common = {k: agents[k] for k in ("seed", "max_steps", "max_candidates", "episodes_in_flight") if k in agents}

    def agent_block(model: str, method: str, verifier: str = "model") -> dict[str, Any]:
        if model not in models:
            raise ValueError(f"agents: model {model!r} is not defined under models")
        settings = {"kind": "agent", "method": method, **common, "backend": dict(models[model])}
        if method == "dual_loop":
            if verifier in ("accept", "replay", "model", model):
                settings["verifier"] = "model" if verifier == model else verifier
            elif verifier in models:
                settings["verifier"] = "model"
                settings["verifier_backend"] = {"model": verifier, "backend": dict(models[verifier])}
            else:
                raise ValueError(f"agents: verifier {verifier!r} is neither accept, replay nor a model")
        return settings

    for model in agents["models"]:
        for method in agents["methods"]:
            if method not in METHODS:
                raise ValueError(f"agents: unknown method {method!r} (known: {', '.join(METHODS)})")
            grid[(model, method)] = agent_block(model, method)
    conditions = agents.get("verifier_conditions") or {}
    for model in conditions.get("models", ()):
        for name, condition in sorted(conditions.get("conditions", {}).items()):
            grid[(model, condition_method(name))] = agent_block(model, "dual_loop", condition["verifier"])
    return grid


@dataclass(frozen=True)
class SkippedBlock:
    """A block a dataset cannot run, and why."""

    dataset: str
    model: str
    method: str
    reason: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.model}/{self.method} skipped: {self.reason}"


def planned_blocks(config: Mapping[str, Any]) -> tuple[dict[str, list[tuple[str, str]]], list[SkippedBlock]]:
    """Per dataset of the config, the blocks (model, method) it runs; and the blocks it skips because
    its benchmark lacks a capability they need (:meth:`~prefix_audit.settings.BlockSettings.needs`)."""
    grid = blocks(config)
    needs = {key: BlockSettings.parse(settings).needs() for key, settings in grid.items()}
    planned: dict[str, list[tuple[str, str]]] = {}
    skipped: list[SkippedBlock] = []
    for dataset in sorted(config["benchmarks"]):
        offered = registry.dataset(dataset).capabilities
        planned[dataset] = []
        for key in grid:
            missing = needs[key] - offered
            if missing:
                skipped.append(SkippedBlock(dataset, *key, f"the {dataset} benchmark lacks the capabilities "
                                            f"this block needs: {', '.join(sorted(missing))}"))
            else:
                planned[dataset].append(key)
    return planned, skipped


def condition_pairs(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table F.3: each verifier condition (and Dual-Loop itself) against the same model's
    Plan-Conditioned block, on every dataset that runs both. That block shares the condition's first
    plan per turn (the simulated planner seeds it by model and task; a real one at temperature 0 with
    the response cache sends the same request), so it serves as the paired Plan-Conditioned rerun."""
    agents = config.get("agents") or {}
    conditions = agents.get("verifier_conditions") or {}
    grid = blocks(config)
    planned, _ = planned_blocks(config)
    pairs = []
    for dataset in sorted(config["benchmarks"]):
        for model in conditions.get("models", ()):
            baseline = {"model": model, "method": BASELINE_OF_CONDITIONS}
            if (model, BASELINE_OF_CONDITIONS) not in grid:
                raise ValueError(f"verifier conditions on {model} need its {BASELINE_OF_CONDITIONS} block")
            methods = ["dual_loop"] if (model, "dual_loop") in grid else []
            methods += [condition_method(n) for n in sorted(conditions.get("conditions", {}))]
            for method in methods:
                if {(model, method), (model, BASELINE_OF_CONDITIONS)} <= set(planned[dataset]):
                    pairs.append({"label": f"{method} vs {BASELINE_OF_CONDITIONS}", "dataset": dataset,
                                  "condition": {"model": model, "method": method}, "baseline": baseline})
    return pairs
