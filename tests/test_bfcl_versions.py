"""The release a BFCL result file was made on: chosen from the recorded tool results, the recorded
runs, the file name or --bfcl-data; an entry the chosen release contradicts is said, never dropped;
two releases' environment classes side by side in one process."""

from __future__ import annotations

import functools
import json
import pickle
from dataclasses import replace
from types import SimpleNamespace

import pytest
from bfcl_logs import gold_entry, write_result_file, write_score_file
from conftest import RESOURCES

from prefix_audit.benchmarks.bfcl import BfclBenchmark, import_result_file, load_data
from prefix_audit.benchmarks.bfcl.data import V3_ERA_PIN, Entry
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.benchmarks.bfcl.versions import Reproduction, RecordedRun, choose_release, misfit
from prefix_audit.core.records import Recorded, Rollout
from prefix_audit.replay.checker import replay
from prefix_audit.replay.record_check import check_record


def _entry(entry_id: str, questions: list[str], release: str, config: dict | None = None) -> Entry:
    config = config if config is not None else {"TradingBot": {"balance": 10.0}}
    return Entry(entry_id, "base", tuple(((({"role": "user", "content": q},) if q else ())) for q in questions),
                 config, tuple(config), {}, tuple(() for _ in questions), release)


def _release(version: str, **entries: list[str]) -> SimpleNamespace:
    return SimpleNamespace(entries={i: _entry(i, qs, version) for i, qs in entries.items()})


OLD = _release("old", a=["start the market", "buy"], b=["hi", "there"])
NEW = _release("new", a=["buy"], b=["hi", "there"])  # entry a lost its first turn


def _run(entry_id: str, questions: list[str] | None = None, turns: int | None = None, **more) -> RecordedRun:
    asked = {t: (q,) for t, q in enumerate(questions or [])}
    return RecordedRun(entry_id, turns if turns is not None else len(questions or []), asked, **more)


def test_a_run_fits_the_data_it_was_made_on_by_what_decides_its_verdict():
    assert misfit(OLD.entries["a"], _run("a", ["start the market", "buy"])) is None
    assert "2 turns, the entry 1" in misfit(NEW.entries["a"], _run("a", ["start the market", "buy"]))
    assert misfit(NEW.entries["a"], _run("a", turns=1)) is None  # no log: the turn count alone
    assert misfit(None, _run("a", turns=1)) == "no such entry"
    held = _entry("c", ["go", ""], "new")  # a turn without a question: withheld functions arrive
    assert misfit(held, _run("c", ["go", "I have updated some more functions"])) is None
    # questions asked otherwise (translated) are the same entry; its initial state, classes and
    # ground truth are what decide the verdict
    assert misfit(NEW.entries["b"], _run("b", ["你好", "那里"])) is None
    assert misfit(NEW.entries["b"], _run("b", turns=2, initial_state={"TradingBot": {"balance": 10}})) is None
    assert "initial TradingBot.balance differs" in misfit(
        NEW.entries["b"], _run("b", turns=2, initial_state={"TradingBot": {"balance": 20.0}}))
    assert "loaded TravelAPI" in misfit(NEW.entries["b"], _run("b", turns=2, initial_state={"TravelAPI": {}}))
    assert "involves TravelAPI" in misfit(NEW.entries["b"], _run("b", turns=2, classes=("TravelAPI",)))
    assert misfit(NEW.entries["b"], _run("b", turns=2, ground_truth=((), ()))) is None
    assert "ground truth differs" in misfit(NEW.entries["b"], _run("b", turns=2, ground_truth=(("ls()",), ())))


