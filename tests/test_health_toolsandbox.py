"""Benchmark health of the native ToolSandbox scenarios: each code that applies found on a scenario built
to show it and absent on a sound one, the release label, determinism, and the whole set (slow)."""

from __future__ import annotations

import re

import pytest

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark, list_task_ids
from prefix_audit.benchmarks.toolsandbox.evaluation import StateTarget, TraceTarget, exact, text
from prefix_audit.benchmarks.toolsandbox.health import ToolSandboxProbe, world_changes
from prefix_audit.benchmarks.toolsandbox.scenarios import INSUFFICIENT, Scenario, call, scenario_set_sha256
from prefix_audit.benchmarks.toolsandbox.tools import TOOLS
from prefix_audit.benchmarks.toolsandbox.world import person_id, starting_world
from prefix_audit.core.health import is_sound
from prefix_audit.replay.checker import replay

SORRY = "I can't do that with the tools I have."


@pytest.fixture(scope="module")
def bench() -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


def scenario(id_: str, reference: list[list], milestones: list, *, minefields: list = (), settings: str = "base",
             categories: tuple[str, ...] = (), reply: str | None = None, extra: tuple[str, ...] = ()) -> Scenario:
    """A scenario built by hand: one user turn per reference turn, the reference's tools allowed."""
    allowed = tuple(dict.fromkeys([c.name for turn in reference for c in turn] + list(extra)))
    turns = tuple(f"request {k}" for k in range(len(reference)))
    return Scenario(id_, "constructed", categories, settings, turns, tuple(tuple(turn) for turn in reference),
                    tuple(milestones), tuple(minefields), allowed, (), (), reply)


def health(*scenarios: Scenario) -> dict[str, list]:
    b = ToolSandboxBenchmark(scenarios={s.id: s for s in scenarios})
    release = b.health_releases()[0]
    return {s.id: b.task_health(s.id, release) for s in scenarios}


def only(findings: list, code: str):
    hits = [f for f in findings if f.code == code]
    assert len(hits) == 1, findings
    return hits[0]


def codes(findings: list) -> set[str]:
    return {f.code for f in findings}


def setting(name: str, value: bool) -> StateTarget:
    return StateTarget("settings", ((name, exact(value)),))


def sent(phone: str, content: str) -> StateTarget:
    return StateTarget("messages", (("recipient_phone_number", exact(phone)), ("content", text(content))))


WIFI_OFF = scenario("wifi_off", [[call("set_wifi_status", on=False)]], [setting("wifi", False)])
BRUNO = ("+14155550111", "Dinner at eight works for me")
SEND = scenario("send", [[call("send_message_with_phone_number", phone_number=BRUNO[0], content=BRUNO[1])]],
                [sent(*BRUNO)])


# --- the release ----------------------------------------------------------------------------------------------


def test_one_release_named_by_the_scenario_set_digest(bench):
    (release,) = bench.health_releases()
    assert re.fullmatch(r"scenarios-[0-9a-f]{12}", release) and release == f"scenarios-{scenario_set_sha256()[:12]}"
    assert bench.release_tasks(release) == list_task_ids()
    assert bench.release_of(bench.reference_rollout("add_contact_01")) == release
    with pytest.raises(KeyError):
        bench.task_health("add_contact_01", "scenarios-000000000000")
    with pytest.raises(KeyError):
        bench.task_health("no_such_scenario", release)
    other = ToolSandboxBenchmark(scenarios={WIFI_OFF.id: WIFI_OFF})
    assert other.health_releases() != bench.health_releases()
    assert other.release_tasks(other.health_releases()[0]) == ["wifi_off"]


def test_sound_scenarios_have_no_finding(bench):
    assert health(WIFI_OFF, SEND) == {"wifi_off": [], "send": []}
    release = bench.health_releases()[0]
    for task_id in ("message_low_battery_01", "settings_multi_turn_01", "remove_contact_by_phone_01",
                    "reminder_multi_turn_01_3_distraction_tools", "add_contact_multi_turn_01"):
        assert bench.task_health(task_id, release) == [], task_id


# --- the codes --------------------------------------------------------------------------------------------------


def test_gold_fails_when_the_sandbox_rejects_a_reference_call():
    broken = scenario("wifi_on_twice", [[call("set_wifi_status", on=True)]], [setting("wifi", True)])
    found = health(broken)["wifi_on_twice"]
    assert "ValueError: wifi already enabled" in only(found, "gold_fails").evidence
    assert "set_wifi_status(on=True)" in only(found, "gold_fails").evidence
    assert "(settings has a row with wifi=True) already hold at the start" in only(found, "gold_no_effect").evidence
    assert not is_sound(found)


