"""τ-bench v1 result files (``import tau`` detects the format) on tau2's environments, embedded task
definitions, and ``--tasks-from-results`` for tau2 results whose tasks differ from ours.

Self-contained tests build small v1 entries from ids of tau2's own retail/airline databases; tests on
the shared real logs skip when /work/shared is absent."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED, TAU3
from tau_results import disagreements

from prefix_audit.benchmarks.tau import V1_DATASETS, load_v1_benchmarks
from prefix_audit.benchmarks.tau.domain.embedded import KEY
from prefix_audit.benchmarks.tau.ingest.errors import TauResultsError
from prefix_audit.benchmarks.tau.ingest.importer import import_results
from prefix_audit.core.records import BadLine, Rollout
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import UnscorableRollout
from prefix_audit.replay.record_check import check_record

V1_FILE = SHARED / "fixtures" / "real-logs" / "tau-bench-v1" / "gpt-4.1-mini_retail_user-gpt-4.1_1trial.json"
TAU2_LOGS = SHARED / "fixtures" / "real-logs" / "tau2"


@pytest.fixture(scope="module")
def benches(tau, tau_data):
    return {**tau, **load_v1_benchmarks(tau_data)}


# --- small v1 entries ------------------------------------------------------------------------


def _u(text):
    return {"role": "user", "content": text}


def _a(text):
    return {"role": "assistant", "content": text, "tool_calls": None}


def _call(call_id, name, arguments, reply, text=None):
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [{"role": "assistant", "content": text, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "name": name, "content": reply}]


def _entry(task_id, traj, gold, outputs=(), reward=1.0, trial=0, error=None):
    info = {"task": {"user_id": "u", "actions": gold, "instruction": "You want to cancel an order.",
                     "outputs": list(outputs)},
            "source": "user", "user_cost": 0.0, "reward_info": {"reward": reward, "info": {}, "actions": gold}}
    if error:
        info["error"] = error
    return {"task_id": task_id, "reward": reward, "info": info,
            "traj": [{"role": "system", "content": "policy"}, *traj], "trial": trial}


@pytest.fixture(scope="module")
def retail_case(tau_data):
    """A user of tau2's retail database with a pending order."""
    db = tau_data.domains["retail"].raw_db
    order_id, order = next((k, o) for k, o in db["orders"].items() if o["status"] == "pending")
    email = db["users"][order["user_id"]]["email"]
    return {"user_id": order["user_id"], "email": email, "order_id": order_id}


def _gold(case):
    return [{"name": "find_user_id_by_email", "kwargs": {"email": case["email"]}},
            {"name": "cancel_pending_order", "kwargs": {"order_id": case["order_id"], "reason": "no longer needed"}}]


def _good_traj(case, call_prefix="c"):
    return [_u(f"Cancel my order {case['order_id']}, my email is {case['email']}."),
            *_call(f"{call_prefix}1", "find_user_id_by_email", {"email": case["email"]}, case["user_id"]),
            *_call(f"{call_prefix}2", "think", {"thought": "The order is pending; cancel it."}, ""),
            *_call(f"{call_prefix}3", "cancel_pending_order",
                   {"order_id": case["order_id"], "reason": "no longer needed"}, "{}"),
            _a("Your order is cancelled, and the refund is on its way."), _u("###STOP###")]


