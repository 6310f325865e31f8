"""A counsel run on the real SDK: the spans, their nesting and attributes, and the metrics."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import pytest

from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    AssistantMessage,
    AsyncClaimCheck,
    ClaimCheck,
    ClaimCheckPolicy,
    ClaimStoreError,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    Message,
    RetryPolicy,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
    ThreadedAsyncStore,
    ToolCall,
    ToolRegistry,
    claim_tools,
    tool,
)
from s3claim.hosting import truncate
from s3claim.s3._seal import TAG_BYTES
from s3claim.telemetry import configure
from s3claim.testing import FailingStore
from tests.telemetry.conftest import Telemetry

CONTRACT = "".join(f"Clause {n}. The parties agree to term {n}.\n\n" for n in range(1, 3000))
KEY = "telemetry-handle-key-0123456789"


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _handle(messages: Sequence[Message]) -> str:
    found = re.search(r"handle='(claim:[0-9a-z]+)'", messages[-1].content or "")
    assert found is not None
    return found.group(1)


def _counsel() -> ScriptedProvider:
    """Reads the contract, then one window and one search in a turn, then answers."""
    return ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="read_contract", arguments={"name": "msa"}),)
            ),
            lambda messages: AssistantMessage(
                tool_calls=(
                    ToolCall(
                        id="c2",
                        name="fetch_result",
                        arguments={"handle": _handle(messages), "offset": 4096},
                    ),
                    ToolCall(
                        id="c3",
                        name="search_result",
                        arguments={"handle": _handle(messages), "pattern": "term 2999"},
                    ),
                )
            ),
            AssistantMessage(content="Clause 1 sets the terms."),
        ]
    )


def _run(store: Any, journal: Any = None) -> Any:
    registry = ToolRegistry((read_contract, *claim_tools(store)))
    runner = AgentRunner(
        provider=_counsel(),
        tools=registry.view(agent="counsel"),
        claim_check=ClaimCheck(store),
        journal=journal,
    )
    return runner.run("What are the terms?", tenant="acme", run_id="matter-7")


def test_a_counsel_run_is_one_trace_with_the_spans_and_attributes(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    result = _run(store, MemoryRunJournal(store=store))
    run = telemetry.span("invoke_agent counsel")
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "counsel"
    assert {s.context.trace_id for s in telemetry.spans()} == {run.context.trace_id}

    calls = {s.name: s for s in telemetry.spans() if s.name.startswith("execute_tool ")}
    assert set(calls) == {
        "execute_tool read_contract",
        "execute_tool fetch_result",
        "execute_tool search_result",
    }
    handle = _handle(result.messages[:3])
    shown = len(result.messages[2].content)
    offload = {  # the claim a trace viewer follows, and what it kept out of the conversation
        "gen_ai.tool.call.result_ref": handle,
        "s3claim.chars.total": len(CONTRACT),
        "s3claim.chars.shown": shown,
        "s3claim.chars.kept_out": len(CONTRACT) - shown,
    }
    for call_id, span in zip(("c1", "c2", "c3"), calls.values(), strict=True):
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.attributes == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": span.name.removeprefix("execute_tool "),
            "gen_ai.tool.call.id": call_id,
            "s3claim.outcome": "ok",
            **(offload if call_id == "c1" else {}),  # a window's call refers to nothing new
        }

    tags = {"s3claim.tenant": store.tenant_tag("acme"), "s3claim.run": store.run_tag(result.scope)}
    check_in = telemetry.span("s3claim.check_in")
    assert check_in.parent is not None
    assert check_in.parent.span_id == calls["execute_tool read_contract"].context.span_id
    assert check_in.attributes == {
        "s3claim.tool": "read_contract",
        "s3claim.handle": handle,
        **offload,
        "s3claim.outcome": "stored",
        **tags,
    }
    fetch = telemetry.span("s3claim.fetch")
    assert fetch.parent is not None
    assert fetch.parent.span_id == calls["execute_tool fetch_result"].context.span_id
    assert fetch.attributes == {
        "s3claim.handle": handle,
        "gen_ai.tool.call.result_ref": handle,
        "s3claim.window.offset": 4096,
        "s3claim.window.chars": 4096,
        "s3claim.outcome": "ok",
        **tags,
    }
    search = telemetry.span("s3claim.search")
    assert search.attributes == {
        "s3claim.handle": handle,
        "gen_ai.tool.call.result_ref": handle,
        "s3claim.search.pattern_chars": len("term 2999"),
        "s3claim.search.matches": 1,
        "s3claim.outcome": "ok",
        **tags,
    }
    saves = telemetry.spans("s3claim.journal.save")
    assert [s.attributes["s3claim.run.turns"] for s in saves if s.attributes] == [1, 2, 3]
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in saves)


def test_deciding_by_the_turn_the_reference_is_on_the_check_in_after_the_tool_span(
    telemetry: Telemetry,
) -> None:
    """A turn budget admits a turn's results once its tool calls have ended: the check-in is
    the run's child, and it alone carries the reference (docs/observability.md)."""
    store = MemoryClaimCheckStore()
    registry = ToolRegistry((read_contract, *claim_tools(store)))
    provider = ScriptedProvider(
        [
            AssistantMessage(
                tool_calls=(ToolCall(id="c1", name="read_contract", arguments={"name": "msa"}),)
            ),
            AssistantMessage(content="done"),
        ]
    )
    policy = ClaimCheckPolicy(turn_budget_chars=20_000)
    AgentRunner(
        provider=provider,
        tools=registry.view(agent="counsel"),
        claim_check=ClaimCheck(store, policy=policy),
    ).run("Read it.", tenant="acme", run_id="matter-7")
    run = telemetry.span("invoke_agent counsel")
    check_in = telemetry.span("s3claim.check_in")
    assert check_in.parent is not None and check_in.parent.span_id == run.context.span_id
    attributes = check_in.attributes
    assert attributes is not None
    assert attributes["gen_ai.tool.call.result_ref"] == attributes["s3claim.handle"]
    tool_span = telemetry.span("execute_tool read_contract")
    assert "gen_ai.tool.call.result_ref" not in (tool_span.attributes or {})


