"""Exit codes, and the one-line report of every failure a user can fix or wait out.

A configuration problem is the user's to fix and a traceback would only bury the cause, so
it is one line on stderr and an exit code; anything else is a bug and keeps its traceback.
A store error is worded by the S3 family's one table (`s3claim.s3.admin.explain`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

import typer
from pydantic import ValidationError

import s3claim.wording as wording
from s3claim.errors import (
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
    ProviderError,
    describe_validation_error,
)
from s3claim.extras import MissingExtraError
from s3claim.s3.admin import Target, explain, is_fixable, load_settings
from s3claim.store import (
    AddressError,
    MatchTooLongError,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PatternError,
    PatternTooCostlyError,
    SearchBusyError,
)

__all__ = ["CliError", "Exit", "Handled", "describe", "fail", "handled"]


_KEY = "S3CLAIM_HANDLE_KEY: handles and tenant prefixes are keyed by it"


class Exit(IntEnum):
    """As the commands' epilog says: typer's own usage errors are 2 as well."""

    OK = 0
    FAILED = 1
    CONFIGURATION = 2
    UNAVAILABLE = 3


class CliError(Exception):
    """A failure to report in one line, with the exit code that classifies it."""

    def __init__(self, message: str, code: Exit = Exit.CONFIGURATION) -> None:
        super().__init__(message)
        self.code = code


def describe(exc: BaseException, *, bucket: str | None = None) -> CliError | None:
    """The one-line report for an exception a user can fix or wait out; None for a bug."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, ConfigurationError | MissingExtraError):
        return CliError(str(exc))
    if isinstance(exc, ValidationError):  # e.g. a tenant or run name out of bounds
        return CliError(f"invalid input: {describe_validation_error(exc)}")
    if isinstance(exc, ClaimUnavailableError) or _damaged(exc):
        # A damaged claim is the one refusal, as at every door; the key is the operator's
        # hint, which the model never gets.
        return CliError(
            f"{ClaimUnavailableError()} (or checked in under another {_KEY})", Exit.FAILED
        )
    if (reading := _reading(exc)) is not None:
        return reading
    if isinstance(exc, ProviderError):
        return CliError(f"model server: {exc}", Exit.UNAVAILABLE)
    if isinstance(exc, ClaimStoreError):
        code = Exit.CONFIGURATION if is_fixable(exc) else Exit.UNAVAILABLE
        return CliError(explain(exc, bucket=bucket), code)
    return None


def _damaged(exc: BaseException) -> bool:
    return isinstance(exc, ClaimStoreError) and exc.reason == "damaged"


def _reading(exc: BaseException) -> CliError | None:
    """A read or search this claim cannot serve as asked, in the words every door uses."""
    if isinstance(exc, AddressError | PathError):
        return CliError(exc.message)
    if isinstance(exc, PatternError):
        return CliError(str(exc))
    if isinstance(exc, NoLineIndexError):
        return CliError(wording.NO_LINE_INDEX_MESSAGE)
    if isinstance(exc, NoIndexError):
        return CliError(wording.NOT_JSON_MESSAGE)
    if isinstance(exc, MatchTooLongError):
        return CliError(wording.match_too_long_message(chars=exc.chars))
    if isinstance(exc, PatternTooCostlyError):
        return CliError(
            wording.pattern_too_costly_message(
                seconds=exc.seconds, matches=exc.matches, backtracked=exc.backtracked
            )
        )
    if isinstance(exc, SearchBusyError):
        return CliError(wording.SEARCH_BUSY_MESSAGE, Exit.UNAVAILABLE)
    return None


def fail(error: CliError) -> typer.Exit:
    """Print the error's line on stderr; return the Exit to raise."""
    print(f"s3claim: error: {error}", file=sys.stderr)
    return typer.Exit(int(error.code))


class Handled:
    """What a failure report may name: the bucket, once a command knows it."""

    bucket: str | None = None

    def target(
        self, bucket: str | None, endpoint_url: str | None, prefix: str | None, region: str | None
    ) -> Target:
        """The bucket the options name, over `S3CLAIM_*`."""
        settings = load_settings(
            bucket=bucket, endpoint_url=endpoint_url, prefix=prefix, region=region
        )
        found = Target.of(settings)
        self.bucket = found.bucket
        return found


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