def _write(tmp_path, doc, name="v1.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _import(path, benches, **kw):
    items = list(import_results(path, benches.__getitem__, **kw))
    return ([i.rollout for i in items if not isinstance(i, BadLine)], [i for i in items if isinstance(i, BadLine)])


def test_format_detection_and_located_errors(benches, tmp_path, retail_case):
    good, bad = _import(_write(tmp_path, [_entry(0, _good_traj(retail_case), _gold(retail_case))]), benches)
    assert not bad and [r.dataset for r in good] == ["tau_v1_retail"]
    for doc, said in [({"info": {}}, "an object with keys ['info']"), ([{"task_id": 1}], "a list of 1 entries"),
                      ([], "a list of 0 entries"), (3, "a JSON int")]:
        path = _write(tmp_path, doc, "other.json")
        with pytest.raises(TauResultsError, match="neither tau2 simulations") as exc:
            list(import_results(path, benches.__getitem__))
        assert str(path) in str(exc.value) and said in str(exc.value)


def test_v1_round_trip_y_think_and_terminations(benches, tmp_path, retail_case):
    case = retail_case
    gold = _gold(case)
    cancel = {"order_id": case["order_id"], "reason": "no longer needed"}
    entries = [
        _entry(0, _good_traj(case), gold, outputs=["cancelled"]),  # Y = 1, think accepted
        _entry(1, _good_traj(case)[:-2] + [_a("Done."), _u("###STOP###")], gold, outputs=["refund"], reward=0.0),
        # the required output said only beside a tool call: not a message to the user (v1: Y = 0)
        _entry(2, [_u(f"Cancel order {case['order_id']}, my email is {case['email']}."),
                   *_call("x1", "find_user_id_by_email", {"email": case["email"]}, case["user_id"],
                          text="I will cancel it and refund you."),
                   *_call("x2", "cancel_pending_order", cancel, "{}"), _a("Done."), _u("###STOP###")],
               gold, outputs=["refund"], reward=0.0),
        # the episode ran out of steps without the user's stop: v1 scores 0 although the database is right
        _entry(3, _good_traj(case)[:-1], gold, reward=0.0),
        # the run raised after some actions: a normal episode that ended in agent_error, Y = 0
        _entry(4, _good_traj(case)[:3], gold, reward=0.0, error="litellm.APIError: overloaded"),
        # ends with a transfer: v1 computes the reward (the database is unchanged; gold is a look-up only)
        _entry(5, [_u(f"My email is {case['email']}."),
                   *_call("t1", "find_user_id_by_email", {"email": case["email"]}, case["user_id"]),
                   *_call("t2", "transfer_to_human_agents", {"summary": "wants a human"}, "Transfer successful")],
               gold[:1]),
    ]
    good, bad = _import(_write(tmp_path, entries), benches)
    assert not bad
    episodes = {r.task_id: replay(r, benches[r.dataset]) for r in good}
    assert {k: (e.T, e.FED, e.Y) for k, e in episodes.items()} == {
        "0": (4, 5, 1), "1": (4, 5, 0), "2": (3, 4, 0), "3": (4, 5, 0), "4": (1, 2, 0), "5": (2, 3, 1)}
    think = episodes["0"].verdicts[1]
    assert think.action.call.name == "think" and think.valid and think.accepted and think.result == ""
    assert [r.meta["termination_reason"] for r in good] == [
        "user_stop", "user_stop", "user_stop", "max_steps", "agent_error", "transfer_to_human_agents"]
    first = good[0]
    assert first.meta["recorded_reward"] == 1.0 and first.meta[KEY]["format"] == "tau-bench-v1"
    assert first.meta[KEY]["source"] == str(tmp_path / "v1.json") and "tasks_sha256" not in first.meta
    assert first.model == "v1" and first.trial == 0 and "rule=tau-bench-v1" in episodes["0"].y_detail


def test_think_changes_no_state(benches, tmp_path, retail_case):
    from prefix_audit.core.calls import structured_call

    bench = benches["tau_v1_retail"]
    [rollout], _ = _import(_write(tmp_path, [_entry(0, _good_traj(retail_case), _gold(retail_case))]), benches)
    session = bench.open_session(rollout)
    before = session._live.db_hash()
    outcome = session.execute(structured_call("think", {"thought": "cancel order #W0000000"}))
    assert (outcome.accepted, outcome.result) == (True, "") and session._live.db_hash() == before
    assert "think" not in benches["tau_retail"].tools and "think" in bench.tools


def test_invented_tool_is_a_schema_failure_missing_stock_tool_is_quarantined(benches, tmp_path, retail_case):
    case = retail_case
    invented = [_u(f"My email is {case['email']}."),
                *_call("i1", "lookup_customer", {"email": case["email"]}, "Unknown action lookup_customer"),
                *_good_traj(case, "j")[1:]]
    extra = [_u("Hi."), *_call("e1", "get_item_details", {"item_id": "1"}, '{"item_id": "1"}'), _a("ok"),
             _u("###STOP###")]
    stock_missing = [_u("Hi."), *_call("m1", "list_all_product_types", {}, "Unknown action list_all_product_types"),
                     _a("ok"), _u("###STOP###")]
    good, bad = _import(_write(tmp_path, [_entry(0, invented, _gold(case)), _entry(1, extra, _gold(case)),
                                          _entry(2, stock_missing, _gold(case)), "not an entry"]), benches)
    rollout, extra_run = good  # a run with a tool v1 lacks: an episode, its call unknown, flagged
    assert replay(extra_run, benches[rollout.dataset]).category == "schema"
    assert [i.code for i in extra_run.recorded.issues] == ["tool_set_differs"]
    episode = replay(rollout, benches[rollout.dataset])
    assert (episode.FED, episode.category, episode.Y) == (1, "schema", 1)
    assert episode.verdicts[0].failures[0].code == "unknown_tool"
    assert rollout.meta["recorded_unknown_action_calls"] == [1]
    reasons = ["did not expose v1's stock tool set", "must be an object"]
    assert [b.line for b in bad] == [3, 4]
    assert all(reason in b.reason for b, reason in zip(bad, reasons)), [b.reason for b in bad]


def test_infra_entry_has_infra_error_and_scores_zero(benches, tmp_path, retail_case):
    entries = [{"task_id": 7, "reward": 0.0, "trial": 1, "traj": [],
                "info": {"error": "RateLimitError: too many requests", "traceback": "Traceback ...\nRateLimitError"}},
               _entry(8, [_u("Hi.")], _gold(retail_case), reward=0.0, error="APIConnectionError: refused")]
    good, bad = _import(_write(tmp_path, entries), benches)
    assert not bad and [r.infra_error for r in good] == ["RateLimitError: too many requests",
                                                         "APIConnectionError: refused"]
    assert all(r.turns == () for r in good) and good[0].trial == 1 and good[0].dataset == "tau_v1_retail"
    for rollout in good:
        session = benches[rollout.dataset].open_session(rollout)
        assert session.final_success() == 0 and "infra_error" in session.y_detail


def test_v1_status_rule_rejects_what_tau2_accepts(benches, tmp_path, tau_data):
    """v1 changes a pending order's address only while its status is exactly 'pending'."""
    db = tau_data.domains["retail"].raw_db
    order_id, order = next((k, o) for k, o in db["orders"].items() if o["status"] == "pending"
                           and any(i["product_id"] == o["items"][0]["product_id"] and v != o["items"][0]["item_id"]
                                   and i2["available"] for i in o["items"][:1]
                                   for v, i2 in db["products"][i["product_id"]]["variants"].items()))
    item = order["items"][0]
    new = next(v for v, x in db["products"][item["product_id"]]["variants"].items()
               if v != item["item_id"] and x["available"])
    payment = order["payment_history"][0]["payment_method_id"]
    email = db["users"][order["user_id"]]["email"]
    address = {"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA",
               "zip": "78701"}
    traj = [_u(f"My email is {email}, order {order_id}, new address 1 Main St, Austin TX 78701, USA."),
            *_call("s1", "find_user_id_by_email", {"email": email}, order["user_id"]),
            *_call("s2", "modify_pending_order_items", {"order_id": order_id, "item_ids": [item["item_id"]],
                                                        "new_item_ids": [new], "payment_method_id": payment}, "{}"),
            *_call("s3", "modify_pending_order_address", {"order_id": order_id, **address},
                   "Error: non-pending order cannot be modified"), _a("Done."), _u("###STOP###")]
    [rollout], _ = _import(_write(tmp_path, [_entry(0, traj, [])]), benches)
    episode = replay(rollout, benches[rollout.dataset])
    assert [v.accepted for v in episode.verdicts[:3]] == [True, True, False]
    assert rollout.meta["recorded_error_calls"] == [3]


def test_v1_modifies_an_item_into_itself(benches, tmp_path, tau_data):
    """v1 accepts a modification that lists an item as its own new item (changing nothing there);
    tau2 refuses the whole call. Only the other pair then changes the order."""
    db = tau_data.domains["retail"].raw_db

    def other_variant(item):
        return next((v for v, x in db["products"][item["product_id"]]["variants"].items()
                     if v != item["item_id"] and x["available"]), None)

    def unchanged(item):
        variant = db["products"][item["product_id"]]["variants"].get(item["item_id"])
        return variant and variant["available"] and variant["price"] == item["price"] \
            and variant["options"] == item["options"]

    order_id, order = next((k, o) for k, o in db["orders"].items() if o["status"] == "pending"
                           and len({i["item_id"] for i in o["items"]}) >= 2 and other_variant(o["items"][0])
                           and unchanged(o["items"][1]))
    first, second = order["items"][0], order["items"][1]
    payment = order["payment_history"][0]["payment_method_id"]
    email = db["users"][order["user_id"]]["email"]
    change = {"order_id": order_id, "item_ids": [first["item_id"]], "new_item_ids": [other_variant(first)],
              "payment_method_id": payment}
    with_self = {**change, "item_ids": [first["item_id"], second["item_id"]],
                 "new_item_ids": [other_variant(first), second["item_id"]]}
    traj = [_u(f"My email is {email}, order {order_id}."),
            *_call("s1", "find_user_id_by_email", {"email": email}, order["user_id"]),
            *_call("s2", "get_order_details", {"order_id": order_id}, "{}"),
            *_call("s3", "modify_pending_order_items", with_self, "{}"), _a("Done."), _u("###STOP###")]
    gold = [{"name": "modify_pending_order_items", "kwargs": change}]
    [rollout], _ = _import(_write(tmp_path, [_entry(0, traj, gold)]), benches)
    episode = replay(rollout, benches[rollout.dataset])
    assert episode.verdicts[2].accepted and episode.Y == 1
    tau2_only = Rollout("tau_retail", "0", "m", "x", "r", rollout.turns, source="t",
                        meta={"user_turns": rollout.meta["user_turns"]})
    session = benches["tau_retail"].open_session(tau2_only)
    from prefix_audit.core.calls import structured_call

    assert not session.execute(structured_call("modify_pending_order_items", with_self)).accepted


def test_domain_detection_override_and_v1_records(benches, tmp_path, retail_case):
    airline = [_u("Reservation Z7GOZK please."),
               *_call("a1", "get_reservation_details", {"reservation_id": "Z7GOZK"}, "{}"), _a("ok"),
               _u("###STOP###")]
    good, _ = _import(_write(tmp_path, [_entry(0, airline, [])]), benches)
    assert good[0].dataset == "tau_v1_airline"
    # v1's reservation Z7GOZK (one way to EWR) is not tau2's (a round trip to IAH): replay reads v1's
    [verdict] = [v for v in replay(good[0], benches["tau_v1_airline"]).verdicts if v.action.call]
    reply = json.loads(verdict.logged)
    assert (reply["destination"], reply["flight_type"]) == ("EWR", "one_way")
    tau2 = json.loads(benches["tau_airline"].backend.call(
        benches["tau_airline"].backend.new_environment(__import__("prefix_audit.benchmarks.tau.domain.copy_on_write",
                                                                 fromlist=["AccessMode"]).AccessMode()),
        "get_reservation_details", {"reservation_id": "Z7GOZK"})[1])
    assert (tau2["destination"], tau2["flight_type"]) == ("IAH", "round_trip")
    both = [_entry(0, airline, []), _entry(1, _good_traj(retail_case), _gold(retail_case))]
    with pytest.raises(TauResultsError, match="both airline and retail; pass --tau-v1-domain"):
        list(import_results(_write(tmp_path, both), benches.__getitem__))
    neither = [_entry(0, [_u("Hi."), _a("Hello."), _u("###STOP###")], [])]
    with pytest.raises(TauResultsError, match="neither airline nor retail"):
        list(import_results(_write(tmp_path, neither), benches.__getitem__))
    good, _ = _import(_write(tmp_path, neither), benches, v1_domain="airline")
    assert good[0].dataset == "tau_v1_airline"


def test_cli_import_v1_then_score(tmp_path, retail_case):
    from prefix_audit.cli import main

    path = _write(tmp_path, [_entry(0, _good_traj(retail_case), _gold(retail_case), reward=0.0),
                             {"task_id": 1, "reward": 0.0, "info": {"error": "boom"}, "traj": [], "trial": 0}])
    out = tmp_path / "rollouts.jsonl"
    assert main(["import", "tau", str(path), "-o", str(out), "--resources", "resources",
                 "--tau-v1-domain", "retail"]) == 0
    assert len(out.read_text().splitlines()) == 2
    assert main(["score", str(out), "-o", str(tmp_path / "scores"), "--resources", "resources"]) == 0
    [(task_id, recorded, y, issue)] = disagreements(tmp_path / "scores" / "episodes.parquet")
    assert (task_id, recorded, y) == ("0", 0, 1)
    assert issue.startswith("replay_diverged: call 3 (cancel_pending_order, turn 0): recorded “{}”")


def test_v1_datasets_are_import_only(benches):
    from prefix_audit.replay import registry

    assert set(V1_DATASETS) <= set(registry.dataset_names())
    assert not set(V1_DATASETS) & set(registry.workflow_datasets())


# --- embedded tasks and --tasks-from-results ---------------------------------------------------------


def _tau2_results(tau, task_id, evaluation_criteria, messages, reward):
    return {"info": {"environment_info": {"domain_name": "airline"}, "agent_info": {"llm": "m"}},
            "tasks": [{"id": task_id, "user_scenario": {"instructions": {"reason_for_call": "Look me up."}},
                       "evaluation_criteria": evaluation_criteria}],
            "simulations": [{"id": "s1", "task_id": task_id, "trial": 0, "termination_reason": "user_stop",
                             "reward_info": {"reward": reward}, "messages": messages}]}


def _tau2_doc(tau):
    user_id = "mei_brown_7075"
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": f"Please look me up, I am {user_id}."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "name": "get_user_details", "arguments": {"user_id": user_id}}]},
                {"role": "tool", "id": "a", "content": "{}", "error": False},
                {"role": "assistant", "content": "Found your profile; it says gold member."},
                {"role": "user", "content": "###STOP###"}]
    # task 5 as another task file defines it: a look-up as gold and a fact to communicate
    criteria = {"actions": [{"name": "get_user_details", "arguments": {"user_id": user_id}}],
                "communicate_info": ["gold member"], "reward_basis": ["DB", "COMMUNICATE"]}
    assert tau["tau_airline"].task("5").communicate_info != ("gold member",)
    return _tau2_results(tau, "5", criteria, messages, 1.0)


