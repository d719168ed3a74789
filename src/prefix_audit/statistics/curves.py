"""A block's whole PEC curve, PEC@k for k = 1 … its largest T, with its bootstrap band.

The statistics table carries PEC@k for k up to its ``k_max`` (4, the paper's tables). A curve that
shows where the rollouts of a benchmark whose trajectories run to T ≈ 30 or 90 break needs every
depth: this module computes them the way the statistics do — PEC@k = mean 1{FED > k} over the prefix
cohort (docs/statistics.md), its interval a percentile bootstrap that resamples the block's tasks with
replacement (the ratio of the resampled sums, as every interval of the statistics) — so the curve at
k ≤ k_max agrees with Table G.1 up to the resampling noise of a separate draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .bootstrap import percentile_bounds, ratio, resampled_sums
from .metrics import pec, validate_block


@dataclass(frozen=True)
class Curve:
    """PEC@k for k = 1 … ``len(estimate)``; ``low``/``high`` the band (None: no band was asked for)."""

    estimate: tuple[float, ...]
    low: tuple[float, ...] | None = None
    high: tuple[float, ...] | None = None


def pec_curve(fed: Sequence[int], T: Sequence[int], tasks: Sequence[str], k_max: int, *,
              resamples: int = 0, seed: int = 0, confidence: float = 0.95) -> Curve:
    """PEC@1 … PEC@``k_max`` of one block's prefix cohort (its rollouts' FED, T and task ids), with a
    task-level percentile bootstrap band of ``resamples`` draws (none when ``resamples`` is 0)."""
    fed_a, t_a, _ = validate_block(np.asarray(fed, dtype=np.int64), np.asarray(T, dtype=np.int64))
    estimate = tuple(pec(fed_a, t_a, k_max).tolist())
    if resamples < 1:
        return Curve(estimate)
    units, codes = np.unique(np.asarray(tasks, dtype=str), return_inverse=True)
    # Per task: its rollouts (the denominator) and, per depth, those whose first k actions all execute.
    columns = np.zeros((units.size, k_max + 1))
    np.add.at(columns[:, 0], codes, 1.0)
    survived = (fed_a[:, None] > np.arange(1, k_max + 1)[None, :]).astype(np.float64)
    np.add.at(columns[:, 1:], codes, survived)
    sums = resampled_sums(columns, resamples, np.random.default_rng(seed))
    low, high = percentile_bounds(ratio(sums[:, 1:], sums[:, :1]), confidence)
    return Curve(estimate, tuple(low.tolist()), tuple(high.tolist()))
