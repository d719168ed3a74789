"""``prefix-audit view DIR -o SITE``: a static, offline HTML site of every scored block.

``DIR`` is a results root — the workflow's ``results/`` or an ``audit -o`` directory. Every
``scored/**/episodes.parquet`` with the ``actions.parquet`` beside it becomes a block; the
statistics (``stats/stats.parquet``) add the site's own Tables G.1 and F.1 when present. The site:

* ``index.html`` — where agents first break, per dataset (:mod:`prefix_audit.reports.glance`): its
  blocks' PEC curves to the longest trajectory with their bands in one plot, the tools first failures
  happen at, and per block N, TER, final success, its FED distribution, its first failures' shares by
  category and by whose error, its commonest failing tools (point estimates from the episodes), each
  linking to those rollouts; for blocks of imported logs, how far their audits agree with what the logs
  recorded (:mod:`prefix_audit.replay.trust`); and the entries of the logs the import quarantined
  (``rollouts/imported/**/*quarantine.jsonl``), one line per cause with its count and first entries
  (:mod:`prefix_audit.core.quarantine`);
* ``glossary.html`` — every term the pages name (:mod:`prefix_audit.reports.glossary`), which their
  column headers and facts link and show as tooltips;
* ``tables.html`` — G.1, G.1 per BFCL task category (``stats/categories.parquet``, where present) and
  F.1 with their intervals, each cell linking to its block(s);
* ``blocks/<scored path>/index.html`` (and ``page-2.html``, … past
  :data:`~prefix_audit.reports.block_pages.ROLLOUTS_PER_PAGE`) —
  where its agents break (tool × category × whose error, each a filter of the list), the block's rollouts
  with their failing calls, sortable and filterable (task, category, tool, whose error, FED, Y,
  infrastructure failure, task health; kept in the page's address), and the records its scoring
  quarantined, one line per cause;
* ``blocks/<scored path>/r/<n>.html`` — one rollout: every message in order, turn by turn — the
  user's (said whose: the benchmark's text or a simulated user's), the agent's text between and beside
  its actions, the actions with V_j —, the turns it never reached said once, the first
  failure highlighted with every failing predicate, the observations, the planning trace, Y's detail;
  for an imported one, the log's own verdict, its ``log_issue`` and, beside each call whose replay
  diverged from the log, the recorded and the replayed result.

Everything is rendered by Jinja2 with autoescaping (model output is hostile) and shipped beside the
pages (``assets/``): no server, no network, works from ``file://``. The blocks' and rollouts' pages are
rendered by worker processes (:mod:`prefix_audit.reports.block_pages`), this module's own pages meanwhile. The
same input gives the same bytes — no timestamps, no absolute paths — and the site replaces the previous one whole
(:func:`prefix_audit.core.output_tree.replaced_tree`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl
from jinja2 import Environment

from prefix_audit.core.health import (
    CODES,
    DEFECT,
    EFFECTS,
    FINDINGS_SCHEMA,
    KINDS,
    TASKS_SCHEMA,
    UNAUDITED_FILE,
    ordered_codes,
)
from prefix_audit.core.io import natural_key, path_label, read_parquet
from prefix_audit.core.output_tree import replaced_tree
from prefix_audit.core.parallel import WorkerPool, default_workers
from prefix_audit.core.quarantine import QuarantineTally, read_quarantine
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.replay.fed import ACTION_SCHEMA, EPISODE_SCHEMA, with_task_health
from prefix_audit.replay.trust import share_text
from prefix_audit.statistics.categories import CATEGORY_STATS_SCHEMA
from prefix_audit.statistics.labels import ENTRY_SCHEMA, LABEL_FILES, LABEL_SCHEMA
from prefix_audit.statistics.settings import K_MAX
from prefix_audit.statistics.stats import STATS_SCHEMA, paper_rows

from .block_pages import Block, BlockPages, block_jobs, estimate_text, render_job, task_pages
from .block_tables import health_cells, table_f1, table_g1, table_task_categories
from .glance import Series, dataset_tools, pec_plot, series_style
from .glossary import TERMS
from .pages import environment, health_anchor, up_to_root
from .rollout_page import BlockName
from .table_render import display_columns

log = logging.getLogger(__name__)

# Rollout pages worth a worker process: one renders about 700 a second, and starting one costs a second.
ROLLOUTS_PER_WORKER = 2000
BLOCK_KEYS = ("dataset", "model", "method")
_ASSETS = ("site.css", "site.js")


@dataclass
class SiteReport:
    blocks: int = 0
    rollouts: int = 0
    pages: int = 0
    bytes: int = 0
    largest_page: tuple[str, int] = ("", 0)
    notes: list[str] = field(default_factory=list)
    written: dict[str, int] = field(default_factory=dict)  # pages the workers wrote themselves, by size

    def summary(self) -> str:
        name, size = self.largest_page
        head = (f"site: {self.blocks} blocks, {self.rollouts} rollouts, {self.pages} pages, "
                f"{self.bytes / 2**20:.1f} MiB (largest page {name}: {size / 2**20:.2f} MiB)")
        return "\n".join([head, *(f"note: {note}" for note in self.notes)])


def _typed(frame: pl.DataFrame, schema: Any) -> pl.DataFrame:
    """``frame`` with every column of ``schema`` (null where an older run did not write it)."""
    missing = [pl.lit(None, dtype=dtype).alias(name) for name, dtype in pl.Schema(schema).items()
               if name not in frame.columns]
    return frame.with_columns(missing) if missing else frame


def scored_blocks(root: str | os.PathLike[str]) -> list[Path]:
    """The episodes files of a results root (``root/scored/**/episodes.parquet``), sorted."""
    scored = Path(root) / "scored"
    if not scored.is_dir():
        raise ValueError(f"{root}: no scored/ folder (give a results root: the workflow's results/ "
                         "or an `audit -o` directory)")
    return sorted(scored.rglob("episodes.parquet"))


def read_blocks(episodes_paths: Sequence[str | os.PathLike[str]], scored_root: str | os.PathLike[str],
                report_empty: list[str] | None = None) -> list[Block]:
    """The blocks of these episodes files, each with the ``actions.parquet`` (and the quarantine
    count) beside it; a block's pages go under ``blocks/`` at its file's path below ``scored_root``.
    A file without episodes is named in ``report_empty``."""
    report_empty = report_empty if report_empty is not None else []
    blocks = []
    for path in map(Path, episodes_paths):
        episodes = read_parquet(path)
        missing = [c for c in (*BLOCK_KEYS, "task_id", "rollout_id", "T", "FED", "Y") if c not in episodes.columns]
        if missing:
            raise ValueError(f"{path}: not an episodes table (as `prefix-audit score` writes it): no column(s) "
                             f"{', '.join(missing)}")
        episodes = _typed(episodes, EPISODE_SCHEMA)
        quarantine = quarantine_tally([path.with_name("quarantine.jsonl")])
        quarantined = quarantine.total
        actions_path = path.with_name("actions.parquet")
        if actions_path.is_file():
            actions = _typed(read_parquet(actions_path), ACTION_SCHEMA)
        else:
            log.warning("%s: no actions.parquet beside it; its rollouts show no actions", path)
            actions = pl.DataFrame(schema=pl.Schema(ACTION_SCHEMA))
        folder = PurePosixPath("blocks", *path.parent.relative_to(scored_root).parts).as_posix()
        parts = episodes.partition_by(list(BLOCK_KEYS), as_dict=True, maintain_order=True)
        for (dataset, model, method), part in sorted(parts.items()):
            # a file holding several blocks (a `score` of mixed records) gives each a folder of its own
            sub = folder if len(parts) == 1 else \
                f"{folder}/{path_label(dataset)}.{path_label(model)}.{path_label(method)}"
            blocks.append(Block(dataset, model, method, sub, natural_order(part),
                                actions.filter(pl.col("dataset") == dataset, pl.col("model") == model,
                                               pl.col("method") == method),
                                quarantined if len(parts) == 1 else 0,
                                tuple(quarantine.lines()) if len(parts) == 1 else ()))
        if not parts:
            log.warning("%s: no episodes (%d quarantined records beside it)", path, quarantined)
            report_empty.append(f"{path.parent.relative_to(scored_root).as_posix()}: no episodes "
                                f"({quarantined} quarantined records)")
    return sorted(blocks, key=lambda b: (b.key, b.folder))


def quarantine_tally(paths: Sequence[Path]) -> QuarantineTally:
    """The records of the quarantine files among ``paths`` (one missing counts none), by cause."""
    tally = QuarantineTally()
    for path in paths:
        for bad in read_quarantine(path) if path.is_file() else ():
            tally.add(bad)
    return tally


def natural_order(episodes: pl.DataFrame) -> pl.DataFrame:
    """Episodes by task id in natural order (``..._9`` before ``..._10``), then trial and rollout id."""
    keys = episodes.select("task_id", "trial", "rollout_id").rows()
    order = sorted(range(len(keys)), key=lambda i: (natural_key(keys[i][0]), keys[i][1] or 0, keys[i][2]))
    return episodes[order] if order else episodes


def read_health(health_dir: str | os.PathLike[str] | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-task and findings tables of every health output under ``health_dir`` (``<dataset>/``
    folders, as the workflow and ``audit`` write them, or the folder ``tasks -o`` wrote itself); empty
    tables when there is none."""
    tasks, findings = [], []
    if health_dir is not None and Path(health_dir).is_dir():
        for path in sorted(Path(health_dir).rglob("tasks.parquet")):
            if path.with_name("findings.parquet").is_file():
                tasks.append(_typed(read_parquet(path), TASKS_SCHEMA))
                findings.append(_typed(read_parquet(path.with_name("findings.parquet")), FINDINGS_SCHEMA))
    return (pl.concat(tasks) if tasks else pl.DataFrame(schema=pl.Schema(TASKS_SCHEMA)),
            pl.concat(findings) if findings else pl.DataFrame(schema=pl.Schema(FINDINGS_SCHEMA)))


