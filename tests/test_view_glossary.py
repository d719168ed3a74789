"""The glossary: one definition per term (``prefix_audit.reports.glossary``), shown on the browser's
``glossary.html``, as the tooltip and link of every header and fact that names it, and as docs/glossary.md."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

from conftest import ROOT
from test_view import results_root, site  # noqa: F401  (the toy-grid site: its fixtures, built once here)

from prefix_audit.cli import build_parser
from prefix_audit.core.health import KINDS
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.reports.glossary import GLOSSARY, TERMS, column_term, column_terms, glossary_markdown

# Every term a page of the browser names without saying what it is (issue 56).
NAMED = ("T", "V_j", "FED", "first-failure category", "prefix cohort", "N", "infrastructure failure", "PEC@k",
         "depth support", "eligible-depth PEC", "TER", "AUC-PEC", "mean FED", "final success (Y)", "RR",
         "pass^k", "TER^k", "whose error (origin)", "FED_agent", "sound task", "intervals")


def test_every_term_is_defined_once_with_an_anchor_a_line_and_a_paragraph():
    assert sorted(t.name for t in TERMS) == sorted(NAMED)
    assert len(GLOSSARY) == len(TERMS)  # no anchor twice
    for t in TERMS:
        assert re.fullmatch(r"[a-z][a-z0-9-]*", t.anchor), t
        # A tooltip is one line; the page and the doc add its full stop.
        assert "\n" not in t.short and not t.short.endswith(".") and len(t.short) <= 140, t.name
        assert len(t.full) > len(t.short) and "\n" not in t.full, t.name
        assert (ROOT / "docs" / t.more).is_file(), t.more


def test_the_lists_that_can_grow_are_written_from_the_modules_that_define_them():
    assert all(c in GLOSSARY["category"].short and c in GLOSSARY["category"].full for c in CATEGORIES)
    assert " → ".join(CATEGORIES) in GLOSSARY["category"].full  # the priority, in its order
    assert all(f"{kind} ({meaning})" in GLOSSARY["sound-task"].full for kind, meaning in KINDS.items())


def test_the_stated_interval_defaults_are_the_commands():
    stats = next(a for a in build_parser()._actions if a.dest == "command").choices["stats"]
    defaults = {a.dest: a.default for a in stats._actions}
    text = GLOSSARY["intervals"].full
    assert f"--resamples, {defaults['resamples']:,} by default" in text
    assert f"--confidence, {defaults['confidence']} by default" in text
    assert f"{defaults['confidence']:.0%}".replace("%", " %") in GLOSSARY["intervals"].short


def test_table_columns_map_to_their_terms():
    assert column_term("PEC@3") is GLOSSARY["pec"] and column_term("RR") is GLOSSARY["rr"]
    assert column_term("category") is None  # G.1 per category: a BFCL task category, not a first failure's
    assert column_terms(["dataset", "N", "PEC@1", "PEC@2", "TER"]) == ["n", "pec", "ter"]


def test_the_doc_is_what_the_module_writes_and_is_listed_with_the_docs():
    doc = ROOT / "docs" / "glossary.md"
    assert doc.read_text() == glossary_markdown(), (
        "docs/glossary.md is out of date: PYTHONPATH=src python -c 'from prefix_audit.reports.glossary import "
        "glossary_markdown as g; print(g(), end=\"\")' > docs/glossary.md")
    text = doc.read_text()
    for t in TERMS:
        assert f"## {t.name}\n\nIn short: {t.short}.\n\n{t.full}\n" in text, t.name
    assert "](docs/glossary.md)" in (ROOT / "README.md").read_text()


class _Elements(HTMLParser):
    """Every element of a page with its attributes, its text and the tags inside it (ids, th, dt, a)."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[dict] = []
        self.done: list[dict] = []

    def handle_starttag(self, tag, attrs):
        for outer in self.open:
            outer["inner"].append((tag, dict(attrs)))
        if tag in ("th", "dt", "a", "p"):
            self.open.append({"tag": tag, "attrs": dict(attrs), "text": "", "inner": []})
        elif dict(attrs).get("id"):
            self.done.append({"tag": tag, "attrs": dict(attrs), "text": "", "inner": []})

    def handle_endtag(self, tag):
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i]["tag"] == tag:
                self.done.append(self.open.pop(i))
                break

    def handle_data(self, data):
        for outer in self.open:
            outer["text"] += data

    def of(self, tag: str) -> list[dict]:
        return [e for e in self.done if e["tag"] == tag]


def _parse(page: Path) -> _Elements:
    parser = _Elements()
    parser.feed(page.read_text())
    return parser


def _glossary_ids(site_dir: Path) -> list[str]:
    return [e["attrs"]["id"] for e in _parse(site_dir / "glossary.html").done if e["attrs"].get("id")]


