"""Figures: files per block, decodable PNG, byte-identical rewrites, empty input, planning note."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import numpy as np
import polars as pl
import pytest

from prefix_audit.reports.figure_families import write_figures
from prefix_audit.reports.figures import (
    CATEGORIES,
    _category_counts,
    failure_categories_by_depth,
    pec_curves,
    planning_note,
    safe_name,
)
from prefix_audit.statistics.intervals import hoeffding_sample_size
from prefix_audit.statistics.settings import StatsSettings
from prefix_audit.statistics.stats import STATS_SCHEMA, compute_stats

EPISODE_SCHEMA = {
    "dataset": pl.Utf8, "model": pl.Utf8, "method": pl.Utf8, "task_id": pl.Utf8,
    "rollout_id": pl.Utf8, "T": pl.Int32, "FED": pl.Int32, "Y": pl.Int8, "category": pl.Utf8,
}


def synthetic_episodes(n_tasks: int = 24, seed: int = 7) -> pl.DataFrame:
    """Two models (one with a name that needs sanitising) × two methods; T up to 13 so FED reaches 10+."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("m-small", "org/model x"):
        for method in ("react", "plan"):
            for t in range(n_tasks):
                T = int(rng.integers(1, 14))
                fed = int(rng.integers(1, T + 2))  # T + 1 means fully executable
                category = None if fed == T + 1 else CATEGORIES[int(rng.integers(len(CATEGORIES)))]
                rows.append({
                    "dataset": "synth", "model": model, "method": method, "task_id": f"t{t}",
                    "rollout_id": f"{model}-{method}-{t}", "T": T, "FED": fed,
                    "Y": int(rng.integers(0, 2)), "category": category,
                })
    return pl.DataFrame(rows, schema=EPISODE_SCHEMA)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    episodes = synthetic_episodes()
    stats = compute_stats(episodes, StatsSettings(resamples=200, seed=1, k_max=4))
    d = tmp_path_factory.mktemp("inputs")
    episodes.write_parquet(d / "episodes.parquet")
    stats.write_parquet(d / "stats.parquet")
    return d / "stats.parquet", d / "episodes.parquet"


def write_both(inputs, out, workers=1):
    """Both families, each from its own table, into out/<family>."""
    stats_path, episodes_path = inputs
    return (write_figures("curves", stats_path, out / "curves", workers=workers)
            + write_figures("categories", episodes_path, out / "categories", workers=workers))


@pytest.mark.parametrize("family, kinds", [("curves", ("pec", "depth")), ("categories", ("categories",))])
def test_each_family_is_written_and_indexed(inputs, tmp_path, family, kinds):
    out = tmp_path / family
    paths = write_figures(family, inputs[0] if family == "curves" else inputs[1], out)
    stems = {f"{kind}_synth_{model}" for kind in kinds for model in ("m-small", "org-model-x")}
    expected = sorted(out / f"{stem}.{ext}" for stem in stems for ext in ("png", "pdf"))
    assert paths == expected
    index = json.loads((out / "index.json").read_text())
    assert index["figures"] == sorted(p.name for p in expected)
    if family == "curves":
        assert index["planning"] == "planning.txt"
        assert "N = 24" in (out / "planning.txt").read_text()
    else:
        assert "planning" not in index and not (out / "planning.txt").exists()
    for path in paths:
        if path.suffix == ".png":
            image = mpimg.imread(path)
            assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
            assert image.std() > 0  # something was drawn
        else:
            assert path.read_bytes().startswith(b"%PDF")
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporaries behind


@pytest.mark.slow
def test_rewrite_is_byte_identical(inputs, tmp_path):
    first = write_both(inputs, tmp_path / "a")
    before = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    write_both(inputs, tmp_path / "a")  # over the existing files
    second = write_both(inputs, tmp_path / "b", workers=2)  # into a fresh directory, two processes
    assert [p.relative_to(tmp_path / "a") for p in first] == [p.relative_to(tmp_path / "b") for p in second]
    for name, data in before.items():
        assert (tmp_path / "a" / name).read_bytes() == data, name
        assert (tmp_path / "b" / name).read_bytes() == data, name


def test_unknown_family_is_rejected(inputs, tmp_path):
    with pytest.raises(ValueError, match="unknown figure family 'heatmaps'"):
        write_figures("heatmaps", inputs[0], tmp_path)


