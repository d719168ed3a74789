"""Vectorised percentile bootstrap over rows (docs/definitions.md#statistics): the rows are tasks, each with the
per-task sums of every metric of every block that shares the draw.

A resample draws N rows with replacement. Rows with identical values are
exchangeable, so only how often each distinct row is drawn matters: row indices
are drawn in chunks, mapped to their distinct row, counted per resample with
one ``bincount`` per chunk, and every resampled sum is ``counts @ distinct_rows``
for all resamples of a chunk at once — one matrix product gives every column.
The caller fixes the row order (tasks sorted by id), so results do not depend
on the order rows arrive in; they do not depend on the chunk size either,
because NumPy draws bounded integers below 2**32 one 32-bit word at a time from
a stream that chunk boundaries do not cut.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from threadpoolctl import threadpool_limits

from prefix_audit.statistics.metrics import FloatArray


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """The matrix products on one BLAS thread each: the statistics' own threads (``workers``) are the
    parallelism, and OpenBLAS would add a thread per core to each product, whose spinning waits cost
    most when another process shares the cores (bench/RESULTS.md, statistics under load)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# Per-chunk working set (index draw, row codes, counts); small chunks stay in cache.
_CHUNK_BYTES = 2 * 2**20


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
    # Given as the transposed view, NumPy partitions each column in one contiguous run of its working
    # copy (same values, half the time on the paper grid's widths).
    lo, hi = np.percentile(replicates.T, q, axis=1, method="linear")
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
