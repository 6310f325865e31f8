"""`s3claim mcp-proxy` as a subprocess over stdio and over streamable HTTP, and its usage."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import typer.core
import typer.main
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CreateMessageResult, TextContent
from typer.testing import CliRunner

from devkit.mcp_upstream import document
from s3claim.claimcheck import ClaimCheck
from s3claim.cli import app
from s3claim.mcp import RUN_META_KEY, ClaimCheckProxy, HttpUpstream, Scoping, Upstream
from s3claim.mcp._targets import _bounded
from s3claim.memory import MemoryClaimCheckStore
from s3claim.wording import HANDLE_SEEN, UNAVAILABLE_MESSAGE, strip_notes
from tests.mcp_proxy._support import (
    PYTHON,
    ROOT,
    UPSTREAM,
    handle_of,
    http_proxy,
    read_all,
    received,
    stdio_proxy,
    text_of,
)

runner = CliRunner()
REFUSED = f'{{"error": "claim_unavailable", "message": "{UNAVAILABLE_MESSAGE}"}}'


def test_stdio_a_client_launches_the_proxy_and_reads_a_large_result_back() -> None:
    """In the SDK's default mode the client falls back to the handshake, which is all the
    proxy offers on stdio: so the upstream can ask it to sample in the middle of a call."""
    expected = document(30_000, seed=4)

    async def sampling(ctx: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="yes"), model="m")

    async def scenario() -> None:
        async with stdio_proxy(
            "--tenant", "acme", "--threshold-chars", "2000", sampling_callback=sampling
        ) as client:
            assert client.protocol_version == "2025-11-25"
            names = [t.name for t in (await client.list_tools()).tools]
            assert names[0] == "echo" and names[-2:] == ["fetch_result", "search_result"]
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
            assert text_of(await client.call_tool("sample", {})) == "sampled: yes"
            result = await client.call_tool("big", {"chars": 30_000, "seed": 4})
            whole, windows = await read_all(client, handle_of(text_of(result)))
            assert whole == expected
            assert expected not in received(result, *windows)
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "upstream_unavailable" in text_of(crashed)
            assert text_of(await client.call_tool("echo", {"text": "back"})) == "back"

    anyio.run(scenario)


def test_stdio_with_references_the_upstream_takes_a_claim_as_an_argument_unawares() -> None:
    expected = document(30_000, seed=4)
    options = ("--tenant", "acme", "--threshold-chars", "2000", "--references")

    async def scenario() -> None:
        async with stdio_proxy(*options, "--max-reference-chars", "20000") as client:
            echo = next(t for t in (await client.list_tools()).tools if t.name == "echo")
            assert '{"$claim": handle}' in (echo.description or "")
            head = text_of(await client.call_tool("big", {"chars": 30_000, "seed": 4}))
            found = HANDLE_SEEN.search(head)  # the marker says how to pass it, too
            assert found is not None and '{"$claim": "' in head
            handle = found.group(1)
            sliced = {"$claim": handle, "offset": 100, "length": 50}
            assert text_of(await client.call_tool("echo", {"text": sliced})) == expected[100:150]
            whole = await client.call_tool("echo", {"text": {"$claim": handle}})
            assert whole.is_error and "reference_too_large" in text_of(whole)
            theirs = await client.call_tool("echo", {"text": {"$claim": "claim:1" + "0" * 32}})
            assert theirs.is_error and "claim_unavailable" in text_of(theirs)

    anyio.run(scenario)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def http_upstream(port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """Our test server on streamable HTTP at 127.0.0.1:`port`, once it accepts connections.

    It speaks the 2025-11-25 protocol only, which answers every call with an SSE stream (a
    JSON body with `--json`).
    """
    process = subprocess.Popen([PYTHON, UPSTREAM, "--http", str(port), "--legacy", *extra])
    try:
        deadline = time.monotonic() + 30
        while not _accepts(port):
            assert process.poll() is None and time.monotonic() < deadline, "no upstream"
            time.sleep(0.05)
        yield process
    finally:
        process.kill()
        process.wait(timeout=15)


def test_an_http_upstream_larger_than_the_sdks_event_limit_and_its_crash() -> None:
    chars = 3_000_000  # over 1 MiB, the SDK's default limit for one SSE event
    tail = document(chars)[-3_000:]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"

    async def scenario() -> None:
        with http_upstream(port) as upstream:
            async with stdio_proxy(
                "--tenant", "acme", "--upstream-url", url, upstream_argv=()
            ) as client:
                result = await client.call_tool("big", {"chars": chars})
                handle = handle_of(text_of(result))
                end = await client.call_tool(
                    "fetch_result", {"handle": handle, "offset": chars - 3_000}
                )
                assert strip_notes(text_of(end)) == tail  # and the end note after it
                upstream.kill()
                upstream.wait(timeout=15)
                down = await client.call_tool("echo", {"text": "anyone?"})
                assert down.is_error and "upstream_unavailable" in text_of(down)
                with http_upstream(port):
                    back = await client.call_tool("echo", {"text": "back"})
                    assert text_of(back) == "back"

    anyio.run(scenario)


@pytest.mark.parametrize("answer", ["sse", "json"])
def test_an_http_upstreams_answer_over_max_result_bytes_is_an_error_and_the_proxy_goes_on(
    answer: str,
) -> None:
    """An SSE event over the bound is refused by the SDK; a JSON body, which the SDK reads
    whole, by the proxy's HTTP client as it streams in: each the call's error result."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = HttpUpstream(url=f"http://127.0.0.1:{port}/mcp", max_event_bytes=100_000)
    said = {"sse": "exceeded the 100000 byte limit", "json": "(--max-result-bytes 100000)"}

    async def scenario() -> None:
        with http_upstream(port, *(("--json",) if answer == "json" else ())):
            async with Upstream.connect(target, timeout=20.0) as upstream:
                proxy = ClaimCheckProxy(
                    upstream, claim_check=ClaimCheck(MemoryClaimCheckStore()),
                    scoping=Scoping.for_stdio("acme"),
                )  # fmt: skip
                async with Client(proxy.server()) as client:
                    over = await client.call_tool("huge", {"chars": 300_000})
                    assert over.is_error and "upstream_error" in text_of(over)
                    assert said[answer] in text_of(over) and "x" * 100 not in text_of(over)
                    fits = await client.call_tool("huge", {"chars": 50_000})
                    assert not fits.is_error and "[50000 characters" in text_of(fits)

    anyio.run(scenario)


