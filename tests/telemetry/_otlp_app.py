"""An application as a user writes one: the SDK and the OTLP/HTTP exporters, then a counsel
run. `python _otlp_app.py ENDPOINT` exports to ENDPOINT/v1/traces and /v1/metrics."""

from __future__ import annotations

import re
import sys

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    MemoryClaimCheckStore,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_tools,
    tool,
)

CONTRACT = "".join(f"Clause {n}. The parties agree to term {n}.\n\n" for n in range(1, 3000))


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def main(endpoint: str) -> None:
    resource = Resource.create({"service.name": "counsel-agent"})
    traces = TracerProvider(resource=resource)
    traces.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    trace.set_tracer_provider(traces)
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(f"{endpoint}/v1/metrics"))
    meters = MeterProvider(resource=resource, metric_readers=[reader])
    metrics.set_meter_provider(meters)

    def fetch(messages: list) -> AssistantMessage:  # type: ignore[type-arg]
        found = re.search(r"handle='(claim:[0-9a-z]+)'", messages[-1].content)
        assert found is not None
        args = {"handle": found.group(1), "offset": 4096}
        return AssistantMessage(tool_calls=(ToolCall(id="2", name="fetch_result", arguments=args),))

    store = MemoryClaimCheckStore()
    runner = AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(
                    tool_calls=(ToolCall(id="1", name="read_contract", arguments={"name": "m"}),)
                ),
                fetch,
                AssistantMessage(content="done"),
            ]
        ),
        tools=ToolRegistry((read_contract, *claim_tools(store))).view(agent="counsel"),
        claim_check=ClaimCheck(store),
    )
    runner.run("What are the terms?", tenant="acme", run_id="matter-7")
    traces.shutdown()  # flushes what the batch holds
    meters.shutdown()
    print(store.tenant_tag("acme"))


if __name__ == "__main__":
    main(sys.argv[1])
