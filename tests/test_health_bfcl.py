"""Benchmark health of BFCL multi-turn entries (docs/definitions.md#health): each code found, and not found, on entries
built by hand and on the pinned releases' own; the trajectories a finding rests on scored by
bfcl-eval's own checker alike; the same findings every time."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import zlib
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if __name__ == "__main__":  # the child of the v3-era differential test (see _differential_in_child)
    sys.path.insert(0, str(TESTS))

from bfcl_reference import BfclReference  # noqa: E402
from conftest import RESOURCES, SAMPLE_OR_WHOLE, swept  # noqa: E402

from prefix_audit.benchmarks.bfcl import BfclBenchmark, load_data  # noqa: E402
from prefix_audit.benchmarks.bfcl.data import DEFAULT_PIN, V3_ERA_PIN, Entry  # noqa: E402
from prefix_audit.benchmarks.bfcl.health import BfclProbe  # noqa: E402
from prefix_audit.benchmarks.bfcl.state_diff import changes, state_tree  # noqa: E402
from prefix_audit.core.records import Rollout, without_action  # noqa: E402
from prefix_audit.replay.checker import replay  # noqa: E402

NEW, OLD = DEFAULT_PIN.version, V3_ERA_PIN.version


@pytest.fixture(scope="module")
def old_data():
    return load_data(RESOURCES, V3_ERA_PIN)


@pytest.fixture(scope="module")
def both(bfcl_data, old_data) -> BfclBenchmark:
    """The benchmark as ``prefix-audit tasks bfcl_v3`` opens it: the pinned data and the v3 era's."""
    return BfclBenchmark(bfcl_data, releases={OLD: lambda: old_data})


@pytest.fixture(scope="module")
def made(bfcl_data, old_data):
    """A two-release benchmark on entries built by hand: ``made(new=[...], old=[...])``."""

    def build(new: list[Entry] = (), old: list[Entry] = ()) -> BfclBenchmark:
        new_data, old_copy = copy.copy(bfcl_data), copy.copy(old_data)
        new_data.entries = {e.id: e for e in new}
        old_copy.entries = {e.id: e for e in old}
        return BfclBenchmark(new_data, releases={OLD: lambda: old_copy})

    return build


def _entry(entry_id: str, questions: list[str], ground_truth: list[list[str]], config: dict,
           release: str = NEW, held_out: dict | None = None, classes: tuple[str, ...] | None = None) -> Entry:
    return Entry(entry_id, "base", tuple(((({"role": "user", "content": q},) if q else ())) for q in questions),
                 config, classes or tuple(config), held_out or {}, tuple(tuple(t) for t in ground_truth), release)


def _files(**files: str) -> dict:
    return {"GorillaFileSystem": {"root": {"alex": {"type": "directory", "contents": {
        name: {"type": "file", "content": content} for name, content in files.items()}}}}}


TWITTER = {"TwitterAPI": {"username": "tech_guru", "password": "pw", "authenticated": True, "tweets": {},
                          "comments": {}, "retweets": {}, "following_list": [], "tweet_counter": 0}}
MATH = {"MathAPI": {}}


def _codes(bench: BfclBenchmark, entry: Entry) -> Counter:
    return Counter(f.code for f in bench.task_health(entry.id, entry.release))


def _found(bench: BfclBenchmark, entry: Entry, code: str) -> list[str]:
    return [f.evidence for f in bench.task_health(entry.id, entry.release) if f.code == code]


# --- what a call changes ------------------------------------------------------------------------------

