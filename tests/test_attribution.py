"""Whose error a failing action is (docs/attribution.md): the rule on its own, and on τ retail replays.

Metamorphic: a value the agent changed, or a user sentence taken away, makes the origin the agent's;
property: FED <= FED_agent <= T + 1, both equal where no first failure is the user's or the benchmark's.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefix_audit.core.calls import structured_call
from prefix_audit.core.records import Rollout, Step
from prefix_audit.replay.attribution import AGENT, USER, StateIndex, attribute
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import Outcome, ToolSpec

LOOKUP = ToolSpec("find_user_id_by_email", {"type": "object"}, read_only=True, identifying_params=frozenset({"email"}))
STATE = {"users": {"ann_1": {"email": "ann@example.com", "zip": "10001", "name": {"first": "Ann", "last": "Lee"}},
                   "bob_2": {"email": "bob@example.com", "zip": "20002", "name": {"first": "Bob", "last": "Ray"}}}}
NOT_FOUND = Outcome(False, None, "Error: User not found", missing=True)


def _attribute(email: str, said: str, *, spec: ToolSpec = LOOKUP, outcome: Outcome = NOT_FOUND,
               categories: frozenset[str] = frozenset({"state_consistency"})):
    return attribute(spec, {"email": email}, categories, outcome, ("Hi.", said), StateIndex(STATE).holds)


def test_a_lookup_of_what_the_user_said_that_nothing_holds_is_the_users():
    found = _attribute("ann@exampel.com", "Sure, it's ann@exampel.com.")
    assert found.origin == USER
    assert "“Sure, it's ann@exampel.com.” (user message 2)" in found.evidence
    assert "“Error: User not found”" in found.evidence and "'ann@exampel.com'" in found.evidence


@pytest.mark.parametrize("case, kwargs, why", [
    ("another failure", {"categories": frozenset({"schema", "state_consistency"})}, "schema"),
    ("a write", {"spec": ToolSpec("cancel", {}, identifying_params=frozenset({"email"}))}, "may change the state"),
    ("another rejection", {"outcome": Outcome(False, None, "Error: too many")}, "another reason"),
    ("nothing identifying", {"spec": ToolSpec("find", {}, read_only=True)}, "no argument of the call carries"),
])
def test_every_condition_is_needed(case, kwargs, why):
    found = _attribute("ann@exampel.com", "Sure, it's ann@exampel.com.", **kwargs)
    assert found.origin == AGENT and why in found.evidence, case


def test_a_value_the_agent_changed_or_the_user_never_said_is_the_agents():
    assert _attribute("ann@exampel.co", "Sure, it's ann@exampel.com.").origin == AGENT  # one character less
    assert _attribute("ann@exampel.com", "Sure, it's my usual email.").origin == AGENT  # the sentence taken away
    assert _attribute("nn@exampel.com", "Sure, it's ann@exampel.com.").origin == AGENT  # part of a word only


def test_a_value_some_object_holds_is_the_agents_to_find():
    found = _attribute("Ann@Example.com", "Sure, it's Ann@Example.com.")  # held, compared case-folded
    assert found.origin == AGENT and "holds 'Ann@Example.com'" in found.evidence
    # a session whose state cannot be searched (ReplaySession.holds' default answers None)
    unsearched = attribute(LOOKUP, {"email": "x@y.z"}, {"state_consistency"}, NOT_FOUND, ("x@y.z",), lambda values: None)
    assert unsearched.origin == AGENT and unsearched.evidence == "the benchmark's state cannot be searched for the value"


def test_state_index_holds_values_together_only_within_one_record():
    index = StateIndex(STATE)
    assert index.holds(["Ann", "Lee", "10001"])
    assert index.holds(["ann_1"])  # a record's key is part of it
    assert not index.holds(["Ann", "Ray"])  # each held, by different records
    assert not index.holds(["nobody@example.com"])
    assert index.holds([object()])  # what cannot be compared is never excused


# --- on τ retail's replay ------------------------------------------------------------------------------

EMAIL = "daikisanchez1479@example.com"  # task 36's scenario email, which no retail user has


def _rollout(bench, calls, user_turns, task_id="36"):
    """One call per step, each turn closed by a reply to the user (the last one is the terminal action)."""
    turns = tuple(tuple(Step((structured_call(name, args, f"c{t}_{i}"),)) for i, (name, args) in enumerate(turn))
                  + (Step((), "Done."),) for t, turn in enumerate(calls))
    return Rollout(bench.dataset, task_id, "m", "test", f"r{len(turns)}", turns, source="test",
                   meta={"user_turns": list(user_turns), "termination_reason": "user_stop"})


def _lookup(email):
    return ("find_user_id_by_email", {"email": email})


def test_task_36_the_scripted_wrong_email_is_the_users(tau):
    bench = tau["tau_retail"]
    users = bench.backend.template_db.users
    user_id = next(u for u, rec in users.items() if rec.email == "daiki.sanchez1479@example.com")
    zip_code = bench.backend.template_db.users[user_id].address.zip
    turns = ["I want to return an item.", f"Sure, it's {EMAIL}.", f"Daiki Sanchez, zip {zip_code}."]
    calls = [[], [_lookup(EMAIL)], [("find_user_id_by_name_zip",
                                     {"first_name": "Daiki", "last_name": "Sanchez", "zip": zip_code}),
                                    ("get_user_details", {"user_id": user_id})]]
    ep = replay(_rollout(bench, calls, turns), bench)
    first = ep.first_failure
    assert (ep.FED, first.attribution.origin) == (1, USER)
    assert f"“Sure, it's {EMAIL}.” (user message 2)" in first.attribution.evidence
    assert ep.FED_agent == ep.T + 1 and ep.agent_failure is None
    later = ep.verdicts[ep.FED:]
    assert all(v.valid is None for v in later)  # the paper's prefix replay stopped at FED
    assert all(not v.failures for v in later)

    # Metamorphic: one character of the agent's value changed, or the user's sentence taken away.
    typo = [[], [_lookup(EMAIL.replace("1479", "1497"))], calls[2]]
    ep = replay(_rollout(bench, typo, turns), bench)
    assert ep.first_failure.attribution.origin == AGENT and ep.FED_agent == ep.FED == 1
    ep = replay(_rollout(bench, calls, [turns[0], "Sure, it's my usual email.", turns[2]]), bench)
    assert ep.first_failure.attribution.origin == AGENT and ep.FED_agent == ep.FED == 1


def test_after_the_users_failure_the_agents_own_first_failure_is_found(tau):
    bench = tau["tau_retail"]
    turns = ["Hello.", f"Sure, it's {EMAIL}."]
    calls = [[], [_lookup(EMAIL), ("get_order_details", {"order_id": "#W0000000"}), _lookup("x@example.com")]]
    ep = replay(_rollout(bench, calls, turns), bench)
    assert (ep.FED, ep.FED_agent) == (1, 2)
    agent = ep.agent_failure
    assert agent.valid is None and agent.attribution.origin == AGENT
    assert [f.code for f in agent.failures] == ["missing_reference", "rejected_transition"]
    assert ep.verdicts[2].failures == () and ep.verdicts[2].attribution is None  # not judged after FED_agent


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(["said", "typo", "known", "unknown_order", "text"]), max_size=4),
                min_size=1, max_size=3),
       st.lists(st.booleans(), min_size=3, max_size=3))
def test_fed_never_exceeds_fed_agent(tau, plan, says):
    bench = tau["tau_retail"]
    pick = {"said": _lookup(EMAIL), "typo": _lookup(EMAIL[1:]), "known": _lookup("daiki.sanchez1479@example.com"),
            "unknown_order": ("get_order_details", {"order_id": "#W9999999"})}
    turns = [f"My email is {EMAIL}." if say else "Hello." for say in says][:len(plan)]
    calls = [[pick[c] for c in turn if c != "text"] for turn in plan]
    ep = replay(_rollout(bench, calls, turns), bench)
    assert ep.FED <= ep.FED_agent <= ep.T + 1
    first = ep.first_failure
    if first is None or first.attribution.origin == AGENT:
        assert ep.FED_agent == ep.FED
    else:
        assert first.attribution.origin == USER and ep.FED_agent > ep.FED
    for v in ep.verdicts:
        assert (v.attribution is not None) == bool(v.failures)


# --- where the task's own gold fails the same way --------------------------------------------------------

def _gold_with_lookups(bench, task_id, lookups, change=None):
    """Task ``task_id``'s gold in one turn with ``lookups`` first (so its ids are the agent's to use), the
    user's first reference message, and ``change`` applied to the gold's calls' arguments."""
    reference = bench.reference_rollout(task_id)
    calls = [(a.name, dict(a.arguments)) for a in bench.task(task_id).gold]
    if change:
        calls = [(name, change(name, args)) for name, args in calls]
    turns = reference.meta["user_turns"]
    return _rollout(bench, [lookups + calls], turns[:1], task_id)