def test_a_counsel_run_counts_its_claims_characters_and_fetches(telemetry: Telemetry) -> None:
    result = _run(MemoryClaimCheckStore())
    shown = len(result.messages[2].content)
    assert telemetry.total("s3claim.claims", tool="read_contract", outcome="stored") == 1
    assert telemetry.total("s3claim.chars.saved", tool="read_contract") == len(CONTRACT) - shown
    (size,) = telemetry.points("s3claim.claim.size")
    assert (size.value, size.count) == (len(CONTRACT), 1)
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
    durations = {
        (p.attributes["s3claim.operation"], p.attributes["s3claim.outcome"]): p.count
        for p in telemetry.points("s3claim.store.duration")
    }
    assert durations == {("put", "ok"): 1, ("fetch", "ok"): 1, ("search", "ok"): 1}


def test_outcomes_passed_truncated_store_failed_and_unavailable(telemetry: Telemetry) -> None:
    @tool
    def small() -> str:
        """A short result."""
        return "ok"

    def script(name: str) -> ScriptedProvider:
        return ScriptedProvider(
            [
                AssistantMessage(
                    tool_calls=(
                        ToolCall(id="1", name=name, arguments={"name": "msa"} if name else {}),
                        ToolCall(id="2", name="fetch_result", arguments={"handle": "nope"}),
                    )
                ),
                AssistantMessage(content="done"),
            ]
        )

    for store, claim_check in (
        (FailingStore(fail=["put"], error=ClaimStoreError("PutObject: unavailable")), True),
        (MemoryClaimCheckStore(), False),
    ):
        registry = ToolRegistry((read_contract, small, *claim_tools(store)))
        AgentRunner(
            provider=script("read_contract"),
            tools=registry.view(),
            claim_check=ClaimCheck(store) if claim_check else None,
            max_tool_result_chars=1000,
        ).run("q", tenant="acme")
    store = MemoryClaimCheckStore()
    registry = ToolRegistry((small, *claim_tools(store)))
    AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(tool_calls=(ToolCall(id="1", name="small", arguments={}),)),
                AssistantMessage(content="done"),
            ]
        ),
        tools=registry.view(),
        claim_check=ClaimCheck(store),
    ).run("q", tenant="acme")

    check_ins = [s.attributes for s in telemetry.spans("s3claim.check_in")]
    cut = len(truncate(CONTRACT, 1000))  # what the runner falls back to, as without a store
    assert [(a["s3claim.outcome"], a["s3claim.chars.shown"]) for a in check_ins if a] == [
        ("store_failed", cut),
        ("truncated", cut),
        ("passed", 2),
    ]
    assert check_ins[0] is not None and check_ins[0]["error.type"] == "ClaimStoreError"
    fetches = telemetry.spans("s3claim.fetch")
    assert [s.attributes["s3claim.outcome"] for s in fetches if s.attributes] == [
        "unavailable",
        "unavailable",
    ]
    assert all("s3claim.handle" not in (s.attributes or {}) for s in fetches)  # malformed
    assert telemetry.total("s3claim.claims", outcome="store_failed") == 1
    assert telemetry.total("s3claim.claims", outcome="truncated") == 1
    assert telemetry.total("s3claim.claims", outcome="passed") == 1
    assert telemetry.total("s3claim.fetches", outcome="unavailable") == 2
    assert telemetry.total("s3claim.chars.saved") == 0


def test_an_unknown_tool_is_not_named_in_its_span(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(
                    tool_calls=(ToolCall(id="1", name="Clause 7 says", arguments={}),)
                ),
                AssistantMessage(content="done"),
            ]
        ),
        tools=ToolRegistry((read_contract, *claim_tools(store))).view(),
        claim_check=ClaimCheck(store),
    ).run("q", tenant="acme")
    (span,) = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert span.name == "execute_tool"
    assert span.attributes is not None and "gen_ai.tool.name" not in span.attributes
    assert span.attributes["s3claim.outcome"] == "error"


