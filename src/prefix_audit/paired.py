"""Paired task-level bootstrap of condition-minus-baseline differences (SPEC §5, Table F.3).

A pair joins the condition's and the baseline's rollout of the same task unit,
``(dataset, task_id)``; a pool name as the pair's dataset pairs over the union of
its member datasets. Units present on one side only are counted and excluded from
the paired estimate. Per paired unit the differences
``(1{FED=T+1}, (FED-1)/T, Y known on both sides, Y difference)`` form one row; one
shared index draw over the paired units (in unit order) resamples all three metric
differences. Cost differences are point estimates over pairs with accounting on
both sides.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from prefix_audit.bootstrap import percentile_bounds, ratio, resampled_sums
from prefix_audit.io import atomic_write
from prefix_audit.metrics import validate_block
from prefix_audit.stats import COST_METRICS, check_episodes, check_pools, pool_members

UNIT = ("dataset", "task_id")
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


def pair_specs(pairs: Sequence[Mapping[str, Any]]) -> list[PairSpec]:
    """Pairs as the workflow config writes them: label, dataset, condition/baseline {model, method}."""
    return [PairSpec(p["label"], p["dataset"], (p["condition"]["model"], p["condition"]["method"]),
                     (p["baseline"]["model"], p["baseline"]["method"])) for p in pairs]


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
    dup = rows.filter(pl.struct(UNIT).is_duplicated())
    if dup.height:
        first = dup.row(0, named=True)
        raise ValueError(
            f"pair {label!r}: {side} {model}/{method} has more than one rollout for task "
            f"{first['dataset']}/{first['task_id']} (paired bootstrap needs one per task)"
        )
    if rows.height:  # an absent arm is reported through the unpaired counts
        try:
            validate_block(
                rows["FED"].to_numpy().astype(np.int64),
                rows["T"].to_numpy().astype(np.int64),
                rows["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy(),
            )
        except ValueError as exc:
            raise ValueError(f"pair {label!r}: {side} {model}/{method}: {exc}") from exc
    costs = [
        (pl.col(c).cast(pl.Float64) if c in rows.columns else pl.lit(None, dtype=pl.Float64)).alias(c)
        for c in COST_METRICS
    ]
    return rows.select(
        *UNIT,
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


def _metric_rows(
    paired: pl.DataFrame, *, resamples: int, seed: int, confidence: float
) -> list[dict[str, object]]:
    n = paired.height
    d_full = (paired["full_c"] - paired["full_b"]).to_numpy()
    d_area = (paired["area_c"] - paired["area_b"]).to_numpy()
    y_c, y_b = paired["y_c"].to_numpy(), paired["y_b"].to_numpy()
    known = ~(np.isnan(y_c) | np.isnan(y_b))
    d_y = np.where(known, y_c - y_b, 0.0)
    n_known = int(known.sum())
    estimates = [
        float(d_full.mean()) if n else None,
        float(d_area.mean()) if n else None,
        float(d_y.sum() / n_known) if n_known else None,
    ]
    bounds: list[tuple[float, float] | None] = [None, None, None]
    if n:
        values = np.column_stack([d_full, d_area, known.astype(np.float64), d_y])
        sums = resampled_sums(values, resamples, np.random.default_rng(seed))
        reps = np.column_stack([sums[:, 0] / n, sums[:, 1] / n, ratio(sums[:, 3], sums[:, 2])])
        lo, hi = percentile_bounds(reps, confidence)
        bounds = [(float(a), float(b)) for a, b in zip(lo, hi)]
    rows = [
        _row(metric, est, b, count)
        for metric, est, b, count in zip(INTERVAL_METRICS, estimates, bounds, (n, n, n_known))
    ]
    deltas, relatives = [], []
    for c in COST_METRICS:
        both = paired.filter(pl.col(f"{c}_c").is_not_null() & pl.col(f"{c}_b").is_not_null())
        if both.height:
            mean_c, mean_b = float(both[f"{c}_c"].mean()), float(both[f"{c}_b"].mean())
            rel = mean_c / mean_b - 1.0 if mean_b else None
            deltas.append(_row(f"delta_{c}", mean_c - mean_b, None, both.height))
            relatives.append(_row(f"rel_{c}", rel, None, both.height))
        else:
            deltas.append(_row(f"delta_{c}", None, None, 0))
            relatives.append(_row(f"rel_{c}", None, None, 0))
    return rows + deltas + relatives


def _pair_rows(
    episodes: pl.DataFrame,
    pools: Mapping[str, Sequence[str]],
    pair: PairSpec,
    *,
    resamples: int,
    seed: int,
    confidence: float,
) -> list[dict[str, object]]:
    members = pool_members(pools, pair.dataset)
    cond = _arm(episodes, members, pair.condition, pair.label, "condition")
    base = _arm(episodes, members, pair.baseline, pair.label, "baseline")
    joined = cond.join(base, on=list(UNIT), how="full", coalesce=True, suffix="_b")
    joined = joined.rename({c: f"{c}_c" for c in cond.columns if c not in UNIT})
    in_c, in_b = pl.col("full_c").is_not_null(), pl.col("full_b").is_not_null()
    paired = joined.filter(in_c & in_b).sort(list(UNIT))
    pseed = pair_seed(seed, pair)
    common = {
        "label": pair.label,
        "dataset": pair.dataset,
        "condition_model": pair.condition[0],
        "condition_method": pair.condition[1],
        "baseline_model": pair.baseline[0],
        "baseline_method": pair.baseline[1],
        "n_pairs": paired.height,
        "n_condition_only": joined.filter(in_c & ~in_b).height,
        "n_baseline_only": joined.filter(~in_c & in_b).height,
        "resamples": resamples,
        "seed": pseed,
        "confidence": confidence,
    }
    metric_rows = _metric_rows(paired, resamples=resamples, seed=pseed, confidence=confidence)
    return [common | r for r in metric_rows]


def paired_differences(
    episodes: pl.DataFrame,
    pairs: Sequence[PairSpec],
    *,
    resamples: int = 100_000,
    seed: int,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = None,
    workers: int = 1,
) -> pl.DataFrame:
    """Long table (``PAIRED_SCHEMA``) of condition-minus-baseline differences, pairs in the order given.

    Per pair: ``delta_ter``, ``delta_auc_pec``, ``delta_final_success`` (on pairs with Y known
    on both sides) with paired percentile-bootstrap intervals; ``delta_agent_tokens``,
    ``delta_agent_latency_s`` and the relative changes ``rel_*`` (condition mean / baseline
    mean - 1) as points over pairs with accounting on both sides. ``n`` is the denominator
    each row used; with no paired unit every estimate is null. ``workers`` threads compute
    pairs concurrently; each pair has its own seed, so the table does not depend on it.
    """
    check_episodes(episodes)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    datasets = set(episodes["dataset"].unique().to_list())
    check_pools(pools or {}, datasets)
    keys = [(p.label, p.dataset) for p in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"pair labels must be unique per dataset, got {keys}")

    rows_of = partial(
        _pair_rows, episodes, pools or {}, resamples=resamples, seed=seed, confidence=confidence
    )
    with ThreadPoolExecutor(max_workers=workers) as executor:
        rows = [row for pair_rows in executor.map(rows_of, pairs) for row in pair_rows]
    return pl.DataFrame(rows, schema=PAIRED_SCHEMA)


def write_paired(
    episodes_path: str | os.PathLike[str],
    pairs: Sequence[PairSpec],
    out: str | os.PathLike[str],
    *,
    resamples: int = 100_000,
    seed: int,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = None,
    workers: int = 1,
) -> Path:
    """Paired differences of an episodes Parquet file; write them to ``out`` atomically."""
    episodes = pl.read_parquet(episodes_path)
    paired = paired_differences(
        episodes, pairs, resamples=resamples, seed=seed, confidence=confidence, pools=pools, workers=workers
    )
    return atomic_write(out, lambda tmp: paired.write_parquet(tmp, compression="zstd", statistics=False))
