"""Per-block statistics: point estimates, identity checks and intervals as one long table (SPEC §5)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType

import numpy as np
import polars as pl

from prefix_audit.bootstrap import percentile_bootstrap
from prefix_audit.intervals import wilson_interval
from prefix_audit.io import atomic_write
from prefix_audit.metrics import block_metrics, check_identities

BLOCK_KEYS = ("dataset", "model", "method")
METRICS = ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed", "final_success", "rr")
REQUIRED_COLUMNS = (*BLOCK_KEYS, "task_id", "T", "FED", "Y")
# Optional accounting columns; when present, each block gets a point-estimate row (the mean per
# episode) per column. COST_METRICS are the costs paired comparisons take differences of.
COST_METRICS = ("agent_tokens", "agent_latency_s", "agent_wall_s")
ACCOUNTING_METRICS = (*COST_METRICS, "agent_calls", "agent_estimated_calls")
TAU_POOL: Mapping[str, tuple[str, ...]] = MappingProxyType({"tau": ("tau_airline", "tau_retail")})

STATS_SCHEMA = pl.Schema(
    {
        "dataset": pl.Utf8,
        "model": pl.Utf8,
        "method": pl.Utf8,
        "metric": pl.Utf8,
        "k": pl.Int16,
        "estimate": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "n": pl.Int64,
        "successes": pl.Int64,
        "interval": pl.Utf8,
        "resamples": pl.Int32,
        "seed": pl.Int64,
        "confidence": pl.Float64,
    }
)


class IdentityViolation(RuntimeError):
    """A block's metrics break one of the identities of Propositions 1-3."""

    def __init__(self, block: tuple[str, str, str], violations: list[str]):
        self.block = block
        self.violations = violations
        super().__init__(f"identity violations in block {'/'.join(block)}: " + "; ".join(violations))


def block_seed(seed: int, dataset: str, model: str, method: str) -> int:
    """Per-block bootstrap seed, stable across processes and platforms (63-bit, non-negative)."""
    payload = json.dumps([seed, dataset, model, method], ensure_ascii=False).encode("utf-8")
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "big") >> 1


