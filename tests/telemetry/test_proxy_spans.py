"""The MCP proxy on the real SDK: it continues the client's trace and passes it upstream.

The client's trace context travels in the request's `_meta` (`traceparent`, as the MCP
conventions say); the proxy's server span continues it, s3claim's spans sit inside that, and
the upstream receives the proxy's own outgoing span as its parent, over stdio and HTTP.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from opentelemetry.trace import SpanKind

from devkit.servers import free_port
from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from s3claim.mcp import ClaimCheckProxy, HttpUpstream, Scoping, StdioUpstream, Upstream
from s3claim.telemetry import _spans, check_in_operation
from tests.mcp_proxy._support import PYTHON, handle_of, stdio_proxy, text_of
from tests.telemetry.conftest import Telemetry

UPSTREAM = str(Path(__file__).with_name("_meta_upstream.py"))


@pytest.fixture(scope="module")
def http_upstream() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([PYTHON, UPSTREAM, "--http", str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "no upstream"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=15)


CLIENT_TRACE, CLIENT_SPAN = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
CLIENT = {"traceparent": f"00-{CLIENT_TRACE:032x}-{CLIENT_SPAN:016x}-01"}
"""A client's trace context, as an instrumented MCP client sends it."""


def _parent_of(traceparent: str) -> str:
    """A traceparent without its flags (the SDK may set W3C's random-trace-id bit too)."""
    return traceparent.rsplit("-", 1)[0]


def _traceparent(span: Any) -> str:
    return f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_proxy_continues_the_clients_trace_and_passes_it_upstream(
    telemetry: Telemetry, transport: str, request: pytest.FixtureRequest
) -> None:
    target: Any = (
        StdioUpstream(command=PYTHON, args=(UPSTREAM,))
        if transport == "stdio"
        else HttpUpstream(url=request.getfixturevalue("http_upstream"))
    )
    store = MemoryClaimCheckStore()

    async def main() -> tuple[dict[str, Any], str]:
        async with Upstream.connect(target, timeout=20, startup_timeout=60) as up:
            proxy = ClaimCheckProxy(
                up, claim_check=ClaimCheck(store), scoping=Scoping.for_stdio("acme")
            )
            await proxy.check_names()
            async with Client(proxy.server()) as client:
                seen = json.loads(text_of(await client.call_tool("meta", {}, meta=CLIENT)))
                handle = handle_of(text_of(await client.call_tool("big", {}, meta=CLIENT)))
                fetched = await client.call_tool("fetch_result", {"handle": handle}, meta=CLIENT)
                assert not fetched.is_error
                return seen, handle

    seen, handle = asyncio.run(main())
    spans = telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}

    def parent(span: Any) -> Any:
        assert span.parent is not None, f"{span.name} has no parent"
        return by_id[span.parent.span_id]

    served = {s.name: s for s in spans if s.kind == SpanKind.SERVER}
    assert {"tools/call meta", "tools/call big", "tools/call fetch_result"} <= set(served)
    for name in ("tools/call meta", "tools/call big", "tools/call fetch_result"):
        server = served[name]  # each continues the client's span, read from `_meta`
        assert server.parent is not None and server.parent.is_remote
        assert (server.context.trace_id, server.parent.span_id) == (CLIENT_TRACE, CLIENT_SPAN)

    (forwarded,) = [
        s for s in spans if s.name == "MCP send tools/call meta" and s.parent is not None
        and s.parent.span_id == served["tools/call meta"].context.span_id
    ]  # fmt: skip
    assert _parent_of(seen["traceparent"]) == _traceparent(
        forwarded
    )  # the upstream's parent: the proxy

    passed, check_in = telemetry.spans("s3claim.check_in")  # each result is admitted
    assert parent(passed) is served["tools/call meta"]
    assert passed.attributes is not None and passed.attributes["s3claim.outcome"] == "passed"
    assert parent(check_in) is served["tools/call big"]
    assert check_in.attributes is not None
    assert check_in.attributes["s3claim.tool"] == "big"
    assert check_in.attributes["s3claim.handle"] == handle
    assert check_in.attributes["s3claim.outcome"] == "stored"
    big = served["tools/call big"].attributes  # the MCP SDK's tool-execution span
    assert big is not None and big["gen_ai.tool.call.result_ref"] == handle
    assert big["s3claim.chars.total"] == check_in.attributes["s3claim.chars.total"]
    assert big["s3claim.chars.kept_out"] == check_in.attributes["s3claim.chars.kept_out"] > 0
    fetch = telemetry.span("s3claim.fetch")
    assert parent(fetch) is served["tools/call fetch_result"]
    assert fetch.attributes is not None and fetch.attributes["s3claim.outcome"] == "ok"
    assert fetch.attributes["gen_ai.tool.call.result_ref"] == handle
    assert telemetry.total("s3claim.claims", tool="big", outcome="stored") == 1
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
    (record,) = telemetry.audit_records
    assert (record.handle, record.tenant) == (handle, store.tenant_tag("acme"))


def test_a_proxy_without_an_sdk_passes_the_clients_trace_through(telemetry: Telemetry) -> None:
    """`s3claim mcp-proxy` with no SDK configured: no spans of its own, and the upstream
    gets the client's traceparent as the client sent it."""

    async def main() -> dict[str, Any]:
        async with stdio_proxy("--tenant", "acme", upstream_argv=(PYTHON, UPSTREAM)) as client:
            return dict(json.loads(text_of(await client.call_tool("meta", {}))))

    seen = asyncio.run(main())
    (sent,) = [s for s in telemetry.spans() if s.name == "MCP send tools/call meta"]
    assert _parent_of(seen["traceparent"]) == _traceparent(sent)


def test_tool_names_an_upstream_chooses_are_bounded_in_metrics(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: 300 upstream tool names of 5,006 characters were 300 metric series."""
    monkeypatch.setattr(_spans, "_tools", set())
    names = ["read_" + "x" * 5_001, *(f"tool_{i}" for i in range(150))]
    for name in names:
        with check_in_operation(None, Scope("acme", "r"), tool=name) as operation:
            operation.outcome = "passed"
    tools = [p.attributes["s3claim.tool"] for p in telemetry.points("s3claim.claims")]
    assert max(map(len, tools)) <= 64 and len(set(tools)) == 101
    assert telemetry.total("s3claim.claims", tool="other") == 1 + 50
    assert telemetry.total("s3claim.claims", tool="tool_99") == 1  # the first hundred kept
