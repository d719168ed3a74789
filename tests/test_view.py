"""``prefix-audit view``: the static audit browser — its pages, links, escaping and bytes, and (where
Debian's chromium and chromedriver are installed) the site driven in a real browser from file://."""

from __future__ import annotations

import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urlparse

import pytest
from conftest import RESOURCES, ROOT

from prefix_audit.cli import main
from prefix_audit.core.records import dumps
from prefix_audit.reports import block_pages, pages, view

TASK = "multi_turn_base_1"
SCRIPT = "<script>document.title = 'pwned'; window.pwned = true;</script>"
PLANNING = [{"turn": 0, "status": "accepted", "candidates": 2, "rejections": [{"reason": "<b>bold</b>"}]}]


def _records(bfcl) -> dict[str, list[dict]]:
    """Two blocks of hand-made rollouts (method → records) on one BFCL task."""
    base = json.loads(dumps(bfcl.reference_rollout(TASK))) | {"model": "m"}
    bad_tool = json.loads(json.dumps(base["turns"]))
    bad_tool[1][0]["calls"][0] = {"raw": "no_such_tool(x=1)"}
    scripted = json.loads(json.dumps(base["turns"]))
    scripted[-1].append({"calls": [], "text": SCRIPT})
    long_text = json.loads(json.dumps(base["turns"]))
    long_text[-1].append({"calls": [], "text": "x" * 2500})
    react = [base | {"method": "react", "rollout_id": "gold"},
             base | {"method": "react", "rollout_id": "bad-tool", "turns": bad_tool, "trial": 1},
             base | {"method": "react", "rollout_id": "script", "turns": scripted, "trial": 2},
             base | {"method": "react", "rollout_id": "long", "turns": long_text, "trial": 3},
             base | {"method": "react", "rollout_id": "infra", "turns": [], "trial": 4,
                     "infra_error": "Error during inference: 500 <i>upstream</i>"},
             base | {"method": "react", "rollout_id": "gold", "trial": 5}]  # a duplicate: quarantined
    planned = [base | {"method": "plan_conditioned", "rollout_id": "planned", "meta": {"planning": PLANNING}}]
    return {"react": react, "plan_conditioned": planned}


@pytest.fixture(scope="module")
def results_root(bfcl, tmp_path_factory) -> Path:
    """A results root as the workflow lays it out: scored blocks, the FED table and statistics."""
    root = tmp_path_factory.mktemp("results")
    for method, records in _records(bfcl).items():
        source = root / "rollouts" / f"{method}.jsonl"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("".join(json.dumps(r) + "\n" for r in records))
        assert main(["score", str(source), "-o", str(root / "scored" / "bfcl_v3" / "m" / method),
                     "--resources", str(RESOURCES)]) == 0
    from prefix_audit.replay.fed import merge_episodes

    merge_episodes(sorted((root / "scored").rglob("episodes.parquet")), root / "fed" / "episodes.parquet")
    assert main(["stats", str(root / "fed" / "episodes.parquet"), "-o", str(root / "stats"), "--resamples", "50"]) == 0
    return root


@pytest.fixture(scope="module")
def site(results_root, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["view", str(results_root), "-o", str(out)]) == 0
    return out


def _pages(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text() for p in sorted(site.rglob("*.html"))}


def _rollout_page(site: Path, method: str, rollout_id: str) -> str:
    for name, text in _pages(site).items():
        if f"/{method}/r/" in name and f"<code>{rollout_id}</code>" in text:
            return text
    raise AssertionError(f"no page for {rollout_id}")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.links += [attrs[a] for a in ("href", "src") if a in attrs]
        if tag == "script":
            self.scripts.append(attrs)


def test_every_link_resolves_inside_the_site_and_nothing_leaves_it(site, results_root):
    assert _check_links(site, results_root) > 50


def _check_links(site: Path, results_root: Path) -> int:
    """Assert every link of every page of ``site`` stays inside it and resolves; return how many."""
    parsed = 0
    for name, text in _pages(site).items():
        parser = _Links()
        parser.feed(text)
        for link in parser.links:
            assert not urlparse(link).scheme and not link.startswith("/"), (name, link)  # no network, no absolute
            target, _ = urldefrag(link)
            if target:
                assert (site / name).parent.joinpath(target).resolve().is_file(), (name, link)
            parsed += 1
        assert [s.get("src", "").rsplit("/", 1)[-1] for s in parser.scripts] == ["site.js"], name
        assert str(results_root) not in text and str(site) not in text, name  # no absolute paths
    return parsed