def test_questions_only_break_ties_and_are_counted():
    newer = SimpleNamespace(entries={"b": _entry("b", ["hi", "there"], "new", {"TradingBot": {"balance": 20.0}})})
    runs = [_run("b", ["hola", "allí"], initial_state={"TradingBot": {"balance": 10.0}})]
    choice = choose_release({"new": newer, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old")
    assert (choice.release, choice.misfits) == ("old", {})
    assert "1 entries asked other questions than this release's" in choice.how
    asked = [_run("b", ["hi", "there"])]  # both releases fit alike: the questions asked decide
    other = SimpleNamespace(entries={"b": _entry("b", ["hey", "there"], "new")})
    assert choose_release({"new": other, "old": OLD}, asked, "BFCL_v4_multi_turn_base_result.json", "old").release \
        == "old"


def test_the_release_the_fewest_entries_contradict_is_chosen_and_the_rest_said():
    runs = [_run("a", ["start the market", "buy"]), _run("b", ["hi", "there"])]
    choice = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old")
    assert (choice.release, choice.misfits) == ("old", {})
    assert "new: 1 of 2 entries, old: 2 of 2 entries" in choice.how
    given = choose_release({"new": NEW, "old": OLD}, runs, "x.json", "old", given="new")
    assert given.release == "new" and set(given.misfits) == {"a"} and "--bfcl-data" in given.how


def test_without_evidence_the_file_name_decides():
    runs = [_run("b", turns=2)]
    assert choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v3_multi_turn_base_result.json", "old").release \
        == "old"
    by_name = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old")
    assert by_name.release == "new" and "chosen by the file name" in by_name.how
    # a flat copy's name: what precedes BFCL's own name is read past
    assert choose_release({"new": NEW, "old": OLD}, runs, "DeepSeek-R1_BFCL_v3_multi_turn_base_result.json.gz",
                          "old").release == "old"
    assert choose_release({"new": NEW, "old": OLD}, runs, "run_v3__BFCL_v4_multi_turn_base_result.json",
                          "old").release == "new"


class Replays:
    """A stand-in for replaying a file's recorded tool results: per release, the rollouts whose
    results it does not reproduce; it notes which releases were replayed."""

    def __init__(self, compared: int, **diverged: list[str]) -> None:
        self.compared, self.diverged, self.asked = compared, diverged, []

    def __call__(self, release: str) -> Reproduction:
        self.asked.append(release)
        return Reproduction(self.compared, frozenset(self.diverged.get(release, [])))


def _rollout(entry_id: str, rollout_id: str) -> Rollout:
    return Rollout("bfcl_v3", entry_id, "m", "imported", rollout_id, (), meta={"reading": "BFCL"},
                   recorded=Recorded.of(1, "BFCL score file: valid"))


def test_the_release_the_data_point_to_is_the_only_one_replayed_when_it_reproduces_every_result():
    runs = [_run("b", turns=2)]  # the data fit both releases alike
    replays = Replays(1)
    choice = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old",
                            reproduce=replays)
    assert (choice.release, replays.asked) == ("new", ["new"])  # the old one is never replayed
    assert "chosen by the file name" in choice.how and "reproduce on its classes in 1 of 1 entries" in choice.how
    assert choice.issue(_rollout("b", "rb")) is None
    assert choose_release({"new": NEW, "old": OLD}, runs, "x.json", "old", given="old", reproduce=replays).release \
        == "old" and replays.asked == ["new"]  # --bfcl-data: nothing replayed


def test_a_file_whose_results_only_one_release_reproduces_is_scored_on_it():
    runs = [_run("b", turns=2)]
    replays = Replays(1, new=["rb"])
    choice = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old",
                            reproduce=replays)
    assert (choice.release, replays.asked, choice.misfits) == ("old", ["new", "old"], {})
    assert "file name" not in choice.how
    assert "the recorded tool results reproduce on its classes in 1 of 1 entries, on new's in 0 of 1" in choice.how
    assert choice.issue(_rollout("b", "rb")) is None


def test_results_and_data_that_point_to_different_releases_are_both_said_and_the_results_win():
    runs = [_run("a", ["start the market", "buy"]), _run("b", ["hi", "there"])]  # the data: old
    choice = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old",
                            reproduce=Replays(1, old=["rb"]))
    assert choice.release == "new" and set(choice.misfits) == {"a"}
    assert "reproduce on its classes in 1 of 1 entries, on old's in 0 of 1" in choice.how
    assert "the verdict-deciding data point to old (the recorded run fits new: 1 of 2 entries" in choice.how
    issue = choice.issue(_rollout("a", "ra"))
    assert issue.code == "data_version" and "does not fit bfcl-eval new's data: the run has 2 turns" in issue.detail
    assert "its classes reproduce the file's recorded tool results" in issue.detail and "point to old" in issue.detail
    assert choice.issue(_rollout("b", "rb")) is None


