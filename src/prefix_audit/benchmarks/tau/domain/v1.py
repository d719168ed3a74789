"""Facts about τ-bench v1 (github.com/sierra-research/tau-bench, ``run.py``) that the ``tau_v1_*``
datasets need. Facts only — tool names, interfaces, formats, the reward rule; none of v1's code,
text or data is part of this package.

* Result files: a JSON list of ``{task_id, reward, info, traj, trial}``; ``traj`` holds OpenAI-style
  messages; ``info.task`` the task (``user_id``, ``actions`` = ``[{name, kwargs}]``, ``instruction``,
  ``outputs``) and ``info.reward_info`` the recorded reward; an entry whose run raised has
  ``traj: []`` and ``info.error``.
* Tools: v1's stock tool set per domain (:data:`V1_TOOLS`). Each is one of tau2's tools of the same
  name and behaviour, except ``think`` (no tau2 tool: accepted, returns an empty result, changes
  nothing). tau2 airline's ``get_flight_status`` is no v1 tool. A call of a name outside the stock set
  gets the reply ``Unknown action <name>`` and changes nothing; a tool that raises replies
  ``Error: …``. v1 never validates arguments; its declared interfaces differ from tau2's in three
  places (:data:`V1_SCHEMA_CHANGES`).
* An episode ends (``done``) when the user's reply contains ``###STOP###`` or the agent calls
  ``transfer_to_human_agents``; otherwise after 30 agent steps, unscored (reward 0). The tool-calling
  agent executes the first tool call of a message only.
* Reward (``Env.calculate_reward``), computed when the episode is done: 1 iff the hash of the database
  after the episode equals the hash after replaying the task's gold ``actions`` (except
  ``transfer_to_human_agents``) on a fresh database, and every ``outputs`` string, lower-cased, is a
  substring of the lower-cased, comma-less content of some message the agent sent the user (a message
  without a tool call). Recorded as ``reward_info.info``: ``{r_actions, gt_data_hash}`` for a task
  without outputs, ``{r_outputs, outputs}`` for one with outputs (the DB verdict is then not written).
* The rule before 2024-11-10 (commit 718ffa1, "The reward should be zero if the database state is
  incorrect"): a task with ``outputs`` was scored on the outputs alone (the DB was not compared), one
  without outputs on the DB alone. Its ``reward_info`` has the same two shapes, so a file says which
  rule scored it only where an entry with outputs all found still scored 0 (the current rule).
* The DB hash (``Env.get_data_hash``) is sha256 of ``str`` of the data as nested tuples (dict items
  sorted by key). v1's data files had two versions (:data:`V1_DATA_ERAS`): until commit 404f33e
  (2025-01-16, "Remove all references to province") a user's address in ``users.json`` of both
  domains names its state ``province``, since then ``state`` (orders and the tools always wrote
  ``state``); nothing else in the data changed from the initial commit 6f4b718 to 59a200c. The
  untouched database's hash of each version and domain was computed here by loading v1's three data
  files of a commit of that version (``git show REV:tau_bench/envs/<domain>/data/<table>.json``) as
  v1's ``load_data`` does and hashing them as ``Env.get_data_hash`` does: 6f4b718, 2a6d51f and
  404f33e^ give the first version's hashes, 404f33e and 59a200c the second's.
* Where v1's tools behave otherwise than tau2's port, the replay follows v1 (:mod:`.tools_v1`);
  the data v1's tools read differs from tau2's database in the fields :data:`V1_RECORD_VALUES` sets,
  in tau2's added ``user_id`` of a user record and in amounts written as floats (``100.0`` for v1's
  ``100``).
* The ReAct strategy (``--agent-strategy react``/``act``) writes actions as assistant text: the action
  is the text after the last ``Action:`` (all of it when there is none), stripped, read as JSON; a
  text that is not JSON is a ``respond`` action with that text as its ``content``. A JSON value that is
  not an object with ``name`` and ``arguments`` (an object) makes the run raise. The observation of a
  tool action comes back as a user message ``API output: <observation>``; that of ``respond`` is the
  user's reply as is.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .data import GoldAction, TauDataError, TauTask

RESULTS_FORMAT = "tau-bench-v1"

V1_TOOLS: Mapping[str, frozenset[str]] = {
    "airline": frozenset({
        "book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
        "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate", "think",
        "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
        "update_reservation_passengers"}),
    "retail": frozenset({
        "calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_email",
        "find_user_id_by_name_zip", "get_order_details", "get_product_details", "get_user_details",
        "list_all_product_types", "modify_pending_order_address", "modify_pending_order_items",
        "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items", "think",
        "transfer_to_human_agents"}),
}
SHARED_TOOLS = V1_TOOLS["airline"] & V1_TOOLS["retail"]

THINK = "think"
THINK_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {"thought": {"type": "string"}},
                                   "required": ["thought"]}
THINK_DESCRIPTION = "Think about something; no new information and no change to the database."
# The tools whose call ends a v1 episode (and which the gold replay skips).
TERMINATE_TOOLS = frozenset({"transfer_to_human_agents"})
STOP_TOKEN = "###STOP###"
UNKNOWN_ACTION_PREFIX = "Unknown action"
ERROR_PREFIX = "Error"
MAX_STEPS = 30  # agent steps per episode (the tool-calling agent's max_num_steps)
RESPOND = "respond"  # the ReAct agent's action name for a message to the user (argument ``content``)
RESPOND_FIELD = "content"
REACT_ACTION_MARKER = "Action:"
REACT_OUTPUT_PREFIX = "API output: "
# tool-calling: OpenAI tool calls and tool messages; react: actions as text (both ReAct and Act)
STRATEGIES = ("tool-calling", "react")


@dataclass(frozen=True)
class DataEra:
    """One version of v1's data files: the commits that hold it, the key a user's address names its
    state with, and the hash v1 gives each domain's untouched database (see the module docstring for
    how each was computed)."""

    name: str
    commits: str
    region_key: str
    untouched_sha256: Mapping[str, str]


PROVINCE_ERA = DataEra("province", "6f4b718 (2024-06-06) to 404f33e^ (2025-01-16)", "province", {
    "airline": "4a02dcbc0e3ace4d398988d60a33e73afad4d201deb426303159f086cadad20f",
    "retail": "835f402e86a2f9f1b7d82d8cc497c4f3310c7099db8148fa43709e0eaaf816ed"})
STATE_ERA = DataEra("state", "404f33e (2025-01-16) to 59a200c", "state", {
    "airline": "4587e6b48ad2b2c4f3e1fecb40aabec7bb2286513273b8f8cec3f5865222f290",
    "retail": "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5"})
V1_DATA_ERAS: Mapping[str, DataEra] = {era.name: era for era in (PROVINCE_ERA, STATE_ERA)}
# A log that shows neither version is read as the current one (its replies then hold no address
# that tells them apart).
DEFAULT_ERA = STATE_ERA


def untouched_era(domain: str, sha256: Any) -> DataEra | None:
    """The data version whose untouched ``domain`` database v1 hashes to ``sha256``, if any."""
    return next((era for era in V1_DATA_ERAS.values() if era.untouched_sha256[domain] == sha256), None)

# The date of the reward-rule change (a task with outputs is since also scored on the DB).
REWARD_RULE_CHANGE = "2024-11-10"
# meta["v1_reward_rule"]: the rule a rollout's Y follows — the one its log was scored under where the
# file dates its run (:func:`dated_rule`), else the current one.
LEGACY_RULE, CURRENT_RULE = "before 2024-11-10", "current"
RULE_KEY = "v1_reward_rule"
# run.py names its results file with the run's start as ``%m%d%H%M%S`` (no year) before ``.json``.
_RUN_STAMP = re.compile(r"_(\d{2})(\d{2})\d{6}(?:__[^/]*)?\.json$")
# The month-days of the older data version that fall before the rule change: that version spans
# 2024-06-06 (the first commit) to 2025-01-16, so a run of it stamped 06-06 to 11-09 ran in 2024.
_LEGACY_SPAN = ((6, 6), (11, 10))


def dated_rule(file_name: str, era: DataEra, shows_current: bool) -> tuple[str, str]:
    """The reward rule a v1 results file was scored under, with the evidence: the current one where
    an entry shows it; the one before 2024-11-10 where the run used v1's older data (which dates it
    between 2024-06-06 and 2025-01-16) and run.py's timestamp in the file's name (month and day, no
    year) falls before the change; else the current one."""
    if shows_current:
        return CURRENT_RULE, "an entry with every output found scored 0 (the database check of the current rule)"
    stamp = _RUN_STAMP.search(file_name)
    if era is PROVINCE_ERA and stamp is not None \
            and _LEGACY_SPAN[0] <= (int(stamp.group(1)), int(stamp.group(2))) < _LEGACY_SPAN[1]:
        return LEGACY_RULE, (f"the run is stamped {stamp.group(1)}-{stamp.group(2)} in the file's name and used v1's "
                             f"older data, so it ran in 2024 before {REWARD_RULE_CHANGE}")
    return CURRENT_RULE, "nothing dates the run before the rule changed"

# v1's termination names (meta["termination_reason"] of a v1 rollout). A rollout is scored only
# after the first two; the others score 0, as in v1.
TERMINATION_REASONS = frozenset({"user_stop", "transfer_to_human_agents", "max_steps", "agent_error"})
NORMAL_TERMINATIONS = frozenset({"user_stop", "transfer_to_human_agents"})

# Where v1's declared interface differs from tau2's (path to a property schema → v1's): amounts are
# JSON numbers in v1 (tau2: integers), and v1 declares the two cancellation reasons as an enum.
V1_SCHEMA_CHANGES: Mapping[str, Mapping[tuple[str, ...], Mapping[str, Any]]] = {
    "airline": {
        ("send_certificate", "properties", "amount"): {"type": "number"},
        ("book_reservation", "$defs", "Payment", "properties", "amount"): {"type": "number"},
    },
    "retail": {
        ("cancel_pending_order", "properties", "reason"): {"type": "string",
                                                           "enum": ["no longer needed", "ordered by mistake"]},
    },
}

# The ids v1's airline ``book_reservation`` gives a new reservation: the first not yet in the database,
# and once all are, the last one again — the booking then replaces the reservation held under it (v1
# assumes at most three bookings per task); tau2's port refuses that booking ("Too many reservations").
V1_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")


def new_reservation_id(reservations: Container[str]) -> str:
    """The id v1's ``book_reservation`` gives the next reservation, given the database's ``reservations``."""
    return next((rid for rid in V1_RESERVATION_IDS if rid not in reservations), V1_RESERVATION_IDS[-1])


# Where v1's tools reject a transition that tau2's accept (v1 checks them first): v1 modifies an
# order's address or payment only while its status is exactly "pending"; tau2 also while it is
# "pending (item modified)". Tool → (the argument naming the order, the status v1 requires, v1's reply).
V1_STATUS_RULES: Mapping[str, Mapping[str, tuple[str, str, str]]] = {
    "airline": {},
    "retail": {
        "modify_pending_order_address": ("order_id", "pending", "Error: non-pending order cannot be modified"),
        "modify_pending_order_payment": ("order_id", "pending", "Error: non-pending order cannot be modified"),
    },
}

# v1's data where it differs from tau2's database in a record (measured by bench/tau_v1_db.py on
# every record of both; the same in both versions of v1's data): path into tau2's db.json → v1's value.
# The replay of a v1 log reads v1's values (:mod:`.tools_v1`).
V1_RECORD_VALUES: Mapping[str, Mapping[tuple[str, ...], Any]] = {
    "airline": {
        # flight HAT018 on 2024-05-11: landed in v1, delayed (with estimated times) in tau2
        ("flights", "HAT018", "dates", "2024-05-11"): {"status": "landed",
                                                       "actual_departure_time_est": "2024-05-11T16:00:00",
                                                       "actual_arrival_time_est": "2024-05-11T18:35:00"},
        # reservation Z7GOZK: a one-way trip to EWR in v1, a round trip to IAH in tau2
        ("reservations", "Z7GOZK", "destination"): "EWR",
        ("reservations", "Z7GOZK", "flight_type"): "one_way",
    },
    "retail": {},
}


def with_v1_records(domain: str, db: Mapping[str, Any]) -> dict[str, Any]:
    """tau2's parsed database ``db`` with v1's values of :data:`V1_RECORD_VALUES` (``db`` itself is
    not changed: the dicts along each path are copied)."""
    out = dict(db)
    for path, value in V1_RECORD_VALUES[domain].items():
        node = out
        for key in path[:-1]:
            node[key] = dict(node[key])
            node = node[key]
        node[path[-1]] = copy.deepcopy(value)
    return out


# Fields tau2's tools return that v1's do not (tool → top-level keys): v1's user records carry no
# user_id (the tools that return a user record). tau2 also writes unset optional fields as null
# where v1 leaves them out, which the comparison with a recorded reply already treats alike
# (prefix_audit.replay.record_check).
TAU2_ADDED_FIELDS: Mapping[str, tuple[str, ...]] = {"get_user_details": ("user_id",),
                                                     "modify_user_address": ("user_id",)}
# The tools that return a user record as it is in the data (its address as the data's version names it).
USER_RECORD_TOOLS = frozenset({"get_user_details"})


def _wording(pattern: str, v1_text: str) -> tuple[re.Pattern[str], str]:
    return re.compile(rf"^(?:Error: )?{pattern}$"), v1_text


# Where v1's tools word an error otherwise than tau2's for the same check (tool → (tau2's wording as
# a pattern, v1's wording)), read from both tools' code. Other error texts differ at most in case and
# the "Error: " prefix, which the comparison with a recorded reply ignores. (Retail's item exchange
# and modification are v1's own here, with v1's wording: :mod:`.tools_v1`.)
_USER_NOT_FOUND = _wording(r"User \S+ not found", "Error: user not found")  # tau2 airline names the id
_RESERVATION_NOT_FOUND = _wording(r"Reservation \S+ not found", "Error: reservation not found")
V1_ERROR_WORDING: Mapping[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    # the same check (a gift card or the original payment method), worded otherwise
    "return_delivered_order_items": (_wording("Payment method should be the original payment method",
                                              "Error: payment method should be either the original payment "
                                              "method or a gift card"),),
    **{name: (_USER_NOT_FOUND,) for name in ("get_user_details", "book_reservation", "send_certificate")},
    **{name: (_RESERVATION_NOT_FOUND,) for name in ("cancel_reservation", "update_reservation_baggages",
                                                     "update_reservation_flights", "update_reservation_passengers")},
    # v1's get_reservation_details answers a missing reservation so (sic)
    "get_reservation_details": (_wording(r"Reservation \S+ not found", "Error: user not found"),),
}


def v1_error(name: str, tau2_error: str) -> str:
    """v1's wording of tau2's error ``tau2_error`` for a call of ``name`` (:data:`V1_ERROR_WORDING`)."""
    for pattern, wording in V1_ERROR_WORDING.get(name, ()):
        if pattern.match(tau2_error):
            return pattern.sub(wording, tau2_error)
    return tau2_error


def v1_reply(name: str, tau2_text: str, region_key: str | None = None) -> str:
    """v1's reply to a call, from tau2's reply to it: tau2's added fields left out, and — where
    ``region_key`` is given — a user record's address naming its state with that key, as the data
    version of the log does (:data:`V1_DATA_ERAS`)."""
    added = TAU2_ADDED_FIELDS.get(name, ())
    if not (added or region_key) or not tau2_text.startswith("{"):
        return tau2_text
    try:
        value = json.loads(tau2_text)
    except ValueError:
        return tau2_text
    if not isinstance(value, dict):
        return tau2_text
    value = {k: v for k, v in value.items() if k not in added}
    address = value.get("address")
    if region_key and region_key != "state" and isinstance(address, dict) and "state" in address:
        value["address"] = {(region_key if k == "state" else k): v for k, v in address.items()}
    return json.dumps(value)


def v1_schema(domain: str, name: str, tau2_schema: Mapping[str, Any]) -> dict[str, Any]:
    """tau2's schema of tool ``name`` with v1's declared differences applied."""
    schema = copy.deepcopy(dict(tau2_schema))
    for path, replacement in V1_SCHEMA_CHANGES[domain].items():
        if path[0] != name:
            continue
        node: Any = schema
        for key in path[1:-1]:
            node = node[key]
        node[path[-1]] = dict(replacement)
    return schema


def domain_evidence(names: Iterable[str]) -> set[str]:
    """The domains whose stock tool sets hold a name of ``names`` that the other domain lacks."""
    names = set(names)
    return {d for d, tools in V1_TOOLS.items() if names & (tools - SHARED_TOOLS)}


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TauDataError(f"{where} must be a list of strings")
    return tuple(value)


def parse_v1_task(obj: Any, task_id: str, domain: str, where: str) -> TauTask:
    """A v1 task object (``info.task`` of a result entry) → a :class:`TauTask` under v1's reward rule:
    DB against the gold ``actions``, always compared (v1 compares hashes even without gold), and the
    ``outputs`` as communicate checks. Raises :class:`TauDataError` naming ``where``."""
    if not isinstance(obj, dict):
        raise TauDataError(f"{where} must be an object")
    actions = obj.get("actions")
    if not isinstance(actions, list):
        raise TauDataError(f"{where}.actions must be a list")
    gold = []
    for i, action in enumerate(actions):
        if not isinstance(action, dict) or not isinstance(action.get("name"), str) \
                or not isinstance(action.get("kwargs"), dict):
            raise TauDataError(f"{where}.actions[{i}] needs a name and a kwargs object")
        gold.append(GoldAction(action["name"], action["kwargs"]))
    instruction = obj.get("instruction")
    if not isinstance(instruction, str):
        raise TauDataError(f"{where}.instruction must be a string")
    if obj.get("user_id") is not None and not isinstance(obj["user_id"], str):
        raise TauDataError(f"{where}.user_id must be a string")
    return TauTask(  # the instruction is all the user simulator knows (the user id is v1's bookkeeping)
        id=task_id, domain=domain, reason_for_call=instruction, known_info=None,
        unknown_info=None, task_instructions="", persona=None, gold=tuple(gold),
        communicate_info=_str_list(obj.get("outputs", []), f"{where}.outputs"), nl_assertions=(),
        reward_basis=("DB", "COMMUNICATE"), env_assertions=(), has_criteria=True, db_compared=True)
