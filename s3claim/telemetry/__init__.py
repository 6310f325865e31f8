"""Telemetry: OpenTelemetry spans and metrics for every claim, and the audit trail.

s3claim speaks only the OpenTelemetry API. An application that installs and configures the
SDK (a `TracerProvider` and `MeterProvider` with its exporters) sees every check-in, fetch,
search, erasure and journal read or write as spans and metrics; one that does not pays a
no-op. The names are in `_names` and docs/observability.md. The audit trail is the
`s3claim.audit` logger (`AuditRecord`).
"""

import s3claim.telemetry._names as names
from s3claim.telemetry._audit import AuditRecord
from s3claim.telemetry._instrument import (
    agent_run_span,
    check_in_operation,
    fetch_operation,
    search_operation,
    tool_call_span,
    traced_forget,
    traced_journal_load,
    traced_journal_save,
)
from s3claim.telemetry._spans import (
    Operation,
    configure,
    count_request,
    count_reuse,
    record_duration,
)

__all__ = [
    "AuditRecord",
    "Operation",
    "agent_run_span",
    "check_in_operation",
    "configure",
    "count_request",
    "count_reuse",
    "fetch_operation",
    "names",
    "record_duration",
    "search_operation",
    "tool_call_span",
    "traced_forget",
    "traced_journal_load",
    "traced_journal_save",
]
