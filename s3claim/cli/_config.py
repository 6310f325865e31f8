"""The bucket options every command takes; `load_settings` puts them over `S3CLAIM_*`.

Options override the environment one by one. The handle key is read from
`S3CLAIM_HANDLE_KEY` only, never from an option, so it stays out of shell history and `ps`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

import typer

__all__ = [
    "BucketOption",
    "EndpointOption",
    "PrefixOption",
    "RegionOption",
    "StoreKind",
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


class StoreKind(StrEnum):
    """Where the claims of `demo` and `mcp-proxy` live."""

    s3 = "s3"
    memory = "memory"


def when(epoch: float) -> str:
    """A time as the listings show it (UTC, to the second); "—" for none."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if epoch else "—"
