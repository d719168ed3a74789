"""Paper tables from the long stats and paired tables, rendered as CSV, Markdown and LaTeX (booktabs)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from prefix_audit.core.health import CODES, DEFECT, FINDINGS_SCHEMA, TASKS_SCHEMA
from prefix_audit.core.io import commit_files, natural_key, read_parquet
from prefix_audit.replay.trust import BlockTrust, block_trust, share_text
from prefix_audit.statistics.labels import LABEL_FILES, LANDINGS, label_summary
from prefix_audit.statistics.paired import INTERVAL_METRICS, PAIRED_SCHEMA
from prefix_audit.statistics.stats import (
    ACCOUNTING_METRICS,
    BLOCK_KEYS,
    CATEGORY_STATS_SCHEMA,
    COST_METRICS,
    HEALTH_METRICS,
    METHOD_ORDER,
    ORIGIN_METRICS,
    ORIGINS,
    RECORDED_ACCURACY,
    STATS_SCHEMA,
    TAU_POOL,
    agent_rows,
    cohort_size,
    method_rank,
    paper_rows,
)

EMPTY_NOTE = "No blocks were present."
CATEGORY_TABLE = "task_categories"  # G.1 per task category, beside it
# The agent-attributable companions of G.1 and F.1 (docs/attribution.md) come after the paper's tables.
AGENT_TABLES = ("G1_agent", "F1_agent")
TABLES = ("G1", CATEGORY_TABLE, "F1", "F2", "F3", "pairs", "consistency", "trust", "labels", "label_categories",
          *AGENT_TABLES)
FORMATS = ("csv", "md", "tex")
F2_BASELINES = ("react", "plan_conditioned")
_MISSING = "n/a"
_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "Δ": r"$\Delta$",
}


def _fmt_ci(est: float | None, lo: float | None, hi: float | None, signed: bool = False) -> str:
    """``est [lo, hi]`` to 3 decimals; ``signed`` adds the sign (differences in F.3)."""
    if est is None:
        return _MISSING
    spec = "+.3f" if signed else ".3f"
    # + 0.0 turns a negative zero into "0.000".
    if lo is None or hi is None:
        return f"{est + 0.0:{spec}}"
    return f"{est + 0.0:{spec}} [{lo + 0.0:{spec}}, {hi + 0.0:{spec}}]"


_SIZE_SCHEMA: dict[str, pl.DataType] = {"N": pl.Utf8(), "tasks": pl.Int64(), "rollouts": pl.Int64(),
                                        "infra failures": pl.Int64()}


def _size(r: Mapping[str, Any], infra: Mapping[str, Any] | None) -> dict[str, object]:
    """The prefix cohort of a block (``r`` one of its prefix-metric rows) and its infrastructure
    failures (entries outside that cohort: no observed action, docs/definitions.md#infrastructure-failures)."""
    return {"N": cohort_size(r), "tasks": r["n"], "rollouts": r["n_rollouts"],
            "infra failures": infra["successes"] if infra is not None else 0}


def _infra_rows(stats: pl.DataFrame) -> dict[tuple[str, ...], dict]:
    """Each block's ``infra_error`` row (its count is in ``successes``)."""
    return {key: metrics["infra_error"] for key, metrics in _estimates(stats).items() if "infra_error" in metrics}


def health_cells(stats: pl.DataFrame, episodes: pl.DataFrame | None = None,
                 pools: Mapping[str, Sequence[str]] = TAU_POOL) -> dict[tuple[str, ...], str]:
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
        why = _unsound_codes(episodes, key, pools) if count and episodes is not None else ""
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
        rows = [metrics.get(f"first_failure_{origin}") for origin in ORIGINS]
        if all(r is not None for r in rows):
            out[key] = " · ".join(str(r["successes"]) for r in rows) + f" of {rows[0]['n_rollouts']}"
    return out


def with_origins(table: pl.DataFrame, stats: pl.DataFrame, dataset: str | None = None) -> pl.DataFrame:
    """``table`` (G.1's or F.1's layout) with :data:`ORIGIN_COLUMN` after its block size: first failures by
    origin of each row's block (``dataset`` fixes the dataset of a table without that column)."""
    cells = origin_cells(stats)
    keys = [(dataset or r["dataset"], r["model"], r["method"]) for r in table.iter_rows(named=True)]
    at = table.columns.index("infra failures") + 1
    return table.insert_column(at, pl.Series(ORIGIN_COLUMN, [cells.get(k, _MISSING) for k in keys], pl.Utf8))


def _health_note(stats: pl.DataFrame) -> str:
    """What the tables' unsound-tasks column means, when some block has one."""
    metrics = set(stats["metric"].to_list())
    if "unsound_tasks" not in metrics:
        return ""
    kept = "excluded_tasks" not in metrics
    return (" Unsound tasks: those benchmark health found a defect in (docs/health.md), "
            + ("kept in every metric, as in the paper's protocol (--exclude-unsound leaves them out)."
               if kept else "left out of every metric (--exclude-unsound); tasks with no audited health stay in."))


def table_g1(stats: pl.DataFrame, k_max: int = 4, health: Mapping[tuple[str, ...], str] | None = None) -> pl.DataFrame:
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
        schema |= {f"pec_{k}": pl.Float64(), f"pec_{k}_lo": pl.Float64(), f"pec_{k}_hi": pl.Float64()}

    blocks: dict[tuple[str, ...], dict[str, object]] = {}
    infra = _infra_rows(stats)
    pec = blocks_only(stats).filter((pl.col("metric") == "pec") & pl.col("k").is_between(1, k_max))
    for r in pec.iter_rows(named=True):
        key = tuple(r[key] for key in BLOCK_KEYS)
        row = blocks.setdefault(key, _size(r, infra.get(key)))
        k = r["k"]
        row |= {f"pec_{k}": r["estimate"], f"pec_{k}_lo": r["ci_low"], f"pec_{k}_hi": r["ci_high"]}
    rows = []
    for key in sorted(blocks):
        row = dict(zip(BLOCK_KEYS, key)) | blocks[key]
        if health:
            row[HEALTH_COLUMN] = health.get(key, "not audited")
        for k in ks:
            row[f"PEC@{k}"] = _fmt_ci(*(row.get(f"pec_{k}{suffix}") for suffix in ("", "_lo", "_hi")))
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


CATEGORY_METRICS = (("final success", "final_success"), ("TER", "ter"), ("mean FED", "mean_fed"))
RECORDED_COLUMN = "recorded accuracy"


def table_task_categories(categories: pl.DataFrame, k_max: int = 4) -> pl.DataFrame:
    """G.1 per task category, beside G.1: one row per block and category of the per-category statistics
    (:func:`prefix_audit.statistics.stats.compute_category_stats`) — the category's G.1 row
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
        schema |= {m: pl.Float64(), f"{m}_lo": pl.Float64(), f"{m}_hi": pl.Float64()}
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
                r = metrics[key][m]
                row |= {m: r["estimate"], f"{m}_lo": r["ci_low"], f"{m}_hi": r["ci_high"]}
                row[title] = _fmt_ci(r["estimate"], r["ci_low"], r["ci_high"])
            rows.append(row | _recorded_cells(recorded.get(key, [])))
    rows.sort(key=lambda row: (*(row[key] for key in BLOCK_KEYS), row["category"]))  # G.1's order
    return pl.DataFrame(rows, schema=schema)


def _recorded_cells(summaries: Sequence[Mapping[str, Any]]) -> dict[str, object]:
    """The recorded-accuracy cells of a block's category: each summary its logs recorded, as recorded."""
    def text(r: Mapping[str, Any]) -> str:
        counts = f" ({r['successes']}/{r['n_rollouts']})" if r["n_rollouts"] is not None else ""
        return (_MISSING if r["estimate"] is None else f"{r['estimate']:.3f}") + counts

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
# Dual-Loop's relative change in F.2: tokens and client-observed latency.
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
            schema |= {f"{metric}_{k}": pl.Float64(), f"{metric}_{k}_lo": pl.Float64(), f"{metric}_{k}_hi": pl.Float64()}
    return schema


def _all_k_cells(by_k: Mapping[str, Mapping[tuple[str, ...], Mapping[int, dict]]], key: tuple[str, ...],
                 ks: Sequence[int]) -> dict[str, object]:
    row: dict[str, object] = {}
    for title, metric in ALL_K_METRICS:
        rows = by_k[metric].get(key, {})
        for k in ks:
            r = rows.get(k)
            if r is None:  # fewer trials than k in some task of this block
                row[f"{title}{k}"] = _MISSING
                continue
            row |= {f"{metric}_{k}": r["estimate"], f"{metric}_{k}_lo": r["ci_low"], f"{metric}_{k}_hi": r["ci_high"]}
            row[f"{title}{k}"] = _fmt_ci(r["estimate"], r["ci_low"], r["ci_high"])
    return row


def table_f1(stats: pl.DataFrame, pool: str = "tau", health: Mapping[tuple[str, ...], str] | None = None) -> pl.DataFrame:
    """Table F.1: TER, mean FED, AUC-PEC, final success with CIs and RR (s/n) of a pooled dataset;
    with repeated trials, pass^k and TER^k for k = 1..the most trials a block has in every task.

    One row per model x method of the blocks with dataset = ``pool``; numeric columns kept for CSV.
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
        schema |= {m: pl.Float64(), f"{m}_lo": pl.Float64(), f"{m}_hi": pl.Float64()}
    schema |= {"final_success_n": pl.Int64(), "rr_s": pl.Int64(), "rr_n": pl.Int64()}
    schema |= {"rr": pl.Float64(), "rr_lo": pl.Float64(), "rr_hi": pl.Float64(), "rr_interval": pl.Utf8()}
    schema |= _all_k_schema(ks)

    rows = []
    for key in sorted(blocks, key=lambda k: (k[1], method_rank(k[2]))):
        metrics = blocks[key]
        row: dict[str, object] = {"model": key[1], "method": key[2],
                                  **_size(metrics["ter"], metrics.get("infra_error"))}
        if health:
            row[HEALTH_COLUMN] = health.get(key, "not audited")
        for title, m in F1_METRICS:
            r = metrics[m]
            row |= {m: r["estimate"], f"{m}_lo": r["ci_low"], f"{m}_hi": r["ci_high"]}
            row[title] = _fmt_ci(r["estimate"], r["ci_low"], r["ci_high"])
        success = metrics["final_success"]
        row["final_success_n"] = success["n_rollouts"]
        if success["n_rollouts"] != row["rollouts"]:
            row["final success"] = f"{row['final success']} (n = {success['n_rollouts']})"
        rr = metrics["rr"]
        row |= {"rr_s": rr["successes"], "rr_n": rr["n_rollouts"], "rr": rr["estimate"]}
        row |= {"rr_lo": rr["ci_low"], "rr_hi": rr["ci_high"], "rr_interval": rr["interval"]}
        if rr["estimate"] is None:
            row["RR"] = f"{rr['successes']}/{rr['n_rollouts']} (undefined)"
        else:
            ci = _fmt_ci(rr["estimate"], rr["ci_low"], rr["ci_high"])
            row["RR"] = f"{rr['successes']}/{rr['n_rollouts']} = {ci}"
        rows.append(row | _all_k_cells(by_k, key, ks))
    return pl.DataFrame(rows, schema=schema)


def _fmt_tokens(x: float | None) -> str:
    return _MISSING if x is None else f"{x / 1000:.2f}k"


def _fmt_latency(x: float | None) -> str:
    return _MISSING if x is None else f"{x:.2f} s"


def _fmt_rel(x: float | None) -> str:
    return _MISSING if x is None else f"{x + 0.0:+.1%}"


def _relative(new: float | None, base: float | None) -> float | None:
    return None if new is None or not base else new / base - 1.0


def table_f2(stats: pl.DataFrame) -> pl.DataFrame:
    """Table F.2: per episode, mean agent tokens / mean cumulative agent latency (successful
    attempts: the client-observed latency) / mean wall time of the agent calls (failed attempts and
    the waits between them included), by dataset x model.

    One column per method (``METHOD_ORDER`` first, then any other method with accounting rows)
    holding ``"12.35k / 45.60 s / 47.10 s (164/164)"``: the means over episodes with accounting
    and that count over all episodes of the block ("n/a" for a method without a block or without
    accounting), followed by ``"; 12% est."`` where some calls' tokens were estimated locally
    (the provider reported no usage); then Dual-Loop's relative change vs ReAct and vs
    Plan-Conditioned (tokens / latency). Only dataset x model pairs with accounting rows appear.
    """
    blocks = _estimates(stats.filter(pl.col("metric").is_in(["ter", "infra_error", *ACCOUNTING_METRICS])))
    costed = {key for key, metrics in blocks.items() if any(m in metrics for m in COST_METRICS)}
    extra = sorted({key[2] for key in costed} - set(METHOD_ORDER))
    methods = (*METHOD_ORDER, *extra)
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
        row: dict[str, object] = {"dataset": dataset, "model": model}
        for m in methods:
            metrics = blocks.get((dataset, model, m))
            if metrics is None:
                row[m] = _MISSING
                continue
            # Every entry of the block, infrastructure failures included (they have no accounting).
            n_all = (metrics.get("infra_error") or metrics["ter"])["n_rollouts"]
            row[f"{m}_N"] = n_all
            est = {c: metrics[c]["estimate"] if c in metrics else None for c in COST_METRICS}
            den = {c: metrics[c]["n_rollouts"] if c in metrics else 0 for c in COST_METRICS}
            for c in COST_METRICS:
                row |= {f"{m}_{c}": est[c], f"{m}_{c}_n": den[c]}
            tokens, latency = den["agent_tokens"], den["agent_latency_s"]
            if tokens == latency:
                counts = f"{tokens}/{n_all}"
            else:
                counts = f"tokens {tokens}/{n_all}, latency {latency}/{n_all}"
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
        schema |= {m: pl.Float64(), f"{m}_lo": pl.Float64(), f"{m}_hi": pl.Float64(), f"{m}_n": pl.Int64()}
    for c in COST_METRICS:
        schema |= {f"delta_{c}": pl.Float64(), f"delta_{c}_n": pl.Int64(), f"rel_{c}": pl.Float64()}

    keys = paired.select("label", "dataset").unique(maintain_order=True).iter_rows()
    rows = []
    for label, dataset in keys:
        rows_of_pair = paired.filter((pl.col("label") == label) & (pl.col("dataset") == dataset))
        metrics = {r["metric"]: r for r in rows_of_pair.iter_rows(named=True)}
        first = next(iter(metrics.values()))
        row: dict[str, object] = {
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
            r = metrics[m]
            row |= {m: r["estimate"], f"{m}_lo": r["ci_low"], f"{m}_hi": r["ci_high"], f"{m}_n": r["n"]}
        for title, m in F3_METRICS:
            row[title] = _fmt_ci(row[m], row[f"{m}_lo"], row[f"{m}_hi"], signed=True)
        if row["delta_final_success_n"] != row["pairs"]:
            row["Δfinal success"] = f"{row['Δfinal success']} (n = {row['delta_final_success_n']})"
        for c in COST_METRICS:
            delta, rel = metrics[f"delta_{c}"], metrics[f"rel_{c}"]
            row |= {f"delta_{c}": delta["estimate"], f"delta_{c}_n": delta["n"], f"rel_{c}": rel["estimate"]}
        for title, c, spec in F3_COSTS:
            delta = row[f"delta_{c}"]
            text = _MISSING if delta is None else f"{spec.format(delta + 0.0)} ({_fmt_rel(row[f'rel_{c}'])})"
            if delta is not None and row[f"delta_{c}_n"] != row["pairs"]:
                text += f" (n = {row[f'delta_{c}_n']})"
            row[title] = text
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


PAIR_COLUMNS = (("ΔPEC@", "delta_pec"), ("ΔTER", "delta_ter"), ("ΔAUC-PEC", "delta_auc_pec"),
                ("Δfinal success", "delta_final_success"))


def table_pairs(stats: pl.DataFrame, k_max: int = 4) -> pl.DataFrame:
    """Every within-model method difference per dataset (method − versus) with paired percentile
    intervals from the draw the two blocks share; ``tasks`` paired, and the tasks only one side has."""
    pairs = stats.filter(pl.col("versus").is_not_null()) if "versus" in stats.columns else stats.clear()
    titles = [(f"{t}{k}", m, k) for t, m in PAIR_COLUMNS[:1] for k in range(1, k_max + 1)]
    titles += [(t, m, None) for t, m in PAIR_COLUMNS[1:]]
    schema: dict[str, pl.DataType] = {"dataset": pl.Utf8(), "model": pl.Utf8(), "method": pl.Utf8(),
                                      "versus": pl.Utf8(), "tasks": pl.Int64(), "unpaired": pl.Utf8()}
    schema |= {title: pl.Utf8() for title, _, _ in titles}
    for _, m, k in titles:
        name = m if k is None else f"{m}_{k}"
        schema |= {name: pl.Float64(), f"{name}_lo": pl.Float64(), f"{name}_hi": pl.Float64()}
    rows: dict[tuple[str, ...], dict[str, object]] = {}
    for r in pairs.iter_rows(named=True):
        key = (r["dataset"], r["model"], r["method"], r["versus"])
        row = rows.setdefault(key, dict(zip(("dataset", "model", "method", "versus"), key)))
        if r["metric"] == "delta_ter":
            row["tasks"] = r["n"]
            row["unpaired"] = (f"{r['n_method_only']} {r['method']} only, {r['n_versus_only']} {r['versus']} only"
                               if r["n_method_only"] or r["n_versus_only"] else "none")
        name = r["metric"] if r["k"] is None else f"{r['metric']}_{r['k']}"
        row |= {name: r["estimate"], f"{name}_lo": r["ci_low"], f"{name}_hi": r["ci_high"]}
    out = []
    for row in rows.values():
        for title, m, k in titles:
            name = m if k is None else f"{m}_{k}"
            row[title] = _fmt_ci(row.get(name), row.get(f"{name}_lo"), row.get(f"{name}_hi"), signed=True)
        out.append(row)
    return pl.DataFrame(out, schema=schema)


CONSISTENCY_METRICS = (("TER disagree", "disagree_full"), ("Y disagree", "disagree_y"))


def table_consistency(stats: pl.DataFrame) -> pl.DataFrame:
    """Within-task consistency of blocks with repeated trials: the share of tasks (with two or more
    trials) whose trials disagree on full executability and on Y, then pass^k and TER^k."""
    blocks = {key: m for key, m in _estimates(stats).items() if (m["ter"]["trials_max"] or 0) >= 2}
    by_k = {metric: {key: v for key, v in _all_k(stats, metric).items() if key in blocks}
            for _, metric in ALL_K_METRICS}
    ks = _repeated_columns(by_k["pass_k"])
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | _SIZE_SCHEMA
    schema |= {title: pl.Utf8() for title, _ in CONSISTENCY_METRICS}
    for _, m in CONSISTENCY_METRICS:
        schema |= {m: pl.Float64(), f"{m}_lo": pl.Float64(), f"{m}_hi": pl.Float64(), f"{m}_tasks": pl.Int64()}
    schema |= _all_k_schema(ks)
    rows = []
    for key in sorted(blocks, key=lambda k: (k[0], k[1], method_rank(k[2]))):
        metrics = blocks[key]
        row: dict[str, object] = dict(zip(BLOCK_KEYS, key)) | _size(metrics["ter"], metrics.get("infra_error"))
        for title, m in CONSISTENCY_METRICS:
            r = metrics[m]
            row |= {m: r["estimate"], f"{m}_lo": r["ci_low"], f"{m}_hi": r["ci_high"], f"{m}_tasks": r["n"]}
            row[title] = f"{_fmt_ci(r['estimate'], r['ci_low'], r['ci_high'])} (of {r['n']})"
        rows.append(row | _all_k_cells(by_k, key, ks))
    return pl.DataFrame(rows, schema=schema)


TRUST_DISPLAY = ("dataset", "model", "method", "entries", "Y agrees", "replay reproduces", "ok/error agrees",
                 "undecodable steps", "no-call entries", "unknown-tool calls", "flagged")
# Shown after "entries" when some block's logs record the benchmark's own score.
TRUST_HEADLINE = ("final success", "recorded headline")


def trustdisplay_columns(trust: pl.DataFrame) -> list[str]:
    """The trust table's display columns: final success and the recorded headline only where a
    block's logs record the benchmark's own score."""
    if trust["recorded_score"].is_null().all():
        return list(TRUST_DISPLAY)
    at = TRUST_DISPLAY.index("entries") + 1
    return [*TRUST_DISPLAY[:at], *TRUST_HEADLINE, *TRUST_DISPLAY[at:]]


def table_trust(blocks: Sequence[BlockTrust]) -> pl.DataFrame:
    """The trust table: per block of imported logs, how far its audit agrees with what the logs
    recorded (verdicts, tool results), its decode health and its entries flagged by log_issue code; beside
    its final success, the benchmark's own headline where the logs record a score (ToolSandbox's mean
    similarity)."""
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | {
        "entries": pl.Int64(), "final success": pl.Utf8(), "final_success": pl.Float64(),
        "recorded headline": pl.Utf8(), "recorded_score": pl.Float64(), "recorded_score_n": pl.Int64(),
        "verdicts": pl.Int64(), "Y agrees": pl.Utf8(), "y_agreement": pl.Float64(),
        "results compared": pl.Int64(), "replay reproduces": pl.Utf8(), "replay_agreement": pl.Float64(),
        "ok/error agrees": pl.Utf8(), "verdict_agreement": pl.Float64(), "undecodable steps": pl.Utf8(),
        "undecoded": pl.Int64(), "call_steps": pl.Int64(), "no-call entries": pl.Utf8(),
        "unknown-tool calls": pl.Int64(), "flagged": pl.Utf8()}
    rows = [{
        "dataset": b.dataset, "model": b.model, "method": b.method, "entries": b.entries,
        "final success": share_text(b.y_success, b.y_known),
        "final_success": b.y_success / b.y_known if b.y_known else None,
        "recorded headline": b.headline() or "none", "recorded_score": b.score_mean, "recorded_score_n": b.score_n,
        "verdicts": b.with_verdict,
        "Y agrees": share_text(b.y_agrees, b.with_verdict), "y_agreement": b.y_agreement,
        "results compared": b.compared, "replay reproduces": share_text(b.reproduced, b.compared),
        "replay_agreement": b.replay_agreement, "ok/error agrees": share_text(b.same_verdict, b.compared),
        "verdict_agreement": b.verdict_agreement, "undecodable steps": f"{b.undecoded}/{b.call_steps}",
        "undecoded": b.undecoded, "call_steps": b.call_steps,
        "no-call entries": f"{b.no_call_entries}/{b.acted_entries}", "unknown-tool calls": b.unknown_calls,
        "flagged": b.flagged_text() or "none"} for b in blocks]
    return pl.DataFrame(rows, schema=schema)


HEALTH_TABLE = "task_health"
EXAMPLE_IDS = 5  # example task ids per code in the health table


def table_task_health(tasks: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """Benchmark health per dataset and release: per code found and per intent (kind) and effect of its
    findings, the tasks with it (of those audited), its findings and example task ids (natural order); then
    the unsound tasks (any defect) and the tasks whose check could not run."""
    schema: dict[str, pl.DataType] = {"dataset": pl.Utf8(), "release": pl.Utf8(), "code": pl.Utf8(),
                                      "kind": pl.Utf8(), "effect": pl.Utf8(), "tasks": pl.Utf8(), "n_tasks": pl.Int64(),
                                      "of": pl.Int64(), "findings": pl.Int64(), "examples": pl.Utf8()}
    rows = []
    for (dataset, release), group in sorted(tasks.partition_by(["dataset", "release"], as_dict=True).items()):
        audited = group.height
        found = findings.filter((pl.col("dataset") == dataset) & (pl.col("release") == release))

        def row(code: str, kind: str, effect: str, ids: list[str], n_findings: int) -> dict[str, object]:
            ids = sorted(set(ids), key=natural_key)
            return {"dataset": dataset, "release": release, "code": code, "kind": kind, "effect": effect,
                    "tasks": f"{len(ids)} of {audited}", "n_tasks": len(ids), "of": audited, "findings": n_findings,
                    "examples": ", ".join(ids[:EXAMPLE_IDS]) + (", …" if len(ids) > EXAMPLE_IDS else "")}

        for code, spec in CODES.items():
            for kind in spec.kinds:
                for effect in spec.effects:
                    these = found.filter((pl.col("code") == code) & (pl.col("kind") == kind)
                                         & (pl.col("effect") == effect))
                    if these.height:
                        rows.append(row(code, kind, effect, these["task_id"].to_list(), these.height))
        unsound = group.filter(pl.col("sound").not_())
        rows.append(row("unsound (any defect)", DEFECT, "", unsound["task_id"].to_list(),
                        found.filter(pl.col("kind") == DEFECT).height))
        failed = group.filter(pl.col("sound").is_null())
        if failed.height:
            rows.append(row("check failed", "", "", failed["task_id"].to_list(), 0))
    return pl.DataFrame(rows, schema=schema)


def task_health_texts(tasks: pl.DataFrame, findings: pl.DataFrame, out_dir: str | os.PathLike[str]) -> dict[Path, bytes]:
    """The contents of ``out_dir/table_task_health.{csv,md,tex}``."""
    table = table_task_health(tasks, findings)
    return table_texts(
        table, {ext: Path(out_dir) / f"table_{HEALTH_TABLE}.{ext}" for ext in FORMATS}, f"table_{HEALTH_TABLE}",
        "Benchmark health: per dataset and data release, the tasks with each finding code, intent (kind) and effect "
        "(of the tasks audited), the findings and example task ids; defects make a task unsound, the other kinds "
        "do not (docs/health.md).",
        display=["dataset", "release", "code", "kind", "effect", "tasks", "findings", "examples"],
        note="No task was audited.")


def write_task_health_table(tasks: Sequence[str | os.PathLike[str]], findings: Sequence[str | os.PathLike[str]],
                            outputs: Mapping[str, str | os.PathLike[str]]) -> list[Path]:
    """The ``task_health_table`` stage: the health outputs' per-task and findings tables → ``outputs``
    (keys csv, md, tex) as one set."""
    if set(outputs) != set(FORMATS):
        raise ValueError(f"task_health_table: outputs must be exactly {', '.join(FORMATS)}")
    frames = [pl.concat([read_parquet(p) for p in paths]) if paths else pl.DataFrame(schema=pl.Schema(schema))
              for paths, schema in ((tasks, TASKS_SCHEMA), (findings, FINDINGS_SCHEMA))]
    contents = task_health_texts(*frames, ".")
    return commit_files({Path(outputs[path.suffix[1:]]): data for path, data in contents.items()})


LABEL_SHARES = (("fully executable", "executable"), ("FED fired", "fired"),
                ("FED on a failure step", "fed_on_failure"), ("FED at first failure", "at"),
                ("FED before it", "before"), ("FED after it", "after"))
OFFSET_QUANTILES = ("min", "q1", "median", "q3", "max")


def _count_text(share: Mapping[str, Any]) -> str:
    if not share["n"]:
        return "0/0"
    return f"{share['s']}/{share['n']} = {_fmt_ci(share['estimate'], share['lo'], share['hi'])}"


def table_labels(summary: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """FED beside human step labels, per block (:func:`prefix_audit.statistics.labels.label_summary`):
    labelled entries, those with a human failure, the shares with Wilson intervals (fully executable of
    those with a failure; FED fired of all labelled; FED on a failure step of those it fired in; FED
    at / before / after the human first failure of those with both), the offsets FED − first failure,
    and the failure labels by where they landed."""
    schema: dict[str, pl.DataType] = {key: pl.Utf8() for key in BLOCK_KEYS} | {
        "labelled": pl.Int64(), "with failure": pl.Int64()}
    for title, name in LABEL_SHARES:
        schema |= {title: pl.Utf8(), f"{name}_s": pl.Int64(), f"{name}_n": pl.Int64(), name: pl.Float64(),
                   f"{name}_lo": pl.Float64(), f"{name}_hi": pl.Float64()}
    schema |= {"offset FED - first failure": pl.Utf8(), "offset_unit": pl.Utf8()}
    schema |= {f"offset_{q}": pl.Float64() for q in OFFSET_QUANTILES}
    schema |= {"failure labels on": pl.Utf8()} | {f"failures_on_{k}": pl.Int64() for k in LANDINGS}
    rows = []
    for b in summary:
        row: dict[str, Any] = {key: b[key] for key in BLOCK_KEYS} | {"labelled": b["labelled"],
                                                                      "with failure": b["with_failure"]}
        for title, name in LABEL_SHARES:
            share = b[name]
            row |= {title: _count_text(share), f"{name}_s": share["s"], f"{name}_n": share["n"],
                    name: share["estimate"], f"{name}_lo": share["lo"], f"{name}_hi": share["hi"]}
        offsets = b["offsets"]
        row |= {f"offset_{q}": offsets[q] for q in OFFSET_QUANTILES} | {"offset_unit": b["offset_unit"]}
        row["offset FED - first failure"] = (_MISSING if offsets["median"] is None else
                                             f"median {offsets['median']:g} (IQR {offsets['q1']:g} to "
                                             f"{offsets['q3']:g}; {offsets['min']:g} to {offsets['max']:g}) "
                                             f"{b['offset_unit']}")
        landed = b["failure_labels"]
        row |= {f"failures_on_{k}": landed.get(k, 0) for k in LANDINGS}
        row["failure labels on"] = ", ".join(f"{k} {n}" for k, n in landed.items()) or "none"
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def table_label_categories(summary: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Per block, the human first failure's category beside FED's (or ``fully executable``), counted
    over the entries with a human failure."""
    schema = {key: pl.Utf8() for key in BLOCK_KEYS} | {"human category": pl.Utf8(), "FED category": pl.Utf8(),
                                                       "entries": pl.Int64()}
    rows = [{key: b[key] for key in BLOCK_KEYS} | {"human category": human, "FED category": fed, "entries": n}
            for b in summary for (human, fed), n in b["categories"]]
    return pl.DataFrame(rows, schema=schema)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def to_markdown(df: pl.DataFrame, note: str = EMPTY_NOTE) -> str:
    """GitHub-flavoured Markdown table; numeric columns right-aligned; ``note`` line if empty."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", r"\|").replace("\n", " ") for c in cells) + " |"

    out = [
        line(df.columns),
        "|" + "|".join("---:" if dt.is_numeric() else "---" for dt in df.dtypes) + "|",
    ]
    out += [line([_cell(v) for v in row]) for row in df.iter_rows()]
    if df.is_empty():
        out += ["", f"_{note}_"]
    return "\n".join(out) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text."""
    escaped = "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)
    # A cell starting with "[" would be read as the optional argument of \\ or \midrule.
    return "{}" + escaped if escaped.startswith("[") else escaped


