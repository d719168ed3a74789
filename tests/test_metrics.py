"""Point metrics against per-rollout definitions, and Propositions 1-3 on random blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefix_audit.statistics.metrics import (
    auc_pec,
    block_metrics,
    check_identities,
    depth_support,
    eligible_pec,
    final_success,
    mean_fed,
    pec,
    recovery,
    ter,
)

NAN = math.nan


@st.composite
def blocks(draw: st.DrawFn, max_n: int = 25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random block with variable horizons, including all/none executable and N = 1."""
    n = draw(st.integers(1, max_n))
    horizons = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    mode = draw(st.sampled_from(["mixed", "all_executable", "none_executable"]))
    if mode == "all_executable":
        feds = [t + 1 for t in horizons]
    elif mode == "none_executable":
        feds = [draw(st.integers(1, t)) for t in horizons]
    else:
        feds = [draw(st.integers(1, t + 1)) for t in horizons]
    ys = draw(st.lists(st.sampled_from([0.0, 1.0, NAN]), min_size=n, max_size=n))
    return np.array(feds), np.array(horizons), np.array(ys)


k_maxes = st.integers(1, 14)


def validity(fed: int, t: int) -> list[int]:
    """The V_1..V_T sequence replay would have observed: valid until the first error."""
    return [1 if j < fed else 0 for j in range(1, t + 1)]


def ref_pec(feds, horizons, k):
    hits = [t >= k and all(validity(f, t)[:k]) for f, t in zip(feds, horizons)]
    return sum(hits) / len(feds)


def ref_eligible(feds, horizons, k):
    reach = [(f, t) for f, t in zip(feds, horizons) if t >= k]
    return sum(all(validity(f, t)[:k]) for f, t in reach) / len(reach) if reach else NAN


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


@settings(deadline=None)
@given(blocks(), k_maxes)
def test_identities_hold(block, k_max):
    fed, T, Y = block
    assert check_identities(fed, T, Y, block_metrics(fed, T, Y, k_max)) == []


@settings(deadline=None)
@given(blocks(), k_maxes)
def test_formulas_match_per_rollout_definitions(block, k_max):
    fed, T, Y = block
    feds, horizons, ys = fed.tolist(), T.tolist(), Y.tolist()
    n = len(feds)
    for k in range(1, k_max + 1):
        assert same(pec(fed, T, k_max)[k - 1], ref_pec(feds, horizons, k))
        assert same(depth_support(T, k_max)[k - 1], sum(t >= k for t in horizons) / n)
        assert same(eligible_pec(fed, T, k_max)[k - 1], ref_eligible(feds, horizons, k))
    assert same(ter(fed, T), sum(all(validity(f, t)) for f, t in zip(feds, horizons)) / n)
    assert same(auc_pec(fed, T), sum(sum(validity(f, t)) / t for f, t in zip(feds, horizons)) / n)
    assert same(mean_fed(fed, T), sum(feds) / n)

    known = [y for y in ys if not math.isnan(y)]
    fs, n_known = final_success(Y)
    assert n_known == len(known)
    assert same(fs, sum(known) / len(known) if known else NAN)

    eligible = [
        y for f, t, y in zip(feds, horizons, ys) if not all(validity(f, t)) and not math.isnan(y)
    ]
    assert recovery(fed, T, Y) == (int(sum(eligible)), len(eligible))
    m = block_metrics(fed, T, Y, k_max)
    assert m.n == n and m.k_max == k_max
    assert m.rr == (sum(eligible) / len(eligible) if eligible else None)


def test_rr_undefined_not_zero_when_nothing_eligible():
    fed, T, Y = np.array([3, 2, 5]), np.array([2, 1, 4]), np.array([0.0, 1.0, 0.0])
    m = block_metrics(fed, T, Y, 4)
    assert m.ter == 1.0 and m.rr_n == 0 and m.rr is None
    assert check_identities(fed, T, Y, m) == []


def test_rr_undefined_when_eligible_rollouts_have_unknown_y():
    fed, T, Y = np.array([1, 3]), np.array([2, 2]), np.array([NAN, 1.0])
    m = block_metrics(fed, T, Y, 2)
    assert (m.rr_successes, m.rr_n, m.rr) == (0, 0, None)
    assert m.n_prefix_failure == 1


def test_fixed_cohort_counts_short_rollouts_as_zero():
    # One rollout ends after 1 fully executable action; at depth 2 it contributes 0, not "missing".
    fed, T = np.array([2, 3]), np.array([1, 3])
    assert pec(fed, T, 3).tolist() == [1.0, 0.5, 0.0]
    assert depth_support(T, 3).tolist() == [1.0, 0.5, 0.5]
    assert eligible_pec(fed, T, 3).tolist() == [1.0, 1.0, 0.0]
    assert math.isnan(eligible_pec(np.array([2]), np.array([1]), 2)[1])  # nobody reaches depth 2


def test_single_rollout_block():
    m = block_metrics(np.array([2]), np.array([3]), np.array([1.0]), 4)
    assert m.pec == (1.0, 0.0, 0.0, 0.0)
    assert (m.ter, m.auc_pec, m.mean_fed) == (0.0, 1 / 3, 2.0)
    assert (m.rr_successes, m.rr_n, m.rr) == (1, 1, 1.0)


def test_final_success_nan_when_no_y_known():
    fs, n_known = final_success(np.array([NAN, NAN]))
    assert math.isnan(fs) and n_known == 0
    fed, T, Y = np.array([1, 2]), np.array([1, 1]), np.array([NAN, NAN])
    assert check_identities(fed, T, Y, block_metrics(fed, T, Y, 2)) == []


@pytest.mark.parametrize(
    ("fed", "T", "Y", "message"),
    [
        ([1, 2], [0, 1], [1.0, 1.0], "T must be >= 1"),
        ([0], [3], [1.0], r"FED must lie in \[1, T\+1\]"),
        ([5], [3], [1.0], r"FED must lie in \[1, T\+1\]"),
        ([1, 2], [1], [1.0, 1.0], "lengths differ"),
        ([1], [1], [1.0, 0.0], "lengths differ"),
        ([1], [1], [0.5], "Y must be 0, 1 or NaN"),
        ([], [], [], "at least one rollout"),
        ([1.5], [2], [1.0], "integers"),
    ],
)
def test_invalid_input_raises(fed, T, Y, message):
    with pytest.raises(ValueError, match=message):
        block_metrics(np.array(fed), np.array(T, dtype=np.int64), np.array(Y), 2)


def test_invalid_k_max_raises():
    with pytest.raises(ValueError, match="k_max"):
        pec(np.array([1]), np.array([1]), 0)
