"""Shared check of the mutation generator on any adapter: a requested injection depth is honoured."""

from __future__ import annotations

from collections.abc import Iterable

from prefix_audit.generation.sources.mutation import mutated_rollout
from prefix_audit.replay.checker import replay


def chosen_depths_honoured(bench, task_ids: Iterable[str], category: str, *, enough: int | None = None) -> int:
    """Inject ``category`` at depths 1-3 of each task (stopping once ``enough`` mutants were made);
    assert each lands at the requested depth and replays with that FED. Returns the mutant count."""
    hits = 0
    for task_id in task_ids:
        if enough is not None and hits >= enough:
            break
        for depth in (1, 2, 3):
            rollout = mutated_rollout(bench, task_id, category, seed=2, depth=depth)
            if rollout is not None:
                hits += 1
                assert rollout.meta["injected"]["depth"] == depth
                assert replay(rollout, bench).FED == depth
    return hits
