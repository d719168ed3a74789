"""``prefix-audit audit LOG... -o DIR``: logs that exist, audited in one command.

Detect each log's format, import it, score every block, merge the FED table, compute the
statistics and write the tables — into ``DIR`` laid out as the workflow's ``results/``:

* ``rollouts/imported/<dataset>/<model>/<method>.jsonl`` per block, ``rollouts/imported/quarantine.jsonl``
  for entries no block could take, ``rollouts/imported/skipped.jsonl`` (where some were) for the files of folders
  named as logs that are no log (each with its cause: :mod:`prefix_audit.replay.log_folders`);
* ``scored/<dataset>/<model>/<method>/{actions.parquet, episodes.parquet, quarantine.jsonl}``;
* ``fed/episodes.parquet``, ``stats/stats.parquet``, ``tables/table_*.{csv,md,tex}``;
* ``figures/{curves,categories,origins}/``: the workflow's figure families (:mod:`prefix_audit.reports.figure_families`:
  PEC curves and depth decompositions, first-failure categories by depth, whose error the first failures are),
  unless asked not to;
* with ``labels``: ``labels/{labels.parquet, entries.parquet, quarantine.jsonl}``, human step labels
  set beside FED (:mod:`prefix_audit.statistics.labels`), their tables and ``figures/labels/`` (FED's
  offsets from the human first failure);
* ``site/``: the audit browser (:mod:`prefix_audit.reports.view`), unless asked not to;
* ``.prefix-audit-files.json``: every file of the audit with its sha256.

So ``stats``, ``tables``, ``view`` and ``progress`` read it as they read a workflow run. Every input is
checked before anything is written; the audit is built beside ``DIR`` and swapped in whole at the very
end (:func:`prefix_audit.core.output_tree.replaced_tree`): a run that fails, is interrupted or killed
leaves the previous audit byte for byte, and the files of a previous audit that this one does not write
go in the same step — other files in ``DIR`` are kept.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from .core.decode import MAX_LINE_BYTES, over_limit
from .core.io import commit_files, name_of_label, path_label, read_parquet
from .core.labels import LabelsFile, read_labels
from .core.output_tree import TreeReplacement, check_output_folder, kept_lines, replaced_tree
from .core.parallel import Progress, WorkerPool
from .core.records import BadLine
from .health.audits import audit_findings, read_audits
from .health.tasks import (
    HealthReport,
    add_findings,
    audit_tasks,
    audited_releases,
    check_release,
    health_contents,
    health_tables,
    requests_of,
    scored_tasks,
    unaudited,
    unaudited_contents,
)
from .ingest.imports import (
    IMPORTED,
    ImportReport,
    LogRequest,
    import_logs,
    imported_rollouts_path,
    worker_modules,
    write_quarantine,
    write_skipped,
)
from .replay import registry
from .replay.contract import Benchmark
from .replay.fed import merge_episodes
from .replay.log_folders import LogExpansion, LogSource, expand_logs
from .replay.scoring import LINES_PER_CHUNK, BlockScoring, Chunk, RowStore, ScoreOutputs, ScoreReport, score_chunks
from .replay.trust import DEFAULT_MIN_AGREEMENT, STRICT_SEVERITY, worst
from .reports.tables import table_files, task_health_texts, write_tables
from .reports.view import SiteReport, view_results
from .statistics.categories import uncategorised_lines, write_category_stats
from .statistics.labels import LabelGroup, LabelReport, write_label_comparison
from .statistics.settings import K_MAX, StatsSettings
from .statistics.stats import ALL, ORIGIN_METRICS, ORIGINS, write_stats

log = logging.getLogger(__name__)


@dataclass
class AuditReport:
    imported: ImportReport
    blocks: dict[tuple[str, str, str], ScoreReport] = field(default_factory=dict)
    headlines: dict[tuple[str, str, str], str] = field(default_factory=dict)
    origins: dict[tuple[str, str, str], str] = field(default_factory=dict)  # first failures by origin
    tables: list[Path] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)  # the figure families of FIGURE_FAMILIES (unless not asked)
    min_agreement: float = DEFAULT_MIN_AGREEMENT
    labels: LabelReport | None = None
    health: HealthReport | None = None  # the health of the audited tasks (None: not asked for)
    site: SiteReport | None = None  # the audit browser (None: not built)
    replaced: TreeReplacement | None = None  # what the audit replaced in its folder
    notes: list[str] = field(default_factory=list)  # what an optional output left out, and why

    def gone_blocks(self) -> list[str]:
        """The blocks of the audit this one replaced that it does not have (they went with it)."""
        if self.replaced is None:
            return []
        return sorted(set(_blocks_listed(self.replaced.previous)) - {"/".join(key) for key in self.blocks})

    def lines(self) -> list[str]:
        """Per block: its counts, its headline, and how far it agrees with what its logs recorded
        (then the warnings, worst first); then where the human labels went."""
        out = self.imported.lines()
        for key, report in sorted(self.blocks.items()):
            out += [f"{'/'.join(key)}: {report.summary()}", *report.quarantine_lines()]
            recorded = [h for b in report.trust if b.key == key and (h := b.headline()) is not None]
            if key in self.headlines:
                # The benchmark's own headline as the logs recorded it, next to final success.
                parts = [self.headlines[key], *(f"recorded {h}" for h in recorded)]
                out.append(f"  {'; '.join(parts + ([self.origins[key]] if key in self.origins else []))}")
            out += [f"  {line}" for line in report.trust_lines(self.min_agreement)]
        out += [f"task health: {line}" for line in self.health.lines()] if self.health is not None else []
        out += self.labels.lines() if self.labels is not None else []
        return out + self.notes + self.replacement_lines()

    def replacement_lines(self) -> list[str]:
        """What replacing the folder's previous audit dropped (its blocks this one lacks) and kept (files no
        audit wrote)."""
        if self.replaced is None:
            return []
        gone = self.gone_blocks()
        was = len(_blocks_listed(self.replaced.previous))
        out = [f"replaced the previous audit in {self.replaced.out}, which had {was} block(s): {len(gone)} of them "
               f"are not in this one and went with it: {', '.join(gone)}"] if gone else []
        return out + kept_lines(self.replaced)

    def worst(self) -> int:
        """The highest trust-warning severity over the blocks (0: every block agrees with its logs); a
        log that ends early is a WARNING (its cut is said in :meth:`lines`)."""
        cut_off = STRICT_SEVERITY if self.imported.cut_off else 0
        return max(cut_off, worst([b for report in self.blocks.values() for b in report.trust], self.min_agreement))


def _blocks_listed(files: Mapping[str, str]) -> list[str]:
    """The blocks (``dataset/model/method``) whose scored episodes a listing of audit files names."""
    blocks = []
    for name in files:
        parts = name.split("/")
        if len(parts) == 5 and parts[0] == "scored" and parts[4] == "episodes.parquet":
            blocks.append("/".join(name_of_label(part) for part in parts[1:4]))
    return sorted(blocks)


def _headlines(stats: pl.DataFrame) -> tuple[dict[tuple[str, str, str], str], dict[tuple[str, str, str], str]]:
    """Per block: TER over its prefix cohort and final success over every entry, with their counts; and
    where the episodes carry attribution, its first failures by origin with TER on the agent's own."""
    wanted = ["ter", "final_success", *ORIGIN_METRICS]
    out: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in stats.filter(pl.col("versus").is_null() & pl.col("metric").is_in(wanted)).iter_rows(named=True):
        metric = r["metric"] if r["attribution"] == ALL else f"{r['metric']}_agent"
        out.setdefault((r["dataset"], r["model"], r["method"]), {})[metric] = r

    def share(r: dict) -> str:
        return "undefined" if r["estimate"] is None else f"{r['estimate']:.3f} of {r['n_rollouts']}"

    def origins(m: dict) -> str | None:
        if not all(metric in m for metric in ORIGIN_METRICS) or not m[ORIGIN_METRICS[0]]["n_rollouts"]:
            return None
        counts = ", ".join(f"{origin} {m[metric]['successes']}"
                           for origin, metric in zip(ORIGINS, ORIGIN_METRICS, strict=True))
        own = f" (TER on the agent's own: {share(m['ter_agent'])})" if "ter_agent" in m else ""
        return f"first failures by origin: {counts}{own}"

    heads = {key: f"TER {share(m['ter'])}; final success {share(m['final_success'])}"
             for key, m in out.items() if "ter" in m and "final_success" in m}
    return heads, {key: text for key, m in out.items() if (text := origins(m)) is not None}


