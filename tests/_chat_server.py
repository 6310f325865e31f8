"""A chat-completions server on 127.0.0.1 for tests: it records requests and plays replies.

Replies are functions of the request body, so a script can read a handle out of the
conversation exactly as a model would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], tuple[int, bytes]]


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ChatServer:
    url: str
    replies: list[Reply] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def completion(message: dict[str, Any], *, finish: str = "stop") -> bytes:
    """A real chat-completions response body around one message."""
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def answer(text: str) -> Reply:
    return lambda _body: (200, completion({"role": "assistant", "content": text}))


def tool_call(name: str, arguments: str | Callable[[dict[str, Any]], str], call_id: str) -> Reply:
    def reply(body: dict[str, Any]) -> tuple[int, bytes]:
        args = arguments(body) if callable(arguments) else arguments
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            ],
        }
        return 200, completion(message, finish="tool_calls")

    return reply


def serve() -> Iterator[ChatServer]:
    """Start the server; the generator's end stops it (use from a fixture)."""
    state: ChatServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            state.received.append(Received(self.path, dict(self.headers.items()), body))
            if body.get("model") == "hang":  # a server that never answers in time
                state.release.wait(10)
                return
            reply = state.replies.pop(0) if state.replies else answer("no more script")
            status, payload = reply(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    state = ChatServer(url=f"http://{host}:{port}/v1")
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
