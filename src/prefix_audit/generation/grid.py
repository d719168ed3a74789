"""The run grid: which blocks (model × method) a config asks for, with each block's settings, and
the F.3 pairs its verifier conditions imply.

A block's settings are everything its rollouts depend on and nothing else, so that Snakemake
(which passes them as ``params``) reruns exactly the blocks whose inputs changed: editing one
model's backend reruns that model's blocks (and a condition that borrows it as verifier), and
adding a method adds only its blocks.
"""

from __future__ import annotations

import copy
import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.models.endpoints import Endpoint, job_share
from prefix_audit.replay import registry
from prefix_audit.replay.log_folders import LogSource, expand_logs

from .agents.methods import METHODS
from .settings import BackendSettings, BlockSettings

BASELINE_OF_CONDITIONS = "plan_conditioned"
# Config keys a later config file replaces whole instead of merging into: a user's verifier
# conditions must not inherit the default's simulated swapped verifier.
REPLACED_WHOLE = (("agents", "verifier_conditions"),)


def replace_whole_keys(config: dict[str, Any], layers: Sequence[Mapping[str, Any]]) -> None:
    """Undo key-by-key merging for :data:`REPLACED_WHOLE`: each such key takes the value of the last
    config layer (config files in order, then command-line values) that sets it."""
    for path in REPLACED_WHOLE:
        value, found = None, False
        for layer in layers:
            node: Any = layer
            for key in path:
                if not isinstance(node, Mapping) or key not in node:
                    break
                node = node[key]
            else:  # the layer sets the key, perhaps to null (no conditions)
                value, found = node, True
        if not found:
            continue
        parent = config
        for key in path[:-1]:
            parent = parent.setdefault(key, {})
        parent[path[-1]] = copy.deepcopy(value)


def selected_datasets(config: Mapping[str, Any]) -> list[str]:
    """The datasets the run audits: ``datasets`` when given, else every configured benchmark."""
    configured = config["benchmarks"]
    chosen = config.get("datasets")
    if chosen is None:
        return sorted(configured)
    unknown = [d for d in chosen if d not in configured]
    if unknown:
        raise ValueError(f"datasets: {', '.join(unknown)} not configured under benchmarks "
                         f"(configured: {', '.join(sorted(configured))})")
    return sorted(chosen)


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
    for model in agents["models"]:
        for method in agents["methods"]:
            if method not in METHODS:
                raise ValueError(f"agents: unknown method {method!r} (known: {', '.join(METHODS)})")
            grid[(model, method)] = _agent_block(models, common, model, method)
    for model in condition_models(config):
        for name, condition in sorted(agents["verifier_conditions"].get("conditions", {}).items()):
            grid[(model, condition_method(name))] = _agent_block(models, common, model, "dual_loop",
                                                                 condition["verifier"])
    return grid


def _agent_block(models: Mapping[str, Any], common: Mapping[str, Any], model: str, method: str,
                 verifier: str = "model") -> dict[str, Any]:
    """The settings of one agent block (``common``: those of every agent block)."""
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


def condition_models(config: Mapping[str, Any]) -> list[str]:
    """The models of ``agents.verifier_conditions`` that run: those also in the agent grid
    (:func:`unused_condition_models` names the others)."""
    agents = config.get("agents") or {}
    conditions = agents.get("verifier_conditions") or {}
    return [m for m in conditions.get("models", ()) if m in agents.get("models", ())]


def unused_condition_models(config: Mapping[str, Any]) -> list[str]:
    agents = config.get("agents") or {}
    conditions = agents.get("verifier_conditions") or {}
    return [m for m in conditions.get("models", ()) if m not in agents.get("models", ())]


@dataclass(frozen=True)
class SkippedBlock:
    """A block a dataset cannot run, and why."""

    dataset: str
    model: str
    method: str
    reason: str

    def __str__(self) -> str:
        return f"{self.dataset}/{self.model}/{self.method} skipped: {self.reason}"