def test_a_write_is_what_a_call_changes_in_the_state_tree_and_a_pointer_moves_only_when_it_points_elsewhere(made):
    entry = _entry("health_tree_1", ["go"], [["ls()"]], _files(**{"a.txt": "x"}))
    bench = made([entry])
    fs = bench.loader_of(entry).instantiate(entry)["GorillaFileSystem"]
    before = state_tree({"GorillaFileSystem": fs})
    assert before["GorillaFileSystem._current_dir"] == "@GorillaFileSystem.root"
    fs.touch(file_name="b.txt")  # the current directory's contents change, it does not move
    after = state_tree({"GorillaFileSystem": fs})
    (touched,) = changes(before, after)
    assert touched.path == "GorillaFileSystem.root.contents['b.txt']" and touched.before is None
    assert touched.public and "added (.name='b.txt', .content='')" in touched.describe(after)
    fs.mkdir(dir_name="d")
    fs.cd(folder="d")
    moved = changes(after, state_tree({"GorillaFileSystem": fs}))
    assert [c.path for c in moved] == ["GorillaFileSystem._current_dir", "GorillaFileSystem.root.contents['d']"]
    assert moved[0].after == "@GorillaFileSystem.root.contents['d']" and not moved[0].public


# --- each code, found and not ---------------------------------------------------------------------

def test_gold_fails_and_gold_no_effect(made):
    fails = _entry("health_fails_1", ["go to nowhere"], [["cd(folder='nowhere')"]], _files(**{"a.txt": "x"}))
    reads = _entry("health_reads_1", ["list"], [["ls()"]], _files(**{"a.txt": "x"}))
    writes = _entry("health_writes_1", ["make b"], [["touch(file_name='b.txt')"]], _files(**{"a.txt": "x"}))
    bench = made([fails, reads, writes])
    (evidence,) = _found(bench, fails, "gold_fails")
    assert "cd(folder='nowhere')" in evidence and "No such" in evidence
    assert _found(bench, reads, "gold_no_effect") and not _found(bench, reads, "gold_fails")
    assert not _found(bench, writes, "gold_no_effect") and not _found(bench, writes, "gold_fails")


def test_passes_doing_nothing(made):
    silent = _entry("health_silent_1", ["just chat", "again"], [[], []], TWITTER)
    busy = _entry("health_busy_1", ["post hi"], [["post_tweet(content='hi there')"]], TWITTER)
    bench = made([silent, busy])
    (evidence,) = _found(bench, silent, "passes_doing_nothing")
    assert "answers each of the 2 turns without a call scores 1" in evidence
    assert not _found(bench, busy, "passes_doing_nothing")


def test_a_withheld_function_the_gold_needs_is_a_defect(made):
    # the ground truth calls tail in the turn before the missed function arrives: BFCL runs it, but an agent
    # is not given it, and without it the turn's results differ
    early = _entry("health_early_1", ["last lines of a.txt", ""], [["tail(file_name='a.txt')"], []],
                   _files(**{"a.txt": "x\ny"}), held_out={"tail": 1})
    timely = _entry("health_timely_1", ["last lines of a.txt", ""], [[], ["tail(file_name='a.txt')"]],
                    _files(**{"a.txt": "x\ny"}), held_out={"tail": 1})
    bench = made([early, timely])
    (found,) = [f for f in bench.task_health(early.id, bench.health_releases()[0])
                if f.code == "gold_not_prefix_executable"]
    assert "tool_not_exposed" in found.evidence and "scores 0" in found.evidence
    assert (found.kind, found.effect) == ("defect", "scored")
    assert not _found(bench, timely, "gold_not_prefix_executable")


def _touch_then_echo(release: str) -> Entry:
    return _entry("health_echo_1", ["make a folder d", "make notes.txt saying hello"],
                  [["mkdir(dir_name='d')"],
                   ["touch(file_name='notes.txt')", "echo(content='hello', file_name='notes.txt')"]],
                  _files(**{"a.txt": "x"}), release=release)


