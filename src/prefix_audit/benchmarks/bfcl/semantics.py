"""Facts about the bfcl-eval multi-turn environment classes that the replay checker needs, and
the translation of BFCL's function docs into JSON Schema.

These are statements about the pinned package (bfcl-eval 2026.3.23), read off its classes and
confirmed by replaying all 800 ground-truth entries (tests/test_bfcl_ground_truth.py): which
module-level values instances mutate, which explicit state preconditions methods enforce, which
parameters must name an existing object, and which methods delete objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}

CLASS_MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}

STATELESS_CLASSES = frozenset({"MathAPI"})

# Module-level values that instances reach by reference. The scenario loader puts the long-context
# credit cards into an instance without copying them (so booking in one entry changed the balance
# the next entry saw), and the long-context weather lookup writes into the module's own dict. We
# deep-copy every instance right after loading it, which cuts the first link, and restore these
# values in place when they differ from a snapshot taken at import.
MUTABLE_MODULE_STATE: Mapping[str, tuple[str, ...]] = {
    "long_context": ("CREDIT_CARD_EXTENSION", "BOOKING_RECORD_EXTENSION", "LONG_WEATHER_EXTENSION"),
}

# Defaults BFCL's own runs share between entries: ``TwitterAPI.post_tweet(content, tags=[], mentions=[])``
# stores its default list in the new tweet by reference, ``mention`` extends a tweet's list in place,
# and a Python default is one object for the whole process. So a tweet posted without mentions shows
# the names of every ``mention`` made on such a tweet earlier in the same process — in the results
# ``bfcl generate`` records and in the states ``bfcl evaluate`` compares (its model and ground-truth
# instances share the list too). Replay gives each call its own copy (loader's fresh defaults); the
# field is what a recorded run does not fix. Method → (parameter, its position after ``self``).
SHARED_DEFAULTS: Mapping[str, tuple[str, int]] = {"post_tweet": ("mentions", 2)}


def leaves_shared_default(name: str | None, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """The parameter of :data:`SHARED_DEFAULTS` that a call of ``name`` leaves to its shared default."""
    param, position = SHARED_DEFAULTS.get(name or "", (None, 0))
    if param is None or param in kwargs or len(args) > position:
        return None
    return param


# BFCL's executor refuses these names outright; we report the same result text.
BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})

# Constants any call may use without having seen them (file-system navigation).
ALWAYS_AVAILABLE = frozenset({".", "..", "/", "~"})

# Parameters whose value must name an object that already exists (a file, a ticket, a booking…):
# a value that never appeared in the prompt, the initial state or an earlier output is a
# dependency failure.
REFERENCE_PARAMS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "GorillaFileSystem": {
        "cat": ("file_name",), "cd": ("folder",), "cp": ("source",), "diff": ("file_name1", "file_name2"),
        "echo": ("file_name",), "find": ("path",), "grep": ("file_name",), "mv": ("source",),
        "rm": ("file_name",), "rmdir": ("dir_name",), "sort": ("file_name",), "tail": ("file_name",),
        "wc": ("file_name",),
    },
    "MessageAPI": {
        "get_user_id": ("user",), "message_login": ("user_id",), "send_message": ("receiver_id",),
        "delete_message": ("receiver_id",),
    },
    "TwitterAPI": {
        "comment": ("tweet_id",), "get_tweet": ("tweet_id",), "get_tweet_comments": ("tweet_id",),
        "mention": ("tweet_id",), "retweet": ("tweet_id",), "unfollow_user": ("username_to_unfollow",),
    },
    "TicketAPI": {
        "close_ticket": ("ticket_id",), "edit_ticket": ("ticket_id",), "get_ticket": ("ticket_id",),
        "resolve_ticket": ("ticket_id",),
    },
    "TradingBot": {
        "cancel_order": ("order_id",), "get_order_details": ("order_id",), "get_stock_info": ("symbol",),
        "place_order": ("symbol",), "remove_stock_from_watchlist": ("symbol",),
    },
    "TravelAPI": {
        "book_flight": ("access_token", "card_id"), "cancel_booking": ("access_token", "booking_id"),
        "contact_customer_support": ("booking_id",), "get_booking_history": ("access_token",),
        "get_credit_card_balance": ("access_token", "card_id"),
        "purchase_insurance": ("access_token", "booking_id", "card_id"),
        "register_credit_card": ("access_token",), "retrieve_invoice": ("access_token", "booking_id"),
        "set_budget_limit": ("access_token",),
    },
}

# Methods that change none of the state BFCL's checker compares (an instance's public attributes): every
# call of them in the 800 ground-truth entries left those attributes as they were
# (tests/test_attribution.py replays them). Attribution (docs/attribution.md) reads a gold's rejected call
# of one as a scripted look-up; a method no ground truth calls is not listed (it stays a write).
READ_ONLY_METHODS: Mapping[str, frozenset[str]] = {
    "GorillaFileSystem": frozenset({"cat", "cd", "diff", "du", "find", "grep", "ls", "sort", "tail", "wc"}),
    "MathAPI": frozenset({"logarithm", "mean", "standard_deviation"}),
    "MessageAPI": frozenset({"get_user_id", "view_messages_sent"}),
    "TicketAPI": frozenset({"get_ticket"}),
    "TradingBot": frozenset({"get_account_info", "get_available_stocks", "get_current_time", "get_order_details",
                             "get_stock_info", "get_watchlist"}),
    "TravelAPI": frozenset({"compute_exchange_rate", "contact_customer_support", "get_credit_card_balance",
                            "get_flight_cost", "get_nearest_airport_by_city", "list_all_airports", "retrieve_invoice",
                            "verify_traveler_information"}),
    "VehicleControlAPI": frozenset({"check_tire_pressure", "displayCarStatus", "estimate_distance",
                                    "estimate_drive_feasibility_by_mileage", "find_nearest_tire_shop",
                                    "gallon_to_liter", "get_outside_temperature_from_google",
                                    "get_zipcode_based_on_city", "liter_to_gallon"}),
}
# Methods that can remove an object, so that a later reference to it is stale.
DELETING_METHODS = frozenset({"rm", "rmdir", "mv", "delete_message", "cancel_booking",
                              "remove_stock_from_watchlist", "unfollow_user"})


@dataclass(frozen=True)
class Precondition:
    """An explicit state requirement a class enforces before running ``methods``."""

    description: str
    methods: frozenset[str]
    setter: str | None  # the method that establishes it (None: no tool can)
    check: Callable[[Any, Mapping[str, Any]], bool]

    def holds(self, instance: Any, arguments: Mapping[str, Any]) -> bool:
        return self.check(instance, arguments)


def _starting(arguments: Mapping[str, Any]) -> bool:
    return arguments.get("ignitionMode") == "START"


PRECONDITIONS: Mapping[str, tuple[Precondition, ...]] = {
    "TwitterAPI": (Precondition(
        "an authenticated Twitter session (authenticate_twitter)",
        frozenset({"post_tweet", "retweet", "comment", "follow_user", "list_all_following", "unfollow_user"}),
        "authenticate_twitter", lambda i, a: bool(i.authenticated)),),
    "MessageAPI": (Precondition(
        "a logged-in messaging user (message_login)",
        frozenset({"send_message", "delete_message", "view_messages_sent", "search_messages", "get_message_stats"}),
        "message_login", lambda i, a: bool(i.current_user)),),
    "TicketAPI": (Precondition(
        "a logged-in ticket user (ticket_login)", frozenset({"create_ticket", "get_user_tickets"}),
        "ticket_login", lambda i, a: bool(i.current_user)),),
    "TradingBot": (Precondition(
        "a logged-in trading account (trading_login)",
        frozenset({"place_order", "withdraw_funds", "get_account_info", "trading_logout", "fund_account",
                   "remove_stock_from_watchlist", "get_watchlist", "get_order_history", "get_transaction_history"}),
        "trading_login", lambda i, a: bool(i.authenticated)),
        Precondition("an open market", frozenset({"withdraw_funds"}), None,
                     lambda i, a: i.market_status == "Open"),
    ),
    "TravelAPI": (
        Precondition("a travel access token (authenticate_travel)", frozenset({"register_credit_card"}),
                     "authenticate_travel", lambda i, a: i.token_expires_in not in (None, 0)),
        Precondition("an unexpired travel access token (authenticate_travel)",
                     frozenset({"get_credit_card_balance", "book_flight", "retrieve_invoice", "get_booking_history",
                                "cancel_booking", "set_budget_limit", "purchase_insurance"}),
                     "authenticate_travel", lambda i, a: i.token_expires_in != 0),
    ),
    "VehicleControlAPI": (
        Precondition("all doors locked before starting the engine (lockDoors)", frozenset({"startEngine"}),
                     "lockDoors", lambda i, a: not _starting(a) or i.remainingUnlockedDoors == 0),
        Precondition("the brake pedal fully pressed before starting the engine (pressBrakePedal)",
                     frozenset({"startEngine"}), "pressBrakePedal",
                     lambda i, a: not _starting(a) or (i.brakePedalStatus == "pressed"
                                                       and i._brakePedalForce == 1000.0)),
        Precondition("fuel in the tank before starting the engine (fillFuelTank)", frozenset({"startEngine"}),
                     "fillFuelTank", lambda i, a: not _starting(a) or i.fuelLevel >= 0),
        Precondition("a running engine (startEngine)", frozenset({"setCruiseControl"}), "startEngine",
                     lambda i, a: i.engine_state != "stopped"),
    ),
}


# BFCL's doc type names → JSON Schema types.
_TYPE_MAP = {"dict": "object", "float": "number", "integer": "integer", "string": "string",
             "boolean": "boolean", "array": "array", "tuple": "array", "any": None}


# BFCL declares some enums in the description text: "[Enum]: [\"on\", \"off\"]" or "[Enum]: USD, RMB".
_ENUM_IN_DESCRIPTION = re.compile(r"\[Enum\]:\s*(\[[^\]]*\]|[^.\n]+)")


def _declared_enum(description: str) -> list[str] | None:
    match = _ENUM_IN_DESCRIPTION.search(description)
    if match is None:
        return None
    text = match.group(1).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [v.strip() for v in text.split(",") if v.strip()]


def json_schema_of(doc_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Translate one BFCL parameter schema (their type names) into JSON Schema."""
    out: dict[str, Any] = {}
    bfcl_type = doc_schema.get("type")
    if bfcl_type is not None:
        if bfcl_type not in _TYPE_MAP:
            raise ValueError(f"unknown BFCL type {bfcl_type!r}")
        if _TYPE_MAP[bfcl_type] is not None:
            out["type"] = _TYPE_MAP[bfcl_type]
    enum = list(doc_schema["enum"]) if "enum" in doc_schema else _declared_enum(doc_schema.get("description", ""))
    if enum is not None:
        if bfcl_type == "array":  # an enum on an array constrains its items
            out["items"] = {"enum": enum}
        else:
            out["enum"] = enum
    if "items" in doc_schema:
        out["items"] = {**json_schema_of(doc_schema["items"]), **out.get("items", {})}
    if "properties" in doc_schema:
        out["properties"] = {k: json_schema_of(v) for k, v in doc_schema["properties"].items()}
    if bfcl_type == "dict" and "required" in doc_schema:
        out["required"] = list(doc_schema["required"])
    return out
