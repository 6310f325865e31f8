"""Bucket administration, for the CLI and for operators: everything that is not the store.

Provisioning a bucket as the Terraform module would (`provision_bucket`), checking one
against what the store needs (`check_bucket`, `s3claim doctor`), the lifecycle rules it must
carry, a configured bucket's client (`Target`) and the store and journal on it, and the one
line that explains a store error to whoever runs it (`explain`).

docs/operations.md has the commands built on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from s3claim.errors import ClaimStoreError
from s3claim.handles import HandleKey
from s3claim.s3._bucket import Bucket
from s3claim.s3._config import check_bucket as check_bucket_name
from s3claim.s3._config import handle_key_of, load_settings, make_client
from s3claim.s3._doctor import Check, Status, check_bucket
from s3claim.s3._errors import explain, is_fixable
from s3claim.s3._journal import S3RunJournal
from s3claim.s3._lifecycle import lifecycle_rules
from s3claim.s3._provision import provision_bucket
from s3claim.s3._rotation import KeyCount, RingCount, count_by_key, keyring_checks
from s3claim.s3._store import S3ClaimCheckStore
from s3claim.s3.settings import S3ClaimSettings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "Check",
    "ClaimStoreError",
    "KeyCount",
    "RingCount",
    "Status",
    "Target",
    "check_bucket",
    "count_by_key",
    "explain",
    "handle_key",
    "is_fixable",
    "keyring_checks",
    "lifecycle_rules",
    "load_settings",
    "make_client",
    "open_bucket",
    "open_journal",
    "open_store",
    "probe",
    "provision_bucket",
]

_BUCKET = "--bucket or S3CLAIM_BUCKET"


@dataclass(frozen=True)
class Target:
    """A configured bucket: its settings and one client for every request to it."""

    settings: S3ClaimSettings
    client: S3Client

    @property
    def bucket(self) -> str:
        return check_bucket_name(self.settings.bucket, name=_BUCKET)

    @classmethod
    def of(cls, settings: S3ClaimSettings) -> Target:
        check_bucket_name(settings.bucket, name=_BUCKET)
        return cls(
            settings, make_client(endpoint_url=settings.endpoint_url, region=settings.region)
        )


def handle_key(settings: S3ClaimSettings) -> HandleKey:
    """The key S3CLAIM_HANDLE_KEY holds (an erasure receipt's is derived from it); a missing
    or short one is refused by that name."""
    return handle_key_of(settings.handle_key, name="S3CLAIM_HANDLE_KEY")


def open_bucket(target: Target) -> Bucket:
    """The bucket as the store uses it; refuses a missing S3CLAIM_HANDLE_KEY by name."""
    return Bucket.from_settings(target.settings, client=target.client, bucket_name=_BUCKET)


def open_store(target: Target) -> S3ClaimCheckStore:
    """The store on this bucket."""
    return S3ClaimCheckStore(open_bucket(target))


def open_journal(target: Target) -> S3RunJournal:
    """The run journal on this bucket, under the store's settings and key."""
    return S3RunJournal(open_bucket(target))


def probe(target: Target) -> None:
    """A `ClaimStoreError` now if the store could not write, read and delete on this bucket."""
    open_bucket(target).probe()
