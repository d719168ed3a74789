"""The conformance check a benchmark's author runs (prefix_audit.plugin.check_benchmark): the toy benchmark
and every built-in one keep the contract; toy benchmarks broken one way each give that problem, and a
capability implemented in part is said when it registers, where its adapter is defined."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

import pytest
from conftest import RESOURCES

from prefix_audit.plugin import DatasetSpec, Registration, ReplaySession, ToolSpec, check_benchmark
from prefix_audit.replay import registry

PLUGINS = Path(__file__).parent / "plugins"
sys.path.insert(0, str(PLUGINS))
registry.load(["toy_bench"])
import toy_bench as tb  # noqa: E402  (on the path only now)


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made in a test last for the test only."""
    monkeypatch.setattr(registry, "_REGISTRATIONS", dict(registry._REGISTRATIONS))


def _register(name: str, adapter: type[tb.ToyReplay]) -> str:
    registry.register(Registration(f"test_check_benchmark.{name}",
                                   (DatasetSpec(name, adapter, lambda request: adapter(name)),)))
    return name


def _problems(name: str, adapter: type[tb.ToyReplay]) -> set[tuple[str, str, str]]:
    return {(p.check, p.where, p.detail) for p in check_benchmark(_register(name, adapter), RESOURCES, tasks=None)}


@pytest.mark.parametrize("dataset", ["toy_lights", "toy_readonly"])
def test_the_toy_benchmark_keeps_the_contract(dataset):
    assert check_benchmark(dataset, RESOURCES, tasks=None) == []


@pytest.mark.parametrize("dataset", ["bfcl_v3", "tau_airline", "tau_retail", "tau_telecom", "toolsandbox"])
def test_the_built_in_benchmarks_keep_the_contract(dataset):
    problems = check_benchmark(dataset, RESOURCES, tasks=3, fetch=False)
    if [p.check for p in problems] == ["open"] and "FetchError" in problems[0].detail:
        pytest.skip(f"the pinned package is not fetched: {problems[0].detail}")
    assert [str(p) for p in problems] == []


class HalfMutation(tb.ToyReplay):
    def tool_universe(self):
        return sorted(tb.TOOLS)


def test_a_capability_in_part_is_said_where_the_adapter_is_and_by_the_check(scratch_registry):
    with pytest.warns(registry.IncompleteRegistration) as caught:
        problems = _problems("toy_half", HalfMutation)
    said = ("toy_half: HalfMutation implements the capability 'mutation' in part (tool_universe, precondition_guards, "
            "deletion_call) without precondition_guards, deletion_call, so it offers none of it")
    assert [(str(w.message), w.filename, w.lineno) for w in caught] == \
        [(said, __file__, inspect.getsourcelines(HalfMutation)[1])]
    assert problems == {("registration", "toy_half", said)}


SHARED_HOMES: dict[str, tb.Home] = {}


class SharedHomeSession(tb.ToySession):
    """A session whose home outlives it: one per task, whatever the rollout."""

    def __init__(self, task: tb.Task) -> None:
        super().__init__(task)
        self.home = SHARED_HOMES.setdefault(task.user_turns[0], self.home)


class SharedState(tb.ToyReplay):
    def open_session(self, rollout):
        return SharedHomeSession(tb.TASKS[rollout.task_id])


def test_sessions_that_share_state_are_found_out(scratch_registry):
    problems = _problems("toy_shared", SharedState)
    isolation = {where for check, where, _ in problems if check == "isolation"}
    # every task's gold changes a light, so an idle agent then scores otherwise than before
    assert isolation == {f"toy_shared/{task}" for task in tb.TASKS}
    assert ("isolation", "toy_shared/kitchen-on", "an agent that does nothing scores T = 1, FED = 2, Y = 0 (lights "
            "differ from the reference) before the gold ran in another session, T = 1, FED = 2, Y = 1 (lights as "
            "the reference leaves them) after") in problems


class NoBase:
    """A session that does not derive from ReplaySession (its defaults are missing)."""

    def __init__(self, task: tb.Task) -> None:
        self.inner = tb.ToySession(task)


class WithoutBase(tb.ToyReplay):
    def open_session(self, rollout):
        return NoBase(tb.TASKS[rollout.task_id])