def test_the_glossary_page_defines_every_term_with_the_modules_text(site):  # noqa: F811
    page = site / "glossary.html"
    text = html.unescape(page.read_text())
    ids = _glossary_ids(site)
    assert len(ids) == len(set(ids)) and set(GLOSSARY) <= set(ids)
    dts = {e["attrs"]["id"]: e["text"] for e in _parse(page).of("dt")}
    for t in TERMS:
        assert dts[t.anchor] == t.name
        assert f"{t.short}." in text and t.full in text and f"docs/{t.more}" in text, t.name


def _term_links(site_dir: Path) -> list[tuple[str, str, dict]]:
    """(page, anchor, the link) for every link of the site into the glossary."""
    out = []
    for page in sorted(site_dir.rglob("*.html")):
        for a in _parse(page).of("a"):
            href = a["attrs"].get("href", "")
            if re.search(r"(^|/)glossary\.html#", href):
                out.append((page.relative_to(site_dir).as_posix(), href.split("#", 1)[1], a))
    return out


def test_every_page_links_the_glossary_and_every_term_link_lands_on_its_definition(site):  # noqa: F811
    for page in sorted(site.rglob("*.html")):
        nav = page.read_text().split("</nav>", 1)[0]
        assert re.search(r'<a href="(\.\./)*glossary\.html">Glossary</a>', nav), page
    links = _term_links(site)
    ids = set(_glossary_ids(site))
    assert links and all(anchor in ids for _, anchor, _ in links)
    for name, anchor, a in links:  # the one line as the link's title: the tooltip and its description
        assert a["attrs"].get("title") == GLOSSARY[anchor].short and a["attrs"]["class"] == "term", (name, anchor)


def _headers(page: Path) -> dict[str, dict]:
    return {e["text"].strip(): e for e in _parse(page).of("th")}


def test_metric_headers_carry_their_definition_and_sortable_ones_hold_no_link(site):  # noqa: F811
    tables = _headers(site / "tables.html")
    assert {"N", "PEC@1", "PEC@4", "TER", "mean FED", "final success"} <= set(tables)  # G.1 and per category
    for title, header in tables.items():
        term = column_term(title)
        assert header["attrs"].get("title") == (term.short if term else None), title
    block = site / "blocks" / "bfcl_v3" / "m" / "react" / "index.html"
    headers = _headers(block)
    for title, anchor in (("T", "t"), ("FED", "fed"), ("category", "category"), ("whose", "origin"), ("Y", "y"),
                          ("infrastructure failure", "infra"), ("task health", "sound-task")):
        assert headers[title]["attrs"]["title"] == GLOSSARY[anchor].short, title
    # site.js makes a sortable header a button, and a button may hold nothing focusable (axe-core's
    # nested-interactive): the header has the title, the line below the table the links.
    for page in (site / "tables.html", block):
        for th in _parse(page).of("th"):
            if "data-sort" in th["attrs"]:
                assert not any(tag in ("a", "button", "input", "select") for tag, _ in th["inner"]), (page, th)
        lines = [p for p in _parse(page).of("p") if p["attrs"].get("class") == "terms"]
        linked = {a["href"].split("#")[1] for p in lines for tag, a in p["inner"] if tag == "a" and "#" in a["href"]}
        sortable = {th["attrs"]["title"] for th in _parse(page).of("th") if "title" in th["attrs"]}
        assert sortable <= {GLOSSARY[anchor].short for anchor in linked}, page  # every tooltip also a link
        assert linked, page


def test_a_rollout_page_links_its_facts_and_v_j_to_the_glossary(site):  # noqa: F811
    pages = sorted((site / "blocks" / "bfcl_v3" / "m" / "react" / "r").glob("*.html"))
    failed = next(p for p in pages if "no_such_tool(x=1)" in p.read_text())
    facts = {e["text"].strip(): e for e in _parse(failed).of("dt")}
    for fact, anchor in (("T", "t"), ("FED", "fed"), ("Y", "y"), ("whose error", "origin"), ("FED_agent", "fed-agent"),
                         ("task health", "sound-task")):
        links = [a for tag, a in facts[fact]["inner"] if tag == "a"]
        assert [a["href"] for a in links] == [f"../../../../../glossary.html#{anchor}"], fact
        assert links[0]["title"] == GLOSSARY[anchor].short
    v_j = next(th for th in _parse(failed).of("th") if th["text"] == "Vj")
    assert [a["href"].split("#")[1] for tag, a in v_j["inner"] if tag == "a"] == ["v-j"]
    infra = next(p for p in pages if "Error during inference" in p.read_text())
    assert "infrastructure failure" in {e["text"].strip() for e in _parse(infra).of("dt")}
