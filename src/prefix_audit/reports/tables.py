"""The tables of an audit, written as one set: each table is a :class:`TableSpec` of :data:`TABLE_SPECS` — its
name, how it is built from the run's statistics (:class:`TableInputs`), its caption and the note an empty one
carries — rendered as CSV, Markdown and LaTeX (:mod:`.table_render`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from prefix_audit.core.health import FINDINGS_SCHEMA, TASKS_SCHEMA
from prefix_audit.core.io import commit_files, read_parquet
from prefix_audit.replay.trust import block_trust
from prefix_audit.statistics.categories import CATEGORY_STATS_SCHEMA
from prefix_audit.statistics.labels import LABEL_FILES, label_summary
from prefix_audit.statistics.paired import PAIRED_SCHEMA
from prefix_audit.statistics.settings import BLOCK_KEYS
from prefix_audit.statistics.stats import COST_METRICS, STATS_SCHEMA, agent_rows, paper_rows

from .audit_tables import table_label_categories, table_labels, table_task_health, table_trust, trust_display_columns
from .block_tables import (
    health_cells,
    health_note,
    table_consistency,
    table_f1,
    table_f2,
    table_f3,
    table_g1,
    table_pairs,
    table_task_categories,
    with_origins,
)
from .table_render import EMPTY_NOTE, FORMATS, display_columns, table_texts

CATEGORY_TABLE = "task_categories"  # G.1 per task category, beside it
# The agent-attributable companions of G.1 and F.1 (docs/attribution.md) come after the paper's tables.
AGENT_TABLES = ("G1_agent", "F1_agent")
TABLES = ("G1", CATEGORY_TABLE, "F1", "F2", "F3", "pairs", "consistency", "trust", "labels", "label_categories",
          *AGENT_TABLES)
HEALTH_TABLE = "task_health"


def _confidence_text(frame: pl.DataFrame) -> str:
    levels = frame["confidence"].unique().to_list()
    return f"{100 * levels[0]:g}% " if len(levels) == 1 else ""


@dataclass(frozen=True)
class TableInputs:
    """What the tables are built from, read once: the stats table (``stats`` its paper rows, ``agent`` the
    agent-attributable ones with the block sizes), the paired and per-category statistics, the FED table, the
    label comparison's summary, and how blocks pool (``pools``; F.1 is of ``pool``, the first) and order."""

    stats: pl.DataFrame
    agent: pl.DataFrame
    paired: pl.DataFrame
    paired_path: str | os.PathLike[str] | None
    per_category: pl.DataFrame
    categories_path: str | os.PathLike[str] | None
    episodes: pl.DataFrame | None
    episodes_path: str | os.PathLike[str] | None
    summary: list[dict[str, Any]]
    labels_dir: str | os.PathLike[str] | None
    pools: Mapping[str, Sequence[str]]
    methods: Sequence[str]

    @property
    def pool(self) -> str:
        """F.1's pool: the first of ``pools`` ("" where none is configured, so F.1 has no rows)."""
        return next(iter(self.pools), "")

    @property
    def conf(self) -> str:
        return _confidence_text(self.stats)

    @property
    def health(self) -> dict[tuple[str, ...], str]:
        return health_cells(self.stats, self.episodes, self.pools)

    def unpooled(self, stats: pl.DataFrame) -> pl.DataFrame:
        """``stats`` without the pools' blocks: G.1 is per dataset; pooled pseudo-datasets belong to F.1."""
        return stats.filter(~pl.col("dataset").is_in(list(self.pools)))

    def no_labels(self) -> str:
        return ("No human step labels were given (audit --labels, an imports: block's labels)." if self.labels_dir
                is None else "No labelled entry matched an audited entry.")


@dataclass(frozen=True)
class TableSpec:
    """One table of the set: ``build`` makes its frame, ``caption`` its caption (given the frame), ``note``
    what an empty one says, ``display`` the columns its Markdown and LaTeX show (the CSV has all)."""

    name: str
    build: Callable[[TableInputs], pl.DataFrame]
    caption: Callable[[TableInputs, pl.DataFrame], str]
    note: Callable[[TableInputs], str] = lambda inputs: EMPTY_NOTE
    display: Callable[[pl.DataFrame], list[str]] = display_columns


