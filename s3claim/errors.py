"""The one exception tree of s3claim.

    ClaimCheckError
    ├── ClaimUnavailableError   the handle cannot be redeemed in this scope (model-actionable)
    ├── ClaimStoreError         the store failed after retries (transient; try again), or
    │                           holds an object it cannot read (a damaged run journal)
    ├── ConfigurationError      a developer mistake found at construction (also a ValueError)
    ├── RunConflictError        another writer owns the run (or its run id is taken)
    └── RunNotFoundError        no run to resume in this tenant (also a LookupError)

No message in this tree ever carries tool content: only sizes, handles, tags and causes.
"""

from __future__ import annotations

__all__ = [
    "ClaimCheckError",
    "ClaimStoreError",
    "ClaimUnavailableError",
    "ConfigurationError",
    "RunConflictError",
    "RunNotFoundError",
]

UNAVAILABLE_MESSAGE = "claim unavailable: expired, never stored, or not in this scope"
STORE_UNAVAILABLE_MESSAGE = "the claim store is temporarily unavailable; try again"
RUN_NOT_FOUND_MESSAGE = "run not found: never recorded, expired, forgotten, or not this tenant's"


class ClaimCheckError(Exception):
    """Root of every error s3claim raises on purpose."""


class ClaimUnavailableError(ClaimCheckError):
    """A handle that cannot be redeemed.

    Out of scope, expired, never stored and malformed all raise this with one message:
    telling them apart would reveal which handles other runs hold.
    """

    def __init__(self) -> None:
        super().__init__(UNAVAILABLE_MESSAGE)


class ClaimStoreError(ClaimCheckError):
    """The store could not complete an operation (after its retries)."""


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
