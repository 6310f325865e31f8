"""Faults, injected deterministically through botocore's `before-send` hook.

A handler that returns an `AWSResponse` replaces the server's answer for that attempt, and one
that raises stands in for a broken connection; returning None lets the request through to moto.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from tenacity import RetryCallState

from s3claim.clock import ManualClock
from s3claim.errors import ClaimStoreError
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.s3._errors import is_retryable
from s3claim.s3._retry import _Backoff
from s3claim.scope import Scope
from tests._s3 import s3_error, s3_response

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
CONTENT = "confidential tool output"


class Injector:
    """Counts attempts of one operation and answers the first `times` of them with `fault`."""

    def __init__(
        self,
        client: Any,
        operation: str,
        fault: Callable[[AWSPreparedRequest], AWSResponse | None],
        times: int,
    ) -> None:
        self.attempts = 0
        self._fault = fault
        self._times = times
        client.meta.events.register(f"before-send.s3.{operation}", self._on_send)

    def _on_send(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        self.attempts += 1
        if self.attempts <= self._times:
            return self._fault(request)
        return None


def answer(status: int, code: str) -> Callable[[AWSPreparedRequest], AWSResponse]:
    return lambda _request: s3_error(status, code)


def raise_(exc: Exception) -> Callable[[AWSPreparedRequest], AWSResponse]:
    def fault(_request: AWSPreparedRequest) -> AWSResponse:
        raise exc

    return fault


@pytest.fixture
def store(s3: Any, bucket: str) -> S3ClaimCheckStore:
    return S3ClaimCheckStore(
        bucket,
        handle_key=HandleKey.generate(),
        client=s3,
        clock=ManualClock(),
        retry=RetryPolicy(attempts=4, initial_wait=0, max_wait=0),
    )


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (503, "SlowDown"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
        (400, "RequestTimeout"),
        (400, "ThrottlingException"),
        (502, "BadGateway"),
        (409, "ConditionalRequestConflict"),
    ],
)
def test_transient_put_failures_are_retried(
    store: S3ClaimCheckStore, s3: Any, status: int, code: str
) -> None:
    injected = Injector(s3, "PutObject", answer(status, code), times=2)
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert injected.attempts == 3
    assert store.fetch(SCOPE, handle).text == CONTENT


def test_transient_get_failures_are_retried(store: S3ClaimCheckStore, s3: Any) -> None:
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    injected = Injector(s3, "GetObject", answer(503, "SlowDown"), times=2)
    assert store.fetch(SCOPE, handle, offset=3, limit=5).text == CONTENT[3:8]
    assert injected.attempts == 3


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionClosedError(endpoint_url="http://injected"),
        EndpointConnectionError(endpoint_url="http://injected"),
        ReadTimeoutError(endpoint_url="http://injected"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_connection_errors_are_retried(store: S3ClaimCheckStore, s3: Any, exc: Exception) -> None:
    injected = Injector(s3, "PutObject", raise_(exc), times=1)
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert injected.attempts == 2
    fetched = Injector(s3, "GetObject", raise_(exc), times=2)
    assert store.fetch(SCOPE, handle).text == CONTENT
    assert fetched.attempts == 3


def test_persistent_failure_stops_at_the_attempt_limit(store: S3ClaimCheckStore, s3: Any) -> None:
    injected = Injector(s3, "PutObject", answer(503, "SlowDown"), times=100)
    with pytest.raises(ClaimStoreError) as failed:
        store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert injected.attempts == 4
    assert str(failed.value) == "PutObject failed after 4 attempt(s): SlowDown (HTTP 503)"
    assert not isinstance(failed.value, ClientError)


def test_persistent_connection_failure_is_a_store_error(store: S3ClaimCheckStore, s3: Any) -> None:
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    injected = Injector(
        s3, "GetObject", raise_(EndpointConnectionError(endpoint_url="http://x")), times=100
    )
    with pytest.raises(ClaimStoreError, match=r"GetObject failed after 4 attempt\(s\)") as failed:
        store.fetch(SCOPE, handle)
    assert "EndpointConnectionError" in str(failed.value)
    assert CONTENT not in str(failed.value)
    assert injected.attempts == 4


def test_retries_stop_at_the_time_limit(s3: Any) -> None:
    bucket = f"faults-{uuid.uuid4().hex}"
    s3.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(
        bucket,
        handle_key=HandleKey.generate(),
        client=s3,
        retry=RetryPolicy(attempts=100, max_seconds=0.05, initial_wait=0.01, max_wait=0.01),
    )
    injected = Injector(s3, "PutObject", answer(503, "SlowDown"), times=1000)
    with pytest.raises(ClaimStoreError, match="SlowDown"):
        store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert 1 < injected.attempts < 100


@pytest.mark.parametrize(
    ("status", "code"),
    [(403, "AccessDenied"), (404, "NoSuchBucket"), (400, "InvalidArgument"), (400, "KMS.NotFound")],
)
def test_client_errors_are_not_retried(
    store: S3ClaimCheckStore, s3: Any, status: int, code: str
) -> None:
    injected = Injector(s3, "PutObject", answer(status, code), times=100)
    with pytest.raises(ClaimStoreError) as failed:
        store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert injected.attempts == 1
    assert str(failed.value) == f"PutObject failed after 1 attempt(s): {code} (HTTP {status})"


def test_access_denied_on_fetch_is_a_store_error_not_unavailable(
    store: S3ClaimCheckStore, s3: Any
) -> None:
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    Injector(s3, "GetObject", answer(403, "AccessDenied"), times=1)
    with pytest.raises(ClaimStoreError, match="AccessDenied"):
        store.fetch(SCOPE, handle)


def test_a_retried_put_that_had_landed_refreshes_instead(store: S3ClaimCheckStore, s3: Any) -> None:
    """The connection drops after S3 stored the object: the retry's 412 means it is there."""
    landed = {"sent": 0}

    def after_put(**_: Any) -> None:
        landed["sent"] += 1
        if landed["sent"] == 1:
            raise ConnectionClosedError(endpoint_url="http://injected")

    s3.meta.events.register("needs-retry.s3.PutObject", after_put)
    copies = Injector(s3, "CopyObject", answer(200, "unused"), times=0)
    handle = store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    assert landed["sent"] == 2
    assert copies.attempts == 1
    assert store.fetch(SCOPE, handle).text == CONTENT


