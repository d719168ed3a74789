"""Where agents first break, at a glance: what the audit browser's index and block pages summarise.

For each block: its first failures (the action at FED of every rollout that has one) with the tool
that failed, the category of the failure and whose error it is; their shares by category and by
origin; the tools they happen at most; the FED distribution by category (a small stacked histogram);
and its whole PEC curve (:mod:`prefix_audit.statistics.curves`). Plots are static SVG written here —
numbers and the names of blocks and tools only, every text escaped — so a page reads with no network
and no JavaScript.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote

import polars as pl
from markupsafe import Markup

from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.statistics.curves import Curve, pec_curve
from prefix_audit.statistics.stats import ORIGINS

from .palette import CATEGORY_COLOURS, SERIES_COLOURS, UNCLASSIFIED

FINAL_MESSAGE = "final message"  # where the failing action is the agent's terminal message, not a call
UNNAMED = "unnamed call"  # a call whose tool name could not be read
FED_BINS = 9  # the histogram's bars: FED 1 … FED_BINS each, then FED_BINS + 1 and deeper in one
FULL_COLOUR = "#555555"  # the histogram's bar of fully executable rollouts (FED = T + 1)
TOP_TOOLS = 3  # tools named per block on the index
DATASET_TOOLS = 8  # tools named per dataset on the index


def first_failures(episodes: pl.DataFrame, actions: pl.DataFrame) -> pl.DataFrame:
    """One row per rollout with a first failure (FED ≤ T): its rollout id, FED, category, origin, the
    tool of the failing action (:data:`FINAL_MESSAGE` for the terminal message) and the call as text."""
    failed = episodes.filter(pl.col("T").is_not_null() & (pl.col("FED") <= pl.col("T"))).select(
        "rollout_id", "FED", "category", "origin")
    at = actions.select("rollout_id", pl.col("j").alias("FED"), "terminal", "tool", "call")
    joined = failed.join(at, on=["rollout_id", "FED"], how="left", maintain_order="left")
    return joined.with_columns(
        pl.when(pl.col("terminal")).then(pl.lit(FINAL_MESSAGE))
        .otherwise(pl.col("tool").fill_null(UNNAMED)).alias("tool")).drop("terminal")


def _percent(count: int, total: int) -> str:
    return "—" if not total else f"{100 * count / total:.0f}%"


def shares(failures: pl.DataFrame, column: str, names: Sequence[str]) -> list[dict[str, Any]]:
    """Each of ``names`` with its count among ``failures`` and its share of them (as text)."""
    total = failures.height
    counts = dict(failures[column].value_counts().iter_rows()) if total else {}
    return [{"name": name, "count": int(counts.get(name, 0)), "share": _percent(int(counts.get(name, 0)), total),
             "of": total} for name in names]


def tool_counts(failures: pl.DataFrame) -> list[tuple[str, int]]:
    """The tools first failures happen at, most first (ties by name)."""
    if not failures.height:
        return []
    counts = failures.group_by("tool").len().sort(["len", "tool"], descending=[True, False])
    return [(tool, int(n)) for tool, n in counts.iter_rows()]


def where_agents_break(failures: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows of tool × category × origin with their first failures, most first: count, share of the
    block's first failures, and the block page's filter that shows those rollouts."""
    if not failures.height:
        return []
    keys = ["tool", "category", "origin"]
    grouped = failures.with_columns(pl.col("origin").fill_null("")).group_by(keys).len() \
        .sort(["len", *keys], descending=[True, False, False, False])
    return [{"tool": tool, "category": category, "origin": origin or None, "count": int(n),
             "share": _percent(int(n), failures.height),
             "filter": filter_fragment(tool=tool, category=category, origin=origin or None)}
            for tool, category, origin, n in grouped.iter_rows()]


def filter_fragment(**state: str | None) -> str:
    """The address fragment that opens a block page filtered so (site.js reads it)."""
    return "#" + "&".join(f"{name}={quote(value, safe='')}" for name, value in state.items() if value)


# --- SVG -----------------------------------------------------------------------------------------

def _attr(text: str) -> str:
    return html.escape(text, quote=True)


def _ticks(top: int, most: int = 8) -> list[int]:
    """Tick positions on a 1 … ``top`` axis: 1 and multiples of a round step, at most about ``most``."""
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000, 10**9) if top / s <= most)
    return sorted({1, *range(step, top + 1, step)})


@dataclass(frozen=True)
class Series:
    """One block's curve in a plot: its label, where its page is, its colour and dash."""

    label: str
    href: str
    colour: str
    dash: str | None
    curve: Curve


