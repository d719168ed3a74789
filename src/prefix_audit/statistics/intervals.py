"""Closed-form intervals: Wilson score intervals (plain and for clustered trials) and Hoeffding
planning bounds (docs/definitions.md#statistics, docs/definitions.md#planning-bounds)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")


def wilson_interval(s: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Two-sided Wilson score interval for s successes out of n; None when n = 0."""
    if n < 0 or not 0 <= s <= n:
        raise ValueError(f"need 0 <= s <= n, got s = {s}, n = {n}")
    _check_confidence(confidence)
    if n == 0:
        return None
    return _wilson(s / n, n, confidence)


def clustered_wilson_interval(
    s: npt.ArrayLike, n: npt.ArrayLike, confidence: float = 0.95
) -> tuple[tuple[float, float] | None, str]:
    """Interval for ``Σs / Σn`` where task i contributes ``s[i]`` successes out of ``n[i]``
    correlated rollouts (repeated trials); returns ``(bounds or None, interval name)``.

    With at most one rollout per task this is exactly :func:`wilson_interval` ("wilson"). Otherwise
    it is the Wilson interval at Kish's effective sample size ``Σn / deff`` ("wilson_design_effect"):
    the design effect ``deff`` is the ratio of the task-clustered (linearised ratio-estimator)
    variance to the binomial one, and the effective size is kept between the number of tasks and
    the number of rollouts (an intra-task correlation in [0, 1]); a single task counts as one
    rollout. A proportion of 0 or 1 over several tasks has no estimable design effect and keeps
    the Wilson interval at all rollouts.
    """
    _check_confidence(confidence)
    s_a, n_a = np.asarray(s, dtype=np.float64), np.asarray(n, dtype=np.float64)
    inside = n_a > 0
    s_a, n_a = s_a[inside], n_a[inside]
    total, hits, tasks = float(n_a.sum()), float(s_a.sum()), int(inside.sum())
    if tasks == 0:
        return None, "wilson"
    if n_a.max() <= 1:
        return wilson_interval(round(hits), round(total), confidence), "wilson"
    p = hits / total
    binomial = p * (1.0 - p) / total
    if tasks == 1:
        effective = 1.0
    elif binomial == 0.0:
        effective = total
    else:
        clustered = tasks / (tasks - 1) * float(((s_a - p * n_a) ** 2).sum()) / total**2
        effective = total * binomial / clustered if clustered > 0 else total
    return _wilson(p, min(total, max(float(tasks), effective)), confidence), "wilson_design_effect"


def _wilson(p: float, n: float, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    # The exact bounds at s = 0 / s = n are 0 / 1; clip float round-off past them.
    return max(0.0, center - half), min(1.0, center + half)


MAX_HORIZON = 10**6  # the largest horizon bound K planning accepts
MAX_SAMPLE_SIZE = 10**15  # the largest N it computes (integers up to here are exact as floats)


def _check_horizon(horizon: int | None) -> float:
    if horizon is None:
        return 1.0
    if not 1 <= horizon <= MAX_HORIZON:
        raise ValueError(f"horizon bound K must be from 1 to {MAX_HORIZON:.0e}, got {horizon}")
    return float(horizon)


def _check_epsilon(epsilon: float) -> None:
    if not 0 < epsilon < math.inf:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")


def hoeffding_bound(n: int, epsilon: float, horizon: int | None = None) -> float:
    """Hoeffding bound on P(|estimate - truth| >= epsilon) from n i.i.d. rollouts (Prop. 4).

    ``2 exp(-2 n eps^2)`` for the [0, 1] metrics (PEC@k, TER, AUC-PEC, final
    success); with ``horizon = K`` (T <= K almost surely) the mean-FED bound
    ``2 exp(-2 n eps^2 / K^2)``. Returned as is, so values above 1 mean "vacuous".
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    _check_epsilon(epsilon)
    k = _check_horizon(horizon)
    return 2.0 * math.exp(-2.0 * n * epsilon * epsilon / (k * k))


def hoeffding_sample_size(epsilon: float, delta: float = 0.05, horizon: int | None = None) -> int:
    """Smallest n with ``hoeffding_bound(n, epsilon, horizon) <= delta``."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    _check_epsilon(epsilon)
    k = _check_horizon(horizon)
    # A vanishing epsilon would need more rollouts than can be counted: say so instead.
    closed = k * k * math.log(2.0 / delta) / (2.0 * epsilon * epsilon) if epsilon * epsilon > 0 else math.inf
    if closed > MAX_SAMPLE_SIZE:
        raise ValueError(f"epsilon = {epsilon:g} needs more than {MAX_SAMPLE_SIZE:.0e} rollouts; choose a larger one")
    n = max(math.ceil(closed), 1)
    # The closed form can be off by one through rounding; settle it against the bound itself.
    while hoeffding_bound(n - 1, epsilon, horizon) <= delta:
        n -= 1
    while hoeffding_bound(n, epsilon, horizon) > delta:
        n += 1
    return n
