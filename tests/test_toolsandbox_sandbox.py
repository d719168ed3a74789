"""The native ToolSandbox: tool semantics, scenarios, replay with the generic checker, agent environment."""

from __future__ import annotations

import pytest

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark, list_task_ids, sample_task_ids
from prefix_audit.benchmarks.toolsandbox.adapter import Sandbox, task_facts
from prefix_audit.benchmarks.toolsandbox.evaluation import StateTarget
from prefix_audit.benchmarks.toolsandbox.scenarios import all_scenarios, call
from prefix_audit.benchmarks.toolsandbox.tools import TOOLS, execute
from prefix_audit.benchmarks.toolsandbox.world import NOW, person_id, starting_world
from prefix_audit.core.calls import ToolCall, structured_call
from prefix_audit.core.records import Rollout, Step
from prefix_audit.replay import registry
from prefix_audit.replay.checker import replay


@pytest.fixture(scope="module")
def bench() -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


def run(world, tool: str, /, **arguments):
    return execute(world, TOOLS[tool], call(tool, **arguments))


# --- tools -------------------------------------------------------------------------------------


def test_validators_reject_what_toolsandbox_rejects():
    world = starting_world("base", "t")
    assert run(world, "search_contacts", phone_number="4155550111").outcome.error == \
        "NumberParseException: (0) Missing or invalid default region."
    assert run(world, "search_contacts", phone_number="<phone_number>").outcome.error.startswith("NumberParseException: (1)")
    assert "larger than its valid range" in run(world, "add_reminder", content="x", reminder_timestamp=NOW * 1000).outcome.error
    assert "smaller than its valid range" in run(world, "calculate_lat_lon_distance", latitude_0=-91.0, longitude_0=0.0,
                                                 latitude_1=0.0, longitude_1=0.0).outcome.error
    assert run(world, "set_wifi_status", on="off").outcome.error.startswith("TypeError")
    assert run(world, "search_contacts").outcome.error.startswith("TypeError")  # at least one criterion
    assert run(world, "add_contact", name="A", phone_number="+14155550999", relationship=None).outcome.accepted


def test_settings_preconditions_and_low_battery_mode():
    world = starting_world("base", "t")
    assert run(world, "set_wifi_status", on=True).outcome.error == "ValueError: wifi already enabled"
    world = run(world, "set_low_battery_mode_status", on=True).world
    assert not (world.settings["wifi"] or world.settings["cellular"] or world.settings["location_service"])
    assert run(world, "set_cellular_service_status", on=True).outcome.error == \
        "PermissionError: Cellular service cannot be turned on in low battery mode"
    assert run(world, "send_message_with_phone_number", phone_number="+14155550111", content="hi").outcome.error == \
        "ConnectionError: Cellular service is not enabled"
    assert run(world, "get_current_location").outcome.error == "PermissionError: Location service is not enabled."
    assert run(world, "search_holiday", holiday_name="Labor Day").outcome.error == "ConnectionError: Wifi is not enabled"
    assert run(world, "set_low_battery_mode_status", on=True).outcome.error == "ValueError: low_battery_mode already enabled"


def test_rejected_call_leaves_state_unchanged_and_ids_are_seeded():
    world = starting_world("base", "seed")
    before = world.scratch()
    rejected = run(world, "remove_contact", person_id="+14155550111")
    assert rejected.outcome.error.startswith("NoDataError")
    assert rejected.world is world and world == before
    added = run(world, "add_contact", name="Kofi Mensah", phone_number="+14155550201")
    again = run(starting_world("base", "seed"), "add_contact", name="Kofi Mensah", phone_number="+14155550201")
    assert added.outcome.result == again.outcome.result  # seeded id
    assert world == before  # the committed world was not touched either
    assert run(world, "get_current_timestamp").outcome.result == NOW


def test_utilities():
    world = starting_world("base", "t")
    assert run(world, "unit_conversion", amount=26.2, from_unit="miles", to_unit="km").outcome.result == pytest.approx(42.1648128)
    assert run(world, "unit_conversion", amount=98.6, from_unit="F", to_unit="celsius").outcome.result == pytest.approx(37.0)
    assert run(world, "unit_conversion", amount=1.0, from_unit="kg", to_unit="meter").outcome.error.startswith("DimensionalityError")
    christmas = run(world, "search_holiday", holiday_name="Christmas").outcome.result
    assert run(world, "timestamp_diff", timestamp_0=NOW, timestamp_1=christmas).outcome.result == {"days": 285, "seconds": 54000}
    independence = run(world, "search_holiday", holiday_name="Independence Day").outcome.result
    assert run(world, "timestamp_to_datetime_info", timestamp=independence).outcome.result["month"] == 7
    assert run(world, "datetime_info_to_timestamp", year=2025, month=2, day=30, hour=0, minute=0,
               second=0).outcome.error == "ValueError: day is out of range for month"


# --- scenarios -----------------------------------------------------------------------------------