def test_a_write_a_later_call_makes_again_is_superseded_not_unchecked(made):
    """2025.9.29's echo creates a missing file (2026.3.23's refuses): there the touch before it is not
    needed — the ground truth without it leaves every attribute as the whole ground truth does
    (BfclProbe.final_state) — so BFCL's checker passing it says nothing against the task."""
    bench = made([_touch_then_echo(NEW)], [_touch_then_echo(OLD)])
    probe = BfclProbe(bench, _touch_then_echo(OLD))
    gold = replay(probe.gold(), bench)
    (touch,) = [c for c in probe.without_required(gold) if "touch(" in c.label]
    assert replay(touch.rollout, bench).Y == 1 and probe.final_state(touch.rollout) == probe.final_state(gold.rollout)
    assert "without it, turn 2, action 3: echo(content='hello', file_name='notes.txt') makes " in touch.cause
    assert not _found(bench, _touch_then_echo(OLD), "unchecked_required_action")
    assert not _found(bench, _touch_then_echo(NEW), "unchecked_required_action")


def test_unchecked_required_action_where_the_write_changes_only_private_attributes(made):
    """A round trip through a folder: without the last ``cd`` the file system ends in another current
    directory (a private attribute BFCL's state check does not compare), and the result it would have
    given is already among the earlier results (BFCL's response check compares all results so far)."""
    config = {"GorillaFileSystem": {"root": {"alex": {"type": "directory", "contents": {
        "d": {"type": "directory", "contents": {}}}}}}}
    round_trip = _entry("health_cd_1", ["go into d", "go up and back into d"],
                        [["cd(folder='d')"], ["cd(folder='..')", "cd(folder='d')"]], config)
    one_way = _entry("health_cd_2", ["go into d", "list it"], [["cd(folder='d')"], ["ls()"]], config)
    bench = made([round_trip, one_way])
    (evidence,) = _found(bench, round_trip, "unchecked_required_action")
    assert evidence.startswith("the ground truth without turn 2, action 3: cd(folder='d') (a write: "
                               "GorillaFileSystem._current_dir")
    assert "it changes only private attributes, which BFCL's state check does not compare" in evidence
    assert "its result '{\"current_working_directory\": \"d\"}' is also the result of turn 1, action 1" in evidence
    assert not _found(bench, one_way, "unchecked_required_action")


def test_answer_unreachable_when_the_gold_reorders_what_the_environment_returned(made):
    """The one-line sort of multi_turn_base_4, built small: sorting a one-line file returns it as it
    is, the ground truth posts its words in another order."""
    questions = ["sort report.txt", "post the sorted result"]
    config = {**_files(**{"report.txt": "beta alpha gamma"}), **TWITTER}
    reordered = _entry("health_sort_1", questions, [["sort(file_name='report.txt')"],
                                                    ["post_tweet(content='alpha beta gamma')"]], config)
    faithful = _entry("health_sort_2", questions, [["sort(file_name='report.txt')"],
                                                   ["post_tweet(content='beta alpha gamma')"]], config)
    composed = _entry("health_sort_3", questions, [["sort(file_name='report.txt')"],
                                                   ["post_tweet(content='Sorted it for you')"]], config)
    bench = made([reordered, faithful, composed])
    (evidence,) = _found(bench, reordered, "answer_unreachable")
    assert evidence.startswith("turn 2, action 2: post_tweet(content='alpha beta gamma') writes "
                               "content='alpha beta gamma', which no source holds")
    assert ("the result of turn 1, action 1: sort(file_name='report.txt'), at ['sorted_content'] holds "
            "'beta alpha gamma' — the same words in another order") in evidence
    assert "instead scores 0 (multi_turn:instance_state_mismatch TwitterAPI (turn 2))" in evidence
    assert not _found(bench, faithful, "answer_unreachable")
    assert not _found(bench, composed, "answer_unreachable")  # words of its own: not a transcription


