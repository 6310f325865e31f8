"""Exit codes, and the one-line explanation of every failure a user can cause or fix.

    0  ok
    1  a check failed (doctor), a claim is unavailable (fetch), or the user declined (forget)
    2  usage or configuration: no bucket, no handle key, no credentials, access denied,
       no such bucket, a bad option (typer's own usage errors are 2 as well)
    3  unavailable: the store or the model server could not be reached or kept failing

A configuration problem is the user's to fix and a traceback would only bury the cause, so
these print one line on stderr and exit; anything else is a bug and keeps its traceback.
No line ever carries tool content: the exceptions it comes from do not.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

import typer
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
)
from pydantic import ValidationError

from s3claim.errors import (
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
)
from s3claim.openai_compat import ProviderError
from s3claim.tools import describe_validation_error

__all__ = ["CliError", "Exit", "Handled", "describe", "fail", "handled"]


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    CONFIGURATION = 2
    UNAVAILABLE = 3


class CliError(Exception):
    """A failure to report in one line, with the exit code that classifies it."""

    def __init__(self, message: str, code: Exit = Exit.CONFIGURATION) -> None:
        super().__init__(message)
        self.code = code


_DENIED = frozenset({"AccessDenied", "AllAccessDisabled", "403", "Forbidden"})
_BAD_CREDENTIALS = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)


def _client_error(exc: ClientError, bucket: str | None) -> CliError:
    code = str(exc.response.get("Error", {}).get("Code") or "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = code or str(status or "Unknown")
    named = f"bucket {bucket!r}" if bucket else "the bucket"
    if code in _DENIED:
        return CliError(f"access denied to {named} ({code}): check the IAM policy and bucket")
    if code in {"NoSuchBucket", "404", "NotFound"}:
        return CliError(f"{named} does not exist (or is in another account): check --bucket")
    if code in _BAD_CREDENTIALS:
        return CliError(f"the AWS credentials were refused ({code})")
    if code in {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraint"}:
        return CliError(f"{named} is in another region ({code}): set --region")
    return CliError(f"S3 refused the request: {code} (HTTP {status})", Exit.UNAVAILABLE)


def _botocore_error(exc: BotoCoreError) -> CliError:
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return CliError(
            "no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY"
        )
    if isinstance(exc, ProfileNotFound):
        return CliError(f"AWS profile not found: {exc.kwargs.get('profile')!r}")
    if isinstance(exc, NoRegionError):
        return CliError("no AWS region: set --region or AWS_REGION")
    if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
        return CliError(f"cannot reach S3 at {exc.kwargs.get('endpoint_url')}", Exit.UNAVAILABLE)
    return CliError(f"S3 request failed: {type(exc).__name__}", Exit.UNAVAILABLE)


def describe(exc: BaseException, *, bucket: str | None = None) -> CliError | None:
    """The one-line report for an exception a user can fix or wait out; None for a bug."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, ConfigurationError):
        return CliError(str(exc))
    if isinstance(exc, ValidationError):  # e.g. a tenant or run name out of bounds
        return CliError(f"invalid input: {describe_validation_error(exc)}")
    if isinstance(exc, ClaimUnavailableError):
        return CliError(str(exc), Exit.FAILED)
    if isinstance(exc, ProviderError):
        return CliError(f"model server: {exc}", Exit.UNAVAILABLE)
    if isinstance(exc, ClaimStoreError):
        # The store raises from the botocore error; the cause names what the user can fix.
        cause = exc.__cause__
        if isinstance(cause, ClientError | BotoCoreError):
            explained = describe(cause, bucket=bucket)
            # Configuration and transport causes ("cannot reach S3 at ...") say more than
            # the retry count does; a server error after retries is best told as the store's.
            if explained is not None and (
                explained.code == Exit.CONFIGURATION or isinstance(cause, BotoCoreError)
            ):
                return explained
        return CliError(f"store unavailable: {exc}", Exit.UNAVAILABLE)
    if isinstance(exc, ClientError):
        return _client_error(exc, bucket)
    if isinstance(exc, BotoCoreError):
        return _botocore_error(exc)
    return None


def fail(error: CliError) -> typer.Exit:
    """Print the error's line on stderr; return the Exit to raise."""
    print(f"s3claim: error: {error}", file=sys.stderr)
    return typer.Exit(int(error.code))


class Handled:
    """What a failure report may name; a command sets `bucket` once it knows it."""

    bucket: str | None = None


@contextmanager
def handled() -> Iterator[Handled]:
    """Turn the failures `describe` knows into one line and an exit code."""
    context = Handled()
    try:
        yield context
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        error = describe(exc, bucket=context.bucket)
        if error is None:
            raise
        raise fail(error) from None
