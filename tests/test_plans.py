"""Structured plans and verdicts: schema, parsing of model output, references."""

from __future__ import annotations

import json

import pytest

from prefix_audit.generation.agents.plans import (
    Plan,
    PlanFormatError,
    PlanStep,
    Rejection,
    UnresolvedReference,
    parse_plan,
    parse_verdict,
    step_call,
)
from prefix_audit.generation.agents.prompts import plan_briefing, read_briefing

PLAN = {"steps": [
    {"id": 1, "tool": "find", "arguments": {"name": "report.txt"}},
    {"id": 2, "tool": "cat", "arguments": {"file_name": {"ref": {"step": 1, "field": "path"}}}, "depends_on": [1]},
    {"id": 3, "tool": "send", "arguments": {"to": {"ref": {"user": "the recipient"}}}},
]}


def test_a_plan_round_trips_and_is_found_inside_prose_or_fences():
    plan = parse_plan(json.dumps(PLAN))
    assert [s.tool for s in plan.steps] == ["find", "cat", "send"] and plan.steps[1].depends_on == (1,)
    assert parse_plan(plan.dumps()) == plan
    assert parse_plan("Here is the plan:\n```json\n" + json.dumps(PLAN) + "\n```\nGood luck.") == plan
    assert parse_plan("Sure! " + json.dumps(PLAN) + " That's it.") == plan


@pytest.mark.parametrize("text, where", [
    ("no json here", "no JSON object"),
    (json.dumps({"steps": [{"id": 0, "tool": "x", "arguments": {}}]}), "steps/0/id"),
    (json.dumps({"steps": [{"id": 1, "tool": "x"}]}), "arguments"),
    (json.dumps({"steps": [{"id": 1, "tool": "x", "arguments": {}, "extra": 1}]}), "extra"),
    (json.dumps({"steps": [{"id": 1, "tool": "x", "arguments": {}}, {"id": 1, "tool": "y", "arguments": {}}]}),
     "not unique"),
])
def test_malformed_plans_are_rejected_with_the_place(text, where):
    with pytest.raises(PlanFormatError, match=where):
        parse_plan(text)


def test_verdicts():
    assert parse_verdict('{"verdict": "accept"}') is None
    rejection = parse_verdict('{"verdict": "reject", "step": 2, "check": "dependency", "needed": "the file path"}')
    assert rejection == Rejection(2, "dependency", "the file path")
    with pytest.raises(PlanFormatError, match="check"):
        parse_verdict('{"verdict": "reject", "step": 2, "check": "vibes", "needed": ""}')
    with pytest.raises(PlanFormatError):
        parse_verdict('{"verdict": "maybe"}')


def test_references_resolve_from_earlier_results_only():
    plan = parse_plan(json.dumps(PLAN))
    assert step_call(plan.steps[1], {1: {"path": "/docs/report.txt"}}).kwargs == {"file_name": "/docs/report.txt"}
    with pytest.raises(UnresolvedReference) as missing_field:
        step_call(plan.steps[1], {1: {"size": 3}})
    assert missing_field.value.check == "dependency"
    with pytest.raises(UnresolvedReference) as not_run:
        step_call(plan.steps[1], {})
    assert not_run.value.check == "dependency"
    with pytest.raises(UnresolvedReference) as user:
        step_call(plan.steps[2], {})
    assert user.value.check == "information"
    forward = PlanStep(1, "cat", {"file_name": {"ref": {"step": 2, "field": "path"}}})
    with pytest.raises(UnresolvedReference, match="does not come before"):
        step_call(forward, {2: {"path": "x"}})
    # A literal object that merely has a "ref" key is a literal, not a reference.
    literal = PlanStep(1, "tag", {"meta": {"ref": "v2", "note": 1}})
    assert step_call(literal, {}).kwargs == {"meta": {"ref": "v2", "note": 1}}


def test_the_executor_briefing_carries_status_and_plan():
    plan = Plan((PlanStep(1, "ls", {}),))
    for status in ("verified", "unverified", "accepted_unevaluated"):
        assert read_briefing("List my files.\n\n" + plan_briefing(status, plan)) == (status, plan)
    assert read_briefing(plan_briefing("verification_failed", None)) == ("verification_failed", None)
    assert read_briefing("List my files.") is None
