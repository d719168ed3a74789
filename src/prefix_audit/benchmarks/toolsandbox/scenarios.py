"""The scenario set: our own deterministic scenarios in ToolSandbox's categories.

Each scenario has a starting state (the base world in one settings variant), scripted user turns,
reference actions per turn, ordered milestones, minefields, an allow list (the tools it needs,
plus distraction tools in the augmented variants) and a deny list, and the user facts that only a
later user turn gives. Families cover ToolSandbox's categories: single and multiple tool call,
single and multiple user turn, state dependency (a setting must be changed first), canonicalization
(national phone numbers, relative and calendar times, unit names) and insufficient information
(the right behaviour is to decline; its reference ends with a reply and no tool call).

Every family is instantiated over several contacts, reminders, holidays or units, and every base
scenario also appears with 3, 10 or all tools as distractions (in rotation), as ToolSandbox's
augmented variants do; :func:`sample_task_ids` draws a seeded sample stratified by family.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from prefix_audit.plugin import ToolCall

from .evaluation import StateTarget, Target, TraceTarget, close, exact, text, unit
from .tools import TOOLS
from .utilities import HOLIDAYS, convert_units, utc
from .world import CONTACTS, HOME, NOW, base_rows, person_id

INSUFFICIENT = "INSUFFICIENT_INFORMATION"
DISTRACTIONS = (("", "NO_DISTRACTION_TOOLS"), ("3_distraction_tools", "THREE_DISTRACTION_TOOLS"),
                ("10_distraction_tools", "TEN_DISTRACTION_TOOLS"), ("all_tools", "ALL_TOOLS_AVAILABLE"))


@dataclass(frozen=True)
class Scenario:
    id: str
    family: str
    categories: tuple[str, ...]
    settings: str  # settings variant of the starting world
    user_turns: tuple[str, ...]
    reference: tuple[tuple[ToolCall, ...], ...]  # per user turn
    milestones: tuple[Target, ...]
    minefields: tuple[Target, ...] = ()
    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()
    user_facts: tuple[tuple[Any, int], ...] = ()  # value → the turn in which the user first gives it
    reference_reply: str | None = None  # the closing no-tool reply (insufficient information)

    @property
    def insufficient_information(self) -> bool:
        return INSUFFICIENT in self.categories

    @property
    def exposed(self) -> frozenset[str]:
        return frozenset(self.allowed) - frozenset(self.denied)


def call(tool: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(tool, (), arguments, structured=True)


@dataclass(frozen=True)
class Draft:
    """A base scenario before ids, categories and tool lists are derived."""

    family: str
    user_turns: tuple[str, ...]
    reference: tuple[tuple[ToolCall, ...], ...]
    milestones: tuple[Target, ...]
    categories: tuple[str, ...] = ()
    settings: str = "base"
    minefields: tuple[Target, ...] = ()
    extra_tools: tuple[str, ...] = ()  # allowed beyond the reference's tools (minefield tools)
    denied: tuple[str, ...] = ()
    user_facts: tuple[tuple[Any, int], ...] = ()
    reply: str | None = None


def single(family: str, prompt: str, calls: list[ToolCall], milestones: list[Target], *categories: str,
           **kw: Any) -> Draft:
    return Draft(family, (prompt,), (tuple(calls),), tuple(milestones), categories, **kw)


def _sent(phone: str, content: str) -> StateTarget:
    return StateTarget("messages", (("recipient_phone_number", exact(phone)), ("content", text(content))))


def _setting(name: str, value: bool) -> StateTarget:
    return StateTarget("settings", ((name, exact(value)),))


def _contact_gone(pid: str) -> StateTarget:
    return StateTarget("contacts", (("person_id", exact(pid)),), present=False)


def _national(phone: str) -> str:
    """+14155550211 → (415) 555-0211"""
    digits = phone[2:]
    return f"({digits[:3]}) {digits[3:6]}-{digits[6:]}"


_SETTING_TOOL = {"cellular": "set_cellular_service_status", "wifi": "set_wifi_status",
                 "location_service": "set_location_service_status", "low_battery_mode": "set_low_battery_mode_status"}
_SETTING_WORDS = {"cellular": "cellular data", "wifi": "wifi", "location_service": "location services",
                  "low_battery_mode": "low battery mode"}
_VARIANT_OFF = {"cellular": "cellular_off", "wifi": "wifi_off", "location_service": "location_off"}


def _unlock(setting: str, variant: str) -> tuple[list[ToolCall], list[Target]]:
    """Calls and milestones that turn ``setting`` on in ``variant`` (leaving low-battery mode first)."""
    calls: list[ToolCall] = []
    marks: list[TraceTarget | StateTarget] = []
    if variant == "low_battery":
        calls.append(call("set_low_battery_mode_status", on=False))
        marks.append(_setting("low_battery_mode", False))
    calls.append(call(_SETTING_TOOL[setting], on=True))
    marks.append(_setting(setting, True))
    return calls, marks


# --- data the families draw on ------------------------------------------------------------------

NEW_PEOPLE = (("Kofi Mensah", "+14155550201"), ("Lena Fischer", "+14155550202"), ("Mateo Silva", "+14155550203"),
              ("Nadia Petrova", "+14155550204"), ("Omar Said", "+14155550205"), ("Priya Nair", "+14155550206"))
NEW_PEOPLE_NATIONAL = (("Quentin Blake", "+14155550211", "cousin"), ("Rosa Martins", "+14155550212", None),
                       ("Sven Berg", "+14155550213", "coworker"), ("Tara Singh", "+14155550214", None))
MESSAGES = ("Running ten minutes late, sorry!", "Can you send me the address?", "Happy birthday, have a great day",
            "Dinner at eight works for me", "Thanks for the book recommendation", "Call me when you land")
NEW_NUMBERS = ("+14155550301", "+14155550302", "+14155550303", "+14155550304", "+14155550305", "+14155550306")
REMINDER_TASKS = ("buy oat milk", "submit the expense report", "call grandma", "stretch", "check the oven",
                  "move the car")
UNKNOWN_PEOPLE = ("Xavier Quinn", "Yusuf Demir", "Zoe Laurent")
_CONTACT = {name: (phone, rel) for name, phone, rel in CONTACTS}


def _reminders() -> list[dict[str, Any]]:
    return base_rows()[2]


def _when(year: int, month: int, day: int, hour: int) -> tuple[float, str]:
    moment = datetime(year, month, day, hour, tzinfo=UTC)
    return moment.timestamp(), f"{moment:%B} {day}, {year} at {hour:02d}:00 UTC"


def _date_call(year: int, month: int, day: int, hour: int) -> ToolCall:
    return call("datetime_info_to_timestamp", year=year, month=month, day=day, hour=hour, minute=0, second=0)


# --- families -------------------------------------------------------------------------------------


def _contact_families() -> Iterator[Draft]:
    for name, phone in NEW_PEOPLE:
        yield single("add_contact", f"Add {name} to my contacts, the number is {phone}.",
                     [call("add_contact", name=name, phone_number=phone)],
                     [StateTarget("contacts", (("name", text(name)), ("phone_number", exact(phone))))])
    for name, phone, rel in NEW_PEOPLE_NATIONAL:
        who = f"my {rel} {name}" if rel else name
        arguments = {"name": name, "phone_number": phone, **({"relationship": rel} if rel else {})}
        fields = (("name", text(name)), ("phone_number", exact(phone))) \
            + ((("relationship", text(rel)),) if rel else ())
        yield single("add_contact_canonical", f"Save {who} as a new contact. Number: {_national(phone)} (a US number).",
                     [call("add_contact", **arguments)], [StateTarget("contacts", fields)], "CANONICALIZATION")
    for name, _, _ in CONTACTS[:6]:
        yield single("lookup_number", f"What's {name}'s phone number?", [call("search_contacts", name=name)],
                     [TraceTarget("search_contacts", (("name", text(name)),))])
    for name, phone, _ in CONTACTS:
        yield single("remove_contact_by_phone", f"Remove {phone} from my contacts.",
                     [call("search_contacts", phone_number=phone), call("remove_contact", person_id=person_id(name))],
                     [TraceTarget("search_contacts", (("phone_number", exact(phone)),)),
                      _contact_gone(person_id(name))])
    for name in ("Dmitri Volkov", "Farid Haddad", "Greta Nilsson", "Hiro Tanaka"):
        yield single("remove_contact_by_name", f"Delete {name} from my contacts.",
                     [call("search_contacts", name=name), call("remove_contact", person_id=person_id(name))],
                     [_contact_gone(person_id(name))])
    for k, name in enumerate(("Bruno Okafor", "Chiara Rossi", "Esme Hartley", "Hiro Tanaka", "Ines Duarte",
                              "Dmitri Volkov")):
        new = NEW_NUMBERS[k]
        canonical = k >= 4
        said = _national(new) + " (a US number)" if canonical else new
        yield single("update_phone", f"{name} has a new number: {said}. Please update the contact.",
                     [call("search_contacts", name=name),
                      call("modify_contact", person_id=person_id(name), phone_number=new)],
                     [StateTarget("contacts", (("person_id", exact(person_id(name))), ("phone_number", exact(new))))],
                     *(("CANONICALIZATION",) if canonical else ()))
    for name, rel in (("Dmitri Volkov", "friend"), ("Hiro Tanaka", "friend"), ("Chiara Rossi", "coworker"),
                      ("Greta Nilsson", "neighbor")):
        yield single("update_relationship", f"{name} is now my {rel}, please update the contact.",
                     [call("search_contacts", name=name),
                      call("modify_contact", person_id=person_id(name), relationship=rel)],
                     [StateTarget("contacts", (("person_id", exact(person_id(name))), ("relationship", text(rel))))])


def _message_families() -> Iterator[Draft]:
    for k, name in enumerate(("Bruno Okafor", "Chiara Rossi", "Dmitri Volkov", "Esme Hartley", "Farid Haddad",
                              "Ines Duarte")):
        phone, content = _CONTACT[name][0], MESSAGES[k]
        yield single("message_by_name", f"Text {name}: {content}",
                     [call("search_contacts", name=name),
                      call("send_message_with_phone_number", phone_number=phone, content=content)],
                     [_sent(phone, content)])
    for variant, names in (("cellular_off", ("Bruno Okafor", "Greta Nilsson", "Hiro Tanaka", "Esme Hartley")),
                           ("low_battery", ("Chiara Rossi", "Farid Haddad", "Dmitri Volkov"))):
        for k, name in enumerate(names):
            phone, content = _CONTACT[name][0], MESSAGES[-1 - k]
            unlock, marks = _unlock("cellular", variant)
            yield single(f"message_{variant}", f"Send a message to {name} saying: {content}. Fix anything that "
                         "stands in the way yourself.",
                         [call("search_contacts", name=name), *unlock,
                          call("send_message_with_phone_number", phone_number=phone, content=content)],
                         [*marks, _sent(phone, content)], "STATE_DEPENDENCY", settings=variant)
    for k, phone in enumerate(("+14155550133", "+14155550166", "+14155550999", "+14155550207")):
        content = MESSAGES[(k + 2) % len(MESSAGES)]
        yield single("message_by_number", f"Send a text to {phone} that says: {content}",
                     [call("send_message_with_phone_number", phone_number=phone, content=content)],
                     [_sent(phone, content)])
    for name in ("Bruno Okafor", "Farid Haddad", "Esme Hartley", "Chiara Rossi"):
        yield single("messages_from_contact", f"Show me the messages {name} sent me.",
                     [call("search_contacts", name=name), call("search_messages", sender_person_id=person_id(name))],
                     [TraceTarget("search_messages", (("sender_person_id", exact(person_id(name))),))])


def _reminder_families() -> Iterator[Draft]:
    spans = ((2, "hours"), (5, "hours"), (1, "hours"), (8, "hours"), (3, "days"), (2, "days"))
    for k, (amount, span) in enumerate(spans):
        task, due = REMINDER_TASKS[k], NOW + amount * (3600 if span == "hours" else 86400)
        said = f"{amount} {span.rstrip('s') if amount == 1 else span}"
        yield single("reminder_relative", f"Remind me to {task} in {said}.",
                     [call("get_current_timestamp"), call("shift_timestamp", timestamp=NOW, **{span: amount}),
                      call("add_reminder", content=task, reminder_timestamp=due)],
                     [StateTarget("reminders", (("content", text(task)), ("reminder_timestamp", close(due, 1.0))))],
                     "CANONICALIZATION")
    for k, moment in enumerate(((2025, 3, 20, 14), (2025, 4, 2, 8), (2025, 5, 11, 18), (2025, 6, 1, 10))):
        task = REMINDER_TASKS[-1 - k]
        due, said = _when(*moment)
        yield single("reminder_absolute", f"Remind me to {task} on {said}.",
                     [_date_call(*moment), call("add_reminder", content=task, reminder_timestamp=due)],
                     [StateTarget("reminders", (("content", text(task)), ("reminder_timestamp", close(due, 1.0))))],
                     "CANONICALIZATION")
    rows = {row["content"]: row for row in _reminders()}
    for content, moment in (("Renew passport", (2025, 3, 28, 9)), ("Pick up dry cleaning", (2025, 3, 15, 17)),
                            ("Book dentist appointment", (2025, 3, 18, 12))):
        due, said = _when(*moment)
        rid = rows[content]["reminder_id"]
        yield single("reminder_reschedule", f"Move my reminder to {content.lower()} to {said}.",
                     [call("search_reminder", content=content), _date_call(*moment),
                      call("modify_reminder", reminder_id=rid, reminder_timestamp=due)],
                     [StateTarget("reminders", (("reminder_id", exact(rid)), ("reminder_timestamp", close(due, 1.0))))],
                     "CANONICALIZATION")
    for content in ("Pick up dry cleaning", "Call the plumber", "Water the plants", "Renew passport"):
        rid = rows[content]["reminder_id"]
        yield single("reminder_remove", f"Delete my reminder about '{content.lower()}'.",
                     [call("search_reminder", content=content), call("remove_reminder", reminder_id=rid)],
                     [StateTarget("reminders", (("reminder_id", exact(rid)),), present=False)])


def _holiday_time(name: str) -> float:
    day = HOLIDAYS[name](utc(NOW).year)
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _settings_and_utility_families() -> Iterator[Draft]:
    for setting in ("wifi", "cellular", "location_service"):
        for on in (False, True):
            variant = _VARIANT_OFF[setting] if on else "base"
            yield single("toggle_setting", f"Turn {'on' if on else 'off'} {_SETTING_WORDS[setting]}.",
                         [call(_SETTING_TOOL[setting], on=on)], [_setting(setting, on)], settings=variant)
    yield single("toggle_setting", "Turn on low battery mode.", [call("set_low_battery_mode_status", on=True)],
                 [_setting("low_battery_mode", True)])
    for setting in ("wifi", "cellular", "location_service"):
        unlock, marks = _unlock(setting, "low_battery")
        yield single("radio_low_battery", f"Turn on {_SETTING_WORDS[setting]}.", unlock, marks, "STATE_DEPENDENCY",
                     settings="low_battery")
    for variant in ("base", "location_off", "low_battery"):
        unlock, marks = _unlock("location_service", variant) if variant != "base" else ([], [])
        yield single("current_location", "Where am I right now? Give me my coordinates.",
                     [*unlock, call("get_current_location")], [*marks, TraceTarget("get_current_location")],
                     *(("STATE_DEPENDENCY",) if unlock else ()), settings=variant)
    for k, name in enumerate(("Memorial Day", "Independence Day", "Labor Day", "Thanksgiving",
                              "Christmas Day", "Juneteenth National Independence Day")):
        variant = "wifi_off" if k >= 4 else "base"
        unlock, marks = _unlock("wifi", variant) if variant != "base" else ([], [])
        said = "Juneteenth" if name.startswith("Juneteenth") else name
        when = _holiday_time(name)
        yield single("days_until_holiday", f"How many days are left until {said}?",
                     [*unlock, call("get_current_timestamp"), call("search_holiday", holiday_name=said),
                      call("timestamp_diff", timestamp_0=NOW, timestamp_1=when)],
                     [*marks, TraceTarget("search_holiday"),
                      TraceTarget("timestamp_diff",
                                  (("timestamp_0", close(NOW, 1.0)), ("timestamp_1", close(when, 1.0))))],
                     "CANONICALIZATION", *(("STATE_DEPENDENCY",) if unlock else ()), settings=variant)
    for amount, source, target, prompt in (
            (26.2, "mile", "kilometer", "How many kilometers is a 26.2-mile marathon?"),
            (5.0, "kilogram", "pound", "What is 5 kg in pounds?"),
            (98.6, "fahrenheit", "celsius", "Convert 98.6 °F to Celsius."),
            (2.0, "gallon", "liter", "How many liters are in 2 US gallons?"),
            (180.0, "centimeter", "foot", "How tall is 180 cm in feet?"),
            (60.0, "mile_per_hour", "kilometer_per_hour", "What's 60 mph in km/h?")):
        convert_units(amount, source, target)  # the table knows both units
        yield single("unit_conversion", prompt,
                     [call("unit_conversion", amount=amount, from_unit=source, to_unit=target)],
                     [TraceTarget("unit_conversion", (("amount", close(amount)), ("from_unit", unit(source)),
                                                      ("to_unit", unit(target))))], "CANONICALIZATION")
    for place, lat, lon in (("the Golden Gate Bridge", 37.8199, -122.4783),
                            ("Lake Merritt in Oakland", 37.8044, -122.2712), ("San Jose airport", 37.3639, -121.9289)):
        arguments = {"latitude_0": HOME[0], "longitude_0": HOME[1], "latitude_1": lat, "longitude_1": lon}
        yield single("distance_to_place", f"How far is {place} ({lat}, {lon}) from where I am now, in kilometers?",
                     [call("get_current_location"), call("calculate_lat_lon_distance", **arguments)],
                     [TraceTarget("calculate_lat_lon_distance",
                                  tuple((k, close(v, 1e-4)) for k, v in arguments.items()))])
    for prompt, shift in (("What day of the week is it today?", None),
                          ("What's the date 10 days from now?", {"days": 10}),
                          ("What was the date three weeks ago?", {"weeks": -3})):
        moment = NOW + (shift or {}).get("days", 0) * 86400 + (shift or {}).get("weeks", 0) * 604800
        calls = [call("get_current_timestamp"), *([call("shift_timestamp", timestamp=NOW, **shift)] if shift else []),
                 call("timestamp_to_datetime_info", timestamp=moment)]
        yield single("date_info", prompt, calls,
                     [TraceTarget("timestamp_to_datetime_info", (("timestamp", close(moment, 1.0)),))],
                     "CANONICALIZATION")


def _multi_turn_families() -> Iterator[Draft]:
    for k, name in enumerate(("Bruno Okafor", "Dmitri Volkov", "Esme Hartley", "Hiro Tanaka")):
        phone, content = _CONTACT[name][0], MESSAGES[(k + 3) % len(MESSAGES)]
        check = k % 2 == 1  # half of them also check the cellular service first
        opening = f"I'd like to send a text to {name}." + (" Is my cellular service on?" if check else "")
        status_check = (call("get_cellular_service_status"),) if check else ()
        yield Draft("message_multi_turn", (opening, f"Tell them: {content}"),
                    ((*status_check, call("search_contacts", name=name)),
                     (call("send_message_with_phone_number", phone_number=phone, content=content),)),
                    (_sent(phone, content),), user_facts=((content, 1),))
    for name in ("Chiara Rossi", "Greta Nilsson", "Ines Duarte"):
        phone = _CONTACT[name][0]
        yield Draft("remove_contact_multi_turn",
                    ("Please delete a contact for me.", f"It's the one with the number {phone}."),
                    ((), (call("search_contacts", phone_number=phone),
                          call("remove_contact", person_id=person_id(name)))),
                    (_contact_gone(person_id(name)),), user_facts=((phone, 1),))
    for name, phone in NEW_PEOPLE[3:]:
        yield Draft("add_contact_multi_turn",
                    (f"Add {name} to my contacts. Check first that I don't already have them.",
                     f"Their number is {phone}."),
                    ((call("search_contacts", name=name),), (call("add_contact", name=name, phone_number=phone),)),
                    (StateTarget("contacts", (("name", text(name)), ("phone_number", exact(phone)))),),
                    user_facts=((phone, 1),))
    for task, hours in (("book the train tickets", 3), ("water the tomatoes", 6), ("send the invoice", 4)):
        due = NOW + hours * 3600
        yield Draft("reminder_multi_turn",
                    ("What are the time and date right now?", f"Remind me to {task} in {hours} hours."),
                    ((call("get_current_timestamp"), call("timestamp_to_datetime_info", timestamp=NOW)),
                     (call("shift_timestamp", timestamp=NOW, hours=hours),
                      call("add_reminder", content=task, reminder_timestamp=due))),
                    (StateTarget("reminders", (("content", text(task)), ("reminder_timestamp", close(due, 1.0)))),),
                    ("CANONICALIZATION",), user_facts=((task, 1), (hours, 1)))
    for first, second in (("wifi", "location_service"), ("cellular", "wifi")):
        yield Draft("settings_multi_turn",
                    (f"Turn off {_SETTING_WORDS[first]}.", f"Also turn off {_SETTING_WORDS[second]}."),
                    ((call(_SETTING_TOOL[first], on=False),), (call(_SETTING_TOOL[second], on=False),)),
                    (_setting(first, False), _setting(second, False)))


def _insufficient_information_families() -> Iterator[Draft]:
    sorry = "I can't complete this with the tools and information I have."
    for name in ("Chiara Rossi", "Greta Nilsson", "Ines Duarte"):
        yield single("remove_contact_no_search", f"Remove {_CONTACT[name][0]} from my contacts.", [], [],
                     INSUFFICIENT, minefields=(TraceTarget("remove_contact"),), extra_tools=("remove_contact",),
                     denied=("search_contacts", "search_messages"), reply=sorry)
    for k, name in enumerate(UNKNOWN_PEOPLE):
        yield single("message_unknown_person", f"Send {name} a message saying: {MESSAGES[k]}",
                     [call("search_contacts", name=name)], [], INSUFFICIENT,
                     minefields=(TraceTarget("send_message_with_phone_number"),),
                     extra_tools=("send_message_with_phone_number",), reply=sorry)
    for k, name in enumerate(("Bruno Okafor", "Farid Haddad")):
        yield single("message_cellular_locked", f"Text {name}: {MESSAGES[-2 - k]}",
                     [call("search_contacts", name=name), call("get_cellular_service_status")], [], INSUFFICIENT,
                     settings="cellular_off", minefields=(TraceTarget("send_message_with_phone_number"),),
                     extra_tools=("send_message_with_phone_number",), denied=("set_cellular_service_status",),
                     reply=sorry)
    for task in ("yoga class", "car insurance"):
        yield single("reminder_missing", f"Move my reminder about {task} to tomorrow at 9.",
                     [call("search_reminder", content=task)], [], INSUFFICIENT,
                     minefields=(TraceTarget("modify_reminder"), TraceTarget("add_reminder")),
                     extra_tools=("modify_reminder", "get_current_timestamp", "shift_timestamp"), reply=sorry)
    yield single("holiday_wifi_locked", "How many days until Christmas?", [call("get_wifi_status")], [], INSUFFICIENT,
                 settings="wifi_off", minefields=(TraceTarget("search_holiday"),),
                 extra_tools=("get_current_timestamp", "search_holiday", "timestamp_diff"),
                 denied=("set_wifi_status",), reply=sorry)


FAMILY_SOURCES: tuple[Callable[[], Iterator[Draft]], ...] = (
    _contact_families, _message_families, _reminder_families, _settings_and_utility_families,
    _multi_turn_families, _insufficient_information_families)


# --- from drafts to scenarios -----------------------------------------------------------------


def _categories(draft: Draft, distraction: str) -> tuple[str, ...]:
    n_calls = sum(len(turn) for turn in draft.reference)
    shape: tuple[str, ...] = ()
    if INSUFFICIENT not in draft.categories:
        shape = ("SINGLE_TOOL_CALL" if n_calls == 1 else "MULTIPLE_TOOL_CALL",
                 "SINGLE_USER_TURN" if len(draft.user_turns) == 1 else "MULTIPLE_USER_TURN")
    return tuple(dict.fromkeys((*draft.categories, *shape, distraction)))


def _tool_lists(draft: Draft, scenario_id: str, extra: str) -> tuple[str, ...]:
    """The allow list: the tools the scenario needs, then distraction tools (same module first)."""
    needed = list(dict.fromkeys([c.name for turn in draft.reference for c in turn if c.name is not None]
                                + list(draft.extra_tools)))
    rng = random.Random(f"distraction:{scenario_id}")
    modules = {TOOLS[n].module for n in needed}
    pool = [n for n in sorted(TOOLS) if n not in needed and n not in draft.denied]
    near, far = [n for n in pool if TOOLS[n].module in modules], [n for n in pool if TOOLS[n].module not in modules]
    rng.shuffle(near)
    rng.shuffle(far)
    count = {"": 0, "3_distraction_tools": 3, "10_distraction_tools": 10, "all_tools": len(pool)}[extra]
    allowed = needed + (near + far)[:count]
    rng.shuffle(allowed)
    return tuple(allowed)


def _scenario(draft: Draft, base_id: str, extra: str, label: str) -> Scenario:
    scenario_id = f"{base_id}_{extra}" if extra else base_id
    return Scenario(scenario_id, draft.family, _categories(draft, label), draft.settings, draft.user_turns,
                    draft.reference, draft.milestones, draft.minefields, _tool_lists(draft, scenario_id, extra),
                    draft.denied, draft.user_facts, draft.reply)


@lru_cache(maxsize=1)
def _all() -> tuple[Scenario, ...]:
    scenarios: list[Scenario] = []
    counters: dict[str, int] = {}
    base_index = 0
    for source in FAMILY_SOURCES:
        for draft in source():
            counters[draft.family] = counters.get(draft.family, 0) + 1
            base_id = f"{draft.family}_{counters[draft.family]:02d}"
            extra, label = DISTRACTIONS[1 + base_index % 3]
            scenarios.append(_scenario(draft, base_id, "", DISTRACTIONS[0][1]))
            scenarios.append(_scenario(draft, base_id, extra, label))
            base_index += 1
    return tuple(scenarios)


def all_scenarios() -> dict[str, Scenario]:
    """Every scenario by id, in generation order."""
    return {s.id: s for s in _all()}


def scenario_set_sha256(scenarios: Iterable[Scenario] | None = None) -> str:
    """A digest of a scenario set, by default the whole generated one (provenance for task lists)."""
    return _generated_sha256() if scenarios is None else _sha256(scenarios)


@lru_cache(maxsize=1)
def _generated_sha256() -> str:
    return _sha256(_all())


def _sha256(scenarios: Iterable[Scenario]) -> str:
    def default(obj: Any) -> Any:
        if isinstance(obj, ToolCall):
            return {"name": obj.name, "arguments": obj.kwargs}
        return repr(obj)

    fields = [{f: getattr(s, f) for f in s.__dataclass_fields__} for s in scenarios]
    return hashlib.sha256(json.dumps(fields, default=default, sort_keys=True).encode()).hexdigest()


def sample_task_ids(n: int = 200, seed: int = 0) -> list[str]:
    """A seeded sample of ``n`` scenario ids, stratified by family (largest-remainder shares)."""
    scenarios = _all()
    if not 0 < n <= len(scenarios):
        raise ValueError(f"asked for {n} ToolSandbox scenarios, {len(scenarios)} exist")
    families: dict[str, list[str]] = {}
    for s in scenarios:
        families.setdefault(s.family, []).append(s.id)
    exact_shares = {f: n * len(ids) / len(scenarios) for f, ids in families.items()}
    shares = {f: int(v) for f, v in exact_shares.items()}
    for f in sorted(families, key=lambda f: (-(exact_shares[f] - shares[f]), f))[: n - sum(shares.values())]:
        shares[f] += 1
    rng = random.Random(f"toolsandbox-sample:{seed}")
    chosen = {i for f in sorted(families) for i in rng.sample(families[f], shares[f])}
    return [s.id for s in scenarios if s.id in chosen]
