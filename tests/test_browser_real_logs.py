"""The audit browser of real logs, in a real browser at 1366×768: it answers where agents break, why and
whose at a glance, and no page kind has a serious or critical accessibility violation (axe-core).

Needs ``../shared/fixtures/real-logs`` (skips without), Debian's chromium and chromedriver, selenium, and for
the accessibility check npm's ``axe-core`` (``.ci/run`` installs it into ``.test-artifacts/node``; set
``PREFIX_AUDIT_AXE`` to another ``axe.min.js``). The screenshots of the index, a block, a rollout and the
health page go to ``.test-artifacts/screenshots``, or to ``docs/screenshots`` with
``PREFIX_AUDIT_SCREENSHOTS=docs/screenshots`` (how the committed ones were made).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, unquote, urldefrag

import polars as pl
import pytest
from conftest import RESOURCES, ROOT, SHARED
from test_view import chromium

from prefix_audit.cli import main
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.reports.glance import first_failures

REAL = SHARED / "fixtures" / "real-logs"
AXE_VERSION = "4.14.1"  # as .ci/run installs it
AXE = Path(os.environ.get("PREFIX_AUDIT_AXE", ROOT / ".test-artifacts" / "node" / "node_modules" / "axe-core"
                          / "axe.min.js"))
SHOTS = ROOT / os.environ.get("PREFIX_AUDIT_SCREENSHOTS", ".test-artifacts/screenshots")
WIDTH, HEIGHT = 1366, 768
# Every term the glossary page must define (issue 56), by its anchor.
TERMS = ("fed", "t", "v-j", "pec", "depth-support", "ter", "auc-pec", "mean-fed", "rr", "pass-k", "ter-k",
         "origin", "sound-task")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not REAL.is_dir(), reason="needs ../shared/fixtures/real-logs")]


@pytest.fixture(scope="module")
def audit(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real-audit") / "audit"
    assert main(["audit", str(REAL), "-o", str(out), "--no-figures", "--resamples", "200",
                 "--resources", str(RESOURCES)]) == 0
    return out


@pytest.fixture(scope="module")
def driver():
    browser = chromium(WIDTH, HEIGHT, "--hide-scrollbars", "--force-device-scale-factor=1")
    yield browser
    browser.quit()


def _by(css: str):
    from selenium.webdriver.common.by import By
    return By.CSS_SELECTOR, css


def _open(driver, page: Path, fragment: str = "") -> None:
    if fragment:  # a fresh load, not a fragment change of the page already shown (and no refresh racing it)
        driver.get("about:blank")
    driver.get(page.as_uri() + fragment)
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), \
        f"{page.name} scrolls sideways at {WIDTH} px"


def _follow(driver, link) -> None:
    """Click a link to another page and wait until that page has loaded (a scripted click returns before)."""
    from selenium.webdriver.support.ui import WebDriverWait
    page = urldefrag(link.get_attribute("href"))[0]
    driver.execute_script("arguments[0].click()", link)
    WebDriverWait(driver, 30).until(lambda d: urldefrag(d.current_url)[0] == page
                                    and d.execute_script("return document.readyState") == "complete")


def _shot(driver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.execute_script("window.scrollTo(0, 0)")
    assert driver.save_screenshot(str(SHOTS / f"{name}.png"))


def _blocks(audit: Path) -> list[tuple[Path, pl.DataFrame, pl.DataFrame]]:
    """Each scored block: its site folder, episodes and actions, read independently of the site."""
    out = []
    for path in sorted((audit / "scored").rglob("episodes.parquet")):
        folder = audit / "site" / "blocks" / path.parent.relative_to(audit / "scored")
        out.append((folder, pl.read_parquet(path), pl.read_parquet(path.with_name("actions.parquet"))))
    return out


def test_the_index_shows_each_benchmarks_pec_curves_shares_origins_and_tools(audit, driver):
    site = audit / "site"
    _open(driver, site / "index.html")
    _shot(driver, "index")
    episodes = pl.read_parquet(audit / "fed" / "episodes.parquet")
    sections = driver.find_elements(*_by("section.dataset"))
    assert {s.get_attribute("id") for s in sections} == {f"dataset-{d}" for d in episodes["dataset"].unique()}
    for section in sections:
        dataset = section.get_attribute("id").removeprefix("dataset-")
        plot = section.find_element(*_by("svg.pec-plot"))
        assert plot.size["width"] >= 400 and plot.size["height"] >= 200  # a real plot, not a sparkline
        labels = [t.text for t in plot.find_elements(*_by("text.axis-label"))]
        assert labels == ["depth k (actions)", "PEC@k"]
        longest = int(episodes.filter(pl.col("dataset") == dataset)["T"].max())
        ticks = [int(t.text) for t in plot.find_elements(*_by('text.tick[text-anchor="middle"]'))]  # the x axis's
        assert ticks[0] == 1 and ticks[-1] <= longest and f"k = 1 … {longest}" in section.text
    # per block: the shares of its first failures by category and by origin, its commonest tools
    for folder, block_episodes, actions in _blocks(audit):
        href = folder.relative_to(site).as_posix() + "/index.html"
        row = driver.find_element(*_by(f'table.blocks td.name a[href="{href}"]')).find_element(
            "xpath", "./ancestor::tr")
        failures = first_failures(block_episodes, actions)
        cells = row.find_elements(*_by("td"))
        shares = [c.text for c in cells[6:6 + len(CATEGORIES) + 3]]
        expected = [f"{100 * (failures[column] == name).sum() / failures.height:.0f}%" if failures.height else "—"
                    for column, names in (("category", CATEGORIES), ("origin", ("agent", "user", "benchmark")))
                    for name in names]
        assert shares == expected, href
        tools = [a.get_attribute("href") for a in row.find_elements(*_by("td.tools a"))]
        commonest = failures.group_by("tool").len().sort(["len", "tool"], descending=[True, False])
        assert [unquote(urldefrag(t)[1]) for t in tools] == [f"tool={t}" for t in commonest["tool"][:3]]


# The rollout rows a block page shows (their data attributes and failing call), in one script call.
_SHOWN_ROWS = """return Array.from(document.querySelectorAll('#rollouts tbody tr')).filter(row => row.checkVisibility())
    .map(row => ({...row.dataset, failing: row.querySelector('td.failing')?.innerText ?? ''}));"""


def test_a_tool_link_opens_its_rollouts_and_the_block_says_where_agents_break(audit, driver):
    site = audit / "site"
    folder, episodes, actions = max(_blocks(audit), key=lambda b: b[1].height)
    failures = first_failures(episodes, actions)
    tool, count = failures.group_by("tool").len().sort(["len", "tool"], descending=[True, False]).row(0)
    _open(driver, site / "index.html")
    link = driver.find_element(*_by(f'table.blocks a[href$="{folder.relative_to(site).as_posix()}/index.html'
                                    f'#tool={quote(tool, safe="")}"]'))
    _follow(driver, link)
    shown = driver.execute_script(_SHOWN_ROWS)
    assert len(shown) == count == int(driver.find_element(*_by("#shown")).text)
    assert {r["tool"] for r in shown} == {tool}
    assert all(tool in r["failing"] for r in shown)  # the failing call, not a code
    # the block's "where agents break": tool × category × origin, most first, each row a filter
    counts = [int(n) for n in driver.execute_script(
        "return Array.from(document.querySelectorAll('#where-table tbody tr'), row => row.cells[3].innerText)")]
    assert counts == sorted(counts, reverse=True) and counts[0] == failures.group_by(
        "tool", "category", "origin").len()["len"].max()
    where = driver.find_element(*_by("#where-table tbody tr"))
    where.find_element(*_by("a")).click()
    first = where.find_elements(*_by("td"))
    shown = driver.execute_script(_SHOWN_ROWS)
    assert len(shown) == counts[0] and {r["category"] for r in shown} == {first[1].text.replace(" ", "_")}
    _open(driver, folder / "index.html")
    _shot(driver, "block")


def test_a_rollout_page_shows_every_message_whose_it_is_and_its_terms(audit, driver):
    site = audit / "site"
    episodes = pl.read_parquet(audit / "fed" / "episodes.parquet")
    tau = episodes.filter((pl.col("dataset") == "tau_retail") & (pl.col("FED") <= pl.col("T"))
                          & (pl.col("agent_texts").list.len() > 0)).row(0, named=True)
    page = next(p for p in site.rglob("r/*.html") if f"<code>{tau['rollout_id']}</code>" in p.read_text())
    _open(driver, page)
    said = [r.text for r in driver.find_elements(*_by("tr.agent-text"))]
    assert len(said) == len(tau["agent_texts"])
    assert tau["agent_texts"][0]["text"].strip().splitlines()[0][:40] in said[0]
    users = driver.find_elements(*_by("tr.user-request"))
    assert users and all("simulated user" in u.text for u in users)
    first = driver.find_element(*_by("#first-failure"))
    assert "first failure" in first.text and tau["origin"] in first.text
    for name in ("t", "fed", "origin"):  # the facts' terms link their definitions
        term = driver.find_element(*_by(f'dl.facts a.term[href$="glossary.html#{name}"]'))
        assert term.get_attribute("title")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / "rollout.png"))
    # a BFCL rollout the benchmark stopped early says the turns it never reached once
    stopped = episodes.filter((pl.col("dataset") == "bfcl_v3") & (pl.col("user_turns").list.len() > pl.col("n_turns")))
    if stopped.height:
        rollout_id = stopped["rollout_id"][0]
        text = next(p.read_text() for p in site.rglob("r/*.html") if f"<code>{rollout_id}</code>" in p.read_text())
        assert text.count("never reached") == 1 and "After the last turn" not in text


def test_the_glossary_defines_every_metric_and_headers_carry_their_definitions(audit, driver):
    site = audit / "site"
    _open(driver, site / "glossary.html")
    for anchor in TERMS:
        entry = driver.find_element(*_by(f"#{anchor}"))
        assert entry.text.strip(), anchor
    _open(driver, site / "tables.html")
    headers = {h.text: h.get_attribute("title") for h in driver.find_elements(*_by("th[title]"))}
    assert headers.get("TER") and headers.get("PEC@1") and headers.get("AUC-PEC") and headers.get("RR")


# Each health table's task bodies as the page shows them: kinds, effects, shown or not (one script call:
# thousands of WebDriver calls, one per body and attribute, took most of a minute).
_HEALTH_BODIES = """return Array.from(document.querySelectorAll('table.health'), table => [table.id,
    Array.from(table.tBodies, body => ({kind: body.dataset.kind.split(' '), effect: body.dataset.effect.split(' '),
                                        shown: body.checkVisibility()}))]);"""


def test_the_health_page_puts_defects_first_and_filters_by_kind_code_and_effect(audit, driver):
    site = audit / "site"
    _open(driver, site / "health.html")
    ranks = {"defect": 0, "failed": 1, "design": 2, "definition": 3, "caution": 4, "note": 5}
    tables = driver.execute_script(_HEALTH_BODIES)
    assert tables
    for table, bodies in tables:
        worst = [min(ranks[k] for k in body["kind"]) for body in bodies]
        assert worst == sorted(worst), table
    bodies = [body for _, of_table in tables for body in of_table]
    defects = sum("defect" in body["kind"] for body in bodies)
    assert defects and all(body["shown"] for body in bodies)  # the real logs' tasks hold known defects
    _open(driver, site / "health.html", "#kind=defect")
    shown = [body for _, of_table in driver.execute_script(_HEALTH_BODIES) for body in of_table if body["shown"]]
    assert len(shown) == defects and all("defect" in body["kind"] for body in shown)
    _shot(driver, "health")
    # a task with a defect links the rollouts the audit holds of it (the real logs ran some of them)
    link = driver.execute_script("return Array.from(document.querySelectorAll('table.health tbody td a'))"
                                 ".find(a => a.checkVisibility() && a.href.includes('blocks/'))")
    assert link
    target, fragment = urldefrag(link.get_attribute("href"))
    _follow(driver, link)
    if fragment.startswith("task="):  # the block's rollouts of that task
        task = unquote(fragment.removeprefix("task="))
        shown = driver.execute_script(_SHOWN_ROWS)
        assert shown and {r["task"] for r in shown} == {task}
    else:
        assert "/r/" in target and driver.find_element(*_by("dl.facts"))
    _open(driver, site / "health.html", "#effect=unseen&kind=note")
    bodies = [body for _, of_table in driver.execute_script(_HEALTH_BODIES) for body in of_table]
    assert [b["shown"] for b in bodies] == ["unseen" in b["effect"] and "note" in b["kind"] for b in bodies]
    assert any(b["shown"] for b in bodies) and not all(b["shown"] for b in bodies)


def test_no_page_kind_has_a_serious_or_critical_accessibility_violation(audit, driver):
    if not AXE.is_file():
        pytest.skip(f"no axe-core at {AXE}: npm install --prefix .test-artifacts/node axe-core@{AXE_VERSION}")
    site = audit / "site"
    folder, episodes, _ = max(_blocks(audit), key=lambda b: b[1].height)
    kinds = {"index": site / "index.html", "block": folder / "index.html", "rollout": folder / "r" / "1.html",
             "health": site / "health.html", "tables": site / "tables.html", "glossary": site / "glossary.html",
             **{f"pool {p.stem}": p for p in sorted(site.glob("pools/**/*.html"))[:1]}}
    failed = rollout_with_failure = None
    for folder_, eps, _ in _blocks(audit):
        hit = eps.with_row_index("n", 1).filter(pl.col("FED") <= pl.col("T"))
        if hit.height and (eps["agent_texts"].list.len() > 0).any():
            failed, rollout_with_failure = folder_, int(hit["n"][0])
            break
    if failed is not None:
        kinds["rollout with a first failure and the agent's text"] = failed / "r" / f"{rollout_with_failure}.html"
    source = AXE.read_text()
    problems = {}
    for kind, page in kinds.items():
        _open(driver, page)
        driver.execute_script(source)
        result = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map("
            "v => ({id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help}))));")
        bad = [v for v in result if v["impact"] in ("serious", "critical")]
        if bad:
            problems[kind] = bad
    assert not problems, problems


def test_keyboard_users_sort_and_filter(audit, driver):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    folder, episodes, _ = max(_blocks(audit), key=lambda b: b[1].height)
    _open(driver, folder / "index.html")
    header = driver.find_element(*_by("#rollouts th:nth-child(5)"))  # FED
    assert header.get_attribute("tabindex") == "0"
    header.send_keys(Keys.ENTER)
    assert header.get_attribute("aria-sort") == "ascending"
    values = [float(v) for v in driver.execute_script(
        "return Array.from(document.querySelectorAll('#rollouts tbody tr'), row => row.cells[4].dataset.value)")]
    assert values == sorted(values)
    select = driver.find_element(*_by("#filter-origin"))
    Select(select).select_by_value("agent")
    assert driver.current_url.endswith("#origin=agent")  # the filtered view is an address to share
    agent = int((episodes["origin"] == "agent").sum())
    assert int(driver.find_element(*_by("#shown")).text) == agent