def test_empty_inputs_give_an_empty_index(tmp_path):
    stats_path, episodes_path = tmp_path / "stats.parquet", tmp_path / "episodes.parquet"
    pl.DataFrame(schema=STATS_SCHEMA).write_parquet(stats_path)
    pl.DataFrame(schema=EPISODE_SCHEMA).write_parquet(episodes_path)
    assert write_both((stats_path, episodes_path), tmp_path) == []
    for family in ("curves", "categories"):
        assert json.loads((tmp_path / family / "index.json").read_text())["figures"] == []
    assert "N = 0" in (tmp_path / "curves" / "planning.txt").read_text()


def test_undefined_eligible_pec_does_not_break_plotting(tmp_path):
    # Every rollout has T = 1: eligible PEC at k >= 2 is undefined (no rollout reached depth k).
    episodes = pl.DataFrame(
        [{"dataset": "d", "model": "m", "method": "x", "task_id": f"t{i}", "rollout_id": f"r{i}",
          "T": 1, "FED": 1 + i % 2, "Y": 1, "category": None if i % 2 else "schema"} for i in range(6)],
        schema=EPISODE_SCHEMA,
    )
    stats = compute_stats(episodes, StatsSettings(resamples=50, seed=0))
    assert stats.filter(pl.col("metric") == "eligible_pec")["estimate"].null_count() > 0
    stats_path, episodes_path = tmp_path / "s.parquet", tmp_path / "e.parquet"
    stats.write_parquet(stats_path)
    episodes.write_parquet(episodes_path)
    assert len(write_both((stats_path, episodes_path), tmp_path)) == 6


def test_category_counts_cap_deep_failures_into_the_last_bin():
    block = pl.DataFrame(
        {"T": [12, 20, 3, 2, 5], "FED": [10, 15, 2, 3, 1],
         "category": ["schema", "dependency", "information", None, None]},
        schema={"T": pl.Int32, "FED": pl.Int32, "category": pl.Utf8},
    )
    counts, full = _category_counts(block, cap=10)
    assert full == 1  # FED = T + 1 only for the rollout with T = 2
    assert counts["schema"][9] == 1 and counts["dependency"][9] == 1
    assert counts["information"][1] == 1
    assert counts["unclassified"][0] == 1  # a failure without a category is not dropped
    assert sum(int(c.sum()) for c in counts.values()) + full == block.height


def test_names_are_sanitised_and_collisions_rejected(inputs, tmp_path):
    assert safe_name("org/model x") == "org-model-x"
    assert safe_name("../..") == "unnamed"
    stats = pl.read_parquet(inputs[0])
    clash = stats.filter(pl.col("model") == "m-small").with_columns(model=pl.lit("m small"))
    stats_path = tmp_path / "clash.parquet"
    pl.concat([stats, clash]).write_parquet(stats_path)
    with pytest.raises(ValueError, match="same figure name"):
        write_figures("curves", stats_path, tmp_path / "f")


def test_single_functions_write_png_and_pdf(inputs, tmp_path):
    stats, episodes = pl.read_parquet(inputs[0]), pl.read_parquet(inputs[1])
    assert [p.name for p in pec_curves(stats.filter(pl.col("model") == "m-small"), tmp_path)] == [
        "pec_synth_m-small.png", "pec_synth_m-small.pdf"]
    with pytest.raises(ValueError, match="FED"):
        failure_categories_by_depth(episodes.drop("FED"), tmp_path)


def test_planning_note_uses_hoeffding():
    note = planning_note(200, epsilon=0.05)
    assert f"needs N >= {hoeffding_sample_size(0.05)}" in note
    assert "N = 200" in note
    assert "(vacuous)" in planning_note(10, epsilon=0.05)


def test_infrastructure_failures_are_counted_not_drawn(tmp_path):
    episodes = pl.DataFrame(
        {"dataset": ["d"] * 4, "model": ["m"] * 4, "method": ["imported"] * 4, "T": [3, 2, None, None],
         "FED": [2, 3, None, None], "category": ["schema", None, None, None]},
        schema={"dataset": pl.Utf8, "model": pl.Utf8, "method": pl.Utf8, "T": pl.Int32, "FED": pl.Int32,
                "category": pl.Utf8},
    )
    path = tmp_path / "e.parquet"
    episodes.write_parquet(path)
    paths = write_figures("categories", path, tmp_path / "categories")
    assert sorted(p.name for p in paths) == ["categories_d_m.pdf", "categories_d_m.png"]
    assert "categories_d_m.png" in (tmp_path / "categories" / "index.json").read_text()
