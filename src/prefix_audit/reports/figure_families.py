"""Drawing families of figures (:mod:`.figures`) into their folders: which kinds each family draws from which
table, the drawing processes (each figure drawn alone, so the files do not depend on their number), and each
family's ``index.json`` (and the curves family's ``planning.txt``)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl

from prefix_audit.core.io import atomic_write_text, read_parquet
from prefix_audit.core.parallel import exit_with_parent
from prefix_audit.statistics.stats import paper_rows

from .figures import (
    INDEX_NAME,
    PLANNING_NAME,
    check_stem_collisions,
    consistency,
    dataset_models,
    depth_decomposition,
    failure_categories_by_depth,
    failure_origins,
    label_offsets,
    min_block_n,
    pec_curves,
    planning_note,
)

log = logging.getLogger(__name__)

# Figure family -> the kinds it draws. One output directory per family, grouped by the table the
# kinds are drawn from (curves: stats; categories: FED table), so that a new bootstrap seed redraws
# the curves and leaves the category figures alone.
FAMILIES = {"curves": ("pec", "depth", "consistency"), "categories": ("categories",), "origins": ("origins",),
            "labels": ("offsets",)}

_FRAMES: dict[str, pl.DataFrame] = {}  # the tables a drawing process works from, by path


def _load_frames(paths: Sequence[str]) -> None:
    """A drawing worker's start: the tables, and an end with the job's process (see exit_with_parent)."""
    exit_with_parent()
    _FRAMES.update({path: _figure_table(path) for path in paths})


def _figure_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """The table figures are drawn from: a stats table's paper rows (the agent-attributable ones, on
    FED_agent, are drawn by none), or the FED table as it is."""
    table = read_parquet(path)
    return paper_rows(table) if "attribution" in table.columns else table


_DRAW = {
    "pec": lambda table, out, block: pec_curves(table, out, [block]),
    "depth": lambda table, out, block: depth_decomposition(table, out, [block]),
    "consistency": lambda table, out, block: consistency(table, out, [block]),
    "offsets": lambda table, out, block: label_offsets(table, out, [block]),
    "categories": lambda table, out, block: failure_categories_by_depth(table, out, blocks=[block]),
    "origins": lambda table, out, block: failure_origins(table, out, blocks=[block]),
}


def _draw_figure(job: tuple[str, str, Path, tuple[str, str]]) -> list[Path]:
    kind, table, out, block = job
    return _DRAW[kind](_FRAMES[table], out, block)


def write_figures(
    family: str,
    table_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    epsilon: float = 0.05,
    workers: int = 1,
) -> list[Path]:
    """Write one family of figures and its ``index.json`` into ``out_dir``; return the figures.

    ``curves``: PEC curves, depth decompositions and (for blocks with repeated trials) within-task
    consistency from the stats table, plus ``planning.txt`` (for the smallest block size N in it).
    ``categories``: first-failure categories by depth, and ``origins``: first failures by whose error
    they are, from the FED table. ``labels``: FED's offsets from the human first failure, from a label
    comparison's entries table. ``index.json`` lists the files (relative to ``out_dir``, sorted).
    ``workers`` processes draw the figures (each figure is drawn alone, so the files do not depend on it).
    """
    return write_families({family: (table_path, out_dir)}, epsilon=epsilon, workers=workers)[family]


def write_families(
    families: Mapping[str, tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    *,
    epsilon: float = 0.05,
    workers: int = 1,
) -> dict[str, list[Path]]:
    """:func:`write_figures` of several families at once (family → its table and folder), drawn by one
    pool of ``workers`` processes: each process starts once (matplotlib and the tables loaded once), not
    once per family. Returns each family's figures."""
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown figure family {unknown[0]!r}; expected one of {sorted(FAMILIES)}")
    paths = sorted({str(table) for table, _ in families.values()})
    _FRAMES.clear()
    _FRAMES.update({path: _figure_table(path) for path in paths})
    jobs, blocks = [], {}
    for family, (table_path, out_dir) in families.items():
        table = _FRAMES[str(table_path)]
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        drawn_rows = table.filter(pl.col("rollout_id").is_not_null()) if family == "labels" else table
        blocks[family] = dataset_models(drawn_rows)
        check_stem_collisions(blocks[family])
        jobs += [(kind, str(table_path), Path(out_dir), block) for kind in FAMILIES[family] for block in blocks[family]]
    if workers > 1 and len(jobs) > 1:
        # spawn, not fork: forking after polars has started its thread pool can deadlock.
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_load_frames, initargs=(paths,)) as pool:
            drawn = list(pool.map(_draw_figure, jobs))
    else:
        drawn = [_draw_figure(job) for job in jobs]
    written: dict[str, list[Path]] = {}
    for family, (table_path, out_dir) in families.items():
        out = Path(out_dir)
        written[family] = sorted(p for job, files in zip(jobs, drawn, strict=True) if job[0] in FAMILIES[family]
                                 for p in files)
        index: dict[str, object] = {"figures": [p.relative_to(out).as_posix() for p in written[family]]}
        if family == "curves":
            table = _FRAMES[str(table_path)]
            atomic_write_text(out / PLANNING_NAME, planning_note(min_block_n(table), epsilon))
            index["planning"] = PLANNING_NAME
        atomic_write_text(out / INDEX_NAME, json.dumps(index, indent=2, sort_keys=True) + "\n")
        log.info("figures (%s): %d files for %d block(s) in %s", family, len(written[family]), len(blocks[family]),
                 out)
    _FRAMES.clear()
    return written
