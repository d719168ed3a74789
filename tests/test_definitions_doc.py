"""The definitions live in the repository: nothing cites a specification outside it, and every
``docs/<page>.md#anchor`` the code and the docs point at names a section that exists.

An anchor exists where the page has a heading whose GitHub slug it is (lower case, punctuation dropped,
spaces as hyphens, ``-1``, ``-2`` … after a repeated heading; headings inside code fences do not count) or
an explicit ``<a id="…">`` / ``<a name="…">``.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where citations and doc pointers are written; this file names the patterns it looks for, so it is left out.
SCANNED = ("src", "docs", "workflow", "config", "tests", "bench", "README.md", "Snakefile")
OUTSIDE_SPEC = re.compile(r"SPEC §|SPEC\.md")
# A pointer written as a path from the repository root (comments, docstrings, code spans in the docs).
ROOT_POINTER = re.compile(r"(?<![\w./-])(docs/[\w./-]+?\.md)#([\w-]+)")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s#]+\.md)#([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)
EXPLICIT = re.compile(r"<a\s[^>]*?(?:id|name)=[\"']([^\"']+)[\"']", re.IGNORECASE)
# Sections of docs/definitions.md that the code cites and that must keep their names.
STABLE = ("actions", "v_j", "fed", "final-success", "infrastructure-failures", "cohorts", "pec", "ter", "auc-pec",
          "mean-fed", "rr", "identities", "planning-bounds", "repeated-trials", "taxonomy", "origin", "fed_agent",
          "reading-rules", "health", "statistics", "agents", "accounting")


def text_files() -> Iterator[Path]:
    """The repository's files below SCANNED: git's tracked and not-ignored ones (no build output such
    as the egg-info, whose copy of the README may be stale); every file where there is no git."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", *SCANNED],
                            cwd=ROOT, capture_output=True, text=True)
    candidates = ([ROOT / name for name in listed.stdout.split("\0") if name] if listed.returncode == 0 else
                  [path for name in SCANNED for path in ((ROOT / name).rglob("*") if (ROOT / name).is_dir()
                                                         else [ROOT / name])])
    for path in sorted(candidates):
        if path.is_file() and "__pycache__" not in path.parts and path != Path(__file__).resolve():
                try:
                    path.read_text(encoding="utf-8")
                except UnicodeDecodeError:  # an image, an archive
                    continue
                yield path


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors_of(markdown: str) -> set[str]:
    found: set[str] = set(EXPLICIT.findall(markdown))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCE.sub("", markdown)):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


@cache
def page_anchors(page: Path) -> frozenset[str]:
    return frozenset(anchors_of(page.read_text(encoding="utf-8")))


def pointers(path: Path, text: str) -> Iterator[tuple[Path, str]]:
    """(page, anchor) of every doc pointer with an anchor in ``text`` of the file at ``path``."""
    for page, anchor in ROOT_POINTER.findall(text):
        yield ROOT / page, anchor
    if path.suffix == ".md":
        for page, anchor in MARKDOWN_LINK.findall(text):
            if not re.match(r"^[a-z]+:", page):
                yield (path.parent / page).resolve(), anchor


def broken_pointers(path: Path, text: str) -> list[str]:
    out = []
    for page, anchor in pointers(path, text):
        where = path.relative_to(ROOT).as_posix()
        if not page.is_file():
            out.append(f"{where}: {page.relative_to(ROOT).as_posix()} does not exist")
        elif anchor not in page_anchors(page):
            out.append(f"{where}: {page.relative_to(ROOT).as_posix()} has no section #{anchor}")
    return out


def test_nothing_cites_a_specification_outside_the_repository():
    cited = [f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()}"
             for path in text_files()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if OUTSIDE_SPEC.search(line)]
    assert not cited, "cite docs/definitions.md (or the doc that holds it) instead:\n" + "\n".join(cited)


def test_every_pointer_into_the_docs_names_a_section_that_exists():
    broken = [problem for path in text_files() for problem in broken_pointers(path, path.read_text(encoding="utf-8"))]
    assert not broken, "\n".join(broken)


def test_the_definitions_keep_their_stable_sections():
    missing = set(STABLE) - page_anchors(ROOT / "docs" / "definitions.md")
    assert not missing, f"docs/definitions.md lost the sections {sorted(missing)} that the code cites"


def test_the_checks_catch_what_they_look_for():
    """Broken on purpose: a citation of the old file, a missing section, a page that is not there."""
    assert OUTSIDE_SPEC.search("the contract of SPEC §6") and OUTSIDE_SPEC.search("see ../shared/SPEC.md")
    assert not OUTSIDE_SPEC.search("RR_SPEC = MetricSpec(...)")
    here = ROOT / "src" / "prefix_audit" / "example.py"
    assert broken_pointers(here, "(docs/definitions.md#fed, docs/definitions.md#health)") == []
    assert broken_pointers(here, "(docs/definitions.md#no-such-section)") == [
        "src/prefix_audit/example.py: docs/definitions.md has no section #no-such-section"]
    assert broken_pointers(here, "docs/no-such-page.md#fed") == [
        "src/prefix_audit/example.py: docs/no-such-page.md does not exist"]
    page = ROOT / "docs" / "benchmarks" / "example.md"
    assert broken_pointers(page, "[x](../definitions.md#rr) [y](../definitions.md#r-r)") == [
        "docs/benchmarks/example.md: docs/definitions.md has no section #r-r"]
    assert anchors_of("# A\n## A\n```\n# not a heading\n```\n<a id=\"kept\"></a>\n## `log_issue` codes") == {
        "a", "a-1", "kept", "log_issue-codes"}
