"""Every exception s3claim raises on purpose, in one tree.

    S3ClaimError                  the root: catch it to catch everything below
    ├── ClaimCheckError           a claim, its store or a run could not do what was asked
    │   ├── ClaimUnavailableError   the handle cannot be redeemed in this scope (one message)
    │   ├── ClaimStoreError         the store failed after its retries, or holds an object it
    │   │                           cannot read; `code`, `status` and `reason` say which
    │   ├── ConfigurationError      a developer mistake found at construction (a ValueError)
    │   ├── RunConflictError        another writer owns the run (or its run id is taken)
    │   └── RunNotFoundError        no run to resume in this tenant (a LookupError; one message)
    ├── ToolError                 a failure the model can act on: it becomes the tool's result
    ├── ProviderError             the model server could not be reached or answered nonsense
    └── UpstreamError             the MCP server behind `s3claim mcp-proxy` could not answer

Model-actionable failures (`ToolError`, and `ClaimUnavailableError` once a claim tool has
turned it into a `claim_unavailable` refusal) are read by the model; the rest are raised to
the developer. No message in this tree ever carries tool content: only sizes, handles, tags,
error codes and the names of causes.

docs/operations.md ("Exit codes") says what each means on the command line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

from s3claim.wording import RUN_NOT_FOUND_MESSAGE, UNAVAILABLE_MESSAGE

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic import ValidationError

__all__ = [
    "ClaimCheckError",
    "ClaimStoreError",
    "ClaimUnavailableError",
    "ConfigurationError",
    "ProviderError",
    "RunConflictError",
    "RunNotFoundError",
    "S3ClaimError",
    "StoreFailure",
    "ToolError",
    "UpstreamError",
]

StoreFailure = Literal[
    "unavailable",  # server errors, throttling, timeouts: worth trying again later
    "unreachable",  # no connection to the endpoint at all
    "access_denied",
    "no_such_bucket",
    "bad_credentials",  # credentials were sent and refused
    "no_credentials",  # none were found to send
    "wrong_region",
    "damaged",  # the object is there but is not what s3claim wrote
]
"""What a `ClaimStoreError` means for whoever runs the store; `s3claim.s3` maps every S3
error code to one of these in a single table."""


class S3ClaimError(Exception):
    """Root of every exception s3claim raises on purpose."""


class ClaimCheckError(S3ClaimError):
    """A claim, its store or a run could not do what was asked."""


class ClaimUnavailableError(ClaimCheckError):
    """A handle that cannot be redeemed.

    Out of scope, expired, never stored and malformed all raise this with one message:
    telling them apart would reveal which handles other runs hold.
    """

    def __init__(self) -> None:
        super().__init__(UNAVAILABLE_MESSAGE)


class ClaimStoreError(ClaimCheckError):
    """The store could not complete an operation (after its retries).

    `reason` classifies the failure for whoever runs the store (see `StoreFailure`); `code`
    is the store's own error code (an S3 error code, or the transport error's name) and
    `status` the HTTP status, when there were any.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: StoreFailure = "unavailable",
        code: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.reason: StoreFailure = reason
        self.code = code
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether trying again later may succeed: a fault of the service or the network,
        not of the configuration (access, bucket, credentials, region) or of the object."""
        return self.reason in ("unavailable", "unreachable")


class ConfigurationError(ClaimCheckError, ValueError):
    """A store, runner or setting that cannot work as configured."""


class RunConflictError(ClaimCheckError):
    """Another writer holds the run: it recorded a step since this one loaded it, or the run id
    was already taken when `run` started. The loser stops before it calls the model again."""


class RunNotFoundError(ClaimCheckError, LookupError):
    """No run to resume.

    Never recorded, expired, forgotten and another tenant's all raise this with one message,
    for the reason `ClaimUnavailableError` has one: telling them apart would reveal which
    runs other tenants hold.
    """

    def __init__(self) -> None:
        super().__init__(RUN_NOT_FOUND_MESSAGE)


class ToolError(S3ClaimError):
    """A failure the model can act on: it becomes the tool's result, not a crash.

    `code` is a short identifier (`invalid_arguments`, `claim_unavailable`, ...); `render`
    is what the model reads. A message may quote the model's or a tool's text, so hosts
    neutralise it like a result (`s3claim.hosting.refusal_text`); `own_words=True` marks
    s3claim's fixed wording, shown as it is: it names the claim tools, which the
    neutraliser would rewrite into names no tool has.
    """

    def __init__(self, code: str, message: str, *, own_words: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.own_words = own_words

    def render(self) -> str:
        return json.dumps({"error": self.code, "message": self.message}, ensure_ascii=False)


class ProviderError(S3ClaimError):
    """The model server could not be reached, refused the request, or answered nonsense.

    Not a `ClaimCheckError`: nothing about a claim went wrong. `status` is the HTTP status
    when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class UpstreamError(S3ClaimError):
    """The MCP upstream could not answer.

    `code` is `upstream_unavailable` (it could not be started or reached, or closed the
    connection), `upstream_timeout` (no answer within the timeout) or
    `upstream_invalid_result` (it answered, but broke the protocol).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def describe_validation_error(
    error: ValidationError, *, where: Callable[[tuple[int | str, ...]], str] | None = None
) -> str:
    """What was wrong, by field name and reason only: the input could be anything (tool
    content, a secret), so it is left out. A reason about the whole input is said alone.
    `where` names a location (by default its parts joined by dots), e.g. by the source the
    value came from."""
    parts = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        loc = tuple(item["loc"])
        where_ = where(loc) if where is not None else ".".join(str(part) for part in loc)
        parts.append(f"{where_}: {item['msg']}" if where_ else item["msg"])
    return "; ".join(parts)
