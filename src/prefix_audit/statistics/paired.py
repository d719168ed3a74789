"""Paired task-level bootstrap of condition-minus-baseline differences (docs/definitions.md#statistics, Table F.3).

A pair joins the condition's and the baseline's rollouts of the same task unit,
``(dataset, task_id)``; a pool name as the pair's dataset pairs over the union of
its member datasets. Units present on one side only are counted and excluded from
the paired estimate. With repeated trials, rollouts pair trial by trial when both
sides hold the same trials of every paired task (``pairing`` "trial"), else each
side's task means are compared (``pairing`` "task_mean"); either way the task is the
resampling unit: per task, the summed differences ``1{FED=T+1}``, ``(FED-1)/T`` and
Y and how many pairs each sum holds form one row, and one shared index draw over the
paired tasks (in unit order) resamples all three differences as ratios of sums.
Rows without a trajectory (infrastructure failures) are left out of the prefix
differences and kept in the Y difference. Cost differences are point estimates over
pairs with accounting on both sides.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from prefix_audit.core.io import atomic_write_bytes, frame_parquet_bytes, read_parquet
from prefix_audit.statistics.bootstrap import one_blas_thread, percentile_bounds, ratio, resampled_sums
from prefix_audit.statistics.metrics import validate_block, validate_outcomes
from prefix_audit.statistics.settings import StatsSettings, check_episodes, check_memory
from prefix_audit.statistics.stats import COST_METRICS, sound_only

UNIT = ("dataset", "task_id")
log = logging.getLogger(__name__)

INTERVAL_METRICS = ("delta_ter", "delta_auc_pec", "delta_final_success")
PAIRED_METRICS = (
    *INTERVAL_METRICS,
    *(f"delta_{c}" for c in COST_METRICS),
    *(f"rel_{c}" for c in COST_METRICS),
)

PAIRED_SCHEMA = pl.Schema(
    {
        "label": pl.Utf8,
        "dataset": pl.Utf8,
        "condition_model": pl.Utf8,
        "condition_method": pl.Utf8,
        "baseline_model": pl.Utf8,
        "baseline_method": pl.Utf8,
        "metric": pl.Utf8,
        "estimate": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "n_pairs": pl.Int64,
        "n_condition_only": pl.Int64,
        "n_baseline_only": pl.Int64,
        "n": pl.Int64,
        "pairing": pl.Utf8,  # "trial" (trial-matched rollouts) or "task_mean"
        "interval": pl.Utf8,
        "resamples": pl.Int32,
        "seed": pl.Int64,
        "confidence": pl.Float64,
    }
)


@dataclass(frozen=True)
class PairSpec:
    """One paired comparison: ``condition`` minus ``baseline``, each a ``(model, method)``."""

    label: str
    dataset: str
    condition: tuple[str, str]
    baseline: tuple[str, str]


def pair_specs(pairs: Any) -> list[PairSpec]:
    """Pairs as the workflow config writes them: label, dataset, condition/baseline {model, method};
    a ValueError naming the entry that is not one."""
    if not isinstance(pairs, list):
        raise ValueError(f"pairs must be a list of {{label, dataset, condition, baseline}}, got {type(pairs).__name__}")
    out = []
    for i, p in enumerate(pairs):
        try:
            out.append(PairSpec(str(p["label"]), str(p["dataset"]),
                                (str(p["condition"]["model"]), str(p["condition"]["method"])),
                                (str(p["baseline"]["model"]), str(p["baseline"]["method"]))))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"pairs[{i}]: needs label, dataset, condition and baseline {{model, method}} "
                             f"(missing or not a mapping: {exc})") from None
    return out


def pair_seed(seed: int, pair: PairSpec) -> int:
    """Per-pair bootstrap seed (63-bit), stable across processes.

    The two arms enter unordered, so swapping condition and baseline keeps the draw and
    mirrors the interval (up to rounding); the label is presentation and does not enter.
    """
    arms = sorted([list(pair.condition), list(pair.baseline)])
    payload = json.dumps(["paired", seed, pair.dataset, arms], ensure_ascii=False).encode("utf-8")
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "big") >> 1


def _arm(
    episodes: pl.DataFrame, datasets: Sequence[str], arm: tuple[str, str], label: str, side: str
) -> pl.DataFrame:
    model, method = arm
    rows = episodes.filter(
        pl.col("dataset").is_in(list(datasets)) & (pl.col("model") == model) & (pl.col("method") == method)
    )
    prefix = rows.filter(pl.col("T").is_not_null())
    if rows.height:  # an absent arm is reported through the unpaired counts
        try:
            validate_block(
                prefix["FED"].to_numpy().astype(np.int64),
                prefix["T"].to_numpy().astype(np.int64),
                prefix["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy(),
            )
            validate_outcomes(rows["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy())
        except ValueError as exc:
            raise ValueError(f"pair {label!r}: {side} {model}/{method}: {exc}") from exc
    costs = [
        (pl.col(c).cast(pl.Float64) if c in rows.columns else pl.lit(None, dtype=pl.Float64)).alias(c)
        for c in COST_METRICS
    ]
    trial = pl.col("trial").cast(pl.Int64) if "trial" in rows.columns else pl.lit(0, dtype=pl.Int64)
    return rows.select(
        *UNIT,
        trial.alias("trial"),
        (pl.col("FED") == pl.col("T") + 1).cast(pl.Float64).alias("full"),
        ((pl.col("FED") - 1) / pl.col("T")).cast(pl.Float64).alias("area"),
        pl.col("Y").cast(pl.Float64).alias("y"),
        *costs,
    )


def _row(
    metric: str, estimate: float | None, bounds: tuple[float, float] | None, n: int
) -> dict[str, object]:
    if estimate is not None and math.isnan(estimate):
        estimate = None
    lo, hi = bounds if bounds is not None and estimate is not None else (None, None)
    if lo is not None and hi is not None and (math.isnan(lo) or math.isnan(hi)):
        lo = hi = None
    return {
        "metric": metric,
        "estimate": estimate,
        "ci_low": lo,
        "ci_high": hi,
        "n": n,
        "interval": "paired_percentile_bootstrap" if lo is not None else "none",
    }


def _pairing(cond: pl.DataFrame, base: pl.DataFrame) -> str:
    """"trial" when both sides hold the same trials, each once, of every task they share."""
    def trials(arm: pl.DataFrame) -> pl.DataFrame:
        return arm.group_by(UNIT).agg(pl.col("trial").sort().alias("trials"), pl.len().alias("rows"))

    both = trials(cond).join(trials(base), on=list(UNIT), suffix="_b")
    unique = (both["rows"] == both["trials"].list.n_unique()) & (both["rows_b"] == both["trials_b"].list.n_unique())
    same = both["trials"] == both["trials_b"]
    return "trial" if bool((unique & same).all()) else "task_mean"


_SIDES = ("full", "area", "y", *COST_METRICS)


def _paired_rows(cond: pl.DataFrame, base: pl.DataFrame, pairing: str) -> pl.DataFrame:
    """One row per pair of compared values (a trial pair, or a task's two means), sorted by unit."""
    if pairing == "task_mean":
        cond, base = (arm.group_by(UNIT).agg(pl.col(c).mean() for c in _SIDES) for arm in (cond, base))
        on = list(UNIT)
    else:
        on = [*UNIT, "trial"]
    joined = cond.join(base, on=on, suffix="_b")
    return joined.rename({c: f"{c}_c" for c in _SIDES}).sort(on)


def _metric_rows(
    paired: pl.DataFrame, *, resamples: int, seed: int, confidence: float
) -> list[dict[str, object]]:
    def both(name: str) -> pl.Expr:
        return pl.col(f"{name}_c").is_not_null() & pl.col(f"{name}_b").is_not_null()

    def diff(name: str) -> pl.Expr:
        return pl.when(both(name)).then(pl.col(f"{name}_c") - pl.col(f"{name}_b")).otherwise(0.0)

    # Per task: summed differences and how many pairs each sum holds.
    per_task = paired.group_by(UNIT).agg(
        diff("full").sum().alias("d_full"), diff("area").sum().alias("d_area"),
        both("full").cast(pl.Float64).sum().alias("w_prefix"),
        diff("y").sum().alias("d_y"), both("y").cast(pl.Float64).sum().alias("w_y"),
    ).sort(list(UNIT))
    values = per_task.select("d_full", "d_area", "w_prefix", "d_y", "w_y").to_numpy().astype(np.float64)
    d_full, d_area, w_prefix, d_y, w_y = values.T
    n_prefix, n_known = int((w_prefix > 0).sum()), int((w_y > 0).sum())
    estimates = [
        float(d_full.sum() / w_prefix.sum()) if n_prefix else None,
        float(d_area.sum() / w_prefix.sum()) if n_prefix else None,
        float(d_y.sum() / w_y.sum()) if n_known else None,
    ]
    bounds: list[tuple[float, float] | None] = [None, None, None]
    if per_task.height:
        sums = resampled_sums(values, resamples, np.random.default_rng(seed))
        reps = np.column_stack([ratio(sums[:, 0], sums[:, 2]), ratio(sums[:, 1], sums[:, 2]),
                                ratio(sums[:, 3], sums[:, 4])])
        lo, hi = percentile_bounds(reps, confidence)
        bounds = [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
    rows = [
        _row(metric, est, b, count)
        for metric, est, b, count in zip(INTERVAL_METRICS, estimates, bounds, (n_prefix, n_prefix, n_known),
                                         strict=True)
    ]
    deltas, relatives = [], []
    for c in COST_METRICS:
        costed = paired.filter(both(c))
        if costed.height:
            mean_c, mean_b = cast(float, costed[f"{c}_c"].mean()), cast(float, costed[f"{c}_b"].mean())
            rel = mean_c / mean_b - 1.0 if mean_b else None
            tasks = costed.select(UNIT).n_unique()
            deltas.append(_row(f"delta_{c}", mean_c - mean_b, None, tasks))
            relatives.append(_row(f"rel_{c}", rel, None, tasks))
        else:
            deltas.append(_row(f"delta_{c}", None, None, 0))
            relatives.append(_row(f"rel_{c}", None, None, 0))
    return rows + deltas + relatives


def _pair_rows(episodes: pl.DataFrame, settings: StatsSettings, pair: PairSpec) -> list[dict[str, object]]:
    members = settings.members(pair.dataset)
    cond = _arm(episodes, members, pair.condition, pair.label, "condition")
    base = _arm(episodes, members, pair.baseline, pair.label, "baseline")
    units_c, units_b = cond.select(UNIT).unique(), base.select(UNIT).unique()
    shared = units_c.join(units_b, on=list(UNIT))
    pairing = _pairing(cond, base)
    paired = _paired_rows(cond.join(shared, on=list(UNIT)), base.join(shared, on=list(UNIT)), pairing)
    pseed = pair_seed(settings.seed, pair)
    common = {
        "label": pair.label,
        "dataset": pair.dataset,
        "condition_model": pair.condition[0],
        "condition_method": pair.condition[1],
        "baseline_model": pair.baseline[0],
        "baseline_method": pair.baseline[1],
        "n_pairs": shared.height,
        "n_condition_only": units_c.height - shared.height,
        "n_baseline_only": units_b.height - shared.height,
        "pairing": pairing,
        "resamples": settings.resamples,
        "seed": pseed,
        "confidence": settings.confidence,
    }
    metric_rows = _metric_rows(paired, resamples=settings.resamples, seed=pseed, confidence=settings.confidence)
    return [common | r for r in metric_rows]


def paired_differences(episodes: pl.DataFrame, pairs: Sequence[PairSpec], settings: StatsSettings) -> pl.DataFrame:
    """Long table (``PAIRED_SCHEMA``) of condition-minus-baseline differences, pairs in the order given.

    Per pair: ``delta_ter``, ``delta_auc_pec``, ``delta_final_success`` (on pairs with Y known
    on both sides) with paired percentile-bootstrap intervals; ``delta_agent_tokens``,
    ``delta_agent_latency_s`` and the relative changes ``rel_*`` (condition mean / baseline
    mean - 1) as points over pairs with accounting on both sides. ``n`` is the denominator
    each row used; with no paired unit every estimate is null. ``settings.resamples`` draws per pair
    (a pool name as a pair's dataset stands for its ``settings.pools`` members); with
    ``settings.exclude_unsound``, of the sound tasks only (:func:`~prefix_audit.statistics.stats.sound_only`).
    ``settings.workers`` threads compute pairs concurrently; each pair has its own seed, so the table
    does not depend on it.
    """
    check_episodes(episodes)
    if settings.exclude_unsound:
        episodes = sound_only(episodes)
    settings.check_pools(set(episodes["dataset"].unique().to_list()))
    keys = [(p.label, p.dataset) for p in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"pair labels must be unique per dataset, got {keys}")
    present = set(episodes.select("dataset", "model", "method").unique().iter_rows())
    for p in pairs:
        for side, (model, method) in (("condition", p.condition), ("baseline", p.baseline)):
            if not any((d, model, method) in present for d in settings.members(p.dataset)):
                log.warning("pair %r: its %s %s/%s/%s has no episodes; its rows have n = 0",
                            p.label, side, p.dataset, model, method)
    # Per pair at once: the drawn sums of both arms' numerators and denominators, the ratios, the
    # differences and the percentile pass, over every interval metric.
    check_memory(settings.resamples * 8 * 5 * 4 * len(INTERVAL_METRICS)
                 * min(max(settings.workers, 1), max(len(pairs), 1)), settings.resamples)

    rows_of = partial(_pair_rows, episodes, settings)
    with one_blas_thread(), ThreadPoolExecutor(max_workers=settings.workers) as executor:
        rows = [row for pair_rows in executor.map(rows_of, pairs) for row in pair_rows]
    return pl.DataFrame(rows, schema=PAIRED_SCHEMA)


def write_paired(episodes_path: str | os.PathLike[str], pairs: Sequence[PairSpec], out: str | os.PathLike[str],
                 settings: StatsSettings) -> Path:
    """:func:`paired_differences` of an episodes Parquet file, written to ``out`` atomically."""
    paired = paired_differences(read_parquet(episodes_path), pairs, settings)
    return atomic_write_bytes(out, frame_parquet_bytes(paired))
