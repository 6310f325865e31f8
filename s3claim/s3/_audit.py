"""S3AuditTrail: the audit trail kept in the claim bucket, in an area of its own.

Each record is one small object at `{prefix}audit/{tenant tag}/{run tag}/{milliseconds}-
{random}` (`_layout`), so `forget` (of the tenant or of the run) erases the trail with the
claims and `s3claim audit --tenant ...` lists it with one listing of the area. Not under the
tenant's prefix: a redemption refused after `forget(tenant)` (or one that raced it) is still
kept, and never recreates the erased prefix, which only a check-in writes. Records hold keyed
tags, sizes and outcomes, never content (`s3claim.telemetry.AuditRecord`), and expire with
the bucket's longest day class.
Keeping is a logging handler on the `s3claim.audit` logger, so every face that redeems a
handle keeps its records with no wiring of its own; it costs one PUT per record, sent from
the thread that redeemed, and a PUT that fails is logged (by type) and dropped, never raised
into the redemption.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterator
from functools import partial

from s3claim.s3._bucket import Bucket
from s3claim.s3._layout import is_audit_key
from s3claim.s3._store import S3ClaimCheckStore
from s3claim.telemetry import AuditRecord, names

__all__ = ["S3AuditTrail"]

_log = logging.getLogger("s3claim")
_TAG = re.compile(r"[0-9a-f]{32}")


class S3AuditTrail:
    """The audit records of a store's bucket: `handler()` keeps them, `records()` reads them.

    `S3AuditTrail(store)`, or `S3AuditTrail(store.bucket)`: the same `Bucket`.
    """

    def __init__(self, bucket: S3ClaimCheckStore | Bucket) -> None:
        if isinstance(bucket, S3ClaimCheckStore):
            bucket = bucket.bucket
        if not isinstance(bucket, Bucket):
            raise TypeError(f"S3AuditTrail keeps records in an S3 store's bucket, got "
                            f"{type(bucket).__name__}")  # fmt: skip
        self.bucket = bucket

    def handler(self, level: int = logging.INFO) -> logging.Handler:
        """A handler for the `s3claim.audit` logger that keeps every record in the bucket:
        `logging.getLogger("s3claim.audit").addHandler(trail.handler())`."""
        return _Keeping(self, level)

    def keep(self, record: AuditRecord) -> None:
        """One PutObject for one record (`ClaimStoreError` when the bucket refuses it)."""
        if _TAG.fullmatch(record.tenant) is None or _TAG.fullmatch(record.run) is None:
            raise ValueError("an audit record's tenant and run must be keyed tags")
        bucket = self.bucket
        name = f"{round(record.at * 1000):013d}-{secrets.token_hex(4)}"
        key = f"{bucket.layout.prefix}{names.AUDIT_FOLDER}/{record.tenant}/{record.run}/{name}"
        # Kept as long as the bucket keeps anything: the largest day class.
        bucket.put(
            key,
            record.to_json().encode("utf-8"),
            content_type="application/json",
            meta={},
            days=bucket.classes[-1],
        )

    def records(self, *, tenant: str, run: str | None = None) -> Iterator[AuditRecord]:
        """A tenant's records (or one run's), run by run, oldest first within a run."""
        bucket = self.bucket
        keys = (
            k for layout in bucket.layouts for k in bucket.keys(layout.audit_prefix(tenant, run))
        )
        for key in keys:  # each key of the ring's records in turn, newest first
            if not is_audit_key(key):
                continue  # nothing the trail wrote
            body = bucket.request(
                "GetObject", partial(bucket.client.get_object, Bucket=bucket.name, Key=key)
            )["Body"].read()
            try:
                yield AuditRecord.from_json(body)
            except ValueError:
                _log.warning("audit: skipping an object that is not a record")

    def __repr__(self) -> str:
        return f"S3AuditTrail({self.bucket!r})"


class _Keeping(logging.Handler):
    def __init__(self, trail: S3AuditTrail, level: int) -> None:
        super().__init__(level)
        self.trail = trail

    def createLock(self) -> None:
        self.lock = None  # the client is thread-safe: redemptions need not queue for it

    def emit(self, record: logging.LogRecord) -> None:
        audit = getattr(record, "audit", None)
        if not isinstance(audit, AuditRecord):
            return
        try:
            self.trail.keep(audit)
        except Exception as exc:  # the redemption has happened; its record is what failed
            _log.warning("audit: a record was not kept in the bucket (%s)", type(exc).__name__)