@pytest.mark.parametrize(("quoted", "written", "found"), [
    ("I am on my way", "I am on my way.", True),  # punctuation only
    ("meet me at notes.md", "meet me at note.md", True),  # a character left out
    ("Require assistance with the transaction", "Require assistance with transaction", True),  # a word
    ("I am on my way", "i am ON my way", False),  # case alone: the check cannot tell it from a quote
    ("Sale ends 12/25", "Sale ends 12/2025", False),  # digits alone: maybe a format a function asks for
    ("Hello everyone", "Hi all, the launch is today", False),  # other words
])
def test_answer_unreachable_when_the_gold_changes_what_the_user_dictates(made, quoted, written, found):
    entry = _entry(f"health_quote_{zlib.crc32(f'{quoted}|{written}'.encode())}", [f"Please post '{quoted}' for me."],
                   [[f"post_tweet(content={written!r})"]], TWITTER)
    evidence = _found(made([entry]), entry, "answer_unreachable")
    assert bool(evidence) is found, evidence
    if found:
        assert f"the text the user quotes in turn 1 holds {quoted!r}" in evidence[0]


def test_answer_unreachable_is_confirmed_by_running_the_faithful_text(both):
    """multi_turn_base_168: the ground truth leaves out a word the user dictates, but the support
    message is no state BFCL compares, and its result does not quote it: nothing is claimed."""
    for release in (NEW, OLD):
        assert "answer_unreachable" not in _codes(both, both.data_of(release).entries["multi_turn_base_168"])


def test_answer_unreachable_when_the_ground_truth_has_more_turns_than_questions(made, both):
    extra = _entry("health_turns_1", ["post hi"], [["post_tweet(content='hi there')"], ["get_tweet(tweet_id=0)"]],
                   TWITTER)
    (evidence,) = _found(made([extra]), extra, "answer_unreachable")
    assert evidence.startswith("the ground truth has 2 turns, the entry's question 1")
    assert "multi_turn:force_terminated (1 of 2 turns)" in evidence and "turn 2: get_tweet(tweet_id=0)" in evidence
    (real,) = _found(both, both.data_of(OLD).entries["multi_turn_base_154"], "answer_unreachable")
    assert "6 turns, the entry's question 5" in real and "view_messages_sent()" in real


def _effects(bench: BfclBenchmark, entry: Entry) -> dict[str, str]:
    """effect → evidence of the entry's changed_between_releases findings (one per effect)."""
    found = [f for f in bench.task_health(entry.id, entry.release) if f.code == "changed_between_releases"]
    assert len({f.effect for f in found}) == len(found)
    assert all(f.kind == "caution" for f in found if f.effect == "scored")
    assert all(f.kind == "note" for f in found if f.effect == "unseen")
    return {f.effect: f.evidence for f in found}


def _seen_kind(bench: BfclBenchmark, entry: Entry) -> str:
    (seen,) = [f for f in bench.task_health(entry.id, entry.release)
               if f.code == "changed_between_releases" and f.effect == "seen"]
    return seen.kind


