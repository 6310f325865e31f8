"""Measure: what telemetry costs a check-in and a fetch (issue 23), by how OpenTelemetry is set up.

s3claim speaks only the OpenTelemetry API; the application decides whether an SDK records
anything. Four paths, timed in alternating rounds so drift on a shared machine falls on all
alike:

- no telemetry: the baseline. `Operation`'s enter and exit and the put's duration are made
  no-ops, the store's fetch is called without its decorator, and the S3 client's counting
  hooks are unregistered: what s3claim would cost without issue 23;
- API only: what s3claim does by default, with no SDK configured (the API's no-op);
- SDK, discarding: the real SDK recording every span and metric, its span processor handing
  them to an exporter that drops them (metrics aggregated, never collected);
- SDK, in memory: the SDK's `InMemorySpanExporter` and `InMemoryMetricReader`, as the tests use.

OpenTelemetry lets a process set its global providers once, so the SDK paths swap the
tracer and instruments s3claim reads (module globals of `s3claim.telemetry._spans`) for
ones of a private provider, and back; the API path is the untouched process, which never
sets a global provider. Two figures: end to end on the S3 store (moto's HTTP server), and
the telemetry's own time, each call timed alone in this process on the memory store, where
nothing waits on a socket and a few microseconds between paths stand out of the noise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from opentelemetry import trace
from opentelemetry.metrics import Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import s3claim.claimcheck as claimcheck_module
import s3claim.telemetry._names as n
import s3claim.telemetry._spans as spans
from benchmarks.context import Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import median, percentile
from devkit.documents import KiB, document
from s3claim.claimcheck import ClaimCheck
from s3claim.memory import MemoryClaimCheckStore
from s3claim.s3 import S3ClaimCheckStore
from s3claim.s3._counting import _received, _sent
from s3claim.scope import Scope
from s3claim.telemetry import Operation, fetch_operation

__all__ = ["run"]

_CHARS = 16 * KiB
"""A result four times the default threshold: stored, its head shown."""
_OFFSET = 4096
_INSTRUMENTS = ("_claims", "_saved", "_size", "_fetches", "_duration")
_PATHS = ("none", "api", "discard", "memory")
_LABELS = {
    "none": "no telemetry (baseline)",
    "api": "API only, no SDK (the default)",
    "discard": "SDK, spans and metrics discarded",
    "memory": "SDK, in-memory exporter and reader",
}
_LOCAL_ROUNDS = 25
_BUDGET = 0.02
"""The API-only path's cost, as a share of one S3 fetch: under 2%."""


