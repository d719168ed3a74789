"""One block's pages of the audit browser — its list of rollouts with where its agents break, and every
rollout's page — rendered in worker processes.

The site (:mod:`~prefix_audit.reports.view`) cuts its work into jobs a
:class:`~prefix_audit.core.parallel.WorkerPool` renders: per block one :class:`BlockJob` (its summary, its
first failures at a glance, its rollout list pages) and one :class:`RolloutsJob` per batch of its rollouts
(their pages). A job carries the rows it needs as tables; each worker turns them into the values its
templates show. Whatever the number of workers, every page is the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.replay.trust import BlockTrust, block_trust, issue_codes, share_text
from prefix_audit.statistics.labels import label_summary
from prefix_audit.statistics.metrics import block_metrics
from prefix_audit.statistics.settings import K_MAX
from prefix_audit.statistics.stats import ORIGINS, cohort_size

from .audit_tables import LABEL_SHARES
from .glance import BlockGlance, block_glance, where_agents_break
from .pages import environment, health_anchor, up_to_root
from .rollout_page import LANDED_WORDS, BlockName, RolloutPage, render_rollout_pages

ROLLOUTS_PER_PAGE = 1000  # rows of one rollout list page (about 0.3 MB)
ROLLOUTS_PER_BATCH = 200  # rollout pages a worker renders at a time (about 2 MB back)
FAILING_CALL_CHARS = 80  # the failing call as a block's rollout list shows it


@dataclass
class Block:
    """One scored block and where its pages go (``folder``: site-relative, POSIX)."""

    dataset: str
    model: str
    method: str
    folder: str
    episodes: pl.DataFrame
    actions: pl.DataFrame
    quarantined: int = 0  # records of its scoring run that are not episodes (quarantine.jsonl)
    quarantine: tuple[str, ...] = ()  # those records, one line per cause
    # Human step labels of its rollouts and the labelled entries (:mod:`prefix_audit.statistics.labels`);
    # None: no labels were given.
    labels: pl.DataFrame | None = None
    label_entries: pl.DataFrame | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.dataset, self.model, self.method


def _band(stats: pl.DataFrame | None) -> dict[str, Any] | None:
    """How the block's statistics (its PEC rows) drew their intervals (resamples, seed, confidence): the
    PEC curve's band is drawn the same way; None without statistics of the block."""
    if stats is None:
        return None
    rows = stats.filter(pl.col("resamples").is_not_null())
    if not rows.height:
        return None
    row = rows.row(0, named=True)
    return {"resamples": int(row["resamples"]), "seed": int(row["seed"]), "confidence": float(row["confidence"])}


def _with_table_intervals(glance: BlockGlance, stats: pl.DataFrame | None) -> BlockGlance:
    """The block's curve with the statistics' own intervals where the statistics have PEC@k (k ≤ their
    k_max), so the band agrees with Table G.1 there; the curve's own bootstrap beyond."""
    curve = glance.curve
    if stats is None or curve is None or curve.low is None or curve.high is None:
        return glance
    rows = stats.filter(pl.col("ci_low").is_not_null())
    low, high = list(curve.low), list(curve.high)
    for k, estimate, lo, hi in rows.select("k", "estimate", "ci_low", "ci_high").iter_rows():
        # only where the statistics are of the same cohort (not of the sound tasks alone: --exclude-unsound)
        if 1 <= k <= len(low) and abs(estimate - curve.estimate[k - 1]) < 1e-12:
            low[k - 1], high[k - 1] = lo, hi
    return dataclasses.replace(glance, curve=dataclasses.replace(curve, low=tuple(low), high=tuple(high)))


def estimate_text(x: float | None) -> str:
    """A point estimate as the pages write it: three decimals, a dash where it is undefined."""
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def block_summary(block: Block) -> dict[str, Any]:
    """The index row of a block: sizes, point estimates and first-failure categories."""
    ep = block.episodes
    trials = ep.group_by("task_id").len()["len"]
    size = cohort_size({"n": ep["task_id"].n_unique(), "trials_min": trials.min(), "trials_max": trials.max(),
                        "n_rollouts": ep.height})
    prefix = ep.filter(pl.col("T").is_not_null())
    known = ep["Y"].drop_nulls()
    row: dict[str, Any] = {
        "N": size, "rollouts": ep.height, "infra": ep.height - prefix.height, "quarantined": block.quarantined,
        "final_success": estimate_text(cast(float, known.mean()) if known.len() else None),
        "final_success_n": known.len(),
        "categories": {c: int((prefix["category"] == c).sum()) for c in CATEGORIES},
        "origins": " · ".join(str(int((prefix["origin"] == o).sum())) for o in ORIGINS)
        if "origin" in prefix.columns else "—",  # a FED table of an earlier version: no attribution
    }
    if prefix.height:
        m = block_metrics(prefix["FED"].to_numpy(), prefix["T"].to_numpy(),
                          prefix["Y"].cast(pl.Float64).fill_null(np.nan).to_numpy(), K_MAX)
        row |= {"ter": estimate_text(m.ter), "pec": [estimate_text(p) for p in m.pec], "cohort": m.n}
    else:
        row |= {"ter": "—", "pec": ["—"] * K_MAX, "cohort": 0}
    return row


