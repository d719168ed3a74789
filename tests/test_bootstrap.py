"""The task-clustered percentile bootstrap: agreement with scipy and with naive resampling, clustered
widths, pass^k / TER^k, shared draws and pairs, unbalanced trials, infrastructure rows."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from prefix_audit.generation.grid import METHODS
from prefix_audit.statistics import bootstrap
from prefix_audit.statistics.aggregates import unbiased_all_k
from prefix_audit.statistics.intervals import clustered_wilson_interval, wilson_interval
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import compute_stats, task_set_seed

B = 10_000
SCHEMA = {"dataset": pl.Utf8, "model": pl.Utf8, "method": pl.Utf8, "task_id": pl.Utf8, "trial": pl.Int32,
          "T": pl.Int32, "FED": pl.Int32, "Y": pl.Int8}


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA)


def random_block(rng: np.random.Generator, n_tasks: int, trials: int, method: str = "react",
                 task_effect: bool = False, dataset: str = "toolsandbox") -> list[dict]:
    """Rollouts of one block; with ``task_effect`` a task's trials are mostly alike (easy or hard task)."""
    rows = []
    for i in range(n_tasks):
        easy = rng.random() < 0.5
        for trial in range(trials):
            t = int(rng.integers(1, 7))
            if task_effect:
                fed = t + 1 if rng.random() < (0.9 if easy else 0.1) else int(rng.integers(1, t + 1))
                y = int(rng.random() < (0.9 if easy else 0.1))
            else:
                fed = int(min(rng.integers(1, 9), t + 1))
                y = [0, 1, None][int(rng.choice(3, p=[0.45, 0.45, 0.1]))]
            rows.append({"dataset": dataset, "model": "m", "method": method, "task_id": f"t{i:03d}",
                         "trial": trial, "T": t, "FED": fed, "Y": y})
    return rows


def row(stats: pl.DataFrame, metric: str, k: int | None = None, method: str = "react",
        versus: str | None = None) -> dict:
    cond = (pl.col("metric") == metric) & (pl.col("method") == method)
    cond &= pl.col("k").is_null() if k is None else pl.col("k") == k
    cond &= pl.col("versus").is_null() if versus is None else pl.col("versus") == versus
    return stats.filter(cond).row(0, named=True)


def width(r: dict) -> float:
    return r["ci_high"] - r["ci_low"]


def test_one_trial_agrees_with_scipy_percentile_bootstrap():
    rows = random_block(np.random.default_rng(20240601), 120, 1)
    stats = compute_stats(frame(rows), StatsSettings(resamples=B, seed=1))
    fed = np.array([r["FED"] for r in rows])
    T = np.array([r["T"] for r in rows])
    # Monte Carlo + lattice tolerance (steps of 1/N ≈ 0.008); mean FED spans [1, 9], scaled by 8.
    for metric, values, tol in [("ter", (fed == T + 1).astype(float), 0.02),
                                ("mean_fed", fed.astype(float), 0.16)]:
        res = scipy_stats.bootstrap((values,), np.mean, n_resamples=B, method="percentile", vectorized=True,
                                    rng=np.random.default_rng(2))
        ours = row(stats, metric)
        assert ours["ci_low"] == pytest.approx(res.confidence_interval.low, abs=tol), metric
        assert ours["ci_high"] == pytest.approx(res.confidence_interval.high, abs=tol), metric


def naive_cluster_ter(rows: list[dict], resamples: int, seed: int, clustered: bool) -> np.ndarray:
    """TER replicates by explicit index resampling: of tasks (with all trials) or of rollouts."""
    tasks = sorted({r["task_id"] for r in rows})
    full = np.array([r["FED"] == r["T"] + 1 for r in rows], dtype=float)
    rng = np.random.default_rng(seed)
    if not clustered:
        return full[rng.integers(0, full.size, size=(resamples, full.size))].mean(axis=1)
    hits = np.array([sum(full[i] for i, r in enumerate(rows) if r["task_id"] == t) for t in tasks])
    sizes = np.array([sum(1 for r in rows if r["task_id"] == t) for t in tasks], dtype=float)
    drawn = rng.integers(0, len(tasks), size=(resamples, len(tasks)))
    return hits[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)


def test_strong_task_effects_get_the_clustered_width_not_the_rollout_width():
    rows = random_block(np.random.default_rng(3), 100, 4, task_effect=True)
    stats = compute_stats(frame(rows), StatsSettings(resamples=B, seed=4))
    ours = row(stats, "ter")
    clustered = np.percentile(naive_cluster_ter(rows, B, 5, clustered=True), [2.5, 97.5])
    by_rollout = np.percentile(naive_cluster_ter(rows, B, 6, clustered=False), [2.5, 97.5])
    # Our interval is the task-clustered one (Monte Carlo + lattice tolerance of the bounds)...
    np.testing.assert_allclose([ours["ci_low"], ours["ci_high"]], clustered, atol=0.015)
    # ... and a rollout-level bootstrap would be far too narrow on these data.
    assert width(ours) > 1.4 * (by_rollout[1] - by_rollout[0])
    assert (ours["n"], ours["n_rollouts"], ours["trials_min"], ours["trials_max"]) == (100, 400, 4, 4)


