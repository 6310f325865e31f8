"""The demo's bucket: the one configured (`--bucket`, `S3CLAIM_*`), or an embedded S3.

The embedded one is moto's server (the `demo` extra) in this process on 127.0.0.1, with a
bucket provisioned as the Terraform module would: real HTTP to a real S3 API, with nothing
to set up and nothing left behind.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import SecretStr

from s3claim.cli._exit import CliError
from s3claim.extras import require_extra
from s3claim.s3 import S3ClaimSettings
from s3claim.s3.admin import Target, make_client, probe, provision_bucket

__all__ = ["DemoBucket", "demo_bucket"]

WITHOUT_MOTO = "or run with --store memory, or --bucket for a real bucket"
_REGION = "us-east-1"
_CREDENTIALS = ("s3claim-demo", "s3claim-demo")  # moto accepts any; never the user's account


@dataclass(frozen=True)
class DemoBucket:
    """Where the demo's claims go; `target.settings` holds the handle key the demo uses."""

    target: Target
    description: str
    """The S3 it talks to, without the bucket: one short line at 80 columns."""
    embedded: bool
    """An embedded S3 goes with the demo; in a configured bucket the demo erases its run."""

    @property
    def located(self) -> str:
        """The bucket and prefix, for a line of their own."""
        return f"{self.target.bucket}, prefix {self.target.settings.prefix}"

    @property
    def lived(self) -> str:
        """Where the demo's claims were, and what became of them, once it has ended."""
        where = f"bucket {self.target.bucket}, under {self.target.settings.prefix},"
        if self.embedded:
            return (
                f"In {where} on an embedded S3 (moto, inside the demo's process): gone with "
                "it now that the demo has ended; nothing is left behind."
            )
        return (
            f"In {where} on {self.description}: the demo erased its run's claims before it "
            "ended, as `s3claim forget --run` does."
        )

    @property
    def env(self) -> dict[str, str]:
        """The `S3CLAIM_*` (and, embedded, AWS) variables a child process needs for it."""
        settings = self.target.settings
        assert settings.handle_key is not None
        env = {
            "S3CLAIM_BUCKET": self.target.bucket,
            "S3CLAIM_PREFIX": settings.prefix,
            "S3CLAIM_HANDLE_KEY": settings.handle_key.get_secret_value(),
        }
        for name, value in (("ENDPOINT_URL", settings.endpoint_url), ("REGION", settings.region)):
            if value:
                env[f"S3CLAIM_{name}"] = value
        if self.embedded:
            env |= {"AWS_ACCESS_KEY_ID": _CREDENTIALS[0], "AWS_SECRET_ACCESS_KEY": _CREDENTIALS[1]}
        return env


@contextmanager
def demo_bucket(settings: S3ClaimSettings) -> Iterator[DemoBucket]:
    """The configured bucket, or (with none configured) an embedded one for the demo's length.

    The demo's claims live for one run, so without a configured handle key it makes its own.
    """
    secret = settings.handle_key.get_secret_value() if settings.handle_key else ""
    settings = settings.model_copy(
        update={"handle_key": SecretStr(secret or secrets.token_urlsafe(32))}
    )
    if settings.bucket is not None:
        if settings.endpoint_url:
            described = f"S3 at {settings.endpoint_url}"
        else:
            described = f"AWS S3, region {settings.region or 'from the AWS configuration'}"
        target = Target.of(settings)
        probe(target)  # a bucket it cannot use is one line now, not a failed run
        yield DemoBucket(target, described, embedded=False)
        return
    if settings.endpoint_url is not None:
        raise CliError("--endpoint-url needs --bucket (or S3CLAIM_BUCKET)")
    require_extra("demo", alternative=WITHOUT_MOTO)
    from moto.server import ThreadedMotoServer

    # werkzeug logs every request at INFO on stderr; the demo's output is its report.
    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = make_client(endpoint_url=endpoint, region=_REGION, credentials=_CREDENTIALS)
        bucket = f"s3claim-demo-{uuid.uuid4().hex[:12]}"
        provision_bucket(
            client,
            bucket,
            prefix=settings.prefix,
            day_classes=settings.ttl_day_classes,
            region=_REGION,
        )
        settings = settings.model_copy(
            update={"bucket": bucket, "endpoint_url": endpoint, "region": _REGION}
        )
        described = f"embedded S3 (moto) at {endpoint}"
        yield DemoBucket(Target(settings, client), described, embedded=True)
    finally:
        server.stop()
        werkzeug.setLevel(level)
