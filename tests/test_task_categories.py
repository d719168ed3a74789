"""The per-category view of BFCL blocks (table task_categories, beside G.1): each category's row is G.1
over that category's episodes, with the same seed; the score file's own accuracy stands beside ours as
its summary line says; a block over two categories gives two rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefix_audit.benchmarks.bfcl.scores import read_score_file
from prefix_audit.cli import main
from prefix_audit.core.decode import DecodeError
from prefix_audit.replay import registry
from prefix_audit.replay.scoring import EPISODE_SCHEMA
from prefix_audit.reports.block_tables import RECORDED_COLUMN, table_g1, table_task_categories
from prefix_audit.reports.tables import CATEGORY_TABLE, table_files, write_tables
from prefix_audit.statistics.categories import (
    CATEGORY_STATS_SCHEMA,
    RECORDED_ACCURACY,
    compute_category_stats,
    tasks_by_category,
    uncategorised_lines,
    uncategorised_tasks,
    write_category_stats,
)
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import compute_stats, write_stats

COLUMNS = ("dataset", "model", "method", "task_id", "rollout_id", "T", "FED", "Y", "meta_json")
SCHEMA = {name: dtype for name, dtype in pl.Schema(EPISODE_SCHEMA).items() if name in COLUMNS}
SCORE = {"name": "BFCL_v3_multi_turn_base_score.json", "sha256": "0" * 64, "accuracy": 0.625,
         "correct_count": 5, "total_count": 8}
RESAMPLES = 300
REAL = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-logs" / "bfcl"


def categories() -> dict:
    """What the workflow and the commands hand the statistics: the registered datasets' categories."""
    return registry.task_categories()


def _rows(rng: np.random.Generator, model: str, method: str, counts: dict[str, int],
          meta: dict | None = None, dataset: str = "bfcl_v3") -> list[dict]:
    """``counts[category]`` BFCL tasks of one block, one rollout each (one infrastructure failure)."""
    rows = []
    for category, n in counts.items():
        for i in range(n):
            t = int(rng.integers(1, 8))
            fed = int(rng.integers(1, t + 2))
            y = int(rng.integers(0, 2)) if fed == t + 1 else 0
            rows.append({"dataset": dataset, "model": model, "method": method,
                         "task_id": f"multi_turn_{category}_{i}", "rollout_id": f"{model}-{method}-{category}-{i}",
                         "T": t, "FED": fed, "Y": y,
                         "meta_json": json.dumps({"bfcl_score_file": meta} if meta and category == "base" else {})})
    rows[-1] |= {"T": None, "FED": None, "Y": 0}
    return rows


def make_episodes(seed: int = 0) -> pl.DataFrame:
    """A block of base only (with its score file's summary), a block over base and miss_func of another
    model, a block over all four categories, and a τ block (no categories)."""
    rng = np.random.default_rng(seed)
    rows = _rows(rng, "m1", "imported", {"base": 8}, meta=SCORE)
    rows += _rows(rng, "m2", "imported", {"base": 8, "miss_func": 6})
    rows += _rows(rng, "m2", "react", {"base": 5, "miss_func": 4, "miss_param": 3, "long_context": 3})
    rows += [r | {"task_id": r["task_id"].replace("multi_turn_base_", "")}
             for r in _rows(rng, "m2", "react", {"base": 6}, dataset="tau_airline")]
    return pl.DataFrame(rows, schema=SCHEMA)


@pytest.fixture(scope="module")
def episodes() -> pl.DataFrame:
    return make_episodes()


@pytest.fixture(scope="module")
def per_category(episodes) -> pl.DataFrame:
    return compute_category_stats(episodes, categories(), StatsSettings(resamples=RESAMPLES, seed=3))


def category_of(task_id: str) -> str:
    return task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]


def g1_of(episodes: pl.DataFrame, seed: int = 3) -> pl.DataFrame:
    """G.1 as the audit computes it over ``episodes``."""
    return table_g1(compute_stats(episodes, StatsSettings(resamples=RESAMPLES, seed=seed)))


def test_the_bfcl_registration_names_its_categories():
    bfcl = categories()["bfcl_v3"]
    assert bfcl["recorded"] == "bfcl_score_file"
    assert set(categories()) == {"bfcl_v3"}  # the other benchmarks name none
    table = compute_category_stats(make_episodes(), categories(), StatsSettings(resamples=10, seed=0))
    assert table["dataset"].unique().to_list() == ["bfcl_v3"]
    assert sorted(table["category"].unique().to_list()) == ["base", "long_context", "miss_func", "miss_param"]