def test_where_no_release_reproduces_every_result_the_fewest_diverging_entries_decide_and_the_rest_is_said():
    runs = [_run("b", turns=2), _run("b", turns=2)]
    tie = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old",
                         reproduce=Replays(2, new=["r1"], old=["r2"]))
    assert tie.release == "new" and "chosen by the file name" in tie.how  # a tie: the data's choice stands
    issue = tie.issue(_rollout("b", "r1"))
    assert issue.code == "data_version" and "are bfcl-eval old's: its classes reproduce them, new's do not" \
        in issue.detail
    assert tie.issue(_rollout("b", "r2")) is None  # old does not reproduce it either
    fewer = choose_release({"new": NEW, "old": OLD}, runs, "BFCL_v4_multi_turn_base_result.json", "old",
                           reproduce=Replays(2, new=["r1", "r2"], old=["r2"]))
    assert fewer.release == "old" and "in 1 of 2 entries, on new's in 0 of 2" in fewer.how


def test_the_recorded_run_is_read_from_the_inference_log():
    line = {"id": "a", "result": [[], []], "inference_log": [
        [{"role": "state_info"}], {"begin_of_turn_query": [{"role": "user", "content": "start the market"}]},
        [{"role": "state_info"}], {"begin_of_turn_query": [{"role": "system", "content": "x"},
                                                          {"role": "user", "content": "buy"}]}]}
    assert RecordedRun.of(line) == RecordedRun("a", 2, {0: ("start the market",), 1: ("buy",)})
    line["inference_log"][0] = [{"role": "state_info", "class_name": "TradingBot", "content": {"balance": 1}}]
    assert RecordedRun.of(line).initial_state == {"TradingBot": {"balance": 1}}
    scored = {"id": "a", "result": [[]], "prompt": {"involved_classes": ["TradingBot"],
                                                    "initial_config": {"TradingBot": {"balance": 2}, "TravelAPI": {}}},
              "possible_answer": [["ls()"]]}
    run = RecordedRun.of(scored)  # a score file's line: the entry's config (of the classes it involves), its answer
    assert (run.initial_state, run.classes, run.ground_truth) == ({"TradingBot": {"balance": 2}}, ("TradingBot",),
                                                                  (("ls()",),))
    assert RecordedRun.of({"id": "a", "result": "Error during inference"}).turns is None
    assert RecordedRun.of(["not", "an", "entry"]) is None


# --- on the real releases -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bench(bfcl) -> BfclBenchmark:
    return BfclBenchmark(bfcl.data, releases={V3_ERA_PIN.version: functools.partial(load_data, RESOURCES,
                                                                                     V3_ERA_PIN)})


def test_two_releases_environments_live_side_by_side(bench):
    old = bench.data_of(V3_ERA_PIN.version)
    entry = old.entries["multi_turn_base_101"]
    old_classes, new_classes = bench.loader_of(entry).classes, bench.loader.classes
    assert old_classes["TradingBot"] is not new_classes["TradingBot"]
    assert hasattr(old_classes["TradingBot"], "update_market_status")  # removed from the later release
    assert not hasattr(new_classes["TradingBot"], "update_market_status")
    instances = bench.loader_of(entry).instantiate(entry)
    assert type(pickle.loads(pickle.dumps(instances["TradingBot"]))) is old_classes["TradingBot"]
    assert len(entry.question) == len(bench.entry("multi_turn_base_101").question) + 1