def _delete_errors(code: str) -> Callable[[AWSPreparedRequest], AWSResponse]:
    """Answer DeleteObjects with 200 and an Error entry for every object it asked to delete."""

    def fault(request: AWSPreparedRequest) -> AWSResponse:
        body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
        pairs = re.findall(rb"<Key>(.*?)</Key><VersionId>(.*?)</VersionId>", body)
        errors = "".join(
            f"<Error><Key>{k.decode()}</Key><VersionId>{v.decode()}</VersionId>"
            f"<Code>{code}</Code><Message>injected</Message></Error>"
            for k, v in pairs
        )
        xml = f'<?xml version="1.0" encoding="UTF-8"?><DeleteResult>{errors}</DeleteResult>'
        return s3_response(200, xml.encode())

    return fault


def test_delete_errors_inside_a_200_are_retried(store: S3ClaimCheckStore, s3: Any) -> None:
    for i in range(5):
        store.put(SCOPE, f"{CONTENT} {i}", ttl_seconds=TTL)
    injected = Injector(s3, "DeleteObjects", _delete_errors("InternalError"), times=1)
    assert store.forget(tenant=SCOPE.tenant) == 5
    assert injected.attempts == 2
    assert store.forget(tenant=SCOPE.tenant) == 0


def test_delete_errors_that_persist_are_a_store_error(store: S3ClaimCheckStore, s3: Any) -> None:
    store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    injected = Injector(s3, "DeleteObjects", _delete_errors("InternalError"), times=100)
    with pytest.raises(ClaimStoreError, match=r"DeleteObjects failed after 4 .*InternalError"):
        store.forget(tenant=SCOPE.tenant)
    assert injected.attempts == 4


