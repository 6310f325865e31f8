"""The gateway over HTTP serves links to its claims at /claims/, the memory store's too.

`s3claim mcp-proxy --config ... --store memory --references --listen 127.0.0.1:0`: a model
hands a tool `{"$claim": handle, "as": "link"}`, the tool gets a URL on the gateway itself,
and code reads the claim there with nothing but urllib (no MCP, no store, no settings).
"""

from __future__ import annotations

import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import anyio
import pytest
from mcp import Client

from devkit.mcp_upstream import document
from tests._slow_clients import read_slowly, stalled, still_open
from tests.mcp_proxy._support import PYTHON, UPSTREAM, HttpProxy, http_proxy, text_of

HEADER_TIMEOUT = 1.0
"""The gateway's bound on a request's headers here (S3CLAIM_HEADER_TIMEOUT; 10 s by
default): small, so the test of it takes a second or two."""


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def gateway(sealed_module: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpProxy]:
    config = tmp_path_factory.mktemp("gateway") / "gateway.toml"
    config.write_text(f'[upstreams.dev]\ncommand = "{PYTHON}"\nargs = ["{UPSTREAM}"]\n')
    options = ("--tenant", "acme", "--store", "memory", "--references", "--config", str(config))
    env = {**os.environ, "S3CLAIM_HEADER_TIMEOUT": str(HEADER_TIMEOUT)}
    with http_proxy(*options, "--threshold-chars", "2000", upstream_argv=(), env=env) as proxy:
        yield proxy
    assert not any("Traceback" in line for line in proxy.stderr), "".join(proxy.stderr)[-3000:]


def _link_to(proxy: HttpProxy, chars: int) -> str:
    """A link, made through the gateway by a reference, to a claim of `dev__big`'s result."""

    async def scenario() -> str:
        async with Client(proxy.url) as client:
            listed = {t.name: t.description or "" for t in (await client.list_tools()).tools}
            assert '"as": "link"' in listed["dev__echo"]
            shown = text_of(await client.call_tool("dev__big", {"chars": chars}))
            found = re.search(r"handle='(claim:[0-9a-f]+)'", shown)
            assert found is not None, shown[-300:]
            reference = {"$claim": found.group(1), "as": "link"}
            result = await client.call_tool("dev__echo", {"text": reference})
            assert not result.is_error, text_of(result)
            return text_of(result)

    return anyio.run(scenario)


def test_a_link_reference_through_the_gateway_reads_on_the_gateway(gateway: HttpProxy) -> None:
    base = gateway.url.removesuffix("/mcp")
    assert f"links: {base}/claims/" in "".join(gateway.stderr)
    url = _link_to(gateway, 12_000)
    assert url.startswith(f"{base}/claims/") and "acme" not in url
    expected = document(12_000)
    assert _get(url) == (200, expected.encode())
    lines = expected.splitlines(keepends=True)
    assert _get(f"{url}?line=3&lines=2") == (200, "".join(lines[2:4]).encode())
    flipped = url[:-5] + ("A" if url[-5] != "A" else "B") + url[-4:]
    assert _get(flipped) == (404, b"Not Found")


def test_requests_whose_headers_never_arrive_are_closed_and_long_answers_are_not(
    gateway: HttpProxy,
) -> None:
    expected = document(1_500_000).encode()

    async def slow_call() -> str:  # its answer, an SSE stream, stays open past the bound
        async with Client(gateway.url) as client:
            return text_of(await client.call_tool("dev__slow", {"seconds": 2 * HEADER_TIMEOUT}))

    with stalled(gateway.url, 50) as held:
        started = time.monotonic()
        assert anyio.run(slow_call) == "finally"
        url = _link_to(gateway, 1_500_000)
        status, body, took = read_slowly(url, size=len(expected), seconds=2 * HEADER_TIMEOUT)
        assert status == 200 and body == expected
        assert took > 1.5 * HEADER_TIMEOUT
        left = max(0.0, started + HEADER_TIMEOUT + 4 - time.monotonic())
        assert still_open(held, within=left) == []
