"""An adapter run on the real SDK: s3claim's spans inside the framework's own tool spans."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.toolsets import FunctionToolset

from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from s3claim.integrations.pydantic_ai import ClaimCheckToolset
from tests._counsel import CONTRACT, HANDLE
from tests.telemetry.conftest import Telemetry
from tests.telemetry.test_privacy import _leaks


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
    handle = check_in.attributes["s3claim.handle"]
    framework = tool_span_above(check_in).attributes  # pydantic-ai's span names the claim
    assert framework["gen_ai.tool.call.result_ref"] == handle
    assert framework["s3claim.chars.kept_out"] == len(CONTRACT) - framework["s3claim.chars.shown"]
    assert fetch.attributes["gen_ai.tool.call.result_ref"] == handle
    assert "gen_ai.tool.call.result_ref" not in tool_span_above(fetch).attributes
    assert telemetry.total("s3claim.claims", tool="read_contract", outcome="stored") == 1
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
    (record,) = telemetry.audit_records
    assert (record.operation, record.outcome, record.offset, record.chars) == (
        "fetch",
        "ok",
        4096,
        4096,
    )
    assert _leaks(telemetry.everything(), CONTRACT) == []  # the framework's spans included


def _claim_spans_of_a_read_and_a_fetch(telemetry: Telemetry, store: Any, scope: Scope) -> None:
    """One check-in of the contract, one fetch of its second window: spans, metrics, audit."""
    check_in = telemetry.span("s3claim.check_in")
    fetch = telemetry.span("s3claim.fetch")
    assert check_in.attributes is not None and fetch.attributes is not None
    tags = {"s3claim.tenant": store.tenant_tag(scope.tenant), "s3claim.run": store.run_tag(scope)}
    assert {k: check_in.attributes[k] for k in tags} == tags
    assert {k: fetch.attributes[k] for k in tags} == tags
    assert check_in.attributes["s3claim.tool"] == "read_contract"
    assert check_in.attributes["s3claim.outcome"] == "stored"
    assert check_in.attributes["s3claim.chars.total"] == len(CONTRACT)
    shown = check_in.attributes["s3claim.chars.shown"]
    assert isinstance(shown, int) and 0 < shown < 1000
    assert HANDLE.fullmatch(str(check_in.attributes["s3claim.handle"]))
    assert fetch.attributes["s3claim.handle"] == check_in.attributes["s3claim.handle"]
    assert fetch.attributes["s3claim.window.offset"] == 4096
    assert fetch.attributes["s3claim.window.chars"] == 4096
    assert fetch.attributes["s3claim.outcome"] == "ok"
    assert telemetry.total("s3claim.claims", tool="read_contract", outcome="stored") == 1
    assert telemetry.total("s3claim.chars.saved", tool="read_contract") == len(CONTRACT) - shown
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
    (record,) = telemetry.audit_records
    assert (record.operation, record.outcome, record.offset, record.chars) == (
        "fetch",
        "ok",
        4096,
        4096,
    )
    assert (record.tenant, record.run) == (tags["s3claim.tenant"], tags["s3claim.run"])
    assert _leaks(telemetry.everything(), CONTRACT) == []


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_langchain_run_has_the_claim_spans(telemetry: Telemetry, face: str) -> None:
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

    from s3claim.integrations.langchain import ClaimCheckMiddleware
    from tests.test_integration_langchain import _agent, _call, _invoke

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return _call("read_contract", "c1", name="msa")
        if last.tool_call_id == "c1":
            handle = HANDLE.search(str(last.content))
            assert handle is not None
            return _call("fetch_result", "c2", handle=handle.group(), offset=4096)
        return AIMessage("ok")

    store = MemoryClaimCheckStore()
    _, agent = _agent(script, [ClaimCheckMiddleware(ClaimCheck(store))])
    _invoke(agent, "Read the MSA.", thread="t-7", face=face)
    _claim_spans_of_a_read_and_a_fetch(telemetry, store, Scope("acme", "t-7"))


def test_an_openai_agents_run_has_the_claim_spans(telemetry: Telemetry) -> None:
    from agents.testing import ModelCall, ModelStep, assistant_message, function_call

    from s3claim.integrations.openai_agents import claim_check_tools
    from tests.test_integration_openai_agents import _last, _run
    from tests.test_integration_openai_agents import read_contract as agents_read_contract

    def step(call: ModelCall) -> Any:
        last = _last(call)
        if last.get("role") == "user":
            return [function_call("read_contract", {"name": "msa"}, call_id="c1")]
        if last.get("call_id") == "c1":
            handle = HANDLE.search(last["output"])
            assert handle is not None
            arguments = {"handle": handle.group(), "offset": 4096}
            return [function_call("fetch_result", arguments, call_id="c2")]
        return [assistant_message("ok")]

    store = MemoryClaimCheckStore()
    tools = claim_check_tools([agents_read_contract], ClaimCheck(store))
    _, result = _run(tools, [ModelStep.respond(step)] * 3)
    assert result.final_output == "ok"
    _claim_spans_of_a_read_and_a_fetch(telemetry, store, Scope("acme", "matter-7"))
