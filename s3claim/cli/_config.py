"""Bucket configuration for the commands: `S3CLAIM_*` from the environment, options on top.

Options override the environment one by one. The handle key is read from
`S3CLAIM_HANDLE_KEY` only, never from an option, so it stays out of shell history and `ps`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from s3claim.errors import ConfigurationError
from s3claim.handles import HandleKey
from s3claim.journal._s3 import S3RunJournal
from s3claim.s3 import S3ClaimCheckStore, S3ClaimSettings
from s3claim.s3._config import (
    BucketArguments,
    check_bucket,
    check_prefix,
    handle_key_of,
    make_client,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "BucketOption",
    "EndpointOption",
    "PrefixOption",
    "RegionOption",
    "Target",
    "handle_key",
    "load_settings",
    "open_journal",
    "open_store",
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


def load_settings(
    *,
    bucket: str | None = None,
    endpoint_url: str | None = None,
    prefix: str | None = None,
    region: str | None = None,
) -> S3ClaimSettings:
    """The environment's settings with the given options on top; a bad value is named."""
    overrides = {
        name: value
        for name, value in (
            ("bucket", bucket),
            ("endpoint_url", endpoint_url),
            ("prefix", prefix),
            ("region", region),
        )
        if value is not None
    }
    try:
        settings = S3ClaimSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        reasons = "; ".join(
            f"{_name(str(e['loc'][0]), overrides)}: {e['msg']}" for e in exc.errors() if e["loc"]
        )
        raise ConfigurationError(f"invalid setting: {reasons}") from None
    except SettingsError as exc:
        raise ConfigurationError(f"unreadable S3CLAIM_* setting: {exc}") from None
    check_prefix(settings.prefix, name=_name("prefix", overrides))
    return settings


def _name(field: str, overrides: dict[str, str]) -> str:
    return f"--{field.replace('_', '-')}" if field in overrides else f"S3CLAIM_{field.upper()}"


@dataclass(frozen=True)
class Target:
    """A configured bucket: its settings and one client for every request to it."""

    settings: S3ClaimSettings
    client: S3Client

    @property
    def bucket(self) -> str:
        return check_bucket(self.settings.bucket, name="--bucket or S3CLAIM_BUCKET")

    @classmethod
    def of(cls, settings: S3ClaimSettings) -> Target:
        check_bucket(settings.bucket, name="--bucket or S3CLAIM_BUCKET")
        return cls(
            settings, make_client(endpoint_url=settings.endpoint_url, region=settings.region)
        )


def handle_key(settings: S3ClaimSettings) -> HandleKey:
    """The key from S3CLAIM_HANDLE_KEY (never an option), refused by name when missing."""
    secret = settings.handle_key.get_secret_value() if settings.handle_key else ""
    if not secret:
        raise ConfigurationError(
            "S3CLAIM_HANDLE_KEY is not set: every process sharing the bucket needs the same "
            "key (make one with `s3claim keygen`)"
        )
    return handle_key_of(secret, name="S3CLAIM_HANDLE_KEY")


def open_store(target: Target) -> S3ClaimCheckStore:
    """The store on this bucket; refuses a missing S3CLAIM_HANDLE_KEY by name."""
    return S3ClaimCheckStore(**_bucket_arguments(target))


def open_journal(target: Target) -> S3RunJournal:
    """The run journal on this bucket, under the store's settings and key."""
    return S3RunJournal(**_bucket_arguments(target))


def _bucket_arguments(target: Target) -> BucketArguments:
    settings = target.settings
    return BucketArguments(
        bucket=target.bucket,
        handle_key=handle_key(settings),
        prefix=settings.prefix,
        client=target.client,
        sse=settings.sse,
        kms_key_id=settings.kms_key_id,
        ttl_day_classes=settings.ttl_day_classes,
    )
