"""Shared S3 test support: clients for moto's server, and injected S3 error responses."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

__all__ = ["moto_client", "s3_error", "s3_response", "stored_bytes", "window_bytes"]

_BLOCK, _TAG = 4096, 16  # format 3: every 4,096 bytes of text followed by a 16-byte tag


def stored_bytes(text_bytes: int) -> int:
    """The size of a claim object holding `text_bytes` of text at its width."""
    return text_bytes + -(-text_bytes // _BLOCK) * _TAG


def window_bytes(width: int, offset: int, chars: int, limit: int = 4096) -> int:
    """What one fetch moves: the whole blocks (with their tags) holding the window."""
    first, last = width * offset // _BLOCK, (width * (offset + limit) - 1) // _BLOCK
    unit = _BLOCK + _TAG
    return min((last + 1) * unit, stored_bytes(width * chars)) - first * unit


def moto_client(endpoint: str, *, pool: int = 10) -> Any:
    """A client like the store's own: one attempt per call, so the store's policy retries."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        config=Config(
            retries={"total_max_attempts": 1},
            s3={"addressing_style": "path"},
            max_pool_connections=pool,
        ),
    )


class _Raw:
    """Just enough of a urllib3 response for botocore to parse an injected body."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body

    def read(self, *_: Any, **__: Any) -> bytes:
        body, self._body = self._body, b""
        return body

    def close(self) -> None:
        self._body = b""


def s3_response(
    status: int, body: bytes, headers: dict[str, str] | None = None, url: str = "https://injected"
) -> AWSResponse:
    """A response a `before-send` hook returns in place of the real one."""
    return AWSResponse(url, status, headers or {}, _Raw(body))


def s3_error(status: int, code: str) -> AWSResponse:
    """An S3 error response with this status and code."""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>'
        f"<Error><Code>{code}</Code><Message>injected</Message></Error>"
    ).encode()
    return s3_response(status, body, {"Content-Type": "application/xml"})
