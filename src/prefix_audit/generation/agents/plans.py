"""Structured plans and verifier verdicts: their JSON schemas, parsing, and use (docs/definitions.md#agents).

A plan is the planner's proposal for one user request: numbered steps, each a tool with
arguments, where an argument is a literal JSON value or a reference — ``{"ref": {"step": k,
"field": "name"}}`` (a field of the result of earlier step k) or ``{"ref": {"user": "what"}}``
(information the user still has to give) — and the steps it depends on. A verdict accepts a plan
or rejects it naming the earliest failing step, the failed check and the information needed to
repair it. Both travel as JSON text in ordinary messages, so real and simulated models read and
write the same thing; model output is parsed with ``json`` and validated, never evaluated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from prefix_audit.core.calls import ToolCall, structured_call

# The verifier checklist (paper Appendix D.2), in the order a verifier walks it.
CHECKS = ("tool_schema", "dependency", "information", "precondition", "state_consistency")
# Checks the method itself can fail a candidate on, before or instead of a verifier.
PLAN_FORMAT = "plan_format"
VERDICT_FORMAT = "verdict_format"

# The replay checker's first-failure categories as verifier checks.
CHECK_OF_CATEGORY = {"schema": "tool_schema", "dependency": "dependency", "information": "information",
                     "precondition": "precondition", "state_consistency": "state_consistency"}

_REFERENCE = {
    "type": "object", "additionalProperties": False, "required": ["ref"],
    "properties": {"ref": {"oneOf": [
        {"type": "object", "additionalProperties": False, "required": ["step", "field"],
         "properties": {"step": {"type": "integer", "minimum": 1}, "field": {"type": "string"}}},
        {"type": "object", "additionalProperties": False, "required": ["user"],
         "properties": {"user": {"type": "string", "minLength": 1}}},
    ]}},
}

PLAN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {"steps": {"type": "array", "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "tool", "arguments"],
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "tool": {"type": "string", "minLength": 1},
            "arguments": {"type": "object"},
            "depends_on": {"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": True},
        },
    }}},
}

VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "oneOf": [
        {"type": "object", "additionalProperties": False, "required": ["verdict"],
         "properties": {"verdict": {"const": "accept"}}},
        {"type": "object", "additionalProperties": False, "required": ["verdict", "step", "check", "needed"],
         "properties": {"verdict": {"const": "reject"}, "step": {"type": "integer", "minimum": 1},
                        "check": {"enum": list(CHECKS)}, "needed": {"type": "string"}}},
    ],
}

_PLAN_VALIDATOR = jsonschema.Draft202012Validator(PLAN_SCHEMA)
_VERDICT_VALIDATOR = jsonschema.Draft202012Validator(VERDICT_SCHEMA)
_REFERENCE_VALIDATOR = jsonschema.Draft202012Validator(_REFERENCE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class PlanFormatError(ValueError):
    """Model output that is not a plan (or verdict) of the required shape."""


@dataclass(frozen=True)
class PlanStep:
    id: int
    tool: str
    arguments: Mapping[str, Any]
    depends_on: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.id, "tool": self.tool, "arguments": dict(self.arguments)}
        if self.depends_on:
            doc["depends_on"] = list(self.depends_on)
        return doc


@dataclass(frozen=True)
class Plan:
    steps: tuple[PlanStep, ...]

    def to_json(self) -> dict[str, Any]:
        return {"steps": [s.to_json() for s in self.steps]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


@dataclass(frozen=True)
class Rejection:
    """Why a candidate plan was not accepted: the earliest failing step (None when the plan as a
    whole is unreadable), the failed check, and the information needed to repair it."""

    step: int | None
    check: str
    needed: str

    def to_json(self) -> dict[str, Any]:
        return {"verdict": "reject", "step": self.step, "check": self.check, "needed": self.needed}


def json_object(text: str | None) -> Any:
    """The JSON object in a model reply: the whole text, a fenced block, or the outermost braces."""
    text = (text or "").strip()
    fenced = _FENCE.search(text)
    candidates = [text, fenced.group(1).strip() if fenced else None]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"): text.rindex("}") + 1])
    for candidate in candidates:
        if candidate:
            try:
                return json.loads(candidate)
            except (ValueError, RecursionError):  # not JSON, or an integer too long for it
                continue
    raise PlanFormatError("no JSON object found in the reply")


def _first_error(validator: jsonschema.protocols.Validator, doc: Any) -> str | None:
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(top level)"
    return f"{where}: {error.message}"


def parse_plan(text: str | None) -> Plan:
    doc = json_object(text)
    problem = _first_error(_PLAN_VALIDATOR, doc)
    if problem:
        raise PlanFormatError(f"plan does not match the plan schema at {problem}")
    steps = tuple(PlanStep(s["id"], s["tool"], s["arguments"], tuple(s.get("depends_on", ())))
                  for s in doc["steps"])
    ids = [s.id for s in steps]
    if len(set(ids)) != len(ids):
        raise PlanFormatError("plan step ids are not unique")
    return Plan(steps)


def parse_verdict(text: str | None) -> Rejection | None:
    """None for an acceptance, the rejection otherwise; PlanFormatError for anything else."""
    doc = json_object(text)
    problem = _first_error(_VERDICT_VALIDATOR, doc)
    if problem:
        raise PlanFormatError(f"verdict does not match the verdict schema at {problem}")
    if doc["verdict"] == "accept":
        return None
    return Rejection(doc["step"], doc["check"], doc["needed"])


class UnresolvedReference(ValueError):
    """A step argument that cannot be filled in yet; ``check`` says which verifier check fails."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check = check


def _resolve(value: Any, step: PlanStep, results: Mapping[int, Any]) -> Any:
    if not (isinstance(value, dict) and "ref" in value and _REFERENCE_VALIDATOR.is_valid(value)):
        return value
    ref = value["ref"]
    if "user" in ref:
        raise UnresolvedReference("information", f"step {step.id} needs from the user: {ref['user']}")
    source = ref["step"]
    if source >= step.id or source not in results:
        raise UnresolvedReference("dependency", f"step {step.id} refers to step {source}, which does not "
                                                "come before it or did not succeed")
    result = results[source]
    if isinstance(result, Mapping) and ref["field"] in result:
        return result[ref["field"]]
    raise UnresolvedReference("dependency", f"step {step.id}: the result of step {source} has no field "
                                            f"{ref['field']!r}")


def step_call(step: PlanStep, results: Mapping[int, Any]) -> ToolCall:
    """The call a step makes, with references filled in from earlier steps' results."""
    arguments = {name: _resolve(value, step, results) for name, value in step.arguments.items()}
    return structured_call(step.tool, arguments)


def plan_of_calls(calls: Sequence[ToolCall], positional: Mapping[str, Sequence[str]]) -> Plan:
    """A plan of literal steps, one per call (positional arguments named by ``positional``)."""
    steps = []
    for i, call in enumerate(calls, 1):
        named = dict(zip(positional.get(call.name or "", ()), call.args, strict=False))
        named.update(call.kwargs)
        steps.append(PlanStep(i, call.name or "", named, (i - 1,) if i > 1 else ()))
    return Plan(tuple(steps))
