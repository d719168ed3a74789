"""The `origins` figure family: whose error each first failure is (agent, user, benchmark), per block and
method, as shares with their counts and by first error depth; drawn by `prefix-audit audit` by default."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import polars as pl
import pytest

from prefix_audit.reports.figure_families import FAMILIES, write_figures
from prefix_audit.reports.figures import _origin_counts, failure_origins

SCHEMA = {"dataset": pl.Utf8, "model": pl.Utf8, "method": pl.Utf8, "task_id": pl.Utf8, "rollout_id": pl.Utf8,
          "T": pl.Int32, "FED": pl.Int32, "origin": pl.Utf8}


def _episodes() -> pl.DataFrame:
    # Block d/m, two methods: "a" fails at 1 (user), 2 (agent), 12 (agent, past the cap), once fully
    # executable and once with no action (infrastructure); "b" fails at 3 (benchmark) and once with no origin.
    rows = [("a", 5, 1, "user"), ("a", 4, 2, "agent"), ("a", 14, 12, "agent"), ("a", 3, 4, None),
            ("a", None, None, None), ("b", 6, 3, "benchmark"), ("b", 2, 1, None)]
    return pl.DataFrame([{"dataset": "d", "model": "m", "method": method, "task_id": f"t{i}", "rollout_id": f"r{i}",
                          "T": t, "FED": fed, "origin": origin} for i, (method, t, fed, origin) in enumerate(rows)],
                        schema=SCHEMA)


def test_origin_counts_by_depth_bin():
    block = _episodes().filter((pl.col("method") == "a") & pl.col("T").is_not_null())
    counts, full = _origin_counts(block, cap=10)
    assert full == 1
    assert counts["user"].tolist() == [1] + [0] * 9
    assert counts["agent"].tolist() == [0, 1] + [0] * 7 + [1]  # FED 12 in the 10+ bin
    assert counts["benchmark"].sum() == 0 and counts["unclassified"].sum() == 0
    other, _ = _origin_counts(_episodes().filter(pl.col("method") == "b"), cap=10)
    assert other["benchmark"][2] == 1 and other["unclassified"][0] == 1  # no origin recorded: not dropped


def test_the_family_writes_one_figure_per_block_with_its_index(tmp_path):
    assert FAMILIES["origins"] == ("origins",)
    table = tmp_path / "episodes.parquet"
    episodes = _episodes()
    pl.concat([episodes, episodes.with_columns(model=pl.lit("org/other"))]).write_parquet(table)
    paths = write_figures("origins", table, tmp_path / "origins")
    assert [p.name for p in paths] == ["origins_d_m.pdf", "origins_d_m.png", "origins_d_org-other.pdf",
                                       "origins_d_org-other.png"]
    assert json.loads((tmp_path / "origins" / "index.json").read_text()) == {"figures": [p.name for p in paths]}
    image = mpimg.imread(paths[1])
    assert image.ndim == 3 and image.shape[1] > 300 and image.std() > 0
    assert paths[0].read_bytes().startswith(b"%PDF")


def test_the_labels_carry_the_counts(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    drawn: list[Figure] = []
    monkeypatch.setattr("prefix_audit.reports.figures._save", lambda fig, out, stem: drawn.append(fig) or [])
    failure_origins(_episodes(), tmp_path)
    (fig,) = drawn
    texts = {t.get_text() for f in (fig, *fig.subfigs) for ax in f.axes for t in ax.texts}
    # "unattributed" where some first failure of the block has no origin, for every method alike
    assert " agent 2 · user 1 · benchmark 0 · unattributed 0 of 3 first failures" in texts
    assert " agent 0 · user 0 · benchmark 1 · unattributed 1 of 2 first failures" in texts
    titles = [ax.get_title() for f in fig.subfigs for ax in f.axes if ax.get_title()]
    assert "a\nfully executable: 1 of N = 4; failed: 3\n(and 1 infrastructure failures)" in titles
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["unattributed", "benchmark", "user", "agent"]  # the stacking order, top first


def test_a_table_without_origins_is_refused(tmp_path):
    with pytest.raises(ValueError, match="origin"):
        failure_origins(_episodes().drop("origin"), tmp_path)


@pytest.mark.slow
def test_the_bytes_do_not_depend_on_the_workers(tmp_path):
    table = tmp_path / "episodes.parquet"
    episodes = _episodes()
    pl.concat([episodes, episodes.with_columns(model=pl.lit("n"))]).write_parquet(table)
    one = write_figures("origins", table, tmp_path / "one")
    two = write_figures("origins", table, tmp_path / "two", workers=2)
    assert [p.name for p in one] == [p.name for p in two]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two))


def test_families_drawn_together_are_the_families_drawn_alone(tmp_path):
    from prefix_audit.reports.figure_families import write_families

    table = tmp_path / "episodes.parquet"
    _episodes().with_columns(category=pl.lit("schema")).write_parquet(table)
    together = write_families({f: (table, tmp_path / "a" / f) for f in ("categories", "origins")})
    for family in ("categories", "origins"):
        alone = write_figures(family, table, tmp_path / "b" / family)
        assert [p.name for p in together[family]] == [p.name for p in alone] and alone
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(together[family], alone))
        assert (tmp_path / "a" / family / "index.json").read_bytes() == (tmp_path / "b" / family / "index.json").read_bytes()
    with pytest.raises(ValueError, match="unknown figure family 'heatmaps'"):
        write_families({"heatmaps": (table, tmp_path / "c")})