def test_installed_tasks_refuses_a_task_the_file_defines_otherwise(tau, tmp_path):
    from prefix_audit.benchmarks.tau.adapter.replay import TauBenchmark

    installed = {"tau_airline": TauBenchmark(tau["tau_airline"].data, "airline", installed_tasks=True)}
    [bad] = list(import_results(_write(tmp_path, _tau2_doc(tau), "results.json"), installed.__getitem__))
    assert isinstance(bad, BadLine) and "differs from task 5" in bad.reason and "--installed-tasks" in bad.reason
    [scored] = list(import_results(_write(tmp_path, _tau2_doc(tau), "results.json"), tau.__getitem__))
    assert not isinstance(scored, BadLine) and KEY in scored.rollout.meta  # by default: the file's definition


def test_tasks_from_results_round_trip_through_score(tau, tmp_path):
    from prefix_audit.cli import main

    path = _write(tmp_path, _tau2_doc(tau), "results.json")
    out = tmp_path / "rollouts.jsonl"
    assert main(["import", "tau", str(path), "-o", str(out), "--resources", "resources",
                 "--tasks-from-results"]) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    embedded = record["meta"][KEY]
    assert (embedded["format"], embedded["origin"], embedded["source"]) == ("tau2", "results file", str(path))
    assert embedded["definition"]["evaluation_criteria"]["communicate_info"] == ["gold member"]
    assert "tasks_sha256" not in record["meta"]
    assert main(["score", str(out), "-o", str(tmp_path / "scores"), "--resources", "resources"]) == 0
    import polars as pl

    [row] = pl.read_parquet(tmp_path / "scores" / "episodes.parquet").to_dicts()
    assert row["Y"] == 1 and "COMMUNICATE=1/1" in row["y_detail"]  # scored against the embedded task
    assert disagreements(tmp_path / "scores" / "episodes.parquet") == []


