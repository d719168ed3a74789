"""Benchmark health, the parts every benchmark shares: the closed list of codes, the shared checks on a
constructed benchmark (tests/plugins/toy_bench.py, each code present and absent), findings from audits of
agents, the ``tasks`` command and its errors, byte-identical outputs whatever the workers, episodes marked
with their task's health, and statistics and tables over sound tasks only."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import RESOURCES
from test_view import browser  # noqa: F401  (the real browser of the site's tests)

from prefix_audit.cli import main
from prefix_audit.core.health import CODES, DEFECT, EFFECTS, KINDS, MAX_EVIDENCE_CHARS, Finding, changed_text, is_sound
from prefix_audit.core.parallel import WorkerPool
from prefix_audit.health.audits import audit_findings
from prefix_audit.health.tasks import audit_tasks, health_contents
from prefix_audit.replay import registry
from prefix_audit.replay.fed import EPISODE_SCHEMA, merge_episodes, with_task_health
from prefix_audit.replay.health import probe_findings
from prefix_audit.reports.audit_tables import table_task_health
from prefix_audit.reports.block_tables import health_cells, table_g1
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import compute_stats

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="module")
def toy():
    """The toy benchmark (a plugin written against the public face) with tasks built to be broken."""
    sys.path.insert(0, str(PLUGINS))
    registry.load(["toy_bench"])
    import toy_bench as tb

    call = tb._call
    login, rooms = call("login", pin=tb.PIN), call("list_rooms")
    broken = {
        # a gold call the home rejects (a wrong PIN), then the right one: by design
        "bad-pin": tb.Task(("My PIN is 4321; the kitchen light on, please.",),
                           ((call("login", pin="0000"), login, rooms, call("switch", room_id="r-kitchen", on=True)),)),
        # the gold ends on a switch the home rejects: a defect
        "no-garage": tb.Task(("PIN 4321, the garage light on.",),
                             ((login, rooms, call("switch", room_id="r-garage", on=True)),)),
        # a room id no earlier call returned: the home accepts it, the dependency predicate does not
        "guessed-id": tb.Task(("PIN 4321, kitchen on.",), ((login, call("switch", room_id="r-kitchen", on=True)),)),
        # a reference that changes no light: doing nothing matches it
        "look-only": tb.Task(("PIN 4321. Which rooms do I have?",), ((login, rooms),)),
        # the same switch twice: either one alone leaves the lights as the reference does
        "twice": tb.Task(("PIN 4321, kitchen on.",), ((login, rooms, call("switch", room_id="r-kitchen", on=True),
                                                       call("switch", room_id="r-kitchen", on=True)),)),
    }
    saved = dict(tb.TASKS)
    tb.TASKS.update(broken)
    yield tb, tb.ToyLights("toy_lights")
    tb.TASKS.clear()
    tb.TASKS.update(saved)


def _codes(findings: list[Finding]) -> list[str]:
    return sorted(f.code for f in findings)


def test_codes_are_a_closed_list_with_kinds():
    with pytest.raises(ValueError, match="unknown health code"):
        Finding("looks_odd", "")
    assert {c.kind for c in CODES.values()} == {"defect", "definition", "caution"}
    assert {k for c in CODES.values() for k in c.kinds} == set(KINDS)
    assert {e for c in CODES.values() for e in c.effects} == set(EFFECTS)
    with pytest.raises(ValueError, match="gold_no_effect finding is one of caution"):
        Finding("gold_no_effect", "", kind="defect")
    with pytest.raises(ValueError, match="effect is one of"):
        Finding("answer_unreachable", "", effect="seen")
    assert is_sound([Finding("gold_no_effect", ""), Finding("gold_not_prefix_executable", ""),
                     Finding("gold_fails", "", kind="design", effect="fed")])
    assert not is_sound([Finding("gold_no_effect", ""), Finding("gold_fails", "")])
    assert len(Finding("gold_fails", "x" * 5000).evidence) == MAX_EVIDENCE_CHARS


def test_each_shared_check_fires_on_its_broken_task_and_not_on_sound_ones(toy):
    tb, bench = toy
    for sound in ("kitchen-on", "bedroom-dim", "hall-two-turns", "kitchen-off", "all-on"):
        assert bench.task_health(sound, "toy-1") == [], sound
    found = {t: bench.task_health(t, "toy-1") for t in ("bad-pin", "guessed-id", "look-only", "twice", "no-garage")}
    # gold_fails, not gold_not_prefix_executable: the first failure is a transition the home rejected; the
    # gold logs in again, accepted: by design, on FED only
    assert _codes(found["bad-pin"]) == ["gold_fails"]
    assert "login(pin='0000') → wrong PIN (design: superseded" in found["bad-pin"][0].evidence
    assert (found["bad-pin"][0].kind, found["bad-pin"][0].effect) == ("design", "fed")
    # the gold ends on the rejected switch: a defect; the idle agent passes, but the gold makes no
    # accepted write either, so that is by design
    garage = {f.code: f for f in found["no-garage"]}
    assert sorted(garage) == ["gold_fails", "gold_no_effect", "passes_doing_nothing"]
    assert (garage["gold_fails"].kind, garage["gold_fails"].effect) == ("defect", "scored")
    assert "the gold ends on it" in garage["gold_fails"].evidence
    assert garage["passes_doing_nothing"].kind == "design" and "refusal" in garage["passes_doing_nothing"].evidence
    # the home accepts the guessed id: a property of the audit's predicates, said so
    assert _codes(found["guessed-id"]) == ["gold_not_prefix_executable"]
    assert "fails dependency" in found["guessed-id"][0].evidence and "not a defect" in found["guessed-id"][0].evidence
    assert _codes(found["look-only"]) == ["gold_no_effect", "passes_doing_nothing"]
    assert "an agent that answers without a call scores 1" in found["look-only"][1].evidence
    assert _codes(found["twice"]) == ["unchecked_required_action"] * 2
    assert found["look-only"][1].kind == "design"  # the gold switches nothing either
    assert [is_sound(fs) for fs in found.values()] == [True, True, True, False, False]


def test_changed_text_shows_every_change_whole_within_its_context():
    before = "Please open the first file in the folder and read it to me now " + "filler " * 30 + "in 2024."
    after = "Please open the latest file in the folder and read it to me now " + "filler " * 30 + "in 2026."
    shown = changed_text(before, after)
    assert "['first' → 'latest']" in shown and "['2024.' → '2026.']" in shown
    assert shown.count("…") == 2 and len(shown) < len(before)  # the unchanged middle left out, said by …
    assert changed_text("a", "a") == "(the same text)"
    long = "x" * 3000
    assert repr(long) in changed_text("a", long)  # a change is never cut


def test_a_redundant_action_is_no_unchecked_one_and_an_unscored_gold_is_unreachable(toy):
    tb, bench = toy

    class Redundancy(tb.ToyProbe):
        def final_state(self, rollout):  # everything the home keeps, whether the reward reads it or not
            home = tb.Home(self.task)
            for turn in rollout.turns:
                for step in turn:
                    for c in step.calls:
                        home.run(c)
            return home.logged_in, home.lights

    assert probe_findings(Redundancy(bench, "twice")) == []  # either switch alone leaves everything alike

    class Mislabelled(tb.ToyProbe):
        def gold(self):  # the kitchen switched on, scored against a task that wants it off
            return dataclasses.replace(bench.reference_rollout("kitchen-on"), task_id=self.task_id)

    found = probe_findings(Mislabelled(bench, "kitchen-off"))
    assert [f.code for f in found] == ["answer_unreachable"]
    assert found[0].evidence == "the gold itself scores 0: lights differ from the reference"


def _episodes(rows: list[dict]) -> pl.DataFrame:
    base = {"dataset": "d", "source": "agent", "category": "schema", "failure_code": "unknown_tool",
            "failure_detail": "x"}
    return pl.DataFrame([base | r for r in rows])


def test_audits_give_unsolved_by_all_and_same_first_failure_only_past_their_thresholds():
    def rollout(task, block, y, fed=1, call="cd(folder='x')", code="unknown_tool"):
        model, method = block.split("/")
        return {"task_id": task, "model": model, "method": method, "rollout_id": f"{task}{block}{y}{fed}",
                "T": 3, "FED": fed, "Y": y, "call": call, "failure_code": code}

    rows = [rollout("t1", b, 0) for b in ("a/x", "b/x", "c/x")]  # three blocks, none solved, same failure
    rows += [rollout("t2", "a/x", 0)]  # one block only: neither finding
    rows += [rollout("t3", "a/x", 0), rollout("t3", "b/x", 1, fed=4)]  # solved once
    rows += [rollout("t4", b, 0, call=c) for b, c in (("a/x", "ls()"), ("b/x", "ls()"), ("c/x", "pwd()"),
                                                      ("d/x", "ls()"), ("e/x", "ls()"))]  # 4 of 5 = 80 %
    rows += [rollout("t5", b, 0, call=c) for b, c in (("a/x", "ls()"), ("b/x", "ls()"), ("c/x", "pwd()"),
                                                      ("d/x", "cd()"))]  # 2 of 4 < 80 %
    found = audit_findings(_episodes(rows))
    assert {t: _codes(f) for t, f in found.items()} == {
        "t1": ["same_first_failure", "unsolved_by_all"], "t4": ["same_first_failure", "unsolved_by_all"],
        "t5": ["unsolved_by_all"]}
    assert "no block of 3 solved it" in found["t1"][0].evidence
    assert found["t4"][1].evidence.startswith("4 of 5 failing rollouts in 5 blocks first fail on ls() with schema")


def test_tasks_command_refuses_what_it_cannot_audit_in_one_line(tmp_path, capsys):
    out = tmp_path / "h"
    assert main(["tasks", "no_such_dataset", "-o", str(out)]) == 2
    assert "unknown dataset 'no_such_dataset' (datasets with benchmark health: bfcl_v3" in capsys.readouterr().err
    assert main(["tasks", "bfcl_v3", "--release", "1999.1.1", "-o", str(out), "--resources", str(RESOURCES)]) == 2
    assert "bfcl_v3 has no data release '1999.1.1' (pinned: 2026.3.23, 2025.9.29)" in capsys.readouterr().err
    assert main(["tasks", "toolsandbox_recorded", "-o", str(out)]) == 2
    assert "toolsandbox_recorded offers no benchmark health" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    assert main(["tasks", "bfcl_v3", "-o", str(out), "--audits", str(tmp_path / "nowhere")]) == 2
    assert "no fed/episodes.parquet" in capsys.readouterr().err


def test_outputs_are_the_same_bytes_whatever_the_workers(bfcl, tmp_path):
    tasks = [f"multi_turn_{c}_{i}" for c in ("base", "miss_func") for i in (9, 10, 49, 173)]
    resolve = registry.resolver(RESOURCES)
    contents = []
    for workers in (1, 2):
        with WorkerPool(workers, resolve, preload=registry.modules()) as pool:
            report = audit_tasks([("bfcl_v3", "2026.3.23", tasks)], resolve, pool)
        contents.append(health_contents(report, tmp_path))
    assert contents[0] == contents[1]
    ids = pl.read_parquet(contents[0][tmp_path / "tasks.parquet"])["task_id"].to_list()
    assert ids == ["multi_turn_base_9", "multi_turn_base_10", "multi_turn_base_49", "multi_turn_base_173",
                   "multi_turn_miss_func_9", "multi_turn_miss_func_10", "multi_turn_miss_func_49",
                   "multi_turn_miss_func_173"]  # natural order


def _health_tasks(rows: list[tuple[str, str, str, bool | None, list[str]]]) -> pl.DataFrame:
    return pl.DataFrame([{"dataset": d, "release": r, "task_id": t, "sound": s, "codes": c,
                          "defects": c if s is False else [], "findings": len(c), "error": None}
                         for d, r, t, s, c in rows],
                        schema={"dataset": pl.Utf8, "release": pl.Utf8, "task_id": pl.Utf8, "sound": pl.Boolean,
                                "codes": pl.List(pl.Utf8), "defects": pl.List(pl.Utf8), "findings": pl.Int32,
                                "error": pl.Utf8})


def test_episodes_take_the_health_of_their_task_on_their_release(tmp_path):
    schema = pl.Schema(EPISODE_SCHEMA)
    rows = [{"dataset": "d", "model": "m", "method": "x", "task_id": t, "trial": 0, "rollout_id": f"{t}{r}",
             "source": "agent", "release": r, "failed_predicates": [], "n_turns": 1, "meta_json": "{}",
             "task_health": [], "task_defects": [], "user_turns": [], "user_source": "benchmark",
                 "agent_texts": []} for t, r in (("1", "new"), ("2", "new"), ("1", "old"), ("3", None))]
    scored = pl.DataFrame(rows, schema=schema)
    health = _health_tasks([("d", "new", "1", False, ["gold_fails"]), ("d", "new", "2", True, ["gold_no_effect"]),
                            ("d", "old", "2", False, ["gold_fails"])])
    marked = with_task_health(scored, health)
    assert marked.select("task_id", "release", "task_sound", "task_health", "task_defects").rows() == [
        ("1", "new", False, ["gold_fails"], ["gold_fails"]), ("2", "new", True, ["gold_no_effect"], []),
        ("1", "old", None, [], []), ("3", None, None, [], [])]
    scored.write_parquet(tmp_path / "episodes.parquet")
    health.write_parquet(tmp_path / "tasks.parquet")
    merge_episodes([tmp_path / "episodes.parquet"], tmp_path / "fed.parquet", health=[tmp_path / "tasks.parquet"])
    assert pl.read_parquet(tmp_path / "fed.parquet")["task_sound"].to_list() == [False, None, True, None]


def _block(task_sound: list[bool | None], fed: list[int]) -> pl.DataFrame:
    n = len(fed)
    return pl.DataFrame({"dataset": ["bfcl_v3"] * n, "model": ["m"] * n, "method": ["react"] * n,
                         "task_id": [f"t{i}" for i in range(n)], "trial": [0] * n, "T": [3] * n, "FED": fed,
                         "Y": [int(f == 4) for f in fed], "task_sound": task_sound,
                         "task_health": [["gold_fails"] if s is False else [] for s in task_sound],
                         "task_defects": [["gold_fails"] if s is False else [] for s in task_sound]},
                        schema_overrides={"T": pl.Int32, "FED": pl.Int32, "Y": pl.Int8, "trial": pl.Int32})


def test_statistics_say_how_many_tasks_are_unsound_and_can_leave_them_out():
    episodes = _block([False, True, True, None], [1, 4, 4, 2])
    kept = compute_stats(episodes, StatsSettings(resamples=200, seed=1))
    left = compute_stats(episodes, StatsSettings(resamples=200, seed=1, exclude_unsound=True))
    alone = compute_stats(episodes.filter(pl.col("task_sound").is_null() | pl.col("task_sound")),
                          StatsSettings(resamples=200, seed=1, exclude_unsound=False))

    def metric(stats, name):
        return stats.filter(pl.col("metric") == name).row(0, named=True)

    assert (metric(kept, "ter")["estimate"], metric(kept, "ter")["n"]) == (0.5, 4)  # the paper's protocol: all
    unsound = metric(kept, "unsound_tasks")
    assert (unsound["successes"], unsound["n"]) == (1, 3)  # one unsound of the three audited
    assert "excluded_tasks" not in kept["metric"].to_list()
    assert metric(left, "ter")["estimate"] == pytest.approx(2 / 3) and metric(left, "ter")["n"] == 3
    excluded = metric(left, "excluded_tasks")
    assert (excluded["successes"], excluded["n"], excluded["n_rollouts"]) == (1, 4, 1)
    # leaving them out is computing on the sound tasks alone (with the same draw)
    assert left.filter(pl.col("metric") == "pec")["estimate"].to_list() == \
        alone.filter(pl.col("metric") == "pec")["estimate"].to_list()
    assert health_cells(kept, episodes) == {("bfcl_v3", "m", "react"): "1 of 3 (gold_fails 1)"}
    assert health_cells(left, episodes) == {("bfcl_v3", "m", "react"): "left out 1 of 4 (gold_fails 1)"}
    assert table_g1(left, health=health_cells(left, episodes))["unsound tasks"].to_list() == [
        "left out 1 of 4 (gold_fails 1)"]
    assert health_cells(compute_stats(episodes.drop("task_sound", "task_health", "task_defects"),
                                      StatsSettings(resamples=200, seed=1))) == {}


def test_the_health_table_counts_tasks_per_code_with_examples_in_natural_order():
    tasks = _health_tasks([("d", "r", f"t_{i}", i % 3 != 0, ["gold_fails"] if i % 3 == 0 else []) for i in range(1, 13)]
                          + [("d", "r", "t_13", None, [])])
    findings = pl.DataFrame([{"dataset": "d", "release": "r", "task_id": f"t_{i}", "code": "gold_fails",
                              "kind": DEFECT, "effect": "scored", "evidence": "e"} for i in (12, 3, 9, 6, 6)]
                            + [{"dataset": "d", "release": "r", "task_id": "t_1", "code": "gold_fails",
                                "kind": "design", "effect": "fed", "evidence": "e"}])
    table = table_task_health(tasks, findings)
    assert table.select("code", "kind", "effect", "tasks", "findings", "examples").rows() == [
        ("gold_fails", "defect", "scored", "4 of 13", 5, "t_3, t_6, t_9, t_12"),
        ("gold_fails", "design", "fed", "1 of 13", 1, "t_1"),
        ("unsound (any defect)", "defect", "", "4 of 13", 5, "t_3, t_6, t_9, t_12"),
        ("check failed", "", "", "1 of 13", 0, "t_13")]


@pytest.fixture(scope="module")
def health_audit(bfcl, tmp_path_factory):
    """A BFCL result file scored on the v3-era data, audited (with its tasks' health) and viewed."""
    import bfcl_logs

    from prefix_audit.reports.view import view_results

    tmp_path = tmp_path_factory.mktemp("health-audit")
    log = bfcl_logs.write_result_file(tmp_path / "BFCL_v3_multi_turn_base_result.json", [
        bfcl_logs.gold_entry(bfcl, t) for t in ("multi_turn_base_10", "multi_turn_base_4", "multi_turn_base_9")])
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", str(log), "-o", str(out), "--model", "m", "--resamples", "200", "--bfcl-data", "2025.9.29",
                 "--resources", str(RESOURCES), "--workers", "1"]) == 0
    view_results(out, tmp_path / "site")
    return log, out, tmp_path / "site"


