"""Every container tau2 simulations come in, read into one shape (:class:`Simulations`).

tau2 writes, and its leaderboard and its users pass around, the same simulation objects
(``SimulationRun``: ``id``, ``task_id``, ``termination_reason``, ``messages``, ``reward_info``, …) in
several containers:

* ``results.json`` as ``Results.save`` writes it: ``{timestamp, info, tasks, simulations}``;
* tau2 1.0's directory layout: that ``results.json`` without its simulations (1.0 keeps a
  ``simulation_index`` there) and a ``simulations/`` folder beside it, one JSON file per simulation
  (read here in file-name order, as ``Results.load`` reads them);
* a bare JSON list of simulations (leaderboard submissions);
* one simulation object on its own;
* a wrapper object with a ``simulations`` list and fields of its own (``domain``, ``agent``,
  ``model``, …; leaderboard submissions).

The container decides only where the simulations, the run's ``info`` and the task definitions are;
each simulation is then read alike, whatever held it. Without ``info``, the domain comes from the
container's own fields, else from the tools its calls use (:func:`domain_of`); without ``tasks`` the
installed task definitions are used (said by the importer).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefix_audit.plugin import DecodeError, object_at, read_json_document

SIMULATIONS_DIR = "simulations"
RESULTS_JSON = "results.json"
# What a simulation object holds, whatever its tau2 release: every SimulationRun has these.
SIMULATION_KEYS = frozenset({"task_id", "termination_reason"})
# Where a container without ``info`` names its domain (checked in this order).
DOMAIN_FIELDS = ("domain", "domain_name", "env", "environment")
# Where a container without ``info`` names the agent's model (checked in this order).
MODEL_FIELDS = ("model", "agent_model", "llm", "agent_llm", "agent")


@dataclass(frozen=True)
class UnreadableSimulation:
    """A simulation file of a directory layout that could not be read, and why."""

    reason: str


@dataclass(frozen=True)
class Simulations:
    """The simulations of one container, with what the container says about the run."""

    shape: str  # how they were held, for the reading summary
    simulations: list[Any]
    info: Mapping[str, Any] = field(default_factory=dict)  # tau2's ``info``: {} where the container has none
    tasks: list[Any] | None = None  # the task definitions the container carries; None: it carries none
    fields: Mapping[str, Any] = field(default_factory=dict)  # a wrapper's own fields besides the simulations

    def named_domain(self) -> tuple[str, str] | None:
        """The domain the container names and where: tau2's ``info.environment_info.domain_name``, else
        a wrapper's own field (:data:`DOMAIN_FIELDS`); None where it names none."""
        named = object_at(self.info, "environment_info").get("domain_name")
        if isinstance(named, str) and named:
            return named, "info.environment_info.domain_name"
        for key in DOMAIN_FIELDS:
            value = self.fields.get(key)
            if isinstance(value, dict):
                value = value.get("domain_name", value.get("name"))
            if isinstance(value, str) and value:
                return value, key
        return None

    def named_model(self) -> tuple[str, str] | None:
        """The agent's model as the container names it, and where: tau2's ``info.agent_info.llm`` (or
        its implementation), else a wrapper's field (:data:`MODEL_FIELDS`); None where it names none."""
        agent = object_at(self.info, "agent_info")
        for value, where in ((agent.get("llm"), "info.agent_info.llm"),
                             (agent.get("implementation"), "info.agent_info.implementation"),
                             *((self.fields.get(k), k) for k in MODEL_FIELDS)):
            if isinstance(value, dict):
                key = next((k for k in ("llm", "model", "name") if k in value), "llm")
                value, where = value.get(key), f"{where}.{key}"
            if isinstance(value, str) and value:
                return value, where
        return None


def is_simulation(value: Any) -> bool:
    """A tau2 simulation object: ``task_id`` and ``termination_reason``, and its conversation as
    ``messages`` or (full-duplex) ``ticks``."""
    return isinstance(value, dict) and SIMULATION_KEYS <= value.keys() and ("messages" in value or "ticks" in value)


