"""Which entries of two audits of the same logs differ in the paper's T, FED, Y or category, and the first
failures by origin of the second.

Usage: python bench/compare_fed.py BEFORE_DIR AFTER_DIR

Both are ``prefix-audit audit … -o DIR`` output folders (their ``fed/episodes.parquet``); entries are matched
on dataset, model, method, task, trial and rollout id. Prints the counts, every entry that differs, and the
second audit's first failures per dataset and origin (where it has attribution).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

KEYS = ["dataset", "model", "method", "task_id", "trial", "rollout_id"]
PAPER = ["T", "FED", "Y", "category"]


def main() -> None:
    before, after = (pl.read_parquet(Path(d) / "fed" / "episodes.parquet") for d in sys.argv[1:3])
    joined = before.select(KEYS + PAPER).join(after.select(KEYS + PAPER), on=KEYS, how="full", suffix="_after",
                                              nulls_equal=True)
    changed = joined.filter(pl.any_horizontal([~pl.col(c).eq_missing(pl.col(f"{c}_after")) for c in PAPER]))
    moved = changed.filter(~pl.col("FED").eq_missing(pl.col("FED_after")))
    other = joined.filter(~pl.col("T").eq_missing(pl.col("T_after")) | ~pl.col("Y").eq_missing(pl.col("Y_after")))
    print(f"entries {before.height} / {after.height}; changed {changed.height}; FED moved {moved.height}; "
          f"T or Y changed {other.height}")
    with pl.Config(tbl_rows=-1, tbl_width_chars=200, fmt_str_lengths=40):
        print(changed.select("dataset", "model", "task_id", "trial", "T", "FED", "FED_after", "category",
                             "category_after"))
        if "origin" in after.columns:
            failed = after.filter(pl.col("T").is_not_null() & (pl.col("FED") <= pl.col("T")))
            print(failed.group_by("dataset", "origin").len().sort("dataset", "origin"))


if __name__ == "__main__":
    main()
