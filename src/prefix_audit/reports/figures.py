"""Figures from the long stats table and the FED table (docs/definitions.md#statistics), as PNG and PDF.

One file pair per dataset × model, methods overlaid or side by side, in four families (``FAMILIES``):
``curves`` (from the stats table), ``categories`` and ``origins`` (from the FED table) and ``labels``
(from a label comparison):

- ``pec_<dataset>_<model>``: PEC(k) with CI bands (fixed cohort: denominator = all N rollouts).
- ``depth_<dataset>_<model>``: depth support P(T ≥ k), eligible-depth PEC P(FED > k | T ≥ k) and
  their product PEC(k) (paper eq. 7), one panel each.
- ``consistency_<dataset>_<model>`` (blocks with repeated trials): tasks whose trials disagree.
- ``categories_<dataset>_<model>``: first-failure category counts by FED depth, one panel per method.
- ``origins_<dataset>_<model>``: whose error the first failure is (agent, user, benchmark): each
  method's shares, with the counts, and the counts by FED depth, one panel per method.
- ``label_offsets_<dataset>_<model>`` (family ``labels``, from a label comparison's entries table): FED's
  offset from the human first failure, one panel per method.

Output is byte-deterministic: figures are drawn on plain ``Figure`` objects (no pyplot state), under
fixed rc settings, with timestamps and software versions left out of the file metadata, and written
atomically. :mod:`.figure_families` writes a family into its directory with an ``index.json``; the
curves family also gets ``planning.txt`` (:func:`planning_note`, Hoeffding planning aid, Proposition 4).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from prefix_audit.core.io import atomic_write
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.statistics.intervals import hoeffding_bound, hoeffding_sample_size
from prefix_audit.statistics.stats import ORIGINS, cohort_size

from .palette import CATEGORY_COLOURS, ORIGIN_COLOURS, SERIES_COLOURS, UNCLASSIFIED

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

log = logging.getLogger(__name__)

# Methods take the series colours in sorted order over the whole stats table, so a method keeps its colour.
METHOD_COLOURS = SERIES_COLOURS
DEPTH_CAP = 10
FORMATS = ("png", "pdf")
INDEX_NAME = "index.json"
PLANNING_NAME = "planning.txt"

_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "prefix-audit",
    "pdf.compression": 6,
    "pdf.fonttype": 42,
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 9,
    "figure.titlesize": 10,
    "legend.fontsize": 8,
    "savefig.dpi": 150,
}
_METADATA = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
}
_FIXED_COHORT = "fixed cohort: denominator = all N rollouts of the block"


def safe_name(name: str) -> str:
    """A file-name-safe form of a dataset or model name (``/``, spaces and the like become ``-``)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-.")
    return cleaned or "unnamed"