def test_clustered_wilson_keeps_its_level_where_plain_wilson_does_not():
    rng = np.random.default_rng(7)
    covered_plain = covered_clustered = 0
    runs = 400
    for _ in range(runs):
        p_task = np.where(rng.random(40) < 0.5, 0.9, 0.1)  # true rate 0.5, strong task effect
        s = rng.binomial(4, p_task)
        n = np.full(40, 4)
        lo, hi = wilson_interval(int(s.sum()), int(n.sum()))
        covered_plain += lo <= 0.5 <= hi
        (lo, hi), name = clustered_wilson_interval(s, n)
        assert name == "wilson_design_effect"
        covered_clustered += lo <= 0.5 <= hi
    assert covered_clustered / runs >= 0.92
    assert covered_plain / runs < 0.85


def test_clustered_wilson_is_wilson_with_one_rollout_per_task():
    s, n = np.array([1, 0, 1, 1, 0]), np.array([1, 1, 1, 1, 0])
    assert clustered_wilson_interval(s, n) == (wilson_interval(3, 4), "wilson")
    assert clustered_wilson_interval([], []) == (None, "wilson")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_k_estimator_is_the_share_of_k_subsets_that_all_succeed(case):
    n, c, k = case
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    exact = sum(all(s) for s in subsets) / len(subsets)
    got = float(unbiased_all_k(np.array([float(c)]), np.array([float(n)]), k)[0])
    assert got == pytest.approx(exact, abs=1e-12)
    assert got == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_pass_k_and_ter_k_by_task_up_to_the_fewest_trials():
    rows = []
    # Task a: 3 trials, 2 succeed, all fully executable; task b: 2 trials, 1 succeeds, one executable.
    for task, outcomes in (("a", [(1, 3), (1, 3), (0, 3)]), ("b", [(1, 3), (0, 1)])):
        for trial, (y, fed) in enumerate(outcomes):
            rows.append({"dataset": "toolsandbox", "model": "m", "method": "react", "task_id": task,
                         "trial": trial, "T": 2, "FED": fed, "Y": y})
    stats = compute_stats(frame(rows), StatsSettings(resamples=200, seed=0))
    assert row(stats, "pass_k", 1)["estimate"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert row(stats, "pass_k", 2)["estimate"] == pytest.approx((1 / 3 + 0) / 2)
    assert row(stats, "ter_k", 2)["estimate"] == pytest.approx((1 + 0) / 2)
    assert stats.filter(pl.col("metric") == "pass_k")["k"].to_list() == [1, 2]  # the fewest trials is 2
    ter = row(stats, "ter")
    assert ter["estimate"] == pytest.approx(4 / 5)  # point estimates are over all rollouts
    assert (ter["n"], ter["n_rollouts"], ter["trials_min"], ter["trials_max"]) == (2, 5, 2, 3)
    assert row(stats, "disagree_full")["estimate"] == pytest.approx(1 / 2)
    assert row(stats, "disagree_y")["estimate"] == pytest.approx(1.0)


def test_infrastructure_rows_leave_prefix_metrics_and_stay_in_final_success():
    rows = random_block(np.random.default_rng(2), 20, 1)
    infra = [{"dataset": "toolsandbox", "model": "m", "method": "react", "task_id": f"t{i:03d}", "trial": 1,
              "T": None, "FED": None, "Y": 0} for i in range(5)]
    with_infra = compute_stats(frame(rows + infra), StatsSettings(resamples=300, seed=1))
    without = compute_stats(frame(rows), StatsSettings(resamples=300, seed=1))
    for metric in ("ter", "auc_pec", "mean_fed"):
        assert row(with_infra, metric)["estimate"] == row(without, metric)["estimate"]
        assert row(with_infra, metric)["n_rollouts"] == 20
    known = [r["Y"] for r in rows if r["Y"] is not None]
    fs = row(with_infra, "final_success")
    assert fs["n_rollouts"] == len(known) + 5
    assert fs["estimate"] == pytest.approx(sum(known) / (len(known) + 5))
    with pytest.raises(ValueError, match="only one of T and FED null"):
        compute_stats(frame(rows + [infra[0] | {"T": 3}]), StatsSettings(resamples=10, seed=0))


def test_blocks_over_one_task_set_share_a_draw_and_pair_from_it():
    rng = np.random.default_rng(8)
    rows = random_block(rng, 60, 2, "react") + random_block(rng, 60, 2, "dual_loop")
    stats = compute_stats(frame(rows), StatsSettings(resamples=2_000, seed=3, methods=METHODS))
    tasks = [f"t{i:03d}" for i in range(60)]
    assert set(stats["seed"]) == {task_set_seed(3, "toolsandbox", tasks)}
    delta = row(stats, "delta_ter", method="dual_loop", versus="react")
    assert delta["estimate"] == pytest.approx(row(stats, "ter", method="dual_loop")["estimate"]
                                              - row(stats, "ter")["estimate"])
    assert (delta["n"], delta["n_method_only"], delta["n_versus_only"]) == (60, 0, 0)
    # A block paired with itself (same rollouts under another method name) differs by exactly zero.
    twin = [r | {"method": "prompt_planning"} for r in rows if r["method"] == "react"]
    same = compute_stats(frame(rows + twin), StatsSettings(resamples=2_000, seed=3, methods=METHODS))
    zero = row(same, "delta_ter", method="prompt_planning", versus="react")
    assert zero["estimate"] == zero["ci_low"] == zero["ci_high"] == 0.0
    # Block intervals do not depend on which other blocks share the draw.
    assert row(same, "ter")["ci_low"] == row(stats, "ter")["ci_low"]


def test_blocks_over_different_task_sets_pair_on_common_tasks():
    rng = np.random.default_rng(9)
    react = random_block(rng, 30, 1, "react")
    dual = [r for r in random_block(rng, 30, 1, "dual_loop") if r["task_id"] >= "t010"]
    extra = [r | {"task_id": f"x{i}"} for i, r in enumerate(dual[:3])]
    stats = compute_stats(frame(react + dual + extra), StatsSettings(resamples=500, seed=1, methods=METHODS))
    delta = row(stats, "delta_ter", method="dual_loop", versus="react")
    assert (delta["n"], delta["n_method_only"], delta["n_versus_only"]) == (20, 3, 10)
    common = {r["task_id"] for r in dual}

    def ter(rs: list[dict]) -> float:
        kept = [r for r in rs if r["task_id"] in common]
        return sum(r["FED"] == r["T"] + 1 for r in kept) / len(kept)

    assert delta["estimate"] == pytest.approx(ter(dual) - ter(react))
    assert delta["interval"] == "paired_percentile_bootstrap"


def test_row_order_and_chunking_do_not_change_results(monkeypatch):
    rows = random_block(np.random.default_rng(10), 40, 3)
    ref = compute_stats(frame(rows), StatsSettings(resamples=500, seed=11))
    shuffled = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    assert compute_stats(frame(shuffled), StatsSettings(resamples=500, seed=11)).equals(ref)
    monkeypatch.setattr(bootstrap, "_CHUNK_BYTES", 16 * 7 * 40)  # tiny chunks of a few resamples
    chunked = compute_stats(frame(rows), StatsSettings(resamples=500, seed=11))
    # The same draw; only the matrix product's rounding of fractional sums may differ in the last bit.
    assert chunked.drop("ci_low", "ci_high").equals(ref.drop("ci_low", "ci_high"))
    for bound in ("ci_low", "ci_high"):
        np.testing.assert_allclose(chunked[bound].to_numpy(), ref[bound].to_numpy(), rtol=1e-12)


def test_resampled_sums_are_counts_times_rows():
    values = np.random.default_rng(1).random((30, 5))
    sums = bootstrap.resampled_sums(values, 200, np.random.default_rng(4))
    drawn = np.random.default_rng(4).integers(0, 30, size=(200, 30))
    np.testing.assert_allclose(sums, values[drawn].sum(axis=1), rtol=1e-12)


def test_undefined_ratios_have_no_interval_and_degenerate_blocks_zero_width():
    rows = [{"dataset": "d", "model": "m", "method": "react", "task_id": f"t{i}", "trial": 0, "T": 1,
             "FED": 2, "Y": None} for i in range(3)]
    stats = compute_stats(frame(rows), StatsSettings(resamples=200, seed=0, k_max=2))
    assert row(stats, "final_success")["interval"] == "none"
    assert row(stats, "eligible_pec", 2)["estimate"] is None
    ter = row(stats, "ter")
    assert ter["estimate"] == ter["ci_low"] == ter["ci_high"] == 1.0


def test_rejects_bad_arguments():
    rows = frame(random_block(np.random.default_rng(0), 5, 1))
    with pytest.raises(ValueError, match="resamples"):
        compute_stats(rows, StatsSettings(resamples=0, seed=0))
    with pytest.raises(ValueError, match="confidence"):
        compute_stats(rows, StatsSettings(resamples=10, seed=0, confidence=95))
