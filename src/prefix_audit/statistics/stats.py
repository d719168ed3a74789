"""Per-block statistics (docs/definitions.md#statistics): estimates, identity checks, intervals as one long table.

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
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl

from prefix_audit.core.io import atomic_write_bytes, frame_parquet_bytes, natural_key, read_parquet
from prefix_audit.statistics.aggregates import RR_SPEC, MetricSpec, TaskAggregates, task_aggregates
from prefix_audit.statistics.bootstrap import one_blas_thread, percentile_bounds, ratio, resampled_sums
from prefix_audit.statistics.intervals import clustered_wilson_interval
from prefix_audit.statistics.metrics import BlockMetrics, FloatArray, block_metrics, check_identities, validate_outcomes

BLOCK_KEYS = ("dataset", "model", "method")
METRICS = ("pec", "depth_support", "eligible_pec", "ter", "auc_pec", "mean_fed", "final_success", "infra_error",
           "rr", "ter_k", "pass_k", "disagree_full", "disagree_y")
PER_DEPTH = ("pec", "depth_support", "eligible_pec")
# Rows whose ``successes`` holds the count behind the estimate (successful, resp. failed, entries).
COUNTED_METRICS = ("final_success", "infra_error")
# Pair rows: method minus versus, within a model and dataset.
PAIR_METRICS = ("pec", "ter", "auc_pec", "final_success")
REQUIRED_COLUMNS = (*BLOCK_KEYS, "task_id", "T", "FED", "Y")
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
TAU_POOL: Mapping[str, tuple[str, ...]] = MappingProxyType({"tau": ("tau_airline", "tau_retail")})
# Display order of the product's methods (pairs run later minus earlier); others follow, sorted.
METHOD_ORDER = ("react", "prompt_planning", "plan_conditioned", "dual_loop")
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


def method_rank(method: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(method), "") if method in METHOD_ORDER else (len(METHOD_ORDER), method)


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


def _row(
    metric: str,
    k: int | None,
    estimate: float | None,
    lo: float | None,
    hi: float | None,
    cohort: tuple[int, int, int | None, int | None],
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


def check_pools(pools: Mapping[str, Sequence[str]], datasets: set[str]) -> None:
    """Raise ValueError on a pool without members or a pool name that is also a dataset."""
    for name, members in pools.items():
        if not members:
            raise ValueError(f"pool {name!r} has no member datasets")
        if name in datasets:
            raise ValueError(f"pool name {name!r} is also a dataset in the episodes")


def pool_members(pools: Mapping[str, Sequence[str]], dataset: str) -> tuple[str, ...]:
    """The datasets a dataset id or pool name stands for."""
    return tuple(pools.get(dataset, (dataset,)))


def check_episodes(episodes: pl.DataFrame) -> None:
    """Raise ValueError if the episodes lack a required column or hold nulls where none may be.

    ``T`` and ``FED`` are null only together, on infrastructure failures (docs/definitions.md#infrastructure-failures).
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes lack required column(s): {', '.join(missing)}")
    for col in (*BLOCK_KEYS, "task_id"):
        nulls = episodes[col].null_count()
        if nulls:
            raise ValueError(f"episodes column {col!r} has {nulls} null value(s)")
    for col in ("T", "FED"):
        if not episodes.schema[col].is_integer():
            raise ValueError(f"episodes column {col!r} must be integer, got {episodes.schema[col]}")
    half = episodes.filter(pl.col("T").is_null() != pl.col("FED").is_null())
    if half.height:
        first = half.row(0, named=True)
        raise ValueError(f"episodes row of {first['dataset']}/{first['model']}/{first['method']} task "
                         f"{first['task_id']!r} has only one of T and FED null (both are null on an "
                         "infrastructure failure, else neither)")


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
        fed = prefix["FED"].to_numpy().astype(np.int64)
        T = prefix["T"].to_numpy().astype(np.int64)
        Y = prefix["Y"].cast(pl.Float64).fill_null(math.nan).to_numpy()
        try:
            m = block_metrics(fed, T, Y, k_max)
        except ValueError as exc:
            raise ValueError(f"block {label}: {exc}") from exc
        violations = check_identities(fed, T, Y, m)
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
    for b, (agg, block_specs) in enumerate(zip(aggregates, specs)):
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


def _pairs_of(blocks: Sequence[_Block], dataset: str) -> list[_Pair]:
    """Every pair of methods of one model in ``dataset``, later minus earlier in method order."""
    by_model: dict[str, list[_Block]] = {}
    for block in blocks:
        if block.key[0] == dataset:
            by_model.setdefault(block.key[1], []).append(block)
    pairs = []
    for model in sorted(by_model):
        ranked = sorted(by_model[model], key=lambda b: method_rank(b.key[2]))
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
                                      resamples, gseed)))
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
    head = dict(zip(BLOCK_KEYS, block.key)) | {"versus": None} | dict(common)
    at = {(s.metric, s.k): start + j for j, s in enumerate(interval_specs)}
    rows = []
    for spec in sorted((*agg.specs, RR_SPEC), key=lambda s: METRICS.index(s.metric)):
        if spec is RR_SPEC:
            s_per_task = agg.columns[spec.num]
            bounds, interval = clustered_wilson_interval(s_per_task, agg.columns[spec.den], confidence)
            lo_rr, hi_rr = bounds if bounds is not None else (None, None)
            rows.append(head | _row("rr", None, agg.point(spec), lo_rr, hi_rr, agg.cohort(spec), interval,
                                    successes=int(s_per_task.sum())))
            continue
        j = at.get((spec.metric, spec.k))
        bounds = (lo[j], hi[j]) if j is not None else (None, None)
        counted = int(agg.columns[spec.num].sum()) if spec.metric in COUNTED_METRICS else None
        rows.append(head | _row(spec.metric, spec.k, block.estimate(spec), *bounds, agg.cohort(spec),
                                "percentile_bootstrap", successes=counted))
    frame = block.frame
    for metric in ACCOUNTING_METRICS:
        if metric in frame.columns:
            with_costs = frame.filter(pl.col(metric).is_not_null())
            mean = float(with_costs[metric].cast(pl.Float64).mean()) if with_costs.height else None
            tasks = with_costs.select(block.unit).n_unique() if with_costs.height else 0
            rows.append(head | _row(metric, None, mean, None, None, (tasks, with_costs.height, None, None), "none"))
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
        bounds = (lo[j], hi[j]) if j is not None else (None, None)
        estimate = a - v if a is not None and v is not None else None
        rows.append(head | _row(f"delta_{spec.metric}", spec.k, estimate, *bounds,
                                (int(inside.sum()), int(n_rollouts), None, None), "paired_percentile_bootstrap"))
    return rows