def _failing_call(failure: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A rollout's failing action as its block's table names it: the tool and the call, cut short."""
    if failure is None:
        return None
    call = failure["call"] or ""
    return {"tool": failure["tool"], "call": call if len(call) <= FAILING_CALL_CHARS else
            call[:FAILING_CALL_CHARS] + "…", "whole": call}


def _comparison_view(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A block's label comparison as its page shows it: the shares as text, the offsets as bars."""
    if summary is None:
        return None
    shares = [(title, share_text(summary[name]["s"], summary[name]["n"]),
               _interval_text(summary[name])) for title, name in LABEL_SHARES]
    return {"labelled": summary["labelled"], "with_failure": summary["with_failure"], "shares": shares,
            "offsets": summary["offset_counts"], "unit": summary["offset_unit"],
            "most": max((n for _, n in summary["offset_counts"]), default=0),
            "landed": [(LANDED_WORDS.get(k, k), n) for k, n in summary["failure_labels"].items()],
            "categories": summary["categories"]}


def _interval_text(share: Mapping[str, Any]) -> str:
    return "" if share["lo"] is None else f"[{share['lo']:.3f}, {share['hi']:.3f}]"


def _failing_depths(episodes: pl.DataFrame) -> list[int]:
    """The FED values of a block's rollouts that failed (the FED filter's choices)."""
    failed = episodes.filter(pl.col("FED") <= pl.col("T"))
    return sorted(failed["FED"].unique().to_list())


# The columns of the actions a block's own page reads (where its first failures are); its rollout pages
# read them all.
_FAILURE_COLUMNS = ("rollout_id", "j", "terminal", "tool", "call")


@dataclass(frozen=True)
class BlockJob:
    """What a worker needs for one block's own pages: the block (its actions narrowed to
    :data:`_FAILURE_COLUMNS`), its PEC rows of the statistics (None: none), whether the site has a health
    page, and why the tasks of its rollouts that were not audited were not (by rollout id)."""

    block: Block
    stats: pl.DataFrame | None
    has_health: bool
    unaudited: Mapping[str, str]


@dataclass
class BlockPages:
    """A block's own pages and what the index and the pool pages take from them: its summary (with its
    first failures at a glance) and its agreement with its logs."""

    summary: dict[str, Any]
    trust: BlockTrust | None
    files: list[tuple[str, bytes | int]] = field(default_factory=list)  # as :func:`render_job` delivers them


@dataclass(frozen=True)
class RolloutsJob:
    """A batch of one block's rollouts, numbered from ``first``: their episodes, actions, human labels
    and rows of the label comparison (None: no labels), and why their tasks were not audited."""

    name: BlockName
    has_health: bool
    first: int
    episodes: pl.DataFrame
    actions: pl.DataFrame
    labels: pl.DataFrame | None
    compared: pl.DataFrame | None
    unaudited: Mapping[str, str]


def _filtered(frame: pl.DataFrame | None, predicate: pl.Expr) -> pl.DataFrame | None:
    """The rows of ``frame`` (where there is one) that ``predicate`` keeps."""
    return None if frame is None else frame.filter(predicate)


def block_jobs(block: Block, stats: pl.DataFrame | None, has_health: bool,
               unaudited: Mapping[str, str]) -> list[BlockJob | RolloutsJob]:
    """The jobs of one block: its own pages, then its rollout pages in batches of :data:`ROLLOUTS_PER_BATCH`."""
    pec_rows = None if stats is None else stats.filter(
        (pl.col("dataset") == block.dataset) & (pl.col("model") == block.model) & (pl.col("method") == block.method)
        & (pl.col("metric") == "pec") & pl.col("versus").is_null())
    jobs: list[BlockJob | RolloutsJob] = [
        BlockJob(dataclasses.replace(block, actions=block.actions.select(_FAILURE_COLUMNS)), pec_rows, has_health,
                 unaudited)]
    name = BlockName(block.dataset, block.model, block.method, block.folder)
    for start in range(0, block.episodes.height, ROLLOUTS_PER_BATCH):
        episodes = block.episodes.slice(start, ROLLOUTS_PER_BATCH)
        ids = episodes["rollout_id"].to_list()
        in_batch = pl.col("rollout_id").is_in(ids)
        jobs.append(RolloutsJob(name, has_health, start + 1, episodes, block.actions.filter(in_batch),
                                _filtered(block.labels, in_batch), _filtered(block.label_entries, in_batch),
                                {i: unaudited[i] for i in ids if i in unaudited}))
    return jobs


def task_pages(block: Block) -> list[tuple[tuple[str, str | None, str], str, list[str]]]:
    """Per task of ``block`` (dataset, release, task id): the list page that shows its rollouts (a task
    across two pages: its first) and their pages, as the block's pages are numbered."""
    out: dict[tuple[str, str | None, str], tuple[str, list[str]]] = {}
    rows = block.episodes.select("dataset", "release", "task_id").iter_rows()
    for n, key in enumerate(rows, start=1):
        name = "index.html" if n <= ROLLOUTS_PER_PAGE else f"page-{(n - 1) // ROLLOUTS_PER_PAGE + 1}.html"
        out.setdefault(key, (f"{block.folder}/{name}", []))[1].append(f"{block.folder}/r/{n}.html")
    return [(key, page, hrefs) for key, (page, hrefs) in out.items()]


def render_job(into: Path | None, job: BlockJob | RolloutsJob) -> BlockPages | list[tuple[str, bytes | int]]:
    """A job's pages (a :class:`~prefix_audit.core.parallel.WorkerPool` function): each as its path and
    bytes, or — written under the folder ``into`` here, in the worker, so that the pages never travel back —
    its path and size."""
    if isinstance(job, BlockJob):
        return _block_pages(job, into)
    by_rollout: dict[str, list[dict[str, Any]]] = {}  # each rollout's actions by depth
    for action in job.actions.sort("rollout_id", "j").iter_rows(named=True):
        by_rollout.setdefault(action["rollout_id"], []).append(action)
    labelled = job.labels.partition_by("rollout_id", as_dict=True) if job.labels is not None else {}
    compared = {r["rollout_id"]: r for r in job.compared.iter_rows(named=True)} if job.compared is not None else {}
    rollout_pages = [RolloutPage(f"{job.name.folder}/r/{n}.html", n, ep, by_rollout.get(ep["rollout_id"], []),
                                 labelled.get((ep["rollout_id"],)), compared.get(ep["rollout_id"]),
                                 job.unaudited.get(ep["rollout_id"]))
                     for n, ep in enumerate(job.episodes.iter_rows(named=True), start=job.first)]
    return _delivered(into, render_rollout_pages(job.name, job.has_health, rollout_pages))


def _delivered(into: Path | None, pages: list[tuple[str, bytes]]) -> list[tuple[str, bytes | int]]:
    if into is None:
        return list(pages)
    for path, data in pages:
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return [(path, len(data)) for path, data in pages]


def _block_pages(job: BlockJob, into: Path | None) -> BlockPages:
    block, stats = job.block, job.stats
    summary = block_summary(block)
    glance = summary["glance"] = _with_table_intervals(block_glance(block.episodes, block.actions, _band(stats)), stats)
    failing = {r["rollout_id"]: r for r in glance.failures.iter_rows(named=True)}
    trust = next(iter(block_trust(block.episodes)), None)
    rows: list[dict[str, Any]] = []
    for n, ep in enumerate(block.episodes.iter_rows(named=True), start=1):
        rows.append({"ep": ep, "href": f"r/{n}.html", "n": n, "issues": issue_codes(ep["log_issue"]),
                     "health": health_anchor(ep["dataset"], ep["release"], ep["task_id"]),
                     "unaudited": job.unaudited.get(ep["rollout_id"]),
                     "failing": _failing_call(failing.get(ep["rollout_id"]))})
    comparison = next(iter(label_summary(block.labels, block.label_entries)), None) \
        if block.labels is not None and block.label_entries is not None else None
    codes = sorted({code for row in rows for code in row["issues"]})
    chunks = [rows[i:i + ROLLOUTS_PER_PAGE] for i in range(0, len(rows), ROLLOUTS_PER_PAGE)] or [[]]
    names = ["index.html", *(f"page-{i}.html" for i in range(2, len(chunks) + 1))]
    files: list[tuple[str, bytes]] = []
    template = environment().get_template("block.html.j2")
    common = {"up": up_to_root(block.folder), "has_health": job.has_health, "block": block, "summary": summary,
              "categories": CATEGORIES, "fed_values": _failing_depths(block.episodes),
              "trust": trust.lines() if trust else None, "issue_codes": codes,
              "comparison": _comparison_view(comparison), "k_max": K_MAX, "where": where_agents_break(glance.failures),
              "tools": [t for t, _ in glance.tools]}
    for name, chunk in zip(names, chunks, strict=True):
        html = template.render(rows=chunk, task_ids=list(dict.fromkeys(row["ep"]["task_id"] for row in chunk)),
                               pages=[{"name": other, "current": other == name} for other in names]
                               if len(names) > 1 else [], **common)
        files.append((f"{block.folder}/{name}", html.encode("utf-8")))
    return BlockPages(summary, trust, _delivered(into, files))