def test_the_index_answers_where_agents_break_per_benchmark(site):
    index = (site / "index.html").read_text()
    section = index.split('<section class="dataset" id="dataset-bfcl_v3">')[1].split("</section>")[0]
    rows = re.findall(r'<td class="name"><a href="(blocks/[^"]+)/index.html">m · ', section)
    assert rows == ["blocks/bfcl_v3/m/plan_conditioned", "blocks/bfcl_v3/m/react"]
    react = section.split('<a href="blocks/bfcl_v3/m/react/index.html">m · react</a></td>')[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>|&nbsp;", " ", c).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", react, re.S)]
    # N (one task, five trials; one infrastructure failure, one quarantined record), TER of the four with
    # an action, final success of all five, the FED histogram, one first failure: a schema failure (100%
    # of the first failures), the agent's, at no_such_tool
    assert cells[:3] == [["1", "×", "5", "1", "infra", "1", "quarantined"], ["0.750"], ["0.600"]]
    assert cells[4:] == [["1"], ["100%"], ["0%"], ["0%"], ["0%"], ["0%"], ["100%"], ["0%"], ["0%"],
                         ["no_such_tool", "1"]]
    assert 'href="blocks/bfcl_v3/m/react/index.html#tool=no_such_tool"' in react
    assert 'aria-label="FED distribution: FED 2: 1; fully executable: 3"' in react
    # one plot of both blocks' PEC curves to the longest trajectory, axes labelled, bands from the statistics
    plot = section.split('<svg class="pec-plot"')[1].split("</svg>")[0]
    assert plot.count('<g class="series"') == 2 and plot.count('<polygon class="band"') == 2
    assert ">depth k (actions)</text>" in plot and ">PEC@k</text>" in plot
    assert re.search(r"<title>m · react: PEC@1 1\.000, PEC@2 0\.750", plot)
    legend = section.split('<ul class="legend">')[1].split("</ul>")[0]
    assert legend.count("<li>") == 2 and 'href="blocks/bfcl_v3/m/react/index.html"' in legend


def test_the_pec_curve_runs_to_the_longest_trajectory_and_agrees_with_the_statistics_at_small_k():
    from prefix_audit.statistics.curves import pec_curve
    from prefix_audit.statistics.metrics import pec

    fed, T, tasks = [1, 3, 6, 2, 7, 4], [4, 5, 5, 3, 6, 3], ["a", "a", "b", "b", "c", "c"]
    curve = pec_curve(fed, T, tasks, 6, resamples=400, seed=3)
    assert curve.estimate == tuple(pec(fed, T, 6)) and len(curve.low) == len(curve.high) == 6
    assert all(lo <= e <= hi for lo, e, hi in zip(curve.low, curve.estimate, curve.high))
    assert curve.estimate[-1] == 1 / 6  # only the rollout with FED 7 = T + 1 survives depth 6
    assert pec_curve(fed, T, tasks, 6, resamples=400, seed=3) == curve  # same seed, same band
    assert pec_curve(fed, T, tasks, 6).low is None  # no band asked for


def test_quarantined_records_are_one_line_per_cause(results_root, site, tmp_path):
    react = (site / "blocks" / "bfcl_v3" / "m" / "react" / "index.html").read_text()
    section = react.split('<section class="quarantine">')[1].split("</section>")[0]
    assert re.findall(r"<li>([^<]*)</li>", section) == [
        "1 × duplicate rollout_id in block bfcl_v3/m/react (the first of each counts) (entry gold)"]
    assert 'class="quarantine"' not in (site / "blocks" / "bfcl_v3" / "m" / "plan_conditioned" / "index.html").read_text()
    # what an import quarantined, by cause on the index: three entries of one cause, and a record an
    # older version wrote (no cause: its reason is its cause)
    from prefix_audit.core.records import BadLine

    root = tmp_path / "results"
    shutil.copytree(results_root, root)
    imported = root / "rollouts" / "imported" / "quarantine.jsonl"
    imported.parent.mkdir(parents=True)
    records = [BadLine("log.json", n, f"unusable τ simulation (task '{n}'): tau2 domain 'x' is not one this release "
                       f"replays", cause="unusable τ simulation: tau2 domain 'x' is not one this release replays",
                       entry=("task", str(n))).to_json() for n in (3, 1, 2, 4)]
    records.append({"path": "old.json", "line": 7, "reason": "invalid JSON: Expecting value", "rollout_id": None,
                    "excerpt": ""})
    imported.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["view", str(root), "-o", str(tmp_path / "site")]) == 0
    index = (tmp_path / "site" / "index.html").read_text()
    assert re.findall(r"<li>([^<]*)</li>", index.split('<h2 id="quarantine">')[1]) == [
        "4 × unusable τ simulation: tau2 domain &#39;x&#39; is not one this release replays (tasks 3, 1, 2, …)",
        "1 × invalid JSON: Expecting value (line 7)"]
    assert 'id="quarantine"' not in (site / "index.html").read_text()


