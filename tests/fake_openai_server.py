"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks only.

Each POST to ``/v1/chat/completions`` takes the next scripted reply (status, JSON body, headers,
delay, or a connection reset) and records the request's headers and decoded body; with a
``responder`` the reply is computed from the request instead (for runs whose request order is not
known in advance). An exhausted script answers 410, which is not retried, so a test that
under-scripts fails loudly. ``max_in_flight`` is the most requests the server held at once.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False  # drop the connection instead of answering


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: dict[str, Any]


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None, *,
               prompt_tokens: int = 11, completion_tokens: int = 7, reasoning_tokens: int | None = None,
               finish_reason: str = "stop", usage: bool = True, reasoning_content: str | None = None,
               delay_s: float = 0.0) -> Reply:
    """A chat completion. ``usage=False`` leaves the usage block out (as some Ollama and proxy
    versions do); ``reasoning_content`` adds vLLM's reasoning field to the message."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    body: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-model",
                            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}
    if usage:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
        if reasoning_tokens is not None:
            body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Reply(200, body, delay_s)


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(status: int, retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(status, {"error": {"message": f"scripted {status}", "type": "fake", "code": None}}, headers=headers)


RESET = Reply(reset=True)


class FakeOpenAIServer:
    def __init__(self, responder: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self._script: deque[Reply] = deque()
        self._responder = responder
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_request_at: float | None = None  # time.monotonic() of the first request
        self.last_reply_at: float | None = None  # and of the last reply
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 128
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.received)

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # wakes handlers still sleeping on a slow reply
        self._httpd.shutdown()
        self._httpd.server_close()

    def _take(self, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.received.append(Received(headers, body))
            if self.first_request_at is None:
                self.first_request_at = time.monotonic()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._script:
                return self._script.popleft()
        return self._responder(body) if self._responder is not None else error(410)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self.last_reply_at = time.monotonic()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/chat/completions":
                    self._send(error(404))
                    return
                reply = server._take(dict(self.headers.items()), json.loads(data))
                try:
                    if reply.delay_s and server._stopping.wait(reply.delay_s):
                        return
                    if reply.reset:
                        # RST instead of FIN: the client sees a reset connection, not a clean close.
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.close()
                        return
                    self._send(reply)
                finally:
                    server._done()

            def _send(self, reply: Reply) -> None:
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client gave up on a deliberately slow reply

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# The response shapes of the servers the docs show (docs/real-models.md): OpenAI reports usage;
# vLLM adds the reasoning parser's field to the message; some Ollama and proxy versions send no usage.
SHAPES = ("openai", "vllm", "ollama")


def agent_responder(shape: str = "openai", delay_s: float = 0.0,
                    faults: dict[int, Reply] | None = None) -> Callable[[dict[str, Any]], Reply]:
    """Answers any agent conversation in two steps per user turn: a call of the first tool offered
    (with empty arguments, so the replay has something to judge), then, once a tool result is the
    last message, a closing text. Requests without tools (planner, verifier) get a short text.
    ``faults`` maps a request number (counted from 1, over the whole server) to the reply it gets
    instead, e.g. a 429 with Retry-After."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")
    lock = threading.Lock()
    count = [0]

    def respond(body: dict[str, Any]) -> Reply:
        with lock:
            count[0] += 1
            n = count[0]
        if faults and n in faults:
            return faults[n]
        tools = body.get("tools") or []
        last = body["messages"][-1]["role"]
        calls = ([tool_call(f"call_{n}", tools[0]["function"]["name"], "{}")]
                 if tools and last == "user" else None)
        reply = completion(None if calls else "Done.", calls, prompt_tokens=40 + len(body["messages"]),
                           completion_tokens=5, usage=shape != "ollama",
                           reasoning_content="Thinking it through." if shape == "vllm" else None,
                           finish_reason="tool_calls" if calls else "stop", delay_s=delay_s)
        return reply

    return respond


def main() -> None:
    """Serve the agent responder until SIGTERM or SIGINT (for runs in other processes, e.g. the
    Slurm check of .ci/slurm_test.sh): the base URL goes to --url-file once listening, the request
    count and the most requests held at once to --stats-file (JSON) on exit."""
    import argparse
    import signal
    from pathlib import Path

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--shape", choices=SHAPES, default="openai")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--url-file", required=True)
    parser.add_argument("--stats-file", required=True)
    args = parser.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with FakeOpenAIServer(agent_responder(args.shape, delay_s=args.delay)) as server:
        Path(args.url_file).write_text(server.base_url + "\n")
        stop.wait()
        stats = {"requests": server.request_count, "max_in_flight": server.max_in_flight}
    Path(args.stats_file).write_text(json.dumps(stats) + "\n")


if __name__ == "__main__":
    main()