@pytest.mark.slow
def test_an_audit_marks_unsound_tasks_in_its_tables_and_browser(bfcl, health_audit, tmp_path):
    """The health of the file's three tasks on that release, each episode marked, G.1 saying how many tasks
    are unsound (or left out), and the browser marking the rollouts of unsound tasks, in natural task order,
    each turn opening with the user's request."""
    from prefix_audit.reports.pages import health_anchor

    log, out, site = health_audit
    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    assert episodes.select("task_id", "release", "task_sound").sort("task_id").rows() == [
        ("multi_turn_base_10", "2025.9.29", False), ("multi_turn_base_4", "2025.9.29", False),
        ("multi_turn_base_9", "2025.9.29", True)]
    assert episodes.filter(pl.col("task_id") == "multi_turn_base_10")["task_health"].to_list() == [
        ["answer_unreachable", "changed_between_releases"]]
    g1 = (out / "tables" / "table_G1.md").read_text()
    assert "| bfcl_v3 | m | imported | 3 | 2 of 3 (answer_unreachable 2) |" in g1
    assert "Unsound tasks: those benchmark health found a defect in" in (out / "tables" / "table_G1.tex").read_text()
    health = (out / "tables" / "table_task_health.md").read_text()
    assert ("| bfcl_v3 | 2025.9.29 | answer_unreachable | defect | scored | 2 of 3 | 2 | multi_turn_base_4, "
            "multi_turn_base_10 |") in health
    findings = pl.read_parquet(out / "health" / "bfcl_v3" / "findings.parquet")
    assert findings.filter((pl.col("task_id") == "multi_turn_base_4") & (pl.col("code") == "answer_unreachable"))[
        "evidence"].str.contains("the same words in another order").to_list() == [True]

    left = tmp_path / "left"
    assert main(["audit", "--no-figures", str(log), "-o", str(left), "--model", "m", "--resamples", "200", "--bfcl-data", "2025.9.29",
                 "--resources", str(RESOURCES), "--workers", "1", "--exclude-unsound"]) == 0
    assert "| bfcl_v3 | m | imported | 1 | left out 2 of 3 (answer_unreachable 2) |" in \
        (left / "tables" / "table_G1.md").read_text()
    assert pl.read_parquet(left / "fed" / "episodes.parquet").height == 3  # the FED table keeps every episode

    block = (site / "blocks" / "bfcl_v3" / "m" / "imported" / "index.html").read_text()
    order = [block.index(f">multi_turn_base_{n}</a>") for n in (4, 9, 10)]
    assert order == sorted(order)  # natural order: 9 before 10
    assert block.count('class="badge unsound"') == 2
    rollout = (site / "blocks" / "bfcl_v3" / "m" / "imported" / "r" / "3.html").read_text()  # base_10
    anchor = health_anchor("bfcl_v3", "2025.9.29", "multi_turn_base_10")
    assert "unsound task" in rollout and f'href="../../../../../health.html#{anchor}"' in rollout
    assert rollout.count('class="user-request"') == len(bfcl.entry("multi_turn_base_10").question)
    assert "Hey, can you set up a new directory named" in rollout
    page = (site / "health.html").read_text()
    assert f'id="{anchor}"' in page and "the same text but 1 character changed" in page
    assert '<svg class="pec-plot"' in (site / "index.html").read_text()


