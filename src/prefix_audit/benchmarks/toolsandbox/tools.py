"""The sandbox's tools: ToolSandbox's published names, parameters, validators, preconditions and errors.

Each :class:`Tool` couples the declared interface (a :class:`ToolSpec`: JSON Schema with the
declared types, registered validators, reference parameters) with a handler on a :class:`World`
and its explicit state preconditions. :func:`execute` is the benchmark's executor: it binds and
validates the arguments against the same spec the replay checker reads, checks the preconditions,
and runs a state-changing handler on a scratch copy of the world that replaces it only on success,
so a rejected call never changes the state.

Errors carry the exception names ToolSandbox raises: ``TypeError`` and ``NumberParseException``
(interface), ``ConnectionError``/``PermissionError`` and "already enabled" ``ValueError`` (settings
preconditions), ``NoDataError``/``DuplicateError`` (missing or duplicate rows), and the
``ValueError``/``OverflowError`` a handler's date or float arithmetic raises. ToolSandbox's
"at least one search criterion / update field" rule is declared in the schema (``minProperties``).

The RapidAPI-backed tools of ToolSandbox (currency, stocks, weather, location search) need the
network and are not part of this sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prefix_audit.plugin import Outcome, ToolCall, ToolSpec, bind_arguments
from prefix_audit.replay.checker import Failure

from . import validation
from .text import fuzzy_match
from .utilities import UtilityError, convert_units, haversine_km, holiday_timestamp, utc
from .world import NOW, World


class ToolError(Exception):
    """A tool refused the call; ``kind`` is the exception name ToolSandbox reports."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}"


Handler = Callable[[World, dict[str, Any]], Any]
Preconditions = Callable[[World, Mapping[str, Any]], list[str]]


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Handler
    module: str  # contact, messaging, reminder, setting, utilities
    mutates: bool = False
    preconditions: Preconditions = lambda world, args: []


@dataclass(frozen=True)
class Executed:
    """One executed call: the benchmark's verdict, its bound arguments and the world after it."""

    outcome: Outcome
    arguments: dict[str, Any]
    world: World


# --- interface helpers ----------------------------------------------------------------------

STRING, BOOLEAN, NUMBER, INTEGER = ({"type": t} for t in ("string", "boolean", "number", "integer"))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


@dataclass(frozen=True)
class Param:
    name: str
    schema: dict[str, Any]
    description: str
    required: bool = False


def _spec(name: str, description: str, params: list[Param], *, min_properties: int | None = None,
          references: tuple[str, ...] = (), validators: Mapping[str, Any] | None = None) -> ToolSpec:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: {**p.schema, "description": p.description} for p in params},
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }
    if min_properties is not None:
        schema["minProperties"] = min_properties
    return ToolSpec(name, schema, description, tuple(p.name for p in params), frozenset(references),
                    dict(validators or {}))


def _phone_validators(*names: str) -> dict[str, Any]:
    return {n: validation.phone_number for n in names}


def _timestamp_validators(*names: str) -> dict[str, Any]:
    return {n: validation.timestamp(n) for n in names}