def read_unaudited(health_dir: str | os.PathLike[str] | None) -> dict[tuple[str, str | None, str], str]:
    """Why each scored task an audit did not audit the health of was left out, by dataset, release and task
    id (:data:`~prefix_audit.core.health.UNAUDITED_FILE`, as ``audit`` writes it); empty where there is none."""
    path = Path(health_dir) / UNAUDITED_FILE if health_dir is not None else None
    if path is None or not path.is_file():
        return {}
    return {(g["dataset"], g["release"], t): g["reason"]
            for g in json.loads(path.read_text(encoding="utf-8")) for t in g["task_ids"]}


# Why a task is "not audited" where nothing the audit wrote says it (a workflow run, `audit --no-health`).
NO_HEALTH_FOUND = "no task health for it in these results"


def unaudited_reasons(tasks: pl.DataFrame, unaudited: Mapping[tuple[str, str | None, str], str]):
    """A function of an episode whose task's health is unknown (``task_sound`` null): why — its check
    failed (the health ``tasks`` table's ``error``), the audit's reason (:func:`read_unaudited`), or
    :data:`NO_HEALTH_FOUND`."""
    failed = {(r["dataset"], r["release"], r["task_id"]): r["error"]
              for r in tasks.filter(pl.col("sound").is_null()).iter_rows(named=True)}

    def reason(ep: Mapping[str, Any]) -> str:
        key = (ep["dataset"], ep["release"], ep["task_id"])
        if key in failed:
            return f"its check failed: {failed[key]}"
        return unaudited.get(key, NO_HEALTH_FOUND)
    return reason


