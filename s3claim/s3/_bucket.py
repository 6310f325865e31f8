"""`Bucket`: the one value the S3 store, the run journal and the audit trail all hold.

Built once, checked once (`Bucket(...)`, `Bucket.from_settings`): the client (whose retries
the policy owns), the bucket's name, the keyed layout, the retry policy, the encryption and
the lifecycle day classes. Every request any of them makes goes through its methods, under
the policy, tagged and encrypted alike, so their objects follow the same erasure and
lifecycle rules.
"""

from __future__ import annotations

import contextvars
import io
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import IO, TYPE_CHECKING, Literal, TypedDict, TypeVar, cast

from pydantic import SecretStr

from s3claim.handles import HandleKey
from s3claim.s3._config import (
    check_bucket,
    check_day_classes,
    check_prefix,
    check_sse,
    handle_key_of,
    load_settings,
    make_client,
)
from s3claim.s3._counting import count_requests
from s3claim.s3._errors import MISSING, Refused
from s3claim.s3._layout import Layout
from s3claim.s3._lifecycle import tagging
from s3claim.s3._retry import RetryPolicy, own_retries, request
from s3claim.s3.settings import S3ClaimSettings

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import (
        CopyObjectRequestTypeDef,
        HeadObjectOutputTypeDef,
        PutObjectRequestTypeDef,
    )

__all__ = ["Bucket", "BucketOptions"]

_T = TypeVar("_T")
_EXISTS = frozenset({"PreconditionFailed"})
_SIDE_WORKERS = 8


class BucketOptions(TypedDict, total=False):
    """The settings of a `Bucket` besides its name, as the store and the journal take them."""

    handle_key: HandleKey | SecretStr | str | bytes
    prefix: str
    client: S3Client | None
    sse: Literal["AES256", "aws:kms"]
    kms_key_id: str | None
    ttl_day_classes: Sequence[int]
    retry: RetryPolicy | None


