"""Per-block statistics: point estimates, identity checks and intervals as one long table
(docs/definitions.md#statistics).

A block (dataset × model × method) holds one or more rollouts (trials) per task. Point estimates
are over all rollouts of a metric's cohort; intervals come from a task-clustered percentile
bootstrap (tasks drawn with replacement, each with all its trials). Every block of a dataset over
the same task set shares one draw (common random numbers), so all pairwise method differences
within a model and dataset — the pair rows, ``versus`` set — come from the same replicates; blocks
over different task sets pair on their common tasks with a draw of their own. Each metric is a
ratio of per-task sums (:mod:`prefix_audit.statistics.aggregates`), so one matrix product per task set gives
every replicate of every block.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from prefix_audit.core.io import atomic_write_bytes, frame_parquet_bytes, read_parquet
from prefix_audit.statistics.aggregates import RR_SPEC, MetricSpec, TaskAggregates, task_aggregates
from prefix_audit.statistics.bootstrap import one_blas_thread, percentile_bounds, ratio, resampled_sums
from prefix_audit.statistics.intervals import clustered_wilson_interval
from prefix_audit.statistics.metrics import BlockMetrics, FloatArray, block_metrics, check_identities, validate_outcomes
from prefix_audit.statistics.settings import (
    BLOCK_KEYS,
    StatsSettings,
    check_episodes,
    check_k_max,
    check_memory,
    method_rank,
)

METRICS = ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed", "final_success", "infra_error",
           "rr", "ter_k", "pass_k", "disagree_full", "disagree_y")
PER_DEPTH = ("pec", "depth_support", "eligible_pec")
# Rows whose ``successes`` holds the count behind the estimate (successful, resp. failed, entries).
COUNTED_METRICS = ("final_success", "infra_error")
# Pair rows: method minus versus, within a model and dataset.
PAIR_METRICS = ("pec", "ter", "auc_pec", "final_success")
# Optional accounting columns; when present, each block gets a point-estimate row (the mean per
# episode) per column. COST_METRICS are the costs paired comparisons take differences of.
COST_METRICS = ("agent_tokens", "agent_latency_s", "agent_wall_s")
ACCOUNTING_METRICS = (*COST_METRICS, "agent_calls", "agent_estimated_calls")
# Benchmark health (docs/health.md) per block, where the episodes carry ``task_sound``: the block's unsound tasks
# (``successes``) of those whose health was audited (``n``), and with ``exclude_unsound`` the tasks left out
# (``successes``) of all the block's tasks (``n``). Points, no interval.
HEALTH_METRICS = ("unsound_tasks", "excluded_tasks")
# Attribution (docs/attribution.md): the paper's rows, and the metrics of FED recomputed on FED_agent with
# the same draws; per block, the first failures by origin (``successes`` of ``n_rollouts`` first failures).
ALL = "all"
AGENT = "agent"
AGENT_METRICS = ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed", "rr")
ORIGINS = ("agent", "user", "benchmark")
ORIGIN_METRICS = tuple(f"first_failure_{origin}" for origin in ORIGINS)
_UNIT_SEPARATOR = "\x1f"

STATS_SCHEMA = pl.Schema(
    {
        "dataset": pl.Utf8,
        "model": pl.Utf8,
        "method": pl.Utf8,
        "versus": pl.Utf8,  # pair rows: the method subtracted; null on block rows
        # all: the paper's metrics, on FED; agent: the same metrics on FED_agent, the first failure
        # attributed to the agent (docs/attribution.md)
        "attribution": pl.Utf8,
        "metric": pl.Utf8,
        "k": pl.Int16,
        "estimate": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "n": pl.Int64,  # tasks in the metric's cohort (the resampling unit); pair rows: paired tasks
        "n_rollouts": pl.Int64,  # rollouts in the metric's cohort (pair rows: of both blocks)
        "trials_min": pl.Int64,  # fewest / most rollouts one task contributes to the cohort
        "trials_max": pl.Int64,
        "successes": pl.Int64,  # rr: recovered rollouts; final_success: successes; infra_error: failed entries
        "n_method_only": pl.Int64,  # pair rows: tasks only the method's / only the versus block covers
        "n_versus_only": pl.Int64,
        "interval": pl.Utf8,
        "resamples": pl.Int32,
        "seed": pl.Int64,
        "confidence": pl.Float64,
    }
)


class IdentityViolation(RuntimeError):
    """A block's metrics break one of the identities of Propositions 1-3."""

    def __init__(self, block: tuple[str, str, str], violations: list[str]):
        self.block = block
        self.violations = violations
        super().__init__(f"identity violations in block {'/'.join(block)}: " + "; ".join(violations))