def sound_only(episodes: pl.DataFrame) -> pl.DataFrame:
    """The episodes of tasks no defect was found in (``task_sound`` true, or null: not audited)."""
    if "task_sound" not in episodes.columns:
        return episodes
    return episodes.filter(pl.col("task_sound").is_null() | pl.col("task_sound"))


def block_frames(episodes: pl.DataFrame,
                 pools: Mapping[str, Sequence[str]]) -> dict[tuple[str, str, str], tuple[pl.DataFrame, tuple[str, ...]]]:
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
    head = dict(zip(BLOCK_KEYS, key)) | {"versus": None} | dict(common)
    failed = frame.filter(pl.col("T").is_not_null() & (pl.col("FED") <= pl.col("T")))
    tasks = failed.select(unit).n_unique() if failed.height else 0
    rows = []
    for origin, metric in zip(ORIGINS, ORIGIN_METRICS):
        count = failed.filter(pl.col("origin") == origin).height
        rows.append(head | _row(metric, None, count / failed.height if failed.height else None, None, None,
                                (tasks, failed.height, None, None), "none", successes=count))
    return rows


def _health_rows(key: tuple[str, str, str], frame: pl.DataFrame, unit: tuple[str, ...], exclude: bool,
                 common: Mapping[str, object]) -> list[dict[str, object]]:
    """A block's :data:`HEALTH_METRICS` rows, counted over its tasks before any exclusion."""
    head = dict(zip(BLOCK_KEYS, key)) | {"versus": None} | dict(common)
    assessed = frame.filter(pl.col("task_sound").is_not_null())
    unsound = frame.filter(pl.col("task_sound").not_())
    n_assessed, n_unsound, n_all = (f.select(unit).n_unique() if f.height else 0 for f in (assessed, unsound, frame))
    rows = [head | _row("unsound_tasks", None, n_unsound / n_assessed if n_assessed else None, None, None,
                        (n_assessed, assessed.height, None, None), "none", successes=n_unsound)]
    if exclude:
        rows.append(head | _row("excluded_tasks", None, n_unsound / n_all if n_all else None, None, None,
                                (n_all, unsound.height, None, None), "none", successes=n_unsound))
    return rows


