"""The options the commands share. The handle key is read from `S3CLAIM_HANDLE_KEY` only,
never from an option, so it stays out of shell history and `ps`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

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


def checked(tenant: str, run: str | None) -> str:
    """Refuse a bad tenant or run name before connecting; return the words that name them."""
    Scope(tenant, run or "any")
    return f"run {run!r} of tenant {tenant!r}" if run else f"tenant {tenant!r}"


def when(epoch: float) -> str:
    """A time as the listings show it (UTC, to the second); "—" for none."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if epoch else "—"