def test_gold_not_prefix_executable_when_the_sandbox_accepts_what_our_predicates_do_not():
    # an object id no tool output gave: the sandbox removes the contact, the dependency predicate refuses
    chiara = person_id("Chiara Rossi")
    blind = scenario("blind_remove", [[call("remove_contact", person_id=chiara)]],
                     [StateTarget("contacts", (("person_id", exact(chiara)),), present=False)])
    searched = scenario("searched_remove", [[call("search_contacts", name="Chiara Rossi"),
                                             call("remove_contact", person_id=chiara)]], blind.milestones)
    found = health(blind, searched)
    evidence = only(found["blind_remove"], "gold_not_prefix_executable").evidence
    assert "dependency" in evidence and "remove_contact" in evidence
    assert codes(found["blind_remove"]) == {"gold_not_prefix_executable"} and is_sound(found["blind_remove"])
    assert found["searched_remove"] == []


def test_answer_unreachable_names_the_milestone_and_its_best_similarity():
    wrong = scenario("wrong_words", SEND.reference, [sent(BRUNO[0], BRUNO[1] + " too")])
    found = health(wrong)["wrong_words"]
    evidence = only(found, "answer_unreachable").evidence
    assert "the gold itself scores 0" in evidence
    assert "milestone 1 of 1 (database state: messages has a row with" in evidence
    assert re.search(r"best 0\.9\d{3} at call 1 \(send_message_with_phone_number\)", evidence), evidence
    assert codes(found) == {"answer_unreachable"}  # no duplicate: the shared gold replay says it once


def test_answer_unreachable_says_an_unreached_milestone():
    never = scenario("never", WIFI_OFF.reference, [setting("wifi", False), setting("cellular", False)])
    evidence = only(health(never)["never"], "answer_unreachable").evidence
    assert "milestone 2 of 2 (database state: settings has a row with cellular=False): unmatched, no call reaches it" \
        in evidence


def test_gold_no_effect_says_what_the_scenario_is_scored_on(bench):
    lookup = scenario("lookup", [[call("search_contacts", name="Bruno Okafor")]],
                      [TraceTarget("search_contacts", (("name", text("Bruno Okafor")),))])
    evidence = only(health(lookup)["lookup"], "gold_no_effect").evidence
    assert "none of the reference's 1 call(s) (search_contacts) changes the checked state" in evidence
    assert "1 tool-trace milestone(s) (search_contacts(name='Bruno Okafor'))" in evidence
    assert codes(health(lookup)["lookup"]) == {"gold_no_effect"}
    assert "gold_no_effect" not in codes(health(WIFI_OFF)["wifi_off"])
    release = bench.health_releases()[0]
    assert codes(bench.task_health("unit_conversion_01", release)) == {"gold_no_effect"}


def test_passes_doing_nothing_when_nothing_is_required():
    no_milestone = scenario("no_milestone", [[call("search_contacts", name="Bruno Okafor")]], [])
    evidence = only(health(no_milestone)["no_milestone"], "passes_doing_nothing").evidence
    assert evidence.startswith("an agent that answers each of the 1 user turn(s) with a reply and no call scores 1")
    assert "gold_no_effect" in codes(health(no_milestone)["no_milestone"])
    assert "passes_doing_nothing" not in codes(health(SEND)["send"])


