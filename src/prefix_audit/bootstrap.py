"""Vectorised task-level percentile bootstrap for one block (SPEC §5).

Rows with identical ``(FED, T, Y)`` are exchangeable, so resampling N rows with
replacement is the same as drawing multinomial counts over the distinct tuples
with probabilities multiplicity / N. Every resampled metric is then a linear
function of the counts (or a ratio of two), computed for all resamples at once
as ``counts @ per_tuple_values``. One count draw per resample is shared by all
metrics. Because the distinct tuples are sorted, the result does not depend on
row order.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt

from prefix_audit.metrics import FloatArray, validate_block

# Bound on the per-chunk counts matrix (int64 draw plus its float64 copy).
_CHUNK_BYTES = 64 * 2**20
_Y_UNKNOWN = 2

PER_DEPTH = ("pec", "depth_support", "eligible_pec")


def _tuple_values(
    fed: npt.NDArray[np.int64], T: npt.NDArray[np.int64], Y: FloatArray, k_max: int
) -> tuple[FloatArray, FloatArray]:
    """Return (per-tuple value matrix U x (2k_max + 5), multiplicity probabilities)."""
    y_code = np.where(np.isnan(Y), _Y_UNKNOWN, np.nan_to_num(Y)).astype(np.int64)
    distinct, mult = np.unique(np.stack([fed, T, y_code], axis=1), axis=0, return_counts=True)
    fed_u, t_u, y_u = distinct.T
    ks = np.arange(1, k_max + 1)
    values = np.column_stack(
        [
            fed_u[:, None] > ks[None, :],  # E_k
            t_u[:, None] >= ks[None, :],  # reaches depth k
            fed_u == t_u + 1,  # fully executable
            (fed_u - 1) / t_u,  # normalised area
            fed_u,
            y_u != _Y_UNKNOWN,  # Y known
            y_u == 1,  # Y known and 1
        ]
    ).astype(np.float64)
    return values, mult / fed.size


def bootstrap_replicates(
    fed: npt.ArrayLike,
    T: npt.ArrayLike,
    Y: npt.ArrayLike,
    k_max: int,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, FloatArray]:
    """Resampled metrics: per-depth arrays of shape (resamples, k_max), scalars (resamples,).

    Ratio metrics (eligible_pec, final_success) are NaN in a resample whose
    denominator is zero.
    """
    fed_a, t_a, y_a = validate_block(fed, T, Y)
    assert y_a is not None
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if k_max < 1:
        raise ValueError(f"k_max must be >= 1, got {k_max}")
    n = fed_a.size
    values, p = _tuple_values(fed_a, t_a, y_a, k_max)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_BYTES // (16 * values.shape[0]))
    sums = np.empty((resamples, values.shape[1]))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        counts = rng.multinomial(n, p, size=stop - start)
        sums[start:stop] = counts.astype(np.float64) @ values

    k = k_max
    reached = sums[:, k : 2 * k]
    eligible = np.full((resamples, k), np.nan)
    np.divide(sums[:, :k], reached, out=eligible, where=reached > 0)
    known, succ = sums[:, 2 * k + 3], sums[:, 2 * k + 4]
    success = np.full(resamples, np.nan)
    np.divide(succ, known, out=success, where=known > 0)
    return {
        "pec": sums[:, :k] / n,
        "depth_support": reached / n,
        "eligible_pec": eligible,
        "ter": sums[:, 2 * k] / n,
        "auc_pec": sums[:, 2 * k + 1] / n,
        "mean_fed": sums[:, 2 * k + 2] / n,
        "final_success": success,
    }


def percentile_bootstrap(
    fed: npt.ArrayLike,
    T: npt.ArrayLike,
    Y: npt.ArrayLike,
    k_max: int,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, tuple[FloatArray | float, FloatArray | float]]:
    """Percentile-bootstrap ``(lo, hi)`` for every metric of one block.

    Bounds are the ``(1 - c)/2`` and ``(1 + c)/2`` quantiles of the resampled
    statistic, computed with ``numpy.percentile(method="linear")`` (Hyndman-Fan
    definition 7). For the ratio metrics, resamples with a zero denominator are
    dropped (``numpy.nanpercentile``); a bound is NaN if every resample is
    undefined. Per-depth metrics give arrays of length k_max, the rest floats.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    reps = bootstrap_replicates(fed, T, Y, k_max, resamples=resamples, seed=seed)
    q = [50.0 * (1.0 - confidence), 50.0 * (1.0 + confidence)]
    out: dict[str, tuple[FloatArray | float, FloatArray | float]] = {}
    for name, r in reps.items():
        if name in ("eligible_pec", "final_success"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns → NaN bound
                lo, hi = np.nanpercentile(r, q, axis=0, method="linear")
        else:
            lo, hi = np.percentile(r, q, axis=0, method="linear")
        out[name] = (lo, hi) if name in PER_DEPTH else (float(lo), float(hi))
    return out
