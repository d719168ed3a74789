"""The rows a replayed rollout is written as: its row of the FED table (:func:`episode_row`, the columns of
:data:`~.fed.EPISODE_SCHEMA`) and one row per action (:func:`action_rows`, :data:`~.fed.ACTION_SCHEMA`), with
what the log's own record says beside them (:mod:`.record_check`)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from prefix_audit.core.decode import finite_json
from prefix_audit.core.records import AGENT_ROLES, Rollout, agent_texts, call_steps

from .checker import EpisodeResult, primary
from .record_check import DIVERGED, RecordCheck, check_record

MAX_RESULT_CHARS = 2_000


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
                              "undecoded_steps", "undecoded_confirmed", "tool_calls", "unknown_tool_calls"))
    steps, undecoded = call_steps(ep.rollout)
    return {
        "recorded_y": recorded.y, "recorded_verdict": recorded.verdict,
        "recorded_score": recorded.score, "recorded_score_name": recorded.score_name,
        "replay_agreement": check.replay_agreement, "results_compared": check.compared,
        "results_reproduced": check.reproduced, "results_same_verdict": check.same_verdict,
        "log_issue": check.log_issue,
        "call_steps": steps, "undecoded_steps": undecoded, "undecoded_confirmed": recorded.undecoded_confirmed,
        "tool_calls": sum(v.action.call is not None for v in ep.verdicts),
        "unknown_tool_calls": ep.unknown_tool_calls,
    }


def episode_row(ep: EpisodeResult, check: RecordCheck | None = None, release: str | None = None) -> dict:
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
        "origin": ff.attribution.origin if ff and ff.attribution else None,
        "origin_evidence": ff.attribution.evidence if ff and ff.attribution else None,
        "FED_agent": ep.FED_agent,
        "n_turns": len(r.turns), "y_detail": ep.y_detail,
        **_accounting(r),
        "accounting_error": r.accounting_error,
        "meta_json": meta_json(r.meta),
        **_record_columns(ep, check),
        "release": release, "task_sound": None, "task_health": [], "task_defects": [],
        "user_turns": list(ep.user_texts),
        "user_source": ep.user_source,
        "agent_texts": [{"turn": t, "step": s, "text": _cut(text)} for t, s, text in agent_texts(r)],
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
            "message": v.action.message, "terminal": call is None, "tool": call.name if call else None,
            "call": call.render() if call else v.action.text,
            "V": v.valid,
            "failure_categories": [f.category for f in v.failures],
            "failure_codes": [f.code for f in v.failures],
            "failure_details": [f.detail for f in v.failures],
            "origin": v.attribution.origin if v.attribution else None,
            "origin_evidence": v.attribution.evidence if v.attribution else None,
            "given_as": list(v.given_as),
            "accepted": v.accepted,
            "result": _cut(v.result),
            "recorded_result": _cut(recorded.content) if recorded is not None else None,
            "recorded_error": recorded.error if recorded is not None else None,
            "record_match": status,
            "replayed_result": _cut(v.logged) if status in DIVERGED else None,
        }
