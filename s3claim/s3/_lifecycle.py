"""The lifecycle tag: which garbage-collection class a claim's object belongs to.

Lifecycle expiration counts whole days from an object's creation and runs about once a day, so
it cannot be the TTL (that is enforced on every read, to the second). It is only the collector,
and it must never collect early: an object is tagged with the smallest configured day class N
with ceil(ttl / 86400) <= N, and a TTL longer than the largest class is refused. The bucket's
lifecycle rules (the Terraform module) expire objects tagged `s3claim-ttl-days=N` after N days.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_s3.type_defs import LifecycleRuleTypeDef

__all__ = [
    "ABORT_MULTIPART_DAYS",
    "TAG_KEY",
    "day_class",
    "lifecycle_rules",
    "tagging",
]

TAG_KEY = "s3claim-ttl-days"
ABORT_RULE_ID = "s3claim-abort-incomplete-multipart-uploads"
ABORT_MULTIPART_DAYS = 1
_DAY = 86_400


def day_class(ttl_seconds: int, classes: Sequence[int]) -> int:
    days = -(-ttl_seconds // _DAY)
    for n in classes:
        if days <= n:
            return n
    raise ValueError(
        f"ttl_seconds={ttl_seconds} needs {days} days but the longest lifecycle class is "
        f"{classes[-1]} days: lifecycle would delete the claim before it expires"
    )


def tagging(days: int) -> str:
    return f"{TAG_KEY}={days}"


def lifecycle_rules(*, prefix: str, day_classes: Sequence[int]) -> list[LifecycleRuleTypeDef]:
    """The bucket's rules: one expiration per day class (prefix AND tag), and the abort rule.

    The abort rule stands alone with an empty prefix: S3 refuses
    AbortIncompleteMultipartUpload in a rule filtered by tag.
    """
    rules: list[LifecycleRuleTypeDef] = [
        {
            "ID": f"s3claim-ttl-{days}d",  # as the Terraform module names it
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
