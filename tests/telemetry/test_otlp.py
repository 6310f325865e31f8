"""End to end: an application exports OTLP over HTTP to a receiver on 127.0.0.1.

The receiver is a few lines of `http.server` that decode what arrives with the OTLP protobuf
messages, as a collector would; the application is a subprocess of its own, because
OpenTelemetry's providers are set once per process.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.mcp_proxy._support import PYTHON, ROOT

APP = str(Path(__file__).with_name("_otlp_app.py"))


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.content_types: set[str] = set()


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.content_types.add(self.headers["Content-Type"])
        if self.path == "/v1/traces":
            self.server.traces.append(ExportTraceServiceRequest.FromString(body))
        elif self.path == "/v1/metrics":
            self.server.metrics.append(ExportMetricsServiceRequest.FromString(body))
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def receiving() -> Iterator[_Receiver]:
    """An OTLP/HTTP receiver on 127.0.0.1, serving until the block ends."""
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    with receiving() as server:
        yield server


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


@pytest.mark.slow
def test_spans_and_metrics_arrive_over_otlp_http(receiver: _Receiver) -> None:
    host, port = receiver.server_address[:2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    done = subprocess.run(
        [PYTHON, APP, f"http://{host!s}:{port}"],
        env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tenant_tag = done.stdout.strip()
    assert receiver.content_types == {"application/x-protobuf"}

    spans = {}
    for request in receiver.traces:
        for resource in request.resource_spans:
            service = {a.key: _value(a.value) for a in resource.resource.attributes}
            assert service["service.name"] == "counsel-agent"
            for scope in resource.scope_spans:
                assert scope.scope.name == "s3claim"
                for span in scope.spans:
                    spans[span.name] = (span, {a.key: _value(a.value) for a in span.attributes})
    assert set(spans) == {
        "invoke_agent counsel",
        "execute_tool read_contract",
        "execute_tool fetch_result",
        "s3claim.check_in",
        "s3claim.fetch",
    }
    run, _ = spans["invoke_agent counsel"]
    assert len({span.trace_id for span, _ in spans.values()}) == 1
    read, _ = spans["execute_tool read_contract"]
    assert read.parent_span_id == run.span_id
    check_in, attributes = spans["s3claim.check_in"]
    assert check_in.parent_span_id == read.span_id
    assert attributes["s3claim.outcome"] == "stored"
    assert attributes["s3claim.tool"] == "read_contract"
    assert attributes["s3claim.chars.total"] == 135_740
    assert attributes["s3claim.tenant"] == tenant_tag
    _, fetched = spans["s3claim.fetch"]
    assert (fetched["s3claim.window.offset"], fetched["s3claim.window.chars"]) == (4096, 4096)
    assert fetched["s3claim.handle"] == attributes["s3claim.handle"]

    sums: dict[str, float] = {}
    for request in receiver.metrics:
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    points = getattr(metric, kind).data_points
                    total = sum(p.as_int if kind == "sum" else p.sum for p in points)
                    sums[metric.name] = sums.get(metric.name, 0) + total
    assert sums["s3claim.claims"] == 1
    assert sums["s3claim.claim.size"] == 135_740
    assert sums["s3claim.fetches"] == 1
    assert 134_000 < sums["s3claim.chars.saved"] < 135_740
    assert sums["s3claim.store.duration"] > 0
