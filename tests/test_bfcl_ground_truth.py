"""Ground truth of all 800 BFCL multi-turn entries through the safe executor and the checker."""

from collections import Counter

import pytest
from conftest import SAMPLE_OR_WHOLE, swept

from prefix_audit.replay.checker import replay

# Gold data that is invalid by the benchmark's own declared rules (so FED <= T for these, honestly):
# entry 173 of every category passes ticket_id='ticket_001' where the declared type is integer
# (the environment accepts the string), and miss_func_49 calls `tail` in turn 1 although the entry
# withholds it until turn 3.
KNOWN_INVALID_GOLD = {
    "multi_turn_base_173": (5, "schema", "argument_type"),
    "multi_turn_long_context_173": (5, "schema", "argument_type"),
    "multi_turn_miss_func_173": (5, "schema", "argument_type"),
    "multi_turn_miss_param_173": (5, "schema", "argument_type"),
    "multi_turn_miss_func_49": (3, "schema", "tool_not_exposed"),
}


@pytest.mark.slow
@SAMPLE_OR_WHOLE
def test_all_800_ground_truth_entries(bfcl, whole):
    """Every entry; in the default run every eighth and the known invalid ones."""
    ids = bfcl.task_ids()
    assert len(ids) == 800
    assert Counter(bfcl.entry(i).category for i in ids) == {
        "base": 200, "miss_func": 200, "miss_param": 200, "long_context": 200}
    invalid = {}
    n_actions = 0
    for task_id in sorted(set(swept(ids, whole, 8)) | set(KNOWN_INVALID_GOLD)):
        ep = replay(bfcl.reference_rollout(task_id), bfcl)
        n_actions += ep.T
        assert ep.Y == 1, (task_id, ep.y_detail)
        if ep.FED != ep.T + 1:
            first = ep.first_failure.failures[0]
            invalid[task_id] = (ep.FED, ep.category, first.code)
    if whole:
        assert n_actions == 4625
    assert invalid == KNOWN_INVALID_GOLD


def test_replay_is_isolated_between_rollouts(bfcl):
    """Spending on a long-context credit card (which bfcl-eval's loader shares with the module)
    must not change the balance the next rollout sees."""
    from prefix_audit.core.calls import parse_call_string
    from prefix_audit.core.records import Rollout, Step

    balance = "get_credit_card_balance(access_token='abc123token', card_id='1234567812345678')"
    book = ("book_flight(access_token='abc123token', card_id='1234567812345678', travel_date='2026-12-15', "
            "travel_from='SFO', travel_to='LAX', travel_class='economy')")
    budget = "set_budget_limit(access_token='abc123token', budget_limit=100.0)"
    calls = tuple(parse_call_string(c) for c in (budget, balance, book, balance))
    rollout = Rollout("bfcl_v3", "multi_turn_long_context_150", "m", "probe", "r", ((Step(calls),),))
    first = replay(rollout, bfcl)
    second = replay(rollout, bfcl)
    _, before, booked, after = (v.result for v in first.verdicts)
    assert booked and "booking_id" in booked, booked
    assert before != after  # the booking really spent on the card
    assert [v.result for v in second.verdicts][1:] == [before, booked, after]


def test_sample_is_deterministic_and_stratified(bfcl_data):
    from prefix_audit.benchmarks.bfcl import sample_task_ids

    a = sample_task_ids(bfcl_data, 200, seed=20260329)
    assert a == sample_task_ids(bfcl_data, 200, seed=20260329)
    assert a != sample_task_ids(bfcl_data, 200, seed=1)
    assert len(set(a)) == 200
    assert Counter(bfcl_data.entries[i].category for i in a) == {
        "base": 50, "miss_func": 50, "miss_param": 50, "long_context": 50}


def test_held_out_function_is_exposed_only_from_its_turn(bfcl):
    entry = bfcl.entry("multi_turn_miss_func_0")
    assert entry.held_out == {"sort": 3}
    session = bfcl.open_session(bfcl.reference_rollout(entry.id))
    session.start_turn(2)
    assert "sort" not in session.exposed_tools() and session.known_tool("sort") is not None
    session.start_turn(3)
    assert "sort" in session.exposed_tools()


def test_model_and_ground_truth_instances_share_no_state(bfcl):
    """bfcl-eval's own checker lets both sides share the long-context card dicts; ours must not."""
    session = bfcl.open_session(bfcl.reference_rollout("multi_turn_long_context_150"))
    model_cards = session._model["TravelAPI"].credit_card_list
    gt_cards = session._gt["TravelAPI"].credit_card_list
    shared = [card for card in model_cards if card in gt_cards and model_cards[card] is gt_cards[card]]
    assert model_cards and not shared


def test_runaway_calls_are_cut_off_and_rejected(bfcl, monkeypatch):
    """A model can ask for absurd work (logarithm at three million digits); the call is stopped and
    scored as a rejected transition instead of hanging the job."""
    import time

    from prefix_audit.benchmarks.bfcl import loader
    from prefix_audit.core.calls import parse_call_string
    from prefix_audit.core.records import Rollout, Step

    monkeypatch.setattr(loader, "CALL_TIME_LIMIT_S", 0.5)
    task = next(t for t in bfcl.task_ids() if "MathAPI" in bfcl.entry(t).involved_classes)
    calls = (parse_call_string("logarithm(value=10.0, base=3.0, precision=3000000)"),)
    start = time.perf_counter()
    episode = replay(Rollout("bfcl_v3", task, "m", "x", "r", ((Step(calls),),)), bfcl)
    assert time.perf_counter() - start < 5
    assert episode.FED == 1 and episode.category == "state_consistency"
    assert "exceeded" in episode.verdicts[0].result