# An audit above this many entries does not build its browser unless asked (`prefix-audit view` builds it
# later): the site costs 1-5 ms and 5-12 KiB an entry (bench/RESULTS.md, "The audit browser").
SITE_ROLLOUTS = 10_000
# The figure families an audit draws, as the workflow's `figures` rule (workflow/rules/common.smk FIGURE_TABLES;
# `labels` too where labels are given).
FIGURE_FAMILIES = ("curves", "categories", "origins")


def block_grouping() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """How the statistics, tables and site of logs audited outside the workflow pool datasets and order
    methods (where the workflow reads its config's ``stats.pools`` and ``agents.methods``): the pools the
    registered benchmarks declare, and prefix-audit's own methods in their order (any other follows, sorted)."""
    from .generation.grid import METHODS  # here, not above: this module is preloaded into worker processes

    return registry.pools(), METHODS


@dataclass(frozen=True)
class AuditSettings:
    """How an audit reads, scores and reports its logs: every choice of ``prefix-audit audit`` but the logs and
    the output folder, one value handed whole down the audit (a new option is a field here and its use).

    Reading: ``kind`` every log's format (None: detected per file), ``options`` the importers' config keys
    (``score_file``, ...: what a log's companions follow in a folder of logs), ``model`` every log's model
    name (None: what each log says), ``method`` the blocks' method. Statistics: ``resamples``, ``seed``,
    ``k_max``, ``confidence`` of the bootstrap intervals; ``exclude_unsound``: the statistics and tables over
    the sound tasks only (they say how many were left out and why). ``labels``: files of human step labels to
    set beside FED. ``health``: audit the health of every task the logs ran, on the release each was scored
    on (``health/<dataset>/``, ``tables/table_task_health.*``), and mark each episode with it (``task_sound``,
    ``task_health``); ``health_cache``: the folder task health is kept in across commands
    (:mod:`prefix_audit.health.cache`; None: every task's health computed here). ``site``: build the audit
    browser into ``site/`` (None: when the audit has at most :data:`SITE_ROLLOUTS` entries). ``figures``:
    draw the workflow's figure families :data:`FIGURE_FAMILIES` (PNG and PDF) into ``figures/<family>/``.
    ``workers``: processes that read the logs and replay the entries, threads of the statistics (the
    outputs do not depend on it). ``min_agreement``: agreement with the logs' records below which a block
    is warned about. ``progress``: a bar on stderr (a line per log and block when stderr is not a terminal).
    """

    kind: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    method: str = IMPORTED
    resamples: int = 10_000
    seed: int = 0
    k_max: int = K_MAX
    confidence: float = 0.95
    exclude_unsound: bool = False
    labels: Sequence[str | Path] = ()
    health: bool = True
    health_cache: str | Path | None = None
    site: bool | None = None
    figures: bool = True
    workers: int = 1
    min_agreement: float = DEFAULT_MIN_AGREEMENT
    progress: bool = False