def _location_validators(*pairs: tuple[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lat, lon in pairs:
        out[lat], out[lon] = validation.latitude(lat), validation.longitude(lon)
    return out


# --- database helpers ------------------------------------------------------------------------


def _filter(rows: list[dict[str, Any]], args: Mapping[str, Any], fuzzy: Mapping[str, float],
            bounds: Mapping[str, tuple[str, str]] = {}) -> list[dict[str, Any]]:
    """Rows matching every given criterion: fuzzy text for ``fuzzy`` columns (threshold), an
    inclusive range for ``bounds`` arguments (column, 'lower'|'upper'), exact equality otherwise."""
    out = []
    for row in rows:
        ok = True
        for key, value in args.items():
            if key in bounds:
                column, side = bounds[key]
                ok = row[column] is not None and (row[column] >= value if side == "lower" else row[column] <= value)
            elif key in fuzzy:
                ok = fuzzy_match(value, row[key], fuzzy[key])
            else:
                ok = row[key] == value
            if not ok:
                break
        if ok:
            out.append(dict(row))
    return out


def _take(rows: list[dict[str, Any]], column: str, value: Any) -> dict[str, Any]:
    """Remove and return the one row whose ``column`` equals ``value``."""
    matches = [i for i, row in enumerate(rows) if row[column] == value]
    if not matches:
        raise ToolError("NoDataError", f"No db entry matching {column}={value!r} found")
    if len(matches) > 1:
        raise ToolError("DuplicateError", f"More than 1 entry with {column}={value!r} found")
    return rows.pop(matches[0])


def _self_rows(world: World) -> list[dict[str, Any]]:
    return [row for row in world.contacts if row["is_self"]]


# --- contacts ----------------------------------------------------------------------------------


def _search_contacts(world: World, args: dict[str, Any]) -> list[dict[str, Any]]:
    return _filter(world.contacts, args, {"name": 90, "relationship": 90})


def _add_contact(world: World, args: dict[str, Any]) -> str:
    if args.get("is_self", False) and _self_rows(world):
        raise ToolError("DuplicateError", "Self entry already exists. Cannot add another one.")
    pid = world.new_id("person")
    world.contacts.append({"person_id": pid, "name": args["name"], "phone_number": args["phone_number"],
                           "relationship": args.get("relationship"), "is_self": args.get("is_self", False)})
    return pid


def _modify_contact(world: World, args: dict[str, Any]) -> None:
    pid = args["person_id"]
    if args.get("is_self") and any(row["person_id"] != pid for row in _self_rows(world)):
        raise ToolError("DuplicateError", "Self entry already exists. Cannot add another one.")
    row = _take(world.contacts, "person_id", pid)
    row.update({k: v for k, v in args.items() if k != "person_id"})
    world.contacts.append(row)  # ToolSandbox re-adds the updated row at the end


def _remove_contact(world: World, args: dict[str, Any]) -> None:
    _take(world.contacts, "person_id", args["person_id"])


# --- messaging ---------------------------------------------------------------------------------


def _cellular_on(world: World, args: Mapping[str, Any]) -> list[str]:
    return [] if world.settings["cellular"] else ["ConnectionError: Cellular service is not enabled"]


def _send_message(world: World, args: dict[str, Any]) -> str:
    owner = _self_rows(world)
    if len(owner) != 1:
        raise ToolError("DuplicateError", f"1 and only 1 self entry should exist in contacts database, "
                                          f"instead found {len(owner)}")
    recipient = next((row["person_id"] for row in world.contacts if row["phone_number"] == args["phone_number"]), None)
    mid = world.new_id("message")
    world.messages.append({"message_id": mid, "sender_person_id": owner[0]["person_id"],
                           "sender_phone_number": owner[0]["phone_number"], "recipient_person_id": recipient,
                           "recipient_phone_number": args["phone_number"], "content": args["content"],
                           "creation_timestamp": NOW})
    return mid


_MESSAGE_BOUNDS = {"creation_timestamp_lowerbound": ("creation_timestamp", "lower"),
                   "creation_timestamp_upperbound": ("creation_timestamp", "upper")}


def _search_messages(world: World, args: dict[str, Any]) -> list[dict[str, Any]]:
    return _filter(world.messages, args, {"content": 50}, _MESSAGE_BOUNDS)


# --- reminders ---------------------------------------------------------------------------------


def _add_reminder(world: World, args: dict[str, Any]) -> str:
    rid = world.new_id("reminder")
    world.reminders.append({"reminder_id": rid, "content": args["content"], "creation_timestamp": NOW,
                            "reminder_timestamp": args["reminder_timestamp"],
                            "latitude": args.get("latitude"), "longitude": args.get("longitude")})
    return rid


def _modify_reminder(world: World, args: dict[str, Any]) -> None:
    row = _take(world.reminders, "reminder_id", args["reminder_id"])
    row.update({k: v for k, v in args.items() if k != "reminder_id"}, creation_timestamp=NOW)
    world.reminders.append(row)


_REMINDER_BOUNDS = {f"{column}_{side}bound": (column, side) for column in ("creation_timestamp", "reminder_timestamp")
                    for side in ("lower", "upper")}


def _search_reminder(world: World, args: dict[str, Any]) -> list[dict[str, Any]]:
    return _filter(world.reminders, args, {"content": 50}, _REMINDER_BOUNDS)


def _remove_reminder(world: World, args: dict[str, Any]) -> None:
    _take(world.reminders, "reminder_id", args["reminder_id"])


# --- settings ----------------------------------------------------------------------------------

RADIOS = {"cellular": "Cellular service", "wifi": "Wifi", "location_service": "Location service"}


def _switch_preconditions(setting: str) -> Preconditions:
    def check(world: World, args: Mapping[str, Any]) -> list[str]:
        on = args["on"]
        if setting in RADIOS and on and world.settings["low_battery_mode"]:
            return [f"PermissionError: {RADIOS[setting]} cannot be turned on in low battery mode"]
        if world.settings[setting] == on:
            return [f"ValueError: {setting} already {'enabled' if on else 'disabled'}"]
        return []

    return check


def _setter(setting: str) -> Handler:
    def run(world: World, args: dict[str, Any]) -> None:
        world.settings[setting] = args["on"]
        if setting == "low_battery_mode" and args["on"]:
            for radio in RADIOS:  # low-battery mode turns every radio off
                world.settings[radio] = False

    return run


def _getter(setting: str) -> Handler:
    return lambda world, args: world.settings[setting]


def _location_on(world: World, args: Mapping[str, Any]) -> list[str]:
    return [] if world.settings["location_service"] else ["PermissionError: Location service is not enabled."]


def _wifi_on(world: World, args: Mapping[str, Any]) -> list[str]:
    return [] if world.settings["wifi"] else ["ConnectionError: Wifi is not enabled"]


# --- utilities -----------------------------------------------------------------------------------


def _datetime_info(world: World, args: dict[str, Any]) -> dict[str, int]:
    t = utc(args["timestamp"])
    return {"year": t.year, "month": t.month, "day": t.day, "hour": t.hour, "minute": t.minute,
            "second": t.second, "isoweekday": t.isoweekday()}


def _datetime_to_timestamp(world: World, args: dict[str, Any]) -> float:
    return datetime(args["year"], args["month"], args["day"], args["hour"], args["minute"], args["second"],
                    tzinfo=UTC).timestamp()


_SHIFTS = {"weeks": 604800, "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


def _shift_timestamp(world: World, args: dict[str, Any]) -> float:
    return float(args["timestamp"] + sum(args.get(k, 0) * s for k, s in _SHIFTS.items()))


def _timestamp_diff(world: World, args: dict[str, Any]) -> dict[str, int]:
    delta = utc(args["timestamp_1"]) - utc(args["timestamp_0"])
    return {"days": delta.days, "seconds": delta.seconds}


def _seconds_to_hms(world: World, args: dict[str, Any]) -> dict[str, int]:
    t = utc(args["seconds"])
    return {"hour": t.hour, "minute": t.minute, "second": t.second}


def _unit_conversion(world: World, args: dict[str, Any]) -> float:
    try:
        return convert_units(args["amount"], args["from_unit"], args["to_unit"])
    except UtilityError as exc:
        raise ToolError(exc.kind, str(exc)) from None


def _distance(world: World, args: dict[str, Any]) -> float:
    return haversine_km(args["latitude_0"], args["longitude_0"], args["latitude_1"], args["longitude_1"])


def _search_holiday(world: World, args: dict[str, Any]) -> float | None:
    year = args.get("year")
    return holiday_timestamp(args["holiday_name"], utc(NOW).year if year is None else year)


# --- the registry ------------------------------------------------------------------------------


def _registry() -> dict[str, Tool]:
    P = Param
    pid = "Unique identifier of the contact person"
    tools = [
        Tool(_spec("search_contacts", "Search the contact book. Name and relationship match fuzzily, other fields "
                   "exactly; at least one criterion is required. Returns a list of matching contacts.",
                   [P("person_id", STRING, pid), P("name", STRING, "Name of the contact person"),
                    P("phone_number", STRING, "Phone number in international format, e.g. +14155550100"),
                    P("relationship", STRING, "Relationship to the user"),
                    P("is_self", BOOLEAN, "Whether the contact is the user")],
                   min_properties=1, references=("person_id",), validators=_phone_validators("phone_number")),
             _search_contacts, "contact"),
        Tool(_spec("add_contact", "Add a contact; returns the new person_id.",
                   [P("name", STRING, "Name of the contact person", True),
                    P("phone_number", STRING, "Phone number in international format", True),
                    P("relationship", _nullable(STRING), "Relationship to the user"),
                    P("is_self", BOOLEAN, "Whether the contact is the user (default false)")],
                   validators=_phone_validators("phone_number")),
             _add_contact, "contact", True),
        Tool(_spec("modify_contact", "Change fields of an existing contact; at least one new value is required.",
                   [P("person_id", STRING, pid, True), P("name", STRING, "New name"),
                    P("phone_number", STRING, "New phone number"), P("relationship", STRING, "New relationship"),
                    P("is_self", BOOLEAN, "Whether the contact is the user")],
                   min_properties=2, references=("person_id",), validators=_phone_validators("phone_number")),
             _modify_contact, "contact", True),
        Tool(_spec("remove_contact", "Remove a contact by its person_id.", [P("person_id", STRING, pid, True)],
                   references=("person_id",)),
             _remove_contact, "contact", True),
        Tool(_spec("send_message_with_phone_number", "Send a text message to a phone number; returns the message_id.",
                   [P("phone_number", STRING, "Recipient phone number in international format", True),
                    P("content", STRING, "Message text", True)],
                   validators=_phone_validators("phone_number")),
             _send_message, "messaging", True, _cellular_on),
        Tool(_spec("search_messages", "Search messages. Content matches fuzzily, timestamps by inclusive bounds, "
                   "other fields exactly; at least one criterion is required.",
                   [P("message_id", STRING, "Unique identifier of the message"),
                    P("sender_person_id", STRING, "person_id of the sender"),
                    P("sender_phone_number", STRING, "Phone number of the sender"),
                    P("recipient_person_id", STRING, "person_id of the recipient"),
                    P("recipient_phone_number", STRING, "Phone number of the recipient"),
                    P("content", STRING, "Message text"),
                    P("creation_timestamp_lowerbound", NUMBER, "Earliest POSIX timestamp of creation"),
                    P("creation_timestamp_upperbound", NUMBER, "Latest POSIX timestamp of creation")],
                   min_properties=1, references=("message_id", "sender_person_id", "recipient_person_id"),
                   validators={**_phone_validators("sender_phone_number", "recipient_phone_number"),
                               **_timestamp_validators("creation_timestamp_lowerbound",
                                                       "creation_timestamp_upperbound")}),
             _search_messages, "messaging"),
        Tool(_spec("add_reminder", "Add a reminder; returns the new reminder_id.",
                   [P("content", STRING, "What to be reminded of", True),
                    P("reminder_timestamp", NUMBER, "When to be reminded, as a POSIX timestamp", True),
                    P("latitude", _nullable(NUMBER), "Latitude of a place tied to the reminder"),
                    P("longitude", _nullable(NUMBER), "Longitude of a place tied to the reminder")],
                   validators={**_timestamp_validators("reminder_timestamp"),
                               **_location_validators(("latitude", "longitude"))}),
             _add_reminder, "reminder", True),
        Tool(_spec("modify_reminder", "Change fields of an existing reminder; at least one new value is required.",
                   [P("reminder_id", STRING, "Unique identifier of the reminder", True),
                    P("content", STRING, "New content"),
                    P("reminder_timestamp", NUMBER, "New reminder time as a POSIX timestamp"),
                    P("latitude", _nullable(NUMBER), "New latitude"),
                    P("longitude", _nullable(NUMBER), "New longitude")],
                   min_properties=2, references=("reminder_id",),
                   validators={**_timestamp_validators("reminder_timestamp"),
                               **_location_validators(("latitude", "longitude"))}),
             _modify_reminder, "reminder", True),
        Tool(_spec("search_reminder", "Search reminders. Content matches fuzzily, timestamps by inclusive bounds, "
                   "other fields exactly; at least one criterion is required.",
                   [P("reminder_id", STRING, "Unique identifier of the reminder"),
                    P("content", STRING, "Reminder text"),
                    *(P(f"{c}_timestamp_{s}bound", NUMBER, f"{'Earliest' if s == 'lower' else 'Latest'} {c} time")
                      for c in ("creation", "reminder") for s in ("lower", "upper")),
                    P("latitude", NUMBER, "Latitude"), P("longitude", NUMBER, "Longitude")],
                   min_properties=1, references=("reminder_id",),
                   validators={**_timestamp_validators(*_REMINDER_BOUNDS),
                               **_location_validators(("latitude", "longitude"))}),
             _search_reminder, "reminder"),
        Tool(_spec("remove_reminder", "Remove a reminder by its reminder_id.",
                   [P("reminder_id", STRING, "Unique identifier of the reminder", True)], references=("reminder_id",)),
             _remove_reminder, "reminder", True),
        Tool(_spec("get_current_location", "The device's current latitude and longitude (needs location service).",
                   []), lambda w, a: {"latitude": w.settings["latitude"], "longitude": w.settings["longitude"]},
             "setting", preconditions=_location_on),
        Tool(_spec("get_current_timestamp", "The current POSIX timestamp.", []), lambda w, a: NOW, "utilities"),
        Tool(_spec("timestamp_to_datetime_info", "Calendar fields (UTC) of a POSIX timestamp, with isoweekday 1-7.",
                   [P("timestamp", NUMBER, "POSIX timestamp", True)], validators=_timestamp_validators("timestamp")),
             _datetime_info, "utilities"),
        Tool(_spec("datetime_info_to_timestamp", "The POSIX timestamp of a UTC date and time.",
                   [P(n, INTEGER, n.capitalize(), True) for n in ("year", "month", "day", "hour", "minute", "second")]),
             _datetime_to_timestamp, "utilities"),
        Tool(_spec("shift_timestamp", "Shift a POSIX timestamp by whole weeks, days, hours, minutes and seconds "
                   "(each may be negative).",
                   [P("timestamp", NUMBER, "POSIX timestamp", True),
                    *(P(n, INTEGER, f"Number of {n} to add") for n in _SHIFTS)],
                   validators=_timestamp_validators("timestamp")),
             _shift_timestamp, "utilities"),
        Tool(_spec("timestamp_diff", "timestamp_1 - timestamp_0 as whole days and remaining seconds.",
                   [P("timestamp_0", NUMBER, "Timestamp to subtract", True),
                    P("timestamp_1", NUMBER, "Timestamp to subtract from", True)],
                   validators=_timestamp_validators("timestamp_0", "timestamp_1")),
             _timestamp_diff, "utilities"),
        Tool(_spec("seconds_to_hours_minutes_seconds", "Split a number of seconds past midnight into hours, minutes "
                   "and seconds.", [P("seconds", NUMBER, "Seconds past 0:00", True)]),
             _seconds_to_hms, "utilities"),
        Tool(_spec("unit_conversion", "Convert an amount between units given by their English names "
                   "(length, mass, volume, temperature, speed, time).",
                   [P("amount", NUMBER, "Amount in from_unit", True),
                    P("from_unit", STRING, "Unit to convert from", True),
                    P("to_unit", STRING, "Unit to convert to", True)]),
             _unit_conversion, "utilities"),
        Tool(_spec("calculate_lat_lon_distance", "Distance in kilometers between two latitude/longitude points.",
                   [P(f"{c}_{i}", NUMBER, f"{c.capitalize()} of point {i}", True)
                    for i in (0, 1) for c in ("latitude", "longitude")],
                   validators=_location_validators(("latitude_0", "longitude_0"), ("latitude_1", "longitude_1"))),
             _distance, "utilities"),
        Tool(_spec("search_holiday", "The POSIX timestamp (midnight UTC) of a US holiday found by name, or null "
                   "(needs wifi).",
                   [P("holiday_name", STRING, "Name of the holiday", True),
                    P("year", _nullable(INTEGER), "Year to search in (default: the current year)")]),
             _search_holiday, "utilities", preconditions=_wifi_on),
    ]
    for setting, label in (("low_battery_mode", "low battery mode"), ("location_service", "location service"),
                           ("cellular", "cellular service"), ("wifi", "wifi")):
        stem = {"cellular": "cellular_service", "wifi": "wifi", "low_battery_mode": "low_battery_mode",
                "location_service": "location_service"}[setting]
        tools.append(Tool(_spec(f"set_{stem}_status", f"Turn {label} on or off.",
                                [P("on", BOOLEAN, f"True to turn {label} on, false to turn it off", True)]),
                          _setter(setting), "setting", True, _switch_preconditions(setting)))
        tools.append(Tool(_spec(f"get_{stem}_status", f"Whether {label} is on.", []), _getter(setting), "setting"))
    return {t.spec.name: t for t in tools}


TOOLS: dict[str, Tool] = _registry()

# Setter → the tools whose precondition it can establish (the mutation generator drops setters).
PRECONDITION_GUARDS: dict[str, frozenset[str]] = {
    "set_cellular_service_status": frozenset({"send_message_with_phone_number"}),
    "set_wifi_status": frozenset({"search_holiday"}),
    "set_location_service_status": frozenset({"get_current_location"}),
    "set_low_battery_mode_status": frozenset({"set_cellular_service_status", "set_wifi_status",
                                              "set_location_service_status"}),
}
# Reference parameter → the tool that deletes the object it names.
DELETERS: dict[str, str] = {"person_id": "remove_contact", "sender_person_id": "remove_contact",
                            "recipient_person_id": "remove_contact", "reminder_id": "remove_reminder"}


def _interface_error(failures: list[Failure]) -> str:
    first = failures[0]
    if first.code == "validator":  # the validator's own message names ToolSandbox's exception
        return first.detail.split(": ", 1)[1]
    return f"TypeError: {first.detail}"


# ToolSandbox reports whatever a tool raises as that call's error. Values the declared interface
# lets through can still be out of range for the handler's date, time and float arithmetic (a year
# past 9999, an overflowing shift, a NaN timestamp: JSON allows NaN and range checks pass it); those
# are rejected calls, not crashes of the replay or of the agent loop.
_RUNTIME_ERRORS = (ArithmeticError, ValueError, OSError)


def execute(world: World, tool: Tool, call: ToolCall) -> Executed:
    """Run one call as the benchmark would; the returned world is the live state after it."""
    arguments, failures = bind_arguments(tool.spec, call)
    if failures:
        return Executed(Outcome(False, error=_interface_error(failures)), arguments, world)
    failing = tool.preconditions(world, arguments)
    if failing:
        return Executed(Outcome(False, error=failing[0]), arguments, world)
    target = world.scratch() if tool.mutates else world
    try:
        result = tool.run(target, dict(arguments))
    except ToolError as exc:
        return Executed(Outcome(False, error=str(exc)), arguments, world)
    except _RUNTIME_ERRORS as exc:
        return Executed(Outcome(False, error=f"{type(exc).__name__}: {exc}"), arguments, world)
    return Executed(Outcome(True, result), arguments, target)