def trials_for(config: Mapping[str, Any], dataset: str) -> int:
    """``agents.trials`` for one dataset: one integer for all, or a mapping dataset → trials (1 for
    a dataset it does not name)."""
    trials = (config.get("agents") or {}).get("trials", 1)
    return int(trials.get(dataset, 1)) if isinstance(trials, Mapping) else int(trials)


def dataset_settings(config: Mapping[str, Any], dataset: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A block's settings on one dataset: an agent block gains its trials there. Only a count above
    one is written, so a one-trial block's settings (a rule param) stay as they always were."""
    trials = trials_for(config, dataset)
    if settings.get("kind") != "agent" or trials == 1:
        return dict(settings)
    return {**settings, "trials": trials}


def planned_blocks(config: Mapping[str, Any]) -> tuple[dict[str, list[tuple[str, str]]], list[SkippedBlock]]:
    """Per dataset of the config, the blocks (model, method) it runs; and the blocks it skips because
    its benchmark lacks a capability they need (:meth:`~prefix_audit.generation.settings.BlockSettings.needs`)."""
    trials = (config.get("agents") or {}).get("trials", 1)
    if isinstance(trials, Mapping):
        # A configured dataset the run does not select keeps its trials for a run that does (a config
        # file narrowing `datasets` leaves the rest as it is); a name configured nowhere is a mistake.
        unknown = sorted(set(trials) - set(config["benchmarks"]))
        if unknown:
            raise ValueError(f"agents.trials names dataset(s) not configured under benchmarks: {', '.join(unknown)}")
    grid = blocks(config)
    needs = {key: BlockSettings.parse(settings).needs() for key, settings in grid.items()}
    planned: dict[str, list[tuple[str, str]]] = {}
    skipped: list[SkippedBlock] = []
    for dataset in selected_datasets(config):
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


@dataclass(frozen=True)
class ImportBlock:
    """A block of logs that exist (config ``imports:``): its files and folders, in a stable order, the
    logs they hold (:func:`~prefix_audit.replay.log_folders.expand_logs`, walked once) and their
    format (None: detected per file)."""

    dataset: str
    model: str
    method: str
    files: tuple[str, ...]
    format: str | None
    options: dict[str, Any]  # importer options: the config keys the CLI's options set (tasks_from_results, ...)
    labels: tuple[str, ...] = ()  # files of human step labels of its entries, set beside FED
    logs: tuple[LogSource, ...] = ()  # what files holds, under the root the config was read from

    def inputs(self, root: str | Path = ".") -> list[str]:
        """What the block depends on: the logs its files and folders hold (every file inside a folder
        that is one log, a ToolSandbox run) and the files its importer reads besides a log (a BFCL
        result file's score file), so that editing any of them — or adding a log to a folder it
        names — reruns the block; named relative to ``root``, the root the config was read from."""
        out: list[str] = []
        for source in self.logs:
            files = sorted(p for p in source.path.rglob("*") if p.is_file()) if source.path.is_dir() else [source.path]
            out += [name for p in [*files, *source.companions] if (name := _under(p, root)) not in out]
        return out


def _under(path: Path, root: str | Path) -> str:
    """``path`` named as the workflow names its files: relative to ``root`` where it is inside."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def import_blocks(config: Mapping[str, Any], root: str | Path = ".") -> dict[tuple[str, str, str], ImportBlock]:
    """(dataset, model, method) → the import block of each ``imports:`` entry; globs are expanded
    (relative to ``root``, sorted) and folders walked for their logs. Refused: an unknown dataset or
    format, an option no registered command-line option sets, a pattern that matches no file, a folder
    that holds no log, two entries for one block, and a block the run also generates."""
    known_options = {option.key for option in registry.cli_options()}
    out: dict[tuple[str, str, str], ImportBlock] = {}
    generated = {(d, *key) for d, keys in planned_blocks(config)[0].items() for key in keys}
    formats = registry.importers()
    for i, entry in enumerate(config.get("imports") or []):
        where = f"imports[{i}]"
        dataset, model, method = entry["dataset"], entry["model"], entry.get("method", "imported")
        registry.dataset(dataset)  # an unknown dataset raises, naming the registered ones
        fmt = entry.get("format")
        if fmt is not None and fmt not in formats:
            raise ValueError(f"{where}.format: {fmt!r} is not a registered format ({', '.join(sorted(formats))})")
        unknown = sorted(set(entry.get("options") or {}) - known_options)
        if unknown:
            raise ValueError(f"{where}.options: {', '.join(unknown)} (known: {', '.join(sorted(known_options))})")
        files = _matched(entry["files"], root, f"{where}.files")
        labels = _matched(entry.get("labels") or [], root, f"{where}.labels")
        options = _canonical(entry.get("options") or {})
        try:
            logs = expand_logs([Path(root) / name for name in files], fmt, options).logs
        except ValueError as exc:  # a folder without any log
            raise ValueError(f"{where}.files: {exc}") from None
        key = (dataset, model, method)
        if key in out:
            raise ValueError(f"{where}: block {'/'.join(key)} is imported twice; list all its files in one entry")
        if key in generated:
            raise ValueError(f"{where}: block {'/'.join(key)} is also generated by this run; give it another "
                             "model or method")
        out[key] = ImportBlock(dataset, model, method, tuple(files), fmt, options, tuple(labels), tuple(logs))
    return out


def _matched(patterns: Sequence[str], root: str | Path, where: str) -> list[str]:
    """The files and folders ``patterns`` name (globs expanded relative to ``root``, sorted), each once."""
    out: list[str] = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern, root_dir=root)) if glob.has_magic(pattern) else [pattern]
        if not matched or not (Path(root) / matched[0]).exists():
            raise ValueError(f"{where}: {pattern!r} matches no file or folder")
        out += [m for m in matched if m not in out]
    return out


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
    for dataset in selected_datasets(config):
        for model in condition_models(config):
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


def _block_backends(config: Mapping[str, Any], dataset: str, settings: Mapping[str, Any]) -> list[BackendSettings]:
    """The real-model backends one block's job calls: its executor, its verifier and the dataset's
    user simulator."""
    block = BlockSettings.parse(settings)
    out = list(block.backends()) if block.kind == "agent" else []
    user = config["benchmarks"][dataset].get("user_simulator")
    if user and block.kind == "agent":
        out.append(BackendSettings.parse(user))
    return [b for b in out if not b.simulated]


def endpoint_ceilings(config: Mapping[str, Any]) -> dict[Endpoint, int]:
    """Every endpoint the planned blocks call, with its ceiling on requests in flight for the whole
    run: the ``concurrency`` of the models served there (the smallest, where they differ)."""
    grid = blocks(config)
    planned, _ = planned_blocks(config)
    ceilings: dict[Endpoint, int] = {}
    for dataset, keys in planned.items():
        for key in keys:
            for backend in _block_backends(config, dataset, grid[key]):
                assert backend.endpoint is not None
                ceilings[backend.endpoint] = min(ceilings.get(backend.endpoint, backend.concurrency),
                                                 backend.concurrency)
    return dict(sorted(ceilings.items(), key=lambda item: item[0].resource))


def endpoint_shares(config: Mapping[str, Any], dataset: str, settings: Mapping[str, Any],
                    ceilings: Mapping[Endpoint, int]) -> dict[str, int]:
    """The requests in flight one block's job (its ``settings``, from :func:`blocks`) holds per
    endpoint resource of ``ceilings`` (:func:`endpoint_ceilings`; 0 for endpoints it does not call):
    what the scheduler sums against each endpoint's ceiling."""
    in_flight = BlockSettings.parse(settings).episodes_in_flight
    shares = dict.fromkeys((e.resource for e in ceilings), 0)
    for backend in _block_backends(config, dataset, settings):
        assert backend.endpoint is not None
        shares[backend.endpoint.resource] = job_share(ceilings[backend.endpoint], in_flight)
    return shares
