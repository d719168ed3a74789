"""Pooled blocks, accounting rows and Tables F.1, F.2, F.3 on synthetic episodes."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from prefix_audit.generation.grid import METHODS as METHOD_ORDER
from prefix_audit.replay import scoring
from prefix_audit.reports.block_tables import table_f1, table_f2, table_f3
from prefix_audit.reports.tables import table_files, write_tables
from prefix_audit.statistics.intervals import wilson_interval
from prefix_audit.statistics.paired import (
    PAIRED_SCHEMA,
    PairSpec,
    paired_differences,
    write_paired,
)
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import STATS_SCHEMA, compute_stats, task_set_seed, write_stats

# The product's own episode schema, restricted to the columns these tests build.
EPISODE_SCHEMA = {name: dtype for name, dtype in pl.Schema(scoring.EPISODE_SCHEMA).items()
                  if name in ("dataset", "model", "method", "task_id", "rollout_id", "T", "FED", "Y", "category", "agent_tokens", "agent_latency_s", "agent_wall_s", "agent_calls", "agent_estimated_calls", "user_sim_tokens", "user_sim_latency_s")}
SIZES = {"tau_airline": 12, "tau_retail": 20, "bfcl_v3": 10}
MODELS = ("sim-strong", "sim-weak")
RESAMPLES = 500
TAU_POOL = {"tau": ("tau_airline", "tau_retail")}  # the τ package's registered pool


def settings(**changes: Any) -> StatsSettings:
    """The statistics settings of these tests: τ pooled, the product's methods in order."""
    return StatsSettings(**({"resamples": RESAMPLES, "seed": 1, "pools": TAU_POOL, "methods": METHOD_ORDER} | changes))
TABLE_STEMS = [f"table_{t}.{ext}" for t in ("G1", "task_categories", "F1", "F2", "F3", "pairs", "consistency", "trust",
                                           "labels", "label_categories", "G1_agent", "F1_agent")
               for ext in ("csv", "md", "tex")]