def test_a_json_answer_is_refused_as_it_streams_in_never_read_whole() -> None:
    pulled = 0

    class Endless(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            nonlocal pulled
            while True:
                pulled += 1
                yield b"x" * 1024

    async def read() -> None:
        sse = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Endless())
        await _bounded(sse, limit=10_240)
        assert isinstance(sse.stream, Endless)  # an SSE stream is the SDK's to bound, by event
        json = httpx2.Response(200, headers={"content-type": "application/json"}, stream=Endless())
        await _bounded(json, limit=10_240)
        with pytest.raises(httpx2.StreamError, match=r"--max-result-bytes 10240"):
            await json.aread()

    anyio.run(read)
    assert pulled == 11


@pytest.fixture(scope="module")
def acme(sealed_module: None) -> Iterator[str]:
    """The URL of one `--tenant acme` HTTP proxy for the tests of runs: each mints its own
    handles, in the tenant's run, a run it names or its session's, and reads back only those."""
    with http_proxy("--tenant", "acme", "--threshold-chars", "2000") as proxy:
        yield proxy.url


def test_http_clients_share_a_tenant_run_unless_they_name_their_own(acme: str) -> None:
    expected = document(12_000)

    async def scenario(url: str) -> None:
        async with Client(url) as one, Client(url) as two:
            assert one.protocol_version == "2026-07-28"  # no session: any instance answers
            result = await one.call_tool("big", {"chars": 12_000})
            handle = handle_of(text_of(result))
            assert (await read_all(two, handle))[0] == expected  # one run per tenant
            named = await one.call_tool("big", {"chars": 12_000}, meta={RUN_META_KEY: "conv-1"})
            own = handle_of(text_of(named))
            assert own != handle
            refused = await two.call_tool("fetch_result", {"handle": own})
            assert text_of(refused) == REFUSED
            meta = {RUN_META_KEY: "conv-1"}
            assert (await read_all(two, own, meta=meta))[0] == expected

    anyio.run(scenario, acme)


