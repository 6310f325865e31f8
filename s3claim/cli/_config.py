"""The options the commands share. The handle key is read from `S3CLAIM_HANDLE_KEY` only,
never from an option, so it stays out of shell history and `ps`."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated

import typer
from pydantic import ValidationError

import s3claim.wording as wording
from s3claim.cli._exit import CliError
from s3claim.errors import describe_validation_error
from s3claim.handles import is_handle
from s3claim.proxy_settings import StoreKind
from s3claim.scope import Scope

__all__ = [
    "BucketOption",
    "EndpointOption",
    "HeaderTimeoutOption",
    "MaxCallsOption",
    "MaxReadBytesOption",
    "MaxTenantCallsOption",
    "OptionalRun",
    "PrefixOption",
    "RegionOption",
    "StoreKind",
    "Tenant",
    "checked",
    "handle_given",
    "scope_of",
    "warn_unless_loopback",
    "when",
]

_PANEL = "Bucket (default: the S3CLAIM_* environment)"
BucketOption = Annotated[
    str | None,
    typer.Option(help="Bucket holding the claims (env S3CLAIM_BUCKET).", rich_help_panel=_PANEL),
]
EndpointOption = Annotated[
    str | None,
    typer.Option(
        help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 (env S3CLAIM_ENDPOINT_URL).",
        rich_help_panel=_PANEL,
    ),
]
PrefixOption = Annotated[
    str | None,
    typer.Option(
        help="Key prefix of every claim (env S3CLAIM_PREFIX; default claims/).",
        rich_help_panel=_PANEL,
    ),
]
RegionOption = Annotated[
    str | None,
    typer.Option(help="AWS region of the bucket (env S3CLAIM_REGION).", rich_help_panel=_PANEL),
]
HeaderTimeoutOption = Annotated[
    float,
    typer.Option(
        envvar="S3CLAIM_HEADER_TIMEOUT",
        help="Seconds a request's line and headers may take to arrive before its connection "
        "is closed (a body, an answer read slowly and an SSE stream are not bounded).",
        min=0.01,
        max=3_600,
    ),
]
"""`s3claim.mcp.HEADER_TIMEOUT_SECONDS` is the default each command gives."""
MaxCallsOption = Annotated[
    int,
    typer.Option(
        help="Requests served at once (tool calls, resource reads, prompts/get, link reads); "
        "more are refused at once.",
        min=1,
        max=10_000,
    ),
]
MaxTenantCallsOption = Annotated[
    int | None,
    typer.Option(
        help="One tenant's requests at once, counted as --max-calls counts them; more are "
        "refused. Default: a quarter of --max-calls where many tenants are served.",
        min=1,
        max=10_000,
        show_default=False,
    ),
]
MaxReadBytesOption = Annotated[
    int,
    typer.Option(
        help="Bytes the reads in flight may buffer in all (each reserves its window's UTF-8 "
        "at its longest); a read past it is refused at once.",
        min=1,
    ),
]
Tenant = Annotated[str, typer.Option(help="Tenant the claims belong to.", show_default=False)]
OptionalRun = Annotated[str | None, typer.Option(help="Only this run of the tenant.")]


def scope_of(tenant: str, run: str, *, run_option: str = "--run") -> Scope:
    """The scope the options name; a name out of bounds is refused by its option
    (`--tenant: String should have at least 1 character`), exit 2, before connecting."""
    options = {"tenant": "--tenant", "run": run_option}
    try:
        return Scope(tenant=tenant, run=run)
    except ValidationError as exc:
        where = describe_validation_error(exc, where=lambda loc: options[str(loc[0])])
        raise CliError(where) from None


def checked(tenant: str, run: str | None, *, run_option: str = "--run") -> str:
    """Refuse a bad tenant or run name before connecting; return the words that name them."""
    scope_of(tenant, run or "any", run_option=run_option)
    return f"run {run!r} of tenant {tenant!r}" if run else f"tenant {tenant!r}"


def handle_given(handle: str) -> str:
    """The HANDLE argument, refused as a usage mistake (exit 2) when it is not a handle at
    all: that says nothing of what is stored, so it need not be the uniform refusal."""
    if not is_handle(handle):
        raise CliError(wording.NOT_A_HANDLE_MESSAGE)
    return handle


def when(epoch: float) -> str:
    """A time as the listings show it (UTC, to the second); "—" for none."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if epoch else "—"


def warn_unless_loopback(command: str, host: str, port: int, carried: str) -> None:
    """One line on stderr when a server of ours listens off loopback over plain HTTP: what
    it serves crosses the network in clear (`carried` says what that is)."""
    from s3claim.links import check_base_url  # the links' own rule for a plain-HTTP host

    try:
        check_base_url(f"http://{host}:{port}")
    except ValueError:
        print(
            f"s3claim {command}: warning: plain HTTP on {host}, not a loopback address: "
            f"{carried}, readable by anyone on the path; put HTTPS in front (a TLS proxy) "
            "or listen on 127.0.0.1",
            file=sys.stderr,
            flush=True,
        )
