"""Issue 46: a URI one upstream listed is never handed to another. Each upstream's listings
and links are remembered apart, so one that floods them forgets only its own; and one it
forgot still goes to no other. Real upstreams (`_lister_upstream.py`, on stdio) behind an
in-process gateway and proxy, with the official client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from s3claim.claimcheck import ClaimCheck
from s3claim.mcp import ClaimCheckProxy, Gateway, Scoping, StdioUpstream
from s3claim.memory import MemoryClaimCheckStore
from tests.mcp_proxy._lister_upstream import fresh
from tests.mcp_proxy._support import PYTHON, text_of

LISTER = str(Path(__file__).with_name("_lister_upstream.py"))
SECRET = "file:///alpha/secret.txt"
CATCH_ALL = "{+uri}"  # matches every URI
FLOOD = 10_001  # one more than the gateway remembers of an upstream's listings


def lister(name: str, *options: str) -> StdioUpstream:
    return StdioUpstream(command=PYTHON, args=(LISTER, "--name", name, *options))


@asynccontextmanager
async def through_gateway(**targets: StdioUpstream) -> AsyncIterator[Client]:
    async with Gateway.connect(targets, timeout=30.0, startup_timeout=60.0) as gateway:
        proxy = ClaimCheckProxy(
            gateway,
            claim_check=ClaimCheck(MemoryClaimCheckStore()),
            scoping=Scoping.for_stdio("acme"),
        )
        async with Client(proxy.server()) as client:
            yield client


async def read(client: Client, uri: str) -> str:
    (contents,) = (await client.read_resource(uri)).contents
    return contents.text  # type: ignore[union-attr]


async def heard(client: Client, upstream: str) -> list[str]:
    answer: list[str] = json.loads(text_of(await client.call_tool(f"{upstream}__heard", {})))
    return answer


def test_an_upstream_listing_10001_uris_and_a_catch_all_takes_nothing_another_listed() -> None:
    async def scenario() -> None:
        async with through_gateway(
            alpha=lister("alpha", "--list", SECRET),
            flood=lister("flood", "--fresh", str(FLOOD), "--template", CATCH_ALL),
        ) as client:
            assert await read(client, SECRET) == f"alpha read {SECRET}"
            listed = [r.uri for r in (await client.list_resources()).resources]  # learnt again
            assert listed[0] == SECRET and len(listed) == 1 + FLOOD
            assert await read(client, SECRET) == f"alpha read {SECRET}"
            # Listing it too, later, does not take it; nor naming it among as many links.
            assert not (await client.call_tool("flood__also_list", {"uri": SECRET})).is_error
            assert [r.uri for r in (await client.list_resources()).resources].count(SECRET) == 2
            assert await read(client, SECRET) == f"alpha read {SECRET}"
            named = await client.call_tool("flood__links", {"count": FLOOD, "uris": [SECRET]})
            assert not named.is_error
            assert await read(client, SECRET) == f"alpha read {SECRET}"
            # What flood lists, and what only its template matches, are still flood's.
            for uri in (fresh("flood", 0), fresh("flood", FLOOD - 1), "file:///elsewhere.txt"):
                assert await read(client, uri) == f"flood read {uri}"
            assert SECRET not in await heard(client, "flood")

    anyio.run(scenario)


def test_a_uri_an_upstream_listed_and_forgot_falls_to_no_other_upstream() -> None:
    """alpha lists 10,001 URIs, SECRET first: the gateway forgets SECRET, alpha's oldest, and
    then neither flood's catch-all template nor flood listing it later takes it."""

    async def scenario() -> None:
        async with through_gateway(
            alpha=lister("alpha", "--list", SECRET, "--fresh", str(FLOOD - 1)),
            flood=lister("flood", "--template", CATCH_ALL),
        ) as client:
            newest = fresh("alpha", FLOOD - 2)
            assert await read(client, newest) == f"alpha read {newest}"
            with pytest.raises(MCPError, match="no longer remembers") as refused:
                await client.read_resource(SECRET)
            assert "alpha" in refused.value.error.message
            assert not (await client.call_tool("flood__also_list", {"uri": SECRET})).is_error
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert listed.count(SECRET) == 2  # alpha's and flood's
            with pytest.raises(MCPError, match="no longer remembers"):
                await client.read_resource(SECRET)
            elsewhere = "file:///elsewhere.txt"  # listed by nobody: the template's
            assert await read(client, elsewhere) == f"flood read {elsewhere}"
            assert await heard(client, "flood") == [elsewhere]

    anyio.run(scenario)


def test_an_upstream_naming_10001_links_does_not_make_the_gateway_forget_anothers() -> None:
    linked = "file:///alpha/linked.txt"

    async def scenario() -> None:
        async with through_gateway(alpha=lister("alpha"), flood=lister("flood")) as client:
            assert not (await client.call_tool("alpha__links", {"uris": [linked]})).is_error
            flooded = await client.call_tool("flood__links", {"count": FLOOD, "uris": [linked]})
            assert not flooded.is_error
            assert await read(client, linked) == f"alpha read {linked}"
            own = f"file:///flood/link/{FLOOD - 1}.txt"  # its newest: its oldest it forgot
            assert await read(client, own) == f"flood read {own}"
            assert linked not in await heard(client, "flood")

    anyio.run(scenario)