def test_changed_between_releases(made):
    config = _files(**{"a.txt": "x"})
    new = _entry("health_rel_1", ["make b.txt"], [["touch(file_name='b.txt')"]], config)
    old = _entry("health_rel_1", ["make c.txt"], [["touch(file_name='c.txt')"]], config, release=OLD)
    same_new = _entry("health_rel_2", ["mean"], [["mean(numbers=[1.0, 2.0])"]], MATH)
    same_old = _entry("health_rel_2", ["mean"], [["mean(numbers=[1.0, 2.0])"]], MATH, release=OLD)
    only_new = _entry("health_rel_3", ["mean"], [["mean(numbers=[1.0, 2.0])"]], MATH)
    # the same data; the classes differ (2025.9.29's echo creates the file, 2026.3.23's refuses)
    echo_new = _entry("health_rel_4", ["write hi"], [["echo(content='hi', file_name='n.txt')"]], config)
    echo_old = _entry("health_rel_4", ["write hi"], [["echo(content='hi', file_name='n.txt')"]], config, release=OLD)
    # the same calls in another order, to the same effect: nothing BFCL's checker reads differs
    order_new = _entry("health_rel_5", ["make b and c"], [["touch(file_name='b.txt')", "touch(file_name='c.txt')"]],
                       config)
    order_old = _entry("health_rel_5", ["make b and c"], [["touch(file_name='c.txt')", "touch(file_name='b.txt')"]],
                       config, release=OLD)
    bench = made([new, same_new, only_new, echo_new, order_new], [old, same_old, echo_old, order_old])
    effects = _effects(bench, new)
    # b.txt → c.txt in the question explains the ground truth's change: only what the model sees
    assert set(effects) == {"seen"}
    assert effects["seen"].startswith(f"what the model sees differs from bfcl-eval {OLD}: question, turn 1: "
                                      f"make ['c.txt' → 'b.txt'];")
    assert "the same substitutions applied to question and ground truth alike: c.txt→b.txt" in effects["seen"]
    assert "turn 1 is BFCL's turn 0" in effects["seen"]
    assert set(_effects(bench, old)) == {"seen"}
    assert not _effects(bench, same_new) and not _effects(bench, same_old)
    assert _found(bench, only_new, "changed_between_releases") == [
        f"in bfcl-eval {NEW}'s data only: bfcl-eval {OLD} has no entry health_rel_3"]
    echo = _effects(bench, echo_new)
    assert set(echo) == {"scored", "seen"}  # seen: GorillaFileSystem's docs differ between the releases
    assert echo["seen"].startswith(f"what the model sees differs from bfcl-eval {OLD}: docs of GorillaFileSystem reworded: ")
    assert echo["scored"].startswith(f"the same calls are scored differently than on bfcl-eval {OLD}: turn 1, action 1: "
                                     f"echo(content='hi', file_name='n.txt') is rejected here")
    assert "No such file" in echo["scored"]
    order = _effects(bench, order_new)
    assert set(order) == {"unseen", "seen"}  # seen: the docs, as above
    assert ("ground truth, turn 1: the same calls in another order, [touch(file_name='c.txt'), "
            "touch(file_name='b.txt')] → [touch(file_name='b.txt'), touch(file_name='c.txt')]") in order["unseen"]


TRAVEL_ID = "multi_turn_base_161"  # a card the user says expires in 2026, its expiry in the initial state


def _shifted(text: str) -> str:
    return text.replace("2026", "2031")


def test_a_date_shifted_in_question_and_answer_is_seen_not_scored(both, made):
    """Built from a real entry by editing both its question and its ground truth (and its config) alike:
    only what the model sees changes; the same edit to the ground truth alone changes the score."""
    real = both.data_of(NEW).entries[TRAVEL_ID]
    old = replace(real, release=OLD)
    shifted = replace(real, question=tuple(map(tuple, json.loads(_shifted(json.dumps(real.question))))),
                      initial_config=json.loads(_shifted(json.dumps(real.initial_config))),
                      ground_truth=tuple(tuple(map(_shifted, t)) for t in real.ground_truth))
    assert shifted.question != real.question and shifted.initial_config != real.initial_config
    effects = _effects(made([shifted], [old]), shifted)
    assert "scored" not in effects
    assert "a date refresh applied to question and initial state alike: 2026→2031" in effects["seen"]
    state_only = replace(real, initial_config=shifted.initial_config)
    scored = _effects(made([state_only], [old]), state_only)["scored"]
    assert "initial state, TravelAPI['credit_card_list']['card_4455']['expiry_date']: [\"'2026'\" → \"'2031'\"]" in scored


