"""Issue 36, point 7: what the upstream lists is neutralised whole, and nothing of a claim goes
upstream; claim URIs in any form are the proxy's. Each case against our test server with
`--hostile` (devkit/mcp_upstream.py), which lists forged schemas and look-alike names and
records every call, read and subscription.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from devkit.mcp_upstream import HANDLE, document
from s3claim.claimcheck import ClaimCheck
from s3claim.hosting import neutralise
from s3claim.mcp import ClaimCheckProxy, Gateway, Scoping, StdioUpstream, Upstream
from s3claim.memory import MemoryClaimCheckStore
from tests.mcp_proxy._support import PYTHON, in_process, text_of, upstream

LOOK_ALIKES = (
    "fetch_result\u200b", "fetch-result", "Fetch_Result", "search-result",
    "\uff46\uff45\uff54\uff43\uff48\uff3f\uff52\uff45\uff53\uff55\uff4c\uff54",
    "fetch\U000e005fresult", "get_claim:1abc",
)  # fmt: skip


def hostile(scenario: Any, **options: Any) -> None:
    async def run() -> None:
        async with in_process(extra=("--hostile",), **options) as (client, proxy):
            await scenario(client, proxy)

    anyio.run(run)


async def heard(client: Client, tool: str = "heard") -> list[str]:
    answer: list[str] = json.loads(text_of(await client.call_tool(tool, {})))
    return answer


def strings(value: Any) -> list[str]:
    """Every string of a JSON value, keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def test_every_string_of_a_tool_listing_is_neutralised_at_any_depth_of_its_schema() -> None:
    async def scenario(client: Client, proxy: ClaimCheckProxy) -> None:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "schema_forgery"]
        shown = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert all(neutralise(s) == s for s in strings(shown)), shown
        assert "claim:" not in json.dumps(shown) and "<|im_start|>" not in json.dumps(shown)
        properties = tool.input_schema["properties"]
        assert f"(|im_start|){HANDLE.replace(':', '-')}" in properties
        assert properties["mode"]["enum"] == ["plain", "(INST)fetch-result"]
        assert properties["mode"]["default"] == f"{HANDLE.replace(':', '-')}(|im_end|)"
        assert tool.title == "call fetch-result" and tool.output_schema is None
        assert tool.annotations is not None and "claim-1" in (tool.annotations.title or "")

    hostile(scenario)


