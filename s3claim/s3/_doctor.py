"""`s3claim doctor`'s checks: does this bucket give the store what it relies on?

Each check reads one bucket setting and compares it with what `_provision` (the Terraform
module's shape) writes: reachable, encrypted by default, public access blocked, versioning
off or its old versions collected, and a lifecycle rule collecting each TTL day class no
sooner than the TTLs it holds. A failure comes with the fix. A setting the server has no API
for is a warning that says so. Then `_capabilities` probes what the server itself can do,
with one small object of its own; no claim is ever read. The CLI renders the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from s3claim.s3._capabilities import CAPABILITIES, probe_capabilities
from s3claim.s3._check import Check, Status
from s3claim.s3._errors import UNSUPPORTED, error_code, explain, store_error, translated
from s3claim.s3._lifecycle import TAG_KEY
from s3claim.s3._provision import PUBLIC_ACCESS_BLOCK

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["check_bucket"]

TERRAFORM = "or apply the Terraform module in terraform/, which sets it"


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
        return Check("reachable", Status.failed, explain(error, bucket=bucket))
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


def _rules(client: S3Client, bucket: str) -> list[Mapping[str, Any]] | ClientError:
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


def _versioning(
    client: S3Client, bucket: str, prefix: str, rules: list[Mapping[str, Any]] | ClientError
) -> Check:
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


def _lifecycle(
    rules: list[Mapping[str, Any]] | ClientError, prefix: str, day_classes: Sequence[int]
) -> list[Check]:
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
            detail = f"no rule expires {prefix} objects tagged {TAG_KEY}={days}"
            checks.append(Check(name, Status.failed, detail, fix))
        elif min(expiring) < days:
            detail = f"a rule expires them after {_days(min(expiring))}: before their TTL"
            checks.append(Check(name, Status.failed, detail, fix))
        elif min(expiring) > days:
            detail = f"expired after {_days(min(expiring))}: kept longer than needed"
            checks.append(Check(name, Status.warning, detail, fix))
        else:
            detail = f"expired after {_days(days)} ({prefix}, {TAG_KEY}={days})"
            checks.append(Check(name, Status.passed, detail))
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
            *probe_capabilities(client, bucket, prefix=prefix),
        ]
