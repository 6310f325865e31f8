"""Record llama.cpp's server's exact replies for the test suite (tests/fixtures/llama_cpp/).

`make test` must not need llama.cpp, yet the provider must stay honest about what the real
server sends. So `python -m benchmarks.model.fixtures DIR` (after `make bench-model` built the
model venv) puts a recording proxy on 127.0.0.1 between `OpenAICompatibleProvider` and the
server and keeps, for each exchange, the server's status and body byte for byte, and what the
provider made of them. The tests replay the bodies through tests/_chat_server.py and check
the provider parses them the same way. It measures nothing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.model.server import LlamaServer, ServerConfig, describe_install
from benchmarks.model.turns import INLINE, Arm, arms
from s3claim.cli.demo import QUESTION, SYSTEM, read_contract_tool
from s3claim.errors import ProviderError
from s3claim.messages import Message, SystemMessage, UserMessage
from s3claim.providers import OpenAICompatibleProvider, TokenUsage

__all__ = ["record"]

_FORCE_READ = {"tool_choice": {"type": "function", "function": {"name": "read_contract"}}}


@dataclass
class _Exchange:
    status: int = 0
    body: bytes = b""


@dataclass
class _Proxy:
    url: str
    last: _Exchange = field(default_factory=_Exchange)


@contextmanager
def _proxy(target: str) -> Iterator[_Proxy]:
    """Forward POSTs to `target` (the server's /v1), keeping the last reply's exact bytes."""
    state: _Proxy

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            upstream = urllib.request.Request(  # noqa: S310  (loopback)
                target + self.path.removeprefix("/v1"),
                data=data,
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(upstream, timeout=3600) as response:  # noqa: S310
                    status, body = response.status, response.read()
            except urllib.error.HTTPError as exc:
                status, body = exc.code, exc.read()
            state.last = _Exchange(status, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = _Proxy(url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _summary(body: dict[str, Any]) -> dict[str, Any]:
    """The request without its content: roles and sizes, tools, options."""
    return {
        "messages": [
            {"role": m["role"], "content_chars": len(m.get("content") or "")}
            | ({"content": None} if "content" in m and m["content"] is None else {})
            | ({"tool_calls": len(m["tool_calls"])} if m.get("tool_calls") else {})
            for m in body["messages"]
        ],
        "tools": [t["function"]["name"] for t in body.get("tools", [])],
        **{k: body[k] for k in ("tool_choice", "max_tokens", "temperature") if k in body},
    }


def _exchange(
    proxy: _Proxy,
    alias: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    *,
    what: str,
    **options: Any,
) -> dict[str, Any]:
    usage: list[TokenUsage] = []
    provider = OpenAICompatibleProvider(
        proxy.url, alias, timeout=3600, on_usage=usage.append, **options
    )
    parsed: dict[str, Any]
    try:
        reply = provider.complete(messages, tools)
        parsed = {
            "message": reply.model_dump(mode="json"),
            "usage": [dataclasses.asdict(u) for u in usage],
        }
    except ProviderError as exc:
        parsed = {"error": str(exc).replace(provider.url, "{url}"), "status": exc.status}
    return {
        "what": what,
        "request": _summary(provider.request_body(messages, tools)),
        "status": proxy.last.status,
        "body": proxy.last.body.decode("utf-8"),
        "parsed": parsed,
    }


def record(server: LlamaServer, inline: Arm, out: Path, *, described: str) -> list[Path]:
    """Record the five exchanges into `out`, one JSON file each; returns the paths."""
    if inline.name != INLINE:
        raise ValueError(f"expected the inline arm, got {inline.name!r}")
    question: list[Message] = [SystemMessage(content=SYSTEM), UserMessage(content=QUESTION)]
    tools = [read_contract_tool("(the contract)").schema]
    oversized = inline.turns[1]
    null_content = {
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "read_contract", "arguments": '{"name": "msa"}'},
            }]},
            {"role": "tool", "tool_call_id": "call_1", "name": "read_contract",
             "content": "SECRET-TOOL-CONTENT"},
        ]
    }  # fmt: skip
    alias = server.config.alias
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with _proxy(server.base_url) as proxy:
        exchanges = {
            "plain_answer": _exchange(
                proxy, alias, question, [], max_tokens=24,
                what="A plain answer: the question, no tools, 24 tokens at most.",
            ),
            "tool_call": _exchange(
                proxy, alias, question, tools, max_tokens=64, extra_body=_FORCE_READ,
                what="A tool call: tool_choice names read_contract, so a grammar makes the "
                "model call it and write its arguments.",
            ),
            "malformed_tool_call": _exchange(
                proxy, alias, question, tools, max_tokens=3, extra_body=_FORCE_READ,
                what="A malformed tool call: the same, cut off after 3 tokens, so its "
                "arguments are not valid JSON.",
            ),
            "context_length_exceeded": _exchange(
                proxy, alias, list(oversized.messages), list(oversized.tools), max_tokens=1,
                what="An oversized prompt: the inline run's second turn (the whole contract) "
                f"against a {server.config.n_ctx:,}-token window.",
            ),
            "null_content_refused": _exchange(
                proxy, alias, question, [], max_tokens=1, extra_body=null_content,
                what="An assistant message with a null content beside its tool calls, as "
                "OpenAI accepts it: this server refuses the request with HTTP 500, and its "
                "message quotes the request.",
            ),
        }  # fmt: skip
    for name, exchange in exchanges.items():
        path = out / f"{name}.json"
        document = {"server": described, **exchange}
        path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        written.append(path)
    return written


def main(argv: list[str]) -> None:
    """`python -m benchmarks.model.fixtures DIR [MODEL_PYTHON]`: record into DIR."""
    out = Path(argv[0])
    python = Path(argv[1]) if len(argv) > 1 else Path(".venv-model/bin/python")
    info = describe_install(python)
    config = ServerConfig(python=python, model=Path(info["model"]), n_ctx=8192)
    described = (
        f"llama-cpp-python {info['llama_cpp_python']} (libllama {info['libllama']}), "
        f"SmolLM2-135M-Instruct Q4_1 from {info['model_package']}, n_ctx {config.n_ctx}"
    )
    inline = next(a for a in arms() if a.scenario == "counsel" and a.name == INLINE)
    log = Path(tempfile.mkdtemp(prefix="s3claim-fixtures-")) / "server.log"
    with LlamaServer(config, log=log) as server:
        for path in record(server, inline, out, described=described):
            print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
