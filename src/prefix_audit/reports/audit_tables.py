"""The tables of how far an audit can be trusted: its agreement with what imported logs recorded (trust),
benchmark health per finding code (task health), and FED beside human step labels (labels, label categories)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from prefix_audit.core.health import CODES, DEFECT
from prefix_audit.core.io import natural_key
from prefix_audit.replay.trust import BlockTrust, share_text
from prefix_audit.statistics.labels import LANDINGS
from prefix_audit.statistics.settings import BLOCK_KEYS

from .table_render import MISSING, fmt_ci

TRUST_DISPLAY = ("dataset", "model", "method", "entries", "Y agrees", "replay reproduces", "ok/error agrees",
                 "undecodable steps", "no-call entries", "unknown-tool calls", "flagged")
# Shown after "entries" when some block's logs record the benchmark's own score.
TRUST_HEADLINE = ("final success", "recorded headline")


def trust_display_columns(trust: pl.DataFrame) -> list[str]:
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


EXAMPLE_IDS = 5  # example task ids per code in the health table


def _health_row(audited: tuple[str, str, int], code: str, kind: str, effect: str, ids: list[str],
                n_findings: int) -> dict[str, object]:
    """One row of the health table: the tasks ``ids`` of the ``audited`` (dataset, release, tasks audited)."""
    dataset, release, n_audited = audited
    ids = sorted(set(ids), key=natural_key)
    return {"dataset": dataset, "release": release, "code": code, "kind": kind, "effect": effect,
            "tasks": f"{len(ids)} of {n_audited}", "n_tasks": len(ids), "of": n_audited, "findings": n_findings,
            "examples": ", ".join(ids[:EXAMPLE_IDS]) + (", …" if len(ids) > EXAMPLE_IDS else "")}


def table_task_health(tasks: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """Benchmark health per dataset and release: per code found and per intent (kind) and effect of its
    findings, the tasks with it (of those audited), its findings and example task ids (natural order); then
    the unsound tasks (any defect) and the tasks whose check could not run."""
    schema: dict[str, pl.DataType] = {"dataset": pl.Utf8(), "release": pl.Utf8(), "code": pl.Utf8(),
                                      "kind": pl.Utf8(), "effect": pl.Utf8(), "tasks": pl.Utf8(), "n_tasks": pl.Int64(),
                                      "of": pl.Int64(), "findings": pl.Int64(), "examples": pl.Utf8()}
    rows = []
    for (dataset, release), group in sorted(tasks.partition_by(["dataset", "release"], as_dict=True).items()):
        audited = (dataset, release, group.height)
        found = findings.filter((pl.col("dataset") == dataset) & (pl.col("release") == release))
        for code, spec in CODES.items():
            for kind in spec.kinds:
                for effect in spec.effects:
                    these = found.filter((pl.col("code") == code) & (pl.col("kind") == kind)
                                         & (pl.col("effect") == effect))
                    if these.height:
                        rows.append(_health_row(audited, code, kind, effect, these["task_id"].to_list(), these.height))
        unsound = group.filter(pl.col("sound").not_())
        rows.append(_health_row(audited, "unsound (any defect)", DEFECT, "", unsound["task_id"].to_list(),
                                found.filter(pl.col("kind") == DEFECT).height))
        failed = group.filter(pl.col("sound").is_null())
        if failed.height:
            rows.append(_health_row(audited, "check failed", "", "", failed["task_id"].to_list(), 0))
    return pl.DataFrame(rows, schema=schema)


LABEL_SHARES = (("fully executable", "executable"), ("FED fired", "fired"),
                ("FED on a failure step", "fed_on_failure"), ("FED at first failure", "at"),
                ("FED before it", "before"), ("FED after it", "after"))
OFFSET_QUANTILES = ("min", "q1", "median", "q3", "max")


def _count_text(share: Mapping[str, Any]) -> str:
    if not share["n"]:
        return "0/0"
    return f"{share['s']}/{share['n']} = {fmt_ci(share['estimate'], share['lo'], share['hi'])}"


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
        row["offset FED - first failure"] = (MISSING if offsets["median"] is None else
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
