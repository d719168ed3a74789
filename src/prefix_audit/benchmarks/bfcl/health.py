"""Benchmark health of BFCL multi-turn entries (SPEC §3), on bfcl-eval's own environment classes.

Per entry of a pinned data release (:class:`BfclProbe`, run by
:func:`prefix_audit.replay.health.probe_findings`): the ground truth replayed as the reference rollout
(its calls on the release's classes, Y by BFCL's checker as :mod:`.replay` reproduces it); an agent that
answers every turn without a call; the ground truth without each call that changes an instance's state
(a *write*: found by running the ground truth call by call, not from a list of method names); whether
the whole ground truth leaves the public state — what BFCL's state check compares — as it was loaded.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefix_audit.core.health import Finding
from prefix_audit.core.records import Rollout, rollout_id_for
from prefix_audit.replay.checker import EpisodeResult
from prefix_audit.replay.health import Counterfactual, call_text, without_action

from .data import DATASET, Entry
from .loader import instance_names, invoke, method_table, public_state

HEALTH_MODEL = "health"


def _private_state(instance: Any) -> dict[str, Any]:
    """The private attributes but random generators: a read that draws from one changes no state a
    task is about."""
    return {k: v for k, v in vars(instance).items() if k.startswith("_") and not isinstance(v, random.Random)}


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@dataclass
class _Effect:
    """What one ground-truth call changed, run after the calls before it: ``Class.attribute`` names."""

    public: list[str]
    private: list[str]


class BfclProbe:
    """One entry of one release, as :func:`~prefix_audit.replay.health.probe_findings` reads it."""

    def __init__(self, bench: Any, entry: Entry) -> None:
        self.benchmark = bench
        self.entry = entry
        self.calls = bench.ground_truth_calls(entry)

    def _rollout(self, method: str, turns: tuple) -> Rollout:
        meta = {"bfcl_data": self.entry.release}
        return Rollout(DATASET, self.entry.id, HEALTH_MODEL, method,
                       rollout_id_for(DATASET, HEALTH_MODEL, method, self.entry.release, self.entry.id), turns,
                       "reference", meta)

    def gold(self) -> Rollout:
        return self._rollout("reference", self.benchmark.reference_turns(self.entry))

    def idle(self) -> Counterfactual:
        turns = len(self.entry.question)
        return Counterfactual(f"an agent that answers each of the {turns} turns without a call",
                              self._rollout("idle", ((),) * turns))

    def _effects(self) -> dict[int, _Effect]:
        """Per ground-truth call (by its depth), what it changed when run after the calls before it."""
        instances = self.benchmark.loader_of(self.entry).instantiate(self.entry)
        methods = method_table(instances)
        names = instance_names(methods, HEALTH_MODEL, self.entry.id)
        out: dict[int, _Effect] = {}
        depth = 0
        for turn in self.calls:
            for call in turn:
                depth += 1
                before = {c: (public_state(i), _private_state(i)) for c, i in instances.items()}
                before = copy.deepcopy(before)
                invoke(methods, call, names)
                after = copy.deepcopy({c: (public_state(i), _private_state(i)) for c, i in instances.items()})
                out[depth] = _Effect(
                    [f"{c}.{k}" for c in after for k in _changed(before[c][0], after[c][0])],
                    [f"{c}.{k}" for c in after for k in _changed(before[c][1], after[c][1])])
        return out

    def without_required(self, gold: EpisodeResult) -> list[Counterfactual]:
        effects = self._effects()
        out = []
        for verdict in gold.verdicts:
            action = verdict.action
            effect = effects.get(action.index)
            if action.call is None or verdict.accepted is not True or effect is None:
                continue
            if not effect.public and not effect.private:
                continue
            changes = ", ".join(effect.public + effect.private)
            cause = ("it changes only private attributes, which BFCL's state check does not compare (public "
                     "attributes only)" if not effect.public else
                     "the state BFCL compares ends the turn the same without it (a later call sets it again)")
            out.append(Counterfactual(f"the ground truth without {call_text(action)} (a write: it changes {changes})",
                                      without_action(gold.rollout, action), cause))
        return out

    def gold_effect(self, gold: EpisodeResult) -> str | None:
        instances = self.benchmark.loader_of(self.entry).instantiate(self.entry)
        start = {c: public_state(i) for c, i in instances.items()}
        start = copy.deepcopy(start)
        methods = method_table(instances)
        names = instance_names(methods, HEALTH_MODEL, self.entry.id)
        for call in (c for turn in self.calls for c in turn):
            invoke(methods, call, names)
        if any(public_state(i) != start[c] for c, i in instances.items()):
            return None
        n = sum(map(len, self.calls))
        return (f"the ground truth's {n} calls leave the public state of {', '.join(sorted(instances))} as loaded: "
                f"BFCL's state check cannot tell it from doing nothing (its response check still compares the "
                f"calls' results)")

    def confirm(self, trajectory: Counterfactual, episode: EpisodeResult) -> str | None:
        return ""  # Y is BFCL's checker as .replay reproduces it (differential-tested against bfcl-eval's own)

    def own_findings(self, gold: EpisodeResult) -> list[Finding]:
        return []

