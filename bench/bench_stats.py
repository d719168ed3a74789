"""Paper-grid statistics: our engine against scipy.stats.bootstrap doing the same intervals.

Usage: PYTHONPATH=src python bench/bench_stats.py [--repeat 3] [--seed 0]

Synthetic FED data of paper sizes (docs/definitions.md#statistics): BFCL-v3 and ToolSandbox 200 tasks, τ
Airline 50 and Retail 114, x 3 models x 4 methods (48 blocks, plus the 12 pooled τ blocks); F.3 = 4 verifier
conditions vs a paired Plan-Conditioned rerun on the 164 τ tasks (100,000 paired resamples).

Ours: the whole `compute_stats` (every metric of every block with its interval, identity checks,
RR, and the pairs table of every within-model method difference from the shared draw) plus
`paired_differences` for F.3. Its resampling compute is a 10k-resample run minus a 1-resample run.
scipy: the same intervals from the same per-task sums — one vectorised
`bootstrap(method="percentile", paired=True)` call per block (a vector-valued statistic of every
ratio metric of the block: one draw per block), one per pair of the pairs table (the differences
of the two blocks' ratios) and one per F.3 pair (`batch=10_000`). Also timed: the grid with 4
trials per task (k = 4) against k = 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import polars as pl
import scipy
from scipy import stats as scipy_stats

from prefix_audit.statistics.paired import PairSpec, paired_differences
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import _interval_specs, _pair_specs, _pairs_of, _prepare, compute_stats

MODELS = ("strong", "medium", "weak")
METHODS = ("react", "prompt_planning", "plan_conditioned", "dual_loop")
TAU_POOL = {"tau": ("tau_airline", "tau_retail")}  # as the τ package registers it
SIZES = {"bfcl_v3": 200, "toolsandbox": 200, "tau_airline": 50, "tau_retail": 114}
CONDITIONS = ("verifier_gpt41", "verifier_llama", "deterministic_accept", "deterministic_verifier")
RESAMPLES, F3_RESAMPLES = 10_000, 100_000


def block(rng: np.random.Generator, dataset: str, model: str, method: str, n: int, error: float,
          trials: int = 1) -> pl.DataFrame:
    """One block: horizons 1..12, first error geometric in depth, success likelier when executable."""
    size = n * trials
    T = rng.integers(1, 13, size=size)
    first = rng.geometric(error, size=size)
    fed = np.minimum(first, T + 1)
    p_success = np.where(fed == T + 1, 0.7, 0.25)
    Y = np.where(rng.random(size) < 0.05, -1, (rng.random(size) < p_success).astype(int))
    tokens = rng.lognormal(8.0, 0.4, size=size).round()
    return pl.DataFrame({
        "dataset": dataset, "model": model, "method": method,
        "task_id": [f"{dataset}-{i // trials:03d}" for i in range(size)],
        "trial": pl.Series([i % trials for i in range(size)], dtype=pl.Int32),
        "rollout_id": [f"{dataset}/{model}/{method}/{i}" for i in range(size)],
        "T": pl.Series(T, dtype=pl.Int32), "FED": pl.Series(fed, dtype=pl.Int32),
        "Y": pl.Series(Y, dtype=pl.Int8).replace(-1, None),
        "agent_tokens": pl.Series(tokens, dtype=pl.Int64),
        "agent_latency_s": tokens / 400.0 + rng.uniform(0, 2, size=size),
    })


def episodes(seed: int, trials: int = 1) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(paper-grid episodes, sensitivity episodes)."""
    rng = np.random.default_rng(seed)
    grid = pl.concat([
        block(rng, d, m, meth, SIZES[d], error=0.04 + 0.05 * i + 0.01 * j, trials=trials)
        for d in SIZES for i, m in enumerate(MODELS) for j, meth in enumerate(METHODS)
    ])
    sens = pl.concat([
        block(rng, d, "planner", meth, SIZES[d], error=0.05 + 0.005 * j)
        for d in TAU_POOL["tau"] for j, meth in enumerate(("plan_conditioned_rerun", *CONDITIONS))
    ])
    return grid, sens


PAIRS = [PairSpec(c, "tau", ("planner", c), ("planner", "plan_conditioned_rerun")) for c in CONDITIONS]


def _ratio_stat(n_metrics: int, *columns, axis=-1):  # scipy's calling convention: num..., den...
    sums = [c.sum(axis=axis) for c in columns]
    return np.stack([sums[i] / sums[n_metrics + i] for i in range(n_metrics)])


def _pair_stat(n_metrics: int, *columns, axis=-1):  # method num..., den..., versus num..., den...
    sums = [c.sum(axis=axis) for c in columns]
    m = 2 * n_metrics
    return np.stack([sums[i] / sums[n_metrics + i] - sums[m + i] / sums[m + n_metrics + i]
                     for i in range(n_metrics)])


