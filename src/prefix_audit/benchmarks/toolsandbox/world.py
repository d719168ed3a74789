"""The sandbox's world state: four small databases, a frozen clock and seeded identifiers.

Databases follow ToolSandbox's published layout: ``contacts`` (person_id, name, phone_number,
relationship, is_self), ``messages`` (message_id, sender/recipient person ids and phone numbers,
content, creation_timestamp), ``reminders`` (reminder_id, content, creation and reminder
timestamps, optional latitude/longitude) and one ``settings`` row (device_id, cellular, wifi,
location_service, low_battery_mode, latitude, longitude).

The data itself is our own: one base world (a phone owner, eight contacts, a few messages and
reminders) and the settings variants ToolSandbox builds scenarios on (a radio off, or low-battery
mode with every radio off). The clock is frozen at :data:`NOW` and every identifier is a UUID5 of a
fixed namespace, so two runs of the same actions produce the same bytes.

A committed :class:`World` is never changed in place: a tool runs on a copy that replaces the live
world only when the call succeeds (so a rejected call leaves the state exactly as it was, and the
sequence of committed worlds doubles as the state history the milestones are matched against).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# 2025-03-14 09:00:00 UTC: every "now" in the sandbox.
NOW = datetime(2025, 3, 14, 9, 0, tzinfo=UTC).timestamp()
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "prefix-audit/toolsandbox")

TABLES = ("contacts", "messages", "reminders", "settings")
ID_COLUMNS = {"contacts": "person_id", "messages": "message_id", "reminders": "reminder_id"}


def seeded_id(*parts: object) -> str:
    """A deterministic UUID string for the given parts."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(map(str, parts))))


def person_id(name: str) -> str:
    return seeded_id("person", name)


OWNER = ("Ada Lindqvist", "+14155550100")
# (name, phone number, relationship)
CONTACTS = (
    ("Bruno Okafor", "+14155550111", "friend"),
    ("Chiara Rossi", "+14155550122", "friend"),
    ("Dmitri Volkov", "+14155550133", "coworker"),
    ("Esme Hartley", "+14155550144", "sister"),
    ("Farid Haddad", "+14155550155", "boss"),
    ("Greta Nilsson", "+14155550166", "dentist"),
    ("Hiro Tanaka", "+14155550177", "neighbor"),
    ("Ines Duarte", "+14155550188", "friend"),
)
STRANGER_PHONE = "+14155550999"
HOME = (37.7793, -122.4193)

_MINUTE, _HOUR, _DAY = 60.0, 3600.0, 86400.0
# (sender name or phone, recipient name or phone, content, seconds before NOW)
_MESSAGES = (
    (STRANGER_PHONE, OWNER[0], "Your parcel is waiting at the front desk", 3 * _DAY),
    (OWNER[0], "Bruno Okafor", "Are we still on for climbing on Saturday?", 2 * _DAY),
    ("Bruno Okafor", OWNER[0], "Yes, see you at ten", 2 * _DAY - 5 * _MINUTE),
    ("Farid Haddad", OWNER[0], "Please send me the quarterly numbers", _DAY),
    (OWNER[0], "Farid Haddad", "Sending them this afternoon", 23 * _HOUR),
    ("Esme Hartley", OWNER[0], "Mum's birthday dinner is at seven", 5 * _HOUR),
    (OWNER[0], "Esme Hartley", "I'll bring the cake", 4 * _HOUR + 50 * _MINUTE),
    ("Chiara Rossi", OWNER[0], "Lovely photos from the trip!", 30 * _MINUTE),
)
# (content, seconds between creation and NOW, reminder time relative to NOW, location)
_REMINDERS = (
    ("Renew passport", 10 * _DAY, 7 * _DAY, None),
    ("Pick up dry cleaning", 2 * _DAY, _DAY, None),
    ("Call the plumber", 3 * _DAY, -_DAY, None),
    ("Book dentist appointment", _DAY, 3 * _DAY, (37.7840, -122.4075)),
    ("Water the plants", _HOUR, 2 * _HOUR, None),
)

