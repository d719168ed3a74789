"""Score a file of rollouts: per-action and per-rollout (FED) Parquet, plus a quarantine file.

Every input line ends up in exactly one place: an episode row, or a quarantine record with its
location and reason. The counts are returned and logged so every denominator is visible.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from prefix_audit.core.decode import finite_json
from prefix_audit.core.io import commit_files, parquet_bytes
from prefix_audit.core.records import AGENT_ROLES, BadLine, Located, Rollout, call_steps, read_rollouts

from . import registry
from .checker import EpisodeResult, primary, replay
from .contract import Benchmark, UnknownDataset, UnscorableRollout
from .fed import ACTION_SCHEMA, EPISODE_SCHEMA
from .record_check import DIVERGED, RecordCheck, check_record
from .trust import DEFAULT_MIN_AGREEMENT, BlockTrust, block_trust

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 2_000


@dataclass
class ScoreReport:
    lines_read: int = 0
    scored: int = 0
    infra_errors: int = 0  # of the scored: entries whose model call failed before any action
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    datasets: Counter = field(default_factory=Counter)
    trust: list[BlockTrust] = field(default_factory=list)  # blocks of imported rollouts against their logs

    def summary(self) -> str:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(self.quarantine_reasons.items())) or "none"
        return (f"rollout records read: {self.lines_read}; scored: {self.scored} "
                f"({self.infra_errors} infrastructure failures: T/FED null); "
                f"quarantined: {self.quarantined} ({reasons})")

    def trust_lines(self, min_agreement: float = DEFAULT_MIN_AGREEMENT) -> list[str]:
        """Per block of imported rollouts: agreement with its logs' records and the warnings."""
        many = len(self.trust) > 1
        return [f"{'/'.join(b.key) + ': ' if many else ''}{line}"
                for b in self.trust for line in b.lines(min_agreement)]


_REASON_KINDS = re.compile(r"^(duplicate rollout_id|unknown task_id|replay error: \w+)")


def _reason_kind(reason: str) -> str:
    """A reason's kind for the counts: without the ids and places that make each one unique."""
    known = _REASON_KINDS.match(reason)
    return known.group(1) if known else reason.split(":", 1)[0].split(" (")[0][:60]


def _accounting(rollout: Rollout) -> dict:
    if not rollout.usage:
        return dict.fromkeys(("agent_calls", "agent_tokens", "agent_latency_s", "agent_wall_s",
                              "agent_estimated_calls", "user_sim_tokens", "user_sim_latency_s"))
    agent = [u for u in rollout.usage if u.role in AGENT_ROLES]
    user = [u for u in rollout.usage if u.role == "user_simulator"]
    return {
        "agent_calls": len(agent),
        "agent_tokens": sum(u.input_tokens + u.output_tokens for u in agent),
        "agent_latency_s": _known_sum(u.latency_s for u in agent),
        "agent_wall_s": _known_sum(u.total_s for u in agent),
        "agent_estimated_calls": sum(u.estimated for u in agent),
        "user_sim_tokens": sum(u.input_tokens + u.output_tokens for u in user),
        "user_sim_latency_s": _known_sum(u.latency_s for u in user),
    }


