"""`s3claim doctor`'s checks: does this bucket give the store what it relies on?

Each check reads one bucket setting and compares it with what `_provision` (the Terraform
module's shape) writes: reachable, encrypted by default, public access blocked, versioning
off or its old versions collected, and a lifecycle rule collecting each TTL day class no
sooner than the TTLs it holds. A failure comes with the fix. A setting the server has no API
for is a warning that says so.

Then the capability probes: what the S3-compatible server itself can do (s3rver ignores
conditional writes and tags and has no versioning API; Garage answers 501 to every API it
lacks), each saying what the store does without it. They use one small object of their own
under the store's prefix (where its permissions reach), at a key no claim can have, deleted
at the end; no claim is ever read. The CLI renders the result.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from s3claim.errors import ClaimStoreError
from s3claim.s3._errors import UNSUPPORTED, error_code, explain, store_error, translated
from s3claim.s3._lifecycle import TAG_KEY
from s3claim.s3._provision import PUBLIC_ACCESS_BLOCK

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["CAPABILITIES", "Check", "Status", "check_bucket"]


class Status(StrEnum):
    passed = "pass"
    failed = "fail"
    warning = "warn"
    skipped = "skip"


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report: a named check, its status, and the fix; for a bucket not
    reached, the store's error too (what every command fails with: `s3claim doctor` exits
    with its code)."""

    name: str
    status: Status
    detail: str
    fix: str | None = None
    error: ClaimStoreError | None = field(default=None, compare=False, repr=False)


Rules = list[Mapping[str, Any]] | ClientError  # or why they could not be read
Found = tuple[Status, str, str | None]  # a probe's status, detail and fix

TERRAFORM = "or apply the Terraform module in terraform/, which sets it"
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


def check_bucket(
    client: S3Client, bucket: str, *, prefix: str, day_classes: Sequence[int]
) -> list[Check]:
    """Every check, in order; after an unreachable bucket the rest are skipped."""
    reachable = _reachable(client, bucket)
    if reachable.status is Status.failed:
        rest = ["default encryption", "public access blocked", "versioning off", "lifecycle"]
        rest += CAPABILITIES
        return [reachable] + [Check(n, Status.skipped, "bucket not reachable") for n in rest]
    with translated("doctor"):  # a failure no check expects: one line, not a traceback
        rules = _rules(client, bucket)
        steps: list[Callable[[], Check]] = [
            lambda: _encryption(client, bucket),
            lambda: _public_access(client, bucket),
            lambda: _versioning(client, bucket, prefix, rules),
        ]
        return [
            reachable,
            *(step() for step in steps),
            *_lifecycle(rules, prefix, day_classes),
            *_capabilities(client, bucket, prefix, rules),
        ]


# -- the bucket's settings -----------------------------------------------------------------


def _unreadable(name: str, exc: ClientError, permission: str) -> Check:
    if error_code(exc) in UNSUPPORTED:
        return Check(name, Status.warning, f"the server has no API for it ({error_code(exc)})")
    return Check(
        name,
        Status.failed,
        f"cannot read it: {error_code(exc)}",
        f"grant {permission} to whoever runs doctor",
    )


def _reachable(client: S3Client, bucket: str) -> Check:
    try:
        client.head_bucket(Bucket=bucket)
    except (ClientError, BotoCoreError) as exc:
        error = store_error("HeadBucket", exc, attempts=1)
        return Check("reachable", Status.failed, explain(error, bucket=bucket), error=error)
    return Check("reachable", Status.passed, f"HeadBucket {bucket} answered")


def _encryption(client: S3Client, bucket: str) -> Check:
    name = "default encryption"
    try:
        rules = client.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    except ClientError as exc:
        if error_code(exc) == "ServerSideEncryptionConfigurationNotFoundError":
            rules = {"Rules": []}
        else:
            return _unreadable(name, exc, "s3:GetEncryptionConfiguration")
    algorithms = [
        r.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm") for r in rules["Rules"]
    ]
    found = [a for a in algorithms if a]
    if found:
        return Check(name, Status.passed, f"on ({', '.join(found)})")
    return Check(
        name,
        Status.failed,
        "no default encryption",
        f"aws s3api put-bucket-encryption --bucket {bucket} --server-side-encryption-"
        'configuration \'{"Rules":[{"ApplyServerSideEncryptionByDefault":'
        f'{{"SSEAlgorithm":"AES256"}}}}]}}\' ({TERRAFORM})',
    )