def test_a_session_without_the_base_class_is_a_problem(scratch_registry):
    assert _problems("toy_nobase", WithoutBase) == {
        ("open", f"toy_nobase/{task}", "open_session returned a NoBase, which does not derive from ReplaySession")
        for task in tb.TASKS}
    assert issubclass(tb.ToySession, ReplaySession)


BAD_TOOLS = {**tb.TOOLS,
             "switch": ToolSpec("switch", {"type": "object", "properties": {"room_id": {"type": "strin"}}},
                                reference_params=frozenset({"room_id"})),
             "set_brightness": ToolSpec("set_brightness", {"type": "object", "properties": {"level": {}}},
                                        positional_order=("room_id", "level"), reference_params=frozenset({"room"}))}


class BadSpecSession(tb.ToySession):
    def exposed_tools(self):
        return BAD_TOOLS


class BadSpecs(tb.ToyReplay):
    def open_session(self, rollout):
        return BadSpecSession(tb.TASKS[rollout.task_id])


def test_tool_specs_that_are_no_valid_schema_or_name_undeclared_parameters(scratch_registry):
    specs = {(where.split(": ")[1], detail) for check, where, detail in _problems("toy_specs", BadSpecs)
             if check == "tool spec" and where.startswith("toy_specs/kitchen-on: ")}
    assert specs == {
        ("switch", "its parameters are no valid JSON Schema: 'strin' is not valid under any of the given schemas"),
        ("set_brightness", "positional_order names room_id, which its schema does not declare"),
        ("set_brightness", "reference_params names room, which its schema does not declare"),
    }


def _without_last_call(rollout):
    """kitchen-on's reference without its last call (the switch): a gold that does not score 1."""
    if rollout.task_id != "kitchen-on":
        return rollout
    return dataclasses.replace(rollout, turns=((tb.Step(rollout.turns[0][0].calls[:-1]),),))


class ShortGold(tb.ToyReplay):
    def reference_rollout(self, task_id):
        return _without_last_call(super().reference_rollout(task_id))


class ShortGoldWithHealth(tb.ToyLights):
    def reference_rollout(self, task_id):
        return _without_last_call(super().reference_rollout(task_id))


def test_a_gold_that_fails_is_a_problem_unless_the_benchmarks_health_says_so(scratch_registry, monkeypatch):
    # a task whose reference logs in with a wrong PIN first (rejected), then goes on as it should
    monkeypatch.setitem(tb.TASKS, "bad-pin", tb.Task(("My PIN is 4321; the hall light on.",), ((
        tb._call("login", pin="0000"), tb._call("login", pin=tb.PIN), tb._call("list_rooms"),
        tb._call("switch", room_id="r-hall", on=True)),)))
    assert {(p.check, p.where, p.detail) for p in check_benchmark(_register("toy_gold", ShortGold), RESOURCES,
                                                                   tasks=None)} == {
        ("gold", "toy_gold/kitchen-on", "the reference rollout scores Y = 0 (lights differ from the reference), and "
                                        "the benchmark's health does not say its answer is unreachable"),
        ("gold", "toy_gold/bad-pin", "the reference rollout fails at action 1 of 4 (rejected_transition), and the benchmark's "
                                     "health does not say its gold fails there")}
    # with the capability "health", its findings (answer_unreachable, gold_fails) say so
    assert check_benchmark(_register("toy_gold_health", ShortGoldWithHealth), RESOURCES, tasks=None) == []


def test_registration_fields_that_disagree_are_said_where_register_is_called(scratch_registry):
    spec = DatasetSpec("toy_disagree", tb.ToyLights, lambda request: tb.ToyLights("toy_disagree"), no_health="none")
    with pytest.warns(registry.IncompleteRegistration) as caught:
        registry.register(Registration("test_check_benchmark.disagree", (spec,), inspect_scorers={"toy_scorer": "toy"}))
    assert sorted((str(w.message), w.filename) for w in caught) == [
        ("test_check_benchmark.disagree: the Inspect scorer 'toy_scorer' names the task 'toy', which inspect_tasks "
         "gives no reader", __file__),
        ("toy_disagree: no_health says why it has no benchmark health, but ToyLights offers it", __file__)]
    assert {p.check for p in check_benchmark("toy_disagree", RESOURCES, tasks=1)} == {"registration"}
