"""An adapter run on the real SDK: s3claim's spans inside the framework's own tool spans."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.toolsets import FunctionToolset

from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from s3claim.integrations.pydantic_ai import ClaimCheckToolset
from tests._counsel import CONTRACT, HANDLE
from tests.telemetry.conftest import Telemetry


@dataclass
class Deps:
    tenant: str


def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _script(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
    """Read the contract, fetch its second window, answer."""
    returns = [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if getattr(part, "part_kind", "") == "tool-return"
    ]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("read_contract", {"name": "msa"}, "c1")])
    if len(returns) == 1:
        handle = HANDLE.search(returns[0])
        assert handle is not None
        args = {"handle": handle.group(), "offset": 4096}
        return ModelResponse(parts=[ToolCallPart("fetch_result", args, "c2")])
    return ModelResponse(parts=[TextPart("ok")])


def test_a_pydantic_ai_run_has_the_claim_spans_in_its_tool_spans(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    toolset = ClaimCheckToolset(FunctionToolset([read_contract]), ClaimCheck(store))
    agent: Agent[Any, str] = Agent(FunctionModel(_script), toolsets=[toolset])
    agent.instrument = InstrumentationSettings(include_content=False)  # its spans, on our SDK
    result = asyncio.run(agent.run("Read the MSA.", deps=Deps("acme"), conversation_id="m-7"))
    assert result.output == "ok"

    by_id = {s.context.span_id: s for s in telemetry.spans()}

    def tool_span_above(span: Any) -> Any:
        parent = span.parent
        while parent is not None and not by_id[parent.span_id].name.startswith("execute_tool"):
            parent = by_id[parent.span_id].parent
        assert parent is not None, f"{span.name} is not inside a framework tool span"
        return by_id[parent.span_id]

    check_in = telemetry.span("s3claim.check_in")
    fetch = telemetry.span("s3claim.fetch")
    assert tool_span_above(check_in).name == "execute_tool read_contract"
    assert tool_span_above(fetch).name == "execute_tool fetch_result"
    assert check_in.context.trace_id == fetch.context.trace_id
    tags = {
        "s3claim.tenant": store.tenant_tag("acme"),
        "s3claim.run": store.run_tag(Scope("acme", "m-7")),
    }
    assert check_in.attributes is not None and fetch.attributes is not None
    assert check_in.attributes["s3claim.outcome"] == "stored"
    assert check_in.attributes["s3claim.chars.total"] == len(CONTRACT)
    assert {k: check_in.attributes[k] for k in tags} == tags
    assert fetch.attributes["s3claim.window.offset"] == 4096
    assert fetch.attributes["s3claim.window.chars"] == 4096
    assert fetch.attributes["s3claim.handle"] == check_in.attributes["s3claim.handle"]
    assert telemetry.total("s3claim.claims", tool="read_contract", outcome="stored") == 1
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
    (record,) = telemetry.audit_records
    assert (record.operation, record.outcome, record.offset, record.chars) == (
        "fetch",
        "ok",
        4096,
        4096,
    )
