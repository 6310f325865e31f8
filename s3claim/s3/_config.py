"""Checks every store setting at construction, reads them from the environment, and builds
the default S3 client.

Each check names the setting it refuses and what it got (never a secret), using the
environment variable's name when the value came from the environment.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import boto3
from botocore.config import Config
from botocore.exceptions import InvalidRegionError, ProfileNotFound
from pydantic import SecretStr, ValidationError
from pydantic_settings import SettingsError

from s3claim.errors import ConfigurationError
from s3claim.handles import HandleKey
from s3claim.s3.settings import S3ClaimSettings
from s3claim.safejson import MAX_DEPTH, JSONTooDeepError, loads

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "SSE_ALGORITHMS",
    "Encryption",
    "check_bucket",
    "check_day_classes",
    "check_endpoint_url",
    "check_prefix",
    "check_sse",
    "handle_key_of",
    "load_settings",
    "make_client",
]

SSE_ALGORITHMS = ("AES256", "aws:kms")
CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 15.0
MAX_POOL_CONNECTIONS = 64
"""Connections a client keeps for reuse, and at most opens. botocore's default (10) is below
what one process serves at once (the MCP proxy's 40 worker threads, a runner per thread):
every request past the tenth opened a connection and threw it away afterwards. Past the pool,
requests wait for a connection (`queue_past_pool`): 1,024 runs in one process otherwise
opened one connection each and drowned the server in timeouts (docs/capacity.md, measured)."""
_KEY_MISSING = (
    "{name} is not set: every process sharing the bucket needs the same key (make one with "
    "`s3claim keygen`)"
)
_MAX_PREFIX_BYTES = 900  # S3 keys stop at 1,024 bytes; the tags and digest take 98
MAX_DAY_CLASS = 36_500
"""A hundred years: claims are kept for runs, and times past it stop fitting a calendar."""
MAX_DAY_CLASSES = 100  # one lifecycle rule each; the Terraform module allows as many


def check_bucket(bucket: object, *, name: str = "bucket") -> str:
    if not isinstance(bucket, str) or not bucket:
        raise ConfigurationError(f"{name} must name an S3 bucket, got {bucket!r}")
    return bucket


def check_prefix(prefix: object, *, name: str = "prefix") -> str:
    """A prefix is a folder: it ends in '/', so tenants never share a key prefix by accident."""
    if not isinstance(prefix, str) or not prefix.endswith("/"):
        raise ConfigurationError(f"{name} must end in '/', got {prefix!r}")
    if prefix.startswith("/") or "//" in prefix:
        raise ConfigurationError(f"{name} must not start with '/' or contain '//', got {prefix!r}")
    if len(prefix.encode("utf-8", "surrogatepass")) > _MAX_PREFIX_BYTES:
        raise ConfigurationError(f"{name} must be at most {_MAX_PREFIX_BYTES} bytes")
    return prefix


def check_day_classes(classes: Sequence[int], *, name: str = "ttl_day_classes") -> tuple[int, ...]:
    """Lifecycle counts whole days, so classes are positive integers, ascending, distinct,
    at most `MAX_DAY_CLASS` days and `MAX_DAY_CLASSES` of them."""
    values = tuple(classes)
    if not values:
        raise ConfigurationError(f"{name} needs at least one day class, got {values!r}")
    if len(values) > MAX_DAY_CLASSES:
        raise ConfigurationError(
            f"{name} has {len(values)} day classes; at most {MAX_DAY_CLASSES} day classes"
        )
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in values):
        raise ConfigurationError(f"{name} must be positive whole days, got {values!r}")
    if max(values) > MAX_DAY_CLASS:
        raise ConfigurationError(
            f"{name} must be at most {MAX_DAY_CLASS} days (a hundred years), got {max(values)}"
        )
    if any(a >= b for a, b in pairwise(values)):
        raise ConfigurationError(f"{name} must be strictly ascending, got {values!r}")
    return values


def check_endpoint_url(url: object, *, name: str = "endpoint_url") -> str | None:
    """An S3 endpoint is an http:// or https:// URL with a host (and a numeric port, if any).

    What is wrong is said, not the URL itself: a URL can carry credentials.
    """
    if url is None:
        return None
    example = "(e.g. http://127.0.0.1:9000)"
    if not isinstance(url, str) or not url:
        raise ConfigurationError(f"{name} must be an http:// or https:// URL {example}")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket, for one
        raise ConfigurationError(f"{name} is not a valid URL {example}") from None
    if parts.scheme not in ("http", "https") or not url.startswith(f"{parts.scheme}://"):
        raise ConfigurationError(f"{name} must start with the scheme http:// or https:// {example}")
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError:
        raise ConfigurationError(f"{name} has a port that is not a number {example}") from None
    if not parts.hostname:
        raise ConfigurationError(f"{name} has no host after {parts.scheme}:// {example}")
    return url


class Encryption(NamedTuple):
    """The server-side encryption sent with every PutObject and CopyObject."""

    algorithm: Literal["AES256", "aws:kms"]
    kms_key_id: str | None = None


def check_sse(
    sse: str, kms_key_id: str | None, *, names: tuple[str, str] = ("sse", "kms_key_id")
) -> Encryption:
    """The encryption every object is written with, checked."""
    if sse == "aws:kms":
        if not kms_key_id:
            raise ConfigurationError(f"{names[0]}='aws:kms' needs {names[1]}; it is not set")
        return Encryption("aws:kms", kms_key_id)
    if sse != "AES256":
        raise ConfigurationError(f"{names[0]} must be one of {SSE_ALGORITHMS}, got {sse!r}")
    if kms_key_id:
        raise ConfigurationError(
            f"{names[1]} is set but {names[0]} is {sse!r}: set {names[0]}='aws:kms' to use it"
        )
    return Encryption("AES256")


def handle_key_of(
    secret: HandleKey | SecretStr | str | bytes | None, *, name: str = "handle_key"
) -> HandleKey:
    if secret is None:
        raise ConfigurationError(_KEY_MISSING.format(name=name))
    if isinstance(secret, HandleKey):
        return secret
    value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    if not isinstance(value, str | bytes) or not value:
        raise ConfigurationError(_KEY_MISSING.format(name=name))
    entries: list[str | bytes] = [value]  # a key given as a string or bytes is one key
    if isinstance(value, str) and isinstance(secret, SecretStr) and "," in value:
        # The settings' (S3CLAIM_HANDLE_KEY's): a ring, newest first, each entry a key.
        entries = list(value.split(","))
        for at, entry in enumerate(entries):
            if not entry:
                raise ConfigurationError(
                    f"{name}: entry {at + 1} is empty (a ring is keys, newest first, "
                    "separated by single commas)"
                )
            if entry != entry.strip():  # "new, old" would make " old" a key of its own
                raise ConfigurationError(
                    f"{name}: entry {at + 1} has spaces or a line break around it (a ring "
                    "is keys, newest first, separated by single commas, nothing else)"
                )
            try:
                HandleKey(entry)
            except ValueError as exc:  # the message gives lengths, never the secret
                raise ConfigurationError(f"{name}: entry {at + 1}: {exc}") from None
    try:
        return HandleKey(*entries)
    except ValueError as exc:  # lengths or positions, never the secret
        raise ConfigurationError(f"{name}: {exc}") from None


def load_settings(
    *,
    bucket: str | None = None,
    endpoint_url: str | None = None,
    prefix: str | None = None,
    region: str | None = None,
) -> S3ClaimSettings:
    """The `S3CLAIM_*` settings from the environment, with the options given (the CLI's) on
    top. A malformed value is named by where it came from (`--prefix`, or `S3CLAIM_PREFIX`),
    and its value is never shown.
    """
    options = {"bucket": bucket, "endpoint_url": endpoint_url, "prefix": prefix, "region": region}
    given = {k: v for k, v in options.items() if v is not None}

    def source(field: str) -> str:
        return f"--{field.replace('_', '-')}" if field in given else f"S3CLAIM_{field.upper()}"

    classes = os.environ.get("S3CLAIM_TTL_DAY_CLASSES")
    if classes is not None:  # JSON from the environment: its nesting is bounded before parsing
        try:
            loads(classes)
        except JSONTooDeepError:
            raise ConfigurationError(
                f"invalid S3CLAIM_TTL_DAY_CLASSES: nested deeper than {MAX_DEPTH} levels"
            ) from None
        except ValueError:
            pass  # not JSON: the settings say so below, by name
    try:
        settings = S3ClaimSettings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        reasons = "; ".join(
            f"{source(str(e['loc'][0]))}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()
        )
        raise ConfigurationError(f"invalid {reasons}") from None
    except SettingsError:  # the one complex value, the day classes, is not JSON
        raise ConfigurationError(
            "invalid S3CLAIM_TTL_DAY_CLASSES: not valid JSON (e.g. '[1, 7, 30]')"
        ) from None
    check_prefix(settings.prefix, name=source("prefix"))
    check_endpoint_url(settings.endpoint_url, name=source("endpoint_url"))
    return settings


def make_client(
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    credentials: tuple[str, str] | None = None,
    max_pool_connections: int = MAX_POOL_CONNECTIONS,
    queue_past_pool: bool = True,
) -> S3Client:
    """A client that makes one attempt per call: our tenacity policy owns the retries.

    With an endpoint (MinIO, moto, a VPC endpoint by URL) addressing is path-style, which
    works without wildcard DNS. Socket timeouts are short (botocore's default read timeout is
    60 s): the retry policy's time bound is checked between attempts, so a hung attempt can
    overrun it by at most one timeout. Credentials come from the usual chain unless given
    (an access key id and secret, for a local server of one's own). The client is safe to
    share across threads, and its pool keeps `max_pool_connections` connections for reuse;
    with `queue_past_pool` a request that finds them all busy waits for one instead of opening
    a connection of its own (botocore's behaviour, kept for comparison).
    """
    check_endpoint_url(endpoint_url)
    config = Config(
        retries={"total_max_attempts": 1},
        s3={"addressing_style": "path"} if endpoint_url else None,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        max_pool_connections=max_pool_connections,
    )
    try:
        session = boto3 if credentials is None else boto3.session.Session(*credentials)
        client = session.client("s3", endpoint_url=endpoint_url, region_name=region, config=config)
    except ProfileNotFound as exc:
        raise ConfigurationError(f"AWS profile not found: {exc.kwargs.get('profile')!r}") from None
    except InvalidRegionError:
        raise ConfigurationError(
            "region is not an AWS region name: letters, digits and hyphens (e.g. us-east-1)"
        ) from None
    if queue_past_pool:
        _queue_past_pool(client)
    return client


def _queue_past_pool(client: S3Client) -> None:
    """Make the client's connection pools block when full (urllib3's `block=True`).

    botocore builds its urllib3 pools non-blocking and offers no setting for it: a request
    that finds every pooled connection busy opens one more and discards it afterwards, so N
    threads open N connections at once. The pools are made lazily from the manager's
    `connection_pool_kw` (proxy managers from `_get_pool_manager_kwargs`), so both are set
    before the first request. Without those attributes (another botocore), nothing changes.
    """
    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    manager_kwargs = getattr(getattr(http, "_manager", None), "connection_pool_kw", None)
    if isinstance(manager_kwargs, dict):
        manager_kwargs["block"] = True
    pool_kwargs = getattr(http, "_get_pool_manager_kwargs", None)
    if callable(pool_kwargs):

        def blocking(**extra: Any) -> dict[str, Any]:
            return {**pool_kwargs(**extra), "block": True}

        http._get_pool_manager_kwargs = blocking  # type: ignore[union-attr]