def test_an_entry_is_scored_on_the_release_its_run_fits(bench, tmp_path):
    """The gold run of a TradingBot entry as the v3 era's data has it (one more turn than today's):
    the file is scored on that release, and Y = 1 there."""
    old = bench.data_of(V3_ERA_PIN.version)
    v3 = BfclBenchmark(old)
    line = gold_entry(v3, "multi_turn_base_101")
    for t, turn in enumerate(line["inference_log"][1::2]):
        turn["begin_of_turn_query"] = [{"role": "user", "content": c} for c in old.entries["multi_turn_base_101"]
                                       .user_texts(t)]
    path = write_result_file(tmp_path / "BFCL_v4_multi_turn_base_result.json", [line])
    releases = {r: bench.data_of(r) for r in bench.releases()}
    [item] = list(import_result_file(path, model="m", reading=BfclReading(model_config(bench.data.root), releases)))
    rollout = item.rollout
    assert rollout.meta["bfcl_data"] == V3_ERA_PIN.version and not rollout.recorded.issues
    assert "data of bfcl-eval 2025.9.29" in rollout.meta["reading"]
    assert replay(rollout, bench).Y == 1
    on_today = replace(rollout, meta={**rollout.meta, "bfcl_data": bench.data.release})
    episode = replay(on_today, bench)  # more turns than today's entry: force-terminated, not a crash
    assert episode.Y == 0 and "force_terminated" in episode.y_detail
    [forced] = list(import_result_file(path, model="m", reading=BfclReading(model_config(bench.data.root), releases,
                                                                                  bench.data.release)))
    assert [i.code for i in forced.rollout.recorded.issues] == ["data_version"]
    assert json.dumps(forced.rollout.meta["bfcl_data"]) == json.dumps(bench.data.release)


def test_an_older_release_that_cannot_be_fetched_is_said_not_fatal(bfcl, tmp_path, capsys, monkeypatch):
    """Offline without the v3 era's wheel: the file is read on today's data, and the summary says
    which release was not considered and why."""
    from prefix_audit.cli import main

    path = write_result_file(tmp_path / "BFCL_v4_multi_turn_base_result.json", [gold_entry(bfcl, "multi_turn_base_1")])
    resources = tmp_path / "resources"
    resources.mkdir()
    (resources / bfcl.data.pin.dirname).symlink_to(bfcl.data.root)  # today's wheel only
    for name, value in {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1", "PIP_RETRIES": "0",
                        "PIP_TIMEOUT": "1", "PIP_FIND_LINKS": "", "PIP_NO_INDEX": ""}.items():
        monkeypatch.setenv(name, value) if value else monkeypatch.delenv(name, raising=False)
    out = tmp_path / "r.jsonl"
    assert main(["import", "bfcl", str(path), "-o", str(out), "--resources", str(resources)]) == 0
    said = capsys.readouterr().err
    assert "data of bfcl-eval 2026.3.23" in said and "not considered: bfcl-eval 2025.9.29 unavailable" in said
    assert json.loads(out.read_text().splitlines()[0])["meta"]["bfcl_data"] == "2026.3.23"


# --- the recorded tool results on the real releases --------------------------------------------------

def _without_questions(line: dict) -> dict:
    """A result line whose inference_log leaves out the user's questions (the data then fit both
    releases alike, so only the file name or the recorded results can tell)."""
    for item in line["inference_log"]:
        if isinstance(item, dict):
            item.pop("begin_of_turn_query", None)
    return line


def _import(bench, path, replaying: bool) -> Rollout:
    """The one entry of ``path`` on the release chosen for it, with its recorded tool results replayed
    on the releases (``replaying``) or without."""
    releases = {r: bench.data_of(r) for r in bench.releases()}
    [item] = import_result_file(path, model="m", reading=BfclReading(model_config(bench.data.root), releases,
                                                                     bench=bench if replaying else None))
    return item.rollout