def _public_access(client: S3Client, bucket: str) -> Check:
    name = "public access blocked"
    try:
        config: Mapping[str, bool] = client.get_public_access_block(Bucket=bucket)[
            "PublicAccessBlockConfiguration"
        ]  # type: ignore[assignment]
    except ClientError as exc:
        if error_code(exc) != "NoSuchPublicAccessBlockConfiguration":
            return _unreadable(name, exc, "s3:GetBucketPublicAccessBlock")
        config = {}
    missing = [flag for flag in PUBLIC_ACCESS_BLOCK if not config.get(flag)]
    if not missing:
        return Check(name, Status.passed, "all four settings on")
    flags = ",".join(f"{flag}=true" for flag in PUBLIC_ACCESS_BLOCK)
    return Check(
        name,
        Status.failed,
        f"off: {', '.join(missing)}",
        f"aws s3api put-public-access-block --bucket {bucket} "
        f"--public-access-block-configuration {flags} ({TERRAFORM})",
    )


def _rules(client: S3Client, bucket: str) -> Rules:
    try:
        return list(client.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"])
    except ClientError as exc:
        if error_code(exc) == "NoSuchLifecycleConfiguration":
            return []
        return exc


def _filter(rule: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A rule's (prefix, tags), whichever of S3's filter shapes it was written in."""
    filt = rule.get("Filter") or {}
    if "And" in filt:
        both = filt["And"]
        tags = {t["Key"]: t["Value"] for t in both.get("Tags", [])}
        return both.get("Prefix", ""), tags
    if "Tag" in filt:
        return "", {filt["Tag"]["Key"]: filt["Tag"]["Value"]}
    return filt.get("Prefix", rule.get("Prefix", "")), {}


def _applies(rule: Mapping[str, Any], prefix: str, tags: Mapping[str, str]) -> bool:
    """True when the rule acts on an object under `prefix` carrying exactly `tags`."""
    rule_prefix, rule_tags = _filter(rule)
    return (
        rule.get("Status") == "Enabled"
        and prefix.startswith(rule_prefix)
        and all(tags.get(k) == v for k, v in rule_tags.items())
    )


def _versioning(client: S3Client, bucket: str, prefix: str, rules: Rules) -> Check:
    name = "versioning off"
    try:
        status = client.get_bucket_versioning(Bucket=bucket).get("Status")
    except ClientError as exc:
        return _unreadable(name, exc, "s3:GetBucketVersioning")
    if status is None:
        return Check(name, Status.passed, "never enabled")
    collected = not isinstance(rules, ClientError) and any(
        "NoncurrentVersionExpiration" in r and _applies(r, prefix, {}) for r in rules
    )
    if collected:
        return Check(
            name,
            Status.passed,
            f"{status}, with a rule expiring noncurrent versions under {prefix}",
        )
    return Check(
        name,
        Status.failed,
        f"{status}: forgotten claims would stay as noncurrent versions",
        "add a lifecycle rule with NoncurrentVersionExpiration (and ExpiredObjectDeleteMarker) "
        f"for prefix {prefix}, or set versioning_enabled = true in the Terraform module",
    )


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _lifecycle(rules: Rules, prefix: str, day_classes: Sequence[int]) -> list[Check]:
    if isinstance(rules, ClientError):
        return [_unreadable("lifecycle rules", rules, "s3:GetLifecycleConfiguration")]
    fix = (
        "`s3claim doctor --print-lifecycle` prints every rule the store needs, for aws s3api "
        f"put-bucket-lifecycle-configuration (which replaces all rules), {TERRAFORM}"
    )
    checks = []
    for days in day_classes:
        name = f"lifecycle: {days}-day class"
        tags = {TAG_KEY: str(days)}
        expiring = [
            r["Expiration"]["Days"]
            for r in rules
            if _applies(r, prefix, tags) and "Days" in r.get("Expiration", {})
        ]
        if not expiring:
            status = Status.failed
            detail = f"no rule expires {prefix} objects tagged {TAG_KEY}={days}"
        elif min(expiring) < days:
            status = Status.failed
            detail = f"a rule expires them after {_days(min(expiring))}: before their TTL"
        elif min(expiring) > days:
            status = Status.warning
            detail = f"expired after {_days(min(expiring))}: kept longer than needed"
        else:
            status = Status.passed
            detail = f"expired after {_days(days)} ({prefix}, {TAG_KEY}={days})"
        checks.append(Check(name, status, detail, None if status is Status.passed else fix))
    aborts = any("AbortIncompleteMultipartUpload" in r and _applies(r, prefix, {}) for r in rules)
    checks.append(
        Check("lifecycle: abort incomplete uploads", Status.passed, "a rule aborts them")
        if aborts
        else Check(
            "lifecycle: abort incomplete uploads",
            Status.warning,
            "no rule (the store makes no multipart uploads; other writers might)",
            fix,
        )
    )
    return checks


# -- what the server can do ----------------------------------------------------------------


def _capabilities(client: S3Client, bucket: str, prefix: str, rules: Rules) -> list[Check]:
    """One check per capability, in `CAPABILITIES` order; writes and deletes one object."""
    key = f"{prefix}s3claim-doctor-probe-{uuid.uuid4().hex}"
    try:
        client.put_object(Bucket=bucket, Key=key, Body=_BODY, Tagging=f"{_TAG[0]}={_TAG[1]}")
    except (ClientError, BotoCoreError) as exc:
        detail = f"cannot write a probe object under {prefix}: {_reason(exc)}"
        return [Check(n, Status.skipped, detail) for n in CAPABILITIES]
    probes: list[Callable[[], Found]] = [
        lambda: _ranged_get(client, bucket, key),
        lambda: _tagging(client, bucket, key),
        lambda: _conditional_put(client, bucket, key),
        lambda: _versioning_api(client, bucket, key),
        lambda: _lifecycle_api(rules),
    ]
    try:
        return [_probe(name, probe) for name, probe in zip(CAPABILITIES, probes, strict=True)]
    finally:
        # A leftover 10-byte probe under the prefix is collected like anything else.
        with contextlib.suppress(ClientError, BotoCoreError):
            client.delete_object(Bucket=bucket, Key=key)


def _reason(exc: ClientError | BotoCoreError) -> str:
    return error_code(exc) if isinstance(exc, ClientError) else type(exc).__name__


def _probe(name: str, run: Callable[[], Found]) -> Check:
    try:
        status, detail, fix = run()
    except (ClientError, BotoCoreError) as exc:
        status, detail, fix = Status.warning, f"cannot tell: {_reason(exc)}", None
    return Check(name, status, detail, fix)


def _ranged_get(client: S3Client, bucket: str, key: str) -> Found:
    response = client.get_object(Bucket=bucket, Key=key, Range="bytes=3-5")
    body = response["Body"].read()
    if body == _BODY[3:6]:
        return Status.passed, "bytes=3-5 answered with exactly those bytes", None
    return (
        Status.failed,
        f"bytes=3-5 answered with {len(body)} bytes: every window would be wrong",
        "the store needs HTTP range requests; use another S3-compatible server",
    )


def _tagging(client: S3Client, bucket: str, key: str) -> Found:
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


def _conditional_put(client: S3Client, bucket: str, key: str) -> Found:
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


def _versioning_api(client: S3Client, bucket: str, key: str) -> Found:
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


def _lifecycle_api(rules: Rules) -> Found:
    """From the rules the lifecycle checks read: no second request for them."""
    if not isinstance(rules, ClientError):
        if not rules:
            return Status.passed, "supported (no rules yet: see the lifecycle checks)", None
        return Status.passed, "supported", None
    if error_code(rules) not in UNSUPPORTED:
        raise rules
    return (
        Status.warning,
        f"not offered ({error_code(rules)}): nothing collects expired claims; reads still "
        "refuse them after their TTL",
        "run `s3claim forget` per tenant, or delete objects under the prefix on a schedule",
    )
