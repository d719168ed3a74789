"""The site's health page (tasks most severe first, filtered by kind, code and effect, each linking its
rollouts), its G.1 (the same as ``table_G1.md``) and why a task says "not audited"."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import polars as pl
import pytest
from test_view import ARTIFACTS, audited_site, browser, results_root  # noqa: F401  (the site tests' fixtures)

from prefix_audit.cli import main
from prefix_audit.core.health import FINDINGS_SCHEMA, TASKS_SCHEMA
from prefix_audit.health.tasks import HealthReport, TaskResult, unaudited
from prefix_audit.replay import registry
from prefix_audit.replay.fed import with_task_health
from prefix_audit.reports import view

DATASET = "bfcl_v3"


def _health(release: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Health tables of six tasks of ``release`` (one finding of each kind, a failed check, a sound task)
    and a defect in an older release."""
    findings = [("multi_turn_base_1", "changed_between_releases", "caution", "scored"),
                ("multi_turn_base_2", "changed_between_releases", "note", "unseen"),
                ("multi_turn_base_2", "answer_unreachable", "defect", "scored"),
                ("multi_turn_base_3", "gold_fails", "design", "fed"),
                ("multi_turn_base_20", "changed_between_releases", "note", "seen"),
                ("multi_turn_base_11", "gold_not_prefix_executable", "definition", "fed")]
    rows = [{"dataset": DATASET, "release": release, "task_id": t, "code": c, "kind": k, "effect": e,
             "evidence": f"<b>{t}</b> {c}"} for t, c, k, e in findings]
    rows.append({"dataset": DATASET, "release": "old", "task_id": "multi_turn_base_7", "code": "gold_fails",
                 "kind": "defect", "effect": "scored", "evidence": "fails"})
    tasks = [{"dataset": DATASET, "release": release, "task_id": t, "sound": t != "multi_turn_base_2",
              "codes": [], "defects": ["answer_unreachable"] if t == "multi_turn_base_2" else [], "findings": 1,
              "error": None} for t in ("multi_turn_base_1", "multi_turn_base_2", "multi_turn_base_3",
                                       "multi_turn_base_5", "multi_turn_base_11", "multi_turn_base_20")]
    tasks.append({"dataset": DATASET, "release": release, "task_id": "multi_turn_base_10", "sound": None, "codes": [],
                  "defects": [], "findings": 0, "error": "KeyError: 'boom'"})
    tasks.append({"dataset": DATASET, "release": "old", "task_id": "multi_turn_base_7", "sound": False,
                  "codes": ["gold_fails"], "defects": ["gold_fails"], "findings": 1, "error": None})
    return (pl.DataFrame(tasks, schema=pl.Schema(TASKS_SCHEMA)), pl.DataFrame(rows, schema=pl.Schema(FINDINGS_SCHEMA)))


@pytest.fixture(scope="module")
def toy_blocks(results_root) -> list[view.Block]:  # noqa: F811
    return view.read_blocks(view.scored_blocks(results_root), results_root / "scored")


@pytest.fixture(scope="module")
def health_site(toy_blocks, tmp_path_factory) -> Path:
    """The toy grid's site with the health of :func:`_health` on the release its episodes were scored on."""
    release = toy_blocks[0].episodes["release"][0]
    health = _health(release)
    blocks = [dataclasses.replace(b, episodes=with_task_health(b.episodes, health[0])) for b in toy_blocks]
    out = tmp_path_factory.mktemp("health-site")
    for path, data in view.render_site(blocks, None, health=health).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(data)
    return out


def _tbodies(page: str) -> list[dict[str, str]]:
    return [dict(zip(("id", "kind", "code", "effect"), m))
            for m in re.findall(r'<tbody id="([^"]+)" data-kind="([^"]*)" data-code="([^"]*)" data-effect="([^"]*)"',
                                page)]


def test_tasks_come_most_severe_first_with_their_filter_tokens(health_site, toy_blocks):
    release = toy_blocks[0].episodes["release"][0]
    page = (health_site / "health.html").read_text()
    current = page[page.index(f'<section id="release-{view.path_label(f"{DATASET}.{release}")}">'):]
    bodies = _tbodies(current[:current.index("</section>")])
    assert [b["id"] for b in bodies] == [view.health_anchor(DATASET, release, f"multi_turn_base_{n}")
                                         for n in (2, 10, 3, 11, 1, 20)]  # defect, check failed, design, ...
    assert bodies[0] == {"id": bodies[0]["id"], "kind": "defect note",
                         "code": "answer_unreachable changed_between_releases", "effect": "scored unseen"}
    assert [b["kind"] for b in bodies[1:]] == ["failed", "design", "definition", "caution", "note"]
    assert "multi_turn_base_5" not in current  # a sound task without findings is not listed
    # the counts per kind link to the filtered view; every form offers every kind, so one address filters all
    assert '<a href="#kind=defect">defect 1</a>' in current and '<a href="#kind=failed">check failed 1</a>' in current
    assert page.count('data-filter="kind" data-tokens') == 2 and page.count('<option value="note">note</option>') == 2
    assert page.count('aria-label="filter the tasks of bfcl_v3 release') == 2
    assert "&lt;b&gt;multi_turn_base_2&lt;/b&gt;" in page and "<b>multi_turn_base_2" not in page  # evidence is text