def test_every_bfcl_entry_names_one_of_bfcls_categories(bfcl_data):
    """Scoring quarantines a task the data lacks, so no scored BFCL episode stops the statistics."""
    from prefix_audit.benchmarks.bfcl import CATEGORIES

    ids = pl.DataFrame({"dataset": "bfcl_v3", "task_id": sorted(bfcl_data.entries)})
    named = tasks_by_category(ids, "bfcl_v3", categories()["bfcl_v3"]["pattern"])
    assert sorted(named) == sorted(CATEGORIES)
    assert sum(map(len, named.values())) == len(bfcl_data.entries)


def test_each_category_row_is_g1_over_that_categorys_episodes(episodes, per_category):
    table = table_task_categories(per_category)
    bfcl = episodes.filter(pl.col("dataset") == "bfcl_v3")
    for category in table["category"].unique().to_list():
        expected = g1_of(bfcl.filter(pl.col("task_id").map_elements(category_of, pl.Utf8) == category))
        got = table.filter(pl.col("category") == category).select(expected.columns)
        assert got.equals(expected), category
    # Final success, TER and mean FED are the stats rows of the same computation.
    m2 = table.filter((pl.col("model") == "m2") & (pl.col("method") == "imported") & (pl.col("category") == "miss_func"))
    stats = compute_stats(bfcl.filter(pl.col("task_id").str.starts_with("multi_turn_miss_func")),
                          StatsSettings(resamples=RESAMPLES, seed=3))
    ter = stats.filter((pl.col("model") == "m2") & (pl.col("method") == "imported") & (pl.col("metric") == "ter"))
    assert (m2["ter"].item(), m2["ter_lo"].item(), m2["ter_hi"].item()) == ter.select(
        "estimate", "ci_low", "ci_high").row(0)


def test_a_block_of_one_category_has_its_g1_row(episodes, per_category):
    # The whole run's G.1 (every block and dataset, one draw per task set) holds the same row.
    whole = g1_of(episodes).filter(pl.col("model") == "m1")
    row = table_task_categories(per_category).filter(pl.col("model") == "m1")
    assert row["category"].to_list() == ["base"]
    assert row.select(whole.columns).equals(whole)


def test_a_block_over_two_categories_gives_two_rows(per_category):
    table = table_task_categories(per_category)
    rows = table.filter((pl.col("model") == "m2") & (pl.col("method") == "imported"))
    assert rows["category"].to_list() == ["base", "miss_func"]
    assert rows["tasks"].to_list() == [8, 5]  # miss_func's last entry failed before any action: not in G.1's cohort
    assert rows["infra failures"].to_list() == [0, 1]
    four = table.filter(pl.col("method") == "react")
    assert four["category"].to_list() == ["base", "long_context", "miss_func", "miss_param"]
    assert "tau_airline" not in table["dataset"].to_list()


def test_the_recorded_accuracy_is_the_summary_lines(per_category):
    recorded = per_category.filter(pl.col("metric") == RECORDED_ACCURACY)
    assert recorded.select("model", "category", "estimate", "successes", "n_rollouts", "source").rows() == [
        ("m1", "base", SCORE["accuracy"], SCORE["correct_count"], SCORE["total_count"], SCORE["name"])]
    table = table_task_categories(per_category)
    m1 = table.filter(pl.col("model") == "m1").row(0, named=True)
    assert (m1["recorded_accuracy"], m1["recorded_correct"], m1["recorded_total"]) == (0.625, 5, 8)
    assert m1[RECORDED_COLUMN] == "0.625 (5/8)" and m1["recorded_files"] == SCORE["name"]
    # Not ours: the block's own final success differs from what its score file says.
    assert m1["final_success"] != m1["recorded_accuracy"]
    assert set(table.filter(pl.col("model") == "m2")[RECORDED_COLUMN].to_list()) == {"none recorded"}


def test_two_score_files_of_one_category_are_both_shown(episodes):
    other = SCORE | {"name": "again_score.json", "accuracy": 0.5, "correct_count": 4}
    twice = episodes.with_columns(
        pl.when(pl.col("rollout_id") == "m1-imported-base-0").then(pl.lit(json.dumps({"bfcl_score_file": other})))
        .otherwise(pl.col("meta_json")).alias("meta_json"))
    table = table_task_categories(compute_category_stats(twice, categories(), StatsSettings(resamples=10, seed=0)))
    m1 = table.filter(pl.col("model") == "m1").row(0, named=True)
    assert m1[RECORDED_COLUMN] == "0.625 (5/8) in BFCL_v3_multi_turn_base_score.json; 0.500 (4/8) in again_score.json"
    assert m1["recorded_accuracy"] is None


