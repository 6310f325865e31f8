"""What the S3 store and the run journal share: one bucket and how to talk to it.

Both keep objects under the same keyed layout, with the same SSE and lifecycle day classes,
through one client whose retries the shared policy owns; so both are built from the same
settings (`_config.bucket_arguments`) and checked the same way here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import SecretStr

from s3claim.clock import Clock, SystemClock
from s3claim.handles import HandleKey
from s3claim.s3._config import (
    check_bucket,
    check_day_classes,
    check_prefix,
    check_sse,
    handle_key_of,
    make_client,
)
from s3claim.s3._layout import Layout
from s3claim.s3._retry import RetryPolicy, own_retries, request

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["InBucket"]

_T = TypeVar("_T")


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

    @property
    def max_ttl_seconds(self) -> int:
        """The longest TTL an object may have: lifecycle deletes after the largest day class."""
        return self._classes[-1] * 86_400

    def _request(
        self, operation: str, call: Callable[[], _T], *, expect: frozenset[str] = frozenset()
    ) -> _T:
        """One logical request under the retry policy (`s3claim.s3._retry.request`)."""
        return request(operation, call, policy=self._retry, expect=expect)
