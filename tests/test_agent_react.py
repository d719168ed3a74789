"""ReAct over an OpenAI-compatible endpoint (a local fake server) on a real BFCL task, end to end:
generation with accounting, scoring, and a cached rerun that makes no request."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("openai")

from conftest import score_dir  # noqa: E402
from fake_openai_server import FakeOpenAIServer, completion, tool_call  # noqa: E402

from prefix_audit.generation.rollouts import generate_rollouts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TASK = "multi_turn_base_0"
KEY = "sk-test-0123456789-do-not-leak"


def _script(bfcl) -> list:
    """The model's replies: each gold call of a turn as its own tool call, then a short answer."""
    entry = bfcl.entry(TASK)
    tools = bfcl.tools_of(entry)
    replies = []
    for t, calls in enumerate(bfcl.ground_truth_calls(entry)):
        for i, call in enumerate(calls):
            named = dict(zip(tools[call.name].positional_order, call.args)) | call.kwargs
            replies.append(completion(tool_calls=[tool_call(f"call_{t}_{i}", call.name, json.dumps(named))],
                                      prompt_tokens=100 + i, completion_tokens=10, finish_reason="tool_calls"))
        replies.append(completion(content="Done.", prompt_tokens=120, completion_tokens=3))
    return replies


def test_react_rollout_through_an_openai_compatible_server(bfcl, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", KEY)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"task_ids": [TASK]}))
    out = tmp_path / "rollouts" / "react.jsonl"
    cache = tmp_path / "cache"
    replies = _script(bfcl)
    with FakeOpenAIServer() as server:
        settings = {"kind": "agent", "method": "react",
                    "backend": {"type": "openai", "model": "fake-model", "base_url": server.base_url,
                                "api_key_env": "FAKE_API_KEY"}}
        server.push(*replies)
        assert generate_rollouts("bfcl_v3", tasks, "fake", "react", settings, ROOT / "resources", out, cache) == 1
        assert server.request_count == len(replies)
        first = out.read_bytes()

        out.unlink()  # regenerate from scratch: every response now comes from the cache
        assert generate_rollouts("bfcl_v3", tasks, "fake", "react", settings, ROOT / "resources", out, cache) == 1
        assert server.request_count == len(replies)
        assert out.read_bytes() == first
        sent = server.received[0]
    assert sent.headers.get("Authorization") == f"Bearer {KEY}"
    assert sent.body["temperature"] == 0 and sent.body["max_tokens"] == 4000
    assert {t["function"]["name"] for t in sent.body["tools"]} >= {"cd", "mkdir", "mv"}

    score_dir(out, tmp_path / "scored")
    (ep,) = pl.read_parquet(tmp_path / "scored" / "episodes.parquet").to_dicts()
    gold = sum(len(t) for t in bfcl.entry(TASK).ground_truth)
    assert ep["T"] == gold + 1  # every gold call plus the final answer
    assert ep["FED"] == ep["T"] + 1 and ep["Y"] == 1
    assert ep["agent_calls"] == len(replies)
    assert ep["agent_tokens"] == sum(r.body["usage"]["total_tokens"] for r in replies)
    assert ep["agent_latency_s"] > 0

    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_malformed_tool_call_is_an_emitted_invalid_action(bfcl, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", KEY)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"task_ids": [TASK]}))
    out = tmp_path / "r.jsonl"
    turns = len(bfcl.entry(TASK).ground_truth)
    with FakeOpenAIServer() as server:
        server.push(completion(tool_calls=[tool_call("c1", "cd", "{not json")], finish_reason="tool_calls"),
                    *[completion(content="I could not do that.") for _ in range(turns)])
        settings = {"kind": "agent", "method": "react",
                    "backend": {"type": "openai", "model": "fake-model", "base_url": server.base_url,
                                "api_key_env": "FAKE_API_KEY"}}
        generate_rollouts("bfcl_v3", tasks, "fake", "react", settings, ROOT / "resources", out, tmp_path / "cache")
        answer = server.received[1].body["messages"][-1]  # the model is told, nothing is executed
    assert answer["role"] == "tool" and answer["tool_call_id"] == "c1"
    assert answer["content"].startswith("Error: the tool call could not be read: ")
    score_dir(out, tmp_path / "scored")
    (ep,) = pl.read_parquet(tmp_path / "scored" / "episodes.parquet").to_dicts()
    assert (ep["FED"], ep["category"], ep["failure_code"]) == (1, "schema", "unparseable_call")
    assert ep["Y"] == 0


def test_dual_loop_through_an_openai_compatible_server(bfcl, tmp_path, monkeypatch):
    from prefix_audit.core.records import read_rollouts
    from prefix_audit.generation.agents.plans import plan_of_calls

    monkeypatch.setenv("FAKE_API_KEY", KEY)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"task_ids": [TASK]}))
    entry = bfcl.entry(TASK)
    positional = {name: spec.positional_order for name, spec in bfcl.tools_of(entry).items()}
    replies = []
    for calls in bfcl.ground_truth_calls(entry):
        plan = plan_of_calls(calls, positional).dumps()
        replies += [completion(content=f"```json\n{plan}\n```", prompt_tokens=300, completion_tokens=60),
                    completion(content='{"verdict": "accept"}', prompt_tokens=400, completion_tokens=5),
                    completion(content="Done.", prompt_tokens=120, completion_tokens=3)]
    out = tmp_path / "dual.jsonl"
    with FakeOpenAIServer() as server:
        server.push(*replies)
        settings = {"kind": "agent", "method": "dual_loop",
                    "backend": {"type": "openai", "model": "fake-model", "base_url": server.base_url,
                                "api_key_env": "FAKE_API_KEY"}}
        generate_rollouts("bfcl_v3", tasks, "fake", "dual_loop", settings, ROOT / "resources", out, tmp_path / "c")
        bodies = [r.body for r in server.received]
    assert len(bodies) == len(replies)
    planner, verifier, executor = bodies[:3]
    assert "tools" not in planner and "tools" not in verifier and "tools" in executor
    assert '"turn": 0' in planner["messages"][-1]["content"] and '"plan"' in verifier["messages"][-1]["content"]
    assert "verified" in executor["messages"][-1]["content"]  # the plan reaches the executor
    (located,) = list(read_rollouts(out))
    rollout = located.rollout
    assert [u.role for u in rollout.usage] == ["planner", "verifier", "executor"] * len(entry.ground_truth)
    assert {t["status"] for t in rollout.meta["planning"]} == {"verified"}
    score_dir(out, tmp_path / "scored")
    (ep,) = pl.read_parquet(tmp_path / "scored" / "episodes.parquet").to_dicts()
    assert ep["T"] == 1  # the closing answer: planner and verifier output is never an action
    assert ep["agent_tokens"] == sum(r.body["usage"]["total_tokens"] for r in replies)