class Bucket:
    """One S3 bucket as s3claim uses it; see the module docstring."""

    __slots__ = (
        "_pool",
        "_pool_lock",
        "classes",
        "client",
        "key",
        "layout",
        "layouts",
        "name",
        "retry",
        "sse",
    )

    def __init__(
        self,
        name: str,
        *,
        handle_key: HandleKey | SecretStr | str | bytes | None = None,
        prefix: str = "claims/",
        client: S3Client | None = None,
        sse: Literal["AES256", "aws:kms"] = "AES256",
        kms_key_id: str | None = None,
        ttl_day_classes: Sequence[int] = (1, 7, 30),
        retry: RetryPolicy | None = None,
    ) -> None:
        """The bucket `name`, every setting checked here (a `ConfigurationError` naming it)."""
        self.key = handle_key_of(handle_key)
        self.name = check_bucket(name)
        self.layout = Layout(check_prefix(prefix), self.key)
        self.layouts = (self.layout, *(Layout(self.layout.prefix, k) for k in self.key.ring[1:]))
        """One layout per key of the ring, newest first: where each key's objects are."""
        self.sse = check_sse(sse, kms_key_id)
        self.classes = check_day_classes(ttl_day_classes)
        self.retry = retry or RetryPolicy()
        self.client = client if client is not None else make_client()
        own_retries(self.client)
        count_requests(self.client)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @classmethod
    def given(cls, bucket: str | Bucket, options: BucketOptions) -> Bucket:
        """The bucket a store or a journal is handed: a name and its settings, or a `Bucket`
        already built (whose settings are its own: none may be given beside it)."""
        if isinstance(bucket, str):
            return cls(bucket, **options)
        if options:
            raise TypeError("the settings of a Bucket given whole are its own: pass no others")
        return bucket

    @classmethod
    def from_settings(
        cls,
        settings: S3ClaimSettings | None = None,
        *,
        retry: RetryPolicy | None = None,
        client: S3Client | None = None,
        bucket_name: str = "S3CLAIM_BUCKET",
    ) -> Bucket:
        """The bucket the `S3CLAIM_*` variables (or the settings given) name, each refused by
        its variable's name, here rather than at first use (a missing bucket by
        `bucket_name`). The client is built from the settings unless given."""
        if settings is None:
            settings = load_settings()
        name = check_bucket(settings.bucket, name=bucket_name)
        key = handle_key_of(settings.handle_key, name="S3CLAIM_HANDLE_KEY")
        check_prefix(settings.prefix, name="S3CLAIM_PREFIX")
        check_day_classes(settings.ttl_day_classes, name="S3CLAIM_TTL_DAY_CLASSES")
        check_sse(settings.sse, settings.kms_key_id, names=("S3CLAIM_SSE", "S3CLAIM_KMS_KEY_ID"))
        if client is None:
            client = make_client(endpoint_url=settings.endpoint_url, region=settings.region)
        return cls(
            name,
            handle_key=key,
            prefix=settings.prefix,
            client=client,
            sse=settings.sse,
            kms_key_id=settings.kms_key_id,
            ttl_day_classes=settings.ttl_day_classes,
            retry=retry,
        )

    def layouts_for(self, handle: str) -> tuple[Layout, ...]:
        """The layouts a well-formed handle may be found under, most likely first: the
        newest's alone with one key; else by the key digits of the handle (`makers`)."""
        if len(self.layouts) == 1:
            return self.layouts
        by_key = {id(layout.key): layout for layout in self.layouts}
        return tuple(by_key[id(k)] for k in self.key.makers(handle))

    @property
    def max_ttl_seconds(self) -> int:
        """The longest TTL an object may have: lifecycle deletes after the largest day class."""
        return self.classes[-1] * 86_400

    # -- requests, each under the retry policy ---------------------------------------------

    def request(
        self, operation: str, call: Callable[[], _T], *, expect: frozenset[str] = frozenset()
    ) -> _T:
        """One logical request under the retry policy (`s3claim.s3._retry.request`)."""
        return request(operation, call, policy=self.retry, expect=expect)

    def keys(self, prefix: str) -> Iterator[str]:
        """Every key under `prefix`, in key order, page by page (ListObjectsV2)."""
        first_page = partial(self.client.list_objects_v2, Bucket=self.name, Prefix=prefix)
        token: str | None = None
        while True:
            page = self.request(
                "ListObjectsV2",
                partial(first_page, ContinuationToken=token) if token else first_page,
            )
            for item in page.get("Contents", []):
                yield item["Key"]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def head(self, key: str) -> HeadObjectOutputTypeDef | None:
        """The object's HeadObject answer (metadata, ETag), or None when there is none."""
        try:
            return self.request(
                "HeadObject",
                partial(self.client.head_object, Bucket=self.name, Key=key),
                expect=MISSING,
            )
        except Refused:
            return None

    def put_arguments(
        self,
        key: str,
        body: bytes | bytearray,
        *,
        content_type: str,
        meta: Mapping[str, str],
        days: int,
        if_none_match: bool = False,
        if_match: str | None = None,
    ) -> PutObjectRequestTypeDef:
        """A PutObject's arguments, tagged and encrypted as every object of the bucket is.

        The body goes as a file over the buffer, afresh for each attempt (build them in the
        attempt): botocore reads it in pieces (hashing or checksumming it as the endpoint
        needs), never copying it whole, and its repr (botocore logs a request's parameters at
        DEBUG) shows nothing of it.
        """
        arguments: PutObjectRequestTypeDef = {
            "Bucket": self.name,
            "Key": key,
            "Body": cast("IO[bytes]", _BodyFile(body)),  # a RawIOBase is what botocore reads
            "ContentType": content_type,
            "Metadata": dict(meta),
            "Tagging": tagging(days),
            "ServerSideEncryption": self.sse.algorithm,
        }
        if self.sse.kms_key_id is not None:
            arguments["SSEKMSKeyId"] = self.sse.kms_key_id
        if if_none_match:
            arguments["IfNoneMatch"] = "*"
        if if_match is not None:
            arguments["IfMatch"] = if_match
        return arguments

    def put(
        self,
        key: str,
        body: bytes | bytearray,
        *,
        content_type: str,
        meta: Mapping[str, str],
        days: int,
        exclusive: bool = False,
    ) -> bool:
        """One PutObject (`put_arguments`). `exclusive`: only where no object is
        (`If-None-Match: *`); False when one is (412)."""
        arguments = partial(
            self.put_arguments, key, body, content_type=content_type, meta=meta, days=days
        )
        try:
            self.request(
                "PutObject",
                lambda: self.client.put_object(**arguments(if_none_match=exclusive)),
                expect=_EXISTS if exclusive else frozenset(),
            )
        except Refused:
            return False
        return True

    def probe(self) -> None:
        """Write, read back and delete one small object under the prefix: a `ClaimStoreError`
        now, at start, for a bucket the store could not use (missing, denied, unreachable),
        rather than a claim that fails on a model's turn. Tagged for the shortest day class,
        so lifecycle collects it should the delete fail."""
        key = f"{self.layout.prefix}probe-{secrets.token_hex(8)}"
        self.put(key, b"", content_type="application/octet-stream", meta={}, days=self.classes[0])
        get = partial(self.client.get_object, Bucket=self.name, Key=key)
        self.request("GetObject", lambda: get()["Body"].read())
        self.request("DeleteObject", partial(self.client.delete_object, Bucket=self.name, Key=key))

    def probe_read(self) -> None:
        """One GetObject of a key no object has, under the prefix: a `ClaimStoreError` now
        for a bucket a reader could not use (missing, denied, unreachable), as `probe` but
        writing nothing. A GET, not a HEAD: a HEAD's bare 404 cannot tell a missing bucket
        from a missing key, a GET's error code can."""
        key = f"{self.layout.prefix}probe-{secrets.token_hex(8)}"
        get = partial(self.client.get_object, Bucket=self.name, Key=key)
        try:
            self.request("GetObject", lambda: get()["Body"].close(), expect=MISSING)
        except Refused:
            return

    def copy(
        self, source: str, key: str, *, content_type: str, meta: Mapping[str, str], days: int
    ) -> bool:
        """One server-side CopyObject with new metadata and tags (a refresh in place, a
        hand-off); False when the source is gone."""
        arguments: CopyObjectRequestTypeDef = {
            "Bucket": self.name,
            "Key": key,
            "CopySource": {"Bucket": self.name, "Key": source},
            "MetadataDirective": "REPLACE",
            "ContentType": content_type,
            "Metadata": dict(meta),
            "TaggingDirective": "REPLACE",
            "Tagging": tagging(days),
            "ServerSideEncryption": self.sse.algorithm,
        }
        if self.sse.kms_key_id is not None:
            arguments["SSEKMSKeyId"] = self.sse.kms_key_id
        try:
            self.request(
                "CopyObject", partial(self.client.copy_object, **arguments), expect=MISSING
            )
        except Refused:
            return False
        return True

    def beside(self, function: Callable[[], _T]) -> Future[_T]:
        """`function()` on a worker of this bucket's one pool, in the caller's context (its
        span counts the request): sent while the caller's own is in flight (a claim's index
        beside the claim)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(_SIDE_WORKERS, thread_name_prefix="s3claim")
            return self._pool.submit(contextvars.copy_context().run, function)

    def __repr__(self) -> str:
        return (
            f"Bucket({self.name!r}, prefix={self.layout.prefix!r}, "
            f"sse={self.sse.algorithm!r}, ttl_day_classes={self.classes})"
        )


class _BodyFile(io.RawIOBase):
    """A read-only file over a body: botocore reads it in pieces, never a copy of the whole."""

    def __init__(self, data: bytes | bytearray) -> None:
        super().__init__()
        self._view, self._at = memoryview(data), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: len(self._view)}[whence]
        self._at = min(max(0, base + offset), len(self._view))
        return self._at

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else self._at + size
        piece = bytes(self._view[self._at : end])
        self._at += len(piece)
        return piece

    def readinto(self, buffer: WriteableBuffer) -> int:
        into = memoryview(buffer).cast("B")
        piece = self._view[self._at : self._at + len(into)]
        into[: len(piece)] = piece
        self._at += len(piece)
        return len(piece)

    def __repr__(self) -> str:
        return f"<body of {len(self._view):,} bytes>"
