"""A loopback relay in front of an S3 server: counts requests per S3 operation, injects SlowDown.

`python -m benchmarks.load.faults --target http://127.0.0.1:PORT` prints
`relay listening on 127.0.0.1:PORT` and relays every request. `POST /__faults?rate=0.05&
seconds=10` starts a window in which that share of requests is answered `503 SlowDown`
without reaching the server (what S3 does while it scales a prefix); `GET /__stats` answers
the counts so far as JSON. Processes that cannot take botocore hooks (the MCP proxies) are
counted here.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["operation_of"]

_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "host", "content-length"}
_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


def operation_of(method: str, path: str, query: str, headers: Any) -> str:
    """The S3 operation of a path-style request, as botocore names it."""
    parts = urllib.parse.unquote(path).lstrip("/").split("/", 1)
    has_key = len(parts) == 2 and parts[1] != ""
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    if method == "PUT":
        if not has_key:
            return "PutBucketLifecycleConfiguration" if "lifecycle" in params else "CreateBucket"
        return "CopyObject" if headers.get("x-amz-copy-source") else "PutObject"
    if method == "GET":
        if has_key:
            return "GetObject"
        if "versions" in params:
            return "ListObjectVersions"
        return "ListObjectsV2" if "list-type" in params else "GetBucket"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if method == "POST" and "delete" in params:
        return "DeleteObjects"
    return f"{method}{'Object' if has_key else 'Bucket'}"


class _State:
    def __init__(self, target: str) -> None:
        parts = urllib.parse.urlsplit(target)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.requests: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self.rate = 0.0
        self.until = 0.0
        self.lock = threading.Lock()
        self.local = threading.local()

    def connection(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            self.local.conn = conn
        return conn


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _control(self, path: str, query: str) -> bool:
            if path == "/__stats":
                with state.lock:
                    body = json.dumps(
                        {"requests": state.requests, "injected": state.injected}
                    ).encode()
                self._answer(200, body, {"Content-Type": "application/json"})
                return True
            if path == "/__faults":
                params = urllib.parse.parse_qs(query)
                with state.lock:
                    state.rate = float(params["rate"][0])
                    state.until = time.monotonic() + float(params["seconds"][0])
                self._answer(204, b"", {})
                return True
            return False

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _relay(self) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self._control(path, query):
                return
            op = operation_of(self.command, path, query, self.headers)
            with state.lock:
                state.requests[op] += 1
                faulty = time.monotonic() < state.until and random.random() < state.rate  # noqa: S311
                if faulty:
                    state.injected[op] += 1
            if faulty:
                self._answer(503, _SLOWDOWN, {"Content-Type": "application/xml"})
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            headers["Host"] = f"{state.host}:{state.port}"
            headers["Content-Length"] = str(len(body))
            for attempt in range(2):  # a kept-alive connection the server closed: once more
                conn = state.connection()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    state.local.conn = None
                    if attempt:
                        raise
            out = {k: v for k, v in response.getheaders() if k.lower() not in _HOP}
            if self.command == "HEAD":
                out["Content-Length"] = response.getheader("Content-Length") or "0"
            self._answer(response.status, data, out)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

    return Relay


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # read at listen(): set on the class

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client SIGKILLed mid-request (the chaos pass) resets its sockets: not news."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    args = parser.parse_args()
    server = _Server(("127.0.0.1", 0), _handler(_State(args.target)))
    print(f"relay listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
