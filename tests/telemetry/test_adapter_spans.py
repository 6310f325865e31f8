"""An adapter run on the real SDK (`tests._hosts.drive`): s3claim's spans, metrics and audit
record of one check-in and one fetch, in every adapter; in pydantic-ai, inside the framework's
own tool spans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from tests._counsel import CONTRACT, HANDLE
from tests._hosts import Model, drive, turns
from tests.telemetry.conftest import Telemetry
from tests.telemetry.test_privacy import _leaks

SCOPE = Scope("acme", "m-7")


def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _read_and_fetch() -> Model:
    """Read the contract, fetch its second window, answer."""

    def handle(outputs: Sequence[str]) -> str:
        found = HANDLE.search(outputs[0])
        assert found is not None
        return found.group()

    return turns(
        [("read_contract", {"name": "msa"})],
        [("fetch_result", {"handle": handle, "offset": 4096})],
    )


def _run(host: str) -> MemoryClaimCheckStore:
    store = MemoryClaimCheckStore()
    drive(host, [read_contract], _read_and_fetch(), claim_check=ClaimCheck(store), scope=SCOPE)
    return store


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


@pytest.mark.parametrize("host", ["langchain", "langchain_async", "openai_agents"])
def test_an_adapter_run_has_the_claim_spans(telemetry: Telemetry, host: str) -> None:
    _claim_spans_of_a_read_and_a_fetch(telemetry, _run(host), SCOPE)


def test_a_pydantic_ai_run_has_the_claim_spans_in_its_tool_spans(telemetry: Telemetry) -> None:
    Agent.instrument_all(InstrumentationSettings(include_content=False))  # its spans, on our SDK
    try:
        store = _run("pydantic_ai")
    finally:
        Agent.instrument_all(False)
    _claim_spans_of_a_read_and_a_fetch(telemetry, store, SCOPE)

    by_id = {s.context.span_id: s for s in telemetry.spans()}

    def tool_span_above(span: Any) -> Any:
        parent = span.parent
        while parent is not None and not by_id[parent.span_id].name.startswith("execute_tool"):
            parent = by_id[parent.span_id].parent
        assert parent is not None, f"{span.name} is not inside a framework tool span"
        return by_id[parent.span_id]

    check_in = telemetry.span("s3claim.check_in")
    fetch = telemetry.span("s3claim.fetch")
    assert check_in.attributes is not None and fetch.attributes is not None
    assert tool_span_above(check_in).name == "execute_tool read_contract"
    assert tool_span_above(fetch).name == "execute_tool fetch_result"
    assert check_in.context.trace_id == fetch.context.trace_id
    handle = check_in.attributes["s3claim.handle"]
    framework = tool_span_above(check_in).attributes  # pydantic-ai's span names the claim
    assert framework["gen_ai.tool.call.result_ref"] == handle
    assert framework["s3claim.chars.kept_out"] == len(CONTRACT) - framework["s3claim.chars.shown"]
    assert fetch.attributes["gen_ai.tool.call.result_ref"] == handle
    assert "gen_ai.tool.call.result_ref" not in tool_span_above(fetch).attributes
    assert _leaks(telemetry.everything(), CONTRACT) == []  # the framework's spans included
