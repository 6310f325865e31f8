"""The MCP proxy's settings: every knob of `s3claim mcp-proxy`, its default and its bounds,
declared once (docs/mcp-proxy.md, "Settings").

The command's options are generated from `ProxySettings`, one per field (`--max-calls` is
`max_calls`), and a `--config` file's `[proxy]` table may carry the same keys. The sources
are merged by `ProxySettings.from_sources`, the last winning (the command line's flags over
their environment variables over the file), and a value refused is one line naming the
source it came from: the flag, the variable, or the file and its key. It lives outside
`s3claim.mcp` (which re-exports it) because the CLI builds its options from it without
importing the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from s3claim.bounds import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS
from s3claim.claimcheck import DEFAULT_MAX_REFERENCE_CHARS
from s3claim.errors import ConfigurationError, describe_validation_error
from s3claim.links import check_base_url
from s3claim.policy import ClaimCheckPolicy

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "HEADER_TIMEOUT_SECONDS",
    "ProxySettings",
    "Source",
    "StoreKind",
    "flag",
    "host_and_port",
]

HEADER_TIMEOUT_SECONDS = 10.0
"""Seconds a request's line and headers may take to arrive (every HTTP server of ours)."""
DEFAULT_MAX_RESULT_BYTES = 256 * 1024**2
MAX_TTL_SECONDS = 400 * 24 * 3600
_POLICY = ClaimCheckPolicy()
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token

Source = tuple[Mapping[str, object], Callable[[str], str]]
"""Values by setting name, and how a refusal names one of them (`flag`, a file's key)."""


class StoreKind(StrEnum):
    """Where the claims of `demo` and `mcp-proxy` live."""

    s3 = "s3"
    memory = "memory"


def flag(name: str) -> str:
    """The command line's name of a setting: `max_calls` is `--max-calls`."""
    return f"--{name.replace('_', '-')}"


