"""Claims as MCP resources: `resources/read` of a handle returns a window of its claim.

A claim's URI is its handle (`claim:1a2b…`), and the window is chosen by query parameters
named like `fetch_result`'s arguments (`claim:1a2b…?offset=4096`), read as every text door
reads an address (`s3claim.store.Address.from_strings`). Reading is `fetch_result`'s own
(`s3claim.claim_tools.fetch_text`), so the scope checks, the uniform refusal, the events and
every reading mode are the tool's.

A URI is a claim's in any form a reader may take for one (`claim_uri`: percent-encoded, any
case, full-width), so none reaches the upstream. Claims are never listed (`resources/list`
would show other runs' handles), and neither is what an upstream lists posing as one: its
resources and templates a reader may take for a claim's URI are left out of the listings
the client sees (`unclaimed`, for a proxy of one upstream and for a gateway alike).
"""

from __future__ import annotations

import logging
from typing import TypeVar
from urllib.parse import parse_qsl, unquote

from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    TextResourceContents,
)

from s3claim.claim_tools import fetch_text
from s3claim.errors import ToolError
from s3claim.handles import HANDLE_PREFIX
from s3claim.hosting import folded_view, refusal_text
from s3claim.mcp._neutral import neutralised
from s3claim.store import DEFAULT_FETCH_CHARS, Address, AddressError, ClaimCheckStore
from s3claim.tools import RunContext

__all__ = ["claim_uri", "read_claim", "unclaimed"]

_log = logging.getLogger("s3claim.mcp")
_Listing = TypeVar("_Listing", ListResourcesResult, ListResourceTemplatesResult)
_POSING = "%s: leaving out an upstream %s posing as a claim (%d characters)"


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


def read_claim(store: ClaimCheckStore, uri: str, context: RunContext) -> ReadResourceResult:
    """The window `uri` names, read as `fetch_result` reads it; an `MCPError` when refused:
    the rendered refusal, as fetch_result gives it, the same words for every handle (-32602,
    what 2026-07-28 answers for a resource it cannot read)."""
    handle, _, query = uri.partition("#")[0].partition("?")
    try:
        address = Address.from_strings(parse_qsl(query, keep_blank_values=True))
        length = address.window(default=DEFAULT_FETCH_CHARS, most=DEFAULT_FETCH_CHARS)
        text = fetch_text(store, context, handle, address, length=length)
    except AddressError as exc:
        raise MCPError(INVALID_PARAMS, exc.message) from None
    except ToolError as error:
        raise MCPError(INVALID_PARAMS, refusal_text(error)) from None
    return ReadResourceResult(
        contents=[TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
    )