def test_a_result_key_renamed_with_the_same_behaviour_is_seen_not_scored(both, made, monkeypatch):
    """The same entry on both releases; one method of the other release's class returns its result
    under another key: what the model sees. Returning another value instead is scored."""
    entry = both.data_of(NEW).entries["multi_turn_miss_param_140"]
    bench = made([entry], [replace(entry, release=OLD)])
    bench.data_of(OLD)
    cls = type(bench.loader_of(replace(entry, release=OLD)).instantiate(entry)["TradingBot"])
    original = cls.get_account_info
    monkeypatch.setattr(cls, "get_account_info", lambda self: {
        ("funds" if k == "balance" else k): v for k, v in original(self).items()})
    effects = _effects(bench, entry)
    assert "scored" not in effects
    assert ("turn 3, action 2: get_account_info() returns the same values under other keys: 'funds' on 2025.9.29 "
            "→ 'balance' here") in effects["seen"]
    monkeypatch.setattr(cls, "get_account_info", lambda self: {**original(self), "balance": 0.0})
    scored = _effects(bench, entry)["scored"]
    assert "turn 3, action 2: get_account_info() returns other values: " in scored and "['0.0,' → '10000.0,']" in scored


def test_a_function_removed_from_an_involved_class_is_seen(both):
    """The entry's data the same on both releases; this release's docs of one of its classes lack a
    function the other release's have: the model is shown other tools, the same calls score the same."""
    entry = both.data_of(NEW).entries["multi_turn_base_0"]
    cls_name = entry.involved_classes[0]
    new_data, old_data = copy.copy(both.data_of(NEW)), copy.copy(both.data_of(OLD))
    new_data.entries, old_data.entries = {entry.id: entry}, {entry.id: replace(entry, release=OLD)}
    # the releases' own docs of the class differ in wording only (a typo fixed, a word dropped): a note
    reworded = BfclBenchmark(new_data, releases={OLD: lambda: old_data})
    assert set(_effects(reworded, entry)) == {"seen"} and _seen_kind(reworded, entry) == "note"
    assert " reworded: " in _effects(reworded, entry)["seen"]
    removed = old_data.docs[cls_name][0]["name"]
    new_data = copy.copy(new_data)
    new_data.docs = {**new_data.docs, cls_name: [d for d in new_data.docs[cls_name] if d["name"] != removed]}
    bench = BfclBenchmark(new_data, releases={OLD: lambda: old_data})
    effects = _effects(bench, entry)
    assert set(effects) == {"seen"} and _seen_kind(bench, entry) == "caution"  # another tool list
    assert f"tools of {cls_name}: {removed} only on {OLD}" in effects["seen"]


@pytest.mark.slow
def test_changed_between_releases_on_the_real_releases(both):
    new = lambda task_id: _effects(both, both.data_of(NEW).entries[task_id])  # noqa: E731
    assert ("tools of TradingBot: make_transaction only on 2025.9.29, update_market_status only on 2025.9.29, "
            "update_stock_price only on 2025.9.29, withdraw_funds new") in new("multi_turn_base_100")["seen"]
    assert "Receiver USR003's ['first' → 'latest'] message" in new("multi_turn_base_149")["scored"]
    long_context = new("multi_turn_long_context_176")
    assert "December 15, ['2024.' → '2026.']" in long_context["seen"]
    assert "['date']: [\"'2026-12-15'\" → \"'2026-10-15'\"]" in long_context["scored"]
    assert set(new("multi_turn_base_161")) == {"seen"}  # a date refresh, nothing else


def test_the_public_example_multi_turn_base_4_is_answer_unreachable_on_both_releases(both):
    for release in (NEW, OLD):
        (evidence,) = _found(both, both.data_of(release).entries["multi_turn_base_4"], "answer_unreachable")
        assert evidence.startswith("turn 3, action 3: post_tweet(content='Initial report content More unsorted data "
                                   "Unsorted data'")
        assert ("the result of turn 2, action 2: sort(file_name='report.txt'), at ['sorted_content'] holds 'Initial "
                "report content Unsorted data More unsorted data' — the same words in another order") in evidence
        assert "scores 0 (multi_turn:instance_state_mismatch TwitterAPI (turn 3))" in evidence