def _members(inputs: TableInputs) -> str:
    return "/".join(inputs.pools.get(inputs.pool, ()))


def _f1_note(inputs: TableInputs) -> str:
    if not inputs.pools:
        return "No pooled blocks: no pool was configured (the workflow's stats.pools, a benchmark's registered pools)."
    members = inputs.pools[inputs.pool]
    if inputs.stats["dataset"].is_in(list(members)).any():
        absent = f"{_members(inputs)} blocks are present but were not pooled (the statistics had no pool {inputs.pool})"
    else:
        absent = f"no {_members(inputs)} blocks in the FED table"
    return f"No {inputs.pool} blocks in the stats table: {absent}."


AGENT_CAPTION = ("computed on FED_agent, the first failure attributed to the agent (docs/attribution.md: a first "
                 "failure caused by information the user gave, or made unavoidable by the task, is not the "
                 "agent's), with the same task draws as the paper's table; first failures by origin per block. "
                 "The paper's numbers, on FED, are in ")
_REPEATED = (" pass^k and TER^k (all k trials succeed / are fully executable, τ-bench's unbiased estimator) where "
             "blocks hold repeated trials.")

TABLE_SPECS = (
    TableSpec(
        "G1", lambda i: table_g1(i.unpooled(i.stats), health=i.health),
        lambda i, _: (f"PEC@k with {i.conf}percentile-bootstrap confidence intervals per dataset, model and method "
                      "block." + health_note(i.stats))),
    TableSpec(
        CATEGORY_TABLE, lambda i: table_task_categories(i.per_category),
        lambda i, _: (
            "G.1 per task category of the blocks whose benchmark names task categories (BFCL-v3 multi-turn: base, "
            "miss_func, miss_param, long_context): final success, beside it the benchmark's own accuracy of the "
            "category as its logs recorded it (BFCL's score file, not recomputed), TER, mean FED and PEC@k, with "
            f"{_confidence_text(i.per_category) if i.per_category.height else i.conf}percentile-bootstrap intervals "
            "over the category's tasks drawn with the stats table's seed (a block of one category has its G.1 row)."),
        lambda i: ("No per-category statistics were given." if i.categories_path is None
                   else "No block of a dataset with task categories (BFCL) in the FED table."),
        lambda table: [c for c in display_columns(table) if c != "recorded_files"]),
    TableSpec(
        "F1", lambda i: table_f1(i.stats, i.pool, i.methods, health=i.health),
        lambda i, _: (
            f"{_members(i)} pooled per task: TER, mean FED, AUC-PEC and final success with {i.conf}task-level "
            "percentile-bootstrap intervals (tasks drawn with all their trials); N = tasks × trials; RR as "
            "recovered/eligible with a Wilson interval (at the design-effect sample size where tasks contribute "
            "several eligible rollouts)." + _REPEATED + health_note(i.stats)),
        _f1_note),
    TableSpec(
        "F2", lambda i: table_f2(i.stats, i.methods),
        lambda i, _: (
            "Mean agent tokens / mean cumulative agent call latency (successful attempts) / mean wall time "
            "of the agent calls with retries and waits, per episode (k = thousand tokens), episodes with "
            "accounting / all, and where any, the share of calls whose tokens were estimated locally "
            "(est.); relative change of Dual-Loop (tokens / latency)."),
        lambda i: "No blocks in the stats table." if i.stats.is_empty() else (
            f"No agent accounting in the stats table: the FED table has no {'/'.join(COST_METRICS)} columns.")),
    TableSpec(
        "F3", lambda i: table_f3(i.paired),
        lambda i, _: (f"Paired differences (condition - baseline) with {_confidence_text(i.paired)}paired task-level "
                      "percentile-bootstrap intervals; cost differences as points (relative change)."),
        lambda i: "No paired differences: " + ("no paired.parquet was given" if i.paired_path is None
                                               else f"{Path(i.paired_path).name} has no rows") + "."),
    TableSpec(
        "pairs", lambda i: table_pairs(i.stats),
        lambda i, _: (
            f"Every pairwise method difference (method - versus) within a model and dataset, with {i.conf}paired "
            "percentile-bootstrap intervals from the task draw the two blocks share; blocks over different task "
            "sets pair on their common tasks."),
        lambda i: "No pairs: no model has two methods on a dataset."),
    TableSpec(
        "consistency", lambda i: table_consistency(i.stats, i.methods),
        lambda i, _: (
            "Within-task consistency of blocks with repeated trials: the share of tasks (of those with two or more "
            f"trials) whose trials disagree on full executability and on Y, with {i.conf}task-bootstrap intervals; "
            "pass^k and TER^k."),
        lambda i: "No block holds repeated trials (agents.trials is 1)."),
    TableSpec(
        "trust", lambda i: table_trust(block_trust(i.episodes) if i.episodes is not None else []),
        lambda i, table: (
            "How far each audit of imported logs agrees with what the logs recorded: Y against the log's own verdict "
            "(entries with one), replayed tool results against the recorded ones (after normalising notation), the "
            "decode health (call steps the decoder could not read, entries without any call, calls to unknown or "
            "unnamed tools) and the entries flagged per log_issue code"
            + ("; final success beside the benchmark's own headline, the mean of the score its logs recorded."
               if "recorded headline" in trust_display_columns(table) else ".")),
        lambda i: ("No imported blocks: generated rollouts carry no log to check against."
                   if i.episodes_path is not None else "No FED table was given."),
        trust_display_columns),
    TableSpec(
        "labels", lambda i: table_labels(i.summary),
        lambda i, _: (
            f"FED beside human step labels: labelled entries, those with a human-labelled failure, the shares with "
            f"{i.conf}Wilson intervals (fully executable: of those with a failure; FED fired: of all labelled; FED "
            "on a step labelled a failure: of those it fired in; FED at, before or after the human first failure: "
            "of those with both), the offset FED minus first failure, and the failure labels by where they landed."),
        TableInputs.no_labels,
        lambda table: [c for c in table.columns if c in ("labelled", "with failure") or
                       (table.schema[c] == pl.Utf8 and c != "offset_unit")]),
    TableSpec(
        "label_categories", lambda i: table_label_categories(i.summary),
        lambda i, _: (
            "The human first failure's category beside FED's first-failure category (fully executable: FED did "
            "not fire), over the labelled entries with a human-labelled failure."),
        TableInputs.no_labels, lambda table: table.columns),
    TableSpec(
        "G1_agent", lambda i: with_origins(table_g1(i.unpooled(i.agent)), i.stats),
        lambda i, _: (f"Agent-attributable PEC@k with {i.conf}percentile-bootstrap intervals, " + AGENT_CAPTION
                      + "Table G.1."),
        lambda i: "No attribution in the stats table (episodes without origin and FED_agent)."),
    TableSpec(
        "F1_agent", lambda i: with_origins(table_f1(i.agent, i.pool, i.methods), i.stats, i.pool),
        lambda i, _: (f"Agent-attributable TER, mean FED, AUC-PEC and RR of {_members(i)} pooled per task, with "
                      f"{i.conf}intervals, " + AGENT_CAPTION + "Table F.1 (final success is the same in both)."),
        lambda i: f"No {i.pool} blocks with attribution in the stats table."),
)


