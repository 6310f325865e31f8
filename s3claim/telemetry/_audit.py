"""The audit trail: one structured record per redemption (fetch, search, refusal).

Records go to the `s3claim.audit` logger at INFO, the record's JSON as the message and the
`AuditRecord` itself as `record.audit`, so any logging handler can ship or keep them;
`S3AuditTrail(store).handler()` keeps them in the bucket's audit area, where `forget` erases
a tenant's (or a run's) with everything else. A record names when, the tenant and run (keyed
tags, never names), the handle, the window or the pattern's length, and the outcome: never
content, never the pattern.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

from s3claim.safejson import loads
from s3claim.telemetry._names import AUDIT_LOGGER

__all__ = ["AuditRecord", "audit_enabled", "emit_audit"]

_log = logging.getLogger(AUDIT_LOGGER)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One redemption. `at` is seconds since the epoch; `handle` is None when it was
    malformed (refused before any store saw it); the sizes that do not apply are None."""

    at: float
    operation: str
    outcome: str
    tenant: str
    run: str
    handle: str | None = None
    offset: int | None = None
    chars: int | None = None
    pattern_chars: int | None = None
    matches: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> AuditRecord:
        """The record `to_json` wrote; `ValueError` for anything else."""
        data: Any = loads(text)
        if not isinstance(data, dict):
            raise ValueError("an audit record is a JSON object")
        try:
            return cls(**data)
        except TypeError:
            raise ValueError("not an audit record") from None


def audit_enabled() -> bool:
    """Whether a record would go anywhere: checked before one is built, since its tags cost
    two HMACs (most of a no-SDK fetch's telemetry, as measured in
    docs/benchmarks.md#telemetry-what-spans-and-metrics-cost)."""
    return _log.isEnabledFor(logging.INFO)


def emit_audit(record: AuditRecord) -> None:
    _log.info("%s", record.to_json(), extra={"audit": record})
