"""Health findings from audits of agents (``prefix-audit tasks --audits DIR...``): tasks no audited block
solved, and tasks whose failing rollouts mostly fail first on the same call and predicate.

An audit folder is what ``prefix-audit audit -o DIR`` or the workflow writes: its FED table
``fed/episodes.parquet`` and the per-action tables ``scored/<dataset>/<model>/<method>/actions.parquet``
(for the call at each rollout's FED). Only agents count: the reference and mutation blocks (sources
``reference``, ``mutation``) are left out. A block is a model × method; an episode counts for the
audited release when the FED table names that release, or names none (a FED table written before
releases were recorded) and the audited release is the dataset's default.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from prefix_audit.core.health import Finding
from prefix_audit.core.io import natural_key, read_parquet

NOT_AGENTS = ("reference", "mutation")  # rollout sources that are no agent
MIN_BLOCKS_UNSOLVED = 2  # unsolved_by_all: at least this many blocks tried the task
MIN_BLOCKS_SAME = 3  # same_first_failure: failing rollouts of at least this many blocks
SAME_SHARE = 0.8  # ... at least this share of them on the same call and predicate


def _episodes_path(folder: Path) -> Path:
    path = folder / "fed" / "episodes.parquet" if folder.is_dir() else folder
    if not path.is_file():
        raise ValueError(f"--audits {folder}: no fed/episodes.parquet (give an `audit -o` folder or a workflow "
                         f"results folder)")
    return path


def _first_failures(folder: Path, dataset: str, episodes: pl.DataFrame) -> pl.DataFrame:
    """``episodes`` with ``call``: the call at each failing rollout's FED, as the per-action tables wrote it
    (null where the audit has no per-action table for the block)."""
    actions = sorted((folder / "scored" / dataset).glob("**/actions.parquet")) if folder.is_dir() else []
    keys = ["dataset", "model", "method", "rollout_id"]
    if not actions:
        return episodes.with_columns(pl.lit(None, pl.Utf8).alias("call"))
    at_fed = (pl.scan_parquet(actions).select(*keys, "j", "call")
              .join(episodes.lazy().select(*keys, "FED"), on=keys)
              .filter(pl.col("j") == pl.col("FED")).select(*keys, "call").collect())
    return episodes.join(at_fed, on=keys, how="left")


def read_audits(folders: Sequence[str | Path], dataset: str, release: str, default_release: bool) -> pl.DataFrame:
    """The agents' episodes of ``dataset`` on ``release`` in the audit folders, with the call at FED."""
    frames = []
    for folder in map(Path, folders):
        episodes = read_parquet(_episodes_path(folder))
        episodes = episodes.filter((pl.col("dataset") == dataset) & ~pl.col("source").is_in(list(NOT_AGENTS)))
        if "release" in episodes.columns:
            episodes = episodes.filter((pl.col("release") == release)
                                       | (pl.col("release").is_null() & pl.lit(default_release)))
        elif not default_release:
            episodes = episodes.clear()
        frames.append(_first_failures(folder, dataset, episodes.select(
            "dataset", "model", "method", "task_id", "rollout_id", "T", "FED", "Y", "category", "failure_code",
            "failure_detail")))
    return pl.concat(frames) if frames else pl.DataFrame()


def _block(row: dict) -> str:
    return f"{row['model']}/{row['method']}"


def audit_findings(episodes: pl.DataFrame) -> dict[str, list[Finding]]:
    """Per task id: ``unsolved_by_all`` and ``same_first_failure`` (see the module docstring)."""
    out: dict[str, list[Finding]] = {}
    if episodes.is_empty():
        return out
    for (task_id,), frame in sorted(episodes.partition_by("task_id", as_dict=True).items(),
                                    key=lambda kv: natural_key(kv[0][0])):
        rows = frame.sort("model", "method", "rollout_id").to_dicts()
        judged = [r for r in rows if r["Y"] is not None]
        blocks = sorted({_block(r) for r in judged})
        if len(blocks) >= MIN_BLOCKS_UNSOLVED and not any(r["Y"] == 1 for r in judged):
            out.setdefault(task_id, []).append(Finding(
                "unsolved_by_all", f"no block of {len(blocks)} solved it ({len(judged)} rollouts with a verdict, none "
                                   f"Y = 1): {', '.join(blocks)}"))
        failing = [r for r in rows if r["FED"] is not None and r["T"] is not None and r["FED"] <= r["T"]]
        if len({_block(r) for r in failing}) < MIN_BLOCKS_SAME:
            continue
        groups: dict[tuple, list[dict]] = {}
        for r in failing:
            groups.setdefault((r["call"] or r["failure_detail"], r["failure_code"]), []).append(r)
        (call, code), same = max(groups.items(), key=lambda kv: len(kv[1]))  # ties: the first met, in block order
        same_blocks = sorted({_block(r) for r in same})
        if len(same) >= SAME_SHARE * len(failing) and len(same_blocks) >= MIN_BLOCKS_SAME:
            first = same[0]
            out.setdefault(task_id, []).append(Finding(
                "same_first_failure",
                f"{len(same)} of {len(failing)} failing rollouts in {len({_block(r) for r in failing})} blocks first "
                f"fail on {call} with {first['category']} ({code}: {first['failure_detail']}); blocks: "
                f"{', '.join(same_blocks)}"))
    return out
