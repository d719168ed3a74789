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
* The DB hash is sha256 of ``str`` of the data as nested tuples (dict items sorted by key); the
  untouched databases' hashes are :data:`V1_UNTOUCHED_DB_SHA256` (computed from v1's data files).
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
RESPOND = "respond"  # the ReAct agent's action name for a message to the user (argument ``content``)
RESPOND_FIELD = "content"
REACT_ACTION_MARKER = "Action:"
REACT_OUTPUT_PREFIX = "API output: "
# tool-calling: OpenAI tool calls and tool messages; react: actions as text (both ReAct and Act)
STRATEGIES = ("tool-calling", "react")
# sha256 of v1's untouched databases as v1 hashes them (``Env.get_data_hash`` on a fresh load;
# computed from the data files of sierra-research/tau-bench at 59a200c).
V1_UNTOUCHED_DB_SHA256: Mapping[str, str] = {
    "airline": "4587e6b48ad2b2c4f3e1fecb40aabec7bb2286513273b8f8cec3f5865222f290",
    "retail": "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5",
}
# The date of the reward-rule change (a task with outputs is since also scored on the DB).
REWARD_RULE_CHANGE = "2024-11-10"

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


# Where v1's tools word an error otherwise than tau2's for the same check (tool → (tau2's wording as
# a pattern, v1's wording)): v1's retail exchange and item modification answer an item id the order
# does not hold (as often as listed) with "Error: <item_id> not found", tau2 with "Number of
# <item_id> not found."; v1's return refuses a refund method other than the original one or a gift
# card with its own sentence. Other error texts differ at most in case and the "Error: " prefix, which the
# comparison with a recorded reply ignores.
V1_ERROR_WORDING: Mapping[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    **{name: ((re.compile(r"^(?:Error: )?Number of (.+) not found\.$"), r"Error: \1 not found"),)
       for name in ("exchange_delivered_order_items", "modify_pending_order_items")},
    # the same check (a gift card or the original payment method), worded otherwise
    "return_delivered_order_items": ((re.compile(r"^(?:Error: )?Payment method should be the original payment "
                                                 r"method$"),
                                      "Error: payment method should be either the original payment method or a "
                                      "gift card"),),
}


def v1_error(name: str, tau2_error: str) -> str:
    """v1's wording of tau2's error ``tau2_error`` for a call of ``name`` (:data:`V1_ERROR_WORDING`)."""
    for pattern, wording in V1_ERROR_WORDING.get(name, ()):
        if pattern.match(tau2_error):
            return pattern.sub(wording, tau2_error)
    return tau2_error


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
