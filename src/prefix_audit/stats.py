"""Per-block statistics: point estimates, identity checks and intervals as one long table (SPEC §5)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import polars as pl

from prefix_audit.bootstrap import percentile_bootstrap
from prefix_audit.io import atomic_write
from prefix_audit.intervals import wilson_interval
from prefix_audit.metrics import block_metrics, check_identities

BLOCK_KEYS = ("dataset", "model", "method")
METRICS = ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed", "final_success", "rr")
REQUIRED_COLUMNS = (*BLOCK_KEYS, "task_id", "T", "FED", "Y")

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


def _check_episodes(episodes: pl.DataFrame) -> None:
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
    *,
    resamples: int,
    seed: int,
    k_max: int,
    confidence: float,
) -> list[dict[str, object]]:
    dup = block.filter(pl.col("task_id").is_duplicated())["task_id"]
    if dup.len():
        # The bootstrap resamples rows as tasks; repeated tasks would need a clustered resample.
        raise ValueError(
            f"block {'/'.join(key)}: task-level bootstrap needs one rollout per task, "
            f"but task_id {dup[0]!r} occurs {int((block['task_id'] == dup[0]).sum())} times"
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
    return rows


def compute_stats(
    episodes: pl.DataFrame,
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Long table of every metric, interval and denominator per (dataset, model, method) block.

    Blocks come in sorted key order, metrics in ``METRICS`` order, per-depth rows by k.
    Raises IdentityViolation if any block breaks Propositions 1-3, ValueError on bad input.
    """
    _check_episodes(episodes)
    rows: list[dict[str, object]] = []
    blocks = episodes.partition_by(list(BLOCK_KEYS), as_dict=True)
    for key in sorted(blocks):
        rows += _block_rows(
            key, blocks[key], resamples=resamples, seed=seed, k_max=k_max, confidence=confidence
        )
    return pl.DataFrame(rows, schema=STATS_SCHEMA)


def write_stats(
    episodes_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
) -> Path:
    """Compute statistics of an episodes Parquet file; write ``out_dir/stats.parquet`` atomically."""
    episodes = pl.read_parquet(episodes_path)
    stats = compute_stats(episodes, resamples=resamples, seed=seed, k_max=k_max, confidence=confidence)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return atomic_write(
        out / "stats.parquet",
        lambda tmp: stats.write_parquet(tmp, compression="zstd", statistics=False),
    )
