"""Long stats table, identity enforcement, atomic deterministic outputs, table G.1."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from prefix_audit.audit import block_grouping
from prefix_audit.cli import main
from prefix_audit.replay import scoring
from prefix_audit.reports.block_tables import table_g1
from prefix_audit.reports.tables import table_files, write_tables
from prefix_audit.statistics import stats as stats_module
from prefix_audit.statistics.metrics import block_metrics, check_identities
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import (
    COUNTED_METRICS,
    METRICS,
    STATS_SCHEMA,
    IdentityViolation,
    compute_stats,
    task_set_seed,
    write_stats,
)

# The product's own episode schema, restricted to the columns these tests build.
EPISODE_SCHEMA = {name: dtype for name, dtype in pl.Schema(scoring.EPISODE_SCHEMA).items()
                  if name in ("dataset", "model", "method", "task_id", "rollout_id", "T", "FED", "Y")}
K_MAX = 4
PEC1 = (pl.col("metric") == "pec") & (pl.col("k") == 1)


def make_episodes(n: int = 40, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    # Listed out of order on purpose: output blocks must come sorted.
    for dataset, method in [("toolsandbox", "react"), ("bfcl_v3", "dual_loop")]:
        for i in range(n):
            t = int(rng.integers(1, 7))
            fed = int(min(rng.integers(1, 9), t + 1))
            y = [0, 1, None][int(rng.choice(3, p=[0.45, 0.45, 0.1]))]
            rows.append(
                {"dataset": dataset, "model": "sim-medium", "method": method, "task_id": f"task-{i:03d}",
                 "rollout_id": f"{dataset}-{method}-{i:03d}", "T": t, "FED": fed, "Y": y}
            )
    return pl.DataFrame(rows, schema=EPISODE_SCHEMA)


@pytest.fixture(scope="module")
def episodes() -> pl.DataFrame:
    return make_episodes()


@pytest.fixture(scope="module")
def stats(episodes) -> pl.DataFrame:
    return compute_stats(episodes, StatsSettings(resamples=1_000, seed=1, k_max=K_MAX))


def block_arrays(episodes: pl.DataFrame, dataset: str):
    block = episodes.filter(pl.col("dataset") == dataset)
    return (block["FED"].to_numpy(), block["T"].to_numpy(),
            block["Y"].cast(pl.Float64).fill_null(np.nan).to_numpy())


def test_schema_order_and_denominators(episodes, stats):
    assert stats.schema == STATS_SCHEMA
    # Per block: 3 per-depth metrics, 6 scalars, ter_k/pass_k at k = 1 (one trial), 2 consistency shares.
    assert stats.height == 2 * (3 * K_MAX + 6 + 2 + 2)
    assert set(stats["metric"]) == set(METRICS)
    assert stats["dataset"].unique(maintain_order=True).to_list() == ["bfcl_v3", "toolsandbox"]
    for dataset in ("bfcl_v3", "toolsandbox"):
        fed, T, Y = block_arrays(episodes, dataset)
        block = stats.filter(pl.col("dataset") == dataset)
        assert block["metric"].unique(maintain_order=True).to_list() == list(METRICS)
        # One rollout per task: tasks and rollouts of every cohort coincide.
        assert block["n"].to_list() == block["n_rollouts"].to_list()
        n = {(r["metric"], r["k"]): r["n_rollouts"] for r in block.iter_rows(named=True)}
        assert all(n[("pec", k)] == n[("depth_support", k)] == fed.size for k in range(1, K_MAX + 1))
        for k in range(1, K_MAX + 1):
            assert n[("eligible_pec", k)] == int((T >= k).sum())
        assert n[("final_success", None)] == n[("pass_k", 1)] == int((~np.isnan(Y)).sum())
        assert n[("rr", None)] == int(((fed <= T) & ~np.isnan(Y)).sum())
        assert n[("disagree_full", None)] == n[("disagree_y", None)] == 0
        infra = block.filter(pl.col("metric") == "infra_error").row(0, named=True)
        assert (infra["n_rollouts"], infra["successes"], infra["estimate"]) == (fed.size, 0, 0.0)


def test_identities_hold_on_the_table(stats):
    for (dataset,), block in stats.group_by(["dataset"]):
        est = {(r["metric"], r["k"]): r["estimate"] for r in block.iter_rows(named=True)}
        pecs = [est[("pec", k)] for k in range(1, K_MAX + 1)]
        assert pecs == sorted(pecs, reverse=True), dataset
        for k in range(1, K_MAX + 1):
            if est[("eligible_pec", k)] is not None:
                product = est[("depth_support", k)] * est[("eligible_pec", k)]
                assert est[("pec", k)] == pytest.approx(product, rel=1e-12)
        assert 0 <= est[("ter", None)] <= est[("auc_pec", None)] <= 1
        rr = block.filter(pl.col("metric") == "rr").row(0, named=True)
        assert rr["interval"] == "wilson" and rr["estimate"] == rr["successes"] / rr["n_rollouts"]
        assert rr["ci_low"] <= rr["estimate"] <= rr["ci_high"]
        counted = block.filter(pl.col("metric").is_in(["rr", *COUNTED_METRICS]))
        assert counted["successes"].null_count() == 0
        assert block["successes"].null_count() == block.height - counted.height
        success = block.filter(pl.col("metric") == "final_success").row(0, named=True)
        assert success["estimate"] == success["successes"] / success["n_rollouts"]


def test_seed_changes_intervals_only(episodes, stats):
    again = compute_stats(episodes, StatsSettings(resamples=1_000, seed=1, k_max=K_MAX))
    other = compute_stats(episodes, StatsSettings(resamples=1_000, seed=2, k_max=K_MAX))
    assert again.equals(stats)
    fixed = ["dataset", "model", "method", "metric", "k", "estimate", "n", "successes", "interval"]
    assert other.select(fixed).equals(stats.select(fixed))
    def bounds(df: pl.DataFrame, interval: str) -> pl.DataFrame:
        return df.filter(pl.col("interval") == interval).select("ci_low", "ci_high")

    assert not bounds(other, "percentile_bootstrap").equals(bounds(stats, "percentile_bootstrap"))
    assert bounds(other, "wilson").equals(bounds(stats, "wilson"))
    assert set(other["seed"]).isdisjoint(set(stats["seed"]))


def test_task_set_seed_is_stable_and_distinct():
    # A literal pins the derivation: Python's salted hash() would change it from run to run.
    assert task_set_seed(0, "bfcl_v3", ["t1", "t2"]) == task_set_seed(0, "bfcl_v3", ("t1", "t2"))
    assert task_set_seed(0, "bfcl_v3", ["t1", "t2"]) == 1607472018750963803
    seeds = {task_set_seed(s, d, tasks) for s in (0, 1) for d in ("a", "b") for tasks in (["x"], ["x", "y"])}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)


def test_undefined_metrics_are_null_not_zero():
    episodes = pl.DataFrame(
        [{"dataset": "d", "model": "m", "method": "x", "task_id": f"t{i}", "rollout_id": f"r{i}",
          "T": 1, "FED": 2, "Y": None} for i in range(3)],
        schema=EPISODE_SCHEMA,
    )
    out = compute_stats(episodes, StatsSettings(resamples=200, seed=0, k_max=2))
    undefined = out.filter(pl.col("interval") == "none")
    assert list(zip(undefined["metric"], undefined["k"])) == [
        ("eligible_pec", 2), ("final_success", None), ("rr", None), ("disagree_full", None), ("disagree_y", None)
    ]
    assert undefined["estimate"].null_count() == undefined["ci_low"].null_count() == 5
    assert undefined.filter(pl.col("metric") == "rr")["n"].to_list() == [0]


def test_check_identities_catches_hand_made_bad_metrics(episodes):
    fed, T, Y = block_arrays(episodes, "bfcl_v3")
    good = block_metrics(fed, T, Y, K_MAX)
    assert check_identities(fed, T, Y, good) == []
    bad_cases = {
        "non-increasing": dataclasses.replace(good, pec=(0.2, 0.5, 0.1, 0.0)),
        "TER <= AUC-PEC": dataclasses.replace(good, ter=min(1.0, good.auc_pec + 0.1)),
        "mean FED": dataclasses.replace(good, mean_fed=0.5),
        "N(1 - TER)": dataclasses.replace(good, n_prefix_failure=good.n_prefix_failure + 1),
        "q*s + (1-q)*r": dataclasses.replace(good, final_success=good.final_success / 2),
        "depth_support x eligible_pec": dataclasses.replace(good, depth_support=(1.0, 0.1, 0.1, 0.1)),
    }
    for needle, bad in bad_cases.items():
        violations = check_identities(fed, T, Y, bad)
        assert any(needle in v for v in violations), (needle, violations)


def test_compute_stats_raises_on_violation(episodes, monkeypatch):
    monkeypatch.setattr(stats_module, "check_identities", lambda *a: ["PEC not non-increasing"])
    with pytest.raises(IdentityViolation, match="bfcl_v3/sim-medium/dual_loop.*PEC not non-increasing"):
        compute_stats(episodes, StatsSettings(resamples=10, seed=0))


@pytest.mark.parametrize(
    ("column", "value", "message"), [("FED", 99, "FED must lie in"), ("T", 0, "T must be >= 1")]
)
def test_bad_episode_values_name_the_block(episodes, column, value, message):
    bad = episodes.with_columns(pl.lit(value, dtype=pl.Int32).alias(column))
    with pytest.raises(ValueError, match=f"block bfcl_v3/sim-medium/dual_loop: {message}"):
        compute_stats(bad, StatsSettings(resamples=10, seed=0))


def test_bad_episode_frames_rejected(episodes):
    with pytest.raises(ValueError, match="required column"):
        compute_stats(episodes.drop("Y"), StatsSettings(resamples=10, seed=0))
    with pytest.raises(ValueError, match="only one of T and FED null"):
        no_fed = episodes.with_columns(pl.lit(None, dtype=pl.Int32).alias("FED"))
        compute_stats(no_fed, StatsSettings(resamples=10, seed=0))
    with pytest.raises(ValueError, match="'task_id' has 1 null"):
        compute_stats(episodes.with_columns(pl.when(pl.col("rollout_id") == "bfcl_v3-dual_loop-000")
                                            .then(None).otherwise(pl.col("task_id")).alias("task_id")),
 StatsSettings(resamples=10, seed=0))


def test_empty_episodes_give_empty_typed_table(episodes):
    assert compute_stats(episodes.head(0), StatsSettings(resamples=10, seed=0)).schema == STATS_SCHEMA


def test_outputs_are_byte_identical_and_complete(episodes, stats, tmp_path):
    episodes_path = tmp_path / "episodes.parquet"
    episodes.write_parquet(episodes_path)
    first = write_stats(episodes_path, tmp_path / "a" / "stats.parquet",
                        StatsSettings(resamples=1_000, seed=1, k_max=K_MAX))
    second = write_stats(episodes_path, tmp_path / "b" / "stats.parquet",
                         StatsSettings(resamples=1_000, seed=1, k_max=K_MAX))
    assert first.read_bytes() == second.read_bytes()
    assert pl.read_parquet(first).equals(stats)

    pools, methods = block_grouping()  # as the command line pools and orders
    tables_a = write_tables(first, table_files(tmp_path / "ta"), pools=pools, methods=methods)
    # The command line takes a directory holding stats.parquet too.
    assert main(["tables", str(tmp_path / "a"), "-o", str(tmp_path / "tb")]) == 0
    tables_b = list(table_files(tmp_path / "tb").values())
    assert [p.name for p in tables_a[:3]] == ["table_G1.csv", "table_G1.md", "table_G1.tex"]
    assert [p.name for p in tables_a[3:]] == [
        f"table_{t}.{ext}" for t in ("task_categories", "F1", "F2", "F3", "pairs", "consistency", "trust", "labels",
                                     "label_categories", "G1_agent", "F1_agent") for ext in ("csv", "md", "tex")
    ]
    for a, b in zip(tables_a, tables_b):
        assert a.read_bytes() == b.read_bytes()
    assert not [p for p in (tmp_path / "ta").iterdir() if p.name.endswith(".tmp")]

    pec1 = stats.filter(PEC1 & (pl.col("dataset") == "bfcl_v3")).row(0, named=True)
    cell = f"{pec1['estimate']:.3f} [{pec1['ci_low']:.3f}, {pec1['ci_high']:.3f}]"
    text = {p.suffix: p.read_text() for p in tables_a[:3]}
    assert "| bfcl_v3 | sim-medium | dual_loop | 40 | " + cell in text[".md"]
    assert r"bfcl\_v3 & sim-medium & dual\_loop & 40 & " + cell in text[".tex"]
    assert r"\toprule" in text[".tex"] and r"\bottomrule" in text[".tex"]
    header = "dataset,model,method,N,tasks,rollouts,infra failures,PEC@1,PEC@2,PEC@3,PEC@4,pec_1,pec_1_lo,pec_1_hi"
    assert text[".csv"].splitlines()[0].startswith(header)
    assert len(text[".csv"].splitlines()) == 3


def test_table_g1_shape(stats):
    g1 = table_g1(stats)
    assert g1.height == 2 and g1["N"].to_list() == ["40", "40"] and g1["tasks"].to_list() == [40, 40]
    assert [c for c in g1.columns if c.startswith("PEC@")] == [f"PEC@{k}" for k in range(1, 5)]
    assert g1["pec_1"].to_list() == stats.filter(PEC1)["estimate"].to_list()


def test_empty_stats_write_header_and_note(tmp_path):
    path = tmp_path / "stats.parquet"
    pl.DataFrame(schema=STATS_SCHEMA).write_parquet(path)
    csv, md, tex = write_tables(path, table_files(tmp_path / "out"))[:3]
    assert csv.read_text().count("\n") == 1
    assert "| dataset | model | method | N | PEC@1" in md.read_text()
    assert "No blocks were present." in md.read_text()
    assert "No blocks were present." in tex.read_text()