def test_the_golds_own_dead_end_is_the_benchmarks(tau):
    """τ retail 105: the gold's only call, an exchange, fails (insufficient gift card balance) and the gold
    ends there; an agent making the same exchange fails the same way."""
    bench = tau["tau_retail"]
    looked_up = [("get_order_details", {"order_id": "#W4316152"})]
    user = bench.backend.template_db.orders["#W4316152"].user_id
    looked_up.append(("get_user_details", {"user_id": user}))
    looked_up.append(("get_product_details", {"product_id": bench.backend.template_db.orders["#W4316152"]
                                              .items[0].product_id}))
    ep = replay(_gold_with_lookups(bench, "105", looked_up), bench)
    first = ep.first_failure
    assert first.action.call.name == "exchange_delivered_order_items"
    assert [f.code for f in first.failures] == ["rejected_transition"]
    assert first.attribution.origin == "benchmark"
    assert "benchmark health: gold_fails" in first.attribution.evidence
    assert "Insufficient gift card balance" in first.attribution.evidence
    # Metamorphic: the same exchange to another new item is a call the gold never makes.
    other = replay(_gold_with_lookups(bench, "105", looked_up, lambda name, args: {
        **args, "new_item_ids": list(reversed(args["new_item_ids"]))} if name.startswith("exchange") else args), bench)
    assert other.first_failure.attribution.origin == AGENT


