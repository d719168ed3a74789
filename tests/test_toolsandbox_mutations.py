"""The mutation corpus as an oracle for the checker on the native ToolSandbox (every second
scenario × every category; bench/toolsandbox_mutation_oracle.py runs all of them)."""

from __future__ import annotations

from collections import Counter

import pytest

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark
from prefix_audit.checker import CATEGORIES, replay
from prefix_audit.sources.mutation import mutated_rollout


@pytest.fixture(scope="module")
def bench() -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


@pytest.fixture(scope="module")
def corpus(bench):
    return [r for task_id in bench.task_ids()[::2] for category in CATEGORIES
            if (r := mutated_rollout(bench, task_id, category, seed=1)) is not None]


def test_checker_recovers_injected_depth_and_category(bench, corpus):
    assert len(corpus) >= 200
    confusion: Counter = Counter()
    depths: dict[str, set[int]] = {c: set() for c in CATEGORIES}
    wrong_depth = []
    for rollout in corpus:
        injected = rollout.meta["injected"]
        episode = replay(rollout, bench)
        confusion[(injected["category"], episode.category)] += 1
        depths[injected["category"]].add(injected["depth"])
        if episode.FED != injected["depth"]:
            wrong_depth.append((rollout.task_id, injected, episode.FED))
    assert not wrong_depth
    assert all(confusion[(c, c)] >= 5 for c in CATEGORIES), confusion
    assert sum(confusion[(c, c)] for c in CATEGORIES) / len(corpus) >= 0.99
    assert all(len(d) >= 2 for d in depths.values()), depths


def test_paper_style_state_consistency_mutants(bench, corpus):
    """The generator's state-consistency mutants include the paper's phone-number-as-contact-id."""
    details = [r.meta["injected"]["detail"] for r in corpus if r.meta["injected"]["category"] == "state_consistency"]
    assert any(d.startswith("person_id='+1415555") for d in details)


def test_mutation_generator_is_deterministic(bench):
    a = mutated_rollout(bench, "message_cellular_off_02", "precondition", seed=5)
    assert a is not None and a == mutated_rollout(bench, "message_cellular_off_02", "precondition", seed=5)


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_chosen_depth_is_honoured(bench, category):
    hits = 0
    for task_id in bench.task_ids()[::5]:
        for depth in (1, 2, 3):
            rollout = mutated_rollout(bench, task_id, category, seed=2, depth=depth)
            if rollout is not None:
                hits += 1
                assert rollout.meta["injected"]["depth"] == depth
                assert replay(rollout, bench).FED == depth
    assert hits > 0
