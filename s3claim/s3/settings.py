"""S3ClaimSettings: the S3 store's configuration from `S3CLAIM_*` environment variables.

Everything is optional here so that loading never fails on what is merely absent;
`S3ClaimCheckStore.from_settings` then refuses a missing bucket or handle key by its
variable name, at construction rather than at the first request.

docs/s3.md ("Settings") lists the variables.
"""

from __future__ import annotations

from typing import Literal

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["S3ClaimSettings"]


class S3ClaimSettings(BaseSettings):
    """`S3CLAIM_BUCKET`, `S3CLAIM_HANDLE_KEY`, ... ; `S3CLAIM_TTL_DAY_CLASSES` is a JSON list."""

    model_config = SettingsConfigDict(env_prefix="S3CLAIM_", frozen=True, extra="ignore")

    bucket: str | None = None
    prefix: str = "claims/"
    endpoint_url: str | None = None
    region: str | None = None
    handle_key: SecretStr | None = None
    sse: Literal["AES256", "aws:kms"] = "AES256"
    kms_key_id: str | None = None
    ttl_day_classes: tuple[int, ...] = (1, 7, 30)
