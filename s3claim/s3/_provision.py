"""The bucket the demo provisions: what the Terraform module in terraform/ writes.

SSE by default, every public access blocked, no versioning, and the store's lifecycle rules
(`s3claim.s3._lifecycle.lifecycle_rules`, which `doctor` compares against too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from s3claim.s3._errors import translated
from s3claim.s3._lifecycle import lifecycle_rules

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import PublicAccessBlockConfigurationTypeDef

__all__ = ["PUBLIC_ACCESS_BLOCK", "provision_bucket"]

PUBLIC_ACCESS_BLOCK: PublicAccessBlockConfigurationTypeDef = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}


def provision_bucket(
    client: S3Client,
    bucket: str,
    *,
    prefix: str,
    day_classes: Sequence[int],
    region: str | None = None,
) -> None:
    """Create the bucket as the Terraform module would (for the demo's embedded S3)."""
    with translated("provisioning"):
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
            LifecycleConfiguration={
                "Rules": lifecycle_rules(prefix=prefix, day_classes=day_classes)
            },
        )
