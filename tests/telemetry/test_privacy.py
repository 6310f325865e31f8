"""No substring of a tool's content, a search pattern or the model's arguments appears in any
span, span event, attribute, metric or audit record, whichever face ran it."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Sequence
from typing import Any

import pytest
from mcp import Client

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimStoreError,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    Message,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_tools,
    tool,
)
from s3claim.handles import is_handle
from s3claim.mcp import ClaimCheckProxy, Scoping, StdioUpstream, Upstream
from s3claim.telemetry import names as n
from tests.mcp_proxy._support import PYTHON, handle_of, text_of
from tests.telemetry.conftest import Telemetry
from tests.telemetry.test_proxy_spans import UPSTREAM

PATTERN = "Nightjar-ledger"
ARGUMENT = "Project-Osprey-5521"


def _content() -> str:
    """Lines a reader would know again: each carries a token drawn for this run."""
    return "".join(
        f"Clause {n}: {PATTERN} {secrets.token_hex(6)} binds the parties.\n\n" for n in range(600)
    )


CONTENT = _content()


def _leaks(everything: str, content: str) -> list[str]:
    """Substrings of 20 characters of `content` (every 5th start) found in `everything`."""
    windows = {content[i : i + 20] for i in range(0, len(content) - 20, 5)}
    return sorted(w for w in windows if w in everything)


def _handle(messages: Sequence[Message]) -> str:
    found = re.search(r"handle='(claim:[0-9a-z]+)'", messages[-1].content or "")
    assert found is not None
    return found.group(1)


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTENT


@tool
def explode(name: str) -> str:
    """Fails, quoting what it read."""
    raise ValueError(CONTENT[:200])


def _provider() -> ScriptedProvider:
    return ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(
                    ToolCall(id="c1", name="read_contract", arguments={"name": ARGUMENT}),
                    ToolCall(id="c2", name="explode", arguments={"name": ARGUMENT}),
                )
            ),
            lambda messages: AssistantMessage(
                tool_calls=(
                    ToolCall(
                        id="c3",
                        name="fetch_result",
                        arguments={"handle": _handle(messages[:-1]), "offset": 4096},
                    ),
                    ToolCall(
                        id="c4",
                        name="search_result",
                        arguments={"handle": _handle(messages[:-1]), "pattern": PATTERN},
                    ),
                    ToolCall(
                        id="c5",
                        name="search_result",
                        arguments={
                            "handle": _handle(messages[:-1]),
                            "pattern": f"({PATTERN}",
                            "regex": True,
                        },
                    ),
                    ToolCall(id="c6", name="fetch_result", arguments={"handle": CONTENT[:80]}),
                )
            ),
            AssistantMessage(content=CONTENT[:300]),
        ]
    )


class _Leaky(MemoryClaimCheckStore):
    """A store whose failure quotes the content (s3claim's own never do)."""

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        raise ClaimStoreError(f"could not store {content[:120]}")


@pytest.mark.slow
def test_no_face_puts_content_patterns_or_arguments_in_telemetry(
    telemetry: Telemetry, s3: Any, bucket: str
) -> None:
    s3_store = S3ClaimCheckStore(
        bucket, handle_key="p" * 32, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )
    for store in (MemoryClaimCheckStore(), s3_store, _Leaky()):
        journal = MemoryRunJournal()
        registry = ToolRegistry((read_contract, explode, *claim_tools(store)))
        result = AgentRunner(
            provider=_provider() if not isinstance(store, _Leaky) else _fails_only(),
            tools=registry.view(agent="counsel"),
            claim_check=ClaimCheck(store),
            journal=journal,
        ).run(CONTENT[:100], tenant="acme", run_id="matter-7")
        store.forget(tenant="acme")
        journal.load(result.scope)

    async def proxied() -> None:
        async with Upstream.connect(
            StdioUpstream(command=PYTHON, args=(UPSTREAM,)), timeout=20, startup_timeout=60
        ) as up:
            proxy = ClaimCheckProxy(
                up, claim_check=ClaimCheck(MemoryClaimCheckStore()), scoping=Scoping.for_stdio("a")
            )
            await proxy.check_names()
            async with Client(proxy.server()) as client:
                handle = handle_of(text_of(await client.call_tool("big", {"q": ARGUMENT})))
                await client.call_tool("fetch_result", {"handle": handle, "offset": 9000})
                await client.call_tool("search_result", {"handle": handle, "pattern": PATTERN})

    asyncio.run(proxied())

    names = {s.name for s in telemetry.spans()}
    assert {"s3claim.check_in", "s3claim.fetch", "s3claim.search", "s3claim.forget"} <= names
    assert {"s3claim.journal.save", "s3claim.journal.load", "execute_tool explode"} <= names
    outcomes = {(s.attributes or {}).get("s3claim.outcome") for s in telemetry.spans()}
    assert {"stored", "store_failed", "unavailable", "invalid_arguments", "error"} <= outcomes
    refs = [
        (s.name, ref)
        for s in telemetry.spans()
        if (ref := (s.attributes or {}).get(n.GEN_AI_TOOL_CALL_RESULT_REF)) is not None
    ]
    assert all(is_handle(ref) for _, ref in refs)  # a handle, never anything of the content
    named = {name for name, _ in refs}
    assert {"execute_tool read_contract", "tools/call big", "s3claim.check_in"} <= named
    assert {"s3claim.fetch", "s3claim.search"} <= named
    assert len(telemetry.audit_records) >= 8
    everything = telemetry.everything()
    assert len(everything) > 10_000  # the check reads something
    assert _leaks(everything, CONTENT) == []
    from tests.telemetry._meta_upstream import SECRET

    needles = (PATTERN, ARGUMENT, SECRET, "Zephyr", "binds the parties", "Clause 1")
    for needle in (*needles, "acme", "matter-7"):  # tenants and runs: their keyed tags only
        assert needle not in everything


def _fails_only() -> ScriptedProvider:
    return ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="read_contract", arguments={"name": ARGUMENT}),)
            ),
            AssistantMessage(content="done"),
        ]
    )
