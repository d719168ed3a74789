"""The mutation corpus as an oracle for the checker on the native ToolSandbox (every second
scenario × every category; bench/toolsandbox_mutation_oracle.py runs all of them)."""

from __future__ import annotations

import pytest
from mutation_depths import chosen_depths_honoured

from prefix_audit.benchmarks.toolsandbox import ToolSandboxBenchmark
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.generation.sources.mutation import mutated_rollout
from prefix_audit.generation.sources.oracle import run_oracle
from prefix_audit.replay.checker import replay


@pytest.fixture(scope="module")
def bench() -> ToolSandboxBenchmark:
    return ToolSandboxBenchmark()


@pytest.fixture(scope="module")
def oracle(bench):
    return run_oracle(bench, bench.task_ids()[::2], seed=1)


def test_checker_recovers_injected_depth_and_category(oracle):
    assert oracle.mutants >= 200
    assert oracle.depth_recovered == oracle.mutants, oracle.misses
    assert all(oracle.confusion[(c, c)] >= 5 for c in CATEGORIES), oracle.confusion
    assert oracle.category_recovered / oracle.mutants >= 0.99, oracle.misses
    assert all(len(d) >= 2 for d in oracle.depths.values()), oracle.depths


def test_paper_style_state_consistency_mutants(bench):
    """The generator's state-consistency mutants include the paper's phone-number-as-contact-id."""
    rollout = mutated_rollout(bench, "remove_contact_by_phone_03", "state_consistency", seed=1)
    assert rollout is not None and rollout.meta["injected"]["detail"].startswith("person_id='+1415555")
    episode = replay(rollout, bench)
    assert (episode.FED, episode.category) == (2, "state_consistency")


def test_mutation_generator_is_deterministic(bench):
    a = mutated_rollout(bench, "message_cellular_off_02", "precondition", seed=5)
    assert a is not None and a == mutated_rollout(bench, "message_cellular_off_02", "precondition", seed=5)


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_chosen_depth_is_honoured(bench, category):
    assert chosen_depths_honoured(bench, bench.task_ids()[::5], category) > 0
