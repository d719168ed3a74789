"""Benchmark health from replays: the checks every benchmark shares (docs/definitions.md#health).

A benchmark audits one task of one data release by building a :class:`HealthProbe` — the task's gold as
a rollout, an agent that does nothing, the gold without each of its writes and hand-offs, and its own
checks — and handing it to :func:`probe_findings`, which replays each trajectory through the
benchmark's own environment (the adapter's session) and Y (the benchmark's reward as the adapter
computes it, differential-tested against the benchmark's own evaluator), and, where the probe offers
it, has the benchmark's own evaluator confirm every trajectory that would make a finding. What is
found, and the evidence:

* ``gold_fails``: each gold call the environment rejected (its error, which the benchmark's own
  evaluator may swallow), *designed* where the gold recovers from it and a *defect* where the gold ends
  on it (:func:`~.checker.gold_failures`, the one decision attribution reads too);
* ``gold_not_prefix_executable``: the gold's FED ≤ T at a call the environment accepted (which
  predicate, why) — a *defect* where the predicate is a rule the benchmark enforces for agents (a
  function withheld in that turn) and the gold without the call no longer scores 1, else the audit's
  *definition*;
* ``answer_unreachable``: the gold itself does not score 1;
* ``gold_no_effect``: the probe's evidence that the gold leaves the checked state as it was;
* ``passes_doing_nothing``: the idle trajectory scores 1 — a *defect* where the gold makes a write or
  hand-off the environment accepts (the idle agent skips it and still passes), *designed* where the gold
  makes none (a refusal task: the reward cannot tell a considered refusal from an ignored request);
* ``unchecked_required_action``: the gold (scoring 1) without one write or hand-off still scores 1 —
  unless the trajectory leaves everything as the gold does (``final_state``, where the probe has it:
  the action was superseded by a later one, not unchecked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from prefix_audit.core.health import DEFECT, DESIGN, FED, SCORED, Finding
from prefix_audit.core.records import Action, Rollout

from .checker import ActionVerdict, EpisodeResult, gold_failures, primary, replay
from .contract import Benchmark

MAX_CALL_CHARS = 400


@dataclass(frozen=True)
class Counterfactual:
    """A trajectory compared with the gold: what it is, in words a person can redo by hand, the rollout,
    and — said with a finding — why the benchmark's reward cannot tell it from the gold."""

    label: str
    rollout: Rollout
    cause: str = ""


class HealthProbe(Protocol):
    """One task of one release, as the shared checks need it (each benchmark builds its own)."""

    benchmark: Benchmark

    def gold(self) -> Rollout:
        """The task's gold as a rollout on this release (what the reference block replays)."""

    def idle(self) -> Counterfactual:
        """An agent that makes no call (τ: answers once and the conversation ends)."""

    def without_required(self, gold: EpisodeResult) -> Sequence[Counterfactual]:
        """The gold without each of its writes and hand-offs that the environment accepted, one at a time
        (none: the gold makes no write or hand-off — ``passes_doing_nothing`` is then by design)."""

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        """Evidence that the gold leaves the state the reward checks unchanged; None when it changes it."""

    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        """The benchmark's own evaluator on a trajectory the replay scores 1: its words when it scores it
        1 too, None when it does not (then nothing is claimed). A benchmark whose Y is its own
        evaluator's returns ``""``."""

    def own_findings(self, gold: EpisodeResult) -> Sequence[Finding]:
        """What only this benchmark checks (answers no execution produces, changes between releases)."""

    # Optional: ``final_state(rollout) -> Any`` — everything a trajectory leaves behind, what the reward
    # compares and what it does not (a comparable value). A gold action whose removal leaves it equal to
    # the gold's was superseded (a later call has the same effect): not a required action the reward
    # fails to check, so no finding.


def call_text(action: Action) -> str:
    """An action as evidence: where it is (1-based turn and depth) and the call as written."""
    rendered = action.call.render() if action.call is not None else f"closing message {action.text!r}"
    if len(rendered) > MAX_CALL_CHARS:
        rendered = rendered[:MAX_CALL_CHARS - 1] + "…"
    return f"turn {action.turn + 1}, action {action.index}: {rendered}"


