"""The four methods and the verifier conditions over one executor loop, on a real BFCL task, with a
scripted model; and the deterministic (replay) verifier on its own."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from prefix_audit.core.calls import parse_call_string, structured_call
from prefix_audit.core.records import Usage
from prefix_audit.generation.agents.methods import MethodSpec, ReplayVerifier, run_method
from prefix_audit.generation.agents.plans import Plan, PlanStep, plan_of_calls
from prefix_audit.generation.agents.prompts import PLAN_BRIEFING_HEADER, PROMPT_PLANNING_INSTRUCTION, read_briefing
from prefix_audit.models.base import ModelRequest, ModelResponse

TASK = "multi_turn_base_0"  # turn 0: cd(document), mkdir(temp), mv(final_report.pdf → temp)


class Scripted:
    """Replies per role from a list (the last reply repeats); records every request."""

    name = "scripted"

    def __init__(self, **replies: list[str]) -> None:
        self.replies = {role: list(texts) for role, texts in replies.items()}
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        queue = self.replies[request.role]
        text = queue.pop(0) if len(queue) > 1 else queue[0]
        return ModelResponse(text, (), Usage(request.role, 10, 5, 0.1), {}, False, "stop")

    async def aclose(self) -> None:
        return None

    def roles(self) -> list[str]:
        return [r.role for r in self.requests]


@pytest.fixture(scope="module")
def gold(bfcl):
    entry = bfcl.entry(TASK)
    tools = bfcl.tools_of(entry)
    positional = {name: spec.positional_order for name, spec in tools.items()}
    return [plan_of_calls(calls, positional) for calls in bfcl.ground_truth_calls(entry)]


def _with_step(plan: Plan, index: int, **changes) -> Plan:
    steps = list(plan.steps)
    steps[index] = replace(steps[index], **changes)
    return Plan(tuple(steps))


def _episode(bfcl, spec: MethodSpec, backend, verifier=None):
    replay = ReplayVerifier(bfcl, "bfcl_v3", TASK) if spec.verifier == "replay" else None
    return asyncio.run(run_method(spec, backend, bfcl.agent_environment(TASK), verifier=verifier, replay=replay))


# --- the deterministic verifier --------------------------------------------------------------

def test_replay_verifier_accepts_the_gold_plan_and_names_the_first_failing_step(bfcl, gold):
    verifier = ReplayVerifier(bfcl, "bfcl_v3", TASK)
    assert verifier.verify([[]], 0, gold[0]) is None
    unknown = verifier.verify([[]], 0, _with_step(gold[0], 1, tool="make_directory"))
    assert (unknown.step, unknown.check) == (2, "tool_schema")
    # moving a file never seen anywhere: an unresolved reference
    missing = verifier.verify([[]], 0, _with_step(gold[0], 2, arguments={"source": "nope.pdf", "destination": "temp"}))
    assert (missing.step, missing.check) == (3, "dependency")
    # entering a directory that exists nowhere yet: the environment rejects the transition
    early = verifier.verify([[]], 0, Plan((PlanStep(1, "cd", {"folder": "temp"}),)))
    assert (early.step, early.check) == (1, "state_consistency")


def test_replay_verifier_judges_against_what_was_executed_before(bfcl, gold):
    verifier = ReplayVerifier(bfcl, "bfcl_v3", TASK)
    executed = [[structured_call(s.tool, s.arguments) for s in gold[0].steps]]
    assert verifier.verify(executed + [[]], 1, gold[1]) is None
    # without turn 0's actions there is no temp directory to enter
    assert verifier.verify([[], []], 1, gold[1]).step == 1
    # a failure earlier in the episode does not stop the judgement of the plan
    failed_first = [[parse_call_string("cd(folder='nowhere')"), *executed[0]], []]
    assert verifier.verify(failed_first, 1, gold[1]) is None


def test_replay_verifier_fills_references_and_stops_at_user_information(bfcl, gold):
    verifier = ReplayVerifier(bfcl, "bfcl_v3", TASK)
    forward = _with_step(gold[0], 0, arguments={"folder": {"ref": {"step": 3, "field": "x"}}})
    assert verifier.verify([[]], 0, forward).check == "dependency"
    asks_user = _with_step(gold[0], 1, arguments={"dir_name": {"ref": {"user": "the directory name"}}},)
    asks_user = _with_step(asks_user, 2, tool="no_such_tool")  # after the user step: not judged
    assert verifier.verify([[]], 0, asks_user) is None


def test_verification_never_touches_the_live_environment(bfcl, gold):
    env = bfcl.agent_environment(TASK)
    env.execute(parse_call_string("cd(folder='document')"))
    before = env.execute(parse_call_string("ls()"))
    ReplayVerifier(bfcl, "bfcl_v3", TASK).verify([[parse_call_string("cd(folder='document')")]], 0,
                                                  Plan(tuple(gold[0].steps[1:])))
    assert env.execute(parse_call_string("ls()")) == before  # no temp directory appeared


# --- the methods -----------------------------------------------------------------------------

def test_react_and_prompt_planning_make_executor_calls_only(bfcl):
    for method in ("react", "prompt_planning"):
        backend = Scripted(executor=["Done."])
        episode = _episode(bfcl, MethodSpec(method), backend)
        assert set(backend.roles()) == {"executor"} and episode.planning == ()
        system = backend.requests[0].messages[0].content
        assert (PROMPT_PLANNING_INSTRUCTION in system) == (method == "prompt_planning")


def test_plan_conditioned_plans_once_per_turn_and_conditions_the_executor(bfcl, gold):
    backend = Scripted(planner=[p.dumps() for p in gold], executor=["Done."])
    episode = _episode(bfcl, MethodSpec("plan_conditioned"), backend)
    turns = len(gold)
    assert backend.roles() == ["planner", "executor"] * turns
    assert [t["status"] for t in episode.planning] == ["unverified"] * turns
    first_executor = next(r for r in backend.requests if r.role == "executor")
    assert read_briefing(first_executor.messages[-1].content) == ("unverified", gold[0])
    planner_request = backend.requests[0]
    assert planner_request.tools == () and '"turn": 0' in planner_request.messages[-1].content
    # planner calls are accounted but are no actions: one terminal action per turn
    assert [len(t) for t in episode.turns] == [1] * turns
    assert [u.role for u in episode.usage] == backend.roles()
    # a later planner sees the user's requests as written, not the plans briefed to the executor
    last_planner = [r for r in backend.requests if r.role == "planner"][-1]
    executor_requests = [m.content for m in backend.requests[-1].messages if m.role == "user"]
    assert len(executor_requests) == turns and all(PLAN_BRIEFING_HEADER in m for m in executor_requests)
    requests = json.loads(last_planner.messages[-1].content.strip("`json\n"))["requests"]
    assert requests == [m[: m.index("\n\n" + PLAN_BRIEFING_HEADER)] for m in executor_requests]


def test_dual_loop_revises_until_the_verifier_accepts(bfcl, gold):
    wrong = _with_step(gold[0], 1, tool="make_directory")
    reject = json.dumps({"verdict": "reject", "step": 2, "check": "tool_schema", "needed": "mkdir is the tool"})
    backend = Scripted(planner=["I think we should move the file."], revision=[wrong.dumps(), gold[0].dumps()],
                       verifier=[reject, '{"verdict": "accept"}'], executor=["Done."])
    episode = _episode(bfcl, MethodSpec("dual_loop"), backend)
    first_turn = episode.planning[0]
    assert first_turn["status"] == "verified" and first_turn["candidates"] == 3
    assert [r["check"] for r in first_turn["rejections"]] == ["plan_format", "tool_schema"]
    assert backend.roles()[:6] == ["planner", "revision", "verifier", "revision", "verifier", "executor"]
    revision = backend.requests[3].messages[-1].content  # the rejection reaches the reviser
    assert '"check": "tool_schema"' in revision and '"step": 2' in revision
    executor = next(r for r in backend.requests if r.role == "executor")
    assert read_briefing(executor.messages[-1].content) == ("verified", gold[0])


def test_dual_loop_exhaustion_raises_the_failure_flag(bfcl, gold):
    reject = json.dumps({"verdict": "reject", "step": 1, "check": "precondition", "needed": "x"})
    backend = Scripted(planner=[gold[0].dumps()], revision=[gold[0].dumps()], verifier=[reject], executor=["Done."])
    episode = _episode(bfcl, MethodSpec("dual_loop", max_candidates=5), backend)
    turn = episode.planning[0]
    assert turn["status"] == "verification_failed" and turn["candidates"] == 5 and len(turn["rejections"]) == 5
    assert backend.roles()[:10] == ["planner", "verifier"] + ["revision", "verifier"] * 4
    executor = next(r for r in backend.requests if r.role == "executor")
    assert read_briefing(executor.messages[-1].content) == ("verification_failed", None)


def test_an_unreadable_verdict_counts_as_a_rejection(bfcl, gold):
    backend = Scripted(planner=[gold[0].dumps()], revision=[gold[0].dumps()],
                       verifier=["looks fine to me", '{"verdict": "accept"}'], executor=["Done."])
    episode = _episode(bfcl, MethodSpec("dual_loop"), backend)
    assert [r["check"] for r in episode.planning[0]["rejections"]] == ["verdict_format"]


def test_deterministic_accept_makes_no_verifier_call(bfcl, gold):
    backend = Scripted(planner=[p.dumps() for p in gold], executor=["Done."])
    episode = _episode(bfcl, MethodSpec("dual_loop", verifier="accept"), backend)
    assert "verifier" not in backend.roles()
    assert {t["status"] for t in episode.planning} == {"accepted_unevaluated"}


def test_replay_condition_rejects_with_zero_model_cost_and_the_swapped_verifier_is_used(bfcl, gold):
    wrong = _with_step(gold[0], 1, tool="make_directory")
    backend = Scripted(planner=[wrong.dumps(), *[p.dumps() for p in gold[1:]]], revision=[gold[0].dumps()],
                       executor=["Done."])
    episode = _episode(bfcl, MethodSpec("dual_loop", verifier="replay"), backend)
    assert episode.planning[0]["rejections"][0]["check"] == "tool_schema"
    assert episode.planning[0]["status"] == "verified"
    assert set(backend.roles()) == {"planner", "revision", "executor"}

    other = Scripted(verifier=['{"verdict": "accept"}'])
    backend = Scripted(planner=[gold[0].dumps()], executor=["Done."])
    _episode(bfcl, MethodSpec("dual_loop"), backend, verifier=other)
    assert "verifier" not in backend.roles() and set(other.roles()) == {"verifier"}


def test_method_spec_is_validated():
    with pytest.raises(ValueError, match="unknown agent method"):
        MethodSpec("tree_of_thought")
    with pytest.raises(ValueError, match="verifier condition"):
        MethodSpec("dual_loop", verifier="oracle")
    assert PlanStep(1, "ls", {}).to_json() == {"id": 1, "tool": "ls", "arguments": {}}
