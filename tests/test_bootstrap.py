"""Multinomial-over-distinct-tuples percentile bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from prefix_audit import bootstrap
from prefix_audit.bootstrap import bootstrap_replicates, percentile_bootstrap

B = 10_000


@pytest.fixture(scope="module")
def block() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20240601)
    T = rng.integers(1, 9, size=120)
    fed = np.minimum(rng.integers(1, 11, size=120), T + 1)  # mass at T + 1: some fully executable
    Y = rng.choice([0.0, 1.0, math.nan], size=120, p=[0.4, 0.5, 0.1])
    return fed, T, Y


def scipy_percentile(values: np.ndarray, seed: int) -> tuple[float, float]:
    res = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=B,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high


def test_agrees_with_scipy_percentile_bootstrap(block):
    fed, T, Y = block
    ours = percentile_bootstrap(fed, T, Y, k_max=4, resamples=B, seed=1)
    # Monte Carlo tolerance: with N = 120 a [0, 1] mean has sd <= 0.046; the standard error of
    # a 2.5% / 97.5% quantile from 10k resamples is ~ sqrt(.025 * .975 / 1e4) / density ~= 0.0012,
    # so two independent runs differ by ~0.0017 (sd). The resampled mean also lives on a lattice
    # of step 1/N ~= 0.0083, so a bound can move by a whole step. 0.02 covers two steps plus
    # > 5 sd. Mean FED spans [1, 9], so its tolerance is scaled by that width (0.02 * 8).
    cases = [
        ("ter", (fed == T + 1).astype(float), 0.02),
        ("pec@1", (fed > 1).astype(float), 0.02),
        ("mean_fed", fed.astype(float), 0.16),
    ]
    for name, values, tol in cases:
        lo, hi = scipy_percentile(values, seed=2)
        if name == "pec@1":
            our_lo, our_hi = ours["pec"][0][0], ours["pec"][1][0]
        else:
            our_lo, our_hi = ours[name]
        assert our_lo == pytest.approx(lo, abs=tol), name
        assert our_hi == pytest.approx(hi, abs=tol), name


def test_multinomial_matches_naive_row_resampling_in_distribution(block):
    fed, T, Y = block
    ours = bootstrap_replicates(fed, T, Y, k_max=4, resamples=B, seed=3)["ter"]
    rows = np.random.default_rng(4).integers(0, fed.size, size=(B, fed.size))
    naive = (fed == T + 1)[rows].mean(axis=1)
    # sd of resampled TER ~0.04; a mean of 10k draws has se ~0.0004, a quantile ~0.001-0.002.
    assert ours.mean() == pytest.approx(naive.mean(), abs=0.003)
    assert ours.std() == pytest.approx(naive.std(), rel=0.05)
    qs = [2.5, 10, 25, 50, 75, 90, 97.5]
    np.testing.assert_allclose(np.percentile(ours, qs), np.percentile(naive, qs), atol=0.0101)
    assert stats.ks_2samp(ours, naive).pvalue > 1e-3


def test_same_seed_identical_different_seed_differs(block):
    fed, T, Y = block
    a = percentile_bootstrap(fed, T, Y, k_max=4, resamples=2_000, seed=7)
    b = percentile_bootstrap(fed, T, Y, k_max=4, resamples=2_000, seed=7)
    c = percentile_bootstrap(fed, T, Y, k_max=4, resamples=2_000, seed=8)
    for name in a:
        for x, y in zip(a[name], b[name]):
            np.testing.assert_array_equal(x, y)
    differs = [name for name in a if not all(np.array_equal(x, y) for x, y in zip(a[name], c[name]))]
    assert differs, "a different seed should move at least one interval"


def test_row_order_and_chunking_do_not_change_results(block, monkeypatch):
    fed, T, Y = block
    ref = bootstrap_replicates(fed, T, Y, k_max=4, resamples=500, seed=11)
    perm = np.random.default_rng(0).permutation(fed.size)
    shuffled = bootstrap_replicates(fed[perm], T[perm], Y[perm], k_max=4, resamples=500, seed=11)
    monkeypatch.setattr(bootstrap, "_CHUNK_BYTES", 16 * 7 * fed.size)  # tiny chunks of <= 7 resamples
    chunked = bootstrap_replicates(fed, T, Y, k_max=4, resamples=500, seed=11)
    for name in ref:
        np.testing.assert_array_equal(ref[name], shuffled[name])
        np.testing.assert_array_equal(ref[name], chunked[name])


def test_replicates_are_consistent_with_point_definitions(block):
    fed, T, Y = block
    reps = bootstrap_replicates(fed, T, Y, k_max=4, resamples=300, seed=5)
    assert reps["pec"].shape == (300, 4) and reps["ter"].shape == (300,)
    # Every resample is itself a block, so the decomposition holds resample by resample.
    np.testing.assert_allclose(reps["pec"], reps["depth_support"] * reps["eligible_pec"], rtol=1e-12)
    assert np.all(np.diff(reps["pec"], axis=1) <= 0)
    assert np.all((reps["ter"] <= reps["auc_pec"] + 1e-12) & (reps["mean_fed"] >= 1))


def test_undefined_ratios_give_nan_bounds():
    fed, T, Y = np.array([1, 2, 2]), np.array([1, 1, 1]), np.array([math.nan] * 3)
    ci = percentile_bootstrap(fed, T, Y, k_max=2, resamples=200, seed=0)
    assert np.isnan(ci["eligible_pec"][0][1]) and np.isnan(ci["eligible_pec"][1][1])
    assert math.isnan(ci["final_success"][0]) and math.isnan(ci["final_success"][1])
    assert ci["pec"][0][1] == ci["pec"][1][1] == 0.0


def test_degenerate_block_has_zero_width_intervals():
    fed, T, Y = np.array([4, 4]), np.array([3, 3]), np.array([1.0, 1.0])
    ci = percentile_bootstrap(fed, T, Y, k_max=3, resamples=100, seed=0)
    assert ci["ter"] == (1.0, 1.0) and ci["mean_fed"] == (4.0, 4.0) and ci["final_success"] == (1.0, 1.0)


def test_rejects_bad_arguments(block):
    fed, T, Y = block
    with pytest.raises(ValueError, match="resamples"):
        percentile_bootstrap(fed, T, Y, k_max=4, resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        percentile_bootstrap(fed, T, Y, k_max=4, confidence=95)
