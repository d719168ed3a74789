"""The paper's tables of the statistics: G.1 and G.1 per task category, F.1, F.2, F.3, every pair of methods and
within-task consistency, each a frame of display (text) and numeric columns built from the long stats table
(:mod:`prefix_audit.statistics.stats`) or the paired table (:mod:`prefix_audit.statistics.paired`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from prefix_audit.core.health import CODES
from prefix_audit.statistics.categories import RECORDED_ACCURACY
from prefix_audit.statistics.paired import INTERVAL_METRICS
from prefix_audit.statistics.settings import BLOCK_KEYS, K_MAX, method_rank
from prefix_audit.statistics.stats import (
    ACCOUNTING_METRICS,
    COST_METRICS,
    HEALTH_METRICS,
    ORIGIN_METRICS,
    cohort_size,
)

from .table_render import MISSING, fmt_ci, interval_schema, interval_text, interval_values

# A table row being built: cells of every column type, some read back to format others.
_Row = dict[str, Any]

_SIZE_SCHEMA: dict[str, pl.DataType] = {"N": pl.Utf8(), "tasks": pl.Int64(), "rollouts": pl.Int64(),
                                        "infra failures": pl.Int64()}


def _size(r: Mapping[str, Any], infra: Mapping[str, Any] | None) -> _Row:
    """The prefix cohort of a block (``r`` one of its prefix-metric rows) and its infrastructure
    failures (entries outside that cohort: no observed action, docs/definitions.md#infrastructure-failures)."""
    return {"N": cohort_size(r), "tasks": r["n"], "rollouts": r["n_rollouts"],
            "infra failures": infra["successes"] if infra is not None else 0}


def _infra_rows(stats: pl.DataFrame) -> dict[tuple[str, ...], dict]:
    """Each block's ``infra_error`` row (its count is in ``successes``)."""
    return {key: metrics["infra_error"] for key, metrics in _estimates(stats).items() if "infra_error" in metrics}


def health_cells(stats: pl.DataFrame, episodes: pl.DataFrame | None = None,
                 pools: Mapping[str, Sequence[str]] | None = None) -> dict[tuple[str, ...], str]:
    """Per block with benchmark health (its ``unsound_tasks`` row): how many of its tasks are unsound —
    ``"3 of 200"``, ``"left out 3 of 200"`` where the statistics excluded them, ``"none of 200"``, ``"not
    audited"`` — and, from the FED table ``episodes``, why (tasks per defect code)."""
    out = {}
    for key, metrics in _estimates(stats.filter(pl.col("metric").is_in(list(HEALTH_METRICS)))).items():
        unsound, excluded = metrics.get("unsound_tasks"), metrics.get("excluded_tasks")
        if unsound is None:
            continue
        if not unsound["n"]:
            out[key] = "not audited"
            continue
        count = unsound["successes"]
        text = f"{count or 'none'} of {unsound['n']}"
        if excluded is not None:
            text = f"left out {count} of {excluded['n']}" if count else f"none left out of {excluded['n']}"
        why = _unsound_codes(episodes, key, pools or {}) if count and episodes is not None else ""
        out[key] = f"{text} ({why})" if why else text
    return out


def _unsound_codes(episodes: pl.DataFrame, key: tuple[str, ...], pools: Mapping[str, Sequence[str]]) -> str:
    """A block's unsound tasks per defect code: ``"gold_fails 2, passes_doing_nothing 1"``."""
    if "task_sound" not in episodes.columns:
        return ""
    dataset, model, method = key
    rows = episodes.filter(pl.col("dataset").is_in(list(pools.get(dataset, (dataset,)))) & (pl.col("model") == model)
                           & (pl.col("method") == method) & pl.col("task_sound").not_())
    tasks = rows.unique(["dataset", "task_id"]).select("task_defects").to_series().to_list()
    counts = {c: sum(c in codes for codes in tasks) for c in CODES}
    return ", ".join(f"{c} {n}" for c, n in counts.items() if n)


HEALTH_COLUMN = "unsound tasks"
ORIGIN_COLUMN = "first failures: agent · user · benchmark"


def origin_cells(stats: pl.DataFrame) -> dict[tuple[str, ...], str]:
    """Per block with attribution (its :data:`ORIGIN_METRICS` rows), its first failures by origin:
    ``"40 · 16 · 0 of 56"``."""
    out = {}
    for key, metrics in _estimates(stats.filter(pl.col("metric").is_in(list(ORIGIN_METRICS)))).items():
        if all(metric in metrics for metric in ORIGIN_METRICS):
            rows = [metrics[metric] for metric in ORIGIN_METRICS]
            out[key] = " · ".join(str(r["successes"]) for r in rows) + f" of {rows[0]['n_rollouts']}"
    return out


def with_origins(table: pl.DataFrame, stats: pl.DataFrame, dataset: str | None = None) -> pl.DataFrame:
    """``table`` (G.1's or F.1's layout) with :data:`ORIGIN_COLUMN` after its block size: first failures by
    origin of each row's block (``dataset`` fixes the dataset of a table without that column)."""
    cells = origin_cells(stats)
    keys = [(dataset or r["dataset"], r["model"], r["method"]) for r in table.iter_rows(named=True)]
    at = table.columns.index("infra failures") + 1
    return table.insert_column(at, pl.Series(ORIGIN_COLUMN, [cells.get(k, MISSING) for k in keys], pl.Utf8))


def health_note(stats: pl.DataFrame) -> str:
    """What the tables' unsound-tasks column means, when some block has one."""
    metrics = set(stats["metric"].to_list())
    if "unsound_tasks" not in metrics:
        return ""
    kept = "excluded_tasks" not in metrics
    return (" Unsound tasks: those benchmark health found a defect in (docs/health.md), "
            + ("kept in every metric, as in the paper's protocol (--exclude-unsound leaves them out)."
               if kept else "left out of every metric (--exclude-unsound); tasks with no audited health stay in."))


def table_g1(stats: pl.DataFrame, k_max: int = K_MAX,
             health: Mapping[tuple[str, ...], str] | None = None) -> pl.DataFrame:
    """Table G.1: PEC@1..k_max with CIs, one row per dataset x model x method block.

    Display columns ``PEC@k`` hold ``"0.873 [0.825, 0.915]"``, ``N`` the block as tasks × trials;
    the numeric ``pec_k``, ``pec_k_lo``, ``pec_k_hi``, ``tasks`` and ``rollouts`` columns are kept for CSV.
    ``health`` (:func:`health_cells`) adds the column of unsound tasks where some block has one.
    """
    ks = range(1, k_max + 1)
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | _SIZE_SCHEMA
    if health:
        schema[HEALTH_COLUMN] = pl.Utf8()
    schema |= {f"PEC@{k}": pl.Utf8() for k in ks}
    for k in ks:
        schema |= interval_schema(f"pec_{k}")

    blocks: dict[tuple[str, ...], _Row] = {}
    infra = _infra_rows(stats)
    pec = blocks_only(stats).filter((pl.col("metric") == "pec") & pl.col("k").is_between(1, k_max))
    for r in pec.iter_rows(named=True):
        key = tuple(r[key] for key in BLOCK_KEYS)
        cells = blocks.setdefault(key, _size(r, infra.get(key)))
        cells |= interval_values(f"pec_{r['k']}", r)
    rows = []
    for key in sorted(blocks):
        row: _Row = dict(zip(BLOCK_KEYS, key, strict=True)) | blocks[key]
        if health:
            row[HEALTH_COLUMN] = health.get(key, "not audited")
        for k in ks:
            row[f"PEC@{k}"] = fmt_ci(row.get(f"pec_{k}"), row.get(f"pec_{k}_lo"), row.get(f"pec_{k}_hi"))
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


CATEGORY_METRICS = (("final success", "final_success"), ("TER", "ter"), ("mean FED", "mean_fed"))
RECORDED_COLUMN = "recorded accuracy"


def table_task_categories(categories: pl.DataFrame, k_max: int = K_MAX) -> pl.DataFrame:
    """G.1 per task category, beside G.1: one row per block and category of the per-category statistics
    (:func:`prefix_audit.statistics.categories.compute_category_stats`) — the category's G.1 row
    (:func:`table_g1` of its rows), then final success, TER and mean FED with their intervals, and beside
    final success the benchmark's own accuracy of the category as its logs recorded it (BFCL: the score
    file's first line, ``"0.475 (95/200)"``; ``"none recorded"``); where benchmark health was audited, the
    category's unsound tasks (their reasons are G.1's). The numeric columns are kept for CSV
    (``recorded_accuracy`` where one summary was recorded; every summary's file in ``recorded_files``).
    """
    g1_schema = table_g1(categories.clear().drop("category", "source"), k_max).schema
    pec = {c: dt for c, dt in g1_schema.items() if c not in BLOCK_KEYS and c not in _SIZE_SCHEMA}
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | {"category": pl.Utf8()} | _SIZE_SCHEMA
    audited = (categories["metric"] == "unsound_tasks").any()
    if audited:
        schema[HEALTH_COLUMN] = pl.Utf8()
    schema |= {CATEGORY_METRICS[0][0]: pl.Utf8(), RECORDED_COLUMN: pl.Utf8()}
    schema |= {title: pl.Utf8() for title, _ in CATEGORY_METRICS[1:]}
    schema |= {c: dt for c, dt in pec.items() if dt == pl.Utf8}
    for _, m in CATEGORY_METRICS:
        schema |= interval_schema(m)
    schema |= {"recorded_accuracy": pl.Float64(), "recorded_correct": pl.Int64(), "recorded_total": pl.Int64(),
               "recorded_files": pl.Utf8()}
    schema |= {c: dt for c, dt in pec.items() if dt != pl.Utf8}

    rows = []
    for (category,), part in categories.partition_by("category", as_dict=True).items():
        stats = part.drop("category", "source")
        metrics = _estimates(stats)
        recorded: dict[tuple[str, ...], list[dict]] = {}
        for r in part.filter(pl.col("metric") == RECORDED_ACCURACY).iter_rows(named=True):
            recorded.setdefault(tuple(r[key] for key in BLOCK_KEYS), []).append(r)
        # How many of the category's tasks are unsound; why is G.1's (over the block's tasks).
        for g1 in table_g1(stats, k_max, health=health_cells(stats) if audited else None).iter_rows(named=True):
            key = tuple(g1[key] for key in BLOCK_KEYS)
            row = g1 | {"category": category}
            for title, m in CATEGORY_METRICS:
                row |= interval_values(m, metrics[key][m]) | {title: interval_text(metrics[key][m])}
            rows.append(row | _recorded_cells(recorded.get(key, [])))
    rows.sort(key=lambda row: (*(row[key] for key in BLOCK_KEYS), row["category"]))  # G.1's order
    return pl.DataFrame(rows, schema=schema)


def _recorded_cells(summaries: Sequence[Mapping[str, Any]]) -> _Row:
    """The recorded-accuracy cells of a block's category: each summary its logs recorded, as recorded."""
    def text(r: Mapping[str, Any]) -> str:
        counts = f" ({r['successes']}/{r['n_rollouts']})" if r["n_rollouts"] is not None else ""
        return (MISSING if r["estimate"] is None else f"{r['estimate']:.3f}") + counts

    if not summaries:
        return {RECORDED_COLUMN: "none recorded"}
    one = summaries[0] if len(summaries) == 1 else None
    shown = text(one) if one is not None else "; ".join(f"{text(r)} in {r['source']}" for r in summaries)
    return {RECORDED_COLUMN: shown, "recorded_files": "; ".join(r["source"] for r in summaries)} | (
        {} if one is None else {"recorded_accuracy": one["estimate"], "recorded_correct": one["successes"],
                                "recorded_total": one["n_rollouts"]})


def blocks_only(stats: pl.DataFrame) -> pl.DataFrame:
    """The block rows of a stats table (pair rows, which have ``versus`` set, left out)."""
    return stats.filter(pl.col("versus").is_null()) if "versus" in stats.columns else stats


def _by_block(rows: pl.DataFrame, field: str, dataset: str | None) -> dict[tuple[str, ...], dict[Any, dict]]:
    """``rows`` (block rows only) by block key, then by ``field``; optionally of one dataset."""
    rows = blocks_only(rows)
    if dataset is not None:
        rows = rows.filter(pl.col("dataset") == dataset)
    out: dict[tuple[str, ...], dict[Any, dict]] = {}
    for r in rows.iter_rows(named=True):
        out.setdefault(tuple(r[key] for key in BLOCK_KEYS), {})[r[field]] = r
    return out


def _estimates(stats: pl.DataFrame, dataset: str | None = None) -> dict[tuple[str, ...], dict[str, dict]]:
    """Scalar (k-less) block rows by block key, then by metric."""
    return _by_block(stats.filter(pl.col("k").is_null()), "metric", dataset)


F1_METRICS = (
    ("TER", "ter"), ("mean FED", "mean_fed"), ("AUC-PEC", "auc_pec"), ("final success", "final_success")
)
F3_METRICS = (("ΔTER", "delta_ter"), ("ΔAUC-PEC", "delta_auc_pec"), ("Δfinal success", "delta_final_success"))
# Dual-Loop's relative change in F.2 against these methods: tokens and client-observed latency.
F2_BASELINES = ("react", "plan_conditioned")
F2_RELATIVE = ("agent_tokens", "agent_latency_s")
F3_COSTS = (("Δtokens", "agent_tokens", "{:+,.0f}"), ("Δlatency", "agent_latency_s", "{:+.2f} s"))


def _all_k(stats: pl.DataFrame, metric: str, dataset: str | None = None) -> dict[tuple[str, ...], dict[int, dict]]:
    """pass^k / TER^k rows by block key, then k."""
    return _by_block(stats.filter(pl.col("metric") == metric), "k", dataset)


def _repeated_columns(by_k: Mapping[tuple[str, ...], Mapping[int, dict]]) -> list[int]:
    """k = 1..K for the largest K any block reaches, when one has two or more trials per task."""
    most = max((max(ks) for ks in by_k.values() if ks), default=1)
    return list(range(1, most + 1)) if most >= 2 else []


ALL_K_METRICS = (("pass^", "pass_k"), ("TER^", "ter_k"))


def _all_k_schema(ks: Sequence[int]) -> dict[str, pl.DataType]:
    schema: dict[str, pl.DataType] = {}
    for title, metric in ALL_K_METRICS:
        schema |= {f"{title}{k}": pl.Utf8() for k in ks}
        for k in ks:
            schema |= interval_schema(f"{metric}_{k}")
    return schema


def _all_k_cells(by_k: Mapping[str, Mapping[tuple[str, ...], Mapping[int, dict]]], key: tuple[str, ...],
                 ks: Sequence[int]) -> _Row:
    row: _Row = {}
    for title, metric in ALL_K_METRICS:
        rows = by_k[metric].get(key, {})
        for k in ks:
            r = rows.get(k)
            if r is None:  # fewer trials than k in some task of this block
                row[f"{title}{k}"] = MISSING
                continue
            row |= interval_values(f"{metric}_{k}", r) | {f"{title}{k}": interval_text(r)}
    return row


def table_f1(stats: pl.DataFrame, pool: str, methods: Sequence[str] = (),
             health: Mapping[tuple[str, ...], str] | None = None) -> pl.DataFrame:
    """Table F.1: TER, mean FED, AUC-PEC, final success with CIs and RR (s/n) of a pooled dataset;
    with repeated trials, pass^k and TER^k for k = 1..the most trials a block has in every task.

    One row per model x method (in ``methods`` order, then the others by name) of the blocks with
    dataset = ``pool``; numeric columns kept for CSV.
    RR's interval is Wilson's (one eligible rollout per task) or Wilson at the design-effect
    sample size (see :func:`prefix_audit.statistics.intervals.clustered_wilson_interval`).
    """
    blocks = _estimates(stats, pool)
    by_k = {metric: _all_k(stats, metric, pool) for _, metric in ALL_K_METRICS}
    ks = _repeated_columns(by_k["pass_k"])
    schema: dict[str, pl.DataType] = {"model": pl.Utf8(), "method": pl.Utf8()} | _SIZE_SCHEMA
    if health:
        schema[HEALTH_COLUMN] = pl.Utf8()
    schema |= {title: pl.Utf8() for title, _ in F1_METRICS} | {"RR": pl.Utf8()}
    for _, m in F1_METRICS:
        schema |= interval_schema(m)
    schema |= {"final_success_n": pl.Int64(), "rr_s": pl.Int64(), "rr_n": pl.Int64()}
    schema |= interval_schema("rr") | {"rr_interval": pl.Utf8()}
    schema |= _all_k_schema(ks)

    rows = []
    for key in sorted(blocks, key=lambda k: (k[1], method_rank(k[2], methods))):
        metrics = blocks[key]
        row: _Row = {"model": key[1], "method": key[2], **_size(metrics["ter"], metrics.get("infra_error"))}
        if health:
            row[HEALTH_COLUMN] = health.get(key, "not audited")
        for title, m in F1_METRICS:
            row |= interval_values(m, metrics[m]) | {title: interval_text(metrics[m])}
        success = metrics["final_success"]
        row["final_success_n"] = success["n_rollouts"]
        if success["n_rollouts"] != row["rollouts"]:
            row["final success"] = f"{row['final success']} (n = {success['n_rollouts']})"
        rr = metrics["rr"]
        row |= {"rr_s": rr["successes"], "rr_n": rr["n_rollouts"], "rr_interval": rr["interval"]}
        row |= interval_values("rr", rr)
        if rr["estimate"] is None:
            row["RR"] = f"{rr['successes']}/{rr['n_rollouts']} (undefined)"
        else:
            row["RR"] = f"{rr['successes']}/{rr['n_rollouts']} = {interval_text(rr)}"
        rows.append(row | _all_k_cells(by_k, key, ks))
    return pl.DataFrame(rows, schema=schema)


def _fmt_tokens(x: float | None) -> str:
    return MISSING if x is None else f"{x / 1000:.2f}k"


def _fmt_latency(x: float | None) -> str:
    return MISSING if x is None else f"{x:.2f} s"


def _fmt_rel(x: float | None) -> str:
    return MISSING if x is None else f"{x + 0.0:+.1%}"


def _relative(new: float | None, base: float | None) -> float | None:
    return None if new is None or not base else new / base - 1.0


def table_f2(stats: pl.DataFrame, methods: Sequence[str] = ()) -> pl.DataFrame:
    """Table F.2: per episode, mean agent tokens / mean cumulative agent latency (successful
    attempts: the client-observed latency) / mean wall time of the agent calls (failed attempts and
    the waits between them included), by dataset x model.

    One column per method (``methods`` first, then any other method with accounting rows)
    holding ``"12.35k / 45.60 s / 47.10 s (164/164)"``: the means over episodes with accounting
    and that count over all episodes of the block ("n/a" for a method without a block or without
    accounting), followed by ``"; 12% est."`` where some calls' tokens were estimated locally
    (the provider reported no usage); then Dual-Loop's relative change vs ReAct and vs
    Plan-Conditioned (tokens / latency). Only dataset x model pairs with accounting rows appear.
    """
    blocks = _estimates(stats.filter(pl.col("metric").is_in(["ter", "infra_error", *ACCOUNTING_METRICS])))
    costed = {key for key, metrics in blocks.items() if any(m in metrics for m in COST_METRICS)}
    methods = (*methods, *sorted({key[2] for key in costed} - set(methods)))
    schema: dict[str, pl.DataType] = {"dataset": pl.Utf8(), "model": pl.Utf8()}
    schema |= {m: pl.Utf8() for m in methods}
    schema |= {f"dual_loop vs {b}": pl.Utf8() for b in F2_BASELINES}
    for m in methods:
        schema[f"{m}_N"] = pl.Int64()
        for c in COST_METRICS:
            schema |= {f"{m}_{c}": pl.Float64(), f"{m}_{c}_n": pl.Int64()}
        schema[f"{m}_estimated_share"] = pl.Float64()
    for b in F2_BASELINES:
        schema |= {f"dual_loop_vs_{b}_{c}": pl.Float64() for c in F2_RELATIVE}

    rows = []
    for dataset, model in sorted({key[:2] for key in costed}):
        row: _Row = {"dataset": dataset, "model": model}
        for m in methods:
            metrics = blocks.get((dataset, model, m))
            if metrics is None:
                row[m] = MISSING
                continue
            # Every entry of the block, infrastructure failures included (they have no accounting).
            n_all = (metrics.get("infra_error") or metrics["ter"])["n_rollouts"]
            row[f"{m}_N"] = n_all
            est = {c: metrics[c]["estimate"] if c in metrics else None for c in COST_METRICS}
            den = {c: metrics[c]["n_rollouts"] if c in metrics else 0 for c in COST_METRICS}
            for c in COST_METRICS:
                row |= {f"{m}_{c}": est[c], f"{m}_{c}_n": den[c]}
            tokens, latency = den["agent_tokens"], den["agent_latency_s"]
            counts = (f"{tokens}/{n_all}" if tokens == latency
                      else f"tokens {tokens}/{n_all}, latency {latency}/{n_all}")
            cost = " / ".join((_fmt_tokens(est["agent_tokens"]), _fmt_latency(est["agent_latency_s"]),
                               _fmt_latency(est["agent_wall_s"])))
            share = _estimated_share(metrics)
            row[f"{m}_estimated_share"] = share
            row[m] = f"{cost} ({counts})" + (f"; {share:.0%} est." if share else "")
        for b in F2_BASELINES:
            rel = {c: _relative(row.get(f"dual_loop_{c}"), row.get(f"{b}_{c}")) for c in F2_RELATIVE}
            row |= {f"dual_loop_vs_{b}_{c}": rel[c] for c in F2_RELATIVE}
            row[f"dual_loop vs {b}"] = " / ".join(_fmt_rel(rel[c]) for c in F2_RELATIVE)
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def _estimated_share(metrics: Mapping[str, Mapping[str, Any]]) -> float | None:
    """Share of a block's agent calls whose tokens were estimated: a ratio of the per-episode means
    (over the same episodes, so of the sums)."""
    calls, estimated = metrics.get("agent_calls"), metrics.get("agent_estimated_calls")
    if not calls or not estimated or not calls["estimate"] or estimated["estimate"] is None:
        return None
    return estimated["estimate"] / calls["estimate"]


def table_f3(paired: pl.DataFrame) -> pl.DataFrame:
    """Table F.3: paired differences (condition - baseline) per pair label and dataset, in the
    paired table's order.

    ΔTER, ΔAUC-PEC and Δfinal success with paired percentile-bootstrap CIs; Δ mean agent tokens
    and Δ mean latency as points with their relative change; paired and unpaired task counts.
    """
    schema: dict[str, pl.DataType] = {
        "label": pl.Utf8(), "dataset": pl.Utf8(), "condition": pl.Utf8(), "baseline": pl.Utf8(),
        "pairs": pl.Int64(), "pairing": pl.Utf8(), "unpaired": pl.Utf8(),
        "ΔTER": pl.Utf8(), "ΔAUC-PEC": pl.Utf8(), "Δfinal success": pl.Utf8(),
        "Δtokens": pl.Utf8(), "Δlatency": pl.Utf8(),
        "n_condition_only": pl.Int64(), "n_baseline_only": pl.Int64(),
    }
    for m in INTERVAL_METRICS:
        schema |= interval_schema(m) | {f"{m}_n": pl.Int64()}
    for c in COST_METRICS:
        schema |= {f"delta_{c}": pl.Float64(), f"delta_{c}_n": pl.Int64(), f"rel_{c}": pl.Float64()}

    keys = paired.select("label", "dataset").unique(maintain_order=True).iter_rows()
    rows = []
    for label, dataset in keys:
        rows_of_pair = paired.filter((pl.col("label") == label) & (pl.col("dataset") == dataset))
        metrics = {r["metric"]: r for r in rows_of_pair.iter_rows(named=True)}
        first = next(iter(metrics.values()))
        row: _Row = {
            "label": label,
            "dataset": first["dataset"],
            "condition": f"{first['condition_model']}/{first['condition_method']}",
            "baseline": f"{first['baseline_model']}/{first['baseline_method']}",
            "pairs": first["n_pairs"],
            "pairing": first.get("pairing") or "trial",
            "unpaired": (
                f"{first['n_condition_only']} condition-only, {first['n_baseline_only']} baseline-only"
            ),
            "n_condition_only": first["n_condition_only"],
            "n_baseline_only": first["n_baseline_only"],
        }
        for m in INTERVAL_METRICS:
            row |= interval_values(m, metrics[m]) | {f"{m}_n": metrics[m]["n"]}
        for title, m in F3_METRICS:
            row[title] = fmt_ci(row[m], row[f"{m}_lo"], row[f"{m}_hi"], signed=True)
        if row["delta_final_success_n"] != row["pairs"]:
            row["Δfinal success"] = f"{row['Δfinal success']} (n = {row['delta_final_success_n']})"
        for c in COST_METRICS:
            delta, rel = metrics[f"delta_{c}"], metrics[f"rel_{c}"]
            row |= {f"delta_{c}": delta["estimate"], f"delta_{c}_n": delta["n"], f"rel_{c}": rel["estimate"]}
        for title, c, spec in F3_COSTS:
            mean_delta = row[f"delta_{c}"]
            text = (MISSING if mean_delta is None
                    else f"{spec.format(mean_delta + 0.0)} ({_fmt_rel(row[f'rel_{c}'])})")
            if mean_delta is not None and row[f"delta_{c}_n"] != row["pairs"]:
                text += f" (n = {row[f'delta_{c}_n']})"
            row[title] = text
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


PAIR_COLUMNS = (("ΔPEC@", "delta_pec"), ("ΔTER", "delta_ter"), ("ΔAUC-PEC", "delta_auc_pec"),
                ("Δfinal success", "delta_final_success"))


def table_pairs(stats: pl.DataFrame, k_max: int = K_MAX) -> pl.DataFrame:
    """Every within-model method difference per dataset (method − versus) with paired percentile
    intervals from the draw the two blocks share; ``tasks`` paired, and the tasks only one side has."""
    pairs = stats.filter(pl.col("versus").is_not_null()) if "versus" in stats.columns else stats.clear()
    titles: list[tuple[str, str, int | None]] = [(f"{t}{k}", m, k) for t, m in PAIR_COLUMNS[:1]
                                                 for k in range(1, k_max + 1)]
    titles += [(t, m, None) for t, m in PAIR_COLUMNS[1:]]
    schema: dict[str, pl.DataType] = {"dataset": pl.Utf8(), "model": pl.Utf8(), "method": pl.Utf8(),
                                      "versus": pl.Utf8(), "tasks": pl.Int64(), "unpaired": pl.Utf8()}
    schema |= {title: pl.Utf8() for title, _, _ in titles}
    for _, m, k in titles:
        schema |= interval_schema(m if k is None else f"{m}_{k}")
    rows: dict[tuple[str, ...], _Row] = {}
    for r in pairs.iter_rows(named=True):
        key = (r["dataset"], r["model"], r["method"], r["versus"])
        row = rows.setdefault(key, dict(zip(("dataset", "model", "method", "versus"), key, strict=True)))
        if r["metric"] == "delta_ter":
            row["tasks"] = r["n"]
            row["unpaired"] = (f"{r['n_method_only']} {r['method']} only, {r['n_versus_only']} {r['versus']} only"
                               if r["n_method_only"] or r["n_versus_only"] else "none")
        row |= interval_values(r["metric"] if r["k"] is None else f"{r['metric']}_{r['k']}", r)
    out = []
    for row in rows.values():
        for title, m, k in titles:
            name = m if k is None else f"{m}_{k}"
            row[title] = fmt_ci(row.get(name), row.get(f"{name}_lo"), row.get(f"{name}_hi"), signed=True)
        out.append(row)
    return pl.DataFrame(out, schema=schema)


CONSISTENCY_METRICS = (("TER disagree", "disagree_full"), ("Y disagree", "disagree_y"))


def table_consistency(stats: pl.DataFrame, methods: Sequence[str] = ()) -> pl.DataFrame:
    """Within-task consistency of blocks with repeated trials: the share of tasks (with two or more
    trials) whose trials disagree on full executability and on Y, then pass^k and TER^k; blocks by
    dataset, model and ``methods`` order."""
    blocks = {key: m for key, m in _estimates(stats).items() if (m["ter"]["trials_max"] or 0) >= 2}
    by_k = {metric: {key: v for key, v in _all_k(stats, metric).items() if key in blocks}
            for _, metric in ALL_K_METRICS}
    ks = _repeated_columns(by_k["pass_k"])
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | _SIZE_SCHEMA
    schema |= {title: pl.Utf8() for title, _ in CONSISTENCY_METRICS}
    for _, m in CONSISTENCY_METRICS:
        schema |= interval_schema(m) | {f"{m}_tasks": pl.Int64()}
    schema |= _all_k_schema(ks)
    rows = []
    for key in sorted(blocks, key=lambda k: (k[0], k[1], method_rank(k[2], methods))):
        metrics = blocks[key]
        row: _Row = dict(zip(BLOCK_KEYS, key, strict=True)) | _size(metrics["ter"], metrics.get("infra_error"))
        for title, m in CONSISTENCY_METRICS:
            r = metrics[m]
            row |= interval_values(m, r) | {f"{m}_tasks": r["n"], title: f"{interval_text(r)} (of {r['n']})"}
        rows.append(row | _all_k_cells(by_k, key, ks))
    return pl.DataFrame(rows, schema=schema)