def test_a_scripted_failure_the_gold_goes_on_from_is_the_users(tau):
    """τ retail 12: the user wants the refund on PayPal; the gold's return to PayPal fails, then it hands
    the user over to a human. An agent making the same return fell into the scripted trap."""
    bench = tau["tau_retail"]
    reference = bench.reference_rollout("12")
    ep = replay(reference, bench)
    rejected = next(v for v in ep.verdicts if v.accepted is False)
    assert rejected.action.call.name == "return_delivered_order_items"
    assert rejected.attribution.origin == USER
    assert "the task's scenario scripts this failure" in rejected.attribution.evidence
    assert "the gold recovers with action 6: transfer_to_human_agents" in rejected.attribution.evidence


def test_a_function_the_task_withholds_when_its_gold_needs_it_is_the_benchmarks(bfcl):
    """BFCL miss_func_49: the ground truth calls tail in turn 2 (counting from 1), BFCL gives it back only
    later. An agent calling tail there fails as the gold does, whatever its arguments."""
    reference = bfcl.reference_rollout("multi_turn_miss_func_49")
    tail_turn = next(t for t, turn in enumerate(reference.turns)
                     if any(c.name == "tail" for step in turn for c in step.calls))

    def other_lines(call):
        return structured_call(call.name, {**call.kwargs, "lines": 3} if call.name == "tail" else call.kwargs,
                               call.call_id)

    turns = list(reference.turns)
    turns[tail_turn] = tuple(Step(tuple(map(other_lines, step.calls)), step.text) for step in turns[tail_turn])
    agent = Rollout(reference.dataset, reference.task_id, "m", "test", "r", tuple(turns),
                    source="test", meta=reference.meta)
    ep = replay(agent, bfcl)
    first = ep.first_failure
    assert (first.action.call.name, primary_code(first)) == ("tail", "tool_not_exposed")
    assert first.attribution.origin == "benchmark"
    assert "withholds tail" in first.attribution.evidence and "gold_not_prefix_executable" in first.attribution.evidence
    assert ep.FED < ep.FED_agent