def table_files(out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """``{table}_{format}`` → ``out_dir/table_{table}.{format}``: what ``prefix-audit tables -o DIR``
    writes, and the names of the ``tables`` rule's outputs."""
    return {f"{t}_{ext}": Path(out_dir) / f"table_{t}.{ext}" for t in TABLES for ext in FORMATS}


def _checked(frame: pl.DataFrame, schema: pl.Schema, path: str | os.PathLike[str] | None, what: str) -> pl.DataFrame:
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a {what} (as `prefix-audit stats` writes it): no column(s) "
                         f"{', '.join(missing[:6])}")
    return frame


def write_tables(
    stats_path: str | os.PathLike[str],
    outputs: Mapping[str, str | os.PathLike[str]],
    paired_path: str | os.PathLike[str] | None = None,
    *,
    pools: Mapping[str, Sequence[str]] | None = None,
    methods: Sequence[str] = (),
    episodes_path: str | os.PathLike[str] | None = None,
    labels_dir: str | os.PathLike[str] | None = None,
    categories_path: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write every table of :data:`TABLE_SPECS` (CSV, Markdown, LaTeX each) to ``outputs`` (keys
    ``{table}_{format}``, see :func:`table_files`) as one set; return the 36 paths.

    ``pools`` are the pooled pseudo-datasets of the statistics (G.1 leaves them out; F.1 is of the first) and
    ``methods`` the order methods are shown in (others follow, by name). F.3 reads ``paired_path`` (no paired
    differences when None), the trust table the FED table ``episodes_path`` (none when None), the labels
    tables the comparison in ``labels_dir`` (:func:`prefix_audit.statistics.labels.write_label_comparison`;
    none when None), the task_categories table the per-category statistics ``categories_path``
    (:func:`prefix_audit.statistics.categories.write_category_stats`; none when None). Every table is always
    written; an empty one carries a note on which blocks were absent.
    """
    expected = set(table_files("."))
    if set(outputs) != expected:
        raise ValueError(f"tables: outputs must be exactly {sorted(expected)}, got {sorted(outputs)}")
    every_row = _checked(read_parquet(stats_path), STATS_SCHEMA, stats_path, "stats table")
    stats = paper_rows(every_row)
    per_category = _checked(read_parquet(categories_path), CATEGORY_STATS_SCHEMA, categories_path,
                            "per-category stats table") if categories_path is not None \
        else pl.DataFrame(schema=CATEGORY_STATS_SCHEMA)
    attributed = agent_rows(every_row)
    sizes = stats.filter(pl.col("metric").is_in(["infra_error", "final_success"])) \
        .join(attributed.select(BLOCK_KEYS).unique(), on=list(BLOCK_KEYS), how="semi")
    levels = stats["confidence"].unique().to_list()
    summary = [] if labels_dir is None else label_summary(
        read_parquet(Path(labels_dir) / LABEL_FILES[0]), read_parquet(Path(labels_dir) / LABEL_FILES[1]),
        levels[0] if len(levels) == 1 else 0.95)
    inputs = TableInputs(
        stats=stats, agent=pl.concat([attributed, sizes]),
        paired=read_parquet(paired_path) if paired_path is not None else pl.DataFrame(schema=PAIRED_SCHEMA),
        paired_path=paired_path, per_category=per_category, categories_path=categories_path,
        episodes=read_parquet(episodes_path) if episodes_path is not None else None, episodes_path=episodes_path,
        summary=summary, labels_dir=labels_dir, pools=pools or {}, methods=methods)
    contents: dict[Path, bytes] = {}
    for spec in TABLE_SPECS:
        table = spec.build(inputs)
        contents |= table_texts(table, {ext: outputs[f"{spec.name}_{ext}"] for ext in FORMATS},
                                f"table_{spec.name}", spec.caption(inputs, table), display=spec.display(table),
                                note=spec.note(inputs))
    return commit_files(contents)


def task_health_texts(tasks: pl.DataFrame, findings: pl.DataFrame,
                      out_dir: str | os.PathLike[str]) -> dict[Path, bytes]:
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
    task_frame, findings_frame = (
        pl.concat([read_parquet(p) for p in paths]) if paths else pl.DataFrame(schema=pl.Schema(schema))
        for paths, schema in ((tasks, TASKS_SCHEMA), (findings, FINDINGS_SCHEMA)))
    contents = task_health_texts(task_frame, findings_frame, ".")
    return commit_files({Path(outputs[path.suffix[1:]]): data for path, data in contents.items()})


