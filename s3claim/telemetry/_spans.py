"""Operations: one span, its S3 tally, its metrics and (for redemptions) its audit record.

Everything goes through the OpenTelemetry API: the application brings the SDK and its
exporters, and without them every call here is a no-op (a shared invalid span; its cost:
docs/benchmarks.md#telemetry-what-spans-and-metrics-cost). An operation opened inside one of
the same name is the outer one (the claim tool's fetch and the store's own fetch are one
span), so each face can instrument its entry point without doubling the spans of another.

Attributes are sizes, counts, handles and keyed tags: never content, patterns or arguments.
Tenants and runs appear as keyed tags (the store's own, so they match its bucket prefixes);
`configure(tenant_names=True)` records the names for deployments that want them.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

import s3claim.telemetry._names as n
from s3claim.handles import HandleKey
from s3claim.scope import Scope
from s3claim.telemetry._audit import AuditRecord, audit_enabled, emit_audit
from s3claim.version import __version__

__all__ = [
    "Operation",
    "configure",
    "count_request",
    "count_reuse",
    "record_duration",
    "scope_attributes",
    "tenant_attributes",
]

_tracer = trace.get_tracer(n.SCOPE_NAME, __version__)
_meter = metrics.get_meter(n.SCOPE_NAME, __version__)
_claims = _meter.create_counter(
    n.CLAIMS, unit="{result}", description="Tool results admitted, by tool and outcome."
)
_saved = _meter.create_counter(
    n.CHARS_SAVED, unit="{char}", description="Characters kept out of the conversation."
)
_size = _meter.create_histogram(
    n.CLAIM_SIZE, unit="{char}", description="Characters of each result checked in."
)
_fetches = _meter.create_counter(
    n.FETCHES, unit="{fetch}", description="Windows read from claims, by outcome."
)
_reuses = _meter.create_counter(
    n.REUSES, unit="{call}", description="Repeat reads answered from their claim, by tool."
)
_duration = _meter.create_histogram(
    n.STORE_DURATION, unit="s", description="Time of store operations, by operation and outcome."
)

MAX_TOOL_CHARS, MAX_TOOLS = 64, 100
"""A metric's `s3claim.tool` is `other` past this length or this many names per process: an
MCP upstream chooses tool names, and must not grow the series without bound."""
_tools: set[str] = set()
_tools_lock = threading.Lock()

_current: contextvars.ContextVar[Operation | None] = contextvars.ContextVar(
    "s3claim_operation", default=None
)
_fallback_key = HandleKey.generate()  # tags for a store that has no key of its own
_tenant_names = False


def configure(*, tenant_names: bool = False) -> None:
    """Process-wide: `tenant_names=True` records tenants and runs by name in spans.

    By default they are the store's keyed tags, which match its bucket prefixes and the
    audit trail but name nobody. The audit trail always holds tags.
    """
    global _tenant_names
    _tenant_names = bool(tenant_names)


def _tags(owner: object, scope: Scope) -> tuple[str, str]:
    tenant_tag = getattr(owner, "tenant_tag", None)
    run_tag = getattr(owner, "run_tag", None)
    if callable(tenant_tag) and callable(run_tag):
        return str(tenant_tag(scope.tenant)), str(run_tag(scope))
    return _fallback_key.tenant_tag(scope.tenant), _fallback_key.run_tag(scope)


def scope_attributes(owner: object, scope: Scope) -> dict[str, str]:
    """The tenant and run of a span: `owner`'s keyed tags, or the names when configured."""
    if _tenant_names:
        return {n.TENANT: scope.tenant, n.RUN: scope.run}
    tenant, run = _tags(owner, scope)
    return {n.TENANT: tenant, n.RUN: run}


