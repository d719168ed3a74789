"""Closed-form intervals: Wilson score interval and Hoeffding planning bounds (SPEC §2, §5)."""

from __future__ import annotations

import math
from statistics import NormalDist


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
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    z2 = z * z
    p = s / n
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    # The exact bounds at s = 0 / s = n are 0 / 1; clip float round-off past them.
    return max(0.0, center - half), min(1.0, center + half)


def _check_horizon(horizon: int | None) -> float:
    if horizon is None:
        return 1.0
    if horizon < 1:
        raise ValueError(f"horizon bound K must be >= 1, got {horizon}")
    return float(horizon)


def hoeffding_bound(n: int, epsilon: float, horizon: int | None = None) -> float:
    """Hoeffding bound on P(|estimate - truth| >= epsilon) from n i.i.d. rollouts (Prop. 4).

    ``2 exp(-2 n eps^2)`` for the [0, 1] metrics (PEC@k, TER, AUC-PEC, final
    success); with ``horizon = K`` (T <= K almost surely) the mean-FED bound
    ``2 exp(-2 n eps^2 / K^2)``. Returned as is, so values above 1 mean "vacuous".
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    k = _check_horizon(horizon)
    return 2.0 * math.exp(-2.0 * n * epsilon * epsilon / (k * k))


def hoeffding_sample_size(epsilon: float, delta: float = 0.05, horizon: int | None = None) -> int:
    """Smallest n with ``hoeffding_bound(n, epsilon, horizon) <= delta``."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    k = _check_horizon(horizon)
    n = math.ceil(k * k * math.log(2.0 / delta) / (2.0 * epsilon * epsilon))
    # The closed form can be off by one through rounding; settle it against the bound itself.
    while hoeffding_bound(n - 1, epsilon, horizon) <= delta:
        n -= 1
    while hoeffding_bound(n, epsilon, horizon) > delta:
        n += 1
    return n