def host_and_port(listen: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:9000` for IPv6) as a host and a port; `ValueError` otherwise."""
    host, sep, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"takes HOST:PORT (e.g. 127.0.0.1:9000), got {listen!r}")
    return host, int(port)


def _refused(reason: str) -> PydanticCustomError:
    """A refusal said as `reason` alone, without pydantic's "Value error, " before it."""
    return PydanticCustomError("proxy_setting", "{reason}", {"reason": reason})


class ProxySettings(BaseModel):
    """Every knob of the MCP proxy. The descriptions are the options' help; the claim check
    policy's knobs take `ClaimCheckPolicy`'s defaults, and `policy` is that policy, checked
    when the settings are."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    listen: str | None = Field(
        None,
        description="Serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio; port 0 "
        "picks a free one.",
    )
    tenant: str | None = Field(None, description="Tenant every claim belongs to.")
    tenant_header: str | None = Field(
        None,
        description="HTTP only: take the tenant from this request header (set by your "
        "gateway); requests without it are refused. Excludes --tenant.",
    )
    store: StoreKind | None = Field(
        None,
        strict=False,  # a file names it as a string
        description="Where claims live. Default: s3 when a bucket is configured "
        "(S3CLAIM_BUCKET or --bucket), else memory.",
    )
    threshold_chars: int = Field(
        _POLICY.threshold_chars, ge=1, description="Results this long or longer are checked in."
    )
    head_chars: int = Field(
        _POLICY.head_chars, ge=1, description="The most of a result that stays inline."
    )
    tail_chars: int = Field(
        _POLICY.tail_chars,
        ge=0,
        description="The most of a result's end that stays inline too, after the marker.",
    )
    pick_lines: str | None = Field(
        None,
        description="A regular expression (as search_result takes one): up to --pick-max "
        "lines it matches outside the head and tail stay inline, with their line numbers.",
    )
    pick_max: int = Field(
        _POLICY.pick_max,
        ge=1,
        description="The most lines --pick-lines shows: the first and the last half.",
    )
    json_root: bool = Field(
        _POLICY.json_root,
        description="A result that is JSON gets its root's members listed inline (key, type "
        "and span), as fetch_result with path='' lists them.",
    )
    turn_budget_chars: int | None = Field(
        None,
        ge=1,
        description="A turn's budget: MCP has no batches, so each call is a turn of its own, "
        "and a result longer than this is checked in (when that shrinks it) below the "
        "threshold.",
    )
    ttl_seconds: int = Field(
        _POLICY.ttl_seconds,
        ge=1,
        le=MAX_TTL_SECONDS,
        description="How long a claim can be fetched, in seconds (at most 400 days).",
    )
    upstream_timeout: float = Field(
        300.0, ge=0.001, le=86_400, description="Seconds an upstream call (or a restart) may take."
    )
    startup_timeout: float = Field(
        20.0,
        ge=0.001,
        le=3_600,
        description="Seconds the upstream may take to start and complete the MCP handshake.",
    )
    reuse: dict[str, int] = Field(
        default_factory=dict,
        description="Answer a repeat call of TOOL (same arguments, same run) from its claim for "
        "SECONDS after a checked-in result, without calling the upstream (repeatable). The "
        "upstream must mark TOOL readOnlyHint; in a --config file, give each upstream a "
        "reuse table.",
    )
    max_calls: int = Field(
        DEFAULT_MAX_CALLS,
        ge=1,
        le=10_000,
        description="Requests served at once: tool calls (the claim tools too), resource reads "
        "and prompts/get, with --listen the link reads at /claims/ too; more are refused. "
        "Listings and the rest do not count.",
    )
    max_tenant_calls: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="One tenant's requests at once, counted as --max-calls counts them; more "
        "are refused. Default: a quarter of --max-calls with --tenant-header, all of them "
        "otherwise.",
    )
    max_read_bytes: int = Field(
        DEFAULT_MAX_BYTES,
        ge=1,
        description="With --listen, bytes the link reads in flight at /claims/ may buffer in "
        "all (each reserves its window's UTF-8 at its longest), a quarter of it one tenant's "
        "with --tenant-header; a read past it is refused at once.",
    )
    max_result_bytes: int = Field(
        DEFAULT_MAX_RESULT_BYTES,
        ge=1024,
        le=8 * 1024**3,
        description="The largest upstream answer taken (bytes); a larger one is an error result.",
    )
    memory_max_bytes: int = Field(
        1024**3,
        ge=1,
        description="--store memory: bytes of claims held in all; the oldest go first.",
    )
    memory_max_tenant_bytes: int = Field(
        256 * 1024**2,
        ge=1,
        description="--store memory: bytes of claims held per tenant; its oldest go first.",
    )
    references: bool = Field(
        False,
        description='Resolve claim references ({"$claim": handle}) in tool arguments before a '
        "call is forwarded, and say so in each tool's description.",
    )
    max_reference_chars: int = Field(
        DEFAULT_MAX_REFERENCE_CHARS,
        ge=1,
        description="The most characters one call's references may resolve to.",
    )
    link_base_url: str | None = Field(
        None,
        description='Where links to claims are served, for {"$claim": handle, "as": "link"} '
        "references: https://, or http:// on a loopback host. Default with --listen on "
        "loopback: this server, which serves them at /claims/.",
    )
    header_timeout: float = Field(
        HEADER_TIMEOUT_SECONDS,
        ge=0.01,
        le=3_600,
        description="Seconds a request's line and headers may take to arrive before its "
        "connection is closed (a body, an answer read slowly and an SSE stream are not "
        "bounded).",
    )
    _policy: ClaimCheckPolicy = PrivateAttr()

    @field_validator("listen")
    @classmethod
    def _an_address(cls, listen: str | None) -> str | None:
        if listen is not None:
            try:
                host_and_port(listen)
            except ValueError as exc:
                raise _refused(str(exc)) from None
        return listen

    @field_validator("tenant_header")
    @classmethod
    def _a_header(cls, name: str | None, info: ValidationInfo) -> str | None:
        if name is None:
            return None
        if info.data.get("listen") is None:
            raise _refused("needs --listen: on stdio there are no headers")
        if not _HEADER_NAME.fullmatch(name):
            raise _refused(
                "must be an HTTP header name: letters, digits and !#$%&'*+-.^_`|~, no spaces "
                "(e.g. X-Tenant)"
            )
        return name

    @field_validator("reuse", mode="before")
    @classmethod
    def _tool_seconds(cls, value: object) -> object:
        """The command line gives `TOOL=SECONDS` entries."""
        if not isinstance(value, list | tuple):
            return value
        found: dict[str, int] = {}
        for entry in value:
            name, sep, seconds = str(entry).rpartition("=")
            if not sep or not name or not (seconds.isascii() and seconds.isdigit()):
                raise _refused(f"takes TOOL=SECONDS (whole seconds), got {entry!r}")
            found[name] = int(seconds)
        return found

    @field_validator("reuse")
    @classmethod
    def _whole_seconds(cls, value: dict[str, int]) -> dict[str, int]:
        if any(seconds < 0 for seconds in value.values()):
            raise _refused("a tool's seconds cannot be negative")
        return value

    @field_validator("max_tenant_calls")
    @classmethod
    def _within_max_calls(cls, calls: int | None, info: ValidationInfo) -> int | None:
        most = info.data.get("max_calls")
        if calls is not None and most is not None and calls > most:
            raise _refused(f"cannot be more than --max-calls ({most}), got {calls}")
        return calls

    @field_validator("link_base_url")
    @classmethod
    def _a_base_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        try:
            return check_base_url(url)
        except ValueError as exc:
            raise _refused(str(exc)) from None

    def model_post_init(self, context: Any, /) -> None:
        # A policy that refuses them raises its ValidationError here, as it is: its fields
        # are named as these are, so `from_sources` names each one's source.
        self._policy = ClaimCheckPolicy(
            threshold_chars=self.threshold_chars,
            head_chars=self.head_chars,
            tail_chars=self.tail_chars,
            pick_lines=self.pick_lines,
            pick_max=self.pick_max,
            json_root=self.json_root,
            ttl_seconds=self.ttl_seconds,
            turn_budget_chars=self.turn_budget_chars,
        )

    @property
    def policy(self) -> ClaimCheckPolicy:
        """The claim check policy these settings give every tool."""
        return self._policy

    @property
    def address(self) -> tuple[str, int] | None:
        """`listen` as a host and a port; None on stdio."""
        return None if self.listen is None else host_and_port(self.listen)

    @classmethod
    def from_sources(cls, sources: Sequence[Source]) -> Self:
        """The settings `sources` give, a later source's value over an earlier one's.

        Raises `ConfigurationError`, one line naming each refused value by its source and the
        reason (never the value)."""
        values: dict[str, object] = {}
        names: dict[str, Callable[[str], str]] = {}
        for given, name in sources:
            values.update(given)
            names.update(dict.fromkeys(given, name))

        def where(loc: tuple[int | str, ...]) -> str:
            if not loc:
                return ""
            key, *inner = (str(part) for part in loc)
            return ".".join([names.get(key, flag)(key), *inner])

        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc, where=where)) from None
