"""Vectorised task-level percentile bootstrap (SPEC §5).

A resample draws N rows with replacement. Rows with identical values are
exchangeable, so only how often each distinct row is drawn matters: row indices
are drawn in chunks, mapped to their distinct tuple, counted per resample with
one ``bincount`` per chunk, and every resampled sum is ``counts @ tuple_values``
for all resamples of a chunk at once. One index draw per resample is shared by
all metrics of a block. The caller fixes the row order (``bootstrap_replicates``
sorts the tuples), so results do not depend on the order rows arrive in; they do
not depend on the chunk size either, because NumPy draws bounded integers below
2**32 one 32-bit word at a time from a stream that chunk boundaries do not cut.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt

from prefix_audit.metrics import FloatArray, validate_block

# Per-chunk working set (index draw, tuple codes, counts); small chunks stay in cache.
_CHUNK_BYTES = 2 * 2**20
_Y_UNKNOWN = 2

PER_DEPTH = ("pec", "depth_support", "eligible_pec")


def resampled_sums(values: FloatArray, resamples: int, rng: np.random.Generator) -> FloatArray:
    """Column sums of ``values`` (rows x columns) over ``resamples`` row resamples of size N.

    Resample b draws N row indices uniformly with replacement, in the row order given.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n = values.shape[0]
    if n == 0:
        raise ValueError("cannot resample zero rows")
    distinct, codes = np.unique(values, axis=0, return_inverse=True)
    codes = codes.reshape(-1).astype(np.int64)
    u = distinct.shape[0]
    chunk = max(1, _CHUNK_BYTES // (16 * n + 16 * u))
    offsets = np.arange(chunk, dtype=np.int64)[:, None] * u
    sums = np.empty((resamples, values.shape[1]))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        drawn = codes[rng.integers(0, n, size=(size, n))]
        drawn += offsets[:size]
        counts = np.bincount(drawn.reshape(-1), minlength=size * u).reshape(size, u)
        sums[start : start + size] = counts @ distinct
    return sums


def percentile_bounds(replicates: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    """``(1 - c)/2`` and ``(1 + c)/2`` quantiles of each column of ``replicates`` (resamples x columns).

    ``numpy.percentile(method="linear")`` (Hyndman-Fan definition 7). NaN resamples (a
    ratio with a zero denominator) are dropped column by column; a bound is NaN if every
    resample of its column is NaN.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    q = [50.0 * (1.0 - confidence), 50.0 * (1.0 + confidence)]
    # One partition pass over all columns; only columns holding NaN take the slow NaN-aware path.
    lo, hi = np.percentile(replicates, q, axis=0, method="linear")
    nan_columns = np.isnan(replicates).any(axis=0)
    if nan_columns.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns → NaN bound
            lo[nan_columns], hi[nan_columns] = np.nanpercentile(
                replicates[:, nan_columns], q, axis=0, method="linear"
            )
    return lo, hi


def ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """``num / den`` elementwise, NaN where ``den`` is 0."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _tuple_values(
    fed: npt.NDArray[np.int64], T: npt.NDArray[np.int64], Y: FloatArray, k_max: int
) -> FloatArray:
    """Per-rollout value matrix N x (2k_max + 5), rows in sorted (canonical) order."""
    y_code = np.where(np.isnan(Y), _Y_UNKNOWN, np.nan_to_num(Y)).astype(np.int64)
    distinct, mult = np.unique(np.stack([fed, T, y_code], axis=1), axis=0, return_counts=True)
    fed_u, t_u, y_u = np.repeat(distinct, mult, axis=0).T
    ks = np.arange(1, k_max + 1)
    return np.column_stack(
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
    if k_max < 1:
        raise ValueError(f"k_max must be >= 1, got {k_max}")
    n = fed_a.size
    sums = resampled_sums(_tuple_values(fed_a, t_a, y_a, k_max), resamples, np.random.default_rng(seed))
    k = k_max
    reached = sums[:, k : 2 * k]
    return {
        "pec": sums[:, :k] / n,
        "depth_support": reached / n,
        "eligible_pec": ratio(sums[:, :k], reached),
        "ter": sums[:, 2 * k] / n,
        "auc_pec": sums[:, 2 * k + 1] / n,
        "mean_fed": sums[:, 2 * k + 2] / n,
        "final_success": ratio(sums[:, 2 * k + 4], sums[:, 2 * k + 3]),
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
    """Percentile-bootstrap ``(lo, hi)`` for every metric of one block (see ``percentile_bounds``).

    For the ratio metrics, resamples with a zero denominator are dropped. Per-depth
    metrics give arrays of length k_max, the rest floats.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    reps = bootstrap_replicates(fed, T, Y, k_max, resamples=resamples, seed=seed)
    columns = np.column_stack(list(reps.values()))
    lo, hi = percentile_bounds(columns, confidence)
    out: dict[str, tuple[FloatArray | float, FloatArray | float]] = {}
    start = 0
    for name, r in reps.items():
        if name in PER_DEPTH:
            out[name] = (lo[start : start + k_max], hi[start : start + k_max])
        else:
            out[name] = (float(lo[start]), float(hi[start]))
        start += 1 if r.ndim == 1 else r.shape[1]
    return out
