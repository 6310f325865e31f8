"""Scoping: which tenant and run a proxied call's claims belong to.

Never from tool arguments: the model writes those. In order:

- tenant: `--tenant` (or `S3CLAIM_TENANT`); over HTTP with `--tenant-header NAME`, that
  request header instead, and a call without it is refused.
- run: the request's `_meta` value `s3claim/run` (the client's own conversation id); else the
  transport's session id (streamable HTTP clients that keep a session); else one run for this
  proxy process (stdio: one client) or one run per tenant (HTTP: shared by every process, so
  a handle minted through one instance is redeemed through another).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from s3claim.errors import ToolError
from s3claim.scope import Scope
from s3claim.tools import describe_validation_error

__all__ = ["RUN_META_KEY", "SESSION_HEADER", "Scoping"]

RUN_META_KEY = "s3claim/run"
SESSION_HEADER = "mcp-session-id"
HTTP_RUN = "mcp-proxy"
"""The run of an HTTP client that names none and has no session: one per tenant."""


@dataclass(frozen=True, kw_only=True)
class Scoping:
    """How a call's `Scope` is found; build it with `for_stdio` or `for_http`."""

    tenant: str | None
    tenant_header: str | None
    fallback_run: str

    def __post_init__(self) -> None:
        if self.tenant is None and self.tenant_header is None:
            raise ValueError("a tenant is needed: --tenant, S3CLAIM_TENANT or --tenant-header")
        if self.tenant is not None and self.tenant_header is not None:
            raise ValueError(
                "--tenant and --tenant-header exclude each other: with the header, every "
                "request names its tenant and none may fall back to a shared one"
            )
        if self.tenant is not None:
            try:  # a name out of bounds fails at start
                Scope(self.tenant, self.fallback_run)
            except ValidationError as exc:
                raise ValueError(f"invalid scope: {describe_validation_error(exc)}") from None

    @classmethod
    def for_stdio(cls, tenant: str | None) -> Scoping:
        """One client per process: without a run of its own, the process is the run."""
        return cls(tenant=tenant, tenant_header=None, fallback_run=f"mcp-{uuid.uuid4().hex}")

    @classmethod
    def for_http(cls, tenant: str | None, *, tenant_header: str | None = None) -> Scoping:
        return cls(tenant=tenant, tenant_header=tenant_header, fallback_run=HTTP_RUN)

    def scope(self, *, meta: Mapping[str, Any] | None, headers: Mapping[str, str] | None) -> Scope:
        """The scope of one call; a `ToolError` the client reads when it cannot be had."""
        tenant = self.tenant
        if self.tenant_header is not None:
            tenant = headers.get(self.tenant_header) if headers is not None else None
            if not tenant:
                raise ToolError(
                    "tenant_missing", f"this proxy takes the tenant from the {self.tenant_header} "
                    "header, and the request had none",
                )  # fmt: skip
        assert tenant is not None  # __post_init__: a tenant or a header
        run = meta.get(RUN_META_KEY) if meta is not None else None
        if run is None and headers is not None:
            run = headers.get(SESSION_HEADER)
        if run is None:
            run = self.fallback_run
        if not isinstance(run, str):
            raise ToolError("invalid_scope", f"_meta {RUN_META_KEY} must be a string")
        try:
            return Scope(tenant, run)
        except ValidationError as exc:
            raise ToolError("invalid_scope", describe_validation_error(exc)) from None
