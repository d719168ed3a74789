"""Per-task aggregates of a block: every metric as a ratio of two per-task sums (docs/definitions.md#repeated-trials).

A block holds one or more rollouts (trials) of each task. Every metric the statistics report is
``Σ_tasks num / Σ_tasks den`` over per-task sums, so a task-clustered bootstrap replicate of every
metric of every block over the same tasks is ``(w @ num) / (w @ den)`` for one vector ``w`` of how
often each task was drawn. Cohorts differ per metric: the prefix metrics count rollouts with an
observed trajectory (``T``/``FED`` known), final success the rollouts whose ``Y`` is known —
infrastructure-failure rows (``T``/``FED`` null, docs/definitions.md#infrastructure-failures) are in the
second and not the first; ``infra_error`` is their share of all the block's entries.

pass^k and TER^k use τ-bench's unbiased estimator per task, ``C(c, k) / C(n, k)`` (c successes,
resp. fully executable trials, among n), averaged over the tasks of the cohort, for k = 1 up to
the fewest trials any task of the cohort has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from prefix_audit.statistics.metrics import FloatArray, IntArray


@dataclass(frozen=True)
class MetricSpec:
    """One reported metric: ``num / den`` summed over tasks; ``count`` sums to its rollouts."""

    metric: str
    k: int | None
    num: str
    den: str
    count: str


@dataclass(frozen=True)
class TaskAggregates:
    """Per-task sums of one block, tasks in ``units`` order (sorted unit keys)."""

    units: npt.NDArray[np.str_]
    columns: dict[str, FloatArray]
    specs: tuple[MetricSpec, ...]

    def restricted(self, keep: npt.NDArray[np.bool_]) -> TaskAggregates:
        """The same block on a subset of its tasks (``keep`` a mask over ``units``)."""
        return TaskAggregates(self.units[keep], {k: v[keep] for k, v in self.columns.items()}, self.specs)

    def point(self, spec: MetricSpec) -> float | None:
        den = float(self.columns[spec.den].sum())
        return float(self.columns[spec.num].sum()) / den if den > 0 else None

    def cohort(self, spec: MetricSpec) -> tuple[int, int, int | None, int | None]:
        """``(tasks, rollouts, fewest, most)`` of a metric's cohort: tasks with a positive
        denominator, their rollouts, and the fewest and most rollouts one of them contributes."""
        inside = self.columns[spec.den] > 0
        counts = self.columns[spec.count][inside]
        if not counts.size:
            return 0, 0, None, None
        return int(inside.sum()), int(counts.sum()), int(counts.min()), int(counts.max())


def unbiased_all_k(c: FloatArray, n: FloatArray, k: int) -> FloatArray:
    """``C(c, k) / C(n, k)`` per task (0 where c < k), as a product that never forms a factorial."""
    out = np.ones_like(c)
    for j in range(k):
        out *= np.clip(c - j, 0.0, None) / (n - j)
    return out


def prefix_specs(k_max: int) -> list[MetricSpec]:
    ks = range(1, k_max + 1)
    return [
        *(MetricSpec("pec", k, f"exec_{k}", "rollouts", "rollouts") for k in ks),
        *(MetricSpec("depth_support", k, f"reach_{k}", "rollouts", "rollouts") for k in ks),
        *(MetricSpec("eligible_pec", k, f"exec_{k}", f"reach_{k}", f"reach_{k}") for k in ks),
        MetricSpec("ter", None, "full", "rollouts", "rollouts"),
        MetricSpec("auc_pec", None, "area", "rollouts", "rollouts"),
        MetricSpec("mean_fed", None, "fed", "rollouts", "rollouts"),
        MetricSpec("final_success", None, "y_success", "y_known", "y_known"),
        MetricSpec("infra_error", None, "infra", "entries", "entries"),
    ]


RR_SPEC = MetricSpec("rr", None, "rr_successes", "rr_eligible", "rr_eligible")


def task_aggregates(
    codes: IntArray,
    n_tasks: int,
    units: npt.NDArray[np.str_],
    fed: FloatArray,
    T: FloatArray,
    Y: FloatArray,
    k_max: int,
) -> TaskAggregates:
    """Aggregates of one block from per-rollout arrays.

    ``codes`` maps each rollout to its task (0..n_tasks-1, in ``units`` order); ``fed`` and ``T``
    are NaN on infrastructure-failure rows, ``Y`` NaN where unknown. Values are assumed valid
    (see :func:`prefix_audit.statistics.metrics.validate_block`).
    """
    def per_task(weights: npt.ArrayLike) -> FloatArray:
        # numpy's stubs type bincount's counts as ints, also where float weights make them floats
        return np.bincount(codes, weights=np.asarray(weights, dtype=np.float64),  # type: ignore[return-value]
                           minlength=n_tasks)

    prefix = ~np.isnan(T)
    fed0, t1 = np.where(prefix, fed, 0.0), np.where(prefix, T, 1.0)
    known = ~np.isnan(Y)
    success = known & (np.nan_to_num(Y) == 1.0)
    failed = prefix & (fed0 <= t1)
    cols: dict[str, FloatArray] = {"rollouts": per_task(prefix)}
    for k in range(1, k_max + 1):
        cols[f"exec_{k}"] = per_task(prefix & (fed0 > k))
        cols[f"reach_{k}"] = per_task(prefix & (t1 >= k))
    cols["full"] = per_task(prefix & (fed0 == t1 + 1))
    cols["area"] = per_task(np.where(prefix, (fed0 - 1.0) / t1, 0.0))
    cols["fed"] = per_task(fed0)
    cols["entries"] = per_task(np.ones_like(T))
    cols["infra"] = per_task(~prefix)
    cols["y_known"] = per_task(known)
    cols["y_success"] = per_task(success)
    cols["rr_eligible"] = per_task(failed & known)
    cols["rr_successes"] = per_task(failed & success)
    specs = prefix_specs(k_max)

    def all_k(metric: str, hits: FloatArray, trials: str) -> None:
        """``metric`` at k = 1..fewest trials: the chance that k trials drawn from a task all hit."""
        n = cols[trials]
        inside = n > 0
        cols[f"{metric}_tasks"] = inside.astype(np.float64)
        fewest = int(n[inside].min()) if inside.any() else 0
        for k in range(1, fewest + 1):
            cols[f"{metric}_{k}"] = np.where(inside, unbiased_all_k(hits, np.maximum(n, float(k)), k), 0.0)
            specs.append(MetricSpec(metric, k, f"{metric}_{k}", f"{metric}_tasks", trials))

    all_k("ter_k", cols["full"], "rollouts")
    all_k("pass_k", cols["y_success"], "y_known")
    # The share of tasks with two or more trials whose trials do not all agree.
    for metric, hits, trials in (("disagree_full", cols["full"], cols["rollouts"]),
                                 ("disagree_y", cols["y_success"], cols["y_known"])):
        several = trials >= 2
        cols[f"{metric}_tasks"] = several.astype(np.float64)
        cols[f"{metric}_rollouts"] = np.where(several, trials, 0.0)
        cols[metric] = (several & (hits > 0) & (hits < trials)).astype(np.float64)
        specs.append(MetricSpec(metric, None, metric, f"{metric}_tasks", f"{metric}_rollouts"))
    return TaskAggregates(units, cols, tuple(specs))