def test_changed_embedded_definition_is_unscorable(tau, tmp_path):
    bench = tau["tau_airline"]
    bench_from_results = type(bench)(bench.data, "airline", tasks_from_results=True)
    [item] = list(import_results(_write(tmp_path, _tau2_doc(tau), "results.json"),
                                 lambda name: bench_from_results))
    rollout = item.rollout
    assert replay(rollout, bench).Y == 1
    meta = json.loads(json.dumps(rollout.meta))
    meta[KEY]["definition"]["evaluation_criteria"]["communicate_info"] = ["platinum"]
    changed = Rollout(rollout.dataset, rollout.task_id, rollout.model, rollout.method, rollout.rollout_id,
                      rollout.turns, source=rollout.source, meta=meta)
    with pytest.raises(UnscorableRollout, match="sha256"):
        bench.open_session(changed)


# --- the shared real logs ---------------------------------------------------------------------------


def _judged_as_recorded(rollout, episode):
    recorded = set(rollout.meta["recorded_error_calls"]) | set(rollout.meta["recorded_unknown_action_calls"])
    return all((v.accepted is False) == (v.action.index in recorded) for v in episode.verdicts if v.action.call)


def test_shared_v1_file_recomputed_y_agrees_with_recorded_reward(benches):
    """Y = the recorded reward on ≥ 99 % of the real v1 retail file; where Y disagrees, the replay must
    have judged some call otherwise than v1 did (a tool difference)."""
    if not V1_FILE.is_file():
        pytest.skip(f"no τ-bench v1 log at {V1_FILE}")
    good, bad = _import(V1_FILE, benches)
    assert not bad and len(good) == len(json.loads(V1_FILE.read_text()))
    disagree = []
    for rollout in good:
        episode = replay(rollout, benches[rollout.dataset])
        if episode.Y != rollout.meta["recorded_reward"]:
            disagree.append((rollout, episode))
    assert (len(good) - len(disagree)) / len(good) >= 0.99
    for rollout, episode in disagree:
        assert not _judged_as_recorded(rollout, episode), rollout.task_id


@pytest.mark.parametrize("name", ["gemini-2.5-flash_airline_10tasks_2trials", "gpt-4.1_retail_40tasks_1trial"])
def test_real_tau2_results_on_tau3_task_data_with_tasks_from_results(tmp_path, name):
    """These runs used the packaged tasks; against τ³ v1.0.1's task files some tasks differ. With
    --installed-tasks those simulations are refused naming the option; by default (and with
    --tasks-from-results) every one imports and scores its recorded reward, with τ³ data given to
    score or not."""
    from prefix_audit.cli import main

    path = TAU2_LOGS / f"{name}.json"
    if not path.is_file() or not (TAU3 / "airline" / "tasks.json").is_file():
        pytest.skip("no real tau2 logs or τ³ task data under shared/")
    n = len(json.loads(path.read_text())["simulations"])
    base = ["--resources", "resources", "--tau-data", str(TAU3)]
    refused = tmp_path / "refused.jsonl"
    main(["import", "tau", str(path), "-o", str(refused), *base, "--installed-tasks"])
    quarantine = [json.loads(x) for x in (tmp_path / "refused.jsonl.quarantine.jsonl").read_text().splitlines()]
    assert quarantine and all("--installed-tasks" in q["reason"] for q in quarantine)
    for option in ([], ["--tasks-from-results"]):
        out = tmp_path / f"rollouts{len(option)}.jsonl"
        assert main(["import", "tau", str(path), "-o", str(out), *base, *option]) == 0
        assert len(out.read_text().splitlines()) == n
        for where, options in (("with", base), ("without", ["--resources", "resources"])):
            scores = tmp_path / f"{where}{len(option)}"
            assert main(["score", str(out), "-o", str(scores), *options]) == 0
            assert disagreements(scores / "episodes.parquet") == []


# --- ReAct files, unknown and unnamed tools, literal arguments, the log's own consistency ------------

REACT_FILE = SHARED / "fixtures" / "real-logs" / "tau-bench-v1" / "Qwen3-8B_react-strategy_retail_user-Qwen3-32B.json"


def _react(name, arguments, thought="I should act."):
    return {"role": "assistant", "content": f"Thought:\n{thought}\nAction:\n"
                                            + json.dumps({"name": name, "arguments": arguments})}


def _react_text(text):
    return {"role": "assistant", "content": text}


def _checked(rollout, benches):
    episode = replay(rollout, benches[rollout.dataset])
    return episode, check_record(episode)


def _replies(benches, case, calls):
    """v1's replies to ``calls`` in order on a fresh database (what a faithful log records)."""
    from prefix_audit.core.calls import structured_call

    bench = benches["tau_v1_retail"]
    rollout = Rollout("tau_v1_retail", "0", "m", "x", "r", (), source="t", meta={"user_turns": []})
    [probe], _ = _import_probe(benches, case)
    session = bench.open_session(probe)
    out = []
    for name, arguments in calls:
        outcome = session.execute(structured_call(name, arguments))
        out.append(outcome.logged if outcome.logged is not None
                   else (outcome.result if outcome.accepted else outcome.error))
    del rollout
    return out


def _import_probe(benches, case, tmp=None):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        return _import(_write(Path(d), [_entry(0, _good_traj(case), _gold(case))]), benches)


def _react_good(benches, case):
    """A ReAct trajectory that does the gold with v1's own replies: find the user, think, cancel, say so."""
    cancel = {"order_id": case["order_id"], "reason": "no longer needed"}
    calls = [("find_user_id_by_email", {"email": case["email"]}), ("think", {"thought": "Pending: cancel."}),
             ("cancel_pending_order", cancel)]
    replies = _replies(benches, case, calls)
    traj = [_u(f"Cancel my order {case['order_id']}, my email is {case['email']}.")]
    for (name, arguments), reply in zip(calls, replies):
        traj += [_react(name, arguments), _u(f"API output: {reply}")]
    return traj + [_react("respond", {"content": "Your order is cancelled; the refund is on its way."}),
                   _u("Thanks! ###STOP###")]


