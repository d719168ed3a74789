"""Score a file of rollouts: per-action and per-rollout (FED) Parquet, plus a quarantine file.

Every input line ends up in exactly one place: an episode row, or a quarantine record with its
location and reason. The counts are returned and logged so every denominator is visible.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import registry
from .checker import EpisodeResult, primary, replay
from .contract import Benchmark, UnknownDataset, UnscorableRollout
from .fed import ACTION_SCHEMA, EPISODE_SCHEMA
from .io import commit_files, parquet_bytes
from .decode import finite_json
from .records import AGENT_ROLES, BadLine, Located, Rollout, read_rollouts

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

    def summary(self) -> str:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(self.quarantine_reasons.items())) or "none"
        return (f"rollout records read: {self.lines_read}; scored: {self.scored} "
                f"({self.infra_errors} infrastructure failures: T/FED null); "
                f"quarantined: {self.quarantined} ({reasons})")


def _reason_kind(reason: str) -> str:
    return reason.split(":", 1)[0].split(" (")[0][:60]


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


def episode_row(ep: EpisodeResult) -> dict:
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
    }


def action_rows(ep: EpisodeResult) -> Iterable[dict]:
    r = ep.rollout
    for v in ep.verdicts:
        call = v.action.call
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
            "result": v.result[:MAX_RESULT_CHARS] if v.result is not None else None,
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
            log.exception("replay of %s:%s failed", item.path, item.line)
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


def write_scores(episodes: list[EpisodeResult], bad: list[BadLine], outputs: ScoreOutputs) -> None:
    episodes = sorted(episodes, key=_sort_key)
    ep_table = pa.Table.from_pylist([episode_row(e) for e in episodes], schema=EPISODE_SCHEMA)
    act_table = pa.Table.from_pylist([row for e in episodes for row in action_rows(e)], schema=ACTION_SCHEMA)
    # The three files of one scoring are replaced together, never one beside an older other.
    commit_files({outputs.episodes: parquet_bytes(ep_table), outputs.actions: parquet_bytes(act_table),
                  outputs.quarantine: "".join(json.dumps(b.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                                              for b in bad).encode("utf-8")})


def score_file(rollouts_path: str | Path, outputs: ScoreOutputs,
               benchmark_for: Callable[[str], Benchmark]) -> ScoreReport:
    """Score one rollout JSONL file into ``outputs``; returns the counts."""
    report = ScoreReport()
    episodes, bad = score_rollouts(read_rollouts(rollouts_path), benchmark_for, report)
    write_scores(episodes, bad, outputs)
    log.info(report.summary())
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