def compute_stats(
    episodes: pl.DataFrame,
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = None,
    workers: int = 1,
    exclude_unsound: bool = False,
    pairs: bool = True,
    agent: bool = True,
) -> pl.DataFrame:
    """Long table (``STATS_SCHEMA``) of every metric, interval and denominator per block, then
    every within-model method difference per dataset (none with ``pairs`` false).

    ``pools`` maps a pool name to member datasets, e.g. ``TAU_POOL``: every (model, method)
    with rows in a member dataset also gets a block with dataset = pool name over the union
    of the members' rows, its unit (dataset, task_id), so each task weighs the same.
    Accounting columns (``ACCOUNTING_METRICS``), when present, add point-estimate rows (interval
    "none", per episode with accounting) after ``METRICS``.
    Blocks come in sorted key order, metrics in ``METRICS`` order, per-depth rows by k; pair rows
    follow, by dataset, model and method order. ``workers`` threads compute task sets
    concurrently; each has its own seed, so the table does not depend on it.
    Where the episodes carry benchmark health (``task_sound``), each block also gets its
    :data:`HEALTH_METRICS` rows; ``exclude_unsound`` leaves the episodes of unsound tasks out of every
    metric (:func:`sound_only`) and says how many tasks that was. The default keeps every task (the
    paper's protocol).
    Every row above has ``attribution`` all. Where the episodes carry attribution (``origin``,
    ``FED_agent``), each block also gets its :data:`ORIGIN_METRICS` rows, and (with ``agent``) the rows
    of :data:`AGENT_METRICS` recomputed on FED_agent with the same seed, hence the same draws, labelled
    ``attribution`` agent, after all the paper's rows.
    Raises IdentityViolation if any block breaks Propositions 1-3, ValueError on bad input.
    """
    check_episodes(episodes)
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    largest_t = int(episodes["T"].max() or 0) if episodes.height else 0
    if not 1 <= k_max <= max(largest_t + 1, PAPER_K_MAX):
        raise ValueError(f"k_max must be from 1 to {max(largest_t + 1, PAPER_K_MAX)} (the largest T + 1, at least "
                         f"{PAPER_K_MAX}): PEC@k is 0 for every k above the largest T + 1; got {k_max}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    pools = pools or {}
    datasets = set(episodes["dataset"].unique().to_list())
    check_pools(pools, datasets)
    health_rows: list[dict[str, object]] = []
    if "task_sound" in episodes.columns and episodes["task_sound"].is_not_null().any():  # some health was audited
        common = {"resamples": resamples, "seed": seed, "confidence": confidence}
        health_rows = [row for key, (frame, unit) in sorted(block_frames(episodes, pools).items())
                       for row in _health_rows(key, frame, unit, exclude_unsound, common)]
        if exclude_unsound:
            episodes = sound_only(episodes)
    frames = block_frames(episodes, pools)
    # A block all of whose tasks were left out has no metric to stand beside its health rows.
    health_rows = [row for row in health_rows if (row["dataset"], row["model"], row["method"]) in frames]
    attributed = "origin" in episodes.columns and "FED_agent" in episodes.columns
    if attributed:
        common = {"resamples": resamples, "seed": seed, "confidence": confidence}
        health_rows += [row for key, (frame, unit) in sorted(frames.items())
                        for row in _origin_rows(key, frame, unit, common)]

    def prepare(key: tuple[str, str, str]) -> _Block:
        frame, unit = frames[key]
        return _prepare(key, frame, unit, k_max)

    with ThreadPoolExecutor(max_workers=workers) as executor:
        blocks = list(executor.map(prepare, sorted(frames)))

    groups: dict[tuple[str, tuple[str, ...]], tuple[list[_Block], list[_Pair]]] = {}
    for block in blocks:
        groups.setdefault((block.key[0], tuple(block.aggregates.units.tolist())), ([], []))[0].append(block)
    for dataset in sorted({b.key[0] for b in blocks}) if pairs else ():
        for pair in _pairs_of(blocks, dataset):
            a, v = pair.method.aggregates.units, pair.versus.aggregates.units
            shared = tuple(np.intersect1d(a, v).tolist())
            groups.setdefault((dataset, shared), ([], []))[1].append(pair)

    check_working_set(groups, resamples, workers)

    def rows_of(group: tuple[str, tuple[str, ...]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        members, pairs = groups[group]
        return _group_rows(group[0], group[1], members, pairs, resamples=resamples, seed=seed, confidence=confidence)

    with one_blas_thread(), ThreadPoolExecutor(max_workers=workers) as executor:
        results = list(executor.map(rows_of, sorted(groups)))
    block_rows = sorted([*(r for rows, _ in results for r in rows), *health_rows], key=_block_order)
    pair_rows = sorted((r for _, rows in results for r in rows), key=_pair_order)
    table = pl.DataFrame([r | {"attribution": ALL} for r in block_rows + pair_rows], schema=STATS_SCHEMA)
    if not (agent and attributed):
        return table
    # FED replaced by FED_agent; without origins, so the pass computes no second set of origin rows.
    on_agent = compute_stats(episodes.with_columns(pl.col("FED_agent").alias("FED")).drop("origin"),
                             resamples=resamples, seed=seed,
                             k_max=k_max, confidence=confidence, pools=pools, workers=workers, pairs=False, agent=False)
    return pl.concat([table, on_agent.filter(pl.col("metric").is_in(AGENT_METRICS)).with_columns(
        attribution=pl.lit(AGENT))])


PAPER_K_MAX = 4  # PEC@1..4, the paper's tables
# Arrays of one resample draw per metric interval: the drawn sums (numerator and denominator), the
# ratios, the stacked intervals and the percentile pass's copy.
_ARRAYS_PER_INTERVAL = 5


def available_memory() -> int | None:
    """Bytes of memory available to new work (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_working_set(groups: Mapping[Any, tuple[Sequence[_Block], Sequence[_Pair]]], resamples: int,
                      workers: int) -> None:
    """Refuse, before any resampling, a run whose draws would not fit: the largest groups' arrays
    (resamples × intervals × 8 bytes × :data:`_ARRAYS_PER_INTERVAL`), as many at once as
    ``workers``, against half the available memory."""
    sizes = sorted((resamples * 8 * _ARRAYS_PER_INTERVAL
                    * (sum(len(b.aggregates.specs) for b in members) + 2 * len(PAIR_METRICS) * 4 * len(pairs))
                    for members, pairs in groups.values()), reverse=True)
    check_memory(sum(sizes[:max(workers, 1)]), resamples)


def check_memory(need: int, resamples: int) -> None:
    """Refuse a bootstrap whose arrays need more than half the available memory (:func:`available_memory`)."""
    have = available_memory()
    if have is not None and need > have / 2:
        raise ValueError(f"the bootstrap needs about {need / 2**30:.1f} GiB ({resamples} resamples), more than half "
                         f"of the {have / 2**30:.1f} GiB available; use fewer resamples or fewer workers")


def _block_order(row: Mapping[str, object]) -> tuple[object, ...]:
    return (row["dataset"], row["model"], row["method"])


def _pair_order(row: Mapping[str, object]) -> tuple[object, ...]:
    return (row["dataset"], row["model"], method_rank(str(row["versus"])), method_rank(str(row["method"])))


def write_stats(
    episodes_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
    pools: Mapping[str, Sequence[str]] | None = TAU_POOL,
    workers: int = 1,
    exclude_unsound: bool = False,
) -> Path:
    """Compute statistics of an episodes Parquet file; write them to ``out`` atomically.

    Pools default to ``TAU_POOL`` (Table F.1); a pool only adds blocks where members have rows.
    """
    episodes = read_parquet(episodes_path)
    stats = compute_stats(
        episodes, resamples=resamples, seed=seed, k_max=k_max, confidence=confidence, pools=pools,
        workers=workers, exclude_unsound=exclude_unsound,
    )
    return atomic_write_bytes(out, frame_parquet_bytes(stats))


# The per-category view of blocks (datasets whose benchmark names task categories, BFCL's): the stats
# table's rows per category, then the benchmark's own accuracy of each category as its logs recorded it.
RECORDED_ACCURACY = "recorded_accuracy"
CATEGORY_STATS_SCHEMA = pl.Schema({"category": pl.Utf8, **STATS_SCHEMA, "source": pl.Utf8})


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
            head = dict(zip(BLOCK_KEYS, block)) | {"versus": None} | dict(common)
            row = _row(RECORDED_ACCURACY, None, summary.get("accuracy"), None, None,
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


def compute_category_stats(
    episodes: pl.DataFrame,
    categories: Mapping[str, Mapping[str, str | None]],
    *,
    resamples: int,
    seed: int,
    k_max: int = 4,
    confidence: float = 0.95,
    workers: int = 1,
    exclude_unsound: bool = False,
) -> pl.DataFrame:
    """The per-category view (``CATEGORY_STATS_SCHEMA``) of the blocks of every dataset ``categories``
    names (dataset → ``{"pattern", "recorded"}``, a registered ``TaskCategories``' settings).

    Per category (:func:`tasks_by_category`), the block rows of :func:`compute_stats` over the episodes
    of that category's tasks, with the same seed and settings: a task set's draw depends only on the
    seed, the dataset and its tasks, so a block all of whose tasks are of one category gets exactly
    the rows the stats table holds for it. ``k_max`` is capped where a category's rollouts are short
    (PEC@k of higher k is 0). Where ``recorded`` names a meta key, the rows of
    :data:`RECORDED_ACCURACY` follow (:func:`_recorded_rows`): the benchmark's own accuracy, as its
    logs recorded it, never recomputed. Rows by dataset, category, then block; no pair rows.
    """
    check_episodes(episodes)
    common = {"resamples": resamples, "seed": seed, "confidence": confidence}
    frames = [pl.DataFrame(schema=CATEGORY_STATS_SCHEMA)]
    for dataset in sorted(set(categories) & set(episodes["dataset"].unique().to_list())):
        settings = categories[dataset]
        for category, task_ids in tasks_by_category(episodes, dataset, str(settings["pattern"])).items():
            part = episodes.filter((pl.col("dataset") == dataset) & pl.col("task_id").is_in(task_ids))
            longest = int(part["T"].max() or 0)
            stats = compute_stats(part, resamples=resamples, seed=seed, k_max=min(k_max, max(longest + 1, PAPER_K_MAX)),
                                  confidence=confidence, workers=workers, exclude_unsound=exclude_unsound, pairs=False,
                                  agent=False)
            key = settings.get("recorded")
            recorded = _recorded_rows(part, key, common) if key and "meta_json" in part.columns else []
            rows = pl.concat([stats.with_columns(source=pl.lit(None, pl.Utf8)),
                              pl.DataFrame([r | {"attribution": ALL} for r in recorded],
                                           schema={**STATS_SCHEMA, "source": pl.Utf8})])
            frames.append(rows.select(pl.lit(category).alias("category"), pl.all()))
    table = pl.concat(frames)
    return table.sort("dataset", "category", "model", "method", maintain_order=True).select(
        list(CATEGORY_STATS_SCHEMA))


def write_category_stats(
    episodes_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    categories: Mapping[str, Mapping[str, str | None]],
    **settings: Any,
) -> Path:
    """:func:`compute_category_stats` of an episodes Parquet file (``settings`` as it takes them),
    written to ``out`` atomically."""
    table = compute_category_stats(read_parquet(episodes_path), categories, **settings)
    return atomic_write_bytes(out, frame_parquet_bytes(table))