def tenant_attributes(owner: object, tenant: str, run: str | None) -> dict[str, str]:
    """`scope_attributes` for an erasure: the tenant, and the run when there is one."""
    if run is not None:
        return scope_attributes(owner, Scope(tenant, run))
    if _tenant_names:
        return {n.TENANT: tenant}
    tenant_tag = getattr(owner, "tenant_tag", None)
    tag = tenant_tag(tenant) if callable(tenant_tag) else _fallback_key.tenant_tag(tenant)
    return {n.TENANT: str(tag)}


def record_duration(operation: str, seconds: float, *, outcome: str) -> None:
    """One `s3claim.store.duration` measurement taken outside an operation (a check-in's put)."""
    _duration.record(seconds, {n.OPERATION: operation, n.OUTCOME: outcome})


def count_reuse(tool: str) -> None:
    """A repeat read answered from its claim without running the tool (`s3claim.reuse`)."""
    _reuses.add(1, {n.TOOL: _bounded(tool) or "other"})


def count_request(*, sent: int = 0, received: int = 0, requests: int = 0) -> None:
    """A store request on the wire, counted into the operation in flight (botocore hooks)."""
    op = _current.get()
    if op is not None:
        op.requests += requests
        op.bytes += sent + received


def _bounded(tool: str | None) -> str | None:
    """`tool` as a metric attribute (`MAX_TOOL_CHARS`, `MAX_TOOLS`)."""
    if tool is None or tool in _tools:
        return tool
    if len(tool) > MAX_TOOL_CHARS:
        return "other"
    with _tools_lock:
        if len(_tools) >= MAX_TOOLS:
            return "other"
        _tools.add(tool)
    return tool


def _tool_execution(outer: Operation | None) -> Operation | trace.Span | None:
    """The span a check-in is part of when it is a GenAI tool execution: the runner's
    `execute_tool` operation, or another host's span whose `gen_ai.operation.name` says so
    (the MCP SDK's `tools/call`, pydantic-ai's `execute_tool`); else None."""
    current = trace.get_current_span()
    if outer is not None and current is getattr(outer, "_span", None):
        return outer if outer.attributes.get(n.GEN_AI_OPERATION) == n.EXECUTE_TOOL else None
    found = getattr(current, "attributes", None)  # an SDK span's; the API has no getter
    if isinstance(found, Mapping) and found.get(n.GEN_AI_OPERATION) == n.EXECUTE_TOOL:
        return current
    return None


