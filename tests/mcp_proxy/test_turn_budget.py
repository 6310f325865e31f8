"""The turn budget through the proxy, with the official client: MCP has no batches, so each
call is a turn of its own and the budget acts as a lower threshold for results that shrink."""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from s3claim import ClaimCheck, ClaimCheckPolicy, ConfigurationError, MemoryClaimCheckStore
from s3claim.mcp import ClaimCheckProxy, Scoping
from tests.mcp_proxy._support import MARKER, in_process, read_all, text_of

POLICY = ClaimCheckPolicy(turn_budget_chars=600)


def test_a_call_over_the_budget_is_checked_in_below_the_threshold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        async with in_process(policy=POLICY) as (client, _):
            over = await client.call_tool("big", {"chars": 3_000})
            under = await client.call_tool("big", {"chars": 500, "seed": 1})
            small = await client.call_tool("echo", {"text": "x" * 650})
            found = MARKER.search(text_of(over))
            assert found is not None and int(found.group(1)) == 3_000
            assert len(text_of(under)) == 500  # within the budget: whole
            # Over the budget, but no longer than its head and marker (about 690 characters,
            # measured exactly): it would not shrink.
            assert text_of(small) == "x" * 650
            whole, _ = await read_all(client, found.group(3))
            assert len(whole) == 3_000

    with caplog.at_level(logging.INFO, logger="s3claim.events"):
        anyio.run(scenario)
    events = [
        json.loads(r.getMessage().removeprefix("event "))
        for r in caplog.records
        if r.getMessage().startswith("event {")
    ]
    stored = [e for e in events if e["kind"] == "tool_result_stored"]
    assert [(e["size_chars"], e["reason"]) for e in stored] == [(3_000, "turn_budget")]


def test_the_proxy_refuses_a_room_share_it_cannot_measure() -> None:
    share = ClaimCheckPolicy(max_share_of_room=0.25, context_window_chars=100_000)
    with pytest.raises(ConfigurationError, match="never sees the conversation"):
        ClaimCheckProxy(
            None,  # type: ignore[arg-type]  # refused before the upstream is looked at
            claim_check=ClaimCheck(MemoryClaimCheckStore(), policy=share),
            scoping=Scoping.for_stdio("acme"),
        )
