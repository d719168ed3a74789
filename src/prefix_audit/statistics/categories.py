"""The per-category view of blocks: the stats table's rows per task category of the datasets whose benchmark
names task categories (BFCL's), then the benchmark's own accuracy of each category as its logs recorded it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from prefix_audit.core.io import atomic_write_bytes, frame_parquet_bytes, natural_key, read_parquet
from prefix_audit.statistics.settings import BLOCK_KEYS, K_MAX, StatsSettings, check_episodes, largest_t
from prefix_audit.statistics.stats import ALL, STATS_SCHEMA, compute_stats, stat_row

RECORDED_ACCURACY = "recorded_accuracy"
CATEGORY_STATS_SCHEMA = pl.Schema({"category": pl.Utf8(), **STATS_SCHEMA, "source": pl.Utf8()})


def tasks_by_category(episodes: pl.DataFrame, dataset: str, pattern: str) -> dict[str, list[str]]:
    """The task ids of ``dataset`` by category, both sorted: the group ``category`` of ``pattern``
    matched in full against each id. An id it does not match is in no category
    (:func:`uncategorised_tasks` names them)."""
    regex = re.compile(pattern)
    out: dict[str, list[str]] = {}
    for task_id in sorted(set(episodes.filter(pl.col("dataset") == dataset)["task_id"].to_list())):
        match = regex.fullmatch(task_id)
        if match is not None and match.group("category"):
            out.setdefault(match.group("category"), []).append(task_id)
    return dict(sorted(out.items()))


def uncategorised_tasks(episodes: pl.DataFrame,
                        categories: Mapping[str, Mapping[str, str | None]]) -> dict[str, list[str]]:
    """Per dataset ``categories`` names, the task ids of ``episodes`` its pattern names no category in
    (naturally sorted; datasets without any left out): the per-category view leaves them out."""
    out = {}
    for dataset in sorted(set(categories) & set(episodes["dataset"].unique().to_list())):
        named = {t for ids in tasks_by_category(episodes, dataset, str(categories[dataset]["pattern"])).values()
                 for t in ids}
        left = sorted(set(episodes.filter(pl.col("dataset") == dataset)["task_id"].to_list()) - named,
                      key=natural_key)
        if left:
            out[dataset] = left
    return out


def uncategorised_lines(episodes: pl.DataFrame, categories: Mapping[str, Mapping[str, str | None]]) -> list[str]:
    """One line per dataset whose tasks the per-category view left out (ids its benchmark's categories do
    not name), with the first few ids."""
    lines = []
    for dataset, ids in uncategorised_tasks(episodes, categories).items():
        shown = ", ".join(repr(t) for t in ids[:5]) + (", ..." if len(ids) > 5 else "")
        lines.append(f"per task category: {len(ids)} {dataset} task(s) whose ids name no task category ({shown}) "
                     f"are left out of categories.parquet and table_task_categories; every other statistic counts "
                     f"them")
    return lines


def _recorded_rows(frame: pl.DataFrame, key: str, common: Mapping[str, object]) -> list[dict[str, object]]:
    """Per block of ``frame`` (one category's episodes), one :data:`RECORDED_ACCURACY` row per distinct
    summary its rollouts' meta records under ``key``: the summary's own accuracy, ``successes`` its
    correct count, ``n_rollouts`` its total and ``source`` the file it was read from."""
    summaries: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in frame.select(*BLOCK_KEYS, "rollout_id", "meta_json").iter_rows(named=True):
        summary = json.loads(r["meta_json"]).get(key)
        if summary is None:
            continue
        block = tuple(r[c] for c in BLOCK_KEYS)
        _check_summary(summary, f"{'/'.join(block)} rollout {r['rollout_id']}: meta {key}")
        summaries.setdefault(block, {})[json.dumps(summary, sort_keys=True)] = summary
    rows = []
    for block in sorted(summaries):
        for _, summary in sorted(summaries[block].items(), key=lambda item: (item[1]["name"], item[0])):
            head = dict(zip(BLOCK_KEYS, block, strict=True)) | {"versus": None} | dict(common)
            row = stat_row(RECORDED_ACCURACY, None, summary.get("accuracy"), None, None,
                       (None, summary.get("total_count"), None, None), "none", successes=summary.get("correct_count"))
            rows.append(head | row | {"source": summary["name"]})
    return rows


def _check_summary(summary: Any, where: str) -> None:
    """ValueError (saying ``where``) unless ``summary`` is an object with a ``name`` and, where given, a
    numeric ``accuracy`` and integer ``correct_count`` and ``total_count``."""
    if not isinstance(summary, dict) or not isinstance(summary.get("name"), str):
        raise ValueError(f"{where} is no object with a file name: {summary!r}"[:300])
    accuracy = summary.get("accuracy")
    if accuracy is not None and (isinstance(accuracy, bool) or not isinstance(accuracy, int | float)):
        raise ValueError(f"{where}: accuracy is no number: {accuracy!r}"[:300])
    for count in ("correct_count", "total_count"):
        value = summary.get(count)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{where}: {count} is no integer: {value!r}"[:300])


def compute_category_stats(episodes: pl.DataFrame, categories: Mapping[str, Mapping[str, str | None]],
                           settings: StatsSettings) -> pl.DataFrame:
    """The per-category view (``CATEGORY_STATS_SCHEMA``) of the blocks of every dataset ``categories``
    names (dataset → ``{"pattern", "recorded"}``, a registered ``TaskCategories``' settings).

    Per category (:func:`tasks_by_category`), the block rows of :func:`compute_stats` over the episodes
    of that category's tasks, with the same settings (no pools): a task set's draw depends only on the
    seed, the dataset and its tasks, so a block all of whose tasks are of one category gets exactly
    the rows the stats table holds for it. ``k_max`` is capped where a category's rollouts are short
    (PEC@k of higher k is 0). Where ``recorded`` names a meta key, the rows of
    :data:`RECORDED_ACCURACY` follow (:func:`_recorded_rows`): the benchmark's own accuracy, as its
    logs recorded it, never recomputed. Rows by dataset, category, then block; no pair rows.
    """
    check_episodes(episodes)
    common = {"resamples": settings.resamples, "seed": settings.seed, "confidence": settings.confidence}
    frames = [pl.DataFrame(schema=CATEGORY_STATS_SCHEMA)]
    for dataset in sorted(set(categories) & set(episodes["dataset"].unique().to_list())):
        named = categories[dataset]
        for category, task_ids in tasks_by_category(episodes, dataset, str(named["pattern"])).items():
            part = episodes.filter((pl.col("dataset") == dataset) & pl.col("task_id").is_in(task_ids))
            longest = largest_t(part)
            capped = replace(settings, k_max=min(settings.k_max, max(longest + 1, K_MAX)), pools={})
            stats = compute_stats(part, capped, pairs=False, agent=False)
            key = named.get("recorded")
            recorded = _recorded_rows(part, key, common) if key and "meta_json" in part.columns else []
            rows = pl.concat([stats.with_columns(source=pl.lit(None, pl.Utf8)),
                              pl.DataFrame([r | {"attribution": ALL} for r in recorded],
                                           schema={**STATS_SCHEMA, "source": pl.Utf8})])
            frames.append(rows.select(pl.lit(category).alias("category"), pl.all()))
    table = pl.concat(frames)
    return table.sort("dataset", "category", "model", "method", maintain_order=True).select(
        list(CATEGORY_STATS_SCHEMA))


def write_category_stats(episodes_path: str | os.PathLike[str], out: str | os.PathLike[str],
                         categories: Mapping[str, Mapping[str, str | None]], settings: StatsSettings) -> Path:
    """:func:`compute_category_stats` of an episodes Parquet file, written to ``out`` atomically."""
    table = compute_category_stats(read_parquet(episodes_path), categories, settings)
    return atomic_write_bytes(out, frame_parquet_bytes(table))