class Operation:
    """One s3claim operation as a context manager; see the module docstring.

    `duration`: the `s3claim.store.duration` operation name, or None when this span's time
    is not a store's. `audit`: a redemption, audited when it ends (`owner` gives its tags).
    """

    __slots__ = (
        "_context",
        "_outer",
        "_span",
        "_start",
        "_token",
        "attributes",
        "audit",
        "bytes",
        "duration",
        "failure",
        "kind",
        "name",
        "outcome",
        "owner",
        "parent",
        "recording",
        "requests",
        "scope",
    )

    def __init__(
        self,
        name: str,
        *,
        failure: str = "failed",
        duration: str | None = None,
        owner: object = None,
        scope: Scope | None = None,
        audit: bool = False,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.failure = failure
        self.duration = duration
        self.owner = owner
        self.scope = scope
        self.audit = audit
        self.kind = kind
        self.attributes: dict[str, Any] = attributes if attributes is not None else {}
        self.outcome: str | None = None
        self.requests = 0
        self.bytes = 0
        self.recording = False
        self.parent: Operation | trace.Span | None = None
        self._outer: Operation | None = None

    def __enter__(self) -> Operation:
        outer = _current.get()
        if outer is not None and outer.name == self.name:
            self._outer = outer  # the same operation, entered again one layer down
            return outer
        span = _tracer.start_span(self.name, kind=self.kind)
        self._span = span
        self.recording = span.is_recording()
        if self.recording and self.name == n.CHECK_IN:
            self.parent = _tool_execution(outer)
        # An invalid span (no SDK) must not hide a valid parent from what runs inside.
        self._context = (
            otel_context.attach(trace.set_span_in_context(span))
            if span.get_span_context().is_valid
            else None
        )
        self._token = _current.set(self)
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._outer is not None:
            return
        elapsed = time.perf_counter() - self._start
        _current.reset(self._token)
        if self._context is not None:
            otel_context.detach(self._context)
        if self.outcome is None:
            self.outcome = self.failure if exc_type is not None else "ok"
        span = self._span
        if self.recording:
            attributes = {k: v for k, v in self.attributes.items() if v is not None}
            attributes[n.OUTCOME] = self.outcome
            if self.scope is not None:
                attributes.update(scope_attributes(self.owner, self.scope))
            if self.requests:
                attributes[n.S3_REQUESTS] = self.requests
                attributes[n.S3_BYTES] = self.bytes
            if self.name == n.CHECK_IN and self.outcome == "stored":
                attributes.update(self._offload())
            if exc_type is not None:  # the type only: a message could quote anything
                attributes[n.ERROR_TYPE] = exc_type.__name__
                span.set_status(Status(StatusCode.ERROR))
            span.set_attributes(attributes)
        span.end()
        self._metrics(elapsed)
        if self.audit and self.scope is not None and audit_enabled():
            emit_audit(self._audit_record())

    def _offload(self) -> dict[str, Any]:
        """A stored result's reference and sizes, set on the tool-execution span around the
        check-in too (`parent`), so a trace viewer finds the claim on the tool call itself."""
        get = self.attributes.get
        offload = {
            n.GEN_AI_TOOL_CALL_RESULT_REF: get(n.HANDLE),
            n.CHARS_TOTAL: get(n.CHARS_TOTAL),
            n.CHARS_SHOWN: get(n.CHARS_SHOWN),
            n.CHARS_KEPT_OUT: self._kept_out(),
        }
        offload = {k: v for k, v in offload.items() if v is not None}
        if isinstance(self.parent, Operation):
            self.parent.attributes.update(offload)  # ours: set when it ends, with the rest
        elif self.parent is not None:
            self.parent.set_attributes(offload)
        return offload

    def _kept_out(self) -> int:
        """A stored result's characters the conversation does not hold: total less shown."""
        total = self.attributes.get(n.CHARS_TOTAL) or 0
        return int(max(0, total - (self.attributes.get(n.CHARS_SHOWN) or 0)))

    def _metrics(self, elapsed: float) -> None:
        outcome = self.outcome
        if self.duration is not None:
            _duration.record(elapsed, {n.OPERATION: self.duration, n.OUTCOME: outcome})
        if self.name == n.FETCH:
            _fetches.add(1, {n.OUTCOME: outcome})
        elif self.name == n.CHECK_IN:
            tool = _bounded(self.attributes.get(n.TOOL))
            _claims.add(1, {n.TOOL: tool, n.OUTCOME: outcome})
            if outcome == "stored":
                _saved.add(self._kept_out(), {n.TOOL: tool})
                _size.record(self.attributes.get(n.CHARS_TOTAL) or 0, {n.TOOL: tool})

    def _audit_record(self) -> AuditRecord:
        assert self.scope is not None
        tenant, run = _tags(self.owner, self.scope)
        get = self.attributes.get
        return AuditRecord(
            at=time.time(),
            operation="fetch" if self.name == n.FETCH else "search",
            outcome=self.outcome or "ok",
            tenant=tenant,
            run=run,
            handle=get(n.HANDLE),
            offset=get(n.WINDOW_OFFSET),
            chars=get(n.WINDOW_CHARS),
            pattern_chars=get(n.PATTERN_CHARS),
            matches=get(n.SEARCH_MATCHES),
        )

    def set(self, **attributes: Any) -> None:
        """Attributes by their `_names` constant in lower case: `set(handle=...)` is
        `s3claim.handle`. Kept for the end (metrics and audit read them)."""
        for key, value in attributes.items():
            self.attributes[getattr(n, key.upper())] = value