@contextlib.contextmanager
def _quiet_font_subsetting() -> Iterator[None]:
    """fontTools logs every glyph of every PDF font subset at INFO; keep stage logs readable."""
    logger = logging.getLogger("fontTools")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _save(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    with matplotlib.rc_context(_RC), _quiet_font_subsetting():
        for fmt in FORMATS:
            path = out_dir / f"{stem}.{fmt}"
            atomic_write(path, functools.partial(fig.savefig, format=fmt, metadata=_METADATA[fmt]))
            paths.append(path)
    return paths


def _new_figure(
    ncols: int, width_per_panel: float, height: float, extra_width: float = 0.0
) -> tuple[Figure, list]:
    width = max(4.5, width_per_panel * ncols) + extra_width
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(1, ncols, squeeze=False, sharey=True)[0]
    return fig, list(axes)


def _method_colours(methods: Iterable[str]) -> dict[str, str]:
    return {m: METHOD_COLOURS[i % len(METHOD_COLOURS)] for i, m in enumerate(sorted(set(methods)))}


def dataset_models(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """The (dataset, model) pairs of a table, sorted: one figure each."""
    if frame.is_empty():
        return []
    pairs = frame.select("dataset", "model").unique().rows()
    return sorted((str(d), str(m)) for d, m in pairs)


def check_stem_collisions(blocks: Sequence[tuple[str, str]]) -> None:
    """Raise ValueError where two blocks would write the same figure file."""
    seen: dict[str, tuple[str, str]] = {}
    for block in blocks:
        stem = f"{safe_name(block[0])}_{safe_name(block[1])}"
        if stem in seen and seen[stem] != block:
            raise ValueError(f"blocks {seen[stem]} and {block} map to the same figure name {stem!r}")
        seen[stem] = block


def _series(stats: pl.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """k, estimate, ci_low, ci_high of one per-depth metric (undefined values as NaN)."""
    rows = stats.filter(pl.col("metric") == metric).sort("k")
    est, lo, hi = (rows[c].cast(pl.Float64).fill_null(math.nan).to_numpy()
                   for c in ("estimate", "ci_low", "ci_high"))
    return rows["k"].to_numpy().astype(int), est, lo, hi


def _block_n(stats: pl.DataFrame) -> str | None:
    """The block's size as tasks × trials (from its PEC(1) row)."""
    rows = stats.filter(pl.col("metric") == "pec").sort("k")
    return cohort_size(rows.row(0, named=True)) if rows.height else None


def _depth_axis(ax, k_max: int, ylabel: str | None) -> None:
    ax.set_xlim(0.7, k_max + 0.3)
    ax.set_xticks(range(1, k_max + 1))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("depth k")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, color="#DDDDDD", linewidth=0.6)
    ax.set_axisbelow(True)


def _draw_metric(ax, block: pl.DataFrame, metric: str, colours: dict[str, str], label_n: bool) -> int:
    k_max = 0
    for method in sorted(block["method"].unique().to_list()):
        rows = block.filter(pl.col("method") == method)
        k, est, lo, hi = _series(rows, metric)
        if not len(k):
            continue
        k_max = max(k_max, int(k.max()))
        colour = colours[method]
        label = f"{method} (N = {_block_n(rows)})" if label_n else method
        ax.fill_between(k, lo, hi, color=colour, alpha=0.18, linewidth=0)
        ax.plot(k, est, color=colour, marker="o", markersize=3.5, linewidth=1.5, label=label)
    return k_max


def pec_curves(stats: pl.DataFrame, out_dir: str | os.PathLike[str],
               blocks: Sequence[tuple[str, str]] | None = None) -> list[Path]:
    """One figure per dataset × model (all, or ``blocks``): PEC(k) per method with its CI band;
    returns the files."""
    out_dir = Path(out_dir)
    colours = _method_colours(stats["method"].to_list()) if stats.height else {}
    paths: list[Path] = []
    for dataset, model in dataset_models(stats) if blocks is None else blocks:
        block = stats.filter((pl.col("dataset") == dataset) & (pl.col("model") == model))
        fig, (ax,) = _new_figure(1, 5.5, 3.8)
        with matplotlib.rc_context(_RC):
            k_max = _draw_metric(ax, block, "pec", colours, label_n=True)
            _depth_axis(ax, max(k_max, 1), "PEC(k) = P(FED > k)")
            confidence = block["confidence"].drop_nulls()
            level = f"{confidence[0]:.0%} CI" if confidence.len() else "CI"
            ax.set_title(f"PEC(k), {dataset} / {model} (bands: {level})\n{_FIXED_COHORT}")
            ax.legend(loc="lower left", frameon=False)
        paths += _save(fig, out_dir, f"pec_{safe_name(dataset)}_{safe_name(model)}")
    return paths


_DEPTH_PANELS = (
    ("depth_support", "depth support P(T ≥ k)"),
    ("eligible_pec", "eligible-depth PEC P(FED > k | T ≥ k)"),
    ("pec", "PEC(k) = support × eligible PEC"),
)


def depth_decomposition(stats: pl.DataFrame, out_dir: str | os.PathLike[str],
                        blocks: Sequence[tuple[str, str]] | None = None) -> list[Path]:
    """Per dataset × model: depth support, eligible-depth PEC and their product PEC(k), per method."""
    out_dir = Path(out_dir)
    colours = _method_colours(stats["method"].to_list()) if stats.height else {}
    paths: list[Path] = []
    for dataset, model in dataset_models(stats) if blocks is None else blocks:
        block = stats.filter((pl.col("dataset") == dataset) & (pl.col("model") == model))
        fig, axes = _new_figure(len(_DEPTH_PANELS), 3.6, 3.8)
        with matplotlib.rc_context(_RC):
            k_max = 1
            for i, (ax, (metric, title)) in enumerate(zip(axes, _DEPTH_PANELS, strict=True)):
                k_max = max(k_max, _draw_metric(ax, block, metric, colours, label_n=i == 0))
                ax.set_title(title)
            for i, ax in enumerate(axes):
                _depth_axis(ax, k_max, "probability" if i == 0 else None)
            axes[0].legend(loc="lower left", frameon=False)
            fig.suptitle(
                f"Depth decomposition (paper eq. 7), {dataset} / {model}\n"
                f"support and PEC: {_FIXED_COHORT}; eligible PEC: denominator = rollouts with T ≥ k"
            )
        paths += _save(fig, out_dir, f"depth_{safe_name(dataset)}_{safe_name(model)}")
    return paths


def _depth_counts(block: pl.DataFrame, column: str, keys: Sequence[str],
                  cap: int) -> tuple[dict[str, np.ndarray], int]:
    """Counts of first failures per value of ``column`` (a value outside ``keys``, or no such column:
    :data:`UNCLASSIFIED`) in depth bins 1..cap (last bin: ≥ cap); and the fully executable rollouts."""
    fed = block["FED"].to_numpy().astype(np.int64)
    T = block["T"].to_numpy().astype(np.int64)
    values = block[column].to_list() if column in block.columns else [None] * block.height
    failed = fed <= T
    counts = {c: np.zeros(cap, dtype=np.int64) for c in (*keys, UNCLASSIFIED)}
    for depth, value in zip(fed[failed], (v for v, f in zip(values, failed, strict=True) if f), strict=True):
        key = value if value in keys else UNCLASSIFIED
        counts[key][min(int(depth), cap) - 1] += 1
    return counts, int((~failed).sum())


def _category_counts(block: pl.DataFrame, cap: int) -> tuple[dict[str, np.ndarray], int]:
    """First failures per category (:data:`UNCLASSIFIED`: none of :data:`CATEGORIES`) by depth bin."""
    return _depth_counts(block, "category", CATEGORIES, cap)


def _origin_counts(block: pl.DataFrame, cap: int) -> tuple[dict[str, np.ndarray], int]:
    """First failures per origin (:data:`UNCLASSIFIED`: none recorded) by depth bin."""
    return _depth_counts(block, "origin", ORIGINS, cap)


def _check_columns(episodes: pl.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in ("dataset", "model", "method", "T", "FED", *columns) if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes lack required column(s): {', '.join(missing)}")


def _block_rows(episodes: pl.DataFrame, dataset: str, model: str) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """A block's entries, those with an observed action (infrastructure failures, T/FED null, have no
    first failure to draw) and its methods, sorted."""
    entries = episodes.filter((pl.col("dataset") == dataset) & (pl.col("model") == model))
    return entries, entries.filter(pl.col("T").is_not_null()), sorted(entries["method"].unique().to_list())


def _all_keys(counts: dict[str, np.ndarray]) -> np.ndarray:
    """A method's first failures per depth bin, its keys' counts (:func:`_depth_counts`) added up."""
    return np.sum(list(counts.values()), axis=0)


def _depth_panels(axes: Sequence, entries: pl.DataFrame, block: pl.DataFrame, methods: Sequence[str],
                  per_method: dict[str, tuple[dict[str, np.ndarray], int]], keys: Sequence[str],
                  colours: dict[str, str], names: dict[str, str], cap: int) -> None:
    """One panel per method: first failures by FED depth, stacked by ``keys`` (:data:`UNCLASSIFIED` only
    where some failure is), each panel titled with its fully executable and infrastructure-failed rollouts."""
    # Bins shown: 1..deepest failure seen in any method of the block (at least 1, at most cap).
    deepest = max((int(np.nonzero(_all_keys(c))[0].max()) + 1
                   for c, _ in per_method.values() if _all_keys(c).any()), default=1)
    depths = np.arange(1, deepest + 1)
    labels = [str(d) for d in depths]
    if deepest == cap:
        labels[-1] = f"{cap}+"
    shown = [k for k in keys if k != UNCLASSIFIED or any(cnt[k].any() for cnt, _ in per_method.values())]
    for ax, method in zip(axes, methods, strict=True):
        counts, full = per_method[method]
        n = block.filter(pl.col("method") == method).height
        bottom = np.zeros(len(depths), dtype=np.int64)
        for key in shown:
            values = counts[key][: len(depths)]
            ax.bar(depths, values, bottom=bottom, color=colours[key], width=0.8, label=names[key],
                   edgecolor="white", linewidth=0.4)
            bottom += values
        if full == n:
            ax.text(0.5, 0.5, "no prefix failures", transform=ax.transAxes, ha="center", va="center",
                    color="#777777")
        ax.set_xticks(depths, labels)
        ax.set_xlabel("first error depth (FED)")
        infra = entries.filter(pl.col("method") == method).height - n
        ax.set_title(f"{method}\nfully executable: {full} of N = {n}; failed: {n - full}"
                     + (f"\n(and {infra} infrastructure failures)" if infra else ""))
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, axis="y", color="#DDDDDD", linewidth=0.6)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("rollouts (first failure at this depth)")
    tallest = max(int(_all_keys(c).max()) for c, _ in per_method.values())
    axes[0].set_ylim(0, max(1, tallest) * 1.08)


def failure_categories_by_depth(
    episodes: pl.DataFrame, out_dir: str | os.PathLike[str], *, cap: int = DEPTH_CAP,
    blocks: Sequence[tuple[str, str]] | None = None,
) -> list[Path]:
    """Per dataset × model, one panel per method: stacked first-failure category counts by FED depth.

    Depths above ``cap`` share the last bin (labelled ``cap+``); rollouts without a prefix failure
    (FED = T + 1) are counted in the panel title, and so are infrastructure failures (no action).
    """
    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    _check_columns(episodes, ())
    out_dir = Path(out_dir)
    paths: list[Path] = []
    keys = (*CATEGORIES, UNCLASSIFIED)
    for dataset, model in dataset_models(episodes) if blocks is None else blocks:
        entries, block, methods = _block_rows(episodes, dataset, model)
        per_method = {m: _category_counts(block.filter(pl.col("method") == m), cap) for m in methods}
        fig, axes = _new_figure(len(methods), 3.4, 3.8, extra_width=1.6)
        with matplotlib.rc_context(_RC):
            _depth_panels(axes, entries, block, methods, per_method, keys, CATEGORY_COLOURS,
                          {c: c.replace("_", "-") for c in keys}, cap)
            handles, names = axes[0].get_legend_handles_labels()
            fig.legend(handles[::-1], names[::-1], loc="outside right center", title="first failure",
                       frameon=False)  # reversed: legend order matches the stacking order
            fig.suptitle(f"First-failure category by depth, {dataset} / {model}")
        paths += _save(fig, out_dir, f"categories_{safe_name(dataset)}_{safe_name(model)}")
    return paths


def failure_origins(
    episodes: pl.DataFrame, out_dir: str | os.PathLike[str], *, cap: int = DEPTH_CAP,
    blocks: Sequence[tuple[str, str]] | None = None,
) -> list[Path]:
    """Per dataset × model: whose error each first failure is (the FED table's ``origin``: agent, user,
    benchmark; docs/attribution.md). On top, per method, the origins' shares of its first failures as one
    stacked bar, the counts in its label; below, one panel per method, the first failures by FED depth
    stacked by origin (bins as :func:`failure_categories_by_depth`). A first failure with no origin (a FED
    table written before attribution) is drawn as ``unattributed``."""
    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    _check_columns(episodes, ("origin",))
    out_dir = Path(out_dir)
    paths: list[Path] = []
    keys = (*ORIGINS, UNCLASSIFIED)
    names = {**{o: o for o in ORIGINS}, UNCLASSIFIED: "unattributed"}
    for dataset, model in dataset_models(episodes) if blocks is None else blocks:
        entries, block, methods = _block_rows(episodes, dataset, model)
        per_method = {m: _origin_counts(block.filter(pl.col("method") == m), cap) for m in methods}
        totals = {m: {k: int(c[k].sum()) for k in keys} for m, (c, _) in per_method.items()}
        width = max(4.5, 3.4 * len(methods)) + 1.6
        with matplotlib.rc_context(_RC):
            fig = Figure(figsize=(width, 4.6 + 0.35 * len(methods)), layout="constrained")
            (top,), (bottom,) = fig.subfigures(2, 1, squeeze=False, height_ratios=[0.6 + 0.35 * len(methods), 3.8])
            share_ax = top.subplots()
            axes = list(bottom.subplots(1, len(methods), squeeze=False, sharey=True)[0])
            _depth_panels(axes, entries, block, methods, per_method, keys, ORIGIN_COLOURS, names, cap)
            shown = [k for k in keys if k != UNCLASSIFIED or any(t[k] for t in totals.values())]
            rows = range(len(methods))
            left = np.zeros(len(methods))
            failed = np.array([sum(totals[m].values()) for m in methods])
            for key in shown:
                counts = np.array([totals[m][key] for m in methods])
                shares = np.divide(counts, failed, out=np.zeros(len(methods)), where=failed > 0)
                share_ax.barh(rows, shares, left=left, color=ORIGIN_COLOURS[key], height=0.6,
                              edgecolor="white", linewidth=0.4)
                left += shares
            for row, method, f in zip(rows, methods, failed, strict=True):
                said = " · ".join(f"{names[k]} {totals[method][k]}" for k in shown)
                share_ax.text(1.0, row, f" {said} of {f} first failures" if f else " no first failure",
                              va="center", fontsize=8)
            share_ax.set_yticks(rows, methods)
            share_ax.invert_yaxis()  # methods top to bottom in sorted order, as the panels left to right
            share_ax.set_xlim(0, 1)
            share_ax.set_xlabel("share of the method's first failures")
            share_ax.grid(True, axis="x", color="#DDDDDD", linewidth=0.6)
            share_ax.set_axisbelow(True)
            handles, labels = axes[0].get_legend_handles_labels()
            fig.legend(handles[::-1], labels[::-1], loc="outside right center", title="whose error",
                       frameon=False)  # reversed: legend order matches the stacking order
            fig.suptitle(f"Whose error the first failure is, {dataset} / {model}")
        paths += _save(fig, out_dir, f"origins_{safe_name(dataset)}_{safe_name(model)}")
    return paths


_RELATION_WORDS = {"before": "FED before it", "at": "FED at it", "after": "FED after it"}


def label_offsets(entries: pl.DataFrame, out_dir: str | os.PathLike[str],
                  blocks: Sequence[tuple[str, str]] | None = None) -> list[Path]:
    """Per dataset × model, one panel per method: how many labelled rollouts have FED at each offset
    from the labellers' first failure (FED − first failure; negative: FED first), from a label
    comparison's entries table (:mod:`prefix_audit.statistics.labels`); the panel title counts FED at,
    before and after it and the fully executable rollouts among those with a human failure."""
    missing = [c for c in ("dataset", "model", "method", "rollout_id", "failures", "fired", "relation", "offset",
                           "offset_unit") if c not in entries.columns]
    if missing:
        raise ValueError(f"label entries lack required column(s): {', '.join(missing)}")
    matched = entries.filter(pl.col("rollout_id").is_not_null())
    out_dir = Path(out_dir)
    paths: list[Path] = []
    for dataset, model in dataset_models(matched) if blocks is None else blocks:
        block = matched.filter((pl.col("dataset") == dataset) & (pl.col("model") == model))
        methods = sorted(block["method"].unique().to_list())
        fig, axes = _new_figure(len(methods), 5.2, 3.4)
        with matplotlib.rc_context(_RC):
            for ax, method in zip(axes, methods, strict=True):
                rows = block.filter((pl.col("method") == method) & (pl.col("failures") > 0))
                compared = rows.filter(pl.col("relation").is_not_null())
                counts = compared.group_by("offset").len().sort("offset")
                ax.bar(counts["offset"].to_numpy(), counts["len"].to_numpy(), width=0.8, color=METHOD_COLOURS[0])
                ax.axvline(0, color="#C62828", linewidth=1, zorder=0)
                units = sorted(set(compared["offset_unit"].to_list())) or ["messages"]
                ax.set_xlabel(f"FED − human first failure ({'/'.join(units)})")
                said = "; ".join(f"{_RELATION_WORDS[r]}: {int((compared['relation'] == r).sum())}" for r in
                                 ("before", "at", "after"))
                executable = int(rows["fired"].not_().sum())
                ax.set_title(f"{method}\n{said}\nfully executable: {executable} of {rows.height} with a human failure")
                if compared.is_empty():
                    ax.text(0.5, 0.5, "FED fired in none", transform=ax.transAxes, ha="center", va="center",
                            color="#777777")
                ax.yaxis.get_major_locator().set_params(integer=True)
                ax.grid(True, axis="y", color="#DDDDDD", linewidth=0.6)
                ax.set_axisbelow(True)
            axes[0].set_ylabel("labelled rollouts")
            fig.suptitle(f"FED beside the human first failure\n{dataset} / {model}")
        paths += _save(fig, out_dir, f"label_offsets_{safe_name(dataset)}_{safe_name(model)}")
    return paths


_CONSISTENCY = (("disagree_full", "full executability"), ("disagree_y", "final success Y"))


def has_repeated_trials(stats: pl.DataFrame, dataset: str, model: str) -> bool:
    rows = stats.filter((pl.col("dataset") == dataset) & (pl.col("model") == model) & (pl.col("metric") == "ter"))
    return bool(rows.height and (rows["trials_max"].fill_null(1) >= 2).any())


def consistency(stats: pl.DataFrame, out_dir: str | os.PathLike[str],
                blocks: Sequence[tuple[str, str]] | None = None) -> list[Path]:
    """Within-task consistency per dataset × model with repeated trials: per method, the share of
    tasks whose trials disagree on full executability and on Y, with CIs; returns the files."""
    out_dir = Path(out_dir)
    paths: list[Path] = []
    for dataset, model in dataset_models(stats) if blocks is None else blocks:
        if not has_repeated_trials(stats, dataset, model):
            continue
        block = stats.filter((pl.col("dataset") == dataset) & (pl.col("model") == model)
                             & pl.col("metric").is_in([m for m, _ in _CONSISTENCY]))
        methods = sorted(block["method"].unique().to_list())
        fig, axes = _new_figure(len(_CONSISTENCY), 3.6, 0.6 + 0.45 * max(len(methods), 2))
        with matplotlib.rc_context(_RC):
            for ax, (metric, title) in zip(axes, _CONSISTENCY, strict=True):
                rows = {r["method"]: r for r in block.filter(pl.col("metric") == metric).iter_rows(named=True)}
                for i, method in enumerate(methods):
                    r = rows.get(method)
                    if r is None or r["estimate"] is None:
                        ax.text(0.02, i, "no task with 2+ trials", va="center", fontsize=8, color="#666666")
                        continue
                    ax.barh(i, r["estimate"], color="#4477AA", height=0.6)
                    if r["ci_low"] is not None:
                        ax.errorbar(r["estimate"], i, xerr=[[r["estimate"] - r["ci_low"]],
                                                            [r["ci_high"] - r["estimate"]]],
                                    color="black", capsize=3, linewidth=1)
                    ax.text(1.0, i, f" {r['n']} tasks", va="center", fontsize=8)
                ax.set_yticks(range(len(methods)), methods)
                ax.set_xlim(0, 1.0)
                ax.set_title(f"trials disagree on {title}", fontsize=9)
                ax.set_xlabel("share of tasks (with 2+ trials)")
                ax.grid(True, axis="x", color="#DDDDDD", linewidth=0.6)
                ax.set_axisbelow(True)
            fig.suptitle(f"Within-task consistency across trials, {dataset} / {model}")
        paths += _save(fig, out_dir, f"consistency_{safe_name(dataset)}_{safe_name(model)}")
    return paths


def planning_note(n_per_block: int, epsilon: float = 0.05, delta: float = 0.05) -> str:
    """Hoeffding planning aid (Proposition 4) for the [0, 1] metrics at a block size of n tasks."""
    bound = hoeffding_bound(n_per_block, epsilon)
    needed = hoeffding_sample_size(epsilon, delta)
    achieved = math.sqrt(math.log(2.0 / delta) / (2.0 * n_per_block)) if n_per_block > 0 else math.inf
    lines = [
        "Hoeffding planning aid (Proposition 4), for PEC@k, TER, AUC-PEC and final success:",
        "  P(|estimate - truth| >= eps) <= 2 exp(-2 N eps^2).",
        f"  With N = {n_per_block} tasks per block (a task's trials are not independent, so tasks count) "
        f"and eps = {epsilon:g}: bound = "
        + (f"{bound:.4g}" if bound <= 1 else f"{bound:.4g} (vacuous)") + ".",
        f"  Guaranteeing eps = {epsilon:g} with probability >= {1 - delta:g} needs N >= {needed}.",
        f"  At N = {n_per_block}, the guaranteed eps at probability {1 - delta:g} is "
        + (f"{achieved:.4f}." if math.isfinite(achieved) else "undefined (N = 0)."),
        "  Mean FED under a horizon bound T <= K: 2 exp(-2 N eps^2 / K^2), so N scales with K^2.",
        "  These are distribution-free worst-case bounds; the bootstrap intervals are usually tighter.",
    ]
    return "\n".join(lines) + "\n"


def min_block_n(stats: pl.DataFrame) -> int:
    """The smallest block size N (tasks behind PEC@1) of a stats table; 0 without blocks."""
    pec = stats.filter((pl.col("metric") == "pec") & (pl.col("k") == 1))
    smallest = pec["n"].min()
    return smallest if isinstance(smallest, int) else 0