def dir_layout(path: Path) -> tuple[Path, Path] | None:
    """tau2's directory layout, given as the folder or as its ``results.json``: (metadata file,
    simulations folder); None for anything else."""
    meta, sims = (path / RESULTS_JSON, path / SIMULATIONS_DIR) if path.is_dir() else \
        (path, path.parent / SIMULATIONS_DIR)
    return (meta, sims) if meta.is_file() and sims.is_dir() else None


def _dir_simulations(folder: Path) -> Iterator[Any]:
    """The simulations of a directory layout in file-name order (as tau2 loads them); a file that is
    no JSON comes through as an :class:`UnreadableSimulation` naming it."""
    for sim_file in sorted(folder.glob("*.json")):
        try:
            yield read_json_document(sim_file)
        except DecodeError as exc:
            yield UnreadableSimulation(f"{SIMULATIONS_DIR}/{sim_file.name} is no JSON: {exc}")


def layout_metadata(path: Path) -> Path | None:
    """The ``results.json`` of the directory layout a simulation file given alone belongs to
    (``…/simulations/<id>.json``): its run's ``info`` and tasks."""
    meta = path.parent.parent / RESULTS_JSON
    return meta if path.parent.name == SIMULATIONS_DIR and meta.is_file() else None


def read_container(doc: Any, layout: tuple[Path, Path] | None = None, run: Any = None) -> Simulations | None:
    """The simulations of a parsed tau2 document (``layout``: the directory layout it is the metadata
    of; ``run``: for one simulation of a directory layout given alone, its layout's parsed metadata);
    None when it is none of tau2's containers."""
    if layout is not None and isinstance(doc, dict):
        return Simulations("tau2 results (directory layout)", list(_dir_simulations(layout[1])),
                           object_at(doc, "info"), _tasks(doc), _own_fields(doc))
    if isinstance(doc, list):
        # One odd item does not cost the list: it is quarantined when its turn comes.
        return Simulations("a list of tau2 simulations", doc) if any(is_simulation(s) for s in doc) else None
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("simulations"), list):
        shape = "tau2 results.json" if "info" in doc or "tasks" in doc else "an object with a simulations list"
        return Simulations(shape, doc["simulations"], object_at(doc, "info"), _tasks(doc), _own_fields(doc))
    if is_simulation(doc):
        if isinstance(run, dict):
            return Simulations("one simulation of tau2 results (directory layout)", [doc], object_at(run, "info"),
                               _tasks(run), _own_fields(run))
        return Simulations("one tau2 simulation", [doc])
    return None


def _tasks(doc: Mapping[str, Any]) -> list[Any] | None:
    return doc["tasks"] if isinstance(doc.get("tasks"), list) else None


def _own_fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in ("simulations", "info", "tasks", "simulation_index")}


def called_tools(simulations: Iterable[Any]) -> set[str]:
    """The names of the tools the agent called in ``simulations`` (tool calls of assistant messages),
    and of the gold actions their recorded action checks name (tau2 copies them from the task)."""
    names: set[str] = set()
    for sim in simulations:
        reward_info = sim.get("reward_info") if isinstance(sim, dict) else None
        checks = reward_info.get("action_checks") if isinstance(reward_info, dict) else None
        for check in checks if isinstance(checks, list) else ():
            action = check.get("action") if isinstance(check, dict) else None
            if isinstance(action, dict) and isinstance(action.get("name"), str):
                names.add(action["name"])
        messages = sim.get("messages") if isinstance(sim, dict) else None
        for m in messages if isinstance(messages, list) else ():
            if not isinstance(m, dict) or m.get("role") != "assistant":
                continue
            for call in m.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    names.add(call["name"])
    return names


def domain_of_tools(names: set[str], tools_by_domain: Mapping[str, frozenset[str]]) -> set[str]:
    """The domains whose agent tool sets hold a name of ``names`` that no other domain's holds."""
    found = set()
    for domain, tools in tools_by_domain.items():
        others = set().union(*(t for d, t in tools_by_domain.items() if d != domain))
        if names & (tools - others):
            found.add(domain)
    return found