# The health page's order: a task by the most severe kind among its findings (a failed check after defects).
CHECK_FAILED = "failed"
KINDS_ORDER = (DEFECT, CHECK_FAILED, *(k for k in KINDS if k != DEFECT))
_KIND_RANK = {kind: rank for rank, kind in enumerate(KINDS_ORDER)}


@dataclass
class TaskRollouts:
    """Where the site shows one block's rollouts of a task: the block, its page listing them, and the
    rollout pages (site-relative)."""

    block: BlockName
    page: str
    rollouts: list[str] = field(default_factory=list)

    def link(self, task_id: str) -> dict[str, str]:
        """One rollout: its page; several: the block's page filtered to the task (``#task=ID``)."""
        label = f"{self.block.model} / {self.block.method}"
        if len(self.rollouts) == 1:
            return {"label": label, "href": self.rollouts[0]}
        return {"label": f"{label} ({len(self.rollouts)} rollouts)",
                "href": f"{self.page}#task={urllib.parse.quote(task_id, safe='')}"}


def _health_view(tasks: pl.DataFrame, findings: pl.DataFrame,
                 rollouts: Mapping[tuple[str, str | None, str], Sequence[TaskRollouts]] | None = None
                 ) -> list[dict[str, Any]]:
    """The health page: per dataset and release, its counts (per code, kind and effect; tasks per kind) and
    each task with findings or a failed check — defects first, then by its most severe kind (:data:`KINDS_ORDER`),
    natural task order within — with its kinds, codes and effects as filter tokens and links to its
    ``rollouts`` in the site."""
    out = []
    for (dataset, release), group in sorted(tasks.partition_by(["dataset", "release"], as_dict=True).items()):
        found = findings.filter((pl.col("dataset") == dataset) & (pl.col("release") == release))
        by_task: dict[str, list[dict[str, Any]]] = {}
        for row in found.iter_rows(named=True):
            by_task.setdefault(row["task_id"], []).append(row)
        sound = {r["task_id"]: r for r in group.iter_rows(named=True)}
        counts = [(code, kind, effect, found.filter((pl.col("code") == code) & (pl.col("kind") == kind)
                                                   & (pl.col("effect") == effect))["task_id"].n_unique())
                  for code, spec in CODES.items() for kind in spec.kinds for effect in spec.effects]
        rows = []
        for t in sorted(sound, key=natural_key):
            listed = by_task.get(t, [])
            kinds = sorted({f["kind"] for f in listed} | ({CHECK_FAILED} if sound[t]["error"] else set()),
                           key=_KIND_RANK.__getitem__)
            if not kinds:
                continue
            rows.append({"task_id": t, "anchor": health_anchor(dataset, release, t), "sound": sound[t]["sound"],
                         "error": sound[t]["error"], "findings": listed, "kinds": kinds,
                         "codes": ordered_codes(f["code"] for f in listed),
                         "effects": [e for e in EFFECTS if any(f["effect"] == e for f in listed)],
                         "rollouts": [r.link(t) for r in (rollouts or {}).get((dataset, release, t), ())]})
        rows.sort(key=lambda r: _KIND_RANK[r["kinds"][0]])  # stable: natural task order within a kind
        per_kind = [(kind, sum(kind in r["kinds"] for r in rows)) for kind in KINDS_ORDER]
        out.append({
            "dataset": dataset, "release": release, "tasks": group.height, "id": path_label(f"{dataset}.{release}"),
            "sound": int(group["sound"].sum() or 0), "failed": group["sound"].null_count(),
            "counts": [c for c in counts if c[3]], "per_kind": [k for k in per_kind if k[1]],
            "codes": sorted({c for r in rows for c in r["codes"]}, key=list(CODES).index),
            "effects": [e for e in EFFECTS if any(e in r["effects"] for r in rows)], "rows": rows})
    return out


