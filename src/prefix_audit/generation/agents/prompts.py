"""What every agent role is told, and the planning context it is shown (docs/definitions.md#agents).

The planner, verifier and revision calls see one JSON document — the user's requests so far, the
tool calls executed so far with their observations, the tools of the current turn, and (for the
verifier and revisions) the candidate plan and the last rejection. The executor sees the plan as
a JSON block appended to the user's request, with its status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefix_audit.models.base import Message, ToolSchema

from .plans import CHECKS, PLAN_SCHEMA, VERDICT_SCHEMA, Plan, PlanFormatError, Rejection, json_object, parse_plan

REACT_SYSTEM_PROMPT = (
    "You are an assistant that completes the user's requests by calling the provided tools. "
    "Think about which tool to call next, call it, and read its result before deciding what to do. "
    "When a request is done, or cannot be done with the tools you have, reply briefly without "
    "calling a tool."
)

PROMPT_PLANNING_INSTRUCTION = (
    "Before your first tool call for each new request, write a short numbered plan of the tool calls "
    "you intend to make; then carry it out, changing it only when a result shows it cannot work."
)
PROMPT_PLANNING_SYSTEM_PROMPT = f"{REACT_SYSTEM_PROMPT} {PROMPT_PLANNING_INSTRUCTION}"

PLANNER_SYSTEM_PROMPT = (
    "You are the planner of a tool-using assistant. Given the user's requests, the tool calls already "
    "executed with their results, and the available tools, write a plan for the latest request: the "
    "tool calls to make, in order. An argument is a literal JSON value, or a reference "
    '{"ref": {"step": k, "field": "name"}} to a field of the result of earlier step k, or '
    '{"ref": {"user": "what is needed"}} for information the user has not given yet. Use only the '
    "listed tools and their declared parameters. If a verifier rejected an earlier plan, repair the "
    "step it names. Reply with one JSON object matching this schema and nothing else:\n"
    + json.dumps(PLAN_SCHEMA, sort_keys=True)
)

VERIFIER_SYSTEM_PROMPT = (
    "You are the verifier of a tool-using assistant. Check the candidate plan for the latest request "
    "before anything is executed, step by step, against this checklist: tool and schema validity "
    "(tool_schema), dependency resolution (dependency), information availability (information), "
    "explicit preconditions (precondition), state consistency (state_consistency). Accept with "
    '{"verdict": "accept"}, or reject naming the earliest failing step, the failed check (one of '
    + ", ".join(CHECKS) + ") and the information needed to repair it. Reply with one JSON object "
    "matching this schema and nothing else:\n" + json.dumps(VERDICT_SCHEMA, sort_keys=True)
)

# What the executor is told about the plan, by the plan's status.
PLAN_STATUS_INSTRUCTIONS = {
    "unverified": "Follow this plan step by step; adapt only when a result shows it cannot work.",
    "verified": "A verifier checked this plan and accepted it. Follow it step by step; adapt only when "
                "a result shows it cannot work.",
    "accepted_unevaluated": "This plan was accepted without being evaluated. Follow it step by step; "
                            "adapt only when a result shows it cannot work.",
    "verification_failed": "No candidate plan passed verification. Treat no plan as binding and act on "
                           "your own judgement.",
    "unavailable": "The planner produced no usable plan. Act on your own judgement.",
}
BINDING_STATUSES = frozenset({"unverified", "verified", "accepted_unevaluated"})
PLAN_BRIEFING_HEADER = "Plan for this request"


@dataclass(frozen=True)
class PlanningContext:
    """What planner, verifier and revision calls are shown about the episode so far."""

    turn: int
    requests: tuple[str, ...]
    executed: tuple[Mapping[str, Any], ...]  # {"turn", "tool", "arguments", "observation"}
    tools: tuple[ToolSchema, ...]

    def document(self, plan: Plan | None = None, rejection: Rejection | None = None) -> str:
        doc: dict[str, Any] = {
            "turn": self.turn,
            "requests": list(self.requests),
            "executed": [dict(e) for e in self.executed],
            "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters}
                      for t in self.tools],
        }
        if plan is not None:
            doc["plan"] = plan.to_json()
        if rejection is not None:
            doc["rejection"] = rejection.to_json()
        return "```json\n" + json.dumps(doc, sort_keys=True, default=repr) + "\n```"


def executed_calls(messages: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """The tool calls of a conversation with their observations, in order, with their user turn."""
    turn, pending, done = -1, {}, []
    for message in messages:
        if message.role == "user":
            turn += 1
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.arguments) if call.arguments.strip() else {}
            except (ValueError, RecursionError):  # not JSON, or an integer too long for it
                arguments = call.arguments  # shown as emitted; the replay records it as unreadable
            entry = {"turn": turn, "tool": call.name, "arguments": arguments, "observation": None}
            pending[call.id] = entry
            done.append(entry)
        if message.role == "tool" and message.tool_call_id in pending:
            pending.pop(message.tool_call_id)["observation"] = message.content
    return tuple(done)


def planner_messages(context: PlanningContext) -> tuple[Message, ...]:
    return (Message("system", PLANNER_SYSTEM_PROMPT), Message("user", context.document()))


def revision_messages(context: PlanningContext, plan: Plan | None, rejection: Rejection) -> tuple[Message, ...]:
    return (Message("system", PLANNER_SYSTEM_PROMPT), Message("user", context.document(plan, rejection)))


def verifier_messages(context: PlanningContext, plan: Plan) -> tuple[Message, ...]:
    return (Message("system", VERIFIER_SYSTEM_PROMPT), Message("user", context.document(plan)))


def read_context(message: Message) -> dict[str, Any]:
    """The planning context document of a planner/verifier/revision request."""
    doc = json_object(message.content)
    if not isinstance(doc, dict) or "turn" not in doc:
        raise PlanFormatError("the message holds no planning context")
    return doc


def plan_briefing(status: str, plan: Plan | None) -> str:
    """The text appended to the user's request for the executor."""
    doc = {"status": status, "plan": plan.to_json() if plan is not None else None}
    return (f"{PLAN_BRIEFING_HEADER} ({status}). {PLAN_STATUS_INSTRUCTIONS[status]}\n"
            f"```json\n{json.dumps(doc, sort_keys=True)}\n```")


def without_briefing(text: str) -> str:
    """A user message as the user wrote it: the plan briefing appended for the executor removed, so
    that later planning calls see the requests, not every earlier turn's plan again."""
    cut = text.find(f"\n\n{PLAN_BRIEFING_HEADER} (")
    return text if cut < 0 else text[:cut]


def read_briefing(text: str | None) -> tuple[str, Plan | None] | None:
    """(status, plan) from a user message carrying a plan briefing; None when it carries none."""
    if not text or PLAN_BRIEFING_HEADER not in text:
        return None
    doc = json_object(text[text.index(PLAN_BRIEFING_HEADER):])
    status = doc.get("status") if isinstance(doc, dict) else None
    if status not in PLAN_STATUS_INSTRUCTIONS:
        raise PlanFormatError(f"unknown plan status {status!r}")
    return status, (parse_plan(json.dumps(doc["plan"])) if doc.get("plan") is not None else None)