def audit_logs(logs: Sequence[str | Path], out_dir: str | Path, open_dataset: Callable[[str], Benchmark],
               settings: AuditSettings = AuditSettings()) -> AuditReport:
    """Audit ``logs`` into ``out_dir`` (see the module docstring) as ``settings`` say: files, folders that
    are one log, folders of logs (:func:`~prefix_audit.replay.log_folders.expand_logs`, with the importer
    ``settings.options``). Every input is checked first — a path that does not exist, a folder without any
    log, a labels file that cannot be read, an output folder that cannot be written raise before anything
    is written —; a ValueError when no entry of any log could be imported (its message counts their
    quarantine records by cause), and then too ``out_dir`` is left as it was.

    ``settings.workers`` processes read the logs and replay the entries (``open_dataset`` must then pickle:
    :class:`prefix_audit.replay.registry.Resolver` does), and threads compute the statistics; the
    outputs do not depend on it."""
    check_output_folder(out_dir)
    labels = [read_labels(path) for path in settings.labels]  # a labels file that cannot be read stops the audit first
    missing = [str(path) for path in logs if not os.path.exists(path)]
    if missing:
        raise ValueError(f"no such file or folder: {', '.join(missing)}")
    out = Path(out_dir)
    expansion = expand_logs(logs, settings.kind, settings.options)  # so does a folder without any log
    # The site's pages of an earlier audit are never kept beside this one's (a block gone, a page gone).
    with replaced_tree(out, owned=("site/*",)) as tree, \
            WorkerPool(settings.workers, open_dataset, preload=worker_modules()) as pool:
        report = _audit_into(tree.path, out, expansion, pool, settings, labels)
        if not report.blocks:  # raised inside: nothing of this run lands
            raise ValueError(f"no entry of {len(report.imported.logs)} log(s) could be imported: "
                             f"{'; '.join(report.imported.quarantine.lines())}")
        if settings.site if settings.site is not None else report.imported.rollouts <= SITE_ROLLOUTS:
            report.site = view_results(tree.path, tree.path / "site", *block_grouping())
    report.min_agreement = settings.min_agreement
    report.replaced = tree
    report.tables = [out / path.relative_to(tree.path) for path in report.tables]
    report.figures = [out / path.relative_to(tree.path) for path in report.figures]
    return report


