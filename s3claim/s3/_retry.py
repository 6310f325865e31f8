"""Retries for S3 requests: tenacity owns them, botocore makes exactly one attempt.

Two retry layers would multiply (5 botocore attempts x 5 of ours = 25 requests per call),
so every request goes through `request(...)`, whose retries botocore does not double: the
clients s3claim builds make one attempt per call, and on a client passed in `own_retries`
vetoes botocore's retries for s3claim's requests. Only failures that a later attempt can fix
are retried: server errors, throttling, timeouts, broken connections, and the 409 a
conditional write race answers. Access, bucket and request errors fail at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
)

from s3claim.s3._errors import is_retryable, translated

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["RetryPolicy", "own_retries", "request"]

_T = TypeVar("_T")


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


_OURS: ContextVar[bool] = ContextVar("s3claim_request", default=False)


def own_retries(client: S3Client) -> None:
    """Make botocore stand down from retrying s3claim's requests on `client` (one passed in).

    Each store request is then one HTTP attempt and `request` alone retries, so an outage
    costs at most `RetryPolicy.attempts` requests per operation, not that times botocore's.
    A veto (botocore >= 1.43.3 reads a handler's False as "do not retry") keeps what the
    caller set up on the client, and holds only while s3claim's own request runs: the
    caller's other calls keep their retries. Registered once per client.
    """
    # The stubs type handlers as returning None; botocore reads what they return.
    veto = cast("Callable[..., None]", _veto)
    client.meta.events.register_first("needs-retry.s3", veto, unique_id="s3claim-own-retries")


def _veto(**_: object) -> bool | None:
    return False if _OURS.get() else None


def request(
    operation: str,
    call: Callable[[], _T],
    *,
    policy: RetryPolicy,
    expect: frozenset[str] = frozenset(),
) -> _T:
    """Run one logical request under the retry policy; nothing from botocore escapes.

    An error whose code is in `expect` is raised as `Refused` at once; anything else still
    failing after the policy's retries is a `ClaimStoreError` naming the operation, the
    attempts and the S3 error code (never a message, which can echo the request).
    """
    controller = Retrying(  # per call: controllers carry state
        stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.max_seconds),
        wait=_Backoff(policy.initial_wait, policy.max_wait),
        retry=retry_if_exception(is_retryable),
        reraise=True,
    )
    token = _OURS.set(True)
    try:
        with translated(operation, expect=expect, attempts=partial(_attempts, controller)):
            return controller(call)
    finally:
        _OURS.reset(token)


def _attempts(controller: Retrying) -> object:
    return controller.statistics.get("attempt_number", "?")