def primary_code(verdict):
    return verdict.failures[0].code


def test_bfcl_look_ups_are_the_methods_its_ground_truth_never_saw_change_state(bfcl):
    """Differential against bfcl-eval's own classes: every ground-truth call of a method listed read-only
    leaves the public attributes BFCL's checker compares as they were, and every other method the ground
    truth calls changes them at least once."""
    import pickle

    from prefix_audit.benchmarks.bfcl.loader import invoke, method_table, public_state
    from prefix_audit.benchmarks.bfcl.semantics import READ_ONLY_METHODS

    changed, called = set(), set()
    for task_id in bfcl.task_ids():
        entry = bfcl.entry(task_id)
        instances = bfcl.loader_of(entry).instantiate(entry)
        table = method_table(instances)
        for call in (c for turn in bfcl.ground_truth_calls(entry) for c in turn):
            key = (table[call.name][0], call.name)
            before = pickle.dumps({k: public_state(v) for k, v in instances.items()})
            invoke(table, call)
            called.add(key)
            if pickle.dumps({k: public_state(v) for k, v in instances.items()}) != before:
                changed.add(key)
    listed = {(cls, name) for cls, names in READ_ONLY_METHODS.items() for name in names}
    assert listed <= called and not listed & changed
    assert called - listed == changed


def _bfcl_with_first(bfcl, task_id, call):
    """The entry's ground truth with ``call`` made first."""
    reference = bfcl.reference_rollout(task_id)
    first = (Step((call,)),) + reference.turns[0]
    return replay(Rollout(reference.dataset, reference.task_id, "m", "test", "r", (first, *reference.turns[1:]),
                          source="test", meta=reference.meta), bfcl)


def test_a_bfcl_look_up_of_what_the_question_names_stays_the_agents(bfcl):
    """A BFCL question names what to act on, create or ask about, never the user's own records: multi_turn_base_12
    asks to create 'summary.txt' in 'Documents'; an agent that reads it first fails, and that is its own order of
    work (read by hand on the shared logs: looking up what it was asked to create, a relation read as a name)."""
    ep = _bfcl_with_first(bfcl, "multi_turn_base_12", structured_call("cat", {"file_name": "summary.txt"}, "c0"))
    first = ep.first_failure
    assert (ep.FED, first.attribution.origin) == (1, AGENT)
    assert first.attribution.evidence == "no argument of the call carries the user's own information"
    assert ep.FED_agent == ep.FED


# --- a value given in other words ----------------------------------------------------------------------

def _availability(*messages, id_prefixes=()):
    from prefix_audit.replay.checker import Availability
    from prefix_audit.replay.contract import TaskFacts

    avail = Availability(TaskFacts(frozenset(), tuple(messages), {}, id_prefixes=id_prefixes))
    return avail


@pytest.mark.parametrize("value, said, reading", [
    ("#W4284542", "Hi, I'd like to check on the arrival date for my order W4284542.", "an id's prefix"),
    ("Suite 641", "Please change the suite number to 641.", "a unit or label word"),
    ("2001-04-12", "Kevin Smith, whose date of birth is April 12, 2001.", "a date in another notation"),
    ("2001-04-12", "born 12 April 2001", "a date in another notation"),
    ("2001-04-12", "DOB 04/12/2001", "a date in another notation"),
    (2, "I want to return two of them.", "a number in words"),
    ("Sophia Silva", "yes, SOPHIA  silva is the passenger", "case and spacing"),
])
def test_a_value_given_in_other_words_counts_as_given_and_says_how(value, said, reading):
    avail = _availability("Hello.", said, id_prefixes=("#",))
    avail.reveal_turn(0)
    assert avail.given(value) is None  # the agent produced it before the user said it: still not given
    avail.reveal_turn(1)
    assert reading in avail.given(value)


