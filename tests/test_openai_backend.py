"""OpenAI-compatible backend against a scripted local server: parsing, retries, Retry-After, the
per-call record, missing usage, failing fast, the endpoint gate, cache, secrets."""

from __future__ import annotations

import logging
import socket
import time

import pytest
from fake_openai_server import RESET, FakeOpenAIServer, Reply, completion, error, tool_call

from prefix_audit.models import (
    GenerationParams,
    Message,
    ModelRequest,
    ModelToolCall,
    OpenAICompatibleBackend,
    ToolSchema,
    complete_many,
    to_tool_call,
)
from prefix_audit.models.endpoints import Endpoint, EndpointGate
from prefix_audit.models.openai_compat import BackendError

KEY_ENV = "PREFIX_AUDIT_TEST_KEY"
KEY = "sk-test-DISTINCTIVE-7f3a9c1e5b"

CD = ToolSchema("cd", "Change directory.", {"type": "object", "properties": {"folder": {"type": "string"}},
                                            "required": ["folder"]})


@pytest.fixture
def server():
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def make_backend(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)

    def make(**options) -> OpenAICompatibleBackend:
        settings = {"base_url": server.base_url, "api_key_env": KEY_ENV, "timeout_s": 2.0,
                    "backoff_base_s": 0.001, "backoff_cap_s": 0.005, **options}
        return OpenAICompatibleBackend("fake-model", **settings)

    return make


def ask(text: str = "go to documents", role: str = "executor"):
    messages = (Message("system", "You are an agent."), Message("user", text))
    return ModelRequest(messages, (CD,), role)


def run_one(backend, request=None):
    return complete_many(backend, [request or ask()])[0]


def test_tool_calls_are_parsed_and_usage_and_params_recorded(server, make_backend):
    args = '{"folder": "document"}'  # spacing must survive untouched
    server.push(completion("Moving.", [tool_call("call_1", "cd", args), tool_call("call_2", "ls", "{}")],
                           prompt_tokens=42, completion_tokens=9, finish_reason="tool_calls"))
    response = run_one(make_backend(), ask(role="planner"))

    assert response.tool_calls == (ModelToolCall("call_1", "cd", args), ModelToolCall("call_2", "ls", "{}"))
    assert response.text == "Moving." and response.finish_reason == "tool_calls" and not response.cached
    call = to_tool_call(response.tool_calls[0])
    assert (call.name, call.kwargs, call.call_id, call.parse_error) == ("cd", {"folder": "document"}, "call_1", None)
    usage = response.usage
    assert (usage.role, usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == ("planner", 42, 9, None)
    assert 0 < usage.latency_s < 2
    expected = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 4000, "presence_penalty": 0.0,
                "frequency_penalty": 0.0}
    assert response.sent_params == expected
    body = server.received[0].body
    assert {k: body[k] for k in expected} == expected
    assert "reasoning_effort" not in body and "max_completion_tokens" not in body
    assert body["tools"] == [{"type": "function", "function": {"name": "cd", "description": "Change directory.",
                                                               "parameters": dict(CD.parameters)}}]
    assert body["model"] == "fake-model"


