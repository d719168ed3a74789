"""Paper-grid statistics: our engine against scipy.stats.bootstrap doing the same resampling work.

Usage: PYTHONPATH=src python bench/bench_stats.py [--repeat 3] [--seed 0]

Synthetic FED data of paper sizes (SPEC §5): G.1 = BFCL-v3 and ToolSandbox, 200 tasks x 3 models x
4 methods (24 blocks, PEC@1..4, 10,000 resamples); F.1 = τ Airline (50) + Retail (114) pooled per task
x 3 x 4 (12 blocks: TER, mean FED, AUC-PEC, final success; 10,000); F.3 = 4 verifier conditions vs a
paired Plan-Conditioned rerun on the 164 τ tasks (ΔTER, ΔAUC-PEC, Δfinal success; 100,000 paired).

Ours: `compute_stats` (which also computes every other metric of a block, identity checks and Wilson
intervals — more than scipy does here) and `paired_differences`, with 1 thread and with one thread per
CPU; F.1 times the 12 pooled blocks alone, and "full paper grid" times the whole statistics stage
(G.1 + τ member and pooled blocks + F.3). scipy: one vectorised `bootstrap(method="percentile")` call per block with a
vector-valued statistic (one draw shared by the block's metrics, as ours), `paired=True` for the
multi-column and paired blocks, `batch=10_000` for F.3 to bound memory. Prints per-section wall times
(best of --repeat), the ratio, the largest CI disagreement (Monte Carlo level expected), and a JSON
summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

import numpy as np
import polars as pl
import scipy
from scipy import stats as scipy_stats

from prefix_audit.paired import PairSpec, paired_differences
from prefix_audit.stats import TAU_POOL, compute_stats

MODELS = ("strong", "medium", "weak")
METHODS = ("react", "prompt_planning", "plan_conditioned", "dual_loop")
SIZES = {"bfcl_v3": 200, "toolsandbox": 200, "tau_airline": 50, "tau_retail": 114}
CONDITIONS = ("verifier_gpt41", "verifier_llama", "deterministic_accept", "deterministic_verifier")
G1_RESAMPLES, F1_RESAMPLES, F3_RESAMPLES = 10_000, 10_000, 100_000
KS = np.arange(1, 5)


def block(rng: np.random.Generator, dataset: str, model: str, method: str, n: int, error: float) -> pl.DataFrame:
    """One block: horizons 1..12, first error geometric in depth, success likelier when executable."""
    T = rng.integers(1, 13, size=n)
    first = rng.geometric(error, size=n)
    fed = np.minimum(first, T + 1)
    p_success = np.where(fed == T + 1, 0.7, 0.25)
    Y = np.where(rng.random(n) < 0.05, -1, (rng.random(n) < p_success).astype(int))
    tokens = rng.lognormal(8.0, 0.4, size=n).round()
    return pl.DataFrame({
        "dataset": dataset, "model": model, "method": method,
        "task_id": [f"{dataset}-{i:03d}" for i in range(n)],
        "rollout_id": [f"{dataset}/{model}/{method}/{i}" for i in range(n)],
        "T": pl.Series(T, dtype=pl.Int32), "FED": pl.Series(fed, dtype=pl.Int32),
        "Y": pl.Series(Y, dtype=pl.Int8).replace(-1, None),
        "agent_tokens": pl.Series(tokens, dtype=pl.Int64),
        "agent_latency_s": tokens / 400.0 + rng.uniform(0, 2, size=n),
    })


def episodes(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(G.1 episodes, τ episodes, sensitivity episodes)."""
    rng = np.random.default_rng(seed)
    def grid(datasets: tuple[str, ...]) -> pl.DataFrame:
        return pl.concat([
            block(rng, d, m, meth, SIZES[d], error=0.04 + 0.05 * i + 0.01 * j)
            for d in datasets for i, m in enumerate(MODELS) for j, meth in enumerate(METHODS)
        ])
    sens = pl.concat([
        block(rng, d, "planner", meth, SIZES[d], error=0.05 + 0.005 * j)
        for d in TAU_POOL["tau"] for j, meth in enumerate(("plan_conditioned_rerun", *CONDITIONS))
    ])
    return grid(("bfcl_v3", "toolsandbox")), grid(TAU_POOL["tau"]), sens


PAIRS = [PairSpec(c, "tau", ("planner", c), ("planner", "plan_conditioned_rerun")) for c in CONDITIONS]