def test_react_file_reads_as_v1_reads_it(benches, tmp_path, retail_case):
    case = retail_case
    good = _react_good(benches, case)
    # text that is not JSON after the last Action: is v1's respond with that text; a Python-literal
    # action is such text too (v1 reads it with json.loads), so it is said to the user
    literal = [*good[:-2], _react_text("Thought: done.\nAction:\n{'name': 'respond', 'arguments': {'content': "
                                       "'Cancelled'}}"), _u("###STOP###")]
    plain = [*good[:-2], _react_text("<think>\n</think>\n\nYour order is cancelled."), _u("ok ###STOP###")]
    unknown = [good[0], _react("lookup_customer", {"email": case["email"]}),
               _u("API output: Unknown action lookup_customer"), _react("", {}), _u("API output: Unknown action "),
               *good[1:]]
    malformed = [good[0], _react_text('Action: ["find_user_id_by_email"]'), _u("API output: Unknown action x"),
                 *good[1:]]
    entries = [_entry(i, traj, _gold(case), outputs=outputs, reward=reward) for i, (traj, outputs, reward) in
               enumerate([(good, ["refund"], 1.0), (literal, [], 1.0), (plain, ["cancelled"], 1.0),
                          (unknown, [], 1.0), (malformed, [], 1.0)])]
    rollouts, bad = _import(_write(tmp_path, entries), benches)
    assert not bad and [r.meta["v1_agent_strategy"] for r in rollouts] == ["react"] * 5
    results = {r.task_id: _checked(r, benches) for r in rollouts}
    got = {k: (e.T, e.FED, e.Y, e.category) for k, (e, _) in results.items()}
    assert got == {"0": (4, 5, 1, None), "1": (4, 5, 1, None), "2": (4, 5, 1, None),
                   "3": (6, 1, 1, "schema"), "4": (5, 1, 1, "schema")}, got
    assert {k: c.log_issue for k, (_, c) in results.items() if k != "4"} == dict.fromkeys("0123")
    assert all(c.replay_agreement == 1.0 for k, (_, c) in results.items() if k != "4")
    # v1 stops a run on an action it cannot take; a log that answers one anyway ran something replay cannot
    assert results["4"][1].log_issue.startswith("replay_diverged: call 1 (no tool name, turn 0): the log shows it ran")
    by_id = {r.task_id: r for r in rollouts}
    assert by_id["1"].turns[0][-1].text.startswith("{'name': 'respond'")  # v1's respond content, verbatim
    assert by_id["1"].meta["react_respond_fallbacks"] == 1 and by_id["0"].meta["react_respond_fallbacks"] == 0
    assert by_id["2"].turns[0][-1].text == "<think>\n</think>\n\nYour order is cancelled."
    unknown_ep = results["3"][0]
    assert unknown_ep.verdicts[0].failures[0].code == "unknown_tool" and unknown_ep.unknown_tool_calls == 2
    assert [results["3"][1].statuses[j] for j in (1, 2)] == ["same", "same"]  # "Unknown action …" reproduced
    assert by_id["3"].meta["recorded_unknown_action_calls"] == [1, 2]
    assert results["4"][0].verdicts[0].failures[0].code == "unparseable_call"


def test_react_bad_entries_are_located_the_rest_imported(benches, tmp_path, retail_case):
    case = retail_case
    good = _react_good(benches, case)
    no_output = [good[0], good[1], _u("Sure, what else?"), *good[3:]]  # a tool action answered without API output
    truncated = good[:2]
    entries = [_entry(0, good, _gold(case)), _entry(1, no_output, _gold(case)), _entry(2, truncated, _gold(case)),
               _entry(3, [*good, _react_text("more")], _gold(case))]
    rollouts, bad = _import(_write(tmp_path, entries), benches)
    assert [r.task_id for r in rollouts] == ["0"] and [b.line for b in bad] == [2, 3, 4]
    assert "does not start 'API output:'" in bad[0].reason and "find_user_id_by_email" in bad[0].reason
    assert "has no API output" in bad[1].reason and "after the user's stop" in bad[2].reason


def test_a_role_that_is_no_string_is_an_unknown_role_where_it_stands(benches, tmp_path, retail_case):
    """A list or an object where a message's role should be: that entry's located quarantine, in both
    strategies' readings (it was a bare ``TypeError: unhashable type``)."""
    react = _react_good(benches, retail_case)
    tools = _good_traj(retail_case)
    entries = [_entry(0, [tools[0], {"role": ["assistant"], "content": "hi"}, *tools[1:]], _gold(retail_case)),
               _entry(1, [react[0], {"role": {"who": "user"}, "content": "x"}, *react[1:]], _gold(retail_case)),
               _entry(2, tools, _gold(retail_case))]
    rollouts, bad = _import(_write(tmp_path, entries), benches)
    assert [r.task_id for r in rollouts] == ["2"] and [b.line for b in bad] == [1, 2]
    assert "traj[2]: unknown role ['assistant']" in bad[0].reason and "TypeError" not in bad[0].reason
    assert "traj[2]: role {'who': 'user'} in a ReAct trajectory" in bad[1].reason


def test_each_entry_is_read_by_the_strategy_its_own_messages_show(benches, tmp_path, retail_case):
    """One entry that looks like ReAct never costs a tool-calling file (two real files were refused
    whole for it): each entry is read as its own messages show, and the file's reading says how many
    of each; tool output that answers no action is that entry's quarantine, with its reason."""
    react = _entry(0, _react_good(benches, retail_case), _gold(retail_case))
    tools = _entry(1, _good_traj(retail_case), _gold(retail_case))
    prose = _entry(2, [_u("Hi"), _a("Action: I will look into it."), _u("ok ###STOP###")], _gold(retail_case))
    rollouts, bad = _import(_write(tmp_path, [react, tools, tools | {"task_id": 3}, prose]), benches)
    assert not bad
    assert [r.meta["v1_agent_strategy"] for r in rollouts] == ["react", "tool-calling", "tool-calling", "tool-calling"]
    reading = rollouts[0].meta["reading"]
    assert ("per entry: 3 as the tool-calling agent wrote them (entries 2, 3, 4), 1 as the react agent wrote them "
            "(entries 1); 1 of them show neither strategy's messages, read as tool-calling") in reading, reading
    assert all(_checked(r, benches)[0].Y == 1 for r in rollouts[:3])
    outputs_only = _entry(0, [_u("Hi"), _a("Let me look."), _u("API output: {}"), _a("Done."), _u("###STOP###")],
                          _gold(retail_case))
    rollouts, [bad] = _import(_write(tmp_path, [outputs_only, tools]), benches)
    assert len(rollouts) == 1 and bad.line == 1 and "answers no action" in bad.reason