@dataclass
class _BlockFile:
    """A block's rollout file as the audit appends to it, and its scoring."""

    path: Path
    scoring: BlockScoring
    lines: int = 0


def _chunks_of_logs(out: Path, final: Path, logs: Sequence[LogSource], pool: WorkerPool, report: ImportReport,
                    blocks: dict[tuple[str, str, str], _BlockFile], store: RowStore, settings: AuditSettings,
                    progress: Progress) -> Iterator[Chunk]:
    """Every log's records appended to its blocks' rollout files (under the staging folder ``out``),
    in the logs' order, as each log comes back from a worker, and handed on to be replayed (no
    corpus held: a log's records go to the workers while later logs are still being read). A
    record's place is named where it will be (``final``), not in the staging folder. Entries no
    block could take go to the audit's quarantine."""
    unplaced: list[BadLine] = []
    requests = [LogRequest(str(source.path), source.format, settings.model, settings.method) for source in logs]
    for request, imported in zip(requests, import_logs(requests, pool), strict=True):
        report.merge(imported.report)
        progress.part_done(f"{request.path}: {imported.report.summary()}")
        by_block: dict[tuple[str, str, str], list[bytes]] = {}
        for entry in imported.entries:
            if isinstance(entry, BadLine):
                unplaced.append(entry)
            else:
                by_block.setdefault(entry[0], []).append((entry[1] + "\n").encode("utf-8"))
        for key, lines in by_block.items():
            block = blocks.get(key)
            if block is None:
                path = imported_rollouts_path(out, *key)
                block = blocks[key] = _BlockFile(path, BlockScoring(str(imported_rollouts_path(final, *key)),
                                                                     store=store))
                block.path.parent.mkdir(parents=True, exist_ok=True)
                block.path.with_suffix(".quarantine.jsonl").write_bytes(b"")  # its own, empty, as `import` writes
            with block.path.open("ab") as fh:
                fh.writelines(lines)
            label = block.scoring.path
            numbered = [(block.lines + n, raw) if len(raw) <= MAX_LINE_BYTES
                        else over_limit(label, block.lines + n, len(raw)) for n, raw in enumerate(lines, 1)]
            block.lines += len(lines)
            progress.grow(len(lines))
            for start in range(0, len(numbered), LINES_PER_CHUNK):
                yield key, label, numbered[start:start + LINES_PER_CHUNK]
    write_quarantine(unplaced, out / "rollouts" / IMPORTED / "quarantine.jsonl")
    for block in blocks.values():  # every log is read: a block is whole once its lines are back
        block.scoring.expected = block.lines