def test_findings_are_the_same_every_time(bfcl_data, old_data, both):
    ids = ["multi_turn_base_4", "multi_turn_base_10", "multi_turn_miss_func_102", "multi_turn_long_context_41"]
    fresh = BfclBenchmark(bfcl_data, releases={OLD: lambda: old_data})
    for release in (NEW, OLD):
        for task_id in ids:
            first = both.task_health(task_id, release)
            assert first == both.task_health(task_id, release) == fresh.task_health(task_id, release)


# --- against bfcl-eval's own checker ----------------------------------------------------------------

def _decoded(rollout: Rollout) -> list[list[list[str]]]:
    return [[[c.render() for c in step.calls] for step in turn if step.calls] for turn in rollout.turns]


def differential(bench: BfclBenchmark, task_ids: list[str]) -> tuple[list[list], dict[int, int]]:
    """Our Y and bfcl-eval's ``multi_turn_checker`` on the ground truth, the idle trajectory and the
    ground truth without each of its writes, per entry: the disagreements, and how often each Y
    occurred on the idle and gold-minus-one-write trajectories (the key ``"gold"``: on the gold)."""
    reference = BfclReference(bench)
    wrong, seen = [], Counter()
    for task_id in task_ids:
        entry = bench.entry(task_id)
        probe = BfclProbe(bench, entry)
        gold = replay(probe.gold(), bench)
        if gold.Y != reference.checker(entry, _decoded(gold.rollout)):
            wrong.append([task_id, "the ground truth", gold.Y, 1 - gold.Y])
        seen[f"gold {gold.Y}"] += 1
        for trajectory in [probe.idle(), *probe.without_required(gold)]:
            ours = replay(trajectory.rollout, bench).Y
            theirs = reference.checker(entry, _decoded(trajectory.rollout))
            seen[ours] += 1
            if ours != theirs:
                wrong.append([task_id, trajectory.label, ours, theirs])
    return wrong, dict(seen)