def test_each_task_links_its_rollouts_in_the_site(health_site, toy_blocks):
    anchor = view.health_anchor(DATASET, toy_blocks[0].episodes["release"][0], "multi_turn_base_1")
    page = (health_site / "health.html").read_text()
    task = page[page.index(f'<tbody id="{anchor}"'):]
    task = task[:task.index("</tbody>")]
    by_method = {b.method: b for b in toy_blocks}
    react, planned = by_method["react"], by_method["plan_conditioned"]
    assert f'href="{react.folder}/index.html#task=multi_turn_base_1">m / react (5 rollouts)</a>' in task
    assert f'href="{planned.folder}/r/1.html">m / plan_conditioned</a>' in task
    block = (health_site / react.folder / "index.html").read_text()
    assert '<select id="filter-task" data-filter="task">' in block
    assert '<option value="multi_turn_base_1">multi_turn_base_1</option>' in block
    assert block.count('<tr data-task="multi_turn_base_1"') == 5


def _render(blocks, health, unaudited_map) -> dict[str, str]:
    files = view.render_site(blocks, None, health=health, unaudited=unaudited_map)
    return {p: b.decode() for p, b in files.items() if p.endswith(".html")}


@pytest.mark.parametrize("case", ["audit's reason", "check failed", "nothing said"])
def test_not_audited_says_why(toy_blocks, case):
    release = toy_blocks[0].episodes["release"][0]
    key = (DATASET, release, "multi_turn_base_1")
    tasks, findings = _health(release)
    if case == "check failed":
        tasks = tasks.with_columns(pl.when(pl.col("task_id") == key[2]).then(None).otherwise(pl.col("sound"))
                                   .alias("sound"),
                                   pl.when(pl.col("task_id") == key[2]).then(pl.lit("ValueError: <no gold>"))
                                   .otherwise(pl.col("error")).alias("error"))
    else:
        tasks = tasks.filter(pl.col("task_id") != key[2])
    blocks = [dataclasses.replace(b, episodes=with_task_health(b.episodes, tasks)) for b in toy_blocks]
    pages = _render(blocks, (tasks, findings), {key: "a <reason> of the audit"} if case == "audit's reason" else {})
    expected = {"audit's reason": "a &lt;reason&gt; of the audit", "check failed": "its check failed: ValueError: "
                "&lt;no gold&gt;", "nothing said": html.escape(view.NO_HEALTH_FOUND)}[case]
    react = next(b for b in blocks if b.method == "react")
    assert f"not audited: {expected}</dd>" in pages[f"{react.folder}/r/1.html"]
    block = pages[f"{react.folder}/index.html"]
    assert block.count(f'<span class="none" title="{html.escape(html.unescape(expected))}">not audited</span>') == 5


def test_the_audit_says_why_each_scored_task_was_not_audited():
    registry.load()
    scored = pl.DataFrame({"dataset": ["tau_v1_retail", "toolsandbox_recorded", "bfcl_v3", "bfcl_v3", "bfcl_v3",
                                       "bfcl_v3"],
                           "release": [None, None, None, "1999.1.1", "2026.3.23", "2026.3.23"],
                           "task_id": ["0", "add_reminder", "multi_turn_base_1", "multi_turn_base_2",
                                       "multi_turn_base_3", "no_such_task"]})
    report = HealthReport([TaskResult("bfcl_v3", "2026.3.23", "multi_turn_base_3")])
    releases = {"bfcl_v3": ["2026.3.23"], "tau_v1_retail": [], "toolsandbox_recorded": []}
    got = {(u.dataset, u.release, u.task_ids): u.reason for u in unaudited(scored, releases, report)}
    assert got == {
        ("bfcl_v3", None, ("multi_turn_base_1",)): "scored on no data release bfcl_v3 pins (a log that carries its "
                                                    "own task definitions is scored on those), and its health audits "
                                                    "only the pinned one (2026.3.23)",
        ("bfcl_v3", "1999.1.1", ("multi_turn_base_2",)): "release 1999.1.1 is not one bfcl_v3's health audits "
                                                          "(2026.3.23)",
        ("bfcl_v3", "2026.3.23", ("no_such_task",)): "not a task of release 2026.3.23",
        ("tau_v1_retail", None, ("0",)): registry.dataset("tau_v1_retail").no_health,
        ("toolsandbox_recorded", None, ("add_reminder",)): registry.dataset("toolsandbox_recorded").no_health}
    # every built-in dataset without health says why in its own words (plugins other tests register may not)
    built_in = [registry.dataset(d) for d in registry.dataset_names()
                if registry.dataset(d).adapter.__module__.startswith("prefix_audit.benchmarks.")]
    assert built_in and all(spec.no_health for spec in built_in if "health" not in spec.capabilities)