def test_unnamed_and_unknown_tools_are_schema_failures_not_quarantines(benches, tmp_path, retail_case):
    case = retail_case
    unnamed = [_u(f"My email is {case['email']}."), *_call("n1", "", {}, "Unknown action "),
               *_good_traj(case, "k")[1:]]
    extra = [_u(f"My email is {case['email']}."), *_call("e1", "get_item_details", {"item_id": "1"}, '{"id": "1"}'),
             _a("ok"), _u("###STOP###")]
    nameless = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "z1", "type": "function", "function": {"arguments": "{}"}}]}
    no_name = [_u("Hi."), nameless, {"role": "tool", "tool_call_id": "z1", "content": "Unknown action None"},
               _a("ok"), _u("###STOP###")]
    rollouts, bad = _import(_write(tmp_path, [_entry(0, unnamed, _gold(case)), _entry(1, extra, [], reward=1.0),
                                              _entry(2, no_name, [])]), benches)
    assert not bad and len(rollouts) == 3
    (e0, c0), (e1, c1), (e2, c2) = (_checked(r, benches) for r in rollouts)
    assert (e0.FED, e0.category, e0.Y) == (1, "schema", 1) and "tool_set_differs" not in (c0.log_issue or "")
    assert e0.verdicts[0].failures[0].code == "unknown_tool" and c0.statuses[1] == "same"  # "Unknown action "
    assert (e1.FED, e1.category) == (1, "schema") and c1.log_issue.startswith("tool_set_differs: the log answers "
                                                                                "get_item_details")
    assert (e2.FED, e2.category) == (1, "schema") and e2.verdicts[0].failures[0].code == "unparseable_call"


def test_python_literal_arguments_read_where_the_call_ran(benches, tmp_path, retail_case):
    case = retail_case

    def literal_call(call_id, name, text, reply):
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": reply}]

    ran = [_u(f"My email is {case['email']}."),
           *literal_call("l1", "find_user_id_by_email", f"{{'email': '{case['email']}'}}", case["user_id"]),
           _a("Found you."), _u("###STOP###")]
    refused = [_u(f"My email is {case['email']}."),
               *literal_call("l1", "find_user_id_by_email", f"{{'email': '{case['email']}'}}",
                             "Error: Expecting property name enclosed in double quotes"),
               _a("Sorry."), _u("###STOP###")]
    gold = [_gold(case)[0]]
    rollouts, bad = _import(_write(tmp_path, [_entry(0, ran, gold), _entry(1, refused, gold)]), benches)
    assert not bad
    (e0, c0), (e1, _) = (_checked(r, benches) for r in rollouts)
    assert rollouts[0].meta["literal_argument_calls"] == [1] and "literal_argument_calls" not in rollouts[1].meta
    assert e0.verdicts[0].valid and e0.verdicts[0].action.call.kwargs == {"email": case["email"]}
    assert c0.log_issue is None and c0.replay_agreement == 1.0
    assert e1.verdicts[0].failures[0].code == "unparseable_call"


def _writing_case(benches, case):
    """A tool-calling trajectory that looks the user up and says the refund is coming, but never
    cancels: the database differs from the gold's (which cancels)."""
    [lookup] = _replies(benches, case, [("find_user_id_by_email", {"email": case["email"]})])
    return [_u(f"Cancel my order {case['order_id']}, my email is {case['email']}."),
            *_call("w1", "find_user_id_by_email", {"email": case["email"]}, lookup),
            _a("Your refund is on its way."), _u("###STOP###")]


def test_legacy_reward_rule_from_the_file(benches, tmp_path, retail_case):
    case = retail_case
    traj = _writing_case(benches, case)
    legacy = _entry(0, traj, _gold(case), outputs=["refund"], reward=1.0)  # outputs only: scored 1
    legacy["info"]["reward_info"]["info"] = {"r_outputs": 1.0, "outputs": {"refund": True}}
    rollouts, bad = _import(_write(tmp_path, [legacy]), benches)
    assert not bad
    [(episode, check)] = [_checked(r, benches) for r in rollouts]
    assert (episode.Y, check_record(episode).log_issue.split(":")[0]) == (0, "legacy_reward_rule")
    assert rollouts[0].meta["v1_legacy_rule_y"] == 1 and "before 2024-11-10" in check.log_issue
    # the same entry in a file that shows the current rule (outputs found, still 0): no legacy cause
    current = _entry(1, traj, _gold(case), outputs=["refund"], reward=0.0)
    current["info"]["reward_info"]["info"] = {"r_outputs": 1.0, "outputs": {"refund": True}}
    rollouts, _ = _import(_write(tmp_path, [legacy, current]), benches)
    checks = [_checked(r, benches)[1].log_issue for r in rollouts]
    assert checks[0].startswith("y_differs") and checks[1] is None
    # where Y agrees the legacy cause is not said
    agreeing = _entry(0, _good_traj(case), _gold(case), outputs=["refund"], reward=1.0)
    rollouts, _ = _import(_write(tmp_path, [agreeing]), benches)
    assert rollouts[0].recorded.if_y_differs and rollouts[0].meta["v1_legacy_rule_y"] == 1
    assert "legacy_reward_rule" not in (_checked(rollouts[0], benches)[1].log_issue or "")


@pytest.mark.parametrize("era", ["province", "state"])
def test_vacuous_db_check_from_the_file(benches, tmp_path, retail_case, era):
    """v1's untouched database hashes otherwise in each version of its data (its users' addresses
    named the state `province` before 2025-01-16): either version's hash is a vacuous check."""
    from prefix_audit.benchmarks.tau.domain import v1

    case = retail_case
    untouched = v1.V1_DATA_ERAS[era].untouched_sha256["retail"]
    traj = _writing_case(benches, case)
    vacuous = _entry(0, traj, _gold(case), reward=1.0)  # the writing gold "hashed" to the untouched DB
    vacuous["info"]["reward_info"]["info"] = {"r_actions": 1.0, "gt_data_hash": untouched}
    read_only = _entry(1, traj, _gold(case)[:1], reward=1.0)
    read_only["info"]["reward_info"]["info"] = {"r_actions": 1.0, "gt_data_hash": untouched}
    honest = _entry(2, traj, _gold(case), reward=0.0)
    honest["info"]["reward_info"]["info"] = {"r_actions": 0.0, "gt_data_hash": "0" * 64}
    rollouts, bad = _import(_write(tmp_path, [vacuous, read_only, honest]), benches)
    assert not bad
    results = [_checked(r, benches) for r in rollouts]
    assert [e.Y for e, _ in results] == [0, 1, 0]
    assert results[0][1].log_issue.startswith(f"vacuous_db_check: the recorded gold DB hash ({untouched[:12]}…)")
    assert results[1][1].log_issue is None and results[2][1].log_issue is None


