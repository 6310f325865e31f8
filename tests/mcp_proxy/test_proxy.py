"""The proxy in-process, in front of our own test server (a real subprocess on stdio).

The official client talks to `ClaimCheckProxy.server()` in-process, so these run fast and
count toward coverage; test_cli_mcp.py runs the same proxy as a subprocess over the wire.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, TextContent

from devkit.mcp_upstream import FORGED, PIXEL, TOOLS, document
from s3claim import (
    ClaimCheckPolicy,
    ConfigurationError,
    ManualClock,
    MemoryClaimCheckStore,
)
from s3claim.claim_tools import claim_tools
from s3claim.mcp import (
    RUN_META_KEY,
    ClaimCheckProxy,
    Scoping,
    StdioUpstream,
    Upstream,
    UpstreamError,
)
from s3claim.store import MAX_DIGITS
from s3claim.wording import (
    UNAVAILABLE_MESSAGE,
    given_twice_message,
    strip_notes,
    whole_number_message,
)
from tests.mcp_proxy._support import (
    PYTHON,
    UPSTREAM,
    Shared,
    handle_of,
    in_process,
    proxy_of,
    read_all,
    received,
    shared,
    text_of,
)

SMALL = ClaimCheckPolicy(threshold_chars=2_000, head_chars=300)


# Most tests here assert what one more call does, each in a client session of its own, so
# they share a proxy and its upstream process: `default_proxy`, or `small_proxy` with the
# SMALL policy. Each reads back only the handles it minted itself. A test that restarts or
# times out the upstream, or needs its own store or scoping, starts its own.
@pytest.fixture(scope="module")
def default_proxy() -> Iterator[Shared[ClaimCheckProxy]]:
    with shared(proxy_of()) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def small_proxy() -> Iterator[Shared[ClaimCheckProxy]]:
    with shared(proxy_of(policy=SMALL)) as proxy:
        yield proxy


def test_the_listing_is_the_upstreams_without_output_schemas_plus_the_claim_tools(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            claim = {t.name: t for t in claim_tools(proxy.claim_check.store)}
            assert list(listed) == [t.name for t in TOOLS] + list(claim)
            assert all(t.output_schema is None for t in listed.values())
            assert TOOLS[2].output_schema is not None  # `structured` declares one upstream
            for name, tool in claim.items():
                assert listed[name].input_schema == tool.schema["function"]["parameters"]
                assert listed[name].description == tool.description

    default_proxy.run(scenario)


def test_small_results_arrive_as_the_upstream_sent_them(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    calls = [
        ("echo", {"text": "Zürich, 契約 👩‍⚖️ \r\n\t"}),
        ("mixed", {"chars": 100}),
        ("structured", {"chars": 500}),
        ("fail", {"chars": 300}),
    ]

    async def scenario(proxy: ClaimCheckProxy) -> None:
        direct = StdioServerParameters(command=PYTHON, args=[UPSTREAM])
        async with Client(proxy.server()) as client, Client(direct) as plain:
            for name, args in calls:
                via, straight = (
                    await client.call_tool(name, args),
                    await plain.call_tool(name, args),
                )
                fields = {"content", "structured_content", "is_error"}
                assert via.model_dump(include=fields) == straight.model_dump(include=fields), name

    default_proxy.run(scenario)


def test_a_large_result_is_a_head_and_marker_and_fetch_result_reassembles_it(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    expected = document(60_000, seed=7)

    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            result = await client.call_tool("big", {"chars": 60_000, "seed": 7})
            shown = text_of(result)
            assert shown.endswith("to read the rest, or search_result to find text in it.]")
            assert len(shown) < SMALL.head_chars + 200
            assert expected.startswith(shown[: shown.index("\n\n[")])
            whole, windows = await read_all(client, handle_of(shown))
            assert whole == expected
            assert expected not in received(result, *windows)
            assert len(windows) == -(-len(expected) // 4096)
            needle = expected[41_000:41_030]
            found = await client.call_tool(
                "search_result", {"handle": handle_of(shown), "pattern": needle}
            )
            matches = json.loads(text_of(found))["matches"]
            assert expected.index(needle) in [m["offset"] for m in matches]

    small_proxy.run(scenario)


def test_structured_content_is_dropped_once_checked_in_and_the_client_accepts_it(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    expected = document(9_000)

    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            result = await client.call_tool("structured", {"chars": 9_000})  # no exception
            assert result.structured_content is None and not result.is_error
            assert expected[3_000:3_200] not in received(result)
            assert (await read_all(client, handle_of(text_of(result))))[0] == expected
            small = await client.call_tool("structured", {"chars": 100})
            assert small.structured_content == {"content": document(100)}

    small_proxy.run(scenario)


def test_images_audio_and_resources_pass_untouched_beside_the_checked_in_text(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            result = await client.call_tool("mixed", {"chars": 1_500})
            kinds = [b.type for b in result.content]
            assert kinds == ["text", "image", "audio", "resource", "resource_link", "resource_link"]
            assert result.content[-1].uri == handle_of(text_of(result))  # type: ignore[union-attr]
            assert result.content[1].data == PIXEL  # type: ignore[union-attr]
            assert result.content[3].resource.text == "embedded notes"  # type: ignore[union-attr]
            whole, _ = await read_all(client, handle_of(text_of(result)))
            assert whole == document(1_500, seed=1) + "\n\n" + document(1_500, seed=2)

    small_proxy.run(scenario)


def test_an_oversized_error_result_is_checked_in_and_stays_an_error(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            result = await client.call_tool("fail", {"chars": 5_000})
            assert result.is_error
            whole, _ = await read_all(client, handle_of(text_of(result)))
            assert whole == document(5_000, seed=3)

    small_proxy.run(scenario)


def test_a_50_mb_result_is_checked_in_quickly_and_read_anywhere(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    chars = 50_000_000
    expected_tail = document(chars)[-5_000:]

    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            began = time.monotonic()
            result = await client.call_tool("big", {"chars": chars})
            seconds = time.monotonic() - began
            shown = text_of(result)
            assert len(shown) < 1_000 and f"[{chars} characters" in shown
            assert seconds < 60, seconds  # the SDK's own stdio reader took ~100 s
            handle = handle_of(shown)
            last = await client.call_tool(
                "fetch_result", {"handle": handle, "offset": chars - 5_000}
            )
            assert text_of(last)[:4096] == expected_tail[:4096]
            end = await client.call_tool("fetch_result", {"handle": handle, "offset": chars - 904})
            assert strip_notes(text_of(end)) == expected_tail[-904:]

    default_proxy.run(scenario)


def test_a_hanging_tool_is_an_error_result_and_the_proxy_keeps_serving() -> None:
    async def scenario() -> None:
        async with in_process(timeout=3.0) as (client, _):
            began = time.monotonic()
            result = await client.call_tool("slow", {"seconds": 60})
            assert result.is_error and '"error": "upstream_timeout"' in text_of(result)
            assert time.monotonic() - began < 10
            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"

    anyio.run(scenario)


def test_a_crashing_upstream_is_an_error_result_then_restarted_and_claims_stay() -> None:
    async def scenario() -> None:
        async with in_process(policy=SMALL) as (client, _):
            before = text_of(await client.call_tool("pid", {}))
            handle = handle_of(text_of(await client.call_tool("big", {"chars": 5_000})))
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "upstream_unavailable" in text_of(crashed)
            after = text_of(await client.call_tool("pid", {}))
            assert after.isdigit() and after != before  # a new upstream process
            assert (await read_all(client, handle))[0] == document(5_000)

    anyio.run(scenario)


def test_forged_markers_and_handles_from_the_upstream_are_neutralised(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            shown = text_of(await client.call_tool("forged", {}))
            assert shown == FORGED.replace("claim:", "claim-").replace(
                "fetch_result", "fetch-result"
            ).replace("<|im_end|>", "(|im_end|)")

    default_proxy.run(scenario)


def test_forged_foreign_and_expired_handles_are_one_uniform_refusal() -> None:
    clock = ManualClock()
    store = MemoryClaimCheckStore(clock=clock)
    policy = ClaimCheckPolicy(threshold_chars=2_000, head_chars=300, ttl_seconds=60)

    async def scenario() -> None:
        async with in_process(store=store, policy=policy) as (client, _):
            mine = {RUN_META_KEY: "run-a"}
            result = await client.call_tool("big", {"chars": 5_000}, meta=mine)
            handle = handle_of(text_of(result))
            ok = await client.call_tool("fetch_result", {"handle": handle}, meta=mine)
            assert not ok.is_error
            refusals = [
                await client.call_tool("fetch_result", {"handle": handle}, meta=other)
                for other in ({RUN_META_KEY: "run-b"}, None)  # another run; the process's run
            ]
            for forged in ("claim:" + "0" * 32, "claim:zz", "not a handle", handle.upper()):
                refusals.append(await client.call_tool("fetch_result", {"handle": forged}))
            clock.advance(61)
            refusals.append(await client.call_tool("fetch_result", {"handle": handle}, meta=mine))
            expected = f'{{"error": "claim_unavailable", "message": "{UNAVAILABLE_MESSAGE}"}}'
            assert [(r.is_error, text_of(r)) for r in refusals] == [(True, expected)] * 7

    anyio.run(scenario)


def test_the_run_never_comes_from_tool_arguments(small_proxy: Shared[ClaimCheckProxy]) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            handle = handle_of(text_of(await client.call_tool("big", {"chars": 5_000})))
            smuggled = await client.call_tool(
                "fetch_result", {"handle": handle, "run": "x", "_meta": {RUN_META_KEY: "x"}}
            )
            assert smuggled.is_error and "invalid_arguments" in text_of(smuggled)
            long_run = await client.call_tool(
                "fetch_result", {"handle": handle}, meta={RUN_META_KEY: "r" * 1_025}
            )
            assert long_run.is_error and "invalid_scope" in text_of(long_run)
            not_text = await client.call_tool("echo", {"text": "x"}, meta={RUN_META_KEY: 7})
            assert not_text.is_error and "invalid_scope" in text_of(not_text)

    small_proxy.run(scenario)


def test_an_upstream_tool_named_like_a_claim_tool_is_refused_at_start() -> None:
    async def scenario() -> None:
        async with in_process(extra=("--tool", "fetch_result")):
            pass

    with pytest.raises(ConfigurationError) as raised:
        anyio.run(scenario)
    assert "['fetch_result']" in str(raised.value) and "rename them upstream" in str(raised.value)


def test_an_upstream_that_cannot_start_is_an_upstream_error() -> None:
    async def scenario() -> None:
        missing = StdioUpstream(command="/nonexistent/mcp-server")
        async with Upstream.connect(missing, timeout=5.0):
            pass

    with pytest.raises(UpstreamError) as raised:
        anyio.run(scenario)
    assert raised.value.code == "upstream_unavailable"


def test_calls_are_refused_without_a_tenant_header_when_the_proxy_takes_one() -> None:
    async def scenario() -> None:
        scoping = Scoping.for_http(None, tenant_header="x-tenant")
        async with in_process(scoping=scoping) as (client, _):
            result = await client.call_tool("echo", {"text": "hi"})  # in-process: no headers
            assert result.is_error and '"error": "tenant_missing"' in text_of(result)
            assert (await client.list_tools()).tools  # listing needs no tenant

    anyio.run(scenario)


def test_the_claim_tools_text_content_is_plain_text(small_proxy: Shared[ClaimCheckProxy]) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            handle = handle_of(text_of(await client.call_tool("big", {"chars": 3_000})))
            result = await client.call_tool("fetch_result", {"handle": handle})
            (only,) = result.content
            assert isinstance(only, TextContent) and only.text.startswith(document(3_000))
            assert strip_notes(only.text) == document(3_000)  # and an end note after it

    small_proxy.run(scenario)


def test_a_claim_is_a_resource_read_in_windows_with_the_tools_scope_and_refusal(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    expected = document(10_000, seed=8)

    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            mine = {RUN_META_KEY: "run-a"}
            result = await client.call_tool("big", {"chars": 10_000, "seed": 8}, meta=mine)
            link = result.content[-1]
            assert link.type == "resource_link"
            handle = handle_of(text_of(result))
            assert link.uri == handle  # type: ignore[union-attr]
            first = await client.read_resource(handle, meta=mine)
            (contents,) = first.contents
            assert contents.uri == handle and contents.text.startswith(expected[:4096])  # type: ignore[union-attr]
            tool = await client.call_tool("fetch_result", {"handle": handle}, meta=mine)
            assert contents.text == text_of(tool)  # type: ignore[union-attr]
            later = await client.read_resource(f"{handle}?offset=8192", meta=mine)
            assert strip_notes(later.contents[0].text) == expected[8192:]  # type: ignore[union-attr]
            refusal = f'{{"error": "claim_unavailable", "message": "{UNAVAILABLE_MESSAGE}"}}'
            for uri, meta in (
                (handle, {RUN_META_KEY: "run-b"}),  # another run
                (handle, None),  # the process's run
                ("claim:" + "0" * 33, mine),  # forged
            ):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(uri, meta=meta)
                assert refused.value.error.message == refusal
            for query, said in (  # an address read as every text door reads one
                ("offset=-1", whole_number_message("offset", digits=MAX_DIGITS)),
                ("run=x", "unknown parameter 'run'"),
                ("offset=1&offset=2", given_twice_message("offset")),
            ):
                with pytest.raises(MCPError) as bad:
                    await client.read_resource(f"{handle}?{query}", meta=mine)
                assert bad.value.error.message.startswith(said), bad.value.error.message
            listed = await client.list_resources()
            assert all(not r.uri.startswith("claim:") for r in listed.resources)

    small_proxy.run(scenario)


def test_resources_and_prompts_pass_neutralised_and_oversized_texts_are_checked_in(
    small_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server()) as client:
            listed = (await client.list_resources()).resources
            assert [r.uri for r in listed] == ["doc://big/60000"]  # not its `claim:1000...`
            assert "claim:" not in listed[0].description  # type: ignore[operator]
            read = await client.read_resource("doc://big/60000")
            text, blob = read.contents
            assert text.text.endswith("to read the rest, or search_result to find text in it.]")  # type: ignore[union-attr]
            assert blob.blob == PIXEL  # type: ignore[union-attr]
            assert (await read_all(client, handle_of(text.text)))[0] == document(60_000)  # type: ignore[union-attr]
            small = await client.read_resource("doc://big/500")
            assert small.contents[0].text == document(500)  # type: ignore[union-attr]
            prompt = await client.get_prompt("review", {"chars": "9000"})
            first, second = (m.content for m in prompt.messages)
            assert (await read_all(client, handle_of(first.text)))[0] == document(9_000, seed=5)  # type: ignore[union-attr]
            assert second.text == "Review it (|im_end|)"  # type: ignore[union-attr]
            assert "claim:" not in (prompt.description or "")

    small_proxy.run(scenario)


def test_a_sampling_request_reaches_a_legacy_client_neutralised_and_its_answer_goes_back(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    asked: list[str] = []

    async def sampling(ctx: Any, params: Any) -> CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(text="yes"), model="m")

    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server(), mode="legacy", sampling_callback=sampling) as client:
            result = await client.call_tool("sample", {})
            assert text_of(result) == "sampled: yes"

    default_proxy.run(scenario)
    assert asked == [
        FORGED.replace("claim:", "claim-")
        .replace("fetch_result", "fetch-result")
        .replace("<|im_end|>", "(|im_end|)")
    ]


def test_a_client_without_sampling_gets_the_upstream_a_refusal_not_a_hang(
    default_proxy: Shared[ClaimCheckProxy],
) -> None:
    async def scenario(proxy: ClaimCheckProxy) -> None:
        async with Client(proxy.server(), mode="legacy") as client:
            result = await client.call_tool("sample", {})
            assert result.is_error

    default_proxy.run(scenario)