PLOT = (520, 270)  # the PEC plot's width and height in pixels
_MARGIN = (46, 12, 10, 40)  # left, right, top, bottom


def pec_plot(series: Sequence[Series], top: int, caption_id: str) -> Markup:
    """PEC@k against k = 1 … ``top`` for every series on one pair of axes, each with its band where it
    has one; a ``<title>`` per curve names its values at a few depths (the legend beside says more)."""
    width, height = PLOT
    left, right, upper, lower = _MARGIN
    inner_w, inner_h = width - left - right, height - upper - lower

    def x(k: float) -> float:
        return left + inner_w * ((k - 1) / (top - 1) if top > 1 else 0.5)

    def y(v: float) -> float:
        return upper + inner_h * (1 - v)

    parts = [f'<rect class="plot-area" x="{left}" y="{upper}" width="{inner_w}" height="{inner_h}"/>']
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line class="grid" x1="{left}" x2="{left + inner_w}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                     f'<text class="tick" x="{left - 5}" y="{y(v) + 3.5:.1f}" text-anchor="end">{v:g}</text>')
    for k in _ticks(top):
        parts.append(f'<line class="tick-mark" x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{upper + inner_h}" '
                     f'y2="{upper + inner_h + 4}"/><text class="tick" x="{x(k):.1f}" y="{upper + inner_h + 15}" '
                     f'text-anchor="middle">{k}</text>')
    parts.append(f'<text class="axis-label" x="{left + inner_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
                 'depth k (actions)</text>')
    parts.append(f'<text class="axis-label" transform="translate(12 {upper + inner_h / 2:.1f}) rotate(-90)" '
                 'text-anchor="middle">PEC@k</text>')
    for s in series:
        points = list(enumerate(s.curve.estimate[:top], start=1))
        band = ""
        if s.curve.low is not None and s.curve.high is not None:
            known = [(k, lo, hi) for k, lo, hi in zip(range(1, top + 1), s.curve.low, s.curve.high, strict=False)
                     if not (math.isnan(lo) or math.isnan(hi))]
            if known:
                outline = [f"{x(k):.1f},{y(hi):.1f}" for k, _, hi in known] + \
                          [f"{x(k):.1f},{y(lo):.1f}" for k, lo, _ in reversed(known)]
                band = f'<polygon class="band" fill="{s.colour}" points="{" ".join(outline)}"/>'
        line = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in points)
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        dots = "".join(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="2"/>' for k, v in points) if top <= 12 else ""
        said = ", ".join(f"PEC@{k} {v:.3f}" for k, v in points if k in (1, 2, 4, 10, 20, top))
        parts.append(f'<g class="series" stroke="{s.colour}" fill="{s.colour}"><title>{_attr(s.label)}: {said}'
                     f'</title>{band}<polyline points="{line}"{dash}/>{dots}</g>')
    return Markup(f'<svg class="pec-plot" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
                  f'role="img" aria-labelledby="{_attr(caption_id)}">{"".join(parts)}</svg>')


_HIST = (168, 46)  # the FED histogram's width and height in pixels


def fed_histogram(episodes: pl.DataFrame) -> Markup | None:
    """A block's FED distribution as a small stacked histogram: one bar per FED 1 … :data:`FED_BINS`,
    one for deeper first failures, one for the fully executable (FED = T + 1); each failure bar stacked
    by category. None without a rollout that has a trajectory."""
    prefix = episodes.filter(pl.col("T").is_not_null())
    if not prefix.height:
        return None
    failed = prefix.filter(pl.col("FED") <= pl.col("T"))
    bins: list[dict[str, int]] = [dict.fromkeys((*CATEGORIES, UNCLASSIFIED), 0) for _ in range(FED_BINS + 1)]
    for fed, category, n in failed.group_by("FED", "category").len().iter_rows():
        bins[min(fed, FED_BINS + 1) - 1][category if category in CATEGORIES else UNCLASSIFIED] += n
    full = prefix.height - failed.height
    labels = [*(f"FED {k}" for k in range(1, FED_BINS + 1)), f"FED {FED_BINS + 1}+"]
    width, height = _HIST
    base, bar_w, gap = height - 12, (width - 14) / (FED_BINS + 2), 1.0
    most = max([full, *(sum(b.values()) for b in bins)]) or 1
    bars = []
    for i, (label, counts) in enumerate(zip(labels, bins, strict=True)):
        top: float = base
        total = sum(counts.values())
        said = ", ".join(f"{c} {n}" for c, n in counts.items() if n)
        bars.append(f'<g><title>{label}: {total} rollouts{" (" + said + ")" if said else ""}</title>')
        for category, n in counts.items():
            if n:
                h = (base - 2) * n / most
                top -= h
                bars.append(f'<rect x="{i * bar_w:.1f}" y="{top:.1f}" width="{bar_w - gap:.1f}" height="{h:.1f}" '
                            f'fill="{CATEGORY_COLOURS[category]}"/>')
        bars.append("</g>")
    h = (base - 2) * full / most
    x_full = (FED_BINS + 1) * bar_w + 14
    bars.append(f'<g><title>FED = T + 1 (fully executable): {full} rollouts</title><rect x="{x_full:.1f}" '
                f'y="{base - h:.1f}" width="{bar_w - gap:.1f}" height="{h:.1f}" fill="{FULL_COLOUR}"/></g>')
    ticks = (f'<text class="tick" x="0" y="{height - 2}">1</text>'
             f'<text class="tick" x="{FED_BINS * bar_w:.1f}" y="{height - 2}">{FED_BINS + 1}+</text>'
             f'<text class="tick" x="{x_full:.1f}" y="{height - 2}">T+1</text>')
    summary = "; ".join([*(f"{label}: {sum(c.values())}"
                           for label, c in zip(labels, bins, strict=True) if sum(c.values())),
                         f"fully executable: {full}"])
    return Markup(f'<svg class="fed-hist" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
                  f'aria-label="FED distribution: {_attr(summary)}"><line class="axis" x1="0" x2="{width}" '
                  f'y1="{base + 0.5}" y2="{base + 0.5}"/>{"".join(bars)}{ticks}</svg>')


def series_style(index: int) -> tuple[str, str | None]:
    """The colour and dash of the ``index``-th curve of a plot: the palette, then dashed past its end."""
    colours = len(SERIES_COLOURS)
    return SERIES_COLOURS[index % colours], (None, "6 3", "2 2")[min(index // colours, 2)]


@dataclass(frozen=True)
class BlockGlance:
    """What the index and the block page show of one block's first failures."""

    failures: pl.DataFrame
    categories: list[dict[str, Any]]
    origins: list[dict[str, Any]]
    tools: list[tuple[str, int]]
    histogram: Markup | None
    curve: Curve | None

    @property
    def top_tools(self) -> list[dict[str, Any]]:
        return [{"tool": t, "count": n, "filter": filter_fragment(tool=t)} for t, n in self.tools[:TOP_TOOLS]]


def block_glance(episodes: pl.DataFrame, actions: pl.DataFrame, band: Mapping[str, Any] | None) -> BlockGlance:
    """A block's first failures and their summaries; its PEC curve to its largest T, with a band drawn
    as ``band`` says (``resamples``, ``seed``, ``confidence`` of the block's statistics; None: no band)."""
    failures = first_failures(episodes, actions)
    prefix = episodes.filter(pl.col("T").is_not_null())
    curve = None
    if prefix.height:
        curve = pec_curve(prefix["FED"].to_list(), prefix["T"].to_list(), prefix["task_id"].to_list(),
                          cast(int, prefix["T"].max()), **(dict(band) if band else {}))
    return BlockGlance(failures, shares(failures, "category", CATEGORIES), shares(failures, "origin", ORIGINS),
                       tool_counts(failures), fed_histogram(episodes), curve)


def dataset_tools(glances: Sequence[tuple[Any, BlockGlance]], href_of: Any) -> list[dict[str, Any]]:
    """The tools first failures of a dataset's blocks happen at most: per tool its count, share, the
    category and origin counts, and the blocks it happens in (each a link to those rollouts)."""
    frames = [g.failures.with_columns(pl.lit(i).alias("block"))
              for i, (_, g) in enumerate(glances) if g.failures.height]
    if not frames:
        return []
    failures = pl.concat(frames)
    rows = []
    for tool, n in tool_counts(failures)[:DATASET_TOOLS]:
        mine = failures.filter(pl.col("tool") == tool)
        per_block = mine.group_by("block").len().sort(["len", "block"], descending=[True, False])
        rows.append({"tool": tool, "count": n, "share": _percent(n, failures.height),
                     "categories": [c for c in shares(mine, "category", CATEGORIES) if c["count"]],
                     "origins": [o for o in shares(mine, "origin", ORIGINS) if o["count"]],
                     "blocks": [{"block": glances[b][0], "count": int(k),
                                 "href": href_of(glances[b][0]) + filter_fragment(tool=tool)}
                                for b, k in per_block.iter_rows()]})
    return rows