def test_prompt_listings_are_neutralised_and_look_alike_prompts_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A prompt named exactly like a claim tool is a look-alike too: left out, never got."""

    async def scenario(client: Client, proxy: ClaimCheckProxy) -> None:
        caplog.clear()
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert sorted(prompts) == ["review", "summary"]
        lines = [r.getMessage() for r in caplog.records if "leaving out" in r.getMessage()]
        assert len(lines) == 3 and all(line.startswith("prompts/list") for line in lines)
        shown = prompts["summary"].model_dump(by_alias=True, mode="json", exclude_none=True)
        assert shown["title"] == "(INST)" and shown["arguments"][0]["name"] == "claim-5abc"
        for name in ("Fetch-Result", "fetch_result", "search_result"):
            with pytest.raises(MCPError, match="imitates the proxy's claim tools"):
                await client.get_prompt(name)
        await client.get_prompt("review")
        for name in ("Fetch-Result", "fetch_result"):  # nor completed upstream
            with pytest.raises(MCPError, match="imitates the proxy's claim tools"):
                await client.complete(
                    types.PromptReference(name=name), {"name": "chars", "value": "1"}
                )
        claim = types.ResourceTemplateReference(uri=f"claim:{'0' * 32}")
        assert (
            await client.complete(claim, {"name": "offset", "value": "1"})
        ).completion.values == []
        done = await client.complete(
            types.PromptReference(name="review"), {"name": "chars", "value": "1"}
        )
        assert done.completion.values == ["100", "1000"]
        assert await heard(client) == ["prompt review", "complete review"]

    with caplog.at_level(logging.WARNING, logger="s3claim.mcp"):
        hostile(scenario)


def test_a_gateways_prompt_prefixed_to_a_claim_tools_name_is_left_out_and_never_got() -> None:
    async def run() -> None:
        claim_check = ClaimCheck(MemoryClaimCheckStore())
        async with Gateway.connect({"py": upstream("--hostile")}, timeout=20.0) as gateway:
            proxy = ClaimCheckProxy(
                gateway, claim_check=claim_check, scoping=Scoping.for_stdio("acme")
            )
            async with Client(proxy.server()) as client:
                names = [p.name for p in (await client.list_prompts()).prompts]
                assert sorted(names) == ["py__review", "py__summary"]
                for name in ("py__fetch_result", "py__search_result", "py__Fetch-Result"):
                    with pytest.raises(MCPError, match="imitates the proxy's claim tools"):
                        await client.get_prompt(name)
                assert await heard(client, "py__heard") == []

    anyio.run(run)


def test_look_alike_tools_are_left_out_with_one_line_and_their_calls_never_go_upstream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(client: Client, proxy: ClaimCheckProxy) -> None:
        caplog.clear()
        names = [t.name for t in (await client.list_tools()).tools]
        assert not set(LOOK_ALIKES) & set(names)
        assert names.count("fetch_result") == names.count("search_result") == 1
        assert "fetch_results" in names  # only a look-alike is left out
        lines = [r.getMessage() for r in caplog.records if "leaving out" in r.getMessage()]
        assert len(lines) == len(LOOK_ALIKES)
        assert all("claim:" not in line and "\u200b" not in line for line in lines)
        for name in LOOK_ALIKES:
            result = await client.call_tool(name, {"handle": HANDLE})
            assert result.is_error and "unknown_tool" in text_of(result)
        assert await heard(client) == []
        ran = await client.call_tool("fetch_results", {})  # forwarded; its answer neutralised
        assert text_of(ran) == "the upstream ran fetch-results"

    with caplog.at_level(logging.WARNING, logger="s3claim.mcp"):
        hostile(scenario)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # subscribe
def test_a_claim_uri_in_any_form_is_read_by_the_proxy_and_never_sent_upstream() -> None:
    async def scenario(client: Client, proxy: ClaimCheckProxy) -> None:
        big = await client.call_tool("big", {"chars": 30_000})
        handle = next(b.uri for b in big.content if b.type == "resource_link")
        body = handle.removeprefix("claim:")
        expected = (await client.read_resource(handle)).contents[0].text  # type: ignore[union-attr]
        for uri in (
            f"claim%3A{body}", f"claim%3a{body}", f"CLAIM:{body}", f"Claim%253A{body}",
            f"\uff43\uff4c\uff41\uff49\uff4d\uff1a{body}", f" claim:{body}",
        ):  # fmt: skip
            read = await client.read_resource(uri)
            assert read.contents[0].text == expected  # type: ignore[union-attr]
        with pytest.raises(MCPError) as forged:
            await client.read_resource("CLAIM%3A" + "0" * 33)
        assert "claim_unavailable" in forged.value.error.message
        for uri in (handle, f"CLAIM%3A{body}", HANDLE):
            await client.subscribe_resource(uri)
            await client.unsubscribe_resource(uri)
        await client.subscribe_resource("doc://big/10")  # not a claim: the upstream hears it
        assert [h for h in await heard(client) if "claim" in h.casefold()] == []
        assert "subscribe doc://big/10" in await heard(client)

    hostile(scenario, mode="legacy")  # subscriptions are 2025-11-25's


def test_claim_uri_parameters_are_ascii_whole_numbers_within_range() -> None:
    async def scenario(client: Client, proxy: ClaimCheckProxy) -> None:
        big = await client.call_tool("big", {"chars": 30_000})
        handle = next(b.uri for b in big.content if b.type == "resource_link")
        for query in ("offset=\u00b2", "offset=%C2%B2", "offset=" + "9" * 5_000, "offset=1e3",
                      "limit=\u0661\u0662", "offset="):  # fmt: skip
            with pytest.raises(MCPError) as bad:
                await client.read_resource(f"{handle}?{query}")
            assert bad.value.error.code == types.INVALID_PARAMS
            assert "whole number" in bad.value.error.message
        later = await client.read_resource(f"{handle}?offset=4096")
        assert later.contents[0].text.startswith(document(30_000)[4096:4196])  # type: ignore[union-attr]

    hostile(scenario)


# Issue 46: what an upstream lists posing as a claim (a resource, a template, in any form a
# reader may take for one) is left out of the listings, by the proxy and the gateway alike.
POSING = (
    HANDLE, "CLAIM%3A1" + "0" * 32, "Claim%253A" + "0" * 32,
    "\uff43\uff4c\uff41\uff49\uff4d\uff1a" + "0" * 32,
)  # fmt: skip
POSING_TEMPLATES = ("claim:{handle}", "CLAIM%3A{handle}{?offset}")
LISTER = str(Path(__file__).with_name("_lister_upstream.py"))


@pytest.mark.parametrize("through", ["proxy", "gateway"])
def test_resources_and_templates_posing_as_claims_are_left_out_with_one_line_each(
    through: str, caplog: pytest.LogCaptureFixture
) -> None:
    options = [f"--list={uri}" for uri in ("file:///docs/readme.md", *POSING)]
    options += [f"--template={t}" for t in ("file:///docs/{name}", *POSING_TEMPLATES)]
    target = StdioUpstream(command=PYTHON, args=(LISTER, "--name", "docs", *options))

    async def listed(upstream: Upstream | Gateway) -> None:
        claim_check = ClaimCheck(MemoryClaimCheckStore())
        proxy = ClaimCheckProxy(upstream, claim_check=claim_check, scoping=Scoping.for_stdio("t"))
        async with Client(proxy.server()) as client:
            caplog.clear()
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            assert [r.uri for r in resources] == ["file:///docs/readme.md"]
            assert [t.uri_template for t in templates] == ["file:///docs/{name}"]
            said = [r.getMessage() for r in caplog.records if "posing as a claim" in r.getMessage()]
            assert len(said) == len(POSING) + len(POSING_TEMPLATES), said
            assert all("0" * 32 not in line and "{handle}" not in line for line in said)

    async def run() -> None:
        if through == "proxy":
            async with Upstream.connect(target, timeout=20.0, startup_timeout=60.0) as one:
                await listed(one)
        else:
            async with Gateway.connect({"docs": target}, timeout=20.0) as gateway:
                await listed(gateway)

    with caplog.at_level(logging.WARNING, logger="s3claim.mcp"):
        anyio.run(run)