def test_records_round_trip_conditional_issues(benches, tmp_path, retail_case):
    from prefix_audit.core.records import dumps, rollout_from_json

    legacy = _entry(0, _writing_case(benches, retail_case), _gold(retail_case), outputs=["refund"], reward=1.0)
    [rollout], _ = _import(_write(tmp_path, [legacy]), benches)
    again = rollout_from_json(json.loads(dumps(rollout)))
    assert again.recorded == rollout.recorded and again.recorded.if_y_differs


def test_shared_react_file_every_entry_an_episode_agreeing(benches):
    """The real ReAct-strategy file: every entry an episode, Y = the recorded reward, nothing flagged."""
    if not REACT_FILE.is_file():
        pytest.skip(f"no τ-bench v1 ReAct log at {REACT_FILE}")
    good, bad = _import(REACT_FILE, benches)
    assert not bad and len(good) == len(json.loads(REACT_FILE.read_text()))
    for rollout in good:
        episode, check = _checked(rollout, benches)
        assert rollout.meta["v1_agent_strategy"] == "react" and episode.T and rollout.recorded.undecoded_count == 0
        assert episode.Y == rollout.recorded.y and check.log_issue is None, (rollout.task_id, check.log_issue)


def _user_reply(benches, case, key):
    """v1's get_user_details reply for the case's user, its address naming the state with ``key``."""
    [reply] = _replies(benches, case, [("get_user_details", {"user_id": case["user_id"]})])
    value = json.loads(reply)
    value["address"] = {(key if k == "state" else k): v for k, v in value["address"].items()}
    return json.dumps(value)


def test_a_run_on_v1s_older_data_is_replayed_and_scored_as_it_ran(benches, tmp_path, retail_case):
    """Before 2025-01-16 v1's users' addresses named the state `province`: a log of that data is
    replayed with its replies (no false divergence), and a run that data and run.py's timestamp date
    before 2024-11-10 is scored under the reward rule of then (a task with outputs on its outputs)."""
    case = retail_case
    lookup = [_u(f"I am {case['user_id']}."),
              *_call("p1", "get_user_details", {"user_id": case["user_id"]}, _user_reply(benches, case, "province"))]
    legacy = _entry(0, [*lookup, *_writing_case(benches, case)[1:]], _gold(case), outputs=["refund"], reward=1.0)
    legacy["info"]["reward_info"]["info"] = {"r_outputs": 1.0, "outputs": {"refund": True}}
    for stamp, rule in (("1102182420", "before 2024-11-10"), ("1201182420", "current")):
        path = _write(tmp_path, [legacy], f"tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_{stamp}.json")
        [rollout], bad = _import(path, benches)
        assert not bad and rollout.meta["v1_data_era"] == "province" and rollout.meta["v1_reward_rule"] == rule
        episode, check = _checked(rollout, benches)
        assert check.statuses[1] == "same" and check.replay_agreement == 1.0
        if rule == "current":
            assert (episode.Y, check.log_issue.split(":")[0]) == (0, "legacy_reward_rule")
        else:
            assert (episode.Y, check.log_issue) == (1, None) and "the current rule gives 0" in episode.y_detail
    state = _entry(0, [_u(f"I am {case['user_id']}."),
                       *_call("p1", "get_user_details", {"user_id": case["user_id"]},
                              _user_reply(benches, case, "state")), _a("ok"), _u("###STOP###")], _gold(case))
    [rollout], _ = _import(_write(tmp_path, [state], "x_1102182420.json"), benches)
    assert rollout.meta["v1_data_era"] == "state" and rollout.meta["v1_reward_rule"] == "current"
    assert _checked(rollout, benches)[1].statuses[1] == "same"


def test_v1_gives_each_modified_item_its_own_new_variant(benches, tmp_path, tau_data):
    """tau2 26.3's modify_pending_order_items gives every modified item the price and options of the
    last new item listed; v1 gives each its own. A v1 log is replayed on v1's behaviour."""
    db = tau_data.domains["retail"].raw_db

    def other(item, not_price=None):
        return next((v for v, x in db["products"][item["product_id"]]["variants"].items()
                     if v != item["item_id"] and x["available"] and x["price"] != not_price), None)

    order_id, order = next((k, o) for k, o in db["orders"].items() if o["status"] == "pending"
                           and len(o["items"]) >= 2 and o["items"][0]["product_id"] != o["items"][1]["product_id"]
                           and other(o["items"][0]) and other(o["items"][1]))
    first, second = order["items"][:2]
    new = [other(first), other(second)]
    payment = order["payment_history"][0]["payment_method_id"]
    change = {"order_id": order_id, "item_ids": [first["item_id"], second["item_id"]], "new_item_ids": new,
              "payment_method_id": payment}
    traj = [_u(f"Change the items of order {order_id}."),
            *_call("m1", "modify_pending_order_items", change, "{}"), _a("Done."), _u("###STOP###")]
    [rollout], _ = _import(_write(tmp_path, [_entry(0, traj, [{"name": "modify_pending_order_items",
                                                               "kwargs": change}])]), benches)
    episode = replay(rollout, benches[rollout.dataset])
    assert episode.Y == 1
    items = {i["item_id"]: i for i in json.loads(episode.verdicts[0].logged)["items"]}
    variants = [db["products"][x["product_id"]]["variants"][n] for x, n in zip((first, second), new)]
    assert [items[n]["price"] for n in new] == [v["price"] for v in variants]
    assert [items[n]["options"] for n in new] == [v["options"] for v in variants]


def test_v1_replies_answer_the_nearest_earlier_call_with_their_id(benches, tmp_path, retail_case):
    case = retail_case
    again = [_u(f"My email is {case['email']}."),
             *_call("same", "find_user_id_by_email", {"email": "nobody@example.com"}, "Error: user not found"),
             *_call("same", "find_user_id_by_email", {"email": case["email"]}, case["user_id"]),
             _a("Found you."), _u("###STOP###")]
    [rollout], bad = _import(_write(tmp_path, [_entry(0, again, [])]), benches)
    assert not bad
    got = [(c.kwargs["email"], r.content) for turn in rollout.turns for step in turn
           for c, r in zip(step.calls, step.results or ())]
    assert got == [("nobody@example.com", "Error: user not found"), (case["email"], case["user_id"])]
    assert _checked(rollout, benches)[1].replay_agreement == 1.0


