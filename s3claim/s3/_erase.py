"""Erasure: everything under a prefix goes, every version and every delete marker.

`forget(tenant=...)` is where the right to erasure reaches the bucket, so it must not report
a tenant forgotten while anything of it is left: each round lists versions (ListObjectVersions)
and deletes them in batches of 1,000 (DeleteObjects, S3's limit), retrying the keys a 200
reports in `Errors`, until a listing comes back empty: that last listing is the receipt's
`remaining`, 0. A server without the versioning API (it answers 501 or 405: Garage, s3rver,
R2) can hold no versions, so keys are listed with ListObjectsV2 instead, and the eraser
remembers that it must. Any other failure fails loudly. What goes is counted by kind, by its
key alone (`_layout.kind_of`): an erasure reads no object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from s3claim.errors import ClaimStoreError
from s3claim.s3._bucket import Bucket
from s3claim.s3._errors import UNSUPPORTED, Refused, RetryableStoreFault
from s3claim.s3._layout import Kind, kind_of
from s3claim.s3._retry import request

if TYPE_CHECKING:
    from mypy_boto3_s3.type_defs import ObjectIdentifierTypeDef

__all__ = ["Erased", "Eraser"]

_DELETE_BATCH = 1000  # S3's limit per DeleteObjects; moto accepts more, S3 does not


class Erased:
    """What an erasure removed: distinct keys by kind, and every version and delete marker."""

    __slots__ = ("delete_markers", "keys", "versions")

    def __init__(self) -> None:
        self.keys: Counter[Kind] = Counter()
        self.versions = 0
        self.delete_markers = 0

    @property
    def claims(self) -> int:
        return self.keys["claim"]


class Eraser:
    """Erases prefixes of one bucket; remembers whether its server has the versioning API."""

    def __init__(self, bucket: Bucket) -> None:
        self._in = bucket
        self._versions_api = True  # until the server says it has none

    def erase(
        self, prefixes: Sequence[str], *, progress: Callable[[int], None] | None = None
    ) -> Erased:
        """Delete everything under each of `prefixes`, until a listing of each finds nothing;
        `progress(claims so far)` after each batch. Each round lists from the start again:
        what was deleted is gone from the listing, so no continuation marker is needed."""
        erased = Erased()
        gone: set[tuple[str, str]] = set()
        for prefix in prefixes:
            last_key: str | None = None  # a key's versions are listed together, maybe on two pages
            while True:
                doomed, keys, markers, truncated = self._list_doomed(prefix)
                if not doomed:
                    if truncated:
                        raise ClaimStoreError("listing: truncated page with no entries")
                    break
                ids = {(d["Key"], d.get("VersionId", "")) for d in doomed}
                if ids & gone:  # deleted without error, yet listed again: never loop forever
                    raise ClaimStoreError("DeleteObjects: deleted objects are still listed")
                gone |= ids
                for start in range(0, len(doomed), _DELETE_BATCH):
                    self._delete(doomed[start : start + _DELETE_BATCH])
                for key in keys:
                    if key != last_key:
                        erased.keys[kind_of(key)] += 1
                    last_key = key
                erased.versions += len(keys)
                erased.delete_markers += markers
                if progress is not None:
                    progress(erased.claims)
        return erased

    def _list_doomed(
        self, prefix: str
    ) -> tuple[list[ObjectIdentifierTypeDef], list[str], int, bool]:
        """One page of what must go: (objects to delete, the key of each object version,
        delete markers, truncated).

        Versions and delete markers where the server has the versioning API; where it answers
        501 or 405 there are no versions, so plain keys, and later calls skip the question.
        """
        if self._versions_api:
            try:
                page = request(
                    "ListObjectVersions",
                    lambda: self._in.client.list_object_versions(
                        Bucket=self._in.name, Prefix=prefix, MaxKeys=_DELETE_BATCH
                    ),
                    policy=self._in.retry,
                    expect=UNSUPPORTED,
                )
            except Refused:
                self._versions_api = False
            else:
                versions, markers = page.get("Versions", []), page.get("DeleteMarkers", [])
                doomed: list[ObjectIdentifierTypeDef] = [
                    {"Key": v["Key"], "VersionId": v["VersionId"]} for v in (*versions, *markers)
                ]
                keys = [v["Key"] for v in versions]
                return doomed, keys, len(markers), bool(page.get("IsTruncated"))
        listing = request(
            "ListObjectsV2",
            lambda: self._in.client.list_objects_v2(
                Bucket=self._in.name, Prefix=prefix, MaxKeys=_DELETE_BATCH
            ),
            policy=self._in.retry,
        )
        keys = [item["Key"] for item in listing.get("Contents", [])]
        return [{"Key": k} for k in keys], keys, 0, bool(listing.get("IsTruncated"))

    def _delete(self, batch: list[ObjectIdentifierTypeDef]) -> None:
        """One DeleteObjects; the keys it reports in `Errors` (inside a 200) are retried."""
        pending = batch

        def call() -> None:
            nonlocal pending
            response = self._in.client.delete_objects(
                Bucket=self._in.name, Delete={"Objects": pending, "Quiet": True}
            )
            errors = response.get("Errors", [])
            if not errors:
                return
            failed = {(e.get("Key"), e.get("VersionId")) for e in errors}
            retry = [
                o
                for o in pending
                if (o["Key"], o.get("VersionId")) in failed or (o["Key"], None) in failed
            ]
            pending = retry or pending
            codes = ", ".join(sorted({str(e.get("Code", "Unknown")) for e in errors}))
            raise RetryableStoreFault(f"{len(errors)} versions not deleted ({codes})")

        request("DeleteObjects", call, policy=self._in.retry)
