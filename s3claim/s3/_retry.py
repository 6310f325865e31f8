"""Retries for S3 requests: tenacity owns them, botocore makes exactly one attempt.

Two retry layers would multiply (5 botocore attempts x 5 of ours = 25 requests per call),
so the client is built with `total_max_attempts=1` and every request goes through
`retrying(policy)`. Only failures that a later attempt can fix are retried: server errors,
throttling, timeouts, broken connections, and the 409 a conditional write race answers.
Access, bucket and request errors fail at once.
"""

from __future__ import annotations

import random

from botocore.exceptions import (
    ChecksumError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    IncompleteReadError,
    ProxyConnectionError,
)
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
)

__all__ = [
    "RetryPolicy",
    "RetryableStoreFault",
    "error_code",
    "http_status",
    "is_retryable",
    "retrying",
]

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


class RetryPolicy(BaseModel):
    """How hard to try before an S3 failure becomes a `ClaimStoreError`.

    Bounded twice, in attempts and in seconds, so a struggling bucket slows a run down
    without hanging it. Waits grow exponentially from `initial_wait`, with jitter so that
    many clients backing off from one `SlowDown` do not return in step.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int = Field(default=5, ge=1, le=100)
    max_seconds: float = Field(default=20.0, gt=0)
    initial_wait: float = Field(default=0.05, ge=0)
    max_wait: float = Field(default=2.0, ge=0)

    @model_validator(mode="after")
    def _waits_ordered(self) -> RetryPolicy:
        if self.max_wait < self.initial_wait:
            raise ValueError(
                f"max_wait ({self.max_wait}) must not be below initial_wait ({self.initial_wait})"
            )
        return self


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


class RetryableStoreFault(Exception):
    """Raised inside a retried call for a fault S3 reported in a 200 (e.g. DeleteObjects Errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, RetryableStoreFault):
        return True
    if isinstance(exc, ClientError):
        return error_code(exc) in _RETRYABLE_CODES or http_status(exc) in _RETRYABLE_STATUS
    return isinstance(exc, _RETRYABLE_TRANSPORT)


class _Backoff:
    """Exponential backoff with "equal jitter": a random wait in [d/2, d], d doubling to a cap.

    Written here rather than taken from `wait_exponential_jitter`, whose `initial` argument
    is deprecated in tenacity 9.2 and whose replacement does not exist before it.
    """

    def __init__(self, initial: float, cap: float) -> None:
        self._initial = initial
        self._cap = cap

    def __call__(self, state: RetryCallState) -> float:
        delay = min(self._cap, self._initial * 2.0 ** (state.attempt_number - 1))
        return delay / 2 + random.uniform(0, delay / 2)  # noqa: S311 - jitter, not secrets


def retrying(policy: RetryPolicy) -> Retrying:
    """A fresh tenacity controller for one logical request (they carry per-call state)."""
    return Retrying(
        stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.max_seconds),
        wait=_Backoff(policy.initial_wait, policy.max_wait),
        retry=retry_if_exception(is_retryable),
        reraise=True,
    )