def test_s3_requests_and_bytes_are_the_wires(telemetry: Telemetry, s3: Any, bucket: str) -> None:
    """The fetch span's request count and bytes are what a botocore hook saw on the wire."""
    wire = Wire.attach(s3)
    store = S3ClaimCheckStore(
        bucket, handle_key=KEY, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )
    journal = S3RunJournal(
        bucket, handle_key=KEY, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )
    handle = store.put(Scope("acme", "r"), CONTRACT, ttl_seconds=600)
    wire.clear()
    store.fetch(Scope("acme", "r"), handle, 8192)
    fetch = telemetry.span("s3claim.fetch")
    assert fetch.attributes is not None
    assert fetch.attributes["s3claim.s3.requests"] == wire.total_requests == 1
    sent = sum(wire.request_bytes.values())
    on_wire = wire.total_response_bytes + sent
    assert fetch.attributes["s3claim.s3.bytes"] == on_wire == 4096 + TAG_BYTES  # a sealed block
    assert fetch.attributes["s3claim.tenant"] == store.tenant_tag("acme")
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1

    _run(store, journal)
    check_in = telemetry.span("s3claim.check_in")
    assert check_in.attributes is not None
    assert check_in.attributes["s3claim.s3.requests"] == 2  # the claim's PutObject, its index
    (first_save, *_) = telemetry.spans("s3claim.journal.save")
    assert first_save.attributes is not None
    assert first_save.attributes["s3claim.s3.requests"] >= 1
    assert first_save.attributes["s3claim.tenant"] == journal.tenant_tag("acme")

    wire.clear()
    removed = store.forget(tenant="acme")
    forget = telemetry.span("s3claim.forget")
    assert forget.attributes is not None
    assert forget.attributes["s3claim.claims.deleted"] == removed == 2  # runs r and matter-7
    assert forget.attributes["s3claim.tenant"] == store.tenant_tag("acme")
    assert forget.attributes["s3claim.s3.requests"] == wire.total_requests
    operations = {
        p.attributes["s3claim.operation"] for p in telemetry.points("s3claim.store.duration")
    }
    assert operations >= {"fetch", "put", "search", "forget", "journal.save"}


def test_the_async_faces_have_the_same_spans(telemetry: Telemetry, s3: Any, bucket: str) -> None:
    store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3)

    async def main() -> None:
        claim_check = AsyncClaimCheck(ClaimCheck(store))
        checked = await claim_check.check_in(CONTRACT, tool="read_contract", scope=SCOPE)
        assert checked.handle is not None
        await ThreadedAsyncStore(store).fetch(SCOPE, checked.handle, 100)
        await claim_check.store.fetch(SCOPE, checked.handle, 200)

    SCOPE = Scope("acme", "async")
    asyncio.run(main())
    check_in = telemetry.span("s3claim.check_in")
    assert check_in.attributes is not None
    assert check_in.attributes["s3claim.outcome"] == "stored"
    assert check_in.attributes["s3claim.s3.requests"] == 2  # the claim, its line index
    fetches = telemetry.spans("s3claim.fetch")
    assert [(s.attributes or {}).get("s3claim.window.offset") for s in fetches] == [100, 200]
    assert all((s.attributes or {})["s3claim.s3.requests"] == 1 for s in fetches)
    assert {(s.attributes or {})["s3claim.tenant"] for s in fetches} == {store.tenant_tag("acme")}


def test_tenants_are_tags_unless_names_are_asked_for(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(Scope("acme", "r1"), CONTRACT, ttl_seconds=60)
    store.fetch(Scope("acme", "r1"), handle)
    configure(tenant_names=True)
    try:
        store.fetch(Scope("acme", "r1"), handle)
    finally:
        configure()
    first, second = telemetry.spans("s3claim.fetch")
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["s3claim.tenant"] == store.tenant_tag("acme") != "acme"
    assert (second.attributes["s3claim.tenant"], second.attributes["s3claim.run"]) == ("acme", "r1")
    assert telemetry.audit_records[-1].tenant == store.tenant_tag("acme")  # always a tag


@pytest.mark.parametrize("outcome", ["not_found", "conflict"])
def test_journal_outcomes(telemetry: Telemetry, outcome: str) -> None:
    from s3claim import RunConflictError, RunNotFoundError
    from s3claim.journal import RunRecord

    journal = MemoryRunJournal()
    scope = Scope("acme", "r")
    record = RunRecord(status="running", turns=2, messages=(), events=())
    if outcome == "not_found":
        with pytest.raises(RunNotFoundError):
            journal.load(scope)
        span = telemetry.span("s3claim.journal.load")
    else:
        journal.save(scope, record, replaces=None)
        with pytest.raises(RunConflictError):
            journal.save(scope, record, replaces=None)
        span = telemetry.spans("s3claim.journal.save")[-1]
    assert span.attributes is not None
    assert span.attributes["s3claim.outcome"] == outcome