def test_more_trials_keep_trial_zero_and_sample_the_rest_afresh(bfcl, tmp_path, monkeypatch):
    from prefix_audit.models.base import trial_seed

    monkeypatch.setenv("FAKE_API_KEY", KEY)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"task_ids": [TASK]}))
    cache = tmp_path / "cache"
    replies = _script(bfcl)
    with FakeOpenAIServer() as server:
        settings = {"kind": "agent", "method": "react", "seed": 3,
                    "backend": {"type": "openai", "model": "fake-model", "base_url": server.base_url,
                                "api_key_env": "FAKE_API_KEY"}}
        server.push(*replies)
        one = tmp_path / "one.jsonl"
        assert generate_rollouts("bfcl_v3", tasks, "fake", "react", settings, ROOT / "resources", one, cache) == 1
        server.push(*replies)
        two = tmp_path / "two.jsonl"
        assert generate_rollouts("bfcl_v3", tasks, "fake", "react", settings | {"trials": 2}, ROOT / "resources",
                                 two, cache) == 2
        # Trial 0 came from the one-trial run's cache entries; only trial 1 went to the server, seeded.
        assert server.request_count == 2 * len(replies)
        later = [r.body for r in server.received[len(replies):]]
    assert all("seed" not in r.body for r in server.received[:len(replies)])
    assert {body["seed"] for body in later} == {trial_seed(3, 1, None)}
    first, second = two.read_text().splitlines()
    assert first == one.read_text().strip()  # same id, same record
    assert [json.loads(line)["trial"] for line in (first, second)] == [0, 1]
    assert json.loads(first)["rollout_id"] != json.loads(second)["rollout_id"]