class _Table:
    """The cells of the first table of a page, header first, as text."""

    def __init__(self, page: str) -> None:
        table = page[page.index("<table"):page.index("</table>")]
        self.rows = [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
                      for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
                     for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]


def _markdown(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[c.replace(r"\|", "|") for c in re.split(r" (?<!\\)\| ", line[2:-2])] for line in lines]


def test_the_sites_g1_is_table_g1_md_on_the_toy_grid(results_root, tmp_path):  # noqa: F811
    assert main(["tables", str(results_root / "stats"), "-o", str(tmp_path / "tables"),
                 "--episodes", str(results_root / "fed" / "episodes.parquet")]) == 0
    assert main(["view", str(results_root), "-o", str(tmp_path / "site")]) == 0
    site = _Table((tmp_path / "site" / "tables.html").read_text()).rows
    assert site == _markdown((tmp_path / "tables" / "table_G1.md").read_text()) and len(site) == 3


def test_the_sites_g1_is_table_g1_md_on_an_audit_with_health(audited_site):  # noqa: F811
    md = _markdown((audited_site.parent / "audit" / "tables" / "table_G1.md").read_text())
    assert "unsound tasks" in md[0] and len(md) == 2
    assert _Table((audited_site / "tables.html").read_text()).rows == md


def test_in_a_browser_the_health_page_filters_by_kind_code_and_effect_from_its_address(browser, health_site):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.set_window_size(1366, 768)
    browser.get((health_site / "health.html").as_uri() + "#kind=defect")
    tables = browser.find_elements(By.CSS_SELECTOR, "table.health")
    assert len(tables) == 2

    def shown(table) -> list[str]:
        return [b.get_attribute("id").rsplit(".", 1)[1] for b in table.find_elements(By.TAG_NAME, "tbody")
                if b.is_displayed()]
    assert shown(tables[0]) == ["multi_turn_base_2"] and shown(tables[1]) == ["multi_turn_base_7"]
    form = browser.find_elements(By.CSS_SELECTOR, "form.filters")[0]
    assert form.find_element(By.CSS_SELECTOR, "[data-shown]").text == "1"
    kind = Select(form.find_element(By.CSS_SELECTOR, "select[data-filter=kind]"))
    kind.select_by_value("")
    assert shown(tables[0]) == ["multi_turn_base_2", "multi_turn_base_10", "multi_turn_base_3",
                                "multi_turn_base_11", "multi_turn_base_1", "multi_turn_base_20"]
    Select(form.find_element(By.CSS_SELECTOR, "select[data-filter=code]")).select_by_value("changed_between_releases")
    Select(form.find_element(By.CSS_SELECTOR, "select[data-filter=effect]")).select_by_value("scored")
    assert shown(tables[0]) == ["multi_turn_base_2", "multi_turn_base_1"]
    assert "code=changed_between_releases" in browser.current_url and "effect=scored" in browser.current_url
    for name in ("code", "effect"):  # a link sets the filters it names only (site.js): the others are reset here
        Select(form.find_element(By.CSS_SELECTOR, f"select[data-filter={name}]")).select_by_value("")
    browser.find_element(By.LINK_TEXT, "note 2").click()  # a count per kind opens the filtered view
    assert shown(tables[0]) == ["multi_turn_base_2", "multi_turn_base_20"]
    # a plain anchor (a rollout page's link to its task) is left alone: every task of the page shows
    anchor = tables[0].find_elements(By.TAG_NAME, "tbody")[4].get_attribute("id")
    browser.get("about:blank")
    browser.get((health_site / "health.html").as_uri() + "#" + anchor)
    tables = browser.find_elements(By.CSS_SELECTOR, "table.health")
    assert len(shown(tables[0])) == 6
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "view-health.png"))
