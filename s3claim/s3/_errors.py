"""S3's errors, read in one place: what each code means to the store and to whoever runs it.

Every botocore error that reaches s3claim is read here and nowhere else: `error_code` and
`http_status` take it apart, the tables below say what a code means (retry it, expect it,
or which `StoreFailure` it is), and `store_error` turns a failure that outlived its retries
into the `ClaimStoreError` the rest of s3claim sees. `explain` words that error for a person,
naming the fix; the CLI and `s3claim doctor` print it. Like every message in s3claim, these
carry codes, statuses and names, never an S3 error message (which can echo the request).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    BotoCoreError,
    ChecksumError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    PartialCredentialsError,
    ProxyConnectionError,
)

from s3claim.errors import ClaimStoreError, StoreFailure

__all__ = [
    "MISSING",
    "UNSUPPORTED",
    "Refused",
    "RetryableStoreFault",
    "error_code",
    "explain",
    "http_status",
    "is_fixable",
    "is_retryable",
    "store_error",
    "translated",
]

MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
"""No such key (a HEAD answers a bare 404): an answer, where a key may be absent."""
UNSUPPORTED = frozenset({"NotImplemented", "MethodNotAllowed", "501", "405"})
"""How S3-compatible servers refuse an API they lack (Garage: 501; s3rver: 405)."""

_RETRYABLE_STATUS = frozenset({500, 502, 503, 504})
_RETRYABLE_CODES = frozenset(
    {
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "ServiceUnavailable",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "PriorRequestNotComplete",
        "ConditionalRequestConflict",  # 409: a concurrent conditional write; try again
    }
)
# HTTPClientError covers ConnectionClosedError, ReadTimeoutError, ResponseStreamingError and
# the urllib3 protocol errors botocore wraps in it.
_RETRYABLE_TRANSPORT = (
    HTTPClientError,
    EndpointConnectionError,
    ConnectTimeoutError,
    ProxyConnectionError,
    IncompleteReadError,
    ChecksumError,
)

_FAILURES: dict[str, StoreFailure] = {
    "AccessDenied": "access_denied",
    "AllAccessDisabled": "access_denied",
    "Forbidden": "access_denied",
    "403": "access_denied",
    "NoSuchBucket": "no_such_bucket",
    # Unexpected where it happens (a missing key is expected, and never an error): the bucket.
    "NotFound": "no_such_bucket",
    "404": "no_such_bucket",
    "InvalidAccessKeyId": "bad_credentials",
    "SignatureDoesNotMatch": "bad_credentials",
    "ExpiredToken": "bad_credentials",
    "InvalidToken": "bad_credentials",
    "TokenRefreshRequired": "bad_credentials",
    "PermanentRedirect": "wrong_region",
    "AuthorizationHeaderMalformed": "wrong_region",
    "IllegalLocationConstraint": "wrong_region",
}
"""S3 error code -> what it means; a code not listed is `unavailable` (try again later)."""

_EXPLAINED: dict[StoreFailure, str] = {
    "access_denied": "access denied to {bucket} ({code}): check the IAM policy and bucket",
    "no_such_bucket": "{bucket} does not exist (or is in another account): check --bucket",
    "bad_credentials": "the AWS credentials were refused ({code})",
    "no_credentials": (
        "no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    ),
    "wrong_region": "{bucket} is in another region ({code}): set --region",
    "unreachable": "{message}",
    "unavailable": "store unavailable: {message}",
    "damaged": "store unavailable: {message}",
}
_FIXABLE = frozenset(
    {"access_denied", "no_such_bucket", "bad_credentials", "no_credentials", "wrong_region"}
)


class RetryableStoreFault(Exception):
    """Raised inside a retried call for a fault S3 reported in a 200 (e.g. DeleteObjects Errors)."""


def error_code(exc: ClientError) -> str:
    """The S3 error code, or the HTTP status when the response had no body (HEAD)."""
    error = exc.response.get("Error", {})
    code = error.get("Code")
    if code:
        return str(code)
    return str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "Unknown"))


def http_status(exc: ClientError) -> int | None:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, RetryableStoreFault):
        return True
    if isinstance(exc, ClientError):
        return error_code(exc) in _RETRYABLE_CODES or http_status(exc) in _RETRYABLE_STATUS
    return isinstance(exc, _RETRYABLE_TRANSPORT)


def store_error(
    operation: str, exc: ClientError | BotoCoreError | RetryableStoreFault, *, attempts: object
) -> ClaimStoreError:
    """The `ClaimStoreError` for a request that failed for good, classified by the table."""
    done = f"{operation} failed after {attempts} attempt(s)"
    if isinstance(exc, ClientError):
        code, status = error_code(exc), http_status(exc)
        return ClaimStoreError(
            f"{done}: {code} (HTTP {status})",
            reason=_FAILURES.get(code, "unavailable"),
            code=code,
            status=status,
        )
    name = type(exc).__name__
    if isinstance(exc, RetryableStoreFault):
        return ClaimStoreError(f"{done}: {exc}", code=name)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ClaimStoreError(f"{done}: {name}", reason="no_credentials", code=name)
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
        where = exc.kwargs.get("endpoint_url")
        return ClaimStoreError(
            f"cannot reach S3 at {where} ({done}: {name})", reason="unreachable", code=name
        )
    return ClaimStoreError(f"{done}: {name}", code=name)


class Refused(Exception):
    """An answer the caller handles (missing, exists, out of range): not a store failure."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@contextmanager
def translated(
    operation: str,
    *,
    expect: frozenset[str] = frozenset(),
    attempts: Callable[[], object] = lambda: 1,
) -> Iterator[None]:
    """botocore's errors, as ours: a code in `expect` as `Refused`, any other failure as the
    `ClaimStoreError` for `operation` after `attempts()` attempts (one, without retries)."""
    try:
        yield
    except (ClientError, BotoCoreError, RetryableStoreFault) as exc:
        if isinstance(exc, ClientError) and error_code(exc) in expect:
            raise Refused(error_code(exc)) from None
        raise store_error(operation, exc, attempts=attempts()) from exc


def is_fixable(error: ClaimStoreError) -> bool:
    """Whether the person running the store must change something (else: wait, try again)."""
    return error.reason in _FIXABLE


def explain(error: ClaimStoreError, *, bucket: str | None = None) -> str:
    """One line for a person: what failed and, where there is one, the fix."""
    named = f"bucket {bucket!r}" if bucket else "the bucket"
    return _EXPLAINED[error.reason].format(bucket=named, code=error.code, message=error)