@pytest.mark.parametrize("value, said", [
    ("Suite 641", "suite 12, and later on another topic entirely: order 641"),  # the number far from its label
    ("2001-04-12", "April 13, 2001"),
    ("QUASAR", "the symbol quasar"),  # one token keeps its case: an id or a symbol
])
def test_other_words_that_change_the_meaning_do_not_count(value, said):
    avail = _availability(said)
    avail.reveal_turn(0)
    assert avail.given(value) is None


def test_an_id_is_given_only_verbatim_or_without_its_prefix():
    avail = _availability("the order w4284542, the symbol quasar, order one", id_prefixes=("#",))
    avail.reveal_turn(0)
    assert avail.given("#W4284542", reference=True) is None  # its case changed
    assert avail.given("QUASAR", reference=True) is None
    assert avail.given(1, reference=True) is None  # an id is not a number in words
    assert avail.given("#w4284542", reference=True).startswith("an id's prefix")


def test_tau_order_id_after_the_user_left_its_hash_out_is_executable(tau):
    """τ-bench v1 retail task 57 (shared real logs): "my order W4284542", then get_order_details('#W4284542')."""
    bench = tau["tau_retail"]
    said = "Hi, I'd like to check on the arrival date for my order W4284542."
    ep = replay(_rollout(bench, [[("get_order_details", {"order_id": "#W4284542"})]], [said], "57"), bench)
    assert ep.FED == ep.T + 1
    assert ep.verdicts[0].given_as == ("get_order_details.order_id='#W4284542': an id's prefix the benchmark's "
                                       "records carry ('#')",)
    early = replay(_rollout(bench, [[("get_order_details", {"order_id": "#W4284542"})], []], ["Hi.", said], "57"),
                   bench)
    assert early.FED == 1 and early.category == "dependency"


# --- the agent's own statistics ------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 7), st.integers(0, 7), st.integers(0, 1)),
                min_size=2, max_size=24))
def test_statistics_on_fed_agent_keep_the_identities_and_never_fall_below_the_papers(rows):
    """Any FED <= FED_agent <= T + 1: the statistics stage checks Propositions 1-3 on FED_agent as on FED (it
    raises on a violation), and PEC@k, TER and mean FED on FED_agent are at least the paper's."""
    import polars as pl

    from prefix_audit.statistics.settings import StatsSettings
    from prefix_audit.statistics.stats import compute_stats

    episodes = []
    for n, (t, a, b, y) in enumerate(rows):
        fed = 1 + a % (t + 1)
        fed_agent = fed + b % (t + 2 - fed)
        episodes.append({"dataset": "d", "model": "m", "method": "x", "task_id": str(n % 5), "T": t, "FED": fed,
                         "FED_agent": fed_agent, "Y": y, "origin": None if fed > t else ("agent" if fed == fed_agent
                                                                                          else "user")})
    frame = pl.DataFrame(episodes, schema={"dataset": pl.Utf8, "model": pl.Utf8, "method": pl.Utf8,
                                           "task_id": pl.Utf8, "T": pl.Int32, "FED": pl.Int32, "FED_agent": pl.Int32,
                                           "Y": pl.Int8, "origin": pl.Utf8})
    stats = compute_stats(frame, StatsSettings(resamples=20, seed=0))
    both = stats.filter(pl.col("k").is_null() | (pl.col("metric") == "pec")).pivot(
        "attribution", index=["metric", "k"], values="estimate")
    for metric, k, paper, agent in both.filter(pl.col("metric").is_in(["pec", "ter", "mean_fed"])).iter_rows():
        assert agent >= paper - 1e-12, (metric, k)
    counts = {r["metric"]: r["successes"] for r in stats.filter(pl.col("metric").str.starts_with("first_failure_"))
              .iter_rows(named=True)}
    failed = sum(e["FED"] <= e["T"] for e in episodes)
    assert counts["first_failure_agent"] + counts["first_failure_user"] == failed