def _dataset_sections(summaries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The index's sections: per dataset its blocks, their PEC curves in one plot and the tools their
    first failures happen at."""
    by_dataset: dict[str, list[Mapping[str, Any]]] = {}
    for item in summaries:
        by_dataset.setdefault(item["block"].dataset, []).append(item)
    sections = []
    for dataset, items in by_dataset.items():
        anchor = "dataset-" + path_label(dataset)
        curves = [(item, item["summary"]["glance"].curve) for item in items if item["summary"]["glance"].curve]
        top = max((len(c.estimate) for _, c in curves), default=1)
        series = []
        for i, (item, curve) in enumerate(curves):
            colour, dash = series_style(i)
            block = item["block"]
            series.append(Series(f"{block.model} · {block.method}", f"{block.folder}/index.html", colour, dash, curve))
        sections.append({
            "dataset": dataset, "anchor": anchor, "blocks": list(items), "top": top,
            "rollouts": sum(item["summary"]["rollouts"] for item in items),
            "failures": sum(item["summary"]["glance"].failures.height for item in items),
            "plot": pec_plot(series, top, f"{anchor}-caption") if series else None,
            "banded": any(s.curve.low is not None for s in series),
            "series": [{"label": s.label, "href": s.href, "colour": s.colour, "dash": s.dash,
                        "pec1": estimate_text(s.curve.estimate[0])} for s in series],
            "tools": dataset_tools([(item["block"], item["summary"]["glance"]) for item in items],
                                   lambda block: f"{block.folder}/index.html")})
    return sections


def _unaudited_of(block: Block, why: Any) -> dict[str, str]:
    """Why each rollout of ``block`` whose task has no health has none (``why``: :func:`unaudited_reasons`)."""
    unaudited = block.episodes.filter(pl.col("task_sound").is_null())
    return {ep["rollout_id"]: why(ep) for ep in unaudited.iter_rows(named=True)}


def _table_links(frame: pl.DataFrame, blocks: Mapping[tuple[str, str, str], Block],
                 pools: Mapping[str, Sequence[str]], pool: str | None) -> list[dict[str, Any]]:
    """Rows of a rendered table with the pages they stand for: a G.1 row its block's page; a pooled
    F.1 row its pool page (``href``), which links every member dataset's block (``links``)."""
    rows = []
    for r in frame.iter_rows(named=True):
        datasets = [r["dataset"]] if pool is None else list(pools.get(pool, [pool]))
        links = [{"label": d, "href": f"{blocks[(d, r['model'], r['method'])].folder}/index.html",
                  "block": blocks[(d, r["model"], r["method"])]}
                 for d in datasets if (d, r["model"], r["method"]) in blocks]
        href = links[0]["href"] if pool is None and links else None
        if pool is not None:
            href = f"pools/{path_label(pool)}/{path_label(r['model'])}/{path_label(r['method'])}.html"
        rows.append({"cells": r, "links": links, "href": href, "pool": pool})
    return rows


def _readable_stats(stats_path: Path | None) -> pl.DataFrame | None:
    """The statistics of this version at ``stats_path``; None when there are none (or of an older version)."""
    if stats_path is None or not stats_path.is_file():
        return None
    stats = read_parquet(stats_path)
    return paper_rows(stats) if all(c in stats.columns for c in STATS_SCHEMA) else None


def _tables(stats_path: Path | None, blocks: Sequence[Block], pools: Mapping[str, Sequence[str]],
            methods: Sequence[str], report: SiteReport) -> dict[str, Any] | None:
    """G.1, G.1 per BFCL task category (from the ``categories.parquet`` beside ``stats_path``, where there is
    one) and F.1 of ``stats_path`` with their links; None (and a note) when there are none."""
    if stats_path is None or not stats_path.is_file():
        report.notes.append("no stats/stats.parquet in the results root: the site has no intervals")
        return None
    stats = _readable_stats(stats_path)
    if stats is None:  # an older version's table: the blocks still render
        missing = [c for c in STATS_SCHEMA if c not in read_parquet(stats_path).columns]
        report.notes.append(f"{stats_path} is not a stats table of this version (no column(s) "
                            f"{', '.join(missing[:6])}): run `prefix-audit stats` again for Tables G.1 and F.1")
        return None
    by_key = {b.key: b for b in blocks}
    # G.1 as table_G1.md has it: its unsound-tasks column with their defect codes from the blocks' episodes
    episodes = pl.concat([b.episodes.select(*BLOCK_KEYS, "task_id", "task_sound", "task_defects") for b in blocks]) \
        if blocks else None
    g1 = table_g1(stats.filter(~pl.col("dataset").is_in(list(pools))), K_MAX,
                  health=health_cells(stats, episodes, pools))
    out: dict[str, Any] = {"g1": {"columns": display_columns(g1), "rows": _table_links(g1, by_key, pools, None)},
                           "f1": [], "categories": None}
    per_category = stats_path.parent / "categories.parquet"
    if per_category.is_file():
        categories = read_parquet(per_category)
        if all(c in categories.columns for c in CATEGORY_STATS_SCHEMA):
            table = table_task_categories(categories, K_MAX)
            columns = ["dataset", "model", "method", "category", "N", "final success", "recorded accuracy", "TER",
                       "mean FED", *(f"PEC@{k}" for k in range(1, K_MAX + 1))]
            out["categories"] = {"columns": columns, "rows": _table_links(table, by_key, pools, None)}
        else:
            report.notes.append(f"{per_category} is not a per-category stats table of this version: run "
                                "`prefix-audit stats` again for G.1 per task category")
    for pool in sorted(pools):
        f1 = table_f1(stats, pool, methods)
        columns = ["model", "method", "N", "TER", "mean FED", "AUC-PEC", "final success", "RR"]
        out["f1"].append({"pool": pool, "members": list(pools[pool]), "columns": columns,
                          "rows": _table_links(f1, by_key, pools, pool)})
    return out


def render_site(blocks: Sequence[Block], stats_path: str | os.PathLike[str] | None,
                pools: Mapping[str, Sequence[str]] | None = None, report: SiteReport | None = None,
                health: tuple[pl.DataFrame, pl.DataFrame] | None = None,
                import_quarantine: Sequence[str] = (),
                unaudited: Mapping[tuple[str, str | None, str], str] | None = None, workers: int = 1,
                into: Path | None = None, methods: Sequence[str] = ()) -> dict[str, bytes]:
    """Every file of the site of ``blocks`` (and Tables G.1 and F.1 of ``stats_path`` when given, the
    health page of ``health``: the per-task and findings tables of :func:`read_health`, each task linking
    to its rollouts, and on the index the lines of ``import_quarantine``: what the import quarantined, by
    cause), by site-relative POSIX path; a task "not audited" says why (:func:`unaudited_reasons` of
    ``health`` and ``unaudited``: :func:`read_unaudited`); notes go to ``report``. The blocks' and rollouts'
    pages are rendered by ``workers`` processes (the same bytes whatever their number); given a folder
    ``into``, they write those pages there themselves (``report.written`` has their sizes) and the mapping
    holds the other files."""
    report = report if report is not None else SiteReport()
    env = environment()
    files: dict[str, bytes] = {}
    has_health = health is not None and health[0].height > 0
    why_unaudited = unaudited_reasons(health[0] if health is not None else pl.DataFrame(schema=pl.Schema(TASKS_SCHEMA)),
                                      unaudited or {})

    def page(path: str, template: str, **context: Any) -> None:
        folder = str(PurePosixPath(path).parent) if "/" in path else ""
        html = env.get_template(template).render(up=up_to_root(folder), has_health=has_health, **context)
        files[path] = html.encode("utf-8")

    stats = _readable_stats(Path(stats_path) if stats_path is not None else None)

    summaries = []
    summary_of: dict[str, dict[str, Any]] = {}  # by block folder, for the index and the pool pages
    trusts = []  # the blocks of imported logs against their records, for the index
    jobs = [job for block in blocks
            for job in block_jobs(block, stats, has_health, _unaudited_of(block, why_unaudited))]
    blocks_of_jobs = iter(blocks)  # a block's own job comes first of its jobs, in block order

    def take(done: BlockPages | list[tuple[str, bytes | int]]) -> None:
        if isinstance(done, BlockPages):
            block = next(blocks_of_jobs)
            summary_of[block.folder] = done.summary
            summaries.append({"block": block, "summary": done.summary})
            if done.trust is not None:
                trusts.append({"block": block, "trust": done.trust, "warnings": done.trust.warnings(),
                               "replay": share_text(done.trust.reproduced, done.trust.compared),
                               "verdicts": share_text(done.trust.same_verdict, done.trust.compared)})
            done = done.files
        for path, data in done:
            if isinstance(data, int):
                report.written[path] = data
            else:
                files[path] = data

    tables = _tables(Path(stats_path) if stats_path is not None else None, blocks, pools or {}, methods, report)
    with WorkerPool(workers, into, preload=["prefix_audit.reports.block_pages"]) as pool:
        rendered = pool.map(render_job, jobs)
        first = next(rendered, None)  # the workers are busy from here: this process renders its pages meanwhile
        page("tables.html", "tables.html.j2", tables=tables, notes=report.notes)
        page("glossary.html", "glossary.html.j2", terms=TERMS)
        if health is not None and has_health:
            page("health.html", "health.html.j2", releases=_health_view(*health, _task_rollouts(blocks)), codes=CODES,
                 kinds=KINDS, effects=EFFECTS, kinds_order=KINDS_ORDER)
        for done in [first] if first is not None else []:
            take(done)
        for done in rendered:
            take(done)
    for table in (tables or {}).get("f1", []):  # a pooled row's page: its member blocks side by side
        for row in table["rows"]:
            members = [{"block": link["block"], "summary": summary_of[link["block"].folder], "show_dataset": True}
                       for link in row["links"]]
            page(row["href"], "pool.html.j2", row=row, table=table, blocks=members, categories=CATEGORIES)
    page("index.html", "index.html.j2", datasets=_dataset_sections(summaries), categories=CATEGORIES,
         n_blocks=len(blocks), rollouts=sum(b.episodes.height for b in blocks), has_tables=tables is not None,
         notes=report.notes, trust=trusts, import_quarantine=import_quarantine)
    return files | _assets(env)


def _task_rollouts(blocks: Sequence[Block]) -> dict[tuple[str, str | None, str], list[TaskRollouts]]:
    """Per task (dataset, release, task id): its rollouts' pages, block by block, for the health page."""
    out: dict[tuple[str, str | None, str], list[TaskRollouts]] = {}
    for block in blocks:
        name = BlockName(block.dataset, block.model, block.method, block.folder)
        for key, list_page, hrefs in task_pages(block):
            out.setdefault(key, []).append(TaskRollouts(name, list_page, hrefs))
    return out


def _assets(env: Environment) -> dict[str, bytes]:
    """The site's static files (styles, scripts), by site-relative path."""
    assert env.loader is not None, "the site's templates have a loader"
    return {f"assets/{name}": env.loader.get_source(env, f"assets/{name}")[0].encode("utf-8") for name in _ASSETS}


def with_labels(blocks: Sequence[Block], labels_dir: str | os.PathLike[str]) -> list[Block]:
    """The blocks with their human step labels and labelled entries from a label comparison's folder
    (:func:`prefix_audit.statistics.labels.write_label_comparison`)."""
    labels = _typed(read_parquet(Path(labels_dir) / LABEL_FILES[0]), LABEL_SCHEMA)
    entries = _typed(read_parquet(Path(labels_dir) / LABEL_FILES[1]), ENTRY_SCHEMA)

    def of(frame: pl.DataFrame, block: Block) -> pl.DataFrame:
        return frame.filter(pl.col("dataset") == block.dataset, pl.col("model") == block.model,
                            pl.col("method") == block.method)
    return [dataclasses.replace(b, labels=of(labels, b), label_entries=of(entries, b)) for b in blocks]


def write_site(episodes_paths: Sequence[str | os.PathLike[str]], site: str | os.PathLike[str], *,
               scored_root: str | os.PathLike[str], stats_path: str | os.PathLike[str] | None = None,
               pools: Mapping[str, Sequence[str]] | None = None, methods: Sequence[str] = (),
               labels_dir: str | os.PathLike[str] | None = None,
               health_dir: str | os.PathLike[str] | None = None,
               import_quarantine: Sequence[str | os.PathLike[str]] = (), workers: int | None = None) -> SiteReport:
    """Render the site of these episodes files (see :func:`read_blocks`) and the statistics into
    ``site`` as one commit, with the human step labels of ``labels_dir``, the task health under
    ``health_dir`` (:func:`read_health`: each rollout marked with its task's health or why it has none,
    :func:`read_unaudited`; the findings on a page of their own) and the import's quarantine files
    ``import_quarantine`` where given, its rollout pages rendered by ``workers`` processes (default: one per
    :data:`ROLLOUTS_PER_WORKER` rollouts, at most the cores); return its counts and sizes."""
    report = SiteReport()
    blocks = read_blocks(episodes_paths, scored_root, report.notes)
    health = read_health(health_dir)
    if health[0].height:
        blocks = [dataclasses.replace(b, episodes=with_task_health(b.episodes, health[0])) for b in blocks]
    if workers is None:
        workers = min(default_workers(), 1 + sum(b.episodes.height for b in blocks) // ROLLOUTS_PER_WORKER)
    with replaced_tree(site) as tree:
        files = render_site(with_labels(blocks, labels_dir) if labels_dir is not None else blocks, stats_path, pools,
                            report, health, quarantine_tally([Path(p) for p in import_quarantine]).lines(),
                            read_unaudited(health_dir), workers, into=tree.path, methods=methods)
        for path, data in sorted(files.items()):
            target = tree.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    sizes = report.written | {path: len(data) for path, data in files.items()}
    report.blocks = sum(1 for p in sizes if p.endswith("/index.html") and p.startswith("blocks/"))
    report.rollouts = sum(1 for p in sizes if "/r/" in p)
    report.pages = sum(p.endswith(".html") for p in sizes)
    report.bytes = sum(sizes.values())
    report.largest_page = max(sizes.items(), key=lambda ps: (ps[1], ps[0]))
    return report


def view_results(root: str | os.PathLike[str], site: str | os.PathLike[str],
                 pools: Mapping[str, Sequence[str]] | None = None, methods: Sequence[str] = (),
                 workers: int | None = None) -> SiteReport:
    """``prefix-audit view ROOT -o SITE``: every scored block of a results root, with its statistics (its
    rollout pages rendered by ``workers`` processes: :func:`write_site`)."""
    root = Path(root)
    labels = root / "labels"
    # `tasks -o DIR` writes the health of a release on its own: a site of its health page alone
    health_dir = root if (root / "tasks.parquet").is_file() and not (root / "scored").is_dir() else root / "health"
    episodes = [] if health_dir == root else scored_blocks(root)
    imported = root / "rollouts" / "imported"
    return write_site(episodes, site, scored_root=root / "scored", stats_path=root / "stats" / "stats.parquet",
                      pools=pools, methods=methods, labels_dir=labels if (labels / LABEL_FILES[1]).is_file() else None,
                      health_dir=health_dir, import_quarantine=sorted(imported.rglob("*quarantine.jsonl")),
                      workers=workers)