def test_a_scenario_scored_by_minefields_alone_is_passed_by_doing_nothing(bench):
    mine = [TraceTarget("send_message_with_phone_number")]
    outright = scenario("outright", [[]], [], minefields=mine, categories=(INSUFFICIENT,), reply=SORRY,
                        extra=("send_message_with_phone_number",))
    looks_first = scenario("looks_first", [[call("search_contacts", name="Xavier Quinn")]], [], minefields=mine,
                           categories=(INSUFFICIENT,), reply=SORRY, extra=("send_message_with_phone_number",))
    guarded = scenario("guarded", [[call("search_contacts", name="Xavier Quinn")]],
                       [TraceTarget("search_contacts", (("name", exact("Xavier Quinn")),))], minefields=mine,
                       categories=(INSUFFICIENT,), reply=SORRY, extra=("send_message_with_phone_number",))
    found = health(outright, looks_first, guarded)
    # the reference declines outright: a refusal task, which cannot tell a considered refusal from an ignored request
    assert codes(found["outright"]) == {"gold_no_effect", "passes_doing_nothing"}
    assert ("the reference declines without a call too, so the scenario cannot tell its refusal from an agent that "
            "ignores the request") in only(found["outright"], "passes_doing_nothing").evidence
    # neither reference writes: both are refusal tasks by design, and stay sound
    assert {only(found[t], "passes_doing_nothing").kind for t in ("outright", "looks_first")} == {"design"}
    # the reference looks the person up before it declines; an agent that never looks scores 1 all the same
    assert ("it has no milestone: it is scored by its minefields alone, which an agent that calls no tool cannot hit; "
            "what the reference does first (search_contacts) is checked by nothing") in \
        only(found["looks_first"], "passes_doing_nothing").evidence
    assert "passes_doing_nothing" not in codes(found["guarded"])  # a milestone asks for the look-up
    release = bench.health_releases()[0]
    for task_id in ("remove_contact_no_search_01_all_tools", "message_unknown_person_01", "holiday_wifi_locked_01"):
        assert replay(bench.reference_rollout(task_id), bench).Y == 1
        assert "passes_doing_nothing" in codes(bench.task_health(task_id, release)), task_id


def test_unchecked_required_action_when_no_milestone_sees_a_write():
    radios = [[call("set_wifi_status", on=False), call("set_location_service_status", on=False)]]
    half = scenario("half", radios, [setting("wifi", False)])
    both = scenario("both", radios, [setting("wifi", False), setting("location_service", False)])
    after = scenario("after", [[*SEND.reference[0], call("set_wifi_status", on=False)]], [sent(*BRUNO)])
    found = health(half, both, after)
    evidence = only(found["half"], "unchecked_required_action").evidence
    assert evidence.startswith("the reference without turn 1, action 2: set_location_service_status(on=False) "
                               "(a write: it sets settings.location_service True → False) scores 1")
    assert "milestones and minefields on settings (settings has a row with wifi=False) are met the same" in evidence
    assert found["both"] == []
    evidence = only(found["after"], "unchecked_required_action").evidence
    assert "set_wifi_status(on=False)" in evidence
    assert "no database-state milestone or minefield reads settings" in evidence
    assert not is_sound(found["half"])


def test_writes_are_found_by_executing_the_reference(bench):
    world = starting_world("base", "t")
    assert world_changes(world, world) == []
    probe = ToolSandboxProbe(bench, bench.scenario("message_low_battery_01"))
    assert [text for changes in probe.effects.values() for _, text in changes][:2] == [
        "sets settings.low_battery_mode True → False", "sets settings.cellular False → True"]
    assert probe.writes == [2, 3, 4]  # not the search (a read)
    rejected = ToolSandboxProbe(bench, scenario("x", [[call("set_wifi_status", on=True)]], []))
    assert rejected.writes == []  # a rejected call changes nothing


def test_findings_are_deterministic(bench):
    release = bench.health_releases()[0]
    for task_id in ("message_low_battery_01", "lookup_number_03", "reminder_missing_02"):
        assert bench.task_health(task_id, release) == ToolSandboxBenchmark().task_health(task_id, release)
    built = scenario("half", [[call("set_wifi_status", on=False), call("set_location_service_status", on=False)]],
                     [setting("wifi", False)])
    assert health(built) == health(built)


# --- the whole set ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_whole_scenario_set(bench):
    release = bench.health_releases()[0]
    found = {t: bench.task_health(t, release) for t in bench.release_tasks(release)}
    assert len(found) == len(list_task_ids()) == 266
    # The caution on the read-only scenarios, and the insufficient-information scenarios that look something
    # up before they decline, which an agent that never calls a tool passes.
    assert {f.code for fs in found.values() for f in fs} == {"gold_no_effect", "passes_doing_nothing"}
    idle = [t for t, fs in found.items() if "passes_doing_nothing" in codes(fs)]
    assert len(idle) == 22
    assert all(bench.scenario(t).insufficient_information and not bench.scenario(t).milestones for t in idle)
    # Writes found by execution agree with the tools the sandbox runs on a scratch copy.
    for task_id in found:
        probe = ToolSandboxProbe(bench, bench.scenario(task_id))
        mutating = [d for d, c in enumerate(probe.calls, 1) if TOOLS[c.name].mutates]
        assert probe.writes == mutating, task_id
        assert (not probe.writes) == ("gold_no_effect" in codes(found[task_id])), task_id
    assert sum("gold_no_effect" in codes(fs) for fs in found.values()) == 76
