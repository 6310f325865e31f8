"""The gateway over HTTP serves links to its claims at /claims/, the memory store's too.

`s3claim mcp-proxy --config ... --store memory --references --listen 127.0.0.1:0`: a model
hands a tool `{"$claim": handle, "as": "link"}`, the tool gets a URL on the gateway itself,
and code reads the claim there with nothing but urllib (no MCP, no store, no settings).
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import anyio
from mcp import Client

from devkit.mcp_upstream import document
from tests.mcp_proxy._support import PYTHON, UPSTREAM, http_proxy, text_of


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_link_reference_through_the_gateway_reads_on_the_gateway(
    sealed_module: None, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[upstreams.dev]\ncommand = "{PYTHON}"\nargs = ["{UPSTREAM}"]\n')
    options = ("--tenant", "acme", "--store", "memory", "--references", "--config", str(config))
    with http_proxy(*options, "--threshold-chars", "2000", upstream_argv=()) as proxy:
        base = proxy.url.removesuffix("/mcp")
        assert f"links: {base}/claims/" in "".join(proxy.stderr)

        async def scenario() -> str:
            async with Client(proxy.url) as client:
                listed = {t.name: t.description or "" for t in (await client.list_tools()).tools}
                assert '"as": "link"' in listed["dev__echo"]
                shown = text_of(await client.call_tool("dev__big", {"chars": 12_000}))
                found = re.search(r"handle='(claim:[0-9a-f]+)'", shown)
                assert found is not None, shown[-300:]
                handle = found.group(1)
                reference = {"$claim": handle, "as": "link"}
                result = await client.call_tool("dev__echo", {"text": reference})
                assert not result.is_error, text_of(result)
                return text_of(result)

        url = anyio.run(scenario)
        assert url.startswith(f"{base}/claims/") and "acme" not in url
        expected = document(12_000)
        assert _get(url) == (200, expected.encode())
        lines = expected.splitlines(keepends=True)
        assert _get(f"{url}?line=3&lines=2") == (200, "".join(lines[2:4]).encode())
        flipped = url[:-5] + ("A" if url[-5] != "A" else "B") + url[-4:]
        assert _get(flipped) == (404, b"Not Found")
