"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests only.

Each POST to ``/v1/chat/completions`` takes the next scripted reply (status, JSON body, delay) and
records the request's headers and decoded body. An exhausted script answers 410, which is not
retried, so a test that under-scripts fails loudly.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: dict[str, Any]


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None, *,
               prompt_tokens: int = 11, completion_tokens: int = 7, reasoning_tokens: int | None = None,
               finish_reason: str = "stop") -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Reply(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-model",
                       "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                       "usage": usage})


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(status: int) -> Reply:
    return Reply(status, {"error": {"message": f"scripted {status}", "type": "fake", "code": None}})


class FakeOpenAIServer:
    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.received: list[Received] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
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
            return self._script.popleft() if self._script else error(410)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                reply = (server._take(dict(self.headers.items()), json.loads(data))
                         if self.path == "/v1/chat/completions" else error(404))
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a deliberately slow reply

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