def test_a_fourth_booking_takes_v1s_third_reservation_id_again(benches, tmp_path, tau_data):
    """v1's book_reservation gives the first of HATHAT/HATHAU/HATHAV not yet booked and, once all
    are, HATHAV again — replacing the reservation held under it; tau2's port refuses that fourth
    booking ("Too many reservations"). A v1 log of four bookings is replayed as v1 ran it: every
    recorded reply reproduced, the third reservation replaced by the fourth, the gold alike."""
    db = tau_data.domains["airline"].raw_db
    user_id, user = next((k, u) for k, u in sorted(db["users"].items())
                         if any(m["source"] == "credit_card" for m in u["payment_methods"].values()))
    card = next(k for k, m in sorted(user["payment_methods"].items()) if m["source"] == "credit_card")
    number, date, price = next((n, d, x["prices"]["economy"]) for n, f in sorted(db["flights"].items())
                               for d, x in sorted(f["dates"].items())
                               if x["status"] == "available" and x["available_seats"]["economy"] >= 1)
    flight = db["flights"][number]
    names = [("Ann", "Ito"), ("Bo", "Lee"), ("Cy", "Diaz"), ("Di", "Moss")]

    def booking(first, last):
        return {"user_id": user_id, "origin": flight["origin"], "destination": flight["destination"],
                "flight_type": "one_way", "cabin": "economy", "flights": [{"flight_number": number, "date": date}],
                "passengers": [{"first_name": first, "last_name": last, "dob": "1990-01-01"}],
                "payment_methods": [{"payment_id": card, "amount": price}],
                "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}

    def v1_reply(reservation_id, arguments):  # v1's reply: the reservation it stored, as json.dumps writes it
        leg = {"flight_number": number, "date": date, "price": price, "origin": flight["origin"],
               "destination": flight["destination"]}
        return json.dumps({"reservation_id": reservation_id, **{k: arguments[k] for k in (
            "user_id", "origin", "destination", "flight_type", "cabin")}, "flights": [leg],
            "passengers": arguments["passengers"], "payment_history": arguments["payment_methods"],
            "created_at": "2024-05-15T15:00:00", "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"})

    bookings = [booking(*name) for name in names]
    ids = ["HATHAT", "HATHAU", "HATHAV", "HATHAV"]
    replies = [v1_reply(rid, arguments) for rid, arguments in zip(ids, bookings)]
    traj = [_u(f"I am {user_id}; book four one-way trips, one per traveller.")]
    for k, (arguments, reply) in enumerate(zip(bookings, replies)):
        traj += _call(f"b{k}", "book_reservation", arguments, reply)
    traj += [*_call("g", "get_reservation_details", {"reservation_id": "HATHAV"}, replies[3]),
             _a("All four are booked."), _u("###STOP###")]
    gold = [{"name": "book_reservation", "kwargs": arguments} for arguments in bookings]
    [rollout], bad = _import(_write(tmp_path, [_entry(0, traj, gold)]), benches)
    assert not bad and rollout.dataset == "tau_v1_airline"
    episode, check = _checked(rollout, benches)
    calls = [v for v in episode.verdicts if not v.action.terminal]
    assert [v.accepted for v in calls] == [True] * 5
    assert [json.loads(v.result)["reservation_id"] for v in calls[:4]] == ids
    held = json.loads(calls[4].result)  # HATHAV now holds the fourth traveller, not the third
    assert held["passengers"][0]["first_name"] == "Di"
    assert (check.replay_agreement, check.log_issue, episode.Y) == (1.0, None, 1)


def test_a_call_written_as_text_is_a_message_to_the_user_as_in_v1(benches, tmp_path, retail_case):
    """v1's tool-calling agent runs a message's first tool call; a message without one — even text
    that looks like a call, as a thinking model's ``<tool_call>`` leaks — is said to the user and runs
    nothing. Read so: a text step, no undecoded step, its message listed in meta.call_like_messages."""
    case = retail_case
    leaked = '<tool_call>\n{"name": "cancel_pending_order", "arguments": {"order_id": "' + case["order_id"]
    traj = [_u(f"Cancel my order {case['order_id']}, my email is {case['email']}."),
            *_call("c1", "find_user_id_by_email", {"email": case["email"]}, case["user_id"]),
            _a(leaked), _u("Sorry, could you go on?"), _a("Nothing was changed."), _u("###STOP###")]
    [rollout], bad = _import(_write(tmp_path, [_entry(0, traj, _gold(case), reward=0.0)]), benches)
    assert not bad and rollout.recorded.undecoded_count == 0
    assert rollout.meta["call_like_messages"] == [4]  # traj[4]: the system prompt is traj[0]
    assert [(s.calls, s.text) for s in rollout.turns[0]] == [(rollout.turns[0][0].calls, None), ((), leaked)]
    episode, check = _checked(rollout, benches)
    assert [v.action.call.name for v in episode.verdicts if not v.action.terminal] == ["find_user_id_by_email"]
    assert (episode.Y, check.log_issue) == (0, None)


THINKING_FILE = (SHARED / "fixtures" / "real-logs-5" / "tau-bench-v1" /
                 "jibf__agent_hard_benchmark__tau-bench__results__tool-calling-airline-Qwen3-235B-A22B-Thinking-2507-"
                 "FP8-0.0_range_0--1_user-openai-gpt-4o-20240806-llm_0816084901.json.gz")


def test_shared_thinking_airline_file_replays_as_v1_ran_it(benches, tmp_path):
    """A thinking model's v1 airline run (four bookings in one entry, ``<tool_call>`` text left in
    messages, runs that raised on the model server): every entry read, each run that raised a rollout
    with its own error, every recorded reply reproduced, Y = the recorded reward, nothing flagged."""
    if not THINKING_FILE.is_file():
        pytest.skip(f"no τ-bench v1 log at {THINKING_FILE}")
    import gzip

    doc = json.loads(gzip.decompress(THINKING_FILE.read_bytes()))
    good, bad = _import(_write(tmp_path, doc, THINKING_FILE.name.removesuffix(".gz")), benches)
    assert not bad and len(good) == len(doc)
    raised = {str(e["task_id"]): e["info"]["error"].strip().splitlines()[-1] for e in doc if not e["traj"]}
    assert raised and {r.task_id: r.infra_error for r in good if r.infra_error is not None} == raised
    for rollout in good:
        episode, check = _checked(rollout, benches)
        assert rollout.recorded.undecoded_count == 0 and episode.Y == rollout.recorded.y, rollout.task_id
        assert check.log_issue is None and check.replay_agreement in (1.0, None), (rollout.task_id, check.log_issue)
