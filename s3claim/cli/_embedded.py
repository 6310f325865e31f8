"""An S3 for the demo in this process: moto's server on 127.0.0.1, on a free port.

The demo then crosses real HTTP to a real S3 API, with nothing to set up and nothing left
behind: the server, and every claim in it, stops with the demo. moto is an optional
dependency (`s3claim[demo]`), so its absence is a one-line configuration error.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from s3claim.cli._bucket import provision_bucket
from s3claim.cli._exit import CliError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["EmbeddedS3", "embedded_s3"]

MOTO_MISSING = (
    "the embedded S3 needs moto: pip install 's3claim[demo]' "
    "(or run with --store memory, or --bucket for a real bucket)"
)
_REGION = "us-east-1"


@dataclass(frozen=True)
class EmbeddedS3:
    endpoint_url: str
    bucket: str
    client: S3Client


@contextmanager
def embedded_s3(*, prefix: str, day_classes: tuple[int, ...]) -> Iterator[EmbeddedS3]:
    """A running moto server with one bucket provisioned as the Terraform module would."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise CliError(MOTO_MISSING) from None
    # werkzeug logs every request at INFO on stderr; the demo's output is its report.
    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # Credentials of its own: the demo must not need, or touch, the user's AWS account.
        client = boto3.session.Session(
            aws_access_key_id="s3claim-demo",
            aws_secret_access_key="s3claim-demo",  # noqa: S106 - moto accepts any
            region_name=_REGION,
        ).client(
            "s3",
            endpoint_url=endpoint,
            config=Config(retries={"total_max_attempts": 1}, s3={"addressing_style": "path"}),
        )
        bucket = f"s3claim-demo-{uuid.uuid4().hex[:12]}"
        provision_bucket(client, bucket, prefix=prefix, day_classes=day_classes, region=_REGION)
        yield EmbeddedS3(endpoint, bucket, client)
    finally:
        server.stop()
        werkzeug.setLevel(level)
