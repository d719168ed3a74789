"""The run grid a config asks for: blocks, their settings (what reruns them) and the F.3 pairs."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from prefix_audit.generation.grid import blocks, condition_pairs, selected_datasets
from prefix_audit.replay import registry

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def config() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_the_default_config_is_valid_and_asks_for_the_paper_methods(config):
    base = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    schema = registry.config_schema(base)  # with each registered benchmark's own fragment
    jsonschema.Draft202012Validator(schema).validate(config)
    # Every benchmark this package registers has its entry (a test plugin loaded in this process has none).
    ours = {d.name for r in registry.registrations() if r.package.startswith("prefix_audit.") for d in r.datasets}
    assert set(schema["properties"]["benchmarks"]["properties"]) & ours == set(config["benchmarks"])
    assert selected_datasets(config) == ["bfcl_v3", "tau_airline", "tau_retail", "toolsandbox"]  # telecom is opt-in
    with pytest.raises(jsonschema.ValidationError, match="unexpected"):  # still strict
        jsonschema.Draft202012Validator(schema).validate({**config, "benchmarks": {"bfcl_v4": {}}})
    unused = {**config["profiles"], "spare": {"p_stop": 1.5}}  # a named profile no model uses is checked too
    with pytest.raises(jsonschema.ValidationError, match="1.5 is greater than the maximum of 1"):
        jsonschema.Draft202012Validator(schema).validate({**config, "profiles": unused})
    grid = blocks(config)
    agents = {key for key, settings in grid.items() if settings["kind"] == "agent"}
    assert {(m, meth) for m in ("sim-strong", "sim-medium", "sim-weak")
            for meth in ("react", "prompt_planning", "plan_conditioned", "dual_loop")} <= agents
    assert {("sim-medium", f"dual_loop.{c}") for c in ("accept", "replay", "verifier-sim-weak")} <= agents
    assert len(agents) == 15 and {("reference", "reference"), ("mutator", "mutation")} <= set(grid)
    swapped = grid[("sim-medium", "dual_loop.verifier-sim-weak")]
    assert swapped["verifier_backend"]["model"] == "sim-weak" and swapped["method"] == "dual_loop"
    assert grid[("sim-medium", "dual_loop.accept")]["verifier"] == "accept"
    assert grid[("sim-medium", "dual_loop")]["verifier"] == "model"


def test_one_model_edit_changes_only_the_settings_of_blocks_that_use_it(config):
    before = blocks(config)
    edited = copy.deepcopy(config)
    edited["models"]["sim-weak"]["profile"]["p_stop"] = 0.2
    after = blocks(edited)
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {("sim-weak", m) for m in config["agents"]["methods"]} | {("sim-medium", "dual_loop.verifier-sim-weak")}


def test_condition_pairs_compare_each_condition_with_plan_conditioned(config):
    pairs = condition_pairs(config)
    assert {p["condition"]["method"] for p in pairs} == {"dual_loop", "dual_loop.accept", "dual_loop.replay",
                                                         "dual_loop.verifier-sim-weak"}
    assert {(p["baseline"]["model"], p["baseline"]["method"]) for p in pairs} == {("sim-medium", "plan_conditioned")}
    assert {p["dataset"] for p in pairs} == set(config["datasets"])


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["agents"]["methods"].append("tree_of_thought"), "unknown method"),
    (lambda c: c["agents"]["models"].append("gpt-9"), "not defined"),
    (lambda c: c["agents"]["verifier_conditions"]["conditions"].update(odd={"verifier": "oracle"}), "neither"),
])
def test_grid_mistakes_are_named(config, edit, message):
    edit(config)
    with pytest.raises(ValueError, match=message):
        blocks(config)


def test_conditions_need_the_plan_conditioned_baseline(config):
    config["agents"]["methods"] = ["react", "dual_loop"]
    with pytest.raises(ValueError, match="plan_conditioned block"):
        condition_pairs(config)


def test_trials_apply_per_dataset_to_agent_blocks_only():
    from prefix_audit.generation.grid import dataset_settings, trials_for

    config = {"agents": {"trials": {"toolsandbox": 3}}}
    agent, reference = {"kind": "agent", "method": "react"}, {"kind": "reference"}
    assert trials_for(config, "toolsandbox") == 3 and trials_for(config, "bfcl_v3") == 1
    assert dataset_settings(config, "toolsandbox", agent) == agent | {"trials": 3}
    # One trial leaves the settings (a rule param) exactly as before; static blocks never repeat.
    assert dataset_settings(config, "bfcl_v3", agent) == agent
    assert dataset_settings(config, "toolsandbox", reference) == reference
    assert trials_for({"agents": {"trials": 2}}, "bfcl_v3") == 2
