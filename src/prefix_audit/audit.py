"""``prefix-audit audit LOG... -o DIR``: logs that exist, audited in one command.

Detect each log's format, import it, score every block, merge the FED table, compute the
statistics and write the tables — into ``DIR`` laid out as the workflow's ``results/``:

* ``rollouts/imported/<dataset>/<model>/<method>.jsonl`` per block, ``rollouts/imported/quarantine.jsonl``
  for entries no block could take;
* ``scored/<dataset>/<model>/<method>/{actions.parquet, episodes.parquet, quarantine.jsonl}``;
* ``fed/episodes.parquet``, ``stats/stats.parquet``, ``tables/table_*.{csv,md,tex}``;
* ``.prefix-audit-files.json``: every file of the audit with its sha256.

So ``stats``, ``tables`` and ``progress`` read it as they read a workflow run. The audit is written
into a staging folder inside ``DIR`` and committed as one set (:func:`prefix_audit.core.io.staged_tree`):
a crash leaves the previous audit whole, and files of a previous audit into ``DIR`` that this one
does not write are removed in the same step — other files in ``DIR`` are never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from .core.io import path_label, staged_tree
from .core.records import BadLine, Located
from .ingest.imports import IMPORTED, ImportReport, imported_rollouts_path, read_logs, write_quarantine, write_records
from .replay.contract import Benchmark
from .replay.fed import merge_episodes
from .replay.scoring import ScoreOutputs, ScoreReport, score_file
from .replay.trust import DEFAULT_MIN_AGREEMENT, worst
from .reports.tables import table_files, write_tables
from .statistics.stats import TAU_POOL, write_stats

log = logging.getLogger(__name__)


@dataclass
class AuditReport:
    imported: ImportReport
    blocks: dict[tuple[str, str, str], ScoreReport] = field(default_factory=dict)
    headlines: dict[tuple[str, str, str], str] = field(default_factory=dict)
    tables: list[Path] = field(default_factory=list)
    min_agreement: float = DEFAULT_MIN_AGREEMENT

    def lines(self) -> list[str]:
        """Per block: its counts, its headline, and how far it agrees with what its logs recorded
        (then the warnings, worst first)."""
        out = self.imported.lines()
        for key, report in sorted(self.blocks.items()):
            out.append(f"{'/'.join(key)}: {report.summary()}")
            recorded = [h for b in report.trust if b.key == key and (h := b.headline()) is not None]
            if key in self.headlines:
                # The benchmark's own headline as the logs recorded it, next to final success.
                out.append(f"  {'; '.join([self.headlines[key], *(f'recorded {h}' for h in recorded)])}")
            out += [f"  {line}" for line in report.trust_lines(self.min_agreement)]
        return out

    def worst(self) -> int:
        """The highest trust-warning severity over the blocks (0: every block agrees with its logs)."""
        return worst([b for report in self.blocks.values() for b in report.trust], self.min_agreement)


def _headlines(stats: pl.DataFrame) -> dict[tuple[str, str, str], str]:
    """Per block: TER over its prefix cohort and final success over every entry, with their counts."""
    rows = stats.filter(pl.col("versus").is_null() & pl.col("metric").is_in(["ter", "final_success"]))
    out: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in rows.iter_rows(named=True):
        out.setdefault((r["dataset"], r["model"], r["method"]), {})[r["metric"]] = r

    def share(r: dict) -> str:
        return "undefined" if r["estimate"] is None else f"{r['estimate']:.3f} of {r['n_rollouts']}"

    return {key: f"TER {share(m['ter'])}; final success {share(m['final_success'])}"
            for key, m in out.items() if "ter" in m and "final_success" in m}


def audit_logs(logs: Sequence[str | Path], out_dir: str | Path, open_dataset: Callable[[str], Benchmark], *,
               kind: str | None = None, model: str | None = None, method: str = IMPORTED,
               resamples: int = 10_000, seed: int = 0, k_max: int = 4, confidence: float = 0.95,
               workers: int = 1, min_agreement: float = DEFAULT_MIN_AGREEMENT) -> AuditReport:
    """Audit ``logs`` into ``out_dir`` (see the module docstring); raises ValueError when no entry
    of any log could be imported (after committing the quarantine that says why)."""
    out = Path(out_dir)
    with staged_tree(out) as stage:
        report = _audit_into(stage, logs, open_dataset, kind=kind, model=model, method=method,
                             resamples=resamples, seed=seed, k_max=k_max, confidence=confidence, workers=workers)
    report.min_agreement = min_agreement
    if not report.blocks:
        raise ValueError(f"no entry of {len(report.imported.logs)} log(s) could be imported "
                         f"(see {out / 'rollouts' / IMPORTED / 'quarantine.jsonl'})")
    report.tables = [out / path.relative_to(stage) for path in report.tables]
    return report


def _audit_into(out: Path, logs: Sequence[str | Path], open_dataset: Callable[[str], Benchmark], *,
                kind: str | None, model: str | None, method: str, resamples: int, seed: int, k_max: int,
                confidence: float, workers: int) -> AuditReport:
    report = AuditReport(ImportReport())
    by_block: dict[tuple[str, str, str], list[Located | BadLine]] = {}
    unplaced: list[BadLine] = []
    for item in read_logs(logs, open_dataset, kind=kind, model=model, method=method, report=report.imported):
        if isinstance(item, BadLine):
            unplaced.append(item)
        else:
            r = item.rollout
            by_block.setdefault((r.dataset, r.model, r.method), []).append(item)
    write_quarantine(unplaced, out / "rollouts" / IMPORTED / "quarantine.jsonl")
    if not by_block:
        return report
    episodes = []
    for (dataset, block_model, block_method), items in sorted(by_block.items()):
        rollouts = imported_rollouts_path(out, dataset, block_model, block_method)
        write_records(items, rollouts, rollouts.with_suffix(".quarantine.jsonl"))
        scored = ScoreOutputs.in_dir(out / "scored" / dataset / path_label(block_model) / path_label(block_method))
        report.blocks[(dataset, block_model, block_method)] = score_file(rollouts, scored, open_dataset)
        episodes.append(scored.episodes)
    merge_episodes(episodes, out / "fed" / "episodes.parquet")
    stats = write_stats(out / "fed" / "episodes.parquet", out / "stats" / "stats.parquet", resamples=resamples,
                        seed=seed, k_max=k_max, confidence=confidence, pools=TAU_POOL, workers=workers)
    report.headlines = _headlines(pl.read_parquet(stats))
    report.tables = write_tables(stats, table_files(out / "tables"), episodes_path=out / "fed" / "episodes.parquet")
    return report
