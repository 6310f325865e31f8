"""Listing a tenant's claims: handle, size and expiry, read from keys and metadata only.

The store protocol has no listing (put, fetch, forget: nothing else), so this reads the S3
layout directly: `{prefix}{tenant_tag}/{run_tag}/{digest}`, where the handle is `claim:` and
the digest. Sizes and expiry come from each object's metadata (one HEAD per claim); the body,
which is tool content, is never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from s3claim.handles import HANDLE_PREFIX, HandleKey, is_handle
from s3claim.s3 import _format
from s3claim.s3._layout import Layout
from s3claim.scope import Scope

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["ClaimInfo", "list_claims"]


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    handle: str
    run_tag: str
    chars: int
    expires_at: int


def list_claims(
    client: S3Client,
    bucket: str,
    *,
    prefix: str,
    key: HandleKey,
    tenant: str,
    run: str | None = None,
) -> Iterator[ClaimInfo]:
    """Every claim of `tenant` (or of one run), in key order; expired ones included."""
    layout = Layout(prefix, key)
    if run is not None:
        scope = Scope(tenant, run)
        under, depth = layout.run_prefix(scope), 1  # digest
    else:
        under, depth = layout.tenant_prefix(tenant), 2  # run_tag/digest
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=under):
        for item in page.get("Contents", []):
            parts = item["Key"][len(under) :].split("/")
            handle = HANDLE_PREFIX + parts[-1]
            if len(parts) != depth or not is_handle(handle):
                continue  # not a claim: someone else's object under our prefix
            head = client.head_object(Bucket=bucket, Key=item["Key"])
            meta = _format.parse_metadata(head["Metadata"], operation="HeadObject")
            yield ClaimInfo(handle, meta.run_tag, meta.chars, meta.expires_at)