def test_http_legacy_clients_each_get_their_session_as_run(acme: str) -> None:
    async def scenario(url: str) -> None:
        async with Client(url, mode="legacy") as one, Client(url, mode="legacy") as two:
            assert one.protocol_version == "2025-11-25"
            handle = handle_of(text_of(await one.call_tool("big", {"chars": 5_000})))
            assert (await read_all(one, handle))[0] == document(5_000)
            refused = await two.call_tool("fetch_result", {"handle": handle})
            assert text_of(refused) == REFUSED

    anyio.run(scenario, acme)


def test_http_a_gateway_names_the_tenant_per_request_with_a_header() -> None:
    async def scenario(url: str) -> None:
        async with AsyncExitStack() as stack:
            clients = {}
            for tenant in ("acme", "globex", None):
                headers = {"X-Tenant": tenant} if tenant else {}
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                transport = streamable_http_client(url, http_client=http)
                clients[tenant] = await stack.enter_async_context(Client(transport))
            shown = text_of(await clients["acme"].call_tool("big", {"chars": 5_000}))
            handle = handle_of(shown)
            assert (await read_all(clients["acme"], handle))[0] == document(5_000)
            other = await clients["globex"].call_tool("fetch_result", {"handle": handle})
            assert text_of(other) == REFUSED
            missing = await clients[None].call_tool("fetch_result", {"handle": handle})
            assert missing.is_error and '"error": "tenant_missing"' in text_of(missing)

    with http_proxy("--tenant-header", "x-tenant", "--threshold-chars", "2000") as proxy:
        anyio.run(scenario, proxy.url)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--tenant", "t"], "no upstream: give its command after --"),
        (["--tenant", "t", "--upstream-url", "http://127.0.0.1:9/mcp", "--", "x"], "upstream once"),
        (["--tenant", "t", "--upstream-url", "file:///x"], "must be an http:// or https:// URL"),
        (["--tenant", "t", "--listen", "9000", "--", "x"], "--listen: takes HOST:PORT"),
        (["--tenant-header", "x-t", "--", "x"], "--tenant-header: needs --listen"),
        (["--", "x"], "a tenant is needed"),
        (
            ["--tenant", "t", "--tenant-header", "x-t", "--listen", "127.0.0.1:0", "--", "x"],
            "--tenant and --tenant-header exclude each other",
        ),
        (
            ["--tenant-header", "bad header", "--listen", "127.0.0.1:0", "--", "x"],
            "--tenant-header: must be an HTTP header name",
        ),
        (["--tenant", "t", "--head-chars", "5000", "--", "x"], "head_chars"),
        (
            ["--tenant", "t", "--pick-lines", "(", "--", "x"],
            "--pick-lines: Value error, not a valid regular expression (missing ) at position 1)",
        ),
        (["--tenant", "t", "--pick-lines", "x", "--pick-max", "30", "--", "x"], "pick_max * 200"),
        (["--tenant", "t", "--store", "s3", "--", "x"], "S3CLAIM_BUCKET"),
        (
            ["--tenant", "t", "--bucket", "b", "--memory-max-tenant-bytes", "9", "--", "x"],
            "bound --store memory; this proxy uses the s3 store",
        ),
        (["--tenant", "t", "--bucket", "b", "--", "x"], "S3CLAIM_HANDLE_KEY is not set"),
        (["--tenant", "x" * 1_025, "--", "x"], "at most 1024 characters"),
        (
            ["--tenant", "t", "--max-calls", "4", "--max-tenant-calls", "5", "--", "x"],
            "--max-tenant-calls: cannot be more than --max-calls (4), got 5",
        ),
        (["--tenant", "t", "--reuse", "read=5m", "--", "x"], "--reuse: takes TOOL=SECONDS"),
        (
            ["--tenant", "t", "--reuse", "read=5", "--config", "gateway.toml"],
            "--reuse is for the command line's upstream",
        ),
    ],
)
def test_usage_and_configuration_mistakes_are_one_line_and_exit_2(
    argv: list[str], needle: str
) -> None:
    result = runner.invoke(app, ["mcp-proxy", *argv])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("s3claim: error: ") and result.stderr.count("\n") == 1
    assert needle in result.stderr, result.stderr


