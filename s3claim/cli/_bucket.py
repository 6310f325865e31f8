"""The bucket the S3 store needs, in one place: the demo builds it, `doctor` compares with it.

It is what the Terraform module in terraform/ writes: SSE by default, every public access
blocked, no versioning, and lifecycle rules that collect claims by their TTL day class (the
store tags each object `s3claim-ttl-days=N`) plus a bucket-wide rule that aborts multipart
uploads left incomplete. The rule IDs are the module's, so the two can be compared by eye.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from s3claim.s3._lifecycle import TAG_KEY

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import (
        LifecycleRuleTypeDef,
        PublicAccessBlockConfigurationTypeDef,
    )

__all__ = [
    "ABORT_MULTIPART_DAYS",
    "ABORT_RULE_ID",
    "PUBLIC_ACCESS_BLOCK",
    "TAG_KEY",
    "lifecycle_rules",
    "provision_bucket",
    "ttl_rule_id",
]

ABORT_RULE_ID = "s3claim-abort-incomplete-multipart-uploads"
ABORT_MULTIPART_DAYS = 1
PUBLIC_ACCESS_BLOCK: PublicAccessBlockConfigurationTypeDef = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}


def ttl_rule_id(days: int) -> str:
    return f"s3claim-ttl-{days}d"


def lifecycle_rules(*, prefix: str, day_classes: Sequence[int]) -> list[LifecycleRuleTypeDef]:
    """One expiration rule per day class, filtered by prefix and tag, and the abort rule.

    The abort rule stands alone with an empty prefix: S3 refuses
    AbortIncompleteMultipartUpload in a rule filtered by tag.
    """
    rules: list[LifecycleRuleTypeDef] = [
        {
            "ID": ttl_rule_id(days),
            "Status": "Enabled",
            "Filter": {"And": {"Prefix": prefix, "Tags": [{"Key": TAG_KEY, "Value": str(days)}]}},
            "Expiration": {"Days": days},
        }
        for days in day_classes
    ]
    rules.append(
        {
            "ID": ABORT_RULE_ID,
            "Status": "Enabled",
            "Filter": {"Prefix": ""},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": ABORT_MULTIPART_DAYS},
        }
    )
    return rules


def provision_bucket(
    client: S3Client,
    bucket: str,
    *,
    prefix: str,
    day_classes: Sequence[int],
    region: str | None = None,
) -> None:
    """Create the bucket as the Terraform module would (for the demo's embedded S3)."""
    if region and region != "us-east-1":
        client.create_bucket(
            Bucket=bucket,
            CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
        )
    else:
        client.create_bucket(Bucket=bucket)
    client.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration=PUBLIC_ACCESS_BLOCK,
    )
    client.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    client.put_bucket_lifecycle_configuration(
        Bucket=bucket,
        LifecycleConfiguration={"Rules": lifecycle_rules(prefix=prefix, day_classes=day_classes)},
    )