def _known_sum(values: Iterable[float | None]) -> float | None:
    """The sum, or None when a call's value was not recorded (a partial sum would understate it)."""
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def meta_json(meta: dict) -> str:
    """A rollout's meta as valid JSON: NaN and infinities, which logs may carry, as their names."""
    try:
        return json.dumps(meta, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(finite_json(meta), sort_keys=True, ensure_ascii=False, allow_nan=False)


def _record_columns(ep: EpisodeResult, check: RecordCheck | None) -> dict:
    """The trust columns of an episode (all null for a rollout that carries no record)."""
    recorded = ep.rollout.recorded
    check = check if check is not None else check_record(ep)
    if recorded is None or check is None:
        return dict.fromkeys(("recorded_y", "recorded_verdict", "recorded_score", "recorded_score_name",
                              "replay_agreement", "results_compared",
                              "results_reproduced", "results_same_verdict", "log_issue", "call_steps",
                              "undecoded_steps", "tool_calls", "unknown_tool_calls"))
    steps, undecoded = call_steps(ep.rollout)
    return {
        "recorded_y": recorded.y, "recorded_verdict": recorded.verdict,
        "recorded_score": recorded.score, "recorded_score_name": recorded.score_name,
        "replay_agreement": check.replay_agreement, "results_compared": check.compared,
        "results_reproduced": check.reproduced, "results_same_verdict": check.same_verdict,
        "log_issue": check.log_issue,
        "call_steps": steps, "undecoded_steps": undecoded,
        "tool_calls": sum(v.action.call is not None for v in ep.verdicts),
        "unknown_tool_calls": ep.unknown_tool_calls,
    }


def episode_row(ep: EpisodeResult, check: RecordCheck | None = None) -> dict:
    r = ep.rollout
    ff = ep.first_failure
    main = primary(ff.failures) if ff else None
    return {
        "dataset": r.dataset, "model": r.model, "method": r.method, "task_id": r.task_id,
        "trial": r.trial, "rollout_id": r.rollout_id, "source": r.source, "infra_error": r.infra_error,
        "T": ep.T, "FED": ep.FED, "Y": ep.Y,
        "category": main.category if main else None,
        "failure_code": main.code if main else None,
        "failure_detail": main.detail if main else None,
        "failed_predicates": sorted({f.category for f in ff.failures}) if ff else [],
        "n_turns": len(r.turns), "y_detail": ep.y_detail,
        **_accounting(r),
        "accounting_error": r.accounting_error,
        "meta_json": meta_json(r.meta),
        **_record_columns(ep, check),
    }


def _cut(text: str | None) -> str | None:
    return text[:MAX_RESULT_CHARS] if text is not None else None


def action_rows(ep: EpisodeResult, check: RecordCheck | None = None) -> Iterable[dict]:
    r = ep.rollout
    statuses = check.statuses if check is not None else {}
    for v in ep.verdicts:
        call = v.action.call
        recorded = v.action.recorded
        status = statuses.get(v.action.index)
        yield {
            "dataset": r.dataset, "model": r.model, "method": r.method, "task_id": r.task_id,
            "rollout_id": r.rollout_id, "j": v.action.index, "turn": v.action.turn, "step": v.action.step,
            "terminal": call is None, "tool": call.name if call else None,
            "call": call.render() if call else v.action.text,
            "V": v.valid,
            "failure_categories": [f.category for f in v.failures],
            "failure_codes": [f.code for f in v.failures],
            "failure_details": [f.detail for f in v.failures],
            "accepted": v.accepted,
            "result": _cut(v.result),
            "recorded_result": _cut(recorded.content) if recorded is not None else None,
            "recorded_error": recorded.error if recorded is not None else None,
            "record_match": status,
            "replayed_result": _cut(v.logged) if status in DIVERGED else None,
        }


def score_rollouts(items: Iterable[Located | BadLine], benchmark_for: Callable[[str], Benchmark],
                   report: ScoreReport) -> tuple[list[EpisodeResult], list[BadLine]]:
    """Replay every rollout; anything unusable becomes a located quarantine record."""
    episodes: list[EpisodeResult] = []
    bad: list[BadLine] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for item in items:
        report.lines_read += 1
        if isinstance(item, BadLine):
            bad.append(item)
            continue
        rollout = item.rollout
        key = (rollout.dataset, rollout.model, rollout.method, rollout.rollout_id)
        if key in seen:
            bad.append(BadLine(item.path, item.line, f"duplicate rollout_id {rollout.rollout_id!r} in block "
                               f"{'/'.join(key[:3])} (first on line {seen[key]})", rollout.rollout_id))
            continue
        seen[key] = item.line
        try:
            episodes.append(replay(rollout, benchmark_for(rollout.dataset)))
            report.datasets[rollout.dataset] += 1
        except (UnscorableRollout, UnknownDataset) as exc:
            message = exc.args[0] if exc.args else str(exc)
            bad.append(BadLine(item.path, item.line, str(message), rollout.rollout_id))
        except Exception as exc:  # a defect in one record's replay must not lose the others
            log.debug("replay of %s:%s failed", item.path, item.line, exc_info=True)
            bad.append(BadLine(item.path, item.line, f"replay error: {type(exc).__name__}: {exc}",
                               rollout.rollout_id))
    report.scored = len(episodes)
    report.infra_errors = sum(ep.T is None for ep in episodes)
    report.quarantined = len(bad)
    report.quarantine_reasons.update(_reason_kind(b.reason) for b in bad)
    return episodes, bad


def _sort_key(ep: EpisodeResult) -> tuple:
    r = ep.rollout
    return (r.dataset, r.model, r.method, r.task_id, r.trial, r.rollout_id)


@dataclass(frozen=True)
class ScoreOutputs:
    """Where one scoring run writes: the per-action table, the FED table and the quarantine file."""

    actions: Path
    episodes: Path
    quarantine: Path

    @classmethod
    def in_dir(cls, out_dir: str | Path) -> ScoreOutputs:
        """The file names ``prefix-audit score -o DIR`` writes."""
        out = Path(out_dir)
        return cls(out / "actions.parquet", out / "episodes.parquet", out / "quarantine.jsonl")


def write_scores(episodes: list[EpisodeResult], bad: list[BadLine], outputs: ScoreOutputs) -> pa.Table:
    """Write the three files of one scoring as one set; return the episodes table written."""
    episodes = sorted(episodes, key=_sort_key)
    checks = [check_record(e) for e in episodes]
    ep_table = pa.Table.from_pylist([episode_row(e, c) for e, c in zip(episodes, checks)], schema=EPISODE_SCHEMA)
    act_table = pa.Table.from_pylist([row for e, c in zip(episodes, checks) for row in action_rows(e, c)],
                                     schema=ACTION_SCHEMA)
    # The three files of one scoring are replaced together, never one beside an older other.
    commit_files({outputs.episodes: parquet_bytes(ep_table), outputs.actions: parquet_bytes(act_table),
                  outputs.quarantine: "".join(json.dumps(b.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                              for b in bad).encode("utf-8")})
    return ep_table


def score_file(rollouts_path: str | Path, outputs: ScoreOutputs,
               benchmark_for: Callable[[str], Benchmark]) -> ScoreReport:
    """Score one rollout JSONL file into ``outputs``; returns the counts."""
    report = ScoreReport()
    episodes, bad = score_rollouts(read_rollouts(rollouts_path), benchmark_for, report)
    report.trust = block_trust(pl.from_arrow(write_scores(episodes, bad, outputs)))
    log.info(report.summary())
    for line in report.trust_lines():
        log.info(line)
    for b in bad:
        log.warning("quarantined %s:%s: %s", b.path, b.line, b.reason)
    return report


def score_block(rollouts: str | Path, actions: str | Path, episodes: str | Path, quarantine: str | Path, *,
                resources: str | Path, dataset: str, benchmark: Mapping[str, Any] | None = None,
                plugins: Sequence[str] = ()) -> ScoreReport:
    """The ``score_rollouts`` stage: one block's rollouts, with ``dataset`` opened from its config
    entry ``benchmark`` (any other dataset a record names opens with its defaults)."""
    registry.load(plugins)
    resolve = registry.resolver(resources, {dataset: benchmark or {}}, fetch=False)
    return score_file(rollouts, ScoreOutputs(Path(actions), Path(episodes), Path(quarantine)), resolve)
