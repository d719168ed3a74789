"""Paired task-level bootstrap of condition-minus-baseline differences (Table F.3)."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from prefix_audit.replay import scoring
from prefix_audit.statistics.paired import (
    INTERVAL_METRICS,
    PAIRED_METRICS,
    PAIRED_SCHEMA,
    PairSpec,
    pair_seed,
    paired_differences,
    write_paired,
)
from prefix_audit.statistics.settings import StatsSettings

TAU_POOL = {"tau": ("tau_airline", "tau_retail")}

# The product's own episode schema, restricted to the columns these tests build.
EPISODE_SCHEMA = {name: dtype for name, dtype in pl.Schema(scoring.EPISODE_SCHEMA).items()
                  if name in ("dataset", "model", "method", "task_id", "rollout_id", "T", "FED", "Y", "category", "agent_tokens", "agent_latency_s")}
COND, BASE = ("m", "dual_loop"), ("m", "plan_conditioned")
PAIR = PairSpec("dl-vs-pc", "d", COND, BASE)


def arm(method: str, tasks: list[dict], dataset: str = "d", model: str = "m") -> list[dict]:
    return [
        {"dataset": dataset, "model": model, "method": method, "rollout_id": f"{dataset}-{method}-{t['task_id']}",
         "category": None if t["FED"] == t["T"] + 1 else "schema", **t}
        for t in tasks
    ]


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EPISODE_SCHEMA)


def random_tasks(rng: np.random.Generator, n: int, *, y_unknown: float = 0.1, prefix: str = "t") -> list[dict]:
    out = []
    for i in range(n):
        t = int(rng.integers(1, 9))
        out.append({
            "task_id": f"{prefix}{i:04d}", "T": t, "FED": int(min(rng.integers(1, 11), t + 1)),
            "Y": None if rng.random() < y_unknown else int(rng.random() < 0.5),
            "agent_tokens": int(rng.integers(500, 5000)), "agent_latency_s": float(rng.uniform(1, 20)),
        })
    return out


@st.composite
def task_lists(draw: st.DrawFn, max_n: int = 12) -> list[dict]:
    n = draw(st.integers(1, max_n))
    out = []
    for i in range(n):
        t = draw(st.integers(1, 6))
        out.append({
            "task_id": f"t{i:03d}", "T": t, "FED": draw(st.integers(1, t + 1)),
            "Y": draw(st.sampled_from([0, 1, None])),
            "agent_tokens": draw(st.one_of(st.none(), st.integers(0, 10_000))),
            "agent_latency_s": draw(st.one_of(st.none(), st.floats(0, 100))),
        })
    return out


def by_metric(df: pl.DataFrame, label: str | None = None) -> dict[str, dict]:
    if label is not None:
        df = df.filter(pl.col("label") == label)
    return {r["metric"]: r for r in df.iter_rows(named=True)}


@settings(max_examples=30, deadline=None)
@given(task_lists())
def test_identical_arms_give_exact_zeros(tasks):
    episodes = frame(arm("dual_loop", tasks) + arm("plan_conditioned", tasks))
    out = by_metric(paired_differences(episodes, [PAIR], StatsSettings(resamples=300, seed=0)))
    for m in INTERVAL_METRICS:
        r = out[m]
        if r["estimate"] is None:  # Δ final success with no pair of known outcomes
            assert m == "delta_final_success" and r["n"] == 0 and r["interval"] == "none"
            continue
        assert r["estimate"] == r["ci_low"] == r["ci_high"] == 0.0, m
        assert r["interval"] == "paired_percentile_bootstrap"
    for c in ("agent_tokens", "agent_latency_s"):
        delta, rel = out[f"delta_{c}"], out[f"rel_{c}"]
        if delta["n"]:
            assert delta["estimate"] == 0.0 and delta["interval"] == "none"
            assert rel["estimate"] in (0.0, None)  # None: baseline mean 0
        else:
            assert delta["estimate"] is None and rel["estimate"] is None


@settings(max_examples=30, deadline=None)
@given(task_lists(), task_lists())
def test_swapping_arms_negates_estimates_and_mirrors_intervals(cond_tasks, base_tasks):
    episodes = frame(arm("dual_loop", cond_tasks) + arm("plan_conditioned", base_tasks[1:]))
    swapped = PairSpec(PAIR.label, PAIR.dataset, BASE, COND)
    a = paired_differences(episodes, [PAIR], StatsSettings(resamples=300, seed=4))
    b = paired_differences(episodes, [swapped], StatsSettings(resamples=300, seed=4))
    assert a["seed"].to_list() == b["seed"].to_list()
    first_a, first_b = a.row(0, named=True), b.row(0, named=True)
    assert first_a["n_pairs"] == first_b["n_pairs"]
    assert (first_a["n_condition_only"], first_a["n_baseline_only"]) == (
        first_b["n_baseline_only"], first_b["n_condition_only"])
    ra, rb = by_metric(a), by_metric(b)
    for m in (*INTERVAL_METRICS, "delta_agent_tokens", "delta_agent_latency_s"):
        if ra[m]["estimate"] is None:
            assert rb[m]["estimate"] is None
            continue
        assert rb[m]["estimate"] == -ra[m]["estimate"], m
        assert rb[m]["n"] == ra[m]["n"]
    for m in INTERVAL_METRICS:
        if ra[m]["ci_low"] is not None:
            assert rb[m]["ci_low"] == pytest.approx(-ra[m]["ci_high"], abs=1e-12), m
            assert rb[m]["ci_high"] == pytest.approx(-ra[m]["ci_low"], abs=1e-12), m


def test_missing_pairs_are_counted_and_excluded():
    rng = np.random.default_rng(3)
    tasks = random_tasks(rng, 30)
    cond = tasks[:25] + random_tasks(rng, 3, prefix="c")  # 3 condition-only units
    base = [dict(t, FED=1) for t in tasks[5:]]  # 5 condition-only, 0 baseline-only
    episodes = frame(arm("dual_loop", cond) + arm("plan_conditioned", base))
    out = paired_differences(episodes, [PAIR], StatsSettings(resamples=500, seed=1))
    first = out.row(0, named=True)
    assert (first["n_pairs"], first["n_condition_only"], first["n_baseline_only"]) == (20, 8, 5)
    r = by_metric(out)
    shared = tasks[5:25]
    full = [float(t["FED"] == t["T"] + 1) for t in shared]
    area = [(t["FED"] - 1) / t["T"] for t in shared]
    assert r["delta_ter"]["estimate"] == pytest.approx(np.mean(full))  # baseline FED = 1: TER 0, area 0
    assert r["delta_auc_pec"]["estimate"] == pytest.approx(np.mean(area))
    assert r["delta_ter"]["n"] == r["delta_auc_pec"]["n"] == 20
    known = [t for t in shared if t["Y"] is not None]
    assert r["delta_final_success"]["n"] == len(known)
    assert r["delta_agent_tokens"]["n"] == 20


def test_no_pairs_gives_null_estimates_with_counts():
    rng = np.random.default_rng(0)
    episodes = frame(arm("dual_loop", random_tasks(rng, 4, prefix="a"))
                     + arm("plan_conditioned", random_tasks(rng, 6, prefix="b")))
    out = paired_differences(episodes, [PAIR], StatsSettings(resamples=100, seed=0))
    assert out["metric"].to_list() == list(PAIRED_METRICS)
    assert out["estimate"].null_count() == out.height and out["ci_low"].null_count() == out.height
    assert set(out["interval"]) == {"none"} and set(out["n"]) == {0}
    first = out.row(0, named=True)
    assert (first["n_pairs"], first["n_condition_only"], first["n_baseline_only"]) == (0, 4, 6)


def test_costs_need_accounting_on_both_sides():
    rng = np.random.default_rng(5)
    tasks = random_tasks(rng, 10)
    cond = [dict(t, agent_tokens=2 * t["agent_tokens"], agent_latency_s=None) for t in tasks]
    base = [dict(t, agent_tokens=None if i < 4 else t["agent_tokens"]) for i, t in enumerate(tasks)]
    r = by_metric(paired_differences(frame(arm("dual_loop", cond) + arm("plan_conditioned", base)), [PAIR],
                                     StatsSettings(resamples=100, seed=0)))
    both = [t["agent_tokens"] for t in tasks[4:]]
    assert r["delta_agent_tokens"]["n"] == r["rel_agent_tokens"]["n"] == 6
    assert r["delta_agent_tokens"]["estimate"] == pytest.approx(np.mean(both))
    assert r["rel_agent_tokens"]["estimate"] == pytest.approx(1.0)
    assert r["delta_agent_latency_s"]["estimate"] is None and r["delta_agent_latency_s"]["n"] == 0
    # Episodes without accounting columns at all: cost rows are null, the rest unaffected.
    bare = frame(arm("dual_loop", tasks) + arm("plan_conditioned", tasks)).drop("agent_tokens", "agent_latency_s")
    r = by_metric(paired_differences(bare, [PAIR], StatsSettings(resamples=100, seed=0)))
    assert r["delta_agent_tokens"]["estimate"] is None and r["delta_ter"]["estimate"] == 0.0


def naive_paired(cond: list[dict], base: list[dict], seed: int, resamples: int):
    """Reference: draw all (resamples, n) pair indices at once, units in task order."""
    full = [[float(t["FED"] == t["T"] + 1) for t in arm] for arm in (cond, base)]
    d_full = np.array(full[0]) - np.array(full[1])
    d_area = np.array([(c["FED"] - 1) / c["T"] - (b["FED"] - 1) / b["T"] for c, b in zip(cond, base)])
    known = np.array([c["Y"] is not None and b["Y"] is not None for c, b in zip(cond, base)], dtype=float)
    d_y = np.array([(c["Y"] - b["Y"]) if k else 0.0 for c, b, k in zip(cond, base, known)])
    idx = np.random.default_rng(seed).integers(0, d_full.size, size=(resamples, d_full.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        success = d_y[idx].sum(axis=1) / known[idx].sum(axis=1)
    return d_full[idx].mean(axis=1), d_area[idx].mean(axis=1), success, (d_full, d_area, known, d_y)


def test_same_draw_as_naive_index_resampling():
    rng = np.random.default_rng(11)
    cond, base = random_tasks(rng, 40, y_unknown=0.3), random_tasks(rng, 40, y_unknown=0.3)
    episodes = frame(arm("dual_loop", cond) + arm("plan_conditioned", base))
    resamples = 5_000
    r = by_metric(paired_differences(episodes, [PAIR], StatsSettings(resamples=resamples, seed=9)))
    ter, area, success, _ = naive_paired(cond, base, pair_seed(9, PAIR), resamples)
    # Same generator, same unit order: the chunked multinomial-count draw is the naive draw.
    for name, reps in (("delta_ter", ter), ("delta_auc_pec", area), ("delta_final_success", success)):
        lo, hi = np.nanpercentile(reps, [2.5, 97.5])
        assert r[name]["ci_low"] == pytest.approx(lo, abs=1e-12), name
        assert r[name]["ci_high"] == pytest.approx(hi, abs=1e-12), name


def test_agrees_with_scipy_paired_percentile_bootstrap():
    rng = np.random.default_rng(21)
    n, resamples = 80, 20_000
    cond, base = random_tasks(rng, n, y_unknown=0.0), random_tasks(rng, n, y_unknown=0.0)
    episodes = frame(arm("dual_loop", cond) + arm("plan_conditioned", base))
    r = by_metric(paired_differences(episodes, [PAIR], StatsSettings(resamples=resamples, seed=2)))
    *_, (d_full, d_area, _, d_y) = naive_paired(cond, base, 0, 1)
    res = scipy_stats.bootstrap(
        (d_full, d_area, d_y), lambda a, b, c, axis=-1: np.stack([a.mean(axis), b.mean(axis), c.mean(axis)]),
        paired=True, vectorized=True, n_resamples=resamples, method="percentile", rng=np.random.default_rng(3),
    )
    # Monte Carlo tolerance: a resampled mean of per-pair differences in [-1, 1] over n = 80 has
    # sd <= 0.112; the 2.5% / 97.5% quantile from 20k resamples has se ~ sqrt(.025 * .975 / 2e4) /
    # density ~= 0.0021, so two independent runs differ by ~0.003 (sd). ΔTER and Δsuccess live on a
    # lattice of step 1/80 = 0.0125 and a bound can move by a step; 0.04 covers two steps plus
    # > 5 sd.
    for i, name in enumerate(("delta_ter", "delta_auc_pec", "delta_final_success")):
        assert r[name]["ci_low"] == pytest.approx(res.confidence_interval.low[i], abs=0.04), name
        assert r[name]["ci_high"] == pytest.approx(res.confidence_interval.high[i], abs=0.04), name


def test_seed_determinism_and_pair_seed():
    rng = np.random.default_rng(2)
    episodes = frame(arm("dual_loop", random_tasks(rng, 30)) + arm("plan_conditioned", random_tasks(rng, 30)))
    a = paired_differences(episodes, [PAIR], StatsSettings(resamples=1_000, seed=1))
    assert a.equals(paired_differences(episodes.reverse(), [PAIR], StatsSettings(resamples=1_000, seed=1)))
    other = PairSpec("other", "d", COND, COND)
    both = paired_differences(episodes, [other, PAIR], StatsSettings(resamples=1_000, seed=1, workers=2))
    assert both.filter(pl.col("label") == PAIR.label).equals(a)
    c = paired_differences(episodes, [PAIR], StatsSettings(resamples=1_000, seed=2))
    assert a["estimate"].equals(c["estimate"]) and not a["ci_low"].equals(c["ci_low"])
    # A literal pins the derivation (hashlib, not Python's salted hash()).
    assert pair_seed(0, PAIR) == 7069455246435167956
    assert pair_seed(0, PAIR) == pair_seed(0, PairSpec("other label", "d", BASE, COND))
    assert pair_seed(0, PAIR) != pair_seed(0, PairSpec(PAIR.label, "e", COND, BASE))


def test_pool_pairs_units_by_dataset_and_task():
    rng = np.random.default_rng(8)
    air, ret = random_tasks(rng, 5), random_tasks(rng, 7)  # task ids overlap across datasets
    rows = []
    for dataset, tasks in (("tau_airline", air), ("tau_retail", ret)):
        rows += arm("dual_loop", tasks, dataset) + arm("plan_conditioned", tasks[:-1], dataset)
    pair = PairSpec("tau", "tau", COND, BASE)
    out = paired_differences(frame(rows), [pair], StatsSettings(resamples=200, seed=0, pools=TAU_POOL))
    first = out.row(0, named=True)
    assert (first["dataset"], first["n_pairs"], first["n_condition_only"]) == ("tau", 10, 2)
    with pytest.raises(ValueError, match="also a dataset"):
        paired_differences(frame(rows), [pair],
                           StatsSettings(resamples=100, seed=0, pools={"tau_retail": ["tau_airline"]}))


def test_trials_pair_trial_by_trial_else_by_task_means():
    rng = np.random.default_rng(2)
    tasks = random_tasks(rng, 30, y_unknown=0.0)
    later = [t | {"FED": 1} for t in tasks]  # a second trial of every task, failing at once
    def trials(method: str, *runs: list[dict]) -> list[dict]:
        return [r | {"trial": i, "rollout_id": f"{r['rollout_id']}-{i}"} for i, run in enumerate(runs)
                for r in arm(method, run)]

    matched = pl.DataFrame(trials("dual_loop", tasks, later) + trials("plan_conditioned", later, later))
    out = paired_differences(matched, [PAIR], StatsSettings(resamples=500, seed=0))
    ter = out.filter(pl.col("metric") == "delta_ter").row(0, named=True)
    full = sum(t["FED"] == t["T"] + 1 for t in tasks)
    assert ter["pairing"] == "trial" and ter["n_pairs"] == ter["n"] == 30
    assert ter["estimate"] == pytest.approx(full / 60)  # over the 60 trial pairs
    # Unequal trials: each side's task means are compared, every task weighing the same.
    unequal = pl.DataFrame(trials("dual_loop", tasks, later) + trials("plan_conditioned", later))
    out = paired_differences(unequal, [PAIR], StatsSettings(resamples=500, seed=0))
    ter = out.filter(pl.col("metric") == "delta_ter").row(0, named=True)
    assert ter["pairing"] == "task_mean" and ter["estimate"] == pytest.approx(full / 2 / 30)
    assert ter["ci_low"] <= ter["estimate"] <= ter["ci_high"]


def test_bad_input_is_rejected_with_the_pair_named():
    rng = np.random.default_rng(1)
    tasks = random_tasks(rng, 5)
    good = frame(arm("dual_loop", tasks) + arm("plan_conditioned", tasks))
    with pytest.raises(ValueError, match="unique"):
        paired_differences(good, [PAIR, PAIR], StatsSettings(resamples=10, seed=0))
    with pytest.raises(ValueError, match="FED must lie in"):
        paired_differences(good.with_columns(pl.lit(99, dtype=pl.Int32).alias("FED")), [PAIR],
                           StatsSettings(resamples=100, seed=0))
    with pytest.raises(ValueError, match="required column"):
        paired_differences(good.drop("Y"), [PAIR], StatsSettings(resamples=100, seed=0))


def test_default_resamples_fit_in_memory_and_write_is_byte_identical(tmp_path):
    rng = np.random.default_rng(4)
    episodes = frame(arm("dual_loop", random_tasks(rng, 164)) + arm("plan_conditioned", random_tasks(rng, 164)))
    tracemalloc.start()
    out = paired_differences(episodes, [PAIR], StatsSettings(resamples=100_000, seed=0))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 300 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert out.schema == PAIRED_SCHEMA and set(out["resamples"]) == {100_000}
    path = tmp_path / "episodes.parquet"
    episodes.write_parquet(path)
    a = write_paired(path, [PAIR], tmp_path / "a" / "paired.parquet", StatsSettings(resamples=2_000, seed=3))
    b = write_paired(path, [PAIR], tmp_path / "b" / "paired.parquet", StatsSettings(resamples=2_000, seed=3))
    assert a.name == "paired.parquet" and a.read_bytes() == b.read_bytes()
    assert not math.isnan(pl.read_parquet(a)["estimate"][0])