def test_scenario_set_covers_toolsandbox_categories():
    scenarios = all_scenarios()
    assert len(scenarios) >= 200
    categories = {c for s in scenarios.values() for c in s.categories}
    assert {"SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "MULTIPLE_USER_TURN", "STATE_DEPENDENCY",
            "CANONICALIZATION", "INSUFFICIENT_INFORMATION", "NO_DISTRACTION_TOOLS", "THREE_DISTRACTION_TOOLS",
            "TEN_DISTRACTION_TOOLS", "ALL_TOOLS_AVAILABLE"} <= categories
    for s in scenarios.values():
        start = starting_world(s.settings, s.id)
        assert len(s.reference) == len(s.user_turns)
        assert s.milestones or s.minefields, s.id
        for target in s.milestones:  # a state milestone must be something the agent has to achieve
            assert not (isinstance(target, StateTarget) and target.similarity(start) == 1.0), (s.id, target)
        for value, turn in s.user_facts:
            facts = task_facts(s)
            assert turn > 0 and value not in facts.initial_values
            assert str(value) in s.user_turns[turn] and not any(str(value) in t for t in s.user_turns[:turn])


def test_every_reference_replays_fully_executable_with_y1(bench):
    for task_id in bench.task_ids():
        episode = replay(bench.reference_rollout(task_id), bench)
        assert (episode.FED, episode.Y) == (episode.T + 1, 1), (task_id, episode.y_detail,
                                                                episode.first_failure)
        assert "similarity 1.0000" in episode.y_detail


def test_sample_is_deterministic_stratified_and_seeded():
    ids = sample_task_ids()
    assert len(ids) == 200 == len(set(ids)) and ids == sample_task_ids(200, 0)
    assert set(ids) <= set(list_task_ids())
    assert {all_scenarios()[i].family for i in ids} == {s.family for s in all_scenarios().values()}
    assert sample_task_ids(200, 1) != ids
    with pytest.raises(ValueError):
        sample_task_ids(len(list_task_ids()) + 1)


def test_registered_dataset():
    registry.load()
    assert {"toolsandbox", "toolsandbox_recorded"} <= set(registry.dataset_names())
    assert registry.workflow_datasets().count("toolsandbox_recorded") == 0  # imported runs only
    bench = registry.open_benchmark("toolsandbox", "unused-resources-dir")
    assert bench.dataset == "toolsandbox" and len(bench.task_ids()) == len(list_task_ids())
    assert len(bench.scenario_set_sha256) == 64 and bench.scenario_set_sha256 == ToolSandboxBenchmark().scenario_set_sha256


# --- the paper's delete-contact example (Table C.1) --------------------------------------------


def _rollout(task_id: str, calls: list[ToolCall]) -> Rollout:
    return Rollout("toolsandbox", task_id, "m", "example", f"ex-{len(calls)}", ((Step(tuple(calls)),),))


def test_delete_contact_repair_example(bench):
    task = "remove_contact_by_phone_02"
    scenario = bench.scenario(task)
    phone = "+14155550122"
    assert scenario.user_turns == (f"Remove {phone} from my contacts.",)
    repaired = [call("remove_contact", person_id=phone), call("search_contacts", phone_number=phone),
                call("remove_contact", person_id=person_id("Chiara Rossi"))]
    episode = replay(_rollout(task, repaired), bench)
    assert (episode.T, episode.FED, episode.Y) == (3, 1, 1)
    assert episode.category == "state_consistency"
    assert [f.code for f in episode.verdicts[0].failures] == ["rejected_transition"]  # a phone number is available
    E = [int(episode.FED > k) for k in (1, 2, 3)]
    assert E == [0, 0, 0]
    # V_j in each action's own replayed state: the rejected call changed nothing, so actions 2 and 3
    # see the state they would see without it; they are executable there.
    suffix = replay(_rollout(task, repaired[1:]), bench)
    V = [int(episode.verdicts[0].valid)] + [int(v.valid) for v in suffix.verdicts]
    assert V == [0, 1, 1] and [v.accepted for v in episode.verdicts] == [False, True, True]
    assert (suffix.T, suffix.FED, suffix.Y) == (2, 3, 1)  # the error-free search-then-delete path


# --- final success -------------------------------------------------------------------------------


def test_minefield_partial_milestones_guardrail_and_abort(bench):
    task = "remove_contact_by_phone_02"
    phone, pid = "+14155550122", person_id("Chiara Rossi")
    only_search = replay(_rollout(task, [call("search_contacts", phone_number=phone)]), bench)
    assert only_search.Y == 0 and "milestones 1/2" in only_search.y_detail and "similarity 0.5000" in only_search.y_detail
    # collateral damage in a table no milestone constrains (here: a message sent) spoils the match
    collateral = [call("send_message_with_phone_number", phone_number=phone, content="bye"),
                  call("search_contacts", phone_number=phone), call("remove_contact", person_id=pid)]
    assert replay(_rollout(task, collateral), bench).Y == 0
    aborted = replay(_rollout(task, [call("search_contacts", phone_number=phone), call("remove_contact", person_id=pid),
                                     call("get_wifi_status")]), bench)
    assert aborted.Y == 0 and aborted.FED == 3 and aborted.category == "schema" and "aborted: KeyError" in aborted.y_detail
    mined = "remove_contact_no_search_01"
    attempt = replay(_rollout(mined, [call("remove_contact", person_id="+14155550122")]), bench)
    assert attempt.Y == 0 and "minefield hit: remove_contact()" in attempt.y_detail and "similarity 0.0000" in attempt.y_detail
    decline = Rollout("toolsandbox", mined, "m", "example", "decline", ((Step((), "I can't do that."),),))
    assert (replay(decline, bench).T, replay(decline, bench).FED, replay(decline, bench).Y) == (1, 2, 1)


