"""The OpenTelemetry SDK for these tests: one provider per process, an exporter per test.

OpenTelemetry lets a process set its global tracer and meter providers once, and s3claim
reads the global ones (the application's), so the session installs the real SDK's
in-memory exporter and metric reader once; each test clears them on the way in. Outside a
test of this folder the exporter keeps nothing (`armed`), so the rest of the suite neither
fills memory with spans nor depends on them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from s3claim.telemetry import AuditRecord


class _Armed(InMemorySpanExporter):
    armed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return super().export(spans) if self.armed else SpanExportResult.SUCCESS


_EXPORTER = _Armed()
_READER = InMemoryMetricReader(
    preferred_temporality={
        Counter: AggregationTemporality.DELTA,
        Histogram: AggregationTemporality.DELTA,
    }
)


@pytest.fixture(scope="session")
def _sdk() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # pragma: no cover
        pytest.fail("another test set a global TracerProvider first")


@dataclass
class Point:
    metric: str
    attributes: dict[str, Any]
    value: float  # a counter's sum, a histogram's sum
    count: int  # a histogram's count; 1 for a counter


@dataclass
class Telemetry:
    """What the SDK received during one test."""

    audit_records: list[AuditRecord] = field(default_factory=list)
    _points: list[Point] = field(default_factory=list)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = list(_EXPORTER.get_finished_spans())
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        (found,) = self.spans(name)
        return found

    def points(self, metric: str | None = None) -> list[Point]:
        data = _READER.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    for p in m.data.data_points:
                        value = getattr(p, "value", None)
                        self._points.append(
                            Point(
                                m.name,
                                dict(p.attributes or {}),
                                float(value if value is not None else p.sum),  # type: ignore[attr-defined]
                                1 if value is not None else p.count,  # type: ignore[attr-defined]
                            )
                        )
        return [p for p in self._points if metric is None or p.metric == metric]

    def total(self, metric: str, **attributes: Any) -> float:
        """The sum of `metric` over points whose attributes include these (`.` as `_`)."""
        wanted = {f"s3claim.{k.replace('_', '.')}": v for k, v in attributes.items()}
        return sum(
            p.value
            for p in self.points(metric)
            if all(p.attributes.get(k) == v for k, v in wanted.items())
        )

    def everything(self) -> str:
        """Every span (name, attributes, events, status), metric point and audit record as
        one text, for privacy checks."""
        parts: list[str] = []
        for span in self.spans():
            parts.append(span.to_json())
            parts.extend(json.dumps(dict(e.attributes or {})) + e.name for e in span.events)
        parts.extend(f"{p.metric} {json.dumps(p.attributes)}" for p in self.points())
        parts.extend(r.to_json() for r in self.audit_records)
        return "\n".join(parts)


class _Audit(logging.Handler):
    def __init__(self, into: list[AuditRecord]) -> None:
        super().__init__(logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        audit = getattr(record, "audit", None)
        assert isinstance(audit, AuditRecord)
        assert record.getMessage() == audit.to_json()  # the message is the record
        self.into.append(audit)


@pytest.fixture
def telemetry(_sdk: None) -> Iterator[Telemetry]:
    _EXPORTER.clear()
    _READER.get_metrics_data()  # what earlier tests left: gone (delta temporality)
    seen = Telemetry()
    logger = logging.getLogger("s3claim.audit")
    handler = _Audit(seen.audit_records)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    _EXPORTER.armed = True
    try:
        yield seen
    finally:
        _EXPORTER.armed = False
        logger.removeHandler(handler)
        logger.setLevel(level)