def to_latex_booktabs(df: pl.DataFrame, caption: str, label: str, note: str = EMPTY_NOTE) -> str:
    """A ``table`` float with a booktabs ``tabular``; caption and note are escaped, the label is not."""
    spec = "".join("r" if dt.is_numeric() else "l" for dt in df.dtypes)
    out = [
        r"\begin{table}[htbp]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in df.columns) + r" \\",
        r"\midrule",
    ]
    out += [" & ".join(latex_escape(_cell(v)) for v in row) + r" \\" for row in df.iter_rows()]
    if df.is_empty():
        out.append(rf"\multicolumn{{{df.width}}}{{c}}{{{latex_escape(note)}}} \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def table_files(out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """``{table}_{format}`` → ``out_dir/table_{table}.{format}``: what ``prefix-audit tables -o DIR``
    writes, and the names of the ``tables`` rule's outputs."""
    return {f"{t}_{ext}": Path(out_dir) / f"table_{t}.{ext}" for t in TABLES for ext in FORMATS}


def table_texts(
    df: pl.DataFrame,
    files: Mapping[str, str | os.PathLike[str]],
    label: str,
    caption: str,
    *,
    display: Sequence[str] | None = None,
    note: str = EMPTY_NOTE,
) -> dict[Path, bytes]:
    """The contents of ``files["csv"]`` (all columns) and ``files["md"]``/``files["tex"]``
    (``display`` columns); ``label`` names the LaTeX table. An empty table gets its header, plus
    ``note`` in the Markdown and LaTeX files.
    """
    shown = df.select(display) if display is not None else df
    texts = {"csv": df.write_csv(), "md": to_markdown(shown, note),
             "tex": to_latex_booktabs(shown, caption, f"tab:{label}", note)}
    return {Path(files[ext]): text.encode("utf-8") for ext, text in texts.items()}


def _confidence_text(frame: pl.DataFrame) -> str:
    levels = frame["confidence"].unique().to_list()
    return f"{100 * levels[0]:g}% " if len(levels) == 1 else ""


def display_columns(df: pl.DataFrame) -> list[str]:
    """The text columns and the block size, and the infrastructure failures when a block has any;
    the other numeric columns go to the CSV only."""
    failed = "infra failures" in df.columns and bool(df["infra failures"].fill_null(0).sum())
    return [c for c, dt in df.schema.items()
            if dt == pl.Utf8 or c == "pairs" or (c == "tasks" and "N" not in df.columns)
            or (c == "infra failures" and failed)]


def write_tables(
    stats_path: str | os.PathLike[str],
    outputs: Mapping[str, str | os.PathLike[str]],
    paired_path: str | os.PathLike[str] | None = None,
    pools: Mapping[str, Sequence[str]] = TAU_POOL,
    episodes_path: str | os.PathLike[str] | None = None,
    labels_dir: str | os.PathLike[str] | None = None,
    categories_path: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write tables G.1, task_categories, F.1, F.2, F.3, pairs, consistency, trust, labels and
    label_categories (CSV, Markdown, LaTeX each) to ``outputs`` (keys ``{table}_{format}``, see
    :func:`table_files`) as one set, then the agent-attributable G.1 and F.1 (:data:`AGENT_TABLES`); return the 36
    paths.

    F.3 reads ``paired_path`` (no paired differences when None), the trust table the FED table
    ``episodes_path`` (none when None), the labels tables the comparison in ``labels_dir``
    (:func:`prefix_audit.statistics.labels.write_label_comparison`; none when None), the task_categories
    table the per-category statistics ``categories_path``
    (:func:`prefix_audit.statistics.stats.write_category_stats`; none when None). Every table is
    always written; an empty one carries a note on which blocks were absent.
    """
    expected = set(table_files("."))
    if set(outputs) != expected:
        raise ValueError(f"tables: outputs must be exactly {sorted(expected)}, got {sorted(outputs)}")
    every_row = read_parquet(stats_path)
    missing = [c for c in STATS_SCHEMA if c not in every_row.columns]
    if missing:
        raise ValueError(f"{stats_path}: not a stats table (as `prefix-audit stats` writes it): no column(s) "
                         f"{', '.join(missing[:6])}")
    stats = paper_rows(every_row)
    paired = read_parquet(paired_path) if paired_path is not None else pl.DataFrame(schema=PAIRED_SCHEMA)

    def files(table: str) -> dict[str, str | os.PathLike[str]]:
        return {ext: outputs[f"{table}_{ext}"] for ext in FORMATS}
    conf = _confidence_text(stats)

    episodes = read_parquet(episodes_path) if episodes_path is not None else None
    health = health_cells(stats, episodes, pools)
    health_note = _health_note(stats)
    # G.1 is per dataset; pooled pseudo-datasets belong to F.1.
    g1 = table_g1(stats.filter(~pl.col("dataset").is_in(list(pools))), health=health)
    caption = (
        f"PEC@k with {conf}percentile-bootstrap confidence intervals "
        "per dataset, model and method block." + health_note
    )
    contents = table_texts(g1, files("G1"), "table_G1", caption, display=display_columns(g1))

    per_category = read_parquet(categories_path) if categories_path is not None else \
        pl.DataFrame(schema=CATEGORY_STATS_SCHEMA)
    missing = [c for c in CATEGORY_STATS_SCHEMA if c not in per_category.columns]
    if missing:
        raise ValueError(f"{categories_path}: not a per-category stats table (as `prefix-audit stats` writes it): "
                         f"no column(s) {', '.join(missing[:6])}")
    by_category = table_task_categories(per_category)
    contents |= table_texts(
        by_category, files(CATEGORY_TABLE), f"table_{CATEGORY_TABLE}",
        "G.1 per task category of the blocks whose benchmark names task categories (BFCL-v3 multi-turn: base, "
        "miss_func, miss_param, long_context): final success, beside it the benchmark's own accuracy of the "
        "category as its logs recorded it (BFCL's score file, not recomputed), TER, mean FED and PEC@k, with "
        f"{_confidence_text(per_category) if per_category.height else conf}percentile-bootstrap intervals over "
        "the category's tasks drawn with the stats table's seed (a block of one category has its G.1 row).",
        display=[c for c in display_columns(by_category) if c != "recorded_files"],
        note=("No per-category statistics were given." if categories_path is None
              else "No block of a dataset with task categories (BFCL) in the FED table."))

    pool = "tau"
    f1 = table_f1(stats, pool, health=health)
    repeated = " pass^k and TER^k (all k trials succeed / are fully executable, τ-bench's unbiased estimator) where blocks hold repeated trials."
    members = pools.get(pool, TAU_POOL[pool])
    joined = "/".join(members)
    if stats["dataset"].is_in(list(members)).any():
        absent = f"{joined} blocks are present but were not pooled (compute_stats pools=TAU_POOL)"
    else:
        absent = f"no {joined} blocks in the FED table"
    contents |= table_texts(
        f1, files("F1"), "table_F1",
        f"{joined} pooled per task: TER, mean FED, AUC-PEC and final success with {conf}task-level "
        "percentile-bootstrap intervals (tasks drawn with all their trials); N = tasks × trials; RR as "
        "recovered/eligible with a Wilson interval (at the design-effect sample size where tasks contribute "
        "several eligible rollouts)." + repeated + health_note,
        display=display_columns(f1),
        note=f"No {pool} blocks in the stats table: {absent}.",
    )

    f2 = table_f2(stats)
    contents |= table_texts(
        f2, files("F2"), "table_F2",
        "Mean agent tokens / mean cumulative agent call latency (successful attempts) / mean wall time "
        "of the agent calls with retries and waits, per episode (k = thousand tokens), episodes with "
        "accounting / all, and where any, the share of calls whose tokens were estimated locally "
        "(est.); relative change of Dual-Loop (tokens / latency).",
        display=display_columns(f2),
        note="No blocks in the stats table." if stats.is_empty() else (
            "No agent accounting in the stats table: the FED table has no "
            f"{'/'.join(COST_METRICS)} columns."
        ),
    )

    f3 = table_f3(paired)
    reason = "no paired.parquet was given" if paired_path is None else f"{Path(paired_path).name} has no rows"
    contents |= table_texts(
        f3, files("F3"), "table_F3",
        f"Paired differences (condition - baseline) with {_confidence_text(paired)}paired task-level "
        "percentile-bootstrap intervals; cost differences as points (relative change).",
        display=display_columns(f3),
        note=f"No paired differences: {reason}.",
    )
    pairs = table_pairs(stats)
    contents |= table_texts(
        pairs, files("pairs"), "table_pairs",
        f"Every pairwise method difference (method - versus) within a model and dataset, with {conf}paired "
        "percentile-bootstrap intervals from the task draw the two blocks share; blocks over different task "
        "sets pair on their common tasks.",
        display=display_columns(pairs), note="No pairs: no model has two methods on a dataset.",
    )
    consistency = table_consistency(stats)
    contents |= table_texts(
        consistency, files("consistency"), "table_consistency",
        f"Within-task consistency of blocks with repeated trials: the share of tasks (of those with two or more "
        f"trials) whose trials disagree on full executability and on Y, with {conf}task-bootstrap intervals; "
        "pass^k and TER^k.",
        display=display_columns(consistency), note="No block holds repeated trials (agents.trials is 1).",
    )
    trust = table_trust(block_trust(episodes) if episodes is not None else [])
    shown = trustdisplay_columns(trust)
    contents |= table_texts(
        trust, files("trust"), "table_trust",
        "How far each audit of imported logs agrees with what the logs recorded: Y against the log's own verdict "
        "(entries with one), replayed tool results against the recorded ones (after normalising notation), the "
        "decode health (call steps the decoder could not read, entries without any call, calls to unknown or "
        "unnamed tools) and the entries flagged per log_issue code"
        + ("; final success beside the benchmark's own headline, the mean of the score its logs recorded."
           if "recorded headline" in shown else "."),
        display=shown,
        note=("No imported blocks: generated rollouts carry no log to check against." if episodes_path is not None
              else "No FED table was given."),
    )
    summary = [] if labels_dir is None else label_summary(
        read_parquet(Path(labels_dir) / LABEL_FILES[0]), read_parquet(Path(labels_dir) / LABEL_FILES[1]),
        levels[0] if len(levels := stats["confidence"].unique().to_list()) == 1 else 0.95)
    no_labels = ("No human step labels were given (audit --labels, an imports: block's labels)." if labels_dir is None
                 else "No labelled entry matched an audited entry.")
    labelled = table_labels(summary)
    contents |= table_texts(
        labelled, files("labels"), "table_labels",
        f"FED beside human step labels: labelled entries, those with a human-labelled failure, the shares with "
        f"{conf}Wilson intervals (fully executable: of those with a failure; FED fired: of all labelled; FED on "
        "a step labelled a failure: of those it fired in; FED at, before or after the human first failure: of "
        "those with both), the offset FED minus first failure, and the failure labels by where they landed.",
        display=[c for c in labelled.columns if c in ("labelled", "with failure") or
                 (labelled.schema[c] == pl.Utf8 and c != "offset_unit")], note=no_labels)
    categories = table_label_categories(summary)
    contents |= table_texts(
        categories, files("label_categories"), "table_label_categories",
        "The human first failure's category beside FED's first-failure category (fully executable: FED did not "
        "fire), over the labelled entries with a human-labelled failure.",
        display=categories.columns, note=no_labels)
    contents |= _agent_table_texts(every_row, stats, files, pools, conf)
    return commit_files(contents)


AGENT_CAPTION = ("computed on FED_agent, the first failure attributed to the agent (docs/attribution.md: a first "
                 "failure caused by information the user gave, or made unavoidable by the task, is not the "
                 "agent's), with the same task draws as the paper's table; first failures by origin per block. "
                 "The paper's numbers, on FED, are in ")


def _agent_table_texts(every_row: pl.DataFrame, stats: pl.DataFrame,
                       files: Callable[[str], dict[str, str | os.PathLike[str]]],
                       pools: Mapping[str, Sequence[str]], conf: str) -> dict[Path, bytes]:
    """table_G1_agent and table_F1_agent: G.1 and F.1 of the agent-attributable rows, with first failures
    by origin (the paper's rows ``stats`` for those and the block sizes)."""
    attributed = agent_rows(every_row)
    sizes = stats.filter(pl.col("metric").is_in(["infra_error", "final_success"])) \
        .join(attributed.select(BLOCK_KEYS).unique(), on=list(BLOCK_KEYS), how="semi")
    agent = pl.concat([attributed, sizes])
    none = "No attribution in the stats table (episodes without origin and FED_agent)."
    g1 = table_g1(agent.filter(~pl.col("dataset").is_in(list(pools))))
    g1 = with_origins(g1, stats)
    texts = table_texts(g1, files("G1_agent"), "table_G1_agent",
                        f"Agent-attributable PEC@k with {conf}percentile-bootstrap intervals, " + AGENT_CAPTION
                        + "Table G.1.", display=display_columns(g1), note=none)
    pool = "tau"
    f1 = with_origins(table_f1(agent, pool), stats, pool)
    members = "/".join(pools.get(pool, TAU_POOL[pool]))
    texts |= table_texts(f1, files("F1_agent"), "table_F1_agent",
                         f"Agent-attributable TER, mean FED, AUC-PEC and RR of {members} "
                         f"pooled per task, with {conf}intervals, " + AGENT_CAPTION
                         + "Table F.1 (final success is the same in both).", display=display_columns(f1),
                         note=f"No {pool} blocks with attribution in the stats table.")
    return texts
