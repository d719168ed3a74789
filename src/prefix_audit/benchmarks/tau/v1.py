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
  without a tool call).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
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

# A transition v1 accepts and tau2 rejects: v1's modify_pending_order_items takes a pair whose new
# item is the old item (it sets the item to its own variant's price and options), tau2 refuses the
# whole call. Where such a pair changes nothing — the variant is available, with the order item's
# price and options — and the call has other pairs, the call runs on tau2 without those pairs.
SELF_MODIFY_TOOLS: Mapping[str, frozenset[str]] = {"airline": frozenset(),
                                                   "retail": frozenset({"modify_pending_order_items"})}

# Records of v1's databases that differ from tau2's (measured by bench/tau_v1_db.py; every other
# flight, reservation, order and product is equal, and users differ only by tau2's added user_id
# field and floats for int amounts). A rollout whose calls, recorded replies or gold name one of
# these is flagged: meta["v1_db_differs"].
V1_DB_DIFFERS: Mapping[str, frozenset[str]] = {
    "airline": frozenset({"HAT018", "Z7GOZK"}),  # flight HAT018 on 2024-05-11; reservation Z7GOZK
    "retail": frozenset(),
}


# Fields tau2's tools return that v1's do not (tool → top-level keys): v1's user records carry no
# user_id (the tools that return a user record). tau2 also writes unset optional fields as null
# where v1 leaves them out, which the comparison with a recorded reply already treats alike
# (prefix_audit.record_check).
TAU2_ADDED_FIELDS: Mapping[str, tuple[str, ...]] = {"get_user_details": ("user_id",),
                                                     "modify_user_address": ("user_id",)}


def v1_reply(name: str, tau2_text: str) -> str:
    """v1's reply to a call, from tau2's reply to it: tau2's added fields left out (for comparing
    replay with a v1 log's recorded replies; scoring itself reads tau2's reply)."""
    added = TAU2_ADDED_FIELDS.get(name)
    if not added or not tau2_text.startswith("{"):
        return tau2_text
    try:
        value = json.loads(tau2_text)
    except ValueError:
        return tau2_text
    if not isinstance(value, dict):
        return tau2_text
    return json.dumps({k: v for k, v in value.items() if k not in added})


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
        reward_basis=("DB", "COMMUNICATE"), env_assertions=0, has_criteria=True, db_compared=True)