def make_episodes(seed: int = 0) -> pl.DataFrame:
    """τ blocks for every model x method (sim-weak lacks prompt_planning), with accounting;
    BFCL reference rollouts without accounting; a sensitivity condition for F.3."""
    rng = np.random.default_rng(seed)
    rows = []

    def add(dataset: str, model: str, method: str, tasks: range, accounted: float) -> None:
        for i in tasks:
            t = int(rng.integers(1, 7))
            fed = int(min(rng.integers(1, 10), t + 1))
            has_cost = dataset.startswith("tau") and rng.random() < accounted
            tokens = int(rng.integers(800, 4000)) if has_cost else None
            latency = float(rng.uniform(1, 30)) if has_cost else None
            calls = None if tokens is None else tokens // 400
            # Retries add a quarter to the wall time; sim-strong's ReAct server sent no usage on a quarter of calls.
            estimated = None if calls is None else (calls // 4 if (model, method) == ("sim-strong", "react") else 0)
            rows.append({
                "dataset": dataset, "model": model, "method": method, "task_id": f"task-{i:03d}",
                "rollout_id": f"{dataset}/{model}/{method}/{i}", "T": t, "FED": fed,
                "Y": [0, 1, None][int(rng.choice(3, p=[0.45, 0.45, 0.1]))],
                "category": None if fed == t + 1 else "schema",
                "agent_tokens": tokens, "agent_latency_s": latency,
                "agent_wall_s": None if latency is None else latency * 1.25,
                "agent_calls": calls, "agent_estimated_calls": estimated,
                "user_sim_tokens": None, "user_sim_latency_s": None,
            })

    for dataset in ("tau_airline", "tau_retail"):
        for model in MODELS:
            for method in METHOD_ORDER:
                if (model, method) != ("sim-weak", "prompt_planning"):
                    add(dataset, model, method, range(SIZES[dataset]), 0.8 if method == "react" else 1.0)
        add(dataset, "sim-strong", "deterministic_accept", range(2, SIZES[dataset]), 1.0)
    add("bfcl_v3", "reference", "reference", range(SIZES["bfcl_v3"]), 0.0)
    return pl.DataFrame(rows, schema=EPISODE_SCHEMA)


PAIRS = [
    PairSpec("deterministic accept", "tau", ("sim-strong", "deterministic_accept"), ("sim-strong", "plan_conditioned")),
    PairSpec("dual-loop", "tau", ("sim-strong", "dual_loop"), ("sim-strong", "plan_conditioned")),
]


@pytest.fixture(scope="module")
def episodes() -> pl.DataFrame:
    return make_episodes()


@pytest.fixture(scope="module")
def stats(episodes) -> pl.DataFrame:
    return compute_stats(episodes, settings())


@pytest.fixture(scope="module")
def paired(episodes) -> pl.DataFrame:
    return paired_differences(episodes, PAIRS, settings())


def metric(stats: pl.DataFrame, dataset: str, model: str, method: str, name: str) -> dict:
    return stats.filter(
        (pl.col("dataset") == dataset) & (pl.col("model") == model) & (pl.col("method") == method)
        & (pl.col("metric") == name) & pl.col("k").is_null()
    ).row(0, named=True)


def test_pooled_blocks_cover_the_union_of_members(episodes, stats):
    assert stats.schema == STATS_SCHEMA
    pooled = stats.filter(pl.col("dataset") == "tau")
    keys = set(zip(pooled["model"], pooled["method"]))
    member_keys = set(episodes.filter(pl.col("dataset").str.starts_with("tau")).select("model", "method").iter_rows())
    assert keys == member_keys
    union = episodes.filter(pl.col("dataset").is_in(TAU_POOL["tau"]) & (pl.col("model") == "sim-strong")
                            & (pl.col("method") == "dual_loop"))
    ter = metric(stats, "tau", "sim-strong", "dual_loop", "ter")
    assert ter["n"] == SIZES["tau_airline"] + SIZES["tau_retail"] == union.height
    assert ter["estimate"] == pytest.approx((union["FED"] == union["T"] + 1).mean())
    units = sorted(f"{d}\x1f{t}" for d, t in union.select("dataset", "task_id").iter_rows())
    assert ter["seed"] == task_set_seed(1, "tau", units)
    # Blocks stay sorted: the pool sorts among the datasets by name.
    assert stats["dataset"].unique(maintain_order=True).to_list() == ["bfcl_v3", "tau", "tau_airline", "tau_retail"]


def test_worker_threads_do_not_change_the_table(episodes, stats):
    assert compute_stats(episodes, settings(workers=3)).equals(stats)


def test_pool_requires_member_rows_and_checks_units(episodes):
    only_airline = episodes.filter(pl.col("dataset") != "tau_retail")
    out = compute_stats(only_airline, settings(resamples=50, seed=0))
    assert metric(out, "tau", "sim-strong", "react", "ter")["n"] == SIZES["tau_airline"]
    no_tau = episodes.filter(pl.col("dataset") == "bfcl_v3")
    assert "tau" not in compute_stats(no_tau, settings(resamples=50, seed=0))["dataset"].to_list()
    dup = pl.concat([episodes, episodes.filter(pl.col("dataset") == "tau_retail").head(1)])
    # A second rollout of a task is a second trial of it: still one task of the pooled cohort.
    first = episodes.filter(pl.col("dataset") == "tau_retail").row(0, named=True)
    block = ("tau", first["model"], first["method"], "ter")
    again = metric(compute_stats(dup, settings(resamples=50, seed=0)), *block)
    single = metric(compute_stats(episodes, settings(resamples=50, seed=0)), *block)
    assert (again["n"], again["n_rollouts"], again["trials_max"]) == (single["n"], single["n_rollouts"] + 1, 2)
    with pytest.raises(ValueError, match="also a dataset"):
        compute_stats(episodes, StatsSettings(resamples=50, seed=0, pools={"bfcl_v3": ["tau_airline"]}))


def test_accounting_rows_are_points_over_accounted_rollouts(episodes, stats):
    block = episodes.filter((pl.col("dataset") == "tau_airline") & (pl.col("model") == "sim-weak")
                            & (pl.col("method") == "react"))
    tokens = metric(stats, "tau_airline", "sim-weak", "react", "agent_tokens")
    assert tokens["n"] == block["agent_tokens"].drop_nulls().len() < block.height
    assert tokens["estimate"] == pytest.approx(block["agent_tokens"].drop_nulls().mean())
    assert tokens["interval"] == "none" and tokens["ci_low"] is None
    bfcl = metric(stats, "bfcl_v3", "reference", "reference", "agent_latency_s")
    assert bfcl["n"] == 0 and bfcl["estimate"] is None
    assert "user_sim_tokens" not in stats["metric"].to_list()


def test_table_f1_cells(stats):
    f1 = table_f1(stats, "tau", METHOD_ORDER)
    assert f1.height == 2 * 4 - 1 + 1  # sim-weak lacks prompt_planning; sim-strong has deterministic_accept
    strong = f1.filter(pl.col("model") == "sim-strong")["method"].to_list()
    assert strong == [*METHOD_ORDER, "deterministic_accept"]
    row = f1.row(0, named=True)
    ter = metric(stats, "tau", row["model"], row["method"], "ter")
    assert row["N"] == "32" and row["tasks"] == 32 and row["TER"] == f"{ter['estimate']:.3f} [{ter['ci_low']:.3f}, {ter['ci_high']:.3f}]"
    rr = metric(stats, "tau", row["model"], row["method"], "rr")
    lo, hi = wilson_interval(rr["successes"], rr["n_rollouts"])
    assert rr["interval"] == "wilson"
    assert row["RR"] == (f"{rr['successes']}/{rr['n_rollouts']} = {rr['successes'] / rr['n_rollouts']:.3f} "
                         f"[{lo:.3f}, {hi:.3f}]")
    # Where some Y is unknown, the final-success denominator is shown.
    for r in f1.iter_rows(named=True):
        success = metric(stats, "tau", r["model"], r["method"], "final_success")
        assert r["final_success_n"] == success["n_rollouts"]
        assert r["final success"].endswith(f"(n = {success['n_rollouts']})") == (success["n_rollouts"] < r["rollouts"])
    assert (f1["final_success_n"] < f1["rollouts"]).any()


def test_table_f1_undefined_rr():
    rows = [{"dataset": "tau_retail", "model": "m", "method": "react", "task_id": f"t{i}", "rollout_id": f"r{i}",
             "T": 2, "FED": 3, "Y": 1} for i in range(4)]
    stats = compute_stats(pl.DataFrame(rows, schema={k: EPISODE_SCHEMA[k] for k in rows[0]}),
                          settings(resamples=50, seed=0))
    f1 = table_f1(stats, "tau", METHOD_ORDER)
    assert f1["RR"].to_list() == ["0/0 (undefined)"] and f1["rr"].to_list() == [None]


def test_table_f2_costs_relative_changes_and_gaps(episodes):
    # Latency missing on a few react episodes that do have token counts: two denominators.
    lost = (pl.col("method") == "react") & pl.col("agent_tokens").is_not_null() & pl.col("task_id").is_in(["task-001", "task-002"])
    episodes = episodes.with_columns(pl.when(lost).then(None).otherwise(pl.col("agent_latency_s")).alias("agent_latency_s"))
    stats = compute_stats(episodes, settings(resamples=50, seed=0))
    f2 = table_f2(stats, METHOD_ORDER)
    assert f2.columns[:7] == ["dataset", "model", *METHOD_ORDER, "deterministic_accept"]
    row = f2.filter((pl.col("dataset") == "tau") & (pl.col("model") == "sim-weak")).row(0, named=True)
    assert row["prompt_planning"] == "n/a" and row["deterministic_accept"] == "n/a"
    react = metric(stats, "tau", "sim-weak", "react", "agent_tokens")
    latency = metric(stats, "tau", "sim-weak", "react", "agent_latency_s")
    assert latency["n"] < react["n"] < 32
    wall = metric(stats, "tau", "sim-weak", "react", "agent_wall_s")
    assert row["react"].endswith(f"(tokens {react['n']}/32, latency {latency['n']}/32)")
    assert row["react"].startswith(f"{react['estimate'] / 1000:.2f}k / {latency['estimate']:.2f} s / "
                                   f"{wall['estimate']:.2f} s (")
    assert wall["estimate"] > latency["estimate"] and "est." not in row["react"]
    dual = metric(stats, "tau", "sim-weak", "dual_loop", "agent_tokens")
    assert row["dual_loop"].endswith("(32/32)")
    rel = dual["estimate"] / react["estimate"] - 1
    assert row["dual_loop_vs_react_agent_tokens"] == pytest.approx(rel)
    assert row["dual_loop vs react"].startswith(f"{rel:+.1%} / ")
    bfcl = f2.filter(pl.col("dataset") == "bfcl_v3").row(0, named=True)
    assert bfcl["react"] == "n/a" and bfcl["dual_loop vs react"] == "n/a / n/a"
    # The reference source passes through as its own column, without accounting.
    assert bfcl["reference"] == "n/a / n/a / n/a (0/10)"
    # The share of calls with estimated tokens: a ratio of sums over the block's episodes.
    strong = f2.filter((pl.col("dataset") == "tau") & (pl.col("model") == "sim-strong")).row(0, named=True)
    block = episodes.filter(pl.col("dataset").is_in(["tau_airline", "tau_retail"]) & (pl.col("model") == "sim-strong")
                            & (pl.col("method") == "react"))
    share = block["agent_estimated_calls"].sum() / block["agent_calls"].sum()
    assert strong["react_estimated_share"] == pytest.approx(share)
    assert strong["react"].endswith(f"; {share:.0%} est.") and strong["dual_loop_estimated_share"] == 0.0


def test_table_f3_rows(paired):
    f3 = table_f3(paired)
    assert f3["label"].to_list() == [p.label for p in PAIRS]
    row = f3.row(0, named=True)
    assert (row["pairs"], row["n_condition_only"], row["n_baseline_only"]) == (28, 0, 4)
    assert row["unpaired"] == "0 condition-only, 4 baseline-only"
    ter = paired.filter((pl.col("label") == "deterministic accept") & (pl.col("metric") == "delta_ter")).row(0, named=True)
    assert row["ΔTER"] == f"{ter['estimate'] + 0.0:+.3f} [{ter['ci_low'] + 0.0:+.3f}, {ter['ci_high'] + 0.0:+.3f}]"
    assert row["Δtokens"].endswith("%)") and row["Δlatency"].split()[1] == "s"


def test_write_tables_is_complete_and_byte_identical(episodes, tmp_path):
    path = tmp_path / "episodes.parquet"
    episodes.write_parquet(path)
    for out in ("a", "b"):
        write_stats(path, tmp_path / out / "stats.parquet", settings())
        write_paired(path, PAIRS, tmp_path / out / "paired.parquet", settings())
    first = write_tables(tmp_path / "a" / "stats.parquet", table_files(tmp_path / "ta"), tmp_path / "a" / "paired.parquet",
                         pools=TAU_POOL, methods=METHOD_ORDER)
    second = write_tables(tmp_path / "b" / "stats.parquet", table_files(tmp_path / "tb"), tmp_path / "b" / "paired.parquet",
                          pools=TAU_POOL, methods=METHOD_ORDER)
    assert [p.name for p in first] == [p.name for p in second] == TABLE_STEMS
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    md = {p.name: p.read_text() for p in first if p.suffix == ".md"}
    assert "| sim-strong | dual_loop | 32 |" in md["table_F1.md"]
    assert "| deterministic accept | tau | sim-strong/deterministic_accept |" in md["table_F3.md"]
    tex = (tmp_path / "ta" / "table_F3.tex").read_text()
    assert r"$\Delta$TER" in tex and "Δ" not in tex


def test_seed_moves_intervals_not_estimates(episodes, stats):
    other = compute_stats(episodes, settings(seed=2))
    a, b = table_f1(stats, "tau", METHOD_ORDER), table_f1(other, "tau", METHOD_ORDER)
    estimates = ["N", "ter", "mean_fed", "auc_pec", "final_success", "rr", "rr_lo", "rr_hi"]
    assert a.select(estimates).equals(b.select(estimates))
    assert not a.select("ter_lo", "ter_hi", "auc_pec_lo").equals(b.select("ter_lo", "ter_hi", "auc_pec_lo"))
    assert table_f2(stats, METHOD_ORDER).equals(table_f2(other, METHOD_ORDER))
    p1 = paired_differences(episodes, PAIRS, settings())
    p2 = paired_differences(episodes, PAIRS, settings(seed=2))
    f3a, f3b = table_f3(p1), table_f3(p2)
    assert f3a.select("delta_ter", "delta_agent_tokens").equals(f3b.select("delta_ter", "delta_agent_tokens"))
    assert not f3a.select("delta_ter_lo", "delta_auc_pec_hi").equals(f3b.select("delta_ter_lo", "delta_auc_pec_hi"))


def test_empty_inputs_write_headers_and_notes(episodes, tmp_path):
    # Only BFCL, no accounting columns, no paired file: F.1, F.2 and F.3 are empty with notes.
    bfcl = episodes.filter(pl.col("dataset") == "bfcl_v3").drop("agent_tokens", "agent_latency_s", "agent_wall_s",
                                                                "agent_calls", "agent_estimated_calls")
    stats_dir = tmp_path / "stats"
    bfcl.write_parquet(tmp_path / "episodes.parquet")
    write_stats(tmp_path / "episodes.parquet", stats_dir / "stats.parquet", settings(resamples=50, seed=0))
    paths = write_tables(stats_dir / "stats.parquet", table_files(tmp_path / "out"), pools=TAU_POOL,
                         methods=METHOD_ORDER)
    assert [p.name for p in paths] == TABLE_STEMS
    text = {p.name: p.read_text() for p in paths}
    assert text["table_G1.csv"].count("\n") == 2
    for stem in ("F1", "F2", "F3"):
        assert text[f"table_{stem}.csv"].count("\n") == 1, stem
    assert "No tau blocks in the stats table: no tau_airline/tau_retail blocks in the FED table." in text["table_F1.md"]
    assert "the FED table has no agent_tokens/agent_latency_s/agent_wall_s columns" in text["table_F2.md"]
    assert "No paired differences: no paired.parquet was given." in text["table_F3.md"]
    assert r"no tau\_airline/tau\_retail blocks" in text["table_F1.tex"]

    # τ blocks without pooling, and an empty paired table.
    unpooled = compute_stats(episodes, StatsSettings(resamples=50, seed=0))
    unpooled.write_parquet(tmp_path / "unpooled.parquet")
    pl.DataFrame(schema=PAIRED_SCHEMA).write_parquet(tmp_path / "paired.parquet")
    paths = write_tables(tmp_path / "unpooled.parquet", table_files(tmp_path / "out2"), tmp_path / "paired.parquet",
                         pools=TAU_POOL)
    text = {p.name: p.read_text() for p in paths}
    assert "blocks are present but were not pooled" in text["table_F1.md"]
    assert "No paired differences: paired.parquet has no rows." in text["table_F3.md"]


def test_the_tau_package_registers_its_pool():
    """An audit outside the workflow pools as the benchmarks' registrations say: τ's two domains as ``tau``."""
    from prefix_audit.replay import registry

    assert registry.pools() == TAU_POOL


def test_a_pool_of_another_packages_datasets_is_refused():
    import dataclasses

    from prefix_audit.replay import registry

    own = dataclasses.replace(registry.dataset("tau_airline"), name="toy_pooled")
    with pytest.raises(registry.RegistryError, match="a pool is one or more of its own datasets"):
        registry.register(registry.Registration("toy_pools", (own,), pools={"mixed": ("toy_pooled", "bfcl_v3")}))
    assert "toy_pools" not in registry.modules()


def test_settings_are_checked_when_made_and_cannot_change():
    with pytest.raises(ValueError, match="pool 'p' has no member datasets"):
        StatsSettings(resamples=10, seed=0, pools={"p": []})
    made = StatsSettings(resamples=10, seed=0, pools={"p": ["a", "b"]}, methods=["y", "x"])
    assert made.pools == {"p": ("a", "b")} and made.methods == ("y", "x")
    with pytest.raises(TypeError):
        made.pools["q"] = ("c",)  # type: ignore[index]
    assert sorted(["z", "x", "a", "y"], key=made.method_rank) == ["y", "x", "a", "z"]