def ours(g1: pl.DataFrame, tau: pl.DataFrame, sens: pl.DataFrame, seed: int) -> dict[str, pl.DataFrame]:
    """Every section with our engine, single-threaded (for memory and the CI cross-check)."""
    return {
        "G.1": compute_stats(g1, resamples=G1_RESAMPLES, seed=seed),
        "F.1": compute_stats(tau, resamples=F1_RESAMPLES, seed=seed, pools=TAU_POOL),
        "F.3": paired_differences(sens, PAIRS, resamples=F3_RESAMPLES, seed=seed, pools=TAU_POOL),
    }


def _pecs(fed: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.moveaxis((np.expand_dims(fed, -1) > KS).mean(axis=axis - 1 if axis < 0 else axis), -1, 0)


def _f1_stat(full, area, fed, known, y, axis=-1):  # scipy's calling convention
    return np.stack([full.mean(axis), fed.mean(axis), area.mean(axis), (known * y).sum(axis) / known.sum(axis)])


def _f3_stat(d_full, d_area, known, d_y, axis=-1):
    return np.stack([d_full.mean(axis), d_area.mean(axis), d_y.sum(axis) / known.sum(axis)])


def _columns(frame: pl.DataFrame) -> tuple[np.ndarray, ...]:
    fed, T = frame["FED"].to_numpy().astype(float), frame["T"].to_numpy().astype(float)
    y = frame["Y"].cast(pl.Float64).to_numpy()
    known = ~np.isnan(y)
    return (fed == T + 1).astype(float), (fed - 1) / T, fed, known.astype(float), np.nan_to_num(y)


def scipy_g1(g1: pl.DataFrame, seed: int) -> list:
    out = []
    for key, b in sorted(g1.partition_by(["dataset", "model", "method"], as_dict=True).items()):
        res = scipy_stats.bootstrap((b["FED"].to_numpy(),), _pecs, n_resamples=G1_RESAMPLES, method="percentile",
                                    vectorized=True, rng=np.random.default_rng(seed))
        out.append((key, res.confidence_interval.low, res.confidence_interval.high))
    return out


def scipy_f1(tau: pl.DataFrame, seed: int) -> list:
    out = []
    for key, b in sorted(tau.partition_by(["model", "method"], as_dict=True).items()):
        res = scipy_stats.bootstrap(_columns(b), _f1_stat, n_resamples=F1_RESAMPLES, method="percentile",
                                    vectorized=True, paired=True, rng=np.random.default_rng(seed))
        out.append((("tau", *key), res.confidence_interval.low, res.confidence_interval.high))
    return out


def scipy_f3(sens: pl.DataFrame, seed: int) -> list:
    out = []
    for pair in PAIRS:
        cond, base = (_columns(sens.filter(pl.col("method") == arm[1]).sort("dataset", "task_id"))
                      for arm in (pair.condition, pair.baseline))
        both = cond[3] * base[3]
        data = (cond[0] - base[0], cond[1] - base[1], both, both * (cond[4] - base[4]))
        res = scipy_stats.bootstrap(data, _f3_stat, n_resamples=F3_RESAMPLES, method="percentile", vectorized=True,
                                    paired=True, batch=10_000, rng=np.random.default_rng(seed))
        out.append((pair.label, res.confidence_interval.low, res.confidence_interval.high))
    return out


def disagreement(mine: dict[str, pl.DataFrame], theirs: dict[str, object]) -> dict[str, float]:
    """Largest |our bound - scipy bound| per section (independent draws: Monte Carlo + lattice)."""
    worst: dict[str, float] = {}
    g1 = mine["G.1"].filter(pl.col("metric") == "pec")
    diffs = []
    for key, lo, hi in theirs["G.1"]:
        rows = g1.filter((pl.col("dataset") == key[0]) & (pl.col("model") == key[1]) & (pl.col("method") == key[2]))
        diffs += [np.abs(rows["ci_low"].to_numpy() - lo).max(), np.abs(rows["ci_high"].to_numpy() - hi).max()]
    worst["G.1"] = float(max(diffs))
    f1 = mine["F.1"].filter(pl.col("dataset") == "tau")
    diffs = []
    for key, lo, hi in theirs["F.1"]:
        rows = f1.filter((pl.col("model") == key[1]) & (pl.col("method") == key[2]))
        for i, m in enumerate(("ter", "mean_fed", "auc_pec", "final_success")):
            r = rows.filter(pl.col("metric") == m).row(0, named=True)
            diffs += [abs(r["ci_low"] - lo[i]), abs(r["ci_high"] - hi[i])]
    worst["F.1"] = float(max(diffs))
    diffs = []
    for label, lo, hi in theirs["F.3"]:
        rows = mine["F.3"].filter(pl.col("label") == label)
        for i, m in enumerate(("delta_ter", "delta_auc_pec", "delta_final_success")):
            r = rows.filter(pl.col("metric") == m).row(0, named=True)
            diffs += [abs(r["ci_low"] - lo[i]), abs(r["ci_high"] - hi[i])]
    worst["F.3"] = float(max(diffs))
    return worst


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    g1, tau, sens = episodes(args.seed)
    ours(g1.head(400), tau.head(400), sens, args.seed)  # warm imports and caches outside the timing

    workers = os.cpu_count() or 1
    # The pooled blocks alone (same blocks, seeds and numbers as compute_stats with the τ pool).
    pooled = tau.with_columns(dataset=pl.lit("tau"))
    assert compute_stats(pooled, resamples=200, seed=1).equals(
        compute_stats(tau, resamples=200, seed=1, pools=TAU_POOL).filter(pl.col("dataset") == "tau"))
    sections = {
        "G.1": ("24 blocks x 200 x 10k",
                lambda w: compute_stats(g1, resamples=G1_RESAMPLES, seed=args.seed, workers=w),
                lambda: scipy_g1(g1, args.seed)),
        "F.1": ("12 pooled blocks x 164 x 10k",
                lambda w: compute_stats(pooled, resamples=F1_RESAMPLES, seed=args.seed, workers=w),
                lambda: scipy_f1(tau, args.seed)),
        "F.3": ("4 pairs x 164 x 100k paired",
                lambda w: paired_differences(sens, PAIRS, resamples=F3_RESAMPLES, seed=args.seed, pools=TAU_POOL,
                                             workers=w),
                lambda: scipy_f3(sens, args.seed)),
    }
    ours_1 = {name: timed(partial(mine, 1), args.repeat)[0] for name, (_, mine, _) in sections.items()}
    ours_n = {name: timed(partial(mine, workers), args.repeat)[0] for name, (_, mine, _) in sections.items()}
    scipy_s, theirs = {}, {}
    for name, (_, _, ref) in sections.items():
        scipy_s[name], theirs[name] = timed(ref, args.repeat)
    totals = {label: sum(t.values()) for label, t in (("ours_1", ours_1), ("ours_n", ours_n), ("scipy", scipy_s))}
    grid = pl.concat([g1, tau])
    def whole_stage(w: int) -> None:
        compute_stats(grid, resamples=G1_RESAMPLES, seed=args.seed, pools=TAU_POOL, workers=w)
        paired_differences(sens, PAIRS, resamples=F3_RESAMPLES, seed=args.seed, pools=TAU_POOL, workers=w)

    full = {w: timed(partial(whole_stage, w), args.repeat)[0] for w in (1, workers)}

    tracemalloc.start()
    mine = ours(g1, tau, sens, args.seed)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    worst = disagreement(mine, theirs)

    for name, (what, _, _) in sections.items():
        print(f"{name} ({what}): ours {ours_1[name]:.3f} s (1 thread), {ours_n[name]:.3f} s ({workers} threads); "
              f"scipy {scipy_s[name]:.3f} s; ratio {scipy_s[name] / ours_1[name]:.1f}x / "
              f"{scipy_s[name] / ours_n[name]:.1f}x; max |CI diff| {worst[name]:.4f}")
    print(f"total: ours {totals['ours_1']:.3f} s (1 thread), {totals['ours_n']:.3f} s ({workers} threads); "
          f"scipy {totals['scipy']:.3f} s; ratio {totals['scipy'] / totals['ours_1']:.1f}x / "
          f"{totals['scipy'] / totals['ours_n']:.1f}x; ours peak traced memory {peak:.0f} MiB")
    print(f"full paper grid (60 blocks incl. 24 τ member blocks, every metric, + F.3): ours {full[1]:.3f} s "
          f"(1 thread), {full[workers]:.3f} s ({workers} threads)")
    print(json.dumps({
        "ours_1_thread_s": {k: round(v, 3) for k, v in ours_1.items()} | {"total": round(totals["ours_1"], 3)},
        f"ours_{workers}_threads_s": {k: round(v, 3) for k, v in ours_n.items()} | {"total": round(totals["ours_n"], 3)},
        "scipy_s": {k: round(v, 3) for k, v in scipy_s.items()} | {"total": round(totals["scipy"], 3)},
        "ratio_1_thread": round(totals["scipy"] / totals["ours_1"], 1),
        f"ratio_{workers}_threads": round(totals["scipy"] / totals["ours_n"], 1),
        "full_grid_s": {f"{w}_threads": round(t, 3) for w, t in full.items()},
        "max_ci_diff": {k: round(v, 4) for k, v in worst.items()},
        "ours_peak_mib": round(peak),
        "cpus": workers, "python": platform.python_version(), "numpy": np.__version__,
        "scipy": scipy.__version__, "machine": platform.machine(),
    }))


if __name__ == "__main__":
    main()
