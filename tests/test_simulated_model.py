"""The simulated model through the real ReAct loop: deterministic, and its error model moves the
metrics in the expected direction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import score_dir

from prefix_audit.generation.rollouts import generate_rollouts, simulated_episode_backend
from prefix_audit.generation.settings import BackendSettings
from prefix_audit.generation.sources.simulated import SimulatedProfile

ROOT = Path(__file__).resolve().parents[1]
ALL = ("schema", "dependency", "precondition", "state_consistency", "information")


def _task_list(bfcl, folder: Path, every: int) -> Path:
    path = folder / "tasks.json"
    path.write_text(json.dumps({"task_ids": list(bfcl.task_ids()[::every])}))
    return path


@pytest.fixture(scope="module")
def tasks(bfcl, tmp_path_factory) -> Path:
    """100 entries, all categories: enough for the error rates to move the metrics."""
    return _task_list(bfcl, tmp_path_factory.mktemp("tasks"), 8)


@pytest.fixture(scope="module")
def few_tasks(bfcl, tmp_path_factory) -> Path:
    """25 entries, all categories: for comparing bytes."""
    return _task_list(bfcl, tmp_path_factory.mktemp("few-tasks"), 32)


def _run(tasks: Path, tmp: Path, name: str, profile: dict, seed: int = 1) -> pl.DataFrame:
    out = tmp / f"{name}.jsonl"
    settings = {"kind": "agent", "method": "react", "seed": seed, "backend": {"type": "simulated", "profile": profile}}
    generate_rollouts("bfcl_v3", tasks, name, "react", settings, ROOT / "resources", out)
    score_dir(out, tmp / name)
    return pl.read_parquet(tmp / name / "episodes.parquet")


def test_an_error_free_profile_reproduces_the_reference(bfcl, tasks, tmp_path):
    episodes = _run(tasks, tmp_path, "perfect", {"p_error": {}, "p_stop": 0.0})
    bad = episodes.filter(pl.col("FED") != pl.col("T") + 1)
    # only the gold entries that are themselves invalid (see test_bfcl_ground_truth) may fail
    assert set(bad["task_id"]) <= {"multi_turn_base_173", "multi_turn_long_context_173",
                                   "multi_turn_miss_func_173", "multi_turn_miss_param_173", "multi_turn_miss_func_49"}
    assert episodes.filter(pl.col("FED") == pl.col("T") + 1)["Y"].mean() == 1.0
    assert episodes["agent_tokens"].min() > 0 and episodes["agent_latency_s"].min() > 0


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_other_rollouts(few_tasks, tmp_path):
    profile = {"p_error": dict.fromkeys(ALL, 0.04), "p_stop": 0.03, "p_recover": 0.5}
    _run(few_tasks, tmp_path / "a", "p", profile)
    _run(few_tasks, tmp_path / "b", "p", profile)
    _run(few_tasks, tmp_path / "c", "p", profile, seed=2)
    a, b, c = ((tmp_path / d / "p.jsonl").read_bytes() for d in "abc")
    assert a == b and a != c


@pytest.mark.slow
def test_higher_error_rates_lower_executability_and_each_category_emerges(tasks, tmp_path):
    low = _run(tasks, tmp_path, "low", {"p_error": dict.fromkeys(ALL, 0.01), "p_stop": 0.01, "p_recover": 0.8})
    high = _run(tasks, tmp_path, "high", {"p_error": dict.fromkeys(ALL, 0.06), "p_stop": 0.05, "p_recover": 0.3})
    ter = {name: (d["FED"] == d["T"] + 1).mean() for name, d in (("low", low), ("high", high))}
    pec2 = {name: (d["FED"] > 2).mean() for name, d in (("low", low), ("high", high))}
    assert ter["high"] < ter["low"] and pec2["high"] < pec2["low"]
    assert set(high["category"].drop_nulls()) >= {"schema", "dependency", "state_consistency"}


def test_profile_rates_are_validated():
    with pytest.raises(ValueError, match="unknown error categories"):
        SimulatedProfile("x", {"typo": 0.1})
    with pytest.raises(ValueError, match="probabilities"):
        SimulatedProfile("x", dict.fromkeys(ALL, 0.3))


# --- planning methods ---------------------------------------------------------------------------

PLANNING = {"p_error": dict.fromkeys(ALL, 0.01), "p_stop": 0.0, "p_recover": 0.5,
            "p_plan_error": dict.fromkeys(ALL, 0.06), "p_follow_plan": 1.0}


def _run_method(tasks: Path, tmp: Path, name: str, method: str, profile: dict, **settings) -> pl.DataFrame:
    out = tmp / f"{name}.jsonl"
    generate_rollouts("bfcl_v3", tasks, "sim", method,
                      {"kind": "agent", "method": method.split(".")[0], "seed": 1,
                       "backend": {"type": "simulated", "profile": profile}, **settings},
                      ROOT / "resources", out)
    score_dir(out, tmp / name)
    return pl.read_parquet(tmp / name / "episodes.parquet")


def _pec(episodes: pl.DataFrame, k: int) -> float:
    return float((episodes["FED"] > k).mean())


@pytest.mark.slow
def test_verifier_detection_rate_moves_dual_loop_executability(tasks, tmp_path):
    blind = _run_method(tasks, tmp_path, "blind", "dual_loop", PLANNING | {"p_detect": dict.fromkeys(ALL, 0.0)})
    sharp = _run_method(tasks, tmp_path, "sharp", "dual_loop", PLANNING | {"p_detect": dict.fromkeys(ALL, 1.0)})
    conditioned = _run_method(tasks, tmp_path, "conditioned", "plan_conditioned", PLANNING)
    for k in (1, 2, 3):
        assert _pec(sharp, k) > _pec(blind, k)
    # a verifier that detects nothing leaves Dual-Loop where Plan-Conditioned is: the same first
    # plans (seeded by model and task), followed verbatim
    assert [_pec(blind, k) for k in (1, 2, 3)] == [_pec(conditioned, k) for k in (1, 2, 3)]
    tokens = {name: d["agent_tokens"].mean() for name, d in (("blind", blind), ("sharp", sharp))}
    assert tokens["sharp"] > tokens["blind"]  # revisions cost tokens


def test_every_method_of_a_model_starts_from_the_same_plan(bfcl):
    from prefix_audit.generation.agents.prompts import PlanningContext, planner_messages
    from prefix_audit.models.base import ModelRequest
    backend = BackendSettings.parse({"type": "simulated", "profile": PLANNING})
    task = "multi_turn_base_3"
    context = PlanningContext(0, ("request",), (), ())
    request = ModelRequest(planner_messages(context), role="planner")
    replies = set()
    for method in ("plan_conditioned", "dual_loop", "dual_loop.accept"):
        sim = simulated_episode_backend(bfcl, task, "m", backend, f"1:bfcl_v3:{task}:m:{method}", f"1:bfcl_v3:{task}:m")
        replies.add(asyncio.run(sim.complete(request)).text)
    assert len(replies) == 1
    other_model = simulated_episode_backend(bfcl, task, "m2", BackendSettings.parse({"type": "simulated", "profile": PLANNING | {
        "p_plan_error": dict.fromkeys(ALL, 0.19)}}), "x", "y")
    assert asyncio.run(other_model.complete(request)).text not in replies


def test_planning_rates_are_validated():
    with pytest.raises(ValueError, match="detection"):
        SimulatedProfile("x", p_detect={"schema": 1.5})
    with pytest.raises(ValueError, match="plan error"):
        SimulatedProfile("x", p_plan_error=dict.fromkeys(ALL, 0.25))
    with pytest.raises(ValueError, match="probabilities"):
        SimulatedProfile("x", p_follow_plan=1.2)


@pytest.mark.slow
def test_episodes_in_flight_do_not_change_the_rollouts(few_tasks, tmp_path):
    profile = PLANNING | {"p_detect": dict.fromkeys(ALL, 0.7)}
    _run_method(few_tasks, tmp_path / "one", "d", "dual_loop", profile)
    _run_method(few_tasks, tmp_path / "four", "d", "dual_loop", profile, episodes_in_flight=4)
    assert (tmp_path / "one" / "d.jsonl").read_bytes() == (tmp_path / "four" / "d.jsonl").read_bytes()
