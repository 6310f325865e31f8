"""Scoping: which tenant and run a proxied call's claims belong to, never from tool arguments.

The tenant is `--tenant`, or over HTTP the `--tenant-header` request header (missing or
repeated: refused, since a gateway that appends would let the client pick). The run is the
request's `_meta` `s3claim/run`, else the SDK's validated session id (never a header off the
request), else the tenant's one run: on a shared store, a restarted stdio proxy redeems the
handles the last one issued. Each source has its own namespace (`meta:`, `session:`,
`tenant:`), so none can name another's run (docs/mcp-proxy.md, "Scope and run namespaces").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from s3claim.errors import ToolError, describe_validation_error
from s3claim.scope import Scope

__all__ = ["RUN_META_KEY", "Scoping"]

RUN_META_KEY = "s3claim/run"
NAMED_RUN = "meta:"
"""The namespace of a run the client named (`_meta` s3claim/run)."""
SESSION_RUN = "session:"
"""The namespace of a transport session's run."""
TENANT_RUN = "tenant:shared"
"""The run of a client that names none and has no session: one per tenant."""


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
                Scope(tenant=self.tenant, run=self.fallback_run)
            except ValidationError as exc:
                raise ValueError(f"invalid scope: {describe_validation_error(exc)}") from None

    @classmethod
    def for_stdio(cls, tenant: str | None) -> Scoping:
        """Without a run of its own, the client's run is its tenant's, across restarts."""
        return cls(tenant=tenant, tenant_header=None, fallback_run=TENANT_RUN)

    @classmethod
    def for_http(cls, tenant: str | None, *, tenant_header: str | None = None) -> Scoping:
        return cls(tenant=tenant, tenant_header=tenant_header, fallback_run=TENANT_RUN)

    @staticmethod
    def spans_conversations(scope: Scope) -> bool:
        """Whether the run may hold several of the client's conversations: the tenant's one
        run (a desktop client's chats, one stdio process) and a transport session's (a
        client clears or compacts its history and keeps its session). A run the client
        names is the one conversation it names."""
        return scope.run == TENANT_RUN or scope.run.startswith(SESSION_RUN)

    def scope(
        self,
        *,
        meta: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        session_id: str | None = None,
    ) -> Scope:
        """The scope of one call; a `ToolError` the client reads when it cannot be had.

        `session_id` is the transport's validated session, None without one.
        """
        tenant = self._tenant(headers)
        named = meta.get(RUN_META_KEY) if meta is not None else None
        if named is not None and not isinstance(named, str):
            raise ToolError("invalid_scope", f"_meta {RUN_META_KEY} must be a string")
        if named is not None:
            run = f"{NAMED_RUN}{named}"
        elif session_id is not None:
            run = f"{SESSION_RUN}{session_id}"
        else:
            run = self.fallback_run
        given = {  # what the client gave each name by: the words it reads
            "tenant": "tenant"
            if self.tenant_header is None
            else f"the {self.tenant_header} header",
            "run": f"_meta {RUN_META_KEY}" if named is not None else "run",
        }
        try:
            if named is not None:  # the name's own bounds, before its namespace is added
                Scope(tenant=tenant, run=named)
            return Scope(tenant=tenant, run=run)
        except ValidationError as exc:
            said = describe_validation_error(exc, where=lambda loc: given[str(loc[0])])
            raise ToolError("invalid_scope", said) from None

    def _tenant(self, headers: Mapping[str, str] | None) -> str:
        if self.tenant_header is None:
            assert self.tenant is not None  # __post_init__: a tenant or a header
            return self.tenant
        values = _all_values(headers, self.tenant_header)
        if len(values) > 1:
            raise ToolError(
                "tenant_ambiguous", f"the request has {len(values)} {self.tenant_header} "
                "headers; the proxy takes exactly one (the gateway must overwrite, not append)",
            )  # fmt: skip
        if not values or not values[0]:
            raise ToolError(
                "tenant_missing", f"this proxy takes the tenant from the {self.tenant_header} "
                "header, and the request had none",
            )  # fmt: skip
        return values[0]


def _all_values(headers: Mapping[str, str] | None, name: str) -> list[str]:
    """Every value of header `name` (starlette's headers keep repeats; a plain mapping one)."""
    if headers is None:
        return []
    getlist = getattr(headers, "getlist", None)
    if getlist is not None:
        return list(getlist(name))
    value = headers.get(name)
    return [] if value is None else [value]