class _DiscardSpans(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _DiscardMetrics(MetricExporter):
    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


@dataclass
class _Path:
    """One way the process is set up, entered around each round and left after it."""

    name: str
    enter: Callable[[], Callable[[], None]]
    """Sets the path up; returns what undoes it."""
    clear: Callable[[], None] = lambda: None
    """Drops what an in-memory exporter kept (between rounds, untimed)."""


def _from(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> dict[str, Any]:
    """s3claim's tracer and instruments as these providers make them (same names, units)."""
    meter = meter_provider.get_meter(n.SCOPE_NAME)
    made: dict[str, Any] = {"_tracer": tracer_provider.get_tracer(n.SCOPE_NAME)}
    for name in _INSTRUMENTS:
        proxy = getattr(spans, name)  # the API's proxy instrument: its name, unit, description
        make = meter.create_histogram if isinstance(proxy, Histogram) else meter.create_counter
        made[name] = make(proxy._name, unit=proxy._unit, description=proxy._description)
    return made


def _swap_in(made: dict[str, Any]) -> Callable[[], None]:
    """`made` in place of s3claim's tracer and instruments, until the undo is called."""
    saved = {name: getattr(spans, name) for name in made}
    for name, value in made.items():
        setattr(spans, name, value)

    def undo() -> None:
        for name, value in saved.items():
            setattr(spans, name, value)

    return undo


def _sdk_path(name: str, exporter: SpanExporter, reader: Any) -> _Path:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    made = _from(tracer_provider, MeterProvider(metric_readers=[reader]))

    def clear() -> None:
        if isinstance(exporter, InMemorySpanExporter):
            exporter.clear()
        if isinstance(reader, InMemoryMetricReader):
            reader.get_metrics_data()

    return _Path(name, lambda: _swap_in(made), clear)


@contextmanager
def _stripped_operations() -> Iterator[None]:
    """`Operation` as a bare context manager: no span, no metric, no audit record."""
    enter, leave, duration = (
        Operation.__enter__,
        Operation.__exit__,
        claimcheck_module.record_duration,
    )
    Operation.__enter__ = lambda self: self  # type: ignore[method-assign]
    Operation.__exit__ = lambda self, *_: None  # type: ignore[method-assign,assignment]
    claimcheck_module.record_duration = lambda *_, **__: None  # type: ignore[assignment]
    try:
        yield
    finally:
        Operation.__enter__ = enter  # type: ignore[method-assign]
        Operation.__exit__ = leave  # type: ignore[method-assign]
        claimcheck_module.record_duration = duration


def _paths(client: Any | None) -> list[_Path]:
    def none() -> Callable[[], None]:
        stack = _stripped_operations()
        stack.__enter__()
        if client is not None:
            events = client.meta.events
            events.unregister("before-send.s3", unique_id="s3claim-count-sent")
            events.unregister("after-call.s3", unique_id="s3claim-count-received")

        def undo() -> None:
            stack.__exit__(None, None, None)
            if client is not None:
                events.register("before-send.s3", _sent, unique_id="s3claim-count-sent")
                events.register("after-call.s3", _received, unique_id="s3claim-count-received")

        return undo

    interval = math.inf  # the discarding reader never collects while we time
    return [
        _Path("none", none),
        _Path("api", lambda: lambda: None),
        _sdk_path(
            "discard",
            _DiscardSpans(),
            PeriodicExportingMetricReader(_DiscardMetrics(), export_interval_millis=interval),
        ),
        _sdk_path("memory", InMemorySpanExporter(), InMemoryMetricReader()),
    ]


def _fetcher(store: Any, scope: Scope, handle: str) -> Callable[[str], Callable[[], object]]:
    """The fetch each path times: the baseline skips the store's telemetry decorator."""
    bare = type(store).fetch.__wrapped__

    def fetch_for(path: str) -> Callable[[], object]:
        if path == "none":
            return lambda: bare(store, scope, handle, _OFFSET)
        return lambda: store.fetch(scope, handle, _OFFSET)

    return fetch_for


def _rounds(
    paths: list[_Path],
    work: dict[str, Callable[[str], Callable[[], object]]],
    *,
    rounds: int,
    each: dict[str, int],
    per_call: bool = False,
) -> dict[tuple[str, str], float]:
    """Seconds per call for each (work, path), the paths in a different order each round:
    the median over rounds of each round's mean, or with `per_call` the 10th percentile of
    every call timed alone (what a call costs when nothing else on the machine interrupts
    it: the microseconds sought are smaller than a preemption)."""
    times: dict[tuple[str, str], list[float]] = {(w, p.name): [] for w in work for p in paths}
    clock = time.perf_counter
    for round_ in range(rounds + 1):  # round 0 is untimed: code warm, connections open
        order = paths[round_ % len(paths) :] + paths[: round_ % len(paths)]
        for path in order:
            undo = path.enter()
            try:
                for name, make in work.items():
                    call, count, into = make(path.name), each[name], times[(name, path.name)]
                    if per_call:
                        for _ in range(count):
                            started = clock()
                            call()
                            into.append(clock() - started)
                    else:
                        started = clock()
                        for _ in range(count):
                            call()
                        into.append((clock() - started) / count)
                    if not round_:
                        into.clear()
            finally:
                undo()
                path.clear()
    summary = (lambda found: percentile(found, 10)) if per_call else median
    return {key: summary(found) for key, found in times.items()}


def _check_in_for(
    claim_check: ClaimCheck, text: str, fresh: bool
) -> Callable[[str], Callable[[], object]]:
    """Check-ins of `text`; `fresh`: each into a run of its own (a new object, not a refresh)."""
    counter = iter(range(10**9))

    def make(path: str) -> Callable[[], object]:
        if fresh:
            return lambda: claim_check.check_in(
                text, tool="read_contract", scope=Scope("bench", f"t{next(counter)}")
            )
        scope = Scope("bench", "telemetry")
        return lambda: claim_check.check_in(text, tool="read_contract", scope=scope)

    return make


def _on_s3(bench: Bench, text: str) -> dict[tuple[str, str], float]:
    client, bucket, store, _ = bench.stores(bench.moto)
    try:
        scope = Scope("bench", "telemetry")
        handle = store.put(scope, text, ttl_seconds=3600)
        assert isinstance(store, S3ClaimCheckStore)
        work = {
            "check_in": _check_in_for(ClaimCheck(store), text, fresh=True),
            "fetch": _fetcher(store, scope, handle),
        }
        quick = bench.profile.name == "quick"
        each = {"check_in": 8 if quick else 15, "fetch": 20 if quick else 40}
        return _rounds(_paths(client), work, rounds=bench.profile.fetch_repeats, each=each)
    finally:
        empty_bucket(client, bucket)


def _in_process(bench: Bench, text: str) -> tuple[dict[tuple[str, str], float], float]:
    """Per-call seconds on the memory store for each path, and the counting hooks' seconds
    per S3 request (the one part of the S3 path the memory store lacks)."""
    store = MemoryClaimCheckStore(handle_key=bench.key)
    scope = Scope("bench", "telemetry")
    handle = store.put(scope, text, ttl_seconds=3600)
    work = {
        "check_in": _check_in_for(ClaimCheck(store), text, fresh=False),
        "fetch": _fetcher(store, scope, handle),
    }
    each = {"check_in": 40, "fetch": 400}
    figures = _rounds(_paths(None), work, rounds=_LOCAL_ROUNDS, each=each, per_call=True)

    message, calls = SimpleNamespace(headers={"Content-Length": "4096"}), 20_000
    hooks: list[float] = []
    for _ in range(_LOCAL_ROUNDS):
        with fetch_operation(store, scope, handle=handle, offset=0):
            started = time.perf_counter()
            for _ in range(calls):
                _sent(request=message)
                _received(http_response=message)
            hooks.append((time.perf_counter() - started) / calls)
    return figures, percentile(hooks, 10)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _pct(share: float) -> str:
    return f"{100 * share:+.2f}%"


def run(bench: Bench) -> Section:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        raise RuntimeError("a global TracerProvider is set: the API-only path would not be")
    text = document(_CHARS, "ascii")
    s3 = _on_s3(bench, text)
    local, hooks = _in_process(bench, text)
    ops = ("check_in", "fetch")
    op_names = {"check_in": "check-in", "fetch": "fetch"}

    end_to_end = [
        [
            _LABELS[path],
            *(
                cell
                for op in ops
                for cell in (
                    _us(s3[(op, path)]),
                    f"{s3[(op, path)] / s3[(op, 'none')]:.3f}",
                )
            ),
        ]
        for path in _PATHS
    ]
    # The telemetry's own cost: the memory store's difference from the baseline, plus, on
    # the S3 path, the counting hooks of its one request (a PutObject, a ranged GET).
    cost = {
        (op, path): local[(op, path)] - local[(op, "none")] + (hooks if path != "none" else 0.0)
        for op in ops
        for path in _PATHS
    }
    own = [
        [
            _LABELS[path],
            *(
                cell
                for op in ops
                for cell in (
                    _us(local[(op, path)]),
                    _us(cost[(op, path)]) if path != "none" else "",
                    _pct(cost[(op, path)] / s3[(op, "none")]) if path != "none" else "",
                )
            ),
        ]
        for path in _PATHS
    ]
    share = cost[("fetch", "api")] / s3[("fetch", "none")]
    within = share < _BUDGET
    failures = (
        []
        if within
        else [f"with no SDK telemetry costs {100 * share:.2f}% of a fetch (budget < 2%)"]
    )
    sdk_share = cost[("fetch", "memory")] / s3[("fetch", "none")]
    title = "Telemetry: what spans and metrics cost"
    return Section(
        title=title,
        intro=(
            "A check-in of a 16 Ki-character ASCII result (into a run of its own on S3, so "
            "each is a new object) and a fetch of its second 4,096-character window, by how "
            "the application set OpenTelemetry up: no telemetry at all (s3claim's operations "
            "made bare context managers, the fetch decorator and the S3 counting hooks "
            "removed: the baseline), the API alone with no SDK (s3claim's default), the SDK "
            "with a span exporter that drops what it gets and a metric reader that never "
            "collects, and the SDK's in-memory span exporter and metric reader. The four run "
            "in alternating rounds. End to end on the S3 store on moto's HTTP server (median "
            f"over {bench.profile.fetch_repeats} rounds of the mean per call); then the "
            "telemetry's own time: the 10th percentile of each call timed alone, over "
            f"{_LOCAL_ROUNDS} rounds in this process on the memory store, where nothing waits "
            "on a socket and the difference from the baseline stands out, plus the S3 "
            f"counting hooks of the one request each call sends ({_us(hooks)}), as a share "
            "of the baseline's S3 call."
        ),
        tables=[
            Table(
                title="End to end on the S3 store (moto), per call, and against the baseline",
                headers=[
                    "path",
                    *(h for op in ops for h in (op_names[op], "× baseline")),
                ],
                rows=end_to_end,
            ),
            Table(
                title="The telemetry's own cost: a memory-store call, the time added, its share "
                "of an S3 call",
                headers=[
                    "path",
                    *(
                        h
                        for op in ops
                        for h in (f"memory {op_names[op]}", "added", f"of an S3 {op_names[op]}")
                    ),
                ],
                rows=own,
            ),
        ],
        notes=[
            f"With no SDK, telemetry adds {_us(cost[('fetch', 'api')])} to a fetch: "
            f"{100 * share:.2f}% of an S3 fetch's {_us(s3[('fetch', 'none')])} "
            f"(budget < 2%: {'within' if within else 'missed'}), and "
            f"{_us(cost[('check_in', 'api')])} to a check-in.",
            "The end-to-end medians on moto move from run to run by more than any path's "
            "cost (a shared machine, a server in this process): the second table is the one "
            "to quote. Against a 1 ms fetch (a fast in-region GET) the no-SDK cost would be "
            f"{100 * cost[('fetch', 'api')] / 1e-3:.2f}%, the in-memory SDK's "
            f"{100 * cost[('fetch', 'memory')] / 1e-3:.1f}%.",
        ],
        headlines=[
            f"{title}: with no SDK configured {_us(cost[('fetch', 'api')])} a fetch "
            f"({100 * share:.2f}% of an S3 fetch, budget < 2%) and "
            f"{_us(cost[('check_in', 'api')])} a check-in; with the SDK's in-memory exporter "
            f"{_us(cost[('fetch', 'memory')])} a fetch ({100 * sdk_share:.1f}%) and "
            f"{_us(cost[('check_in', 'memory')])} a check-in.",
        ],
        budget_failures=failures,
    )