@pytest.mark.parametrize(("meta", "message"), [
    ({"bfcl_score_file": ["x"]}, "m1/imported rollout m1-imported-base-0: meta bfcl_score_file is no object"),
    ({"bfcl_score_file": SCORE | {"accuracy": "high"}}, "accuracy is no number"),
    ({"bfcl_score_file": SCORE | {"total_count": 8.5}}, "total_count is no integer"),
])
def test_a_malformed_recorded_summary_is_a_located_error(episodes, meta, message):
    bad = episodes.with_columns(pl.when(pl.col("rollout_id") == "m1-imported-base-0").then(pl.lit(json.dumps(meta)))
                                .otherwise(pl.col("meta_json")).alias("meta_json"))
    with pytest.raises(ValueError, match=message):
        compute_category_stats(bad, categories(), StatsSettings(resamples=10, seed=0))


def test_a_task_id_without_a_category_is_left_out_and_named():
    """Valid episodes whose ids are not the benchmark's own (a renumbered log) never stop the statistics:
    the per-category view leaves those tasks out and says so, the rest is computed as before."""
    episodes = pl.DataFrame(_rows(np.random.default_rng(0), "m", "x", {"base": 3, "miss_func": 2}), schema=SCHEMA)
    renamed = episodes.with_columns(pl.col("task_id").str.replace("multi_turn_base_2", "2"))
    table = compute_category_stats(renamed, categories(), StatsSettings(resamples=10, seed=0))
    assert sorted(table["category"].unique().to_list()) == ["base", "miss_func"]
    kept = renamed.filter(pl.col("task_id") != "2")
    assert table.equals(compute_category_stats(kept, categories(), StatsSettings(resamples=10, seed=0)))
    assert uncategorised_tasks(renamed, categories()) == {"bfcl_v3": ["2"]}
    assert uncategorised_tasks(episodes, categories()) == {}
    [line] = uncategorised_lines(renamed, categories())
    assert "1 bfcl_v3 task(s) whose ids name no task category ('2')" in line


def test_outputs_are_byte_identical_and_an_empty_table_keeps_its_schema(episodes, tmp_path):
    path = tmp_path / "episodes.parquet"
    episodes.write_parquet(path)
    outs = [write_category_stats(path, tmp_path / f"c{w}.parquet", categories(),
                                 StatsSettings(resamples=RESAMPLES, seed=3, workers=w)) for w in (1, 2)]
    assert outs[0].read_bytes() == outs[1].read_bytes()
    stats = write_stats(path, tmp_path / "stats.parquet", StatsSettings(resamples=RESAMPLES, seed=3))
    written = write_tables(stats, table_files(tmp_path / "t"), categories_path=outs[0])
    md = (tmp_path / "t" / f"table_{CATEGORY_TABLE}.md").read_text()
    assert "| bfcl_v3 | m2 | imported | miss_func |" in md and "0.625 (5/8)" in md
    assert "recorded_files" not in md

    tau = episodes.filter(pl.col("dataset") == "tau_airline")
    empty = compute_category_stats(tau, categories(), StatsSettings(resamples=10, seed=0))
    assert empty.is_empty() and empty.schema == CATEGORY_STATS_SCHEMA
    empty.write_parquet(tmp_path / "empty.parquet")
    again = write_tables(stats, table_files(tmp_path / "e"), categories_path=tmp_path / "empty.parquet")
    text = {p.name: p.read_text() for p in again}
    assert text[f"table_{CATEGORY_TABLE}.csv"].count("\n") == 1
    assert "No block of a dataset with task categories (BFCL)" in text[f"table_{CATEGORY_TABLE}.md"]
    assert len(written) == len(again) == len(table_files(tmp_path / "e"))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), counts=st.dictionaries(
    st.sampled_from(["base", "miss_func", "miss_param", "long_context"]), st.integers(1, 6), min_size=1))
