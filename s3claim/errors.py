"""The one exception tree of s3claim.

    ClaimCheckError
    ├── ClaimUnavailableError   the handle cannot be redeemed in this scope (model-actionable)
    ├── ClaimStoreError         the store failed after retries (transient; try again)
    └── ConfigurationError      a developer mistake found at construction (also a ValueError)

No message in this tree ever carries tool content: only sizes, handles and causes.
"""

from __future__ import annotations

__all__ = ["ClaimCheckError", "ClaimStoreError", "ClaimUnavailableError", "ConfigurationError"]

UNAVAILABLE_MESSAGE = "claim unavailable: expired, never stored, or not in this scope"
STORE_UNAVAILABLE_MESSAGE = "the claim store is temporarily unavailable; try again"


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
