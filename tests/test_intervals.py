"""Wilson interval against closed forms and statsmodels; Hoeffding planning aid."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from prefix_audit.statistics.intervals import hoeffding_bound, hoeffding_sample_size, wilson_interval

COUNTS = [
    (2, 9), (1, 10), (3, 12), (3, 11), (14, 26), (13, 29),
    (14, 34), (15, 31), (9, 79), (9, 73), (4, 65), (5, 80),
]


def wilson_closed_form(s: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson bounds written as roots of the score-test quadratic (a different algebraic form)."""
    z = norm.ppf((1 + confidence) / 2)
    root = z * math.sqrt(z * z + 4 * s * (n - s) / n)
    return (2 * s + z * z - root) / (2 * (n + z * z)), (2 * s + z * z + root) / (2 * (n + z * z))


@pytest.mark.parametrize(("s", "n"), COUNTS)
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_wilson_matches_closed_form(s, n, confidence):
    lo, hi = wilson_interval(s, n, confidence)
    exp_lo, exp_hi = wilson_closed_form(s, n, confidence)
    assert lo == pytest.approx(exp_lo, abs=1e-12)
    assert hi == pytest.approx(exp_hi, abs=1e-12)
    assert 0.0 <= lo <= s / n <= hi <= 1.0


@pytest.mark.parametrize(("s", "n"), COUNTS)
def test_wilson_matches_statsmodels(s, n):
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    lo, hi = wilson_interval(s, n)
    exp_lo, exp_hi = proportion.proportion_confint(s, n, alpha=0.05, method="wilson")
    assert lo == pytest.approx(exp_lo, abs=1e-12)
    assert hi == pytest.approx(exp_hi, abs=1e-12)


def test_wilson_edges():
    assert wilson_interval(0, 0) is None
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0
    for bad in [(3, 2), (-1, 2)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.0)


def test_hoeffding_bound_formula():
    assert hoeffding_bound(200, 0.05) == pytest.approx(2 * math.exp(-2 * 200 * 0.05**2), rel=1e-15)
    expected = 2 * math.exp(-2 * 200 * 0.25 / 100)
    assert hoeffding_bound(200, 0.5, horizon=10) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("epsilon", [0.01, 0.05, 0.1, 0.5])
@pytest.mark.parametrize("delta", [0.05, 0.01, 0.5])
@pytest.mark.parametrize("horizon", [None, 1, 10])
def test_hoeffding_sample_size_is_smallest(epsilon, delta, horizon):
    n = hoeffding_sample_size(epsilon, delta, horizon)
    assert hoeffding_bound(n, epsilon, horizon) <= delta
    assert hoeffding_bound(n - 1, epsilon, horizon) > delta


def test_hoeffding_sample_size_known_value():
    # ln(2/0.05) / (2 * 0.05^2) = 737.8
    assert hoeffding_sample_size(0.05) == 738


def test_hoeffding_rejects_bad_arguments():
    with pytest.raises(ValueError):
        hoeffding_sample_size(0.0)
    with pytest.raises(ValueError):
        hoeffding_sample_size(0.1, delta=1.0)
    with pytest.raises(ValueError):
        hoeffding_bound(10, 0.1, horizon=0)
