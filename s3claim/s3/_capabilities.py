"""What the S3 server behind the bucket can do, probed with one small object.

S3-compatible servers differ in what they implement (s3rver ignores conditional writes and
tags and has no versioning API; Garage answers 501 to every API it lacks; some have no
lifecycle). Each probe says whether the feature works here and, when it does not, what the
store does without it. The probe object lives under the store's prefix (where the store's
permissions reach) at a key no claim can have, and is deleted at the end.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from s3claim.s3._check import Check, Status
from s3claim.s3._errors import UNSUPPORTED, error_code

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["CAPABILITIES", "probe_capabilities"]

CAPABILITIES = (
    "capability: ranged GET",
    "capability: object tagging",
    "capability: conditional PUT",
    "capability: versioning API",
    "capability: lifecycle rules",
)
_BODY = b"0123456789"
_TAG = ("s3claim-doctor", "probe")
_STALE_ETAG = '"' + "0" * 32 + '"'  # not the probe's ETag (that is its body's MD5)


def probe_capabilities(client: S3Client, bucket: str, *, prefix: str) -> list[Check]:
    """One check per capability, in `CAPABILITIES` order; writes and deletes one object."""
    key = f"{prefix}s3claim-doctor-probe-{uuid.uuid4().hex}"
    try:
        client.put_object(Bucket=bucket, Key=key, Body=_BODY, Tagging=f"{_TAG[0]}={_TAG[1]}")
    except (ClientError, BotoCoreError) as exc:
        reason = error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__
        detail = f"cannot write a probe object under {prefix}: {reason}"
        return [Check(n, Status.skipped, detail) for n in CAPABILITIES]
    try:
        return [
            _probe(CAPABILITIES[0], lambda: _ranged_get(client, bucket, key)),
            _probe(CAPABILITIES[1], lambda: _tagging(client, bucket, key)),
            _probe(CAPABILITIES[2], lambda: _conditional_put(client, bucket, key)),
            _probe(CAPABILITIES[3], lambda: _versioning_api(client, bucket, key)),
            _probe(CAPABILITIES[4], lambda: _lifecycle_api(client, bucket)),
        ]
    finally:
        # A leftover 10-byte probe under the prefix is collected like anything else.
        with contextlib.suppress(ClientError, BotoCoreError):
            client.delete_object(Bucket=bucket, Key=key)


def _probe(name: str, run: Callable[[], tuple[Status, str, str | None]]) -> Check:
    try:
        status, detail, fix = run()
    except ClientError as exc:
        status, detail, fix = Status.warning, f"cannot tell: {error_code(exc)}", None
    except BotoCoreError as exc:
        status, detail, fix = Status.warning, f"cannot tell: {type(exc).__name__}", None
    return Check(name, status, detail, fix)


def _ranged_get(client: S3Client, bucket: str, key: str) -> tuple[Status, str, str | None]:
    response = client.get_object(Bucket=bucket, Key=key, Range="bytes=3-5")
    body = response["Body"].read()
    if body == _BODY[3:6]:
        return Status.passed, "bytes=3-5 answered with exactly those bytes", None
    return (
        Status.failed,
        f"bytes=3-5 answered with {len(body)} bytes: every window would be wrong",
        "the store needs HTTP range requests; use another S3-compatible server",
    )


def _tagging(client: S3Client, bucket: str, key: str) -> tuple[Status, str, str | None]:
    try:
        tags = client.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    except ClientError as exc:
        if error_code(exc) not in UNSUPPORTED:
            raise
        tags = []
    if {"Key": _TAG[0], "Value": _TAG[1]} in tags:
        return Status.passed, "tags set at PUT are kept", None
    return (
        Status.warning,
        "tags set at PUT are dropped: lifecycle rules filtered by tag collect nothing; "
        "expiry is still enforced on every read",
        "collect old claims with a lifecycle rule by prefix alone (the largest day class), "
        "or delete them on a schedule",
    )


def _conditional_put(client: S3Client, bucket: str, key: str) -> tuple[Status, str, str | None]:
    """If-None-Match (check-in, a journal's first save) and If-Match (its later saves)."""
    try:
        client.put_object(Bucket=bucket, Key=key, Body=_BODY, IfNoneMatch="*")
    except ClientError as exc:
        if error_code(exc) != "PreconditionFailed":
            raise
    else:
        return (
            Status.warning,
            "If-None-Match is ignored: a repeated check-in rewrites its object (same bytes) "
            "instead of refreshing it; a run journal cannot keep out a second writer",
            None,
        )
    try:
        client.put_object(Bucket=bucket, Key=key, Body=_BODY, IfMatch=_STALE_ETAG)
    except ClientError as exc:
        if error_code(exc) == "PreconditionFailed":
            return (
                Status.passed,
                "If-None-Match: * and a stale If-Match both answer 412 on an existing key",
                None,
            )
        raise
    return (
        Status.warning,
        "If-Match is ignored: a run journal cannot keep out a second writer (a stale "
        "instance's save overwrites the run)",
        None,
    )


def _versioning_api(client: S3Client, bucket: str, key: str) -> tuple[Status, str, str | None]:
    try:
        client.list_object_versions(Bucket=bucket, Prefix=key, MaxKeys=1)
    except ClientError as exc:
        if error_code(exc) not in UNSUPPORTED:
            raise
        return (
            Status.passed,
            f"not offered ({error_code(exc)}): forget lists keys instead; no versions can exist",
            None,
        )
    return Status.passed, "ListObjectVersions answers: forget erases every version", None


def _lifecycle_api(client: S3Client, bucket: str) -> tuple[Status, str, str | None]:
    try:
        client.get_bucket_lifecycle_configuration(Bucket=bucket)
    except ClientError as exc:
        code = error_code(exc)
        if code == "NoSuchLifecycleConfiguration":
            return Status.passed, "supported (no rules yet: see the lifecycle checks)", None
        if code not in UNSUPPORTED:
            raise
        return (
            Status.warning,
            f"not offered ({code}): nothing collects expired claims; reads still refuse "
            "them after their TTL",
            "run `s3claim forget` per tenant, or delete objects under the prefix on a schedule",
        )
    return Status.passed, "supported", None