def test_a_rollout_page_shows_the_first_failure_highlighted_with_its_predicates(site):
    page = _rollout_page(site, "react", "bad-tool")
    first = page.split('<tr id="first-failure" class="first-failure v-fail">')[1].split("</tr>")[0]
    assert "no_such_tool(x=1)" in first and "first failure" in first and "schema" in first
    assert page.count('id="first-failure"') == 1
    assert "not judged (after the first failure)" in page  # the actions after it
    gold = _rollout_page(site, "react", "gold")
    assert 'id="first-failure"' not in gold and "T + 1: fully executable" in gold


def test_model_output_is_text_never_markup(site):
    page = _rollout_page(site, "react", "script")
    assert SCRIPT not in page and "&lt;script&gt;document.title" in page
    infra = _rollout_page(site, "react", "infra")
    assert "<i>upstream</i>" not in infra and "&lt;i&gt;upstream&lt;/i&gt;" in infra
    block = (site / "blocks" / "bfcl_v3" / "m" / "react" / "index.html").read_text()
    assert "<i>upstream</i>" not in block
    planned = _rollout_page(site, "plan_conditioned", "planned")
    assert "Planning trace" in planned and "<b>bold</b>" not in planned and "&lt;b&gt;bold" in planned


def test_long_text_is_cut_with_a_note(site):
    page = _rollout_page(site, "react", "long")
    assert "cut at 2,000 of 2,500 characters" in page and "x" * 2001 not in page
    assert pages.clip("x" * 1999) == {"text": "x" * 1999, "note": None}
    assert pages.clip("x" * 2500)["note"] == "cut at 2,000 of 2,500 characters"
    assert pages.clip("x" * 2000)["note"] is None  # an action's text is stored whole
    assert "keeps no more" in pages.clip("x" * 2000, stored=2000)["note"]  # an observation: at most 2,000 stored


def test_the_site_is_the_same_bytes_twice_and_replaces_its_previous_files(results_root, site, tmp_path):
    again = tmp_path / "again"
    assert main(["view", str(results_root), "-o", str(again)]) == 0

    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert files(again) == files(site)
    (again / "mine.txt").write_text("kept")
    stale = again / "blocks" / "gone" / "index.html"
    stale.parent.mkdir()
    stale.write_text("not listed in the manifest: kept too")
    episodes = sorted((results_root / "scored").rglob("episodes.parquet"))[:1]  # one block only
    view.write_site(episodes, again, scored_root=results_root / "scored")
    after = files(again)
    assert not [name for name in after if "/react/" in name]  # the previous site's files went
    assert after["mine.txt"] == b"kept" and "blocks/gone/index.html" in after


def test_rollout_lists_are_paginated(results_root, tmp_path, monkeypatch):
    monkeypatch.setattr(block_pages, "ROLLOUTS_PER_PAGE", 2)
    report = view.view_results(results_root, tmp_path / "paged")
    block = tmp_path / "paged" / "blocks" / "bfcl_v3" / "m" / "react"
    assert sorted(p.name for p in block.glob("*.html")) == ["index.html", "page-2.html", "page-3.html"]
    assert 'href="page-3.html"' in (block / "index.html").read_text()
    assert report.rollouts == 6 and report.largest_page[1] < 5 * 2**20


def test_the_tables_page_links_its_cells_to_blocks(site):
    tables = (site / "tables.html").read_text()
    assert 'href="blocks/bfcl_v3/m/react/index.html"' in tables and "Table G.1" in tables
    assert "No tau_airline/tau_retail blocks" in tables


