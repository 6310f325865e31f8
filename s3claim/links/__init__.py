"""Links: a URL that lets code read one claim, with nothing but an HTTP client.

`link(store, handle, scope=..., base_url=...)` (or `ClaimCheck.link`) returns
`{base_url}/claims/{token}`: the token names one claim in one scope, the check-in of it that
stands when the link is made, and an expiry, sealed under the handle key (`_token`:
encrypted, so the URL shows no tenant or run name, and MAC'd, so no bit of it can change).
It expires after `ttl_seconds`, and never after the claim does. It ends with its check-in:
`forget` of the tenant or the run ends it for good, though the same text checked in again in
the same run has the same handle; a refresh (a repeat put) keeps the check-in, and the link.
`s3claim serve`, or the MCP gateway over HTTP, serves it (`s3claim.links.server`, which
needs the `mcp` extra): the claim's exact text, by byte range or reading mode.
docs/code.md has the threat model and the limits.
"""

from __future__ import annotations

import ipaddress
import math
from urllib.parse import urlsplit

from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ConfigurationError
from s3claim.handles import is_handle
from s3claim.links._token import Link, LinkKey
from s3claim.scope import Scope
from s3claim.store import RangedStore, check_ttl

__all__ = [
    "DEFAULT_LINK_TTL_SECONDS",
    "LINK_PATH",
    "Link",
    "LinkKey",
    "check_base_url",
    "link",
]

DEFAULT_LINK_TTL_SECONDS = 300
"""Five minutes: long enough for code to start and read, short enough to leak little."""
LINK_PATH = "/claims/"
"""Where a link's token sits under its base URL, and where servers mount the links."""
_LOOPBACK_NAMES = {"localhost"}


def check_base_url(base_url: str) -> str:
    """`base_url` without its trailing slash, if links may be served there: HTTPS anywhere,
    plain HTTP on a loopback host only (a link is a bearer credential: never in clear on a
    network). Anything else is a `ConfigurationError` (a ValueError) in one line."""
    if not isinstance(base_url, str):
        raise ConfigurationError(f"base_url must be a string, got {type(base_url).__name__}")
    try:
        parts = urlsplit(base_url)
        host = parts.hostname
        parts.port  # noqa: B018 (a port out of range raises here)
    except ValueError:
        raise ConfigurationError(f"base_url is not a URL: {base_url!r}") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ConfigurationError(
            f"base_url must be https://HOST[:PORT][/PATH] (or http:// on a loopback host), "
            f"got {base_url!r}"
        )
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ConfigurationError(
            f"base_url takes no credentials, query or fragment, got {base_url!r}"
        )
    if parts.scheme == "http" and not _is_loopback(host):
        raise ConfigurationError(
            f"base_url must use https:// unless its host is loopback (127.0.0.1, ::1, "
            f"localhost): a link is a credential, got {base_url!r}"
        )
    return base_url.rstrip("/")


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def link(
    store: object,
    handle: str,
    *,
    scope: Scope,
    base_url: str,
    ttl_seconds: int = DEFAULT_LINK_TTL_SECONDS,
) -> str:
    """A URL that reads the claim `handle` of `scope` until `ttl_seconds` from now, or the
    claim's own expiry if sooner, as long as the check-in standing now does. One metadata read
    of the claim (its expiry and check-in); `ClaimUnavailableError` for a handle `scope`
    cannot redeem, a damaged claim's included."""
    base = check_base_url(base_url)
    check_ttl(ttl_seconds)
    if not isinstance(store, RangedStore):
        raise TypeError(f"{type(store).__name__} cannot serve links")
    if not is_handle(handle):
        raise ClaimUnavailableError
    try:
        check_in = store.checked_in(scope, handle)
    except ClaimStoreError as exc:  # a damaged claim is the one refusal, here as at every door
        if exc.reason == "damaged":
            raise ClaimUnavailableError from None
        raise
    until = min(store.clock.now() + ttl_seconds, check_in.expires_at)
    token = LinkKey(store.handle_key).seal(Link(handle, scope, math.floor(until), check_in.id))
    return f"{base}{LINK_PATH}{token}"