def test_terminal_reply_rules(bench):
    lazy = Rollout("toolsandbox", "toggle_setting_01", "m", "example", "lazy", ((Step((), "Done!"),),))
    episode = replay(lazy, bench)
    assert (episode.FED, episode.category, episode.Y) == (1, "state_consistency", 0)
    early = Rollout("toolsandbox", "message_multi_turn_01", "m", "example", "early",
                    ((Step((call("search_contacts", name="Bruno Okafor"),)), Step((), "Bye")),))
    assert replay(early, bench).FED == 2


def test_information_and_stale_reference(bench):
    task = "message_multi_turn_01"
    content = bench.scenario(task).user_facts[0][0]
    early = Rollout("toolsandbox", task, "m", "example", "early-fact",
                    ((Step((call("send_message_with_phone_number", phone_number="+14155550111", content=content),)),), ()))
    assert replay(early, bench).category == "information"
    pid = person_id("Chiara Rossi")
    assert "remove_contact" in bench.scenario("update_phone_02_all_tools").exposed
    stale = Rollout("toolsandbox", "update_phone_02_all_tools", "m", "example", "stale",
                    ((Step((call("search_contacts", name="Chiara Rossi"), call("remove_contact", person_id=pid),
                            call("modify_contact", person_id=pid, phone_number="+14155550302"))),),))
    episode = replay(stale, bench)
    assert (episode.FED, episode.category, episode.first_failure.failures[0].code) == (3, "dependency", "stale_reference")


# --- agent environment ---------------------------------------------------------------------------


def test_agent_environment_runs_a_scenario(bench):
    env = bench.agent_environment("message_cellular_off_01")
    assert env.turn_count() == 1 and "Bruno Okafor" in env.user_message(0)
    names = {t.name for t in env.tools(0)}
    assert names == set(bench.scenario("message_cellular_off_01").exposed)
    assert env.execute(call("send_message_with_phone_number", phone_number="+14155550111",
                            content="x")) == "ConnectionError: Cellular service is not enabled"
    unreadable = structured_call("search_contacts", '{"name": "Bru', "c9")
    assert env.execute(unreadable).startswith("Error: the tool call could not be read: ")
    assert env.execute(call("search_contacts", name="Bruno")).startswith("[{'person_id': ")
    assert env.execute(call("set_cellular_service_status", on=True)) == "None"
    assert env.execute(call("delete_contact", person_id="x")).startswith("KeyError: Agent tool call")
    assert env.sandbox.evaluation().aborted is not None


def test_sandbox_is_fresh_per_episode(bench):
    scenario = bench.scenario("remove_contact_by_phone_01")
    first, second = Sandbox(scenario), Sandbox(scenario)
    first.execute(call("remove_contact", person_id=person_id("Bruno Okafor")))
    assert second.world.contacts != first.world.contacts and second.world == Sandbox(scenario).world


# --- out-of-range values that only the handler's arithmetic catches ------------------------------


@pytest.mark.parametrize(("tool", "arguments", "exception"), [
    ("search_holiday", {"holiday_name": "Memorial Day", "year": 10000}, "ValueError"),
    ("shift_timestamp", {"timestamp": NOW, "days": 10 ** 400}, "OverflowError"),
    ("timestamp_to_datetime_info", {"timestamp": float("nan")}, "ValueError"),  # JSON allows NaN; the range check passes it
    ("timestamp_diff", {"timestamp_0": float("nan"), "timestamp_1": NOW}, "ValueError"),
    ("unit_conversion", {"amount": 10 ** 400, "from_unit": "mile", "to_unit": "km"}, "OverflowError"),
    ("datetime_info_to_timestamp", {"year": 10 ** 30, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0},
     "OverflowError"),
])
def test_a_tool_raising_is_a_rejected_call_not_a_crash(tool, arguments, exception):
    # ToolSandbox reports whatever a tool raises as that call's error; the state stays as it was.
    world = starting_world("base", "t")
    executed = run(world, tool, **arguments)
    assert not executed.outcome.accepted and executed.outcome.error.startswith(f"{exception}: ")
    assert executed.world is world


def test_a_raising_tool_scores_as_state_consistency_and_the_agent_sees_the_error(bench):
    task = "days_until_holiday_01"
    calls = (call("get_current_timestamp"), call("search_holiday", holiday_name="Memorial Day", year=10000))
    episode = replay(Rollout("toolsandbox", task, "m", "example", "year", ((Step(calls),),)), bench)
    assert (episode.T, episode.FED, episode.category) == (2, 2, "state_consistency")
    env = bench.agent_environment(task)
    assert env.execute(calls[1]) == "ValueError: year 10000 is out of range"