@pytest.mark.slow
def test_in_a_browser_unsound_tasks_filter_sort_in_natural_order_and_lead_to_their_findings(health_audit, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _, _, site = health_audit
    browser.get((site / "blocks" / "bfcl_v3" / "m" / "imported" / "index.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr")
    Select(browser.find_element(By.ID, "filter-health")).select_by_value("unsound")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows if r.is_displayed()] == [
        "multi_turn_base_4", "multi_turn_base_10"]
    Select(browser.find_element(By.ID, "filter-health")).select_by_value("")
    task_header = browser.find_element(By.CSS_SELECTOR, "#rollouts th:nth-child(2)")
    task_header.click()
    task_header.click()  # descending, then ascending again: the order of the numbers in the names
    task_header.click()
    assert [r.find_elements(By.TAG_NAME, "td")[1].text
            for r in browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr")] == [
        "multi_turn_base_4", "multi_turn_base_9", "multi_turn_base_10"]
    next(r for r in browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr")
         if r.find_elements(By.TAG_NAME, "td")[1].text == "multi_turn_base_10") \
        .find_element(By.CSS_SELECTOR, "a.badge.unsound").click()
    assert "health.html#task-" in browser.current_url
    target = browser.find_element(By.ID, browser.current_url.rsplit("#", 1)[1])
    assert "multi_turn_base_10" in target.text and "answer_unreachable" in target.text


def test_the_workflow_stage_fails_when_no_task_could_be_checked_but_keeps_a_single_failure(toy, tmp_path,
                                                                                          monkeypatch):
    """A check that fails for every task is the set-up's fault (a release not fetched, say): the job fails
    saying so rather than leaving every episode unaudited; one task's failure is that task's row."""
    import json

    from prefix_audit.health.tasks import HealthError, write_run_health

    tb, _ = toy
    tasks = tmp_path / "toy_lights.json"
    tasks.write_text(json.dumps({"task_ids": ["kitchen-on", "all-on"]}))
    outputs = [tmp_path / "h" / name for name in ("findings.parquet", "tasks.parquet", "summary.json")]
    healthy = tb.ToyLights.task_health

    def broken(self, task_id, release):
        if task_id == "all-on" or self.broken_everywhere:
            raise FileNotFoundError("no data for that release; fetch it first")
        return healthy(self, task_id, release)

    monkeypatch.setattr(tb.ToyLights, "task_health", broken)
    monkeypatch.setattr(tb.ToyLights, "broken_everywhere", True, raising=False)
    with pytest.raises(HealthError, match="the check of every task of toy_lights toy-1 failed, the first with "
                                          "FileNotFoundError: no data"):
        write_run_health([tasks], [], *outputs, resources=RESOURCES, dataset="toy_lights", plugins=["toy_bench"])
    assert not outputs[0].exists()
    monkeypatch.setattr(tb.ToyLights, "broken_everywhere", False, raising=False)
    write_run_health([tasks], [], *outputs, resources=RESOURCES, dataset="toy_lights", plugins=["toy_bench"])
    rows = pl.read_parquet(outputs[1]).select("task_id", "sound", "error").rows()
    assert rows == [("all-on", None, "FileNotFoundError: no data for that release; fetch it first"),
                    ("kitchen-on", True, None)]  # natural order
