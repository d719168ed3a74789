"""The generator of real Inspect logs of inspect_evals' tau2 tasks (tests/inspect_tau2_logs.py): every
sample and epoch written, scored as its scenario says, with the calls and tool errors it scripts."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("inspect_evals.tau2", reason="inspect_evals is not installed (pip install inspect-evals)")

from inspect_ai.log import (  # noqa: E402
    read_eval_log,
    read_eval_log_sample,
    read_eval_log_sample_summaries,
    read_eval_log_samples,
)
from inspect_tau2_logs import (  # noqa: E402
    COMBINABLE,
    DEFAULT_SCENARIOS,
    SCENARIOS,
    agent_steps,
    expected_score,
    main,
    scenario_parts,
)

MESSAGES = "StoredAgentState:AirlineAgent:messages"


def test_the_default_choices_cover_every_scenario():
    for domain, scenarios in DEFAULT_SCENARIOS.items():
        covered = {p for s in scenarios.values() for p in scenario_parts(s)} | {"gold", "early_stop"}  # epoch_split
        # telecom's script knows gold and early_stop (the user acting on the phone, or stopping at once)
        assert covered == (set(SCENARIOS) if domain != "telecom" else {"gold", "early_stop"}), domain
    assert set(COMBINABLE) <= set(SCENARIOS)
    for bad in ("nope", "gold+parallel", "early_stop+rejected"):
        with pytest.raises(ValueError):
            scenario_parts(bad)


def test_the_agent_steps_follow_the_scenario():
    from inspect_evals.tau2.airline.dataset import read_dataset
    from inspect_evals.tau2.common.metadata import Tau2MetaData

    task = next(Tau2MetaData.model_validate(s.metadata).task for s in read_dataset("AirlineAgent") if s.id == "27")
    gold = [a.name for a in task.evaluation_criteria.actions]
    calls = lambda steps: [[f for _, f, _ in step] for step in steps if isinstance(step, list)]  # noqa: E731
    assert calls(agent_steps(task, "gold")) == [[name] for name in gold]
    assert calls(agent_steps(task, "parallel")) == [gold]
    assert calls(agent_steps(task, "rejected+parallel")) == [["get_user_details"], gold]
    assert agent_steps(task, "early_stop") == agent_steps(task, "early_stop")[:1]
    steps = agent_steps(task, "unknown_tool+rejected+malformed")
    ids = [i for step in steps if isinstance(step, list) for i, _, _ in step]
    assert ids == [f"call_{n}" for n in range(len(ids))]


@pytest.fixture(scope="module")
def airline_log(inspect_tau2_airline_log):
    return inspect_tau2_airline_log  # conftest's: the default scenarios, two epochs


@pytest.mark.slow
def test_every_sample_and_epoch_is_scored_as_its_scenario_says(airline_log):
    header = read_eval_log(str(airline_log), header_only=True)
    assert header.status == "success" and header.eval.task == "inspect_evals/tau2_airline"
    scenarios = DEFAULT_SCENARIOS["airline"]
    seen = {}
    for sample in read_eval_log_sample_summaries(str(airline_log)):  # the scores without reading the samples
        value = sample.scores["airline_scorer"].value if sample.scores else None
        seen[str(sample.id), sample.epoch] = value
        assert value == expected_score(scenarios[str(sample.id)], sample.epoch), (sample.id, sample.epoch)
        assert (sample.error is not None) == (scenarios[str(sample.id)] == "agent_error")
    assert set(seen) == {(i, e) for i in scenarios for e in (1, 2)}


@pytest.mark.slow
def test_the_calls_and_tool_errors_are_those_scripted(airline_log):
    def messages(task_id, epoch=1):
        sample = read_eval_log_sample(str(airline_log), id=task_id, epoch=epoch, exclude_fields={"events"})
        return sample.store[MESSAGES]

    mixed = messages("15")
    errors = [(m["function"], m["error"]["type"]) for m in mixed if m["role"] == "tool" and m.get("error")]
    assert errors == [("lookup_everything", "parsing"), ("get_user_details", "unknown"),
                      ("get_user_details", "parsing"), ("get_user_details", "parsing")]
    assert [c.get("parse_error") is not None for m in mixed for c in m.get("tool_calls") or []] == \
           [False, False, False, True, False, False]
    assert [len(m["tool_calls"]) for m in mixed if m.get("tool_calls")] == [1, 1, 1, 1, 2]  # then gold in parallel
    assert not [m for m in messages("14", epoch=2) if m.get("tool_calls")]
    limited = read_eval_log_sample(str(airline_log), id="20", epoch=1)
    kinds = Counter(e.event for e in limited.events)
    assert limited.limit is None and kinds["sample_limit"] > 0  # the tau2 loop catches the limit
    assert [e.error for e in limited.events if e.event == "model" and e.error][0].startswith("RuntimeError")


@pytest.mark.slow
def test_the_cli_writes_a_json_log(tmp_path, capsys):
    main([str(tmp_path), "--domain", "retail", "--format", "json", "--epochs", "1", "--scenario", "57=agent_error"])
    path = capsys.readouterr().out.strip()
    assert path.endswith(".json")
    [sample] = read_eval_log_samples(path)
    assert sample.id == "57" and sample.error is not None and not sample.scores