def test_view_needs_a_results_root_of_episodes_tables(results_root, tmp_path, capsys):
    assert main(["view", str(tmp_path), "-o", str(tmp_path / "site")]) == 2
    assert "no scored/ folder" in capsys.readouterr().err
    wrong = tmp_path / "scored" / "x" / "episodes.parquet"
    wrong.parent.mkdir(parents=True)
    shutil.copy(results_root / "stats" / "stats.parquet", wrong)
    assert main(["view", str(tmp_path), "-o", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "not an episodes table" in err and len(err.strip().splitlines()) == 1


# --- in a real browser ---------------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / ".test-artifacts"


def chromium(width: int, height: int, *flags: str):
    """Debian's chromium, headless, driven by selenium at ``width`` × ``height``; skips the test without them."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.skip("no browser: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--disable-gpu", f"--window-size={width},{height}", "--allow-file-access-from-files",
                 *flags):
        options.add_argument(flag)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # chromium refuses to run as root otherwise (CI runs as root)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_window_size(width, height)
    return driver


@pytest.fixture(scope="module")
def browser():
    driver = chromium(1400, 1000)
    yield driver
    driver.quit()


def test_in_a_browser_filter_by_category_open_a_rollout_and_see_its_first_failure(browser, site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get((site / "index.html").as_uri())
    browser.find_element(By.LINK_TEXT, "m · react").click()
    assert browser.current_url.endswith("blocks/bfcl_v3/m/react/index.html")
    rows = browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr")
    assert len(rows) == 5 and browser.find_element(By.ID, "shown").text == "5"

    Select(browser.find_element(By.ID, "filter-category")).select_by_value("schema")
    visible = [r for r in rows if r.is_displayed()]
    assert len(visible) == 1 and browser.find_element(By.ID, "shown").text == "1"
    assert "schema" in visible[0].text
    Select(browser.find_element(By.ID, "filter-category")).select_by_value("")
    Select(browser.find_element(By.ID, "filter-infra")).select_by_value("yes")
    assert [r.is_displayed() for r in rows].count(True) == 1

    Select(browser.find_element(By.ID, "filter-infra")).select_by_value("")
    browser.find_element(By.CSS_SELECTOR, "#rollouts th:nth-child(5)").click()  # sort by FED
    order = [r.find_elements(By.TAG_NAME, "td")[4].get_attribute("data-value") for r in rows]
    shown = [r.find_elements(By.TAG_NAME, "td")[4].get_attribute("data-value")
             for r in browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr")]
    assert shown == sorted(order, key=float)

    Select(browser.find_element(By.ID, "filter-category")).select_by_value("schema")
    next(r for r in browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr") if r.is_displayed()) \
        .find_element(By.TAG_NAME, "a").click()
    first = browser.find_element(By.ID, "first-failure")
    assert "first-failure" in first.get_attribute("class") and "no_such_tool(x=1)" in first.text
    assert first.value_of_css_property("background-color") == "rgba(253, 232, 232, 1)"  # highlighted
    ARTIFACTS.mkdir(exist_ok=True)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", first)
    assert browser.save_screenshot(str(ARTIFACTS / "view-first-failure.png"))


def test_in_a_browser_model_output_does_not_run(browser, site):
    from selenium.webdriver.common.by import By

    page = next(p for p in (site / "blocks" / "bfcl_v3" / "m" / "react" / "r").glob("*.html")
                if "<code>script</code>" in p.read_text())
    browser.get(page.as_uri())
    assert browser.execute_script("return window.pwned === undefined") and "pwned" not in browser.title
    assert SCRIPT in browser.find_element(By.TAG_NAME, "main").text  # shown as text


def test_the_shipped_assets_are_the_packaged_ones(site):
    for name in ("site.css", "site.js"):
        packaged = Path(view.__file__).parent / "templates" / "site" / "assets" / name
        assert (site / "assets" / name).read_bytes() == packaged.read_bytes()


def test_a_pooled_f1_row_links_a_page_of_both_member_blocks(results_root, tmp_path):
    from toolsandbox_runs import BRUNO, Call, ScenarioRun, write_run

    from prefix_audit.replay.fed import merge_episodes
    from prefix_audit.statistics.settings import StatsSettings
    from prefix_audit.statistics.stats import write_stats

    root = tmp_path / "root"
    shutil.copytree(results_root / "scored", root / "scored")
    run = write_run(tmp_path / "runs", [ScenarioRun("find", [("user", "Find Bruno"), ("calls", [
        Call("c1", "search_contacts", {"name": "Bruno"}, result=[BRUNO])])])])
    rollouts = tmp_path / "toolsandbox.jsonl"
    assert main(["import", "toolsandbox", str(run), "-o", str(rollouts), "--model", "m", "--method", "react"]) == 0
    assert main(["score", str(rollouts), "-o", str(root / "scored" / "toolsandbox_recorded" / "m" / "react")]) == 0
    pools = {"mixed": ["bfcl_v3", "toolsandbox_recorded"]}
    episodes = sorted((root / "scored").rglob("episodes.parquet"))
    merge_episodes(episodes, root / "fed" / "episodes.parquet")
    write_stats(root / "fed" / "episodes.parquet", root / "stats" / "stats.parquet",
                StatsSettings(resamples=50, seed=0, pools=pools))
    view.write_site(episodes, tmp_path / "site", scored_root=root / "scored", stats_path=root / "stats" / "stats.parquet",
                    pools=pools)

    tables = (tmp_path / "site" / "tables.html").read_text()
    f1 = tables.split("Table F.1: bfcl_v3 + toolsandbox_recorded pooled per task")[1]
    assert f1.count('<a href="pools/mixed/m/react.html">') == 8  # every cell of the pooled row
    pool_page = (tmp_path / "site" / "pools" / "mixed" / "m" / "react.html").read_text()
    for block in ("bfcl_v3/m/react", "toolsandbox_recorded/m/react"):
        assert f'href="../../../blocks/{block}/index.html"' in pool_page
        assert (tmp_path / "site" / "blocks" / block / "index.html").is_file()
    assert _check_links(tmp_path / "site", root) > 50


# --- imported logs: the audit against what the logs recorded ------------------------------------------


@pytest.fixture(scope="module")
def audited_site(bfcl, tmp_path_factory) -> Path:
    """The site of an audit of a BFCL log whose record of one call was tampered with (HTML in it)."""
    from bfcl_logs import gold_entry, write_result_file, write_score_file

    root = tmp_path_factory.mktemp("audited")
    lines = [gold_entry(bfcl, task) for task in ("multi_turn_base_1", "multi_turn_base_4")]
    lines[0]["inference_log"][1]["step_0"][2]["content"] = f'{{"error": "{SCRIPT}"}}'
    log = write_result_file(root / "logs" / "BFCL_v4_multi_turn_base_result.json", lines)
    write_score_file(root / "logs" / "BFCL_v4_multi_turn_base_score.json", 2, {})
    assert main(["audit", "--no-figures", str(log), "-o", str(root / "audit"), "--model", "m", "--resamples", "50",
                 "--resources", str(RESOURCES)]) == 0
    assert main(["view", str(root / "audit"), "-o", str(root / "site")]) == 0
    return root / "site"


def test_imported_blocks_show_how_far_their_audit_agrees_with_the_log(audited_site, site):
    index = (audited_site / "index.html").read_text()
    assert 'id="trust-table"' in index and "replay_diverged 1" in index
    assert "WARNING: replay reproduces only" in index
    assert 'id="trust-table"' not in (site / "index.html").read_text()  # generated blocks carry no record
    block = (audited_site / "blocks" / "bfcl_v3" / "m" / "imported" / "index.html").read_text()
    assert 'data-issue="replay_diverged"' in block and 'data-issue="none"' in block and "recorded Y" in block
    pages = [text for name, text in _pages(audited_site).items() if "/r/" in name and 'class="diverged"' in text]
    assert len(pages) == 1
    [diverged] = pages
    assert "recorded in the log" in diverged and "&lt;script&gt;" in diverged and SCRIPT not in diverged
    assert "Y = 1 — BFCL score file: valid (agrees with the replayed Y)" in diverged


def test_in_a_browser_filter_by_log_issue_and_see_the_record_beside_the_replay(browser, audited_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get((audited_site / "index.html").as_uri())
    assert "replay_diverged 1" in browser.find_element(By.ID, "trust-table").text
    browser.find_element(By.CSS_SELECTOR, "#trust-table a").click()
    Select(browser.find_element(By.ID, "filter-issue")).select_by_value("replay_diverged")
    visible = [r for r in browser.find_elements(By.CSS_SELECTOR, "#rollouts tbody tr") if r.is_displayed()]
    assert len(visible) == 1 and browser.find_element(By.ID, "shown").text == "1"
    visible[0].find_element(By.TAG_NAME, "a").click()
    row = browser.find_element(By.CSS_SELECTOR, "tr.diverged")
    assert row.is_displayed() and SCRIPT in row.text and browser.execute_script("return window.pwned === undefined")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", row)
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "view-diverged-record.png"))
