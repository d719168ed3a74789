"""The mutation corpus as an oracle for the checker, and Y agreement with bfcl-eval's own checker."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from bfcl_reference import BfclReference
from conftest import SAMPLE_OR_WHOLE, swept
from mutation_depths import chosen_depths_honoured

from prefix_audit.benchmarks.bfcl import import_result_file
from prefix_audit.benchmarks.bfcl.handlers import model_config
from prefix_audit.benchmarks.bfcl.reading import BfclReading
from prefix_audit.core.records import Rollout
from prefix_audit.core.taxonomy import CATEGORIES
from prefix_audit.generation.sources.mutation import mutated_rollout
from prefix_audit.replay.checker import replay


@pytest.fixture(scope="module")
def corpus(bfcl):
    """Every second entry × every category: about 1,470 confirmed mutants."""
    mutants = []
    for task_id in bfcl.task_ids()[::2]:
        for category in CATEGORIES:
            rollout = mutated_rollout(bfcl, task_id, category, seed=1)
            if rollout is not None:
                mutants.append(rollout)
    return mutants


def test_checker_recovers_injected_depth_and_category(bfcl, corpus):
    assert len(corpus) >= 1000
    confusion: Counter = Counter()
    depths: dict[str, set[int]] = {c: set() for c in CATEGORIES}
    wrong_depth = []
    for rollout in corpus:
        injected = rollout.meta["injected"]
        episode = replay(rollout, bfcl)
        confusion[(injected["category"], episode.category)] += 1
        depths[injected["category"]].add(injected["depth"])
        if episode.FED != injected["depth"]:
            wrong_depth.append((rollout.task_id, injected, episode.FED))
    print("\nconfusion matrix (rows: injected, columns: recovered)")
    print(f"{'':>18}" + "".join(f"{c[:12]:>13}" for c in CATEGORIES))
    for c in CATEGORIES:
        print(f"{c:>18}" + "".join(f"{confusion[(c, g)]:>13}" for g in CATEGORIES))
    assert not wrong_depth
    assert all(confusion[(c, c)] > 0 for c in CATEGORIES)
    agree = sum(confusion[(c, c)] for c in CATEGORIES)
    assert agree / len(corpus) >= 0.99
    assert all(len(d) >= 3 for d in depths.values()), depths


def test_mutation_generator_is_deterministic(bfcl):
    a = mutated_rollout(bfcl, "multi_turn_base_10", "dependency", seed=5)
    b = mutated_rollout(bfcl, "multi_turn_base_10", "dependency", seed=5)
    assert a == b


# --- agreement with bfcl-eval's multi_turn_checker ---------------------------------------------

def _decoded(rollout: Rollout) -> list[list[list[str]]]:
    return [[[c.render() for c in step.calls] for step in turn if step.calls] for turn in rollout.turns]


def _result_line(rollout: Rollout) -> dict:
    """The rollout as a prompting model's result line: each step the text of its calls."""
    return {"id": rollout.task_id,
            "result": [["[" + ", ".join(c.raw or c.render() for c in step.calls) + "]" for step in turn]
                       for turn in rollout.turns]}


@pytest.fixture(scope="module")
def bfcl_checker(bfcl):
    """bfcl-eval's own checker on already decoded calls."""
    return BfclReference(bfcl).checker


@pytest.mark.slow
@SAMPLE_OR_WHOLE
def test_y_agrees_with_bfcl_on_every_ground_truth_entry(bfcl, bfcl_checker, whole):
    for task_id in swept(bfcl.task_ids(), whole, 8):
        rollout = bfcl.reference_rollout(task_id)
        ours = replay(rollout, bfcl).Y
        assert ours == bfcl_checker(bfcl.entry(task_id), _decoded(rollout)) == 1, task_id


def test_y_agrees_with_bfcl_on_imported_mutants(bfcl, corpus, tmp_path):
    """Mutants written as a prompting model's result file, imported and replayed: Y is what BFCL's
    own runner (its prompting decoder and checker) gives the same file."""
    reference = BfclReference(bfcl)
    sample = corpus[::5]
    assert len(sample) >= 200
    path = tmp_path / "result" / "gpt-4o-2024-11-20" / "BFCL_v4_multi_turn_result.json"
    path.parent.mkdir(parents=True)
    lines = [_result_line(r) for r in sample]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    located = list(import_result_file(path, reading=BfclReading(model_config(bfcl.data.root))))
    assert [item.line for item in located] == list(range(1, len(sample) + 1))
    outcomes = Counter()
    for original, line, item in zip(sample, lines, located):
        ours = replay(item.rollout, bfcl).Y
        theirs = reference.evaluate(bfcl.entry(line["id"]), line["result"], "prompting")
        assert ours == theirs, (line["id"], original.meta["injected"], ours, theirs)
        outcomes[ours] += 1
    assert outcomes[0] > 0 and outcomes[1] > 0  # both outcomes occur, so agreement means something


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_chosen_depth_is_honoured(bfcl, category):
    assert chosen_depths_honoured(bfcl, bfcl.task_ids()[::7], category, enough=6) > 0