def _defined(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _row(
    metric: str,
    k: int | None,
    estimate: float | None,
    lo: float | None,
    hi: float | None,
    n: int,
    interval: str,
    successes: int | None = None,
) -> dict[str, object]:
    """One output row; an undefined estimate or bound makes the whole interval "none"."""
    estimate, lo, hi = _defined(estimate), _defined(lo), _defined(hi)
    if estimate is None or lo is None or hi is None:
        lo = hi = None
        interval = "none"
    return {
        "metric": metric,
        "k": k,
        "estimate": estimate,
        "ci_low": lo,
        "ci_high": hi,
        "n": n,
        "successes": successes,
        "interval": interval,
    }


def check_pools(pools: Mapping[str, Sequence[str]], datasets: set[str]) -> None:
    """Raise ValueError on a pool without members or a pool name that is also a dataset."""
    for name, members in pools.items():
        if not members:
            raise ValueError(f"pool {name!r} has no member datasets")
        if name in datasets:
            raise ValueError(f"pool name {name!r} is also a dataset in the episodes")


def pool_members(pools: Mapping[str, Sequence[str]], dataset: str) -> tuple[str, ...]:
    """The datasets a dataset id or pool name stands for."""
    return tuple(pools.get(dataset, (dataset,)))


def check_episodes(episodes: pl.DataFrame) -> None:
    """Raise ValueError if the episodes lack a required column or hold nulls where none may be."""
    missing = [c for c in REQUIRED_COLUMNS if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes lack required column(s): {', '.join(missing)}")
    for col in (*BLOCK_KEYS, "task_id", "T", "FED"):
        nulls = episodes[col].null_count()
        if nulls:
            raise ValueError(f"episodes column {col!r} has {nulls} null value(s)")
    for col in ("T", "FED"):
        if not episodes.schema[col].is_integer():
            raise ValueError(f"episodes column {col!r} must be integer, got {episodes.schema[col]}")


def _block_rows(
    key: tuple[str, str, str],
    block: pl.DataFrame,
    unit: Sequence[str],
    *,
    resamples: int,
    seed: int,
    k_max: int,
    confidence: float,
) -> list[dict[str, object]]:
    dup = block.filter(pl.struct(unit).is_duplicated()).select(unit)
    if dup.height:
        # The bootstrap resamples rows as tasks; repeated tasks would need a clustered resample.
        first = dup.row(0)
        times = block.filter(pl.all_horizontal(pl.col(c) == v for c, v in zip(unit, first))).height
        shown = "/".join(map(str, first))
        raise ValueError(
            f"block {'/'.join(key)}: task-level bootstrap needs one rollout per task, "
            f"but {'/'.join(unit)} {shown!r} occurs {times} times"
        )
    fed = block["FED"].to_numpy().astype(np.int64)
    T = block["T"].to_numpy().astype(np.int64)
    Y = block["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy()
    try:
        m = block_metrics(fed, T, Y, k_max)
    except ValueError as exc:
        raise ValueError(f"block {'/'.join(key)}: {exc}") from exc
    violations = check_identities(fed, T, Y, m)
    if violations:
        raise IdentityViolation(key, violations)

    bseed = block_seed(seed, *key)
    ci = percentile_bootstrap(fed, T, Y, k_max, resamples=resamples, seed=bseed, confidence=confidence)
    common = dict(zip(BLOCK_KEYS, key))
    common |= {"resamples": resamples, "seed": bseed, "confidence": confidence}
    rows: list[dict[str, object]] = []
    per_depth = {
        "pec": (m.pec, (m.n,) * k_max),
        "depth_support": (m.depth_support, (m.n,) * k_max),
        "eligible_pec": (m.eligible_pec, m.n_at_depth),
    }
    for metric, (estimates, ns) in per_depth.items():
        lo, hi = ci[metric]
        for i in range(k_max):
            row = _row(metric, i + 1, estimates[i], lo[i], hi[i], ns[i], "percentile_bootstrap")
            rows.append(common | row)
    for metric, est, n in (
        ("ter", m.ter, m.n),
        ("auc_pec", m.auc_pec, m.n),
        ("mean_fed", m.mean_fed, m.n),
        ("final_success", m.final_success, m.n_known),
    ):
        lo, hi = ci[metric]
        rows.append(common | _row(metric, None, est, lo, hi, n, "percentile_bootstrap"))
    wilson = wilson_interval(m.rr_successes, m.rr_n, confidence)
    lo, hi = wilson if wilson is not None else (None, None)
    rows.append(common | _row("rr", None, m.rr, lo, hi, m.rr_n, "wilson", successes=m.rr_successes))
    for metric in ACCOUNTING_METRICS:
        if metric in block.columns:
            known = block[metric].drop_nulls()
            mean = float(known.cast(pl.Float64).mean()) if known.len() else None
            rows.append(common | _row(metric, None, mean, None, None, known.len(), "none"))
    return rows


def compute_stats(
    episodes: pl.DataFrame,
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = None,
    workers: int = 1,
) -> pl.DataFrame:
    """Long table of every metric, interval and denominator per (dataset, model, method) block.

    ``pools`` maps a pool name to member datasets, e.g. ``TAU_POOL``: every (model, method)
    with rows in a member dataset also gets a block with dataset = pool name over the union
    of the members' rows, resampled per (dataset, task_id), so each task weighs the same.
    Accounting columns (``ACCOUNTING_METRICS``), when present, add point-estimate rows (interval
    "none", n = rollouts with accounting) after ``METRICS``.
    Blocks come in sorted key order, metrics in ``METRICS`` order, per-depth rows by k.
    ``workers`` threads compute blocks concurrently (NumPy releases the GIL while drawing);
    every block has its own seed, so the table does not depend on it.
    Raises IdentityViolation if any block breaks Propositions 1-3, ValueError on bad input.
    """
    check_episodes(episodes)
    pools = pools or {}
    check_pools(pools, set(episodes["dataset"].unique().to_list()))
    blocks = {
        key: (frame, ("task_id",))
        for key, frame in episodes.partition_by(list(BLOCK_KEYS), as_dict=True).items()
    }
    for name, members in pools.items():
        pooled = episodes.filter(pl.col("dataset").is_in(list(members)))
        for (model, method), frame in pooled.partition_by(["model", "method"], as_dict=True).items():
            blocks[(name, model, method)] = (frame, ("dataset", "task_id"))

    def rows_of(key: tuple[str, str, str]) -> list[dict[str, object]]:
        frame, unit = blocks[key]
        return _block_rows(
            key, frame, unit, resamples=resamples, seed=seed, k_max=k_max, confidence=confidence
        )

    with ThreadPoolExecutor(max_workers=workers) as executor:
        per_block = list(executor.map(rows_of, sorted(blocks)))
    return pl.DataFrame([row for rows in per_block for row in rows], schema=STATS_SCHEMA)


def write_stats(
    episodes_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = TAU_POOL,
    workers: int = 1,
) -> Path:
    """Compute statistics of an episodes Parquet file; write them to ``out`` atomically.

    Pools default to ``TAU_POOL`` (Table F.1); a pool only adds blocks where members have rows.
    """
    episodes = pl.read_parquet(episodes_path)
    stats = compute_stats(
        episodes, resamples=resamples, seed=seed, k_max=k_max, confidence=confidence, pools=pools,
        workers=workers,
    )
    return atomic_write(out, lambda tmp: stats.write_parquet(tmp, compression="zstd", statistics=False))
