"""What every page of the audit browser is made with: its Jinja2 environment (autoescaping, the filters
and globals of every template), text as a page shows it (escaped, cut with a note), and the paths
between pages. The index, block, health and rollout pages (:mod:`~prefix_audit.reports.view`,
:mod:`~prefix_audit.reports.rollout_page`) are all rendered with it."""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

import jinja2
import jinja2.runtime
from markupsafe import Markup

from prefix_audit.core.io import path_label
from prefix_audit.statistics.stats import ORIGINS

from .glossary import GLOSSARY, column_term, column_terms
from .palette import CATEGORY_COLOURS

CLIP_CHARS = 2_000  # an observation or action text longer than this is cut, with a note


def health_anchor(dataset: str, release: str | None, task_id: str) -> str:
    """The id of a task's entry on the health page."""
    return "task-" + path_label(f"{dataset}.{release}.{task_id}")


class _Environment(jinja2.Environment):
    """Jinja2's environment, reading a plain dict's fields first: the pages' rows and views are dicts, and
    Jinja's own ``row.field`` tries the attribute first — a failed lookup and an exception for every field of
    every row, a fifth of a rollout page's time. A dict's methods are still reached where no field has the
    name (``mapping.items()``)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


@functools.cache
def environment() -> jinja2.Environment:
    """The site's Jinja2 environment: the package's templates, autoescaping (model output is hostile), the
    filters and globals every page uses; one per process, its templates compiled once."""
    env = _Environment(loader=jinja2.PackageLoader("prefix_audit.reports", "templates/site"),
                        autoescape=True, undefined=jinja2.StrictUndefined,
                        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["text"] = text
    env.filters["clipped"] = clipped
    env.globals |= {"colours": CATEGORY_COLOURS, "origins": ORIGINS}
    # The glossary's terms where pages name them (term, th, column_th, terms_line) and its entries.
    env.globals |= {"glossary": GLOSSARY, "column_terms": column_terms, "term": term, "th": th,
                    "column_th": column_th, "terms_line": terms_line}
    return env


# Terms of the glossary (:mod:`~prefix_audit.reports.glossary`) where pages name them; functions of the
# page's context (for ``up``, the way back to glossary.html), not Jinja macros: a rollout page names seven,
# and a macro imported with its page's context costs a fifth of the page.
#
# A sortable header (``data-sort``) sorts its table on a click, or on Enter from the keyboard (site.js): a
# link in it would take that click. Such a header carries its term's one line as its title — a tooltip, and
# the description a screen reader reads with the header — and the table is followed by :func:`terms_line`,
# the same terms as links. Anywhere else, :func:`term` is the link itself, its one line as its title.


@jinja2.pass_context
def term(context: jinja2.runtime.Context, name: str, label: str | None = None) -> Markup:
    """The term ``name`` as a link to its glossary entry, its one line as the title; ``label`` its text."""
    t = GLOSSARY[name]
    return Markup('<a class="term" href="{}glossary.html#{}" title="{}">{}</a>').format(
        context["up"], t.anchor, t.short, label if label is not None else t.name)


@jinja2.pass_context
def th(context: jinja2.runtime.Context, name: str, label: str | None = None, sort: str | None = None) -> Markup:
    """A header of the term ``name``: sortable (its one line as the title) or holding its link."""
    t = GLOSSARY[name]
    if sort:
        return Markup('<th data-sort="{}" title="{}">{}</th>').format(sort, t.short,
                                                                      label if label is not None else t.name)
    return Markup("<th>{}</th>").format(term(context, name, label))


@jinja2.pass_context
def column_th(context: jinja2.runtime.Context, title: str, sort: str | None = None) -> Markup:
    """The header of a statistics table's column ``title``: its term's where it has one."""
    t = column_term(title)
    if t is not None:
        return th(context, t.anchor, title, sort)
    return Markup("<th{}>{}</th>").format(Markup(' data-sort="{}"').format(sort) if sort else "", title)


@jinja2.pass_context
def terms_line(context: jinja2.runtime.Context, names: Iterable[str]) -> Markup:
    """The line under a table that links the terms its headers name (keyboard users reach them there)."""
    links = Markup(" · ").join(term(context, name) for name in names)
    return Markup('<p class="terms">Terms: {} (<a href="{}glossary.html">glossary</a>)</p>').format(
        links, context["up"])


def text(value: str) -> Markup:
    """Text for element content: ``&``, ``<`` and ``>`` escaped — quotes need no escape there, and
    observations are full of them (``&#39;`` would make a page a quarter larger). Never for attributes."""
    return Markup(html.escape(value, quote=False))


def clipped(value: Mapping[str, Any] | None) -> Markup:
    """A text :func:`clip` cut, as a page shows it: preformatted, with its note; a dash for none. A
    filter, not a macro: the rollout pages call it for every call and observation, and a Jinja macro
    call costs ten times as much."""
    if value is None:
        return Markup('<span class="none">—</span>')
    note = Markup('<p class="note">{}</p>').format(value["note"]) if value["note"] else ""
    return Markup(f"<pre>{text(value['text'])}</pre>{note}")


def up_to_root(folder: str) -> str:
    """The relative path from a page in ``folder`` back to the site root."""
    depth = len(PurePosixPath(folder).parts) if folder else 0
    return "../" * depth


def clip(text: str | None, limit: int = CLIP_CHARS, stored: int | None = None) -> dict[str, Any] | None:
    """Text shown up to ``limit`` characters, with the note a cut needs; ``stored`` is how much of it
    scoring kept (an observation: :data:`~prefix_audit.replay.rows.MAX_RESULT_CHARS`), so text of that
    length may have been longer."""
    if text is None:
        return None
    if len(text) > limit:
        return {"text": text[:limit], "note": f"cut at {limit:,} of {len(text):,} characters"}
    if stored is not None and len(text) >= stored:
        return {"text": text, "note": f"shown up to {stored:,} characters; the scored record keeps no more"}
    return {"text": text, "note": None}