def task_set_seed(seed: int, dataset: str, units: Sequence[str]) -> int:
    """Seed of the one draw shared by every block of ``dataset`` over exactly these task units
    (63-bit, non-negative, stable across processes and platforms)."""
    tasks = hashlib.sha256(_UNIT_SEPARATOR.join(units).encode("utf-8")).hexdigest()
    payload = json.dumps([seed, dataset, tasks], ensure_ascii=False).encode("utf-8")
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "big") >> 1


def cohort_size(row: Mapping[str, object]) -> str:
    """A stats row's cohort as tasks × trials: ``"200"`` with one trial each, ``"200 × 4"``, or for
    unequal trials ``"200 × 1–4 (612)"`` with the rollouts in parentheses."""
    fewest, most = row["trials_min"], row["trials_max"]
    if fewest is None or most == 1:
        return str(row["n"])
    if fewest == most:
        return f"{row['n']} × {most}"
    return f"{row['n']} × {fewest}–{most} ({row['n_rollouts']})"


def _defined(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def stat_row(
    metric: str,
    k: int | None,
    estimate: float | None,
    lo: float | None,
    hi: float | None,
    cohort: tuple[int | None, int | None, int | None, int | None],
    interval: str,
    successes: int | None = None,
) -> dict[str, object]:
    """One output row; an undefined estimate or bound makes the whole interval "none"."""
    estimate, lo, hi = _defined(estimate), _defined(lo), _defined(hi)
    if estimate is None or lo is None or hi is None:
        lo = hi = None
        interval = "none"
    n, n_rollouts, fewest, most = cohort
    return {
        "metric": metric,
        "k": k,
        "estimate": estimate,
        "ci_low": lo,
        "ci_high": hi,
        "n": n,
        "n_rollouts": n_rollouts,
        "trials_min": fewest,
        "trials_max": most,
        "successes": successes,
        "interval": interval,
    }


@dataclass(frozen=True)
class _Block:
    """One block ready for resampling: its task aggregates and its prefix-cohort point metrics."""

    key: tuple[str, str, str]
    unit: tuple[str, ...]
    aggregates: TaskAggregates
    metrics: BlockMetrics | None  # None when no rollout has an observed trajectory
    frame: pl.DataFrame

    def estimate(self, spec: MetricSpec) -> float | None:
        """Prefix metrics from the rollout-level definitions (:func:`block_metrics`), the rest
        from the per-task sums; both are the same ratio over the cohort."""
        if spec.metric in ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed"):
            if self.metrics is None:
                return None
            value = getattr(self.metrics, spec.metric)
            return value[spec.k - 1] if spec.k is not None else value
        return self.aggregates.point(spec)


def _prepare(key: tuple[str, str, str], frame: pl.DataFrame, unit: Sequence[str], k_max: int) -> _Block:
    label = "/".join(key)
    prefix = frame.filter(pl.col("T").is_not_null())
    m = None
    if prefix.height:
        prefix_fed = prefix["FED"].to_numpy().astype(np.int64)
        prefix_T = prefix["T"].to_numpy().astype(np.int64)
        prefix_Y = prefix["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy()
        try:
            m = block_metrics(prefix_fed, prefix_T, prefix_Y, k_max)
        except ValueError as exc:
            raise ValueError(f"block {label}: {exc}") from exc
        violations = check_identities(prefix_fed, prefix_T, prefix_Y, m)
        if violations:
            raise IdentityViolation(key, violations)
    Y = frame["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy()
    try:
        validate_outcomes(Y)
    except ValueError as exc:
        raise ValueError(f"block {label}: {exc}") from exc
    keys = frame.select(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in unit], separator=_UNIT_SEPARATOR))
    units, codes = np.unique(keys.to_series().to_numpy().astype(str), return_inverse=True)
    fed = frame["FED"].cast(pl.Float64).fill_null(math.nan).to_numpy()
    T = frame["T"].cast(pl.Float64).fill_null(math.nan).to_numpy()
    aggregates = task_aggregates(codes.reshape(-1).astype(np.int64), units.size, units, fed, T, Y, k_max)
    return _Block(key, tuple(unit), aggregates, m, frame)


def _replicates(
    aggregates: Sequence[TaskAggregates], specs: Sequence[Sequence[MetricSpec]], resamples: int, seed: int
) -> list[FloatArray]:
    """Per block, the resampled ratios (resamples × its specs) from one task draw shared by all.

    Every block must cover the same units in the same order: their per-task columns are stacked
    side by side and summed under each resample's task counts at once.
    """
    columns: list[FloatArray] = []
    index: dict[tuple[int, str], int] = {}
    for b, (agg, block_specs) in enumerate(zip(aggregates, specs, strict=True)):
        for spec in block_specs:
            for name in (spec.num, spec.den):
                if (b, name) not in index:
                    index[(b, name)] = len(columns)
                    columns.append(agg.columns[name])
    if not columns:
        return [np.empty((resamples, 0)) for _ in aggregates]
    sums = resampled_sums(np.column_stack(columns), resamples, np.random.default_rng(seed))
    out = []
    for b, block_specs in enumerate(specs):
        num = [index[(b, s.num)] for s in block_specs]
        den = [index[(b, s.den)] for s in block_specs]
        out.append(ratio(sums[:, num], sums[:, den]))
    return out


def _interval_specs(block: _Block) -> list[MetricSpec]:
    """The metrics of a block that get a bootstrap interval: every defined one but RR."""
    return [s for s in block.aggregates.specs if block.aggregates.point(s) is not None]


def _pair_specs(specs: Sequence[MetricSpec]) -> list[MetricSpec]:
    return [s for s in specs if s.metric in PAIR_METRICS]


@dataclass(frozen=True)
class _Pair:
    dataset: str
    method: _Block  # the minuend
    versus: _Block


def _pairs_of(blocks: Sequence[_Block], dataset: str, order: Sequence[str]) -> list[_Pair]:
    """Every pair of methods of one model in ``dataset``, later minus earlier in method ``order``."""
    by_model: dict[str, list[_Block]] = {}
    for block in blocks:
        if block.key[0] == dataset:
            by_model.setdefault(block.key[1], []).append(block)
    pairs = []
    for model in sorted(by_model):
        ranked = sorted(by_model[model], key=lambda b: method_rank(b.key[2], order))
        pairs += [_Pair(dataset, later, earlier) for i, earlier in enumerate(ranked) for later in ranked[i + 1:]]
    return pairs


def _group_rows(
    dataset: str,
    units: tuple[str, ...],
    blocks: Sequence[_Block],
    pairs: Sequence[_Pair],
    *,
    resamples: int,
    seed: int,
    confidence: float,
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Block rows of ``blocks`` (all over ``units``) and pair rows of ``pairs`` (both arms over
    ``units`` as given, or restricted to them), from one task draw over ``units``."""
    gseed = task_set_seed(seed, dataset, units)
    # What this draw resamples, by block id: each block of the group whole with every defined
    # metric; each other pair arm restricted to these tasks, with the pair metrics only.
    arms: dict[int, tuple[TaskAggregates, list[MetricSpec]]] = {id(b): (b.aggregates, _interval_specs(b))
                                                                 for b in blocks}
    for p in pairs:
        for b in (p.method, p.versus):
            if id(b) not in arms:
                agg = b.aggregates.restricted(np.isin(b.aggregates.units, np.asarray(units)))
                arms[id(b)] = (agg, [s for s in _pair_specs(agg.specs) if agg.point(s) is not None])
    reps = dict(zip(arms, _replicates([agg for agg, _ in arms.values()], [specs for _, specs in arms.values()],
                                      resamples, gseed), strict=True))
    column = {(bid, (s.metric, s.k)): j for bid, (_, specs) in arms.items() for j, s in enumerate(specs)}

    # Every interval of the group, in column order.
    wanted: list[FloatArray] = []
    width = 0

    def add(replicates: FloatArray) -> int:
        nonlocal width
        wanted.append(replicates)
        width += replicates.shape[1]
        return width - replicates.shape[1]

    block_cols = [(b, add(reps[id(b)])) for b in blocks]
    pair_cols: list[tuple[_Pair, list[MetricSpec], int]] = []
    for p in pairs:
        a, v = id(p.method), id(p.versus)
        both = [s for s in _pair_specs(p.method.aggregates.specs)
                if (a, (s.metric, s.k)) in column and (v, (s.metric, s.k)) in column]
        diffs = [reps[a][:, column[(a, (s.metric, s.k))]] - reps[v][:, column[(v, (s.metric, s.k))]] for s in both]
        pair_cols.append((p, both, add(np.column_stack(diffs) if diffs else np.empty((resamples, 0)))))
    # Column by column, so the pieces are not first copied side by side (the bounds are per column).
    bounds = [percentile_bounds(piece, confidence) for piece in wanted if piece.shape[1]]
    lo, hi = (np.concatenate([b[0] for b in bounds]), np.concatenate([b[1] for b in bounds])) if bounds \
        else (np.empty(0), np.empty(0))

    common = {"resamples": resamples, "seed": gseed, "confidence": confidence}
    rows = [row for b, start in block_cols
            for row in _block_rows(b, arms[id(b)][1], lo, hi, start, common, confidence)]
    pair_rows = [row for p, both, start in pair_cols
                 for row in _pair_rows(p, arms[id(p.method)][0], arms[id(p.versus)][0], both, lo, hi, start, common)]
    return rows, pair_rows


def _block_rows(
    block: _Block,
    interval_specs: Sequence[MetricSpec],
    lo: FloatArray,
    hi: FloatArray,
    start: int,
    common: Mapping[str, object],
    confidence: float,
) -> list[dict[str, object]]:
    agg = block.aggregates
    head = dict(zip(BLOCK_KEYS, block.key, strict=True)) | {"versus": None} | dict(common)
    at = {(s.metric, s.k): start + j for j, s in enumerate(interval_specs)}
    rows = []
    for spec in sorted((*agg.specs, RR_SPEC), key=lambda s: METRICS.index(s.metric)):
        if spec is RR_SPEC:
            s_per_task = agg.columns[spec.num]
            rr_bounds, interval = clustered_wilson_interval(s_per_task, agg.columns[spec.den], confidence)
            lo_rr, hi_rr = rr_bounds if rr_bounds is not None else (None, None)
            rows.append(head | stat_row("rr", None, agg.point(spec), lo_rr, hi_rr, agg.cohort(spec), interval,
                                    successes=int(s_per_task.sum())))
            continue
        j = at.get((spec.metric, spec.k))
        bounds: tuple[float | None, float | None] = (lo[j], hi[j]) if j is not None else (None, None)
        counted = int(agg.columns[spec.num].sum()) if spec.metric in COUNTED_METRICS else None
        rows.append(head | stat_row(spec.metric, spec.k, block.estimate(spec), *bounds, agg.cohort(spec),
                                "percentile_bootstrap", successes=counted))
    frame = block.frame
    for metric in ACCOUNTING_METRICS:
        if metric in frame.columns:
            with_costs = frame.filter(pl.col(metric).is_not_null())
            mean = with_costs[metric].cast(pl.Float64).mean()  # a float, or None where no entry has costs
            tasks = with_costs.select(block.unit).n_unique() if with_costs.height else 0
            rows.append(head | stat_row(metric, None, mean if isinstance(mean, float) else None, None, None,
                                        (tasks, with_costs.height, None, None), "none"))
    return rows


def _pair_rows(
    pair: _Pair,
    method: TaskAggregates,
    versus: TaskAggregates,
    with_intervals: Sequence[MetricSpec],
    lo: FloatArray,
    hi: FloatArray,
    start: int,
    common: Mapping[str, object],
) -> list[dict[str, object]]:
    """Rows of ``method - versus`` over their common tasks (``method``/``versus`` as resampled)."""
    restricted = method is not pair.method.aggregates
    head = {"dataset": pair.dataset, "model": pair.method.key[1], "method": pair.method.key[2],
            "versus": pair.versus.key[2]} | dict(common)
    head |= {"n_method_only": pair.method.aggregates.units.size - method.units.size,
             "n_versus_only": pair.versus.aggregates.units.size - versus.units.size}
    at = {(s.metric, s.k): start + j for j, s in enumerate(with_intervals)}
    rows = []
    for spec in _pair_specs(pair.method.aggregates.specs):
        if restricted:
            a, v = method.point(spec), versus.point(spec)
        else:
            a, v = pair.method.estimate(spec), pair.versus.estimate(spec)
        inside = (method.columns[spec.den] > 0) & (versus.columns[spec.den] > 0)
        n_rollouts = method.columns[spec.count][inside].sum() + versus.columns[spec.count][inside].sum()
        j = at.get((spec.metric, spec.k))
        bounds: tuple[float | None, float | None] = (lo[j], hi[j]) if j is not None else (None, None)
        estimate = a - v if a is not None and v is not None else None
        rows.append(head | stat_row(f"delta_{spec.metric}", spec.k, estimate, *bounds,
                                (int(inside.sum()), int(n_rollouts), None, None), "paired_percentile_bootstrap"))
    return rows


def sound_only(episodes: pl.DataFrame) -> pl.DataFrame:
    """The episodes of tasks no defect was found in (``task_sound`` true, or null: not audited)."""
    if "task_sound" not in episodes.columns:
        return episodes
    return episodes.filter(pl.col("task_sound").is_null() | pl.col("task_sound"))


def block_frames(
    episodes: pl.DataFrame, pools: Mapping[str, Sequence[str]],
) -> dict[tuple[str, str, str], tuple[pl.DataFrame, tuple[str, ...]]]:
    """Every block's episodes and resampling unit: per dataset × model × method (unit: the task), and per
    pool × model × method over its member datasets (unit: dataset and task)."""
    frames: dict[tuple[str, str, str], tuple[pl.DataFrame, tuple[str, ...]]] = {
        key: (frame, ("task_id",))
        for key, frame in episodes.partition_by(list(BLOCK_KEYS), as_dict=True).items()
    }
    for name, members in pools.items():
        pooled = episodes.filter(pl.col("dataset").is_in(list(members)))
        for (model, method), frame in pooled.partition_by(["model", "method"], as_dict=True).items():
            frames[(name, model, method)] = (frame, ("dataset", "task_id"))
    return frames


def paper_rows(stats: pl.DataFrame) -> pl.DataFrame:
    """The paper's rows of a stats table (``attribution`` all), without the agent-attributable ones."""
    return stats.filter(pl.col("attribution") == ALL)


def agent_rows(stats: pl.DataFrame) -> pl.DataFrame:
    """The rows of metrics recomputed on FED_agent, labelled as the paper's (``attribution`` all), so every
    table builder reads them as it reads the paper's."""
    return stats.filter(pl.col("attribution") == AGENT).with_columns(attribution=pl.lit(ALL))


def _origin_rows(key: tuple[str, str, str], frame: pl.DataFrame, unit: tuple[str, ...],
                 common: Mapping[str, object]) -> list[dict[str, object]]:
    """A block's :data:`ORIGIN_METRICS` rows: of its first failures, the share (``successes`` the count)
    attributed to each origin. Points, no interval."""
    head = dict(zip(BLOCK_KEYS, key, strict=True)) | {"versus": None} | dict(common)
    failed = frame.filter(pl.col("T").is_not_null() & (pl.col("FED") <= pl.col("T")))
    tasks = failed.select(unit).n_unique() if failed.height else 0
    rows = []
    for origin, metric in zip(ORIGINS, ORIGIN_METRICS, strict=True):
        count = failed.filter(pl.col("origin") == origin).height
        rows.append(head | stat_row(metric, None, count / failed.height if failed.height else None, None, None,
                                (tasks, failed.height, None, None), "none", successes=count))
    return rows


def _health_rows(key: tuple[str, str, str], frame: pl.DataFrame, unit: tuple[str, ...], exclude: bool,
                 common: Mapping[str, object]) -> list[dict[str, object]]:
    """A block's :data:`HEALTH_METRICS` rows, counted over its tasks before any exclusion."""
    head = dict(zip(BLOCK_KEYS, key, strict=True)) | {"versus": None} | dict(common)
    assessed = frame.filter(pl.col("task_sound").is_not_null())
    unsound = frame.filter(pl.col("task_sound").not_())
    n_assessed, n_unsound, n_all = (f.select(unit).n_unique() if f.height else 0 for f in (assessed, unsound, frame))
    rows = [head | stat_row("unsound_tasks", None, n_unsound / n_assessed if n_assessed else None, None, None,
                        (n_assessed, assessed.height, None, None), "none", successes=n_unsound)]
    if exclude:
        rows.append(head | stat_row("excluded_tasks", None, n_unsound / n_all if n_all else None, None, None,
                                (n_all, unsound.height, None, None), "none", successes=n_unsound))
    return rows


def compute_stats(episodes: pl.DataFrame, settings: StatsSettings, *, pairs: bool = True,
                  agent: bool = True) -> pl.DataFrame:
    """Long table (``STATS_SCHEMA``) of every metric, interval and denominator per block, then
    every within-model method difference per dataset (none with ``pairs`` false).

    Every (model, method) with rows in a member dataset of one of ``settings.pools`` also gets a block
    with dataset = the pool's name over the union of the members' rows, its unit (dataset, task_id),
    so each task weighs the same.
    Accounting columns (``ACCOUNTING_METRICS``), when present, add point-estimate rows (interval
    "none", per episode with accounting) after ``METRICS``.
    Blocks come in sorted key order, metrics in ``METRICS`` order, per-depth rows by k; pair rows
    follow, by dataset, model and ``settings.methods`` order. ``settings.workers`` threads compute task
    sets concurrently; each has its own seed, so the table does not depend on it.
    Where the episodes carry benchmark health (``task_sound``), each block also gets its
    :data:`HEALTH_METRICS` rows; ``settings.exclude_unsound`` leaves the episodes of unsound tasks out of
    every metric (:func:`sound_only`) and says how many tasks that was. The default keeps every task (the
    paper's protocol).
    Every row above has ``attribution`` all. Where the episodes carry attribution (``origin``,
    ``FED_agent``), each block also gets its :data:`ORIGIN_METRICS` rows, and (with ``agent``) the rows
    of :data:`AGENT_METRICS` recomputed on FED_agent with the same seed, hence the same draws, labelled
    ``attribution`` agent, after all the paper's rows.
    Raises IdentityViolation if any block breaks Propositions 1-3, ValueError on bad input.
    """
    check_episodes(episodes)
    check_k_max(settings.k_max, episodes)
    settings.check_pools(set(episodes["dataset"].unique().to_list()))
    common = {"resamples": settings.resamples, "seed": settings.seed, "confidence": settings.confidence}
    health_rows: list[dict[str, object]] = []
    if "task_sound" in episodes.columns and episodes["task_sound"].is_not_null().any():  # some health was audited
        health_rows = [row for key, (frame, unit) in sorted(block_frames(episodes, settings.pools).items())
                       for row in _health_rows(key, frame, unit, settings.exclude_unsound, common)]
        if settings.exclude_unsound:
            episodes = sound_only(episodes)
    frames = block_frames(episodes, settings.pools)
    # A block all of whose tasks were left out has no metric to stand beside its health rows.
    health_rows = [row for row in health_rows if (row["dataset"], row["model"], row["method"]) in frames]
    attributed = "origin" in episodes.columns and "FED_agent" in episodes.columns
    if attributed:
        health_rows += [row for key, (frame, unit) in sorted(frames.items())
                        for row in _origin_rows(key, frame, unit, common)]

    def prepare(key: tuple[str, str, str]) -> _Block:
        frame, unit = frames[key]
        return _prepare(key, frame, unit, settings.k_max)

    with ThreadPoolExecutor(max_workers=settings.workers) as executor:
        blocks = list(executor.map(prepare, sorted(frames)))

    groups: dict[tuple[str, tuple[str, ...]], tuple[list[_Block], list[_Pair]]] = {}
    for block in blocks:
        groups.setdefault((block.key[0], tuple(block.aggregates.units.tolist())), ([], []))[0].append(block)
    for dataset in sorted({b.key[0] for b in blocks}) if pairs else ():
        for pair in _pairs_of(blocks, dataset, settings.methods):
            a, v = pair.method.aggregates.units, pair.versus.aggregates.units
            shared = tuple(np.intersect1d(a, v).tolist())
            groups.setdefault((dataset, shared), ([], []))[1].append(pair)

    check_working_set(groups, settings.resamples, settings.workers)

    def rows_of(group: tuple[str, tuple[str, ...]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        members, pairs = groups[group]
        return _group_rows(group[0], group[1], members, pairs, resamples=settings.resamples, seed=settings.seed,
                           confidence=settings.confidence)

    with one_blas_thread(), ThreadPoolExecutor(max_workers=settings.workers) as executor:
        results = list(executor.map(rows_of, sorted(groups)))
    block_rows = sorted([*(r for rows, _ in results for r in rows), *health_rows], key=_block_order)
    pair_rows = sorted((r for _, rows in results for r in rows),
                       key=lambda row: (row["dataset"], row["model"], settings.method_rank(str(row["versus"])),
                                        settings.method_rank(str(row["method"]))))
    table = pl.DataFrame([r | {"attribution": ALL} for r in block_rows + pair_rows], schema=STATS_SCHEMA)
    if not (agent and attributed):
        return table
    # FED replaced by FED_agent; without origins, so the pass computes no second set of origin rows.
    on_agent = compute_stats(episodes.with_columns(pl.col("FED_agent").alias("FED")).drop("origin"),
                             replace(settings, exclude_unsound=False), pairs=False, agent=False)
    return pl.concat([table, on_agent.filter(pl.col("metric").is_in(AGENT_METRICS)).with_columns(
        attribution=pl.lit(AGENT))])


# Arrays of one resample draw per metric interval: the drawn sums (numerator and denominator), the
# ratios, the stacked intervals and the percentile pass's copy.
_ARRAYS_PER_INTERVAL = 5


def check_working_set(groups: Mapping[Any, tuple[Sequence[_Block], Sequence[_Pair]]], resamples: int,
                      workers: int) -> None:
    """Refuse, before any resampling, a run whose draws would not fit: the largest groups' arrays
    (resamples × intervals × 8 bytes × :data:`_ARRAYS_PER_INTERVAL`), as many at once as
    ``workers``, against half the available memory."""
    sizes = sorted((resamples * 8 * _ARRAYS_PER_INTERVAL
                    * (sum(len(b.aggregates.specs) for b in members) + 2 * len(PAIR_METRICS) * 4 * len(pairs))
                    for members, pairs in groups.values()), reverse=True)
    check_memory(sum(sizes[:max(workers, 1)]), resamples)


def _block_order(row: Mapping[str, object]) -> tuple[object, ...]:
    return (row["dataset"], row["model"], row["method"])


def write_stats(episodes_path: str | os.PathLike[str], out: str | os.PathLike[str], settings: StatsSettings) -> Path:
    """:func:`compute_stats` of an episodes Parquet file, written to ``out`` atomically."""
    return atomic_write_bytes(out, frame_parquet_bytes(compute_stats(read_parquet(episodes_path), settings)))