def test_a_tool_name_clash_with_the_upstream_is_refused_at_start() -> None:
    result = runner.invoke(
        app, ["mcp-proxy", "--tenant", "t", "--", PYTHON, UPSTREAM, "--tool", "fetch_result"]
    )
    assert result.exit_code == 2, result.output
    assert "the upstream has tools named ['fetch_result']" in result.stderr


def test_an_upstream_that_cannot_start_is_exit_3() -> None:
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--", "/nonexistent/server"])
    assert result.exit_code == 3, result.output
    assert "cannot start the upstream: no such command: '/nonexistent/server'" in result.stderr


def test_an_upstream_whose_cwd_does_not_exist_is_told_so_not_no_such_command(
    tmp_path: Path,
) -> None:
    """The launch fails with the FileNotFoundError of the chdir: it was reported as the
    command's (issue 48)."""
    missing = tmp_path / "gone"
    config = tmp_path / "gateway.toml"
    config.write_text(f'[upstreams.dev]\ncommand = "{PYTHON}"\ncwd = "{missing}"\n')
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", "--config", str(config)])
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines()[-1] == (
        "s3claim: error: upstream dev: cannot start the upstream: its working directory "
        f"(cwd) does not exist: {str(missing)!r}"
    )


def test_importing_s3claim_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, s3claim, s3claim.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')"
        " or m.startswith('s3claim.mcp')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_proxy_packages_surface_is_pinned() -> None:
    import s3claim.mcp

    assert s3claim.mcp.__all__ == [
        "AGENT", "DEFAULT_MAX_CALLS", "HEADER_TIMEOUT_SECONDS", "MCP_PATH", "RUN_META_KEY",
        "SAFE_VARIABLES", "ClaimCheckProxy", "Gateway", "HttpUpstream", "ProxySettings",
        "Scoping", "StdioUpstream", "Upstream", "UpstreamError", "UpstreamTarget",
        "listen_socket", "read_gateway_file", "read_gateway_reuse", "read_gateway_settings",
        "serve_http", "serve_stdio", "server_config", "upstream_environment",
    ]  # fmt: skip
    for name in s3claim.mcp.__all__:
        assert getattr(s3claim.mcp, name) is not None


def test_the_listening_socket_is_marked_tcp_so_responses_are_not_held_by_nagle() -> None:
    from s3claim.mcp import listen_socket

    with listen_socket("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        assert sock.getsockname()[1] > 0


def test_the_help_and_the_bounds_table_say_what_max_calls_counts() -> None:
    """All that takes a slot (`test_fair_shares`): tool calls, reads and prompts/get."""
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    helps = {p.name: p.help or "" for p in command.commands["mcp-proxy"].params}
    counted = "tool calls (the claim tools too), resource reads and prompts/get"
    assert counted in helps["max_calls"] and "as --max-calls counts" in helps["max_tenant_calls"]
    page = (ROOT / "docs" / "mcp-proxy.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if "| `--max-calls` (" in line]
    assert counted in row
    (row,) = [line for line in page.splitlines() if "| `--max-tenant-calls` (" in line]
    assert "counted as `--max-calls` counts them" in row


def test_the_docs_client_configuration_launches_the_proxy_before_the_server() -> None:
    page = (ROOT / "docs" / "mcp-proxy.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", page, re.DOTALL)
    assert block is not None
    (entry,) = json.loads(block.group(1))["mcpServers"].values()
    assert entry["command"] == "s3claim"
    args = entry["args"]
    assert args[0] == "mcp-proxy" and args[args.index("--") + 1 :][:2] == ["npx", "-y"]
    options = args[1 : args.index("--")]

    # The same options before our own server: the proxy starts and serves it.
    async def scenario() -> None:
        async with stdio_proxy(*options) as client:
            assert "fetch_result" in [t.name for t in (await client.list_tools()).tools]

    anyio.run(scenario)