def _score_outputs(out: Path, key: tuple[str, str, str]) -> ScoreOutputs:
    dataset, model, method = key
    return ScoreOutputs.in_dir(out / "scored" / dataset / path_label(model) / path_label(method))


def _audit_into(out: Path, final: Path, expansion: LogExpansion, pool: WorkerPool, settings: AuditSettings,
                labels: Sequence[LabelsFile]) -> AuditReport:
    """The audit of the logs of ``expansion`` into the staging folder ``out`` (``final`` once swapped in), with
    the labels files ``settings.labels`` read."""
    report = AuditReport(ImportReport())
    report.imported.skipped.merge(expansion.tally())
    if expansion.skipped:  # only a folder's walk skips files: a file named by hand is a log
        write_skipped(expansion.skipped, out / "rollouts" / IMPORTED / "skipped.jsonl")
    blocks: dict[tuple[str, str, str], _BlockFile] = {}
    bar = Progress("audit", 0, enabled=settings.progress)
    written: dict[tuple[str, str, str], ScoreReport] = {}

    def write(key: tuple[str, str, str]) -> None:  # a whole block, while the others are still replayed
        written[key] = blocks[key].scoring.write(_score_outputs(out, key))
        bar.part_done(f"{'/'.join(key)}: {written[key].summary()}")

    with RowStore(out) as store:  # the blocks' scored rows, on disk until each is written
        chunks = _chunks_of_logs(out, final, expansion.logs, pool, report.imported, blocks, store, settings, bar)
        score_chunks(chunks, lambda key: blocks[key].scoring, pool, bar, on_complete=write)
        bar.close()
        for key in sorted(blocks):
            if key not in written:
                write(key)
            report.blocks[key] = written[key]
    if not blocks:
        return report
    episodes = [_score_outputs(out, key).episodes for key in sorted(blocks)]
    health_files: list[Path] = []
    if settings.health:
        report.health, health_files = _task_health(out, episodes, pool, settings.progress, settings.health_cache)
    merge_episodes(episodes, out / "fed" / "episodes.parquet", health=health_files)
    pools, methods = block_grouping()
    statistics = StatsSettings(resamples=settings.resamples, seed=settings.seed, k_max=settings.k_max,
                               confidence=settings.confidence, pools=pools, methods=methods, workers=pool.workers,
                               exclude_unsound=settings.exclude_unsound)
    stats = write_stats(out / "fed" / "episodes.parquet", out / "stats" / "stats.parquet", statistics)
    report.headlines, report.origins = _headlines(pl.read_parquet(stats))
    per_category = write_category_stats(out / "fed" / "episodes.parquet", out / "stats" / "categories.parquet",
                                        registry.task_categories(), statistics)
    report.notes += uncategorised_lines(read_parquet(out / "fed" / "episodes.parquet"), registry.task_categories())
    labels_dir = out / "labels" if labels else None
    if labels_dir is not None or settings.figures:
        # matplotlib (about 1 s) is imported where figures are drawn: this module is preloaded into every
        # worker pool's server (``prefix-audit tasks`` included), which draws none.
        from .reports.figure_families import write_families, write_figures
    if labels_dir is not None:
        every_block = LabelGroup(labels, [blocks[key].path for key in sorted(blocks)])
        report.labels = write_label_comparison([every_block], out / "fed" / "episodes.parquet", labels_dir)
        write_figures("labels", labels_dir / "entries.parquet", out / "figures" / "labels")
    if settings.figures:
        tables = {"curves": stats, "categories": out / "fed" / "episodes.parquet",
                  "origins": out / "fed" / "episodes.parquet"}
        drawn = write_families({family: (tables[family], out / "figures" / family) for family in FIGURE_FAMILIES},
                               workers=pool.workers)
        report.figures = [path for family in FIGURE_FAMILIES for path in drawn[family]]
    report.tables = write_tables(stats, table_files(out / "tables"), pools=pools, methods=methods,
                                 episodes_path=out / "fed" / "episodes.parquet",
                                 labels_dir=labels_dir, categories_path=per_category)
    if report.health is not None:
        report.tables += commit_files(_task_health_texts(report.health, out / "tables"))
    return report