def test_history_with_tool_results_goes_out_in_openai_format(server, make_backend):
    server.push(completion(None, [tool_call("call_9", "cd", '{"folder": "x"}')], finish_reason="tool_calls"),
                completion("Done."))
    backend = make_backend()
    first = run_one(backend)
    history = ask().messages + (first.as_message(), Message("tool", '{"ok": true}', tool_call_id="call_9"))
    assert run_one(backend, ModelRequest(history, (CD,))).text == "Done."
    sent = server.received[1].body["messages"][2:]
    emitted = {"id": "call_9", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "x"}'}}
    assert sent == [{"role": "assistant", "content": None, "tool_calls": [emitted]},
                    {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_9"}]


@pytest.mark.parametrize("failure", [error(429), error(500), error(503), Reply(delay_s=1.0), RESET],
                         ids=["429", "500", "503", "timeout", "reset"])
def test_transient_failures_are_retried_once_the_endpoint_has_answered(server, make_backend, failure):
    server.push(completion("first"), failure, completion("ok"))
    backend = make_backend(timeout_s=0.25)
    run_one(backend)
    response = run_one(backend)
    assert response.text == "ok"
    assert server.request_count == 3
    assert response.usage.latency_s < 0.25  # the successful attempt only
    (retry,) = response.usage.retries
    assert retry.error.split()[0] in {"429", "500", "503", "APITimeoutError", "APIConnectionError"}
    assert response.usage.attempts == 2 and response.usage.total_s >= response.usage.latency_s + retry.wait_s


def test_client_errors_are_not_retried_and_name_the_endpoint(server, make_backend):
    server.push(error(400), completion("never reached"))
    with pytest.raises(BackendError, match=rf"'fake-model' at {server.base_url}: 400 BadRequestError"):
        run_one(make_backend())
    assert server.request_count == 1


def test_retries_stop_after_max_retries(server, make_backend):
    server.push(*[error(502)] * 3, completion("too late"))
    with pytest.raises(BackendError, match="502 InternalServerError after 3 attempts"):
        run_one(make_backend(max_retries=2))
    assert server.request_count == 3


def test_retry_after_is_honoured_and_every_attempt_recorded(server, make_backend):
    # An answer first, so the endpoint is known to be there; then 429 (Retry-After: 0.4 s), a
    # reset connection and a 500, and a slow success.
    server.push(completion("warm"), error(429, retry_after="0.4"), RESET, error(500),
                completion("ok", delay_s=0.3))
    backend = make_backend(backoff_cap_s=5.0)
    run_one(backend)
    started = time.perf_counter()
    response = run_one(backend)
    elapsed = time.perf_counter() - started
    usage = response.usage
    assert [r.error for r in usage.retries] == ["429 RateLimitError", "APIConnectionError", "500 InternalServerError"]
    assert 0.4 <= usage.retries[0].wait_s <= 0.44  # what the server asked, plus at most 10 % jitter
    assert usage.attempts == 4
    assert 0.3 <= usage.latency_s < 0.5  # the successful attempt's exchange
    waits = sum(r.wait_s for r in usage.retries)
    assert usage.latency_s + waits <= usage.wall_s <= elapsed
    assert usage.to_json()["attempts"] == 4 and usage.to_json()["wall_s"] == usage.wall_s
    assert usage.params == response.sent_params


def test_a_response_without_usage_is_estimated_cached_and_marked(server, make_backend, tmp_path):
    server.push(completion(None, [tool_call("c1", "cd", '{"folder": "docs"}')], usage=False,
                           reasoning_content="I should change directory.", finish_reason="tool_calls"))
    first = run_one(make_backend(cache_dir=tmp_path))
    assert first.usage.estimated and first.usage.input_tokens > 10 and first.usage.output_tokens > 0
    assert first.tool_calls == (ModelToolCall("c1", "cd", '{"folder": "docs"}'),)
    again = run_one(make_backend(cache_dir=tmp_path))
    assert again.cached and again.usage == first.usage and server.request_count == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_endpoint_fails_fast_with_url_and_model(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    backend = OpenAICompatibleBackend("fake-model", base_url=url, api_key_env=KEY_ENV, timeout_s=5.0)
    started = time.perf_counter()
    with pytest.raises(BackendError, match=rf"'fake-model' at {url}: cannot be reached"):
        run_one(backend)
    assert time.perf_counter() - started < 2.0


def test_an_endpoint_that_never_answers_fails_after_one_timeout(server, make_backend):
    server.push(Reply(delay_s=10.0), completion("never asked"))
    started = time.perf_counter()
    with pytest.raises(BackendError, match=r"no answer within 0.3 s \(timeout_s\)"):
        run_one(make_backend(timeout_s=0.3))
    assert time.perf_counter() - started < 2.0 and server.request_count == 1


def test_a_cached_run_needs_no_endpoint(make_backend, tmp_path):
    with FakeOpenAIServer() as down:
        down.push(completion("remembered"))
        url = down.base_url
        assert run_one(make_backend(base_url=url, cache_dir=tmp_path)).text == "remembered"
    # The server is gone; every request of the rerun is a cache hit.
    assert run_one(make_backend(base_url=url, cache_dir=tmp_path)).text == "remembered"


def test_backends_sharing_an_endpoint_gate_share_its_ceiling(server, make_backend):
    server.push(*[completion(f"r{i}", delay_s=0.15) for i in range(9)])
    gate = EndpointGate(Endpoint.of(server.base_url, KEY_ENV), limit=3)
    executor, verifier = make_backend(gate=gate), make_backend(gate=gate)
    import asyncio

    async def run() -> None:
        calls = [b.complete(ask(f"q{i}")) for i, b in zip(range(9), [executor, verifier] * 5)]
        await asyncio.gather(*calls)
        await executor.aclose()
        await verifier.aclose()

    asyncio.run(run())
    assert server.max_in_flight == 3 and server.request_count == 9


def test_decoding_settings_seed_and_extra_parameters_are_sent(server, make_backend):
    server.push(completion("ok"))
    params = GenerationParams(temperature=0.7, top_p=0.9, max_tokens=512, seed=42,
                              extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    response = run_one(make_backend(params=params))
    body = server.received[0].body
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.7, 0.9, 512, 42)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert response.sent_params["seed"] == 42 and response.usage.params == response.sent_params
    with pytest.raises(ValueError, match="extra_body may not set messages"):
        make_backend(params=GenerationParams(extra_body={"messages": []}))


def test_second_run_is_served_from_cache_with_original_usage(server, make_backend, tmp_path):
    cache_dir = tmp_path / "cache"
    server.push(completion("a", prompt_tokens=5, completion_tokens=3),
                completion(None, [tool_call("c1", "cd", '{"folder": "b"}')], finish_reason="tool_calls"))
    requests = [ask("first"), ask("second")]
    first = complete_many(make_backend(cache_dir=cache_dir), requests)
    assert server.request_count == 2

    again = complete_many(make_backend(cache_dir=cache_dir), requests)
    assert server.request_count == 2
    assert all(r.cached for r in again) and not any(r.cached for r in first)
    for before, after in zip(first, again):
        assert (after.text, after.tool_calls, after.finish_reason) == (before.text, before.tool_calls,
                                                                       before.finish_reason)
        assert after.usage == before.usage and after.sent_params == before.sent_params

    entries = sorted(p.relative_to(cache_dir) for p in cache_dir.rglob("*.json"))
    assert len(entries) == 2
    assert all(len(p.parts) == 2 and len(p.parts[0]) == 2 and len(p.stem) == 62 for p in entries)


def test_cache_key_covers_the_sent_parameters(server, make_backend, tmp_path):
    server.push(completion("short"), completion("long"))
    assert run_one(make_backend(cache_dir=tmp_path, params=GenerationParams(max_tokens=10))).text == "short"
    assert run_one(make_backend(cache_dir=tmp_path, params=GenerationParams(max_tokens=20))).text == "long"
    assert server.request_count == 2


def test_unreadable_cache_entry_is_a_miss_and_is_replaced(server, make_backend, tmp_path):
    server.push(completion("first"), completion("refetched"))
    backend = make_backend(cache_dir=tmp_path)
    run_one(backend)
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("{truncated")
    assert run_one(backend).text == "refetched"
    hit = run_one(backend)
    assert server.request_count == 2 and hit.cached and hit.text == "refetched"


def test_api_key_is_never_written_or_logged(server, make_backend, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    server.push(error(429), completion("ok"), error(500), completion("ok"))
    backend = make_backend(cache_dir=tmp_path / "cache")
    complete_many(backend, [ask("one")])
    complete_many(backend, [ask("two")])

    assert server.received[0].headers["Authorization"] == f"Bearer {KEY}"  # the key was in use
    assert "retry" in caplog.text
    assert KEY not in caplog.text
    captured = capsys.readouterr()
    assert KEY not in captured.out and KEY not in captured.err
    assert KEY not in repr(backend) and KEY not in repr(vars(backend))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data and b"Authorization" not in data


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ValueError, match=KEY_ENV):
        OpenAICompatibleBackend("fake-model", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV)


def test_malformed_tool_arguments_become_a_parse_error(server, make_backend):
    server.push(completion(None, [tool_call("call_x", "cd", "{not json")], finish_reason="tool_calls"))
    response = run_one(make_backend())
    assert response.tool_calls == (ModelToolCall("call_x", "cd", "{not json"),)
    call = to_tool_call(response.tool_calls[0])
    assert call.name == "cd" and call.raw == "{not json" and call.call_id == "call_x"
    assert call.parse_error is not None and not call.well_formed


def test_reasoning_model_gets_effort_and_output_cap_only(server, make_backend):
    server.push(completion("thought", prompt_tokens=20, completion_tokens=300, reasoning_tokens=250))
    response = run_one(make_backend(reasoning=True, params=GenerationParams(max_tokens=4000, reasoning_effort="high")))
    body = server.received[0].body
    for sampling in ("temperature", "top_p", "presence_penalty", "frequency_penalty", "max_tokens"):
        assert sampling not in body
    assert body["max_completion_tokens"] == 4000 and body["reasoning_effort"] == "high"
    assert response.sent_params == {"max_completion_tokens": 4000, "reasoning_effort": "high"}
    # Reasoning tokens are already inside the completion count; they are recorded, not added.
    assert (response.usage.output_tokens, response.usage.reasoning_tokens) == (300, 250)


def test_effort_without_a_reasoning_backend_is_rejected(make_backend):
    with pytest.raises(ValueError, match="reasoning"):
        make_backend(params=GenerationParams(reasoning_effort="low"))


def test_request_role_must_be_a_model_role():
    with pytest.raises(ValueError, match="evaluator"):
        ModelRequest((Message("user", "hi"),), role="evaluator")


def test_a_later_trial_is_a_fresh_sample_with_its_own_seed_and_cache_entry(server, make_backend, tmp_path):
    from prefix_audit.models.base import TrialBackend, trial_seed

    server.push(completion("first trial"), completion("second trial"))
    backend = make_backend(cache_dir=tmp_path)
    seeds = [trial_seed(7, t, None) for t in (0, 1)]
    texts = [run_one(TrialBackend(backend, t, seed)).text for t, seed in enumerate(seeds)]
    assert texts == ["first trial", "second trial"] and server.request_count == 2
    first, second = (r.body for r in server.received)
    assert seeds[0] is None and "seed" not in first  # trial 0 is sent as a one-trial run sends it
    assert second["seed"] == seeds[1] == trial_seed(7, 1, None) != trial_seed(8, 1, None)
    # Both are cached apart: a rerun of either trial makes no call and gets its own answer.
    again = make_backend(cache_dir=tmp_path)
    assert [run_one(TrialBackend(again, t, seed)).text for t, seed in enumerate(seeds)] == texts
    assert server.request_count == 2