def scipy_grid(grid: pl.DataFrame, seed: int) -> int:
    """Every bootstrap interval of compute_stats (blocks and pairs) with scipy; returns the calls."""
    frames = {key: (frame, ("task_id",)) for key, frame in grid.partition_by(["dataset", "model", "method"],
                                                                             as_dict=True).items()}
    pooled = grid.filter(pl.col("dataset").is_in(list(TAU_POOL["tau"])))
    for (model, method), frame in pooled.partition_by(["model", "method"], as_dict=True).items():
        frames[("tau", model, method)] = (frame, ("dataset", "task_id"))
    blocks = [_prepare(key, frame, unit, 4) for key, (frame, unit) in sorted(frames.items())]
    calls = 0
    for b in blocks:
        specs = _interval_specs(b)
        cols = b.aggregates.columns
        data = tuple(cols[s.num] for s in specs) + tuple(cols[s.den] for s in specs)
        scipy_stats.bootstrap(data, partial(_ratio_stat, len(specs)), n_resamples=RESAMPLES, method="percentile",
                              vectorized=True, paired=True, rng=np.random.default_rng(seed))
        calls += 1
    for dataset in sorted({b.key[0] for b in blocks}):
        for pair in _pairs_of(blocks, dataset, METHODS):
            specs = _pair_specs(pair.method.aggregates.specs)
            a, v = pair.method.aggregates.columns, pair.versus.aggregates.columns
            data = (tuple(a[s.num] for s in specs) + tuple(a[s.den] for s in specs)
                    + tuple(v[s.num] for s in specs) + tuple(v[s.den] for s in specs))
            scipy_stats.bootstrap(data, partial(_pair_stat, len(specs)), n_resamples=RESAMPLES,
                                  method="percentile", vectorized=True, paired=True, rng=np.random.default_rng(seed))
            calls += 1
    return calls


def _columns(frame: pl.DataFrame) -> tuple[np.ndarray, ...]:
    fed, T = frame["FED"].to_numpy().astype(float), frame["T"].to_numpy().astype(float)
    y = frame["Y"].cast(pl.Float64).to_numpy()
    known = ~np.isnan(y)
    return (fed == T + 1).astype(float), (fed - 1) / T, fed, known.astype(float), np.nan_to_num(y)


def _f3_stat(d_full, d_area, known, d_y, axis=-1):
    return np.stack([d_full.mean(axis), d_area.mean(axis), d_y.sum(axis) / known.sum(axis)])


def scipy_f3(sens: pl.DataFrame, seed: int) -> int:
    for pair in PAIRS:
        cond, base = (_columns(sens.filter(pl.col("method") == arm[1]).sort("dataset", "task_id"))
                      for arm in (pair.condition, pair.baseline))
        both = cond[3] * base[3]
        data = (cond[0] - base[0], cond[1] - base[1], both, both * (cond[4] - base[4]))
        scipy_stats.bootstrap(data, _f3_stat, n_resamples=F3_RESAMPLES, method="percentile", vectorized=True,
                              paired=True, batch=10_000, rng=np.random.default_rng(seed))
    return len(PAIRS)


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    workers = os.cpu_count() or 1
    grid, sens = episodes(args.seed)
    grid4, _ = episodes(args.seed, trials=4)

    def stage(frame: pl.DataFrame, resamples: int, f3_resamples: int, w: int) -> None:
        compute_stats(frame, StatsSettings(resamples=resamples, seed=args.seed, pools=TAU_POOL, methods=METHODS,
                                           workers=w))
        paired_differences(sens, PAIRS, StatsSettings(resamples=f3_resamples, seed=args.seed, pools=TAU_POOL,
                                                      methods=METHODS, workers=w))

    stage(grid.head(400), 10, 10, 1)  # warm imports and caches outside the timing
    results: dict[str, float] = {}
    for w in (1, workers):
        results[f"k1_full_{w}"] = timed(partial(stage, grid, RESAMPLES, F3_RESAMPLES, w), args.repeat)
        results[f"k1_one_{w}"] = timed(partial(stage, grid, 1, 1, w), args.repeat)
        results[f"k4_full_{w}"] = timed(partial(stage, grid4, RESAMPLES, F3_RESAMPLES, w), args.repeat)
        results[f"k4_one_{w}"] = timed(partial(stage, grid4, 1, 1, w), args.repeat)
    calls = {}
    scipy_s = timed(lambda: calls.update(grid=scipy_grid(grid, args.seed), f3=scipy_f3(sens, args.seed)), 1)
    rows = compute_stats(grid, StatsSettings(resamples=1, seed=0, pools=TAU_POOL, methods=METHODS))
    n_blocks = rows.filter(pl.col("versus").is_null()).select("dataset", "model", "method").n_unique()
    n_pairs = rows.filter(pl.col("versus").is_not_null()).select("dataset", "model", "method", "versus").n_unique()
    for w in (1, workers):
        k1, k4 = results[f"k1_full_{w}"], results[f"k4_full_{w}"]
        resampling = k1 - results[f"k1_one_{w}"]
        print(f"{w} thread(s): k=1 whole stage {k1:.3f} s, resampling {resampling:.3f} s "
              f"-> scipy {scipy_s:.3f} s / ours {scipy_s / resampling:.1f}x; "
              f"k=4 whole stage {k4:.3f} s ({k4 / k1:.2f}x k=1)")
    print(f"{n_blocks} blocks and {n_pairs} pairs (10k) + {len(PAIRS)} F.3 pairs (100k); scipy calls: {calls}")
    print(json.dumps({
        **{k: round(v, 3) for k, v in results.items()}, "scipy_s": round(scipy_s, 3), "scipy_calls": calls,
        "blocks": n_blocks, "pairs": n_pairs, "cpus": workers, "python": platform.python_version(),
        "numpy": np.__version__, "scipy": scipy.__version__, "machine": platform.machine(),
    }))


if __name__ == "__main__":
    main()