def test_categories_partition_the_block_property(seed, counts):
    """Metamorphic: per-category rows are G.1 of the category's episodes, and their rollouts add up to
    the block's, whatever the categories and sizes."""
    episodes = pl.DataFrame(_rows(np.random.default_rng(seed), "m", "x", counts), schema=SCHEMA)
    table = table_task_categories(compute_category_stats(episodes, categories(), StatsSettings(resamples=50, seed=seed)))
    assert table["category"].to_list() == sorted(counts)
    assert table["rollouts"].sum() + table["infra failures"].sum() == episodes.height
    for row in table.iter_rows(named=True):
        part = episodes.filter(pl.col("task_id").map_elements(category_of, pl.Utf8) == row["category"])
        expected = table_g1(compute_stats(part, StatsSettings(resamples=50, seed=seed))).row(0, named=True)
        assert {c: row[c] for c in expected} == expected
    if len(counts) == 1:
        whole = table_g1(compute_stats(episodes, StatsSettings(resamples=50, seed=seed)))
        assert table.select(whole.columns).equals(whole)


def test_a_score_files_summary_is_recorded_as_it_says(tmp_path):
    score = tmp_path / "BFCL_v3_multi_turn_base_score.json"
    score.write_text(json.dumps({"accuracy": 0.5, "correct_count": 1, "total_count": 2}) + "\n"
                     + json.dumps({"id": "multi_turn_base_1", "valid": False}) + "\n")
    read = read_score_file(score)
    assert read.provenance() | {"sha256": ""} == {"name": score.name, "sha256": "", "accuracy": 0.5,
                                                  "correct_count": 1, "total_count": 2}
    score.write_text(json.dumps({"accuracy": "50%", "correct_count": 1, "total_count": 2}) + "\n")
    with pytest.raises(DecodeError, match="the summary's accuracy is no number from 0 to 1"):
        read_score_file(score)


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/fixtures/real-logs/bfcl is absent")
def test_real_bfcl_base_and_miss_func_of_one_model(tmp_path):
    """gpt-oss-20b's base (with its score file) and miss_func (without) result files audited together:
    one block, two category rows; base's recorded accuracy is its score file's first line; each row is
    G.1 over the audit's episodes of that category."""
    from conftest import RESOURCES

    logs = [REAL / f"gpt-oss-20b_BFCL_v4_multi_turn_{c}_result.json" for c in ("base", "miss_func")]
    out = tmp_path / "audit"
    assert main(["audit", "--no-figures", *map(str, logs), "-o", str(out), "--resamples", "200", "--seed", "5",
                 "--resources", str(RESOURCES)]) in (0, 1)
    table = table_task_categories(pl.read_parquet(out / "stats" / "categories.parquet"))
    assert (out / "tables" / f"table_{CATEGORY_TABLE}.csv").read_text() == table.write_csv()
    assert table.select("dataset", "category").rows() == [("bfcl_v3", "base"), ("bfcl_v3", "miss_func")]
    header = json.loads((REAL / "gpt-oss-20b_BFCL_v4_multi_turn_base_score.json").read_text().splitlines()[0])
    base = table.row(0, named=True)
    assert (base["recorded_accuracy"], base["recorded_correct"], base["recorded_total"]) == (
        header["accuracy"], header["correct_count"], header["total_count"])
    assert table.row(1, named=True)[RECORDED_COLUMN] == "none recorded"
    # The audit browser shows it between G.1 and F.1, each row linking to its block.
    assert main(["view", str(out), "-o", str(tmp_path / "site")]) == 0
    tables = (tmp_path / "site" / "tables.html").read_text()
    assert tables.index("Table G.1") < tables.index("G.1 per task category") < tables.index("Table F.1")
    assert '<a href="blocks/bfcl_v3/gpt-oss-20b/imported/index.html">0.475 (95/200)</a>' in tables

    episodes = pl.read_parquet(out / "fed" / "episodes.parquet")
    for row in table.iter_rows(named=True):
        part = episodes.filter(pl.col("task_id").map_elements(category_of, pl.Utf8) == row["category"])
        expected = table_g1(compute_stats(part, StatsSettings(resamples=200, seed=5))).row(0, named=True)
        assert {c: row[c] for c in expected} == expected
    # The base entries alone: one category, the row of the audit's G.1 itself.
    base_only = episodes.filter(pl.col("task_id").str.starts_with("multi_turn_base_"))
    one = table_task_categories(compute_category_stats(base_only, categories(), StatsSettings(resamples=200, seed=5)))
    whole = table_g1(compute_stats(base_only, StatsSettings(resamples=200, seed=5)))
    assert one.select(whole.columns).equals(whole)
    assert one["recorded_accuracy"].to_list() == [header["accuracy"]]
