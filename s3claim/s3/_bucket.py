"""What the S3 store and the run journal share: one bucket and how to talk to it.

Both keep objects under the same keyed layout, with the same SSE and lifecycle day classes,
through one client whose retries the shared policy owns; so both are built from the same
settings (`_config.bucket_arguments`) and checked the same way here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import SecretStr

from s3claim.clock import Clock, SystemClock
from s3claim.handles import HandleKey
from s3claim.s3._body import Body, BodyFile, crc32_checksum, signs_payload
from s3claim.s3._config import (
    check_bucket,
    check_day_classes,
    check_prefix,
    check_sse,
    handle_key_of,
    make_client,
)
from s3claim.s3._counting import count_requests
from s3claim.s3._errors import MISSING
from s3claim.s3._layout import Layout
from s3claim.s3._lifecycle import tagging
from s3claim.s3._retry import Refused, RetryPolicy, own_retries, request
from s3claim.scope import Scope

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import HeadObjectOutputTypeDef

__all__ = ["InBucket"]

_T = TypeVar("_T")
_EXISTS = frozenset({"PreconditionFailed"})


class InBucket:
    """The base of the S3 store and the run journal: settings checked at construction."""

    def __init__(
        self,
        bucket: str,
        *,
        handle_key: HandleKey | SecretStr | str | bytes,
        prefix: str = "claims/",
        client: S3Client | None = None,
        clock: Clock | None = None,
        sse: Literal["AES256", "aws:kms"] = "AES256",
        kms_key_id: str | None = None,
        ttl_day_classes: Sequence[int] = (1, 7, 30),
        retry: RetryPolicy | None = None,
    ) -> None:
        self._bucket = check_bucket(bucket)
        self._key = handle_key_of(handle_key)
        self._layout = Layout(check_prefix(prefix), self._key)
        self._classes = check_day_classes(ttl_day_classes)
        self._sse = check_sse(sse, kms_key_id)
        self._clock = clock or SystemClock()
        self._retry = retry or RetryPolicy()
        self._client = client if client is not None else make_client()
        own_retries(self._client)
        count_requests(self._client)
        self._plain_http = signs_payload(self._client)
        config = self._client.meta.config  # the stubs do not know the setting yet
        checksums = getattr(config, "request_checksum_calculation", None)
        # Where botocore would take a CRC32 in a pass of its own before sending (plain HTTP,
        # its default `when_supported`), the caller takes it instead, beside other work.
        self._own_crc32 = self._plain_http and checksums == "when_supported"

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def client(self) -> S3Client:
        """The client every request goes through (its retries stand down for ours)."""
        return self._client

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def retry(self) -> RetryPolicy:
        return self._retry

    @property
    def layout(self) -> Layout:
        """Where each scope's objects live (keyed tags, never names)."""
        return self._layout

    def tenant_tag(self, tenant: str) -> str:
        """The tenant's keyed tag: its prefix in the bucket, its name in telemetry."""
        return self._key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    @property
    def max_ttl_seconds(self) -> int:
        """The longest TTL an object may have: lifecycle deletes after the largest day class."""
        return self._classes[-1] * 86_400

    def _request(
        self, operation: str, call: Callable[[], _T], *, expect: frozenset[str] = frozenset()
    ) -> _T:
        """One logical request under the retry policy (`s3claim.s3._retry.request`)."""
        return request(operation, call, policy=self._retry, expect=expect)

    def _keys(self, prefix: str) -> Iterator[str]:
        """Every key under `prefix`, in key order, page by page (ListObjectsV2)."""
        first_page = partial(self._client.list_objects_v2, Bucket=self._bucket, Prefix=prefix)
        token: str | None = None
        while True:
            page = self._request(
                "ListObjectsV2",
                partial(first_page, ContinuationToken=token) if token else first_page,
            )
            for item in page.get("Contents", []):
                yield item["Key"]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def _head(self, key: str) -> HeadObjectOutputTypeDef | None:
        """The object's HeadObject answer (metadata, ETag), or None when there is none."""
        try:
            return self._request(
                "HeadObject",
                partial(self._client.head_object, Bucket=self._bucket, Key=key),
                expect=MISSING,
            )
        except Refused:
            return None

    def _copy(
        self, source: str, key: str, content_type: str, meta: dict[str, str], days: int
    ) -> bool:
        """One server-side CopyObject with new metadata and tags (a refresh in place, a
        hand-off, an index beside either); False when the source is gone."""

        def call() -> None:
            self._client.copy_object(
                Bucket=self._bucket,
                Key=key,
                CopySource={"Bucket": self._bucket, "Key": source},
                MetadataDirective="REPLACE",
                ContentType=content_type,
                Metadata=meta,
                TaggingDirective="REPLACE",
                Tagging=tagging(days),
                **self._sse,  # type: ignore[arg-type]
            )

        try:
            self._request("CopyObject", call, expect=MISSING)
        except Refused:
            return False
        return True

    def _write(
        self, key: str, body: bytes | bytearray, content_type: str, meta: dict[str, str], days: int
    ) -> None:
        """One unconditional PutObject of an object beside a claim (an index)."""
        self._put(key, body, content_type, meta, days)

    def _put(
        self,
        key: str,
        body: bytes | bytearray,
        content_type: str,
        meta: dict[str, str],
        days: int,
        *,
        exclusive: bool = False,
        checksum: str | None = None,
    ) -> bool:
        """One PutObject, tagged and encrypted as every object of the store is. `exclusive`:
        only where no object is (`If-None-Match: *`); False when one is (412). `checksum`:
        the body's `crc32_checksum`, computed by the caller (botocore then computes none).
        Over plain HTTP the body goes as a `Body` (a copy, when it is not one: an index's
        bytes), else as a file over it (`s3claim.s3._body`)."""
        whole = self._plain_http
        if whole and not isinstance(body, Body):
            body = Body(body)
        extra = dict(self._sse)
        if exclusive:
            extra["IfNoneMatch"] = "*"
        if checksum:
            extra["ChecksumCRC32"] = checksum

        def call() -> None:
            self._client.put_object(
                Bucket=self._bucket,
                Key=key,
                # A file afresh for each attempt: one that failed may have been read part way.
                Body=body if whole else BodyFile(body),  # type: ignore[arg-type]  # stubs: IO
                ContentType=content_type,
                Metadata=meta,
                Tagging=tagging(days),
                **extra,  # type: ignore[arg-type]
            )

        try:
            self._request("PutObject", call, expect=_EXISTS if exclusive else frozenset())
        except Refused:
            return False
        return True

    def _checksum(self, body: bytes | bytearray) -> str | None:
        """The body's CRC32 for `_put`, where the store takes it (see `_own_crc32`); None
        where botocore does (over https, as it streams the body) or none is wanted."""
        return crc32_checksum(body) if self._own_crc32 else None