def test_a_delete_that_reports_success_but_deletes_nothing_cannot_loop_forever(
    store: S3ClaimCheckStore, s3: Any
) -> None:
    page = (
        b'<?xml version="1.0" encoding="UTF-8"?><ListVersionsResult>'
        b"<IsTruncated>true</IsTruncated><Version><Key>claims/t/r/k</Key>"
        b"<VersionId>v1</VersionId><IsLatest>true</IsLatest></Version></ListVersionsResult>"
    )
    listed = Injector(s3, "ListObjectVersions", lambda _r: s3_response(200, page), 100)
    silent = Injector(s3, "DeleteObjects", lambda _r: s3_response(200, b"<DeleteResult/>"), 100)
    with pytest.raises(ClaimStoreError, match="deleted objects are still listed"):
        store.forget(tenant=SCOPE.tenant)
    assert (listed.attempts, silent.attempts) == (2, 1)


def test_backoff_grows_with_jitter_and_stays_under_its_cap() -> None:
    backoff = _Backoff(initial=0.05, cap=2.0)
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    for attempt, ceiling in [(1, 0.05), (2, 0.1), (3, 0.2), (6, 1.6), (7, 2.0), (30, 2.0)]:
        state.attempt_number = attempt
        waits = [backoff(state) for _ in range(50)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 1


def test_what_is_retryable() -> None:
    def client_error(status: int, code: str) -> ClientError:
        response: Any = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
        return ClientError(response, "PutObject")

    assert is_retryable(client_error(503, "SlowDown"))
    assert is_retryable(client_error(504, "GatewayTimeout"))
    assert is_retryable(client_error(409, "ConditionalRequestConflict"))
    assert not is_retryable(client_error(409, "BucketAlreadyExists"))
    assert not is_retryable(client_error(412, "PreconditionFailed"))
    assert not is_retryable(client_error(403, "AccessDenied"))
    assert not is_retryable(ValueError("not a transport fault"))


def test_a_claim_that_exists_and_vanishes_forever_is_a_store_error(
    store: S3ClaimCheckStore, s3: Any
) -> None:
    puts = Injector(s3, "PutObject", answer(412, "PreconditionFailed"), times=100)
    heads = Injector(s3, "HeadObject", lambda _r: None, times=0)
    copies = Injector(s3, "CopyObject", answer(404, "NoSuchKey"), times=100)
    with pytest.raises(ClaimStoreError, match="vanished"):
        store.put(SCOPE, CONTENT, ttl_seconds=TTL)
    # there (412), gone by the HEAD that reads what a refresh keeps (so no copy), there again
    assert (puts.attempts, heads.attempts, copies.attempts) == (2, 1, 0)


def test_a_claim_deleted_between_416_and_head_is_unavailable(
    store: S3ClaimCheckStore, s3: Any
) -> None:
    from s3claim.errors import ClaimUnavailableError

    Injector(s3, "GetObject", answer(416, "InvalidRange"), times=1)
    with pytest.raises(ClaimUnavailableError):
        store.fetch(SCOPE, "claim:1" + "0" * 32, offset=10)


def test_an_empty_truncated_listing_is_a_store_error(store: S3ClaimCheckStore, s3: Any) -> None:
    xml = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b"<ListVersionsResult><IsTruncated>true</IsTruncated></ListVersionsResult>"
    )
    Injector(s3, "ListObjectVersions", lambda _r: s3_response(200, xml), 1)
    with pytest.raises(ClaimStoreError, match="truncated page"):
        store.forget(tenant=SCOPE.tenant)