def _differential_in_child(task_ids: list[str] | None) -> tuple[list[list], dict[int, int]]:
    """:func:`differential` on the v3 era's release, in a process where that release's bfcl-eval is
    the package ``bfcl_eval`` (its own checker runs on its own classes)."""
    proc = subprocess.run([sys.executable, __file__, json.dumps(task_ids)], capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wrong, seen = json.loads(proc.stdout.splitlines()[-1])
    return wrong, {int(k) if k.isdigit() else k: v for k, v in seen.items()}


# the three v3-era entries whose touch is not needed, and a sample
V3_SAMPLE = ["multi_turn_base_10", "multi_turn_base_39", "multi_turn_base_44", "multi_turn_miss_func_10",
             "multi_turn_base_4", "multi_turn_base_100", "multi_turn_base_150", "multi_turn_long_context_60"]


def test_idle_and_gold_minus_one_write_agree_with_bfcl_on_a_sample(bfcl):
    wrong, seen = differential(bfcl, list(bfcl.task_ids())[::16])
    assert not wrong
    assert seen[0] > 100 and seen["gold 1"] == 50  # on this release no such trajectory scores 1


def test_idle_and_gold_minus_one_write_agree_with_bfcl_on_a_v3_era_sample():
    wrong, seen = _differential_in_child(V3_SAMPLE)
    assert not wrong
    assert seen[0] and seen[1] == 6  # the touches echo makes unneeded in four of these entries


def test_a_withheld_function_is_a_defect_where_bfcls_own_checker_fails_the_gold_without_it(bfcl):
    """``multi_turn_miss_func_49``: the ground truth calls ``tail`` in turn 2, BFCL gives the model ``tail``
    only in turn 4; bfcl-eval's own checker scores the ground truth without that call 0, so no agent
    passes the task as BFCL runs it."""
    release = bfcl.health_releases()[0]
    (found,) = [f for f in bfcl.task_health("multi_turn_miss_func_49", release) if f.code == "gold_not_prefix_executable"]
    assert (found.kind, found.effect) == ("defect", "scored") and "tail" in found.evidence
    entry = bfcl.entry("multi_turn_miss_func_49")
    gold = replay(BfclProbe(bfcl, entry).gold(), bfcl)
    tail = next(v.action for v in gold.verdicts if v.action.call is not None and v.action.call.name == "tail")
    reference = BfclReference(bfcl)
    assert reference.checker(entry, _decoded(gold.rollout)) == 1
    assert reference.checker(entry, _decoded(without_action(gold.rollout, tail))) == 0
    # The other gold_not_prefix_executable entries (a string ticket id where an integer is declared) stay
    # definitions: BFCL does not check types.
    (loose,) = [f for f in bfcl.task_health("multi_turn_base_173", release) if f.code == "gold_not_prefix_executable"]
    assert (loose.kind, loose.effect) == ("definition", "fed") and "not a defect of the benchmark" in loose.evidence


@pytest.mark.slow
@pytest.mark.corpus  # the default run: the samples above
def test_idle_and_gold_minus_one_write_agree_with_bfcl_on_every_entry(bfcl):
    wrong, seen = differential(bfcl, list(bfcl.task_ids()))
    assert not wrong
    assert seen["gold 1"] == 800


@pytest.mark.slow
@pytest.mark.corpus  # the default run: the samples above
def test_idle_and_gold_minus_one_write_agree_with_bfcl_on_every_v3_era_entry():
    wrong, seen = _differential_in_child(None)
    assert not wrong
    assert seen[1] == 20 and seen["gold 1"] == 800  # the touches echo makes unneeded


# --- the whole corpus -----------------------------------------------------------------------------

# Read by hand (docs/health.md): each a transcription the gold changed, or a ground truth longer than the
# questions.
UNREACHABLE = {
    NEW: {f"multi_turn_{c}_{n}" for c in ("base", "long_context", "miss_func", "miss_param") for n in (4, 18)}
         - {"multi_turn_long_context_18"} | {"multi_turn_long_context_41", "multi_turn_long_context_43"},
    OLD: {f"multi_turn_{c}_{n}" for c in ("base", "long_context", "miss_func", "miss_param") for n in (4, 10, 18)}
         - {"multi_turn_long_context_18"}
         | {"multi_turn_base_154", "multi_turn_long_context_41", "multi_turn_long_context_43"}
         | {f"multi_turn_{c}_97" for c in ("long_context", "miss_func", "miss_param")},
}


@pytest.mark.slow
@SAMPLE_OR_WHOLE
def test_every_entry_of_both_releases(both, whole):
    """Every entry of each release; in the default run every tenth and those read by hand."""
    def entries(release: str) -> list[str]:
        tasks = list(both.release_tasks(release))
        return sorted(set(swept(tasks, whole, 10)) | (UNREACHABLE[NEW] | UNREACHABLE[OLD]) & set(tasks))

    found = {r: {task_id: both.task_health(task_id, r) for task_id in entries(r)} for r in (NEW, OLD)}
    for release, by_task in found.items():
        assert len(by_task) == 800 if whole else 80 < len(by_task) < 800
        with_code = lambda code: {t for t, fs in by_task.items() if any(f.code == code for f in fs)}  # noqa: E731
        assert with_code("answer_unreachable") == UNREACHABLE[release]
        assert not with_code("passes_doing_nothing")
        # 2025.9.29's 20 touches in 12 entries that an echo after them makes again are superseded, not unchecked
        assert not with_code("unchecked_required_action")
        changed = with_code("changed_between_releases")
        # every entry: the docs of every class but MathAPI's and TwitterAPI's differ (seen); 214/215 scored
        assert len(changed) == len(by_task)
        assert all((f.evidence.count(OLD if release == NEW else NEW) > 0)
                   for fs in by_task.values() for f in fs if f.code == "changed_between_releases")


if __name__ == "__main__":
    ids = json.loads(sys.argv[1])
    v3 = BfclBenchmark(load_data(RESOURCES, V3_ERA_PIN))
    print(json.dumps(differential(v3, ids if ids is not None else list(v3.task_ids()))))