def test_a_file_whose_tool_results_only_the_v3_era_reproduces_is_scored_there_with_no_flag(bench, tmp_path):
    """multi_turn_base_6 has the same initial state and turns in both releases; its v3-era ground truth
    ends with ``echo`` into a file that does not exist, which 2025.9.29's classes create (result None)
    and 2026.3.23's refuse. A run of it made on 2025.9.29, with BFCL's verdict: valid."""
    old = bench.data_of(V3_ERA_PIN.version)
    assert old.entries["multi_turn_base_6"].initial_config == bench.entry("multi_turn_base_6").initial_config
    line = _without_questions(gold_entry(BfclBenchmark(old), "multi_turn_base_6"))
    path = write_result_file(tmp_path / "BFCL_v4_multi_turn_base_result.json", [line])
    write_score_file(tmp_path / "BFCL_v4_multi_turn_base_score.json", 1, {})
    by_data = _import(bench, path, replaying=False)  # without replaying its results: today's release, by the file name
    assert by_data.meta["bfcl_data"] == bench.data.release
    diverged = replay(by_data, bench)
    assert diverged.Y == 0 and "replay_diverged" in check_record(diverged).log_issue
    rollout = _import(bench, path, replaying=True)
    assert rollout.meta["bfcl_data"] == V3_ERA_PIN.version and not rollout.recorded.issues
    assert (f"the recorded tool results reproduce on its classes in 1 of 1 entries, on {bench.data.release}'s in "
            f"0 of 1") in rollout.meta["reading"]
    episode = replay(rollout, bench)
    assert episode.Y == rollout.recorded.y == 1 and check_record(episode).log_issue is None


def test_a_file_both_releases_reproduce_keeps_the_choice_of_its_data(bench, tmp_path):
    entry = "multi_turn_base_1"  # the same data, ground truth and results in both releases
    line = _without_questions(gold_entry(bench, entry))
    for name, release in (("BFCL_v4_multi_turn_base_result.json", bench.data.release),
                          ("BFCL_v3_multi_turn_base_result.json", V3_ERA_PIN.version)):
        path = write_result_file(tmp_path / name, [line])
        [item] = import_result_file(path, model="m", reading=BfclReading(
            model_config(bench.data.root), {r: bench.data_of(r) for r in bench.releases()}, bench=bench))
        reading = item.rollout.meta["reading"]
        assert item.rollout.meta["bfcl_data"] == release and not item.rollout.recorded.issues
        assert "chosen by the file name" in reading and "reproduce on its classes in 1 of 1 entries)" in reading


def test_results_of_one_release_and_data_of_another_say_both(bench, tmp_path):
    """Recorded tool results only 2026.3.23 reproduces (the v3-era ground truth of multi_turn_base_6 run
    on 2026.3.23's classes: its ``echo`` errs), beside a TradingBot run with the v3 era's turn count: the
    file is scored on the release that reproduces its log, and the entry its data contradicts says why."""
    old = bench.data_of(V3_ERA_PIN.version)
    on_today = SimpleNamespace(entry=lambda i: replace(bench.entry(i), ground_truth=old.entries[i].ground_truth),
                               loader=bench.loader)
    line = _without_questions(gold_entry(on_today, "multi_turn_base_6"))
    longer = {"id": "multi_turn_base_101", "result": [[] for _ in old.entries["multi_turn_base_101"].question]}
    path = write_result_file(tmp_path / "BFCL_v4_multi_turn_base_result.json", [longer, line])
    releases = {r: bench.data_of(r) for r in bench.releases()}
    items = {i.rollout.task_id: i.rollout for i in import_result_file(
        path, model="m", reading=BfclReading(model_config(bench.data.root), releases, bench=bench))}
    rollout = items["multi_turn_base_6"]
    assert rollout.meta["bfcl_data"] == bench.data.release and not rollout.recorded.issues
    assert f"the verdict-deciding data point to {V3_ERA_PIN.version}" in rollout.meta["reading"]
    assert check_record(replay(rollout, bench)).log_issue is None
    [issue] = items["multi_turn_base_101"].recorded.issues
    turns = len(old.entries["multi_turn_base_101"].question)
    assert issue.code == "data_version" and f"the run has {turns} turns, the entry {turns - 1}" in issue.detail
    assert f"reproduce the file's recorded tool results, while the verdict-deciding data point to " \
           f"{V3_ERA_PIN.version}" in issue.detail