def _answer(verdict: ActionVerdict) -> str:
    text = " ".join((verdict.logged or verdict.result or "rejected").split())
    return text if len(text) <= MAX_CALL_CHARS else text[:MAX_CALL_CHARS - 1] + "…"


def gold_replay_findings(gold: EpisodeResult, benchmark: Benchmark | None = None) -> list[Finding]:
    """``gold_fails`` (every rejected gold call, with its intent), ``gold_not_prefix_executable`` (a first
    failure at a transition the environment accepted) and ``answer_unreachable`` (the gold does not score 1).
    ``benchmark``: where the gold is replayed again without a withheld call (:func:`~.checker.gold_failures`)."""
    failures = gold_failures(gold, benchmark)
    found = [Finding("gold_fails", f"{f.where} → {f.answer or 'rejected'} ({f.intent}: {f.why})", kind=f.intent,
                     effect=SCORED if f.intent == DEFECT else FED)
             for f in failures if f.code == "rejected_transition"]
    first = gold.first_failure
    if first is not None and first.accepted is not False:
        cause = primary(first.failures)
        withheld = next((f for f in failures if f.code == "tool_not_exposed" and f.index == first.action.index), None)
        said = (f"FED {gold.FED} of T {gold.T}: {call_text(first.action)} fails {cause.category} "
                f"({cause.code}: {cause.detail}); the benchmark accepts the call")
        if withheld is not None and withheld.intent == DEFECT:
            found.append(Finding("gold_not_prefix_executable",
                                 f"{said}, but it is a rule the benchmark enforces for agents — {withheld.why}: an "
                                 f"agent cannot pass the task as the benchmark runs it", kind=DEFECT, effect=SCORED))
        else:
            found.append(Finding("gold_not_prefix_executable",
                                 f"{said} — a property of the audit's predicates, not a defect of the benchmark"
                                 + (f" ({withheld.why})" if withheld is not None else "")))
    if gold.Y is not None and gold.Y != 1:
        found.append(Finding("answer_unreachable", f"the gold itself scores {gold.Y}: {gold.y_detail}"))
    return found


def _still_passes(probe: HealthProbe, trajectory: Counterfactual) -> str | None:
    """The evidence that ``trajectory`` scores 1 (the replay's Y, confirmed by the benchmark's own
    evaluator where the probe has one); None when it does not."""
    episode = replay(trajectory.rollout, probe.benchmark, with_gold=False)
    if episode.Y != 1:
        return None
    confirmed = probe.confirm(trajectory, episode)
    if confirmed is None:
        return None
    said = f"{trajectory.label} scores 1 ({episode.y_detail})" if episode.y_detail else f"{trajectory.label} scores 1"
    return "; ".join(s for s in (said, confirmed, trajectory.cause) if s)


def probe_findings(probe: HealthProbe) -> list[Finding]:
    """Every shared check of one task, then the benchmark's own (see the module docstring)."""
    gold = replay(probe.gold(), probe.benchmark, with_gold=False)
    found = gold_replay_findings(gold, probe.benchmark)
    effect = probe.gold_effect(gold)
    if effect is not None:
        found.append(Finding("gold_no_effect", effect))
    required = probe.without_required(gold)
    idle = _still_passes(probe, probe.idle())
    if idle is not None:
        if required:
            more = f"; and {len(required) - 3} more" if len(required) > 3 else ""
            skipped = "; ".join(t.label for t in required[:3]) + more
            found.append(Finding("passes_doing_nothing", f"{idle} — a defect: the gold makes writes or hand-offs the "
                                                         f"idle agent skips ({skipped})", kind=DEFECT))
        else:
            found.append(Finding("passes_doing_nothing", f"{idle} — by design: the gold makes no write or hand-off "
                                                         f"either (a refusal task); the reward cannot tell a correct "
                                                         f"refusal from an idle agent", kind=DESIGN))
    if gold.Y == 1:
        final_state = getattr(probe, "final_state", None)
        gold_state = final_state(gold.rollout) if final_state is not None else None
        for trajectory in required:
            if final_state is not None and final_state(trajectory.rollout) == gold_state:
                continue  # superseded: the rest of the gold leaves everything as the whole gold does
            passes = _still_passes(probe, trajectory)
            if passes is not None:
                found.append(Finding("unchecked_required_action", passes))
    return [*found, *probe.own_findings(gold)]
