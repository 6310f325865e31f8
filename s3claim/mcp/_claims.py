"""Claims as MCP resources: `resources/read` of a handle returns a window of its claim.

A claim's URI is its handle (`claim:1a2b…`), and the window is chosen by query parameters
named like `fetch_result`'s arguments (`claim:1a2b…?offset=4096`), converted by the types of
the tool's schema. Reading runs `fetch_result` itself (`run_claim_tool`), so the scope
checks, the uniform refusal, the events and every reading mode are the tool's.

A URI is a claim's in any form a reader may take for one (`claim_uri`: percent-encoded, any
case, full-width), so none reaches the upstream. Claims are never listed (`resources/list`
would show other runs' handles), and neither is what an upstream lists posing as one: its
resources and templates a reader may take for a claim's URI are left out of the listings
the client sees (`unclaimed`, for a proxy of one upstream and for a gateway alike).
"""

from __future__ import annotations

import logging
import re
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    TextResourceContents,
)

from s3claim.errors import ToolError
from s3claim.handles import HANDLE_PREFIX
from s3claim.hosting import folded_view, run_claim_tool
from s3claim.mcp._neutral import neutralised
from s3claim.tools import RunContext, Tool

__all__ = ["claim_uri", "read_claim", "unclaimed"]

_log = logging.getLogger("s3claim.mcp")
_Listing = TypeVar("_Listing", ListResourcesResult, ListResourceTemplatesResult)
_POSING = "%s: leaving out an upstream %s posing as a claim (%d characters)"

_WHOLE = re.compile(r"-?[0-9]{1,18}")
"""A whole-number URI parameter: ASCII digits, few enough for any window (and for `int`)."""


def claim_uri(uri: str) -> str | None:
    """`uri` as a claim's URI (`claim:...`) when it names one in any form; None otherwise."""
    for _ in range(3):  # nested percent-encodings, within reason
        decoded = unquote(uri)
        if decoded == uri:
            break
        uri = decoded
    uri, view, end = uri.strip(), "", 0
    while len(view) < len(HANDLE_PREFIX) and end < len(uri):  # the scheme, folded
        view += folded_view(uri[end])
        end += 1
    return HANDLE_PREFIX + uri[end:] if view.casefold() == HANDLE_PREFIX else None


def unclaimed(listing: _Listing) -> _Listing:
    """An upstream's resource or template listing as the client sees it: without what poses
    as a claim (`claim_uri`), each left out with one log line of its length (never its
    text), and neutralised."""
    if isinstance(listing, ListResourcesResult):
        resources = [r for r in listing.resources if not _posing("resource", r.uri)]
        return neutralised(listing.model_copy(update={"resources": resources}))
    templates = [t for t in listing.resource_templates if not _posing("template", t.uri_template)]
    return neutralised(listing.model_copy(update={"resource_templates": templates}))


def _posing(kind: str, uri: str) -> bool:
    if claim_uri(uri) is None:
        return False
    method = "resources/list" if kind == "resource" else "resources/templates/list"
    _log.warning(_POSING, method, kind, len(uri))
    return True


def read_claim(fetch: Tool, uri: str, context: RunContext) -> ReadResourceResult:
    """The window `uri` names, read by the `fetch_result` tool; an `MCPError` when refused."""
    try:
        arguments = _arguments(fetch, uri)
    except ToolError as error:
        raise MCPError(INVALID_PARAMS, error.message) from None
    answer = run_claim_tool(fetch, arguments, context)
    if answer.is_error:
        # The rendered refusal, as fetch_result gives it: the same words for every handle
        # (-32602, what 2026-07-28 answers for a resource it cannot read).
        raise MCPError(INVALID_PARAMS, answer.text)
    return ReadResourceResult(
        contents=[TextResourceContents(uri=uri, mime_type="text/plain", text=answer.text)]
    )


def _arguments(fetch: Tool, uri: str) -> dict[str, Any]:
    properties: dict[str, Any] = fetch.schema["function"]["parameters"].get("properties", {})
    arguments: dict[str, Any] = {"handle": uri.split("?", 1)[0].split("#", 1)[0]}
    for name, value in parse_qsl(urlsplit(uri).query, keep_blank_values=True):
        if name in arguments:
            raise ToolError("invalid_arguments", f"the URI gives {name!r} more than once")
        arguments[name] = _typed(name, properties.get(name, {}), value)
    return arguments


def _typed(name: str, schema: dict[str, Any], value: str) -> Any:
    """A URI parameter as the type the tool takes; unknown names pass, and the tool refuses."""
    kinds = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    kinds |= {s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)}
    if "integer" in kinds:
        if _WHOLE.fullmatch(value) is None:
            raise ToolError("invalid_arguments", f"{name} must be a whole number (ASCII digits)")
        return int(value)
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    return value
