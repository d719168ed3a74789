"""A toy benchmark written against prefix-audit's public contract only, loaded as a plugin: the
proof that adding a benchmark is one module, one registration and its config entry.

Dataset ``toy_lights``: a home with three lights. Tools ``login(pin)``, ``list_rooms()``,
``switch(room_id, on)`` and ``set_brightness(room_id, level)``; ``level`` has a registered
validator (0..100), ``room_id`` is a reference (it must come from ``list_rooms``), and switching or
dimming needs a login first (an explicit precondition). Y: the lights end as the task's reference
leaves them. It offers every optional capability (reference rollouts, mutation facts, a live
environment for agents, benchmark health) and an importer for its own log format (``import toy``).

Dataset ``toy_readonly``: the same tasks with replay and reference rollouts only, so agent and
mutation blocks are skipped for it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefix_audit.plugin import (
    BadLine,
    Benchmark,
    Counterfactual,
    DatasetSpec,
    EpisodeResult,
    Finding,
    ImportRequest,
    Located,
    Outcome,
    Registration,
    ReplaySession,
    Rollout,
    Step,
    TaskFacts,
    TaskIndex,
    ToolCall,
    ToolSchema,
    ToolSpec,
    bind_arguments,
    call_text,
    iter_json_lines,
    probe_findings,
    register,
    rollout_id_for,
    structured_call,
    unreadable_call_observation,
    without_action,
)

PIN = "4321"
ROOMS = {"r-kitchen": "kitchen", "r-bedroom": "bedroom", "r-hall": "hall"}


def _level_in_range(level: Any) -> str | None:
    return None if isinstance(level, int) and 0 <= level <= 100 else f"level must be 0..100, got {level!r}"


TOOLS = {
    "login": ToolSpec("login", {"type": "object", "properties": {"pin": {"type": "string"}}, "required": ["pin"],
                                "additionalProperties": False}, "Log in with the home's PIN.", ("pin",)),
    "list_rooms": ToolSpec("list_rooms", {"type": "object", "properties": {}, "additionalProperties": False},
                           "The rooms with their ids."),
    "switch": ToolSpec("switch", {"type": "object", "properties": {"room_id": {"type": "string"},
                                                                  "on": {"type": "boolean"}},
                                  "required": ["room_id", "on"], "additionalProperties": False},
                       "Turn a room's light on or off.", ("room_id", "on"), frozenset({"room_id"})),
    "set_brightness": ToolSpec("set_brightness", {"type": "object", "properties": {"room_id": {"type": "string"},
                                                                                  "level": {"type": "integer"}},
                                                  "required": ["room_id", "level"], "additionalProperties": False},
                               "Dim a room's light (0..100).", ("room_id", "level"), frozenset({"room_id"}),
                               {"level": _level_in_range}),
}
GUARDED = frozenset({"switch", "set_brightness"})


def _call(name: str, **arguments: Any) -> ToolCall:
    return structured_call(name, arguments)


@dataclass(frozen=True)
class Task:
    user_turns: tuple[str, ...]
    reference: tuple[tuple[ToolCall, ...], ...]
    lights_on: frozenset[str] = frozenset()


TASKS = {
    "kitchen-on": Task(("My PIN is 4321. Turn on the kitchen light.",),
                       ((_call("login", pin=PIN), _call("list_rooms"),
                         _call("switch", room_id="r-kitchen", on=True)),)),
    "bedroom-dim": Task(("PIN 4321: please set the bedroom light to 30.",),
                        ((_call("login", pin=PIN), _call("list_rooms"), _call("switch", room_id="r-bedroom", on=True),
                          _call("set_brightness", room_id="r-bedroom", level=30)),)),
    "hall-two-turns": Task(("Log in with 4321 and switch the hall light on.", "Now dim the hall to 50."),
                           ((_call("login", pin=PIN), _call("list_rooms"), _call("switch", room_id="r-hall", on=True)),
                            (_call("set_brightness", room_id="r-hall", level=50),))),
    "kitchen-off": Task(("The kitchen light is on; my PIN is 4321. Switch it off.",),
                        ((_call("login", pin=PIN), _call("list_rooms"),
                          _call("switch", room_id="r-kitchen", on=False)),),
                        frozenset({"r-kitchen"})),
    "all-on": Task(("PIN 4321. Turn every light on.",),
                   ((_call("login", pin=PIN), _call("list_rooms"),
                     *(_call("switch", room_id=r, on=True) for r in ROOMS)),)),
}


class Home:
    """The live state of one episode."""

    def __init__(self, task: Task) -> None:
        self.logged_in = False
        self.lights = {room: {"on": room in task.lights_on, "level": 100} for room in ROOMS}

    def run(self, call: ToolCall) -> Outcome:
        spec = TOOLS.get(call.name or "")
        if spec is None:
            return Outcome(False, error=f"no tool {call.name!r}")
        arguments, failures = bind_arguments(spec, call)
        if failures:
            return Outcome(False, error=failures[0].detail)
        if call.name in GUARDED and not self.logged_in:
            return Outcome(False, error="not logged in")
        if call.name == "login":
            if arguments["pin"] != PIN:
                return Outcome(False, error="wrong PIN")
            self.logged_in = True
            return Outcome(True, "logged in")
        if call.name == "list_rooms":
            return Outcome(True, [{"id": room, "name": name} for room, name in ROOMS.items()])
        light = self.lights.get(arguments["room_id"])
        if light is None:
            return Outcome(False, error=f"no room {arguments['room_id']!r}")
        if call.name == "switch":
            light["on"] = arguments["on"]
        else:
            light["level"] = arguments["level"]
        return Outcome(True, dict(light))


def _final_lights(task: Task) -> dict[str, dict[str, Any]]:
    home = Home(task)
    for turn in task.reference:
        for call in turn:
            home.run(call)
    return home.lights


class ToySession(ReplaySession):
    """One episode of a task: the home, every tool in every turn. What the base class leaves to its defaults
    holds here: a tool the agent may call is one it sees (``known_tool``), nothing is deleted (``is_stale``),
    the agent may answer in text at any time (``complete``), and no turn has a check of its own."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.facts = TaskFacts(frozenset({PIN}), task.user_turns, {})
        self.home = Home(task)

    def exposed_tools(self) -> Mapping[str, ToolSpec]:
        return TOOLS

    def preconditions(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> list[str]:
        return ["switching or dimming needs login first"] if spec.name in GUARDED and not self.home.logged_in else []

    def execute(self, call: ToolCall) -> Outcome:
        if not call.well_formed:
            return Outcome(False, error=call.parse_error)
        return self.home.run(call)

    def final_success(self) -> int:
        matched = self.home.lights == _final_lights(self.task)
        self.y_detail = "lights as the reference leaves them" if matched else "lights differ from the reference"
        return int(matched)


class ToyEnvironment:
    """The home as an agent sees it: scripted user turns, every tool, JSON observations."""

    def __init__(self, task_id: str, task: Task) -> None:
        self.task_id = task_id
        self.task = task
        self.home = Home(task)

    def turn_count(self) -> int:
        return len(self.task.user_turns)

    def user_message(self, turn: int) -> str:
        return self.task.user_turns[turn]

    def tools(self, turn: int) -> tuple[ToolSchema, ...]:
        return tuple(ToolSchema(s.name, s.description, s.parameters) for s in TOOLS.values())

    def execute(self, call: ToolCall) -> str:
        if not call.well_formed:
            return unreadable_call_observation(call)
        outcome = self.home.run(call)
        return json.dumps(outcome.result) if outcome.accepted else f"Error: {outcome.error}"


class ToyReplay(Benchmark):
    """Replay and reference rollouts: the capabilities both toy datasets have."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.tasks = TaskIndex(sorted(TASKS))

    def open_session(self, rollout: Rollout) -> ToySession:
        return ToySession(TASKS[rollout.task_id])

    def reference_rollout(self, task_id: str) -> Rollout:
        turns = tuple((Step(calls),) for calls in TASKS[task_id].reference)
        return Rollout(self.dataset, task_id, "ground_truth", "reference",
                       rollout_id_for(self.dataset, "ground_truth", "reference", task_id), turns, source="reference")

    def task_provenance(self) -> dict[str, Any]:
        return {"toy_tasks": len(TASKS)}


class ToyLights(ToyReplay):
    """Every capability: mutation facts and a live environment for agents too."""

    def tool_universe(self) -> Sequence[str]:
        return sorted(TOOLS)

    def precondition_guards(self) -> dict[str, frozenset[str]]:
        return {"login": GUARDED}

    def deletion_call(self, spec: ToolSpec, param: str, value: Any) -> ToolCall | None:
        return None  # nothing in the toy home deletes a room

    def agent_environment(self, task_id: str) -> ToyEnvironment:
        return ToyEnvironment(task_id, TASKS[task_id])

    def health_releases(self) -> list[str]:
        return [TOY_RELEASE]

    def release_tasks(self, release: str) -> list[str]:
        return sorted(TASKS)

    def task_health(self, task_id: str, release: str) -> list[Finding]:
        return probe_findings(ToyProbe(self, task_id))

    def health_digest(self, release: str) -> str:
        """What the toy's health reads: this module (the home, its reward, the probe) and the tasks as they
        are now (a test may add some)."""
        tasks = [(task_id, task.user_turns, task.reference, sorted(task.lights_on))
                 for task_id, task in sorted(TASKS.items())]
        return hashlib.sha256(Path(__file__).read_bytes() + repr(tasks).encode("utf-8")).hexdigest()


TOY_RELEASE = "toy-1"


class ToyProbe:
    """One task's health: the reference, an agent that does nothing, the reference without each switch or
    dimming (the calls that change lights) and whether the reference changes the lights at all."""

    def __init__(self, bench: Benchmark, task_id: str) -> None:
        self.benchmark = bench
        self.task_id = task_id
        self.task = TASKS[task_id]

    def gold(self) -> Rollout:
        return self.benchmark.reference_rollout(self.task_id)

    def idle(self) -> Counterfactual:
        turns = tuple((Step((), "Sorry, I cannot help."),) if t == len(self.task.user_turns) - 1 else ()
                      for t in range(len(self.task.user_turns)))
        return Counterfactual("an agent that answers without a call",
                              Rollout(self.benchmark.dataset, self.task_id, "health", "idle", "idle", turns))

    def without_required(self, gold: EpisodeResult) -> list[Counterfactual]:
        return [Counterfactual(f"the reference without {call_text(v.action)}", without_action(gold.rollout, v.action),
                               "the lights end the same without it")
                for v in gold.verdicts if v.action.call is not None and v.accepted and v.action.call.name in GUARDED]

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        unchanged = _final_lights(self.task) == Home(self.task).lights
        return "the reference leaves every light as it was" if unchanged else None

    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        return ""  # the session's Y is the toy's own reward

    def own_findings(self, gold: EpisodeResult) -> list[Finding]:
        return []


def import_toy(request: ImportRequest) -> Iterator[Located | BadLine]:
    """A toy log: JSON Lines ``{"task": id, "turns": [[{"name": ..., "arguments": {...}}, ...], ...]}``."""
    return toy_log_rollouts(request, "toy_lights", "task")


def toy_log_rollouts(request: ImportRequest, dataset: str, task_key: str) -> Iterator[Located | BadLine]:
    """The rollouts of a toy log whose entries name their task of ``dataset`` under ``task_key``."""
    bench = request.open(dataset)
    for item in iter_json_lines(request.source):
        if isinstance(item, BadLine):
            yield item
            continue
        entry = item.value
        task = entry.get(task_key) if isinstance(entry, dict) else None
        if not isinstance(task, str) or not bench.has_task(task) or not isinstance(entry.get("turns"), list):
            yield BadLine(item.path, item.line, f"not a toy log entry ({task_key} and turns)", excerpt=item.excerpt)
            continue
        turns = tuple(tuple(Step((structured_call(c.get("name"), c.get("arguments")),)) for c in turn)
                      for turn in entry["turns"])
        model = request.model or "toy-agent"
        rid = rollout_id_for(dataset, model, request.method, task, item.line)
        rollout = Rollout(dataset, task, model, request.method, rid, turns, source="import:toy")
        yield Located(item.path, item.line, rollout)


def is_toy_log(path: Path) -> bool:
    """A toy log: JSON Lines whose first line has ``task`` and ``turns``."""
    return first_entry_has(path, "task")


def first_entry_has(path: Path, task_key: str) -> bool:
    """Whether the file is JSON Lines whose first line has ``task_key`` and ``turns``."""
    try:
        first = next((line for line in path.read_text().splitlines() if line.strip()), "") if path.is_file() else ""
        entry = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(entry, dict) and task_key in entry and "turns" in entry


CONFIG_SCHEMA = {"type": "object", "additionalProperties": False,
                 "properties": {"sample": {"$ref": "#/$defs/sample"}}}

register(Registration(
    __name__,
    (DatasetSpec("toy_lights", ToyLights, lambda request: ToyLights("toy_lights"), CONFIG_SCHEMA),
     DatasetSpec("toy_readonly", ToyReplay, lambda request: ToyReplay("toy_readonly"), copy.deepcopy(CONFIG_SCHEMA))),
    importers={"toy": import_toy},
    detectors={"toy": is_toy_log},
))