def _task_health_texts(report: HealthReport, out_dir: Path) -> dict[Path, bytes]:
    """The contents of the task health table of ``report`` in ``out_dir``."""
    findings, tasks = (pl.from_arrow(table) for table in health_tables(report))
    # A pyarrow Table always converts to a DataFrame (only an Array gives a Series); the stubs cannot tell.
    assert isinstance(tasks, pl.DataFrame) and isinstance(findings, pl.DataFrame)
    return task_health_texts(tasks, findings, out_dir)


def _task_health(out: Path, episodes: Sequence[Path], pool: WorkerPool, progress: bool,
                 health_cache: str | Path | None) -> tuple[HealthReport, list[Path]]:
    """The health of every task the blocks ran, on the release each was scored on, written per dataset
    under ``out/health/<dataset>/``, and why the others were not (``out/health/unaudited.json``); the report
    and the per-task tables."""
    open_dataset = pool.shared
    scored = scored_tasks(episodes)
    releases = audited_releases(open_dataset, sorted(scored["dataset"].unique().to_list()))
    report = audit_tasks(list(requests_of(scored, releases)), open_dataset, pool, progress=progress,
                         cache=health_cache)
    report.unaudited = unaudited(scored, releases, report)
    files = []
    for dataset in sorted({r.dataset for r in report.results}):
        part = HealthReport([r for r in report.results if r.dataset == dataset])
        contents = health_contents(part, out / "health" / path_label(dataset))
        commit_files(contents)
        files += [p for p in contents if p.name == "tasks.parquet"]
    commit_files(unaudited_contents(report, out / "health"))  # why the other tasks say "not audited"
    return report, files


@dataclass
class TaskHealthRun:
    """What ``prefix-audit tasks`` did: the tasks audited, the audits' task ids the release lacks, and
    what its outputs replaced (None: nothing written, every task's audit failed)."""

    report: HealthReport
    release: str
    not_in_release: list[str] = field(default_factory=list)
    replaced: TreeReplacement | None = None


def check_task_health(dataset: str, out_dir: str | Path, open_dataset: Callable[[str], Benchmark], *,
                      release: str | None = None, audits: Sequence[str | Path] = (), workers: int = 1,
                      progress: bool = False, health_cache: str | Path | None = None) -> TaskHealthRun:
    """``prefix-audit tasks``: every task of ``dataset``'s ``release`` (default: the dataset's default) audited
    by its benchmark, with the findings of the audit folders ``audits``, written into ``out_dir`` as one tree
    replacing the previous one (:func:`~prefix_audit.core.output_tree.replaced_tree`): ``findings.parquet``,
    ``tasks.parquet``, ``summary.json`` and ``tables/table_task_health.{csv,md,tex}`` — unless the audit of
    every task failed, when ``out_dir`` is left as it was. ``health_cache``: as :class:`AuditSettings` has it."""
    check_output_folder(out_dir)
    bench = open_dataset(dataset)
    release = check_release(bench, release)
    episodes = read_audits(audits, dataset, release, release == bench.health_releases()[0]) if audits else None
    with WorkerPool(workers, open_dataset, preload=[*registry.modules(), __name__]) as pool:
        report = audit_tasks([(dataset, release, None)], open_dataset, pool, progress=progress,
                             cache=health_cache)
    run = TaskHealthRun(report, release)
    if episodes is not None:
        run.not_in_release = add_findings(report, dataset, release, audit_findings(episodes))
    if report.results and report.errors == len(report.results):
        return run
    with replaced_tree(out_dir) as tree:
        commit_files({**health_contents(report, tree.path), **_task_health_texts(report, tree.path / "tables")})
    run.replaced = tree
    return run