# Settings variants ToolSandbox scenarios start from (low-battery mode implies every radio off).
SETTINGS_VARIANTS: dict[str, dict[str, bool]] = {
    "base": {},
    "cellular_off": {"cellular": False},
    "wifi_off": {"wifi": False},
    "location_off": {"location_service": False},
    "low_battery": {"low_battery_mode": True, "cellular": False, "wifi": False, "location_service": False},
}


@dataclass
class World:
    """One state of the sandbox; ``id_seed`` and ``created`` make new identifiers reproducible."""

    contacts: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    reminders: list[dict[str, Any]]
    settings: dict[str, Any]
    id_seed: str
    created: int = 0

    def table(self, name: str) -> list[dict[str, Any]]:
        return [self.settings] if name == "settings" else getattr(self, name)

    def new_id(self, kind: str) -> str:
        self.created += 1
        return seeded_id(self.id_seed, kind, self.created)

    def scratch(self) -> World:
        """A private copy to run a tool on."""
        return World(copy.deepcopy(self.contacts), copy.deepcopy(self.messages), copy.deepcopy(self.reminders),
                     dict(self.settings), self.id_seed, self.created)

    def ids(self) -> set[str]:
        """Every object identifier present in this state."""
        return {row[col] for table, col in ID_COLUMNS.items() for row in self.table(table)}


def _contact(name: str, phone: str, relationship: str, is_self: bool = False) -> dict[str, Any]:
    return {"person_id": person_id(name), "name": name, "phone_number": phone,
            "relationship": relationship, "is_self": is_self}


def _party(who: str) -> tuple[str | None, str]:
    """(person_id, phone_number) of a message party given by name or by phone number."""
    if who == OWNER[0]:
        return person_id(who), OWNER[1]
    for name, phone, _ in CONTACTS:
        if who == name:
            return person_id(name), phone
    return None, who


def base_rows() -> tuple[list[dict], list[dict], list[dict]]:
    contacts = [_contact(*OWNER, "self", True)] + [_contact(*c) for c in CONTACTS]
    messages = []
    for k, (sender, recipient, content, age) in enumerate(_MESSAGES):
        (sid, sphone), (rid, rphone) = _party(sender), _party(recipient)
        messages.append({"message_id": seeded_id("message", k), "sender_person_id": sid, "sender_phone_number": sphone,
                         "recipient_person_id": rid, "recipient_phone_number": rphone, "content": content,
                         "creation_timestamp": NOW - age})
    reminders = []
    for k, (content, age, due, place) in enumerate(_REMINDERS):
        lat, lon = place if place else (None, None)
        reminders.append({"reminder_id": seeded_id("reminder", k), "content": content,
                          "creation_timestamp": NOW - age, "reminder_timestamp": NOW + due,
                          "latitude": lat, "longitude": lon})
    return contacts, messages, reminders


def starting_world(variant: str, id_seed: str) -> World:
    """A fresh world in settings variant ``variant``; new identifiers are seeded by ``id_seed``."""
    if variant not in SETTINGS_VARIANTS:
        raise KeyError(f"unknown settings variant {variant!r}")
    contacts, messages, reminders = base_rows()
    settings = {"device_id": seeded_id("device"), "cellular": True, "wifi": True, "location_service": True,
                "low_battery_mode": False, "latitude": HOME[0], "longitude": HOME[1]}
    settings.update(SETTINGS_VARIANTS[variant])
    return World(contacts, messages, reminders, settings, id_seed)


def device_phone_numbers(world: World) -> frozenset[str]:
    """The phone numbers stored on the device (contact book and message headers)."""
    numbers = {row["phone_number"] for row in world.contacts}
    for row in world.messages:
        numbers |= {row["sender_phone_number"], row["recipient_phone_number"]}
    return frozenset(numbers)
