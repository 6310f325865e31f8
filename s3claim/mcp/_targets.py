"""Targets: where the upstream server is, what a launched one may see of the proxy, and how
much of one answer the proxy takes from it (`--max-result-bytes`).

A stdio upstream is third-party code, and the proxy holds the bucket's credentials and the
handle key: the child gets an allowlisted environment (`SAFE_VARIABLES`, every `LC_*` and
`XDG_*`: what runtimes need, such as CA bundles and proxies, never credentials) plus
exactly what the operator names with `--upstream-env NAME` or `NAME=VALUE`, never more.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from s3claim.mcp._stdio import Launch, stdio_transport

__all__ = [
    "SAFE_VARIABLES",
    "HttpUpstream",
    "StdioUpstream",
    "UpstreamTarget",
    "upstream_environment",
]

_log = logging.getLogger("s3claim.mcp")
_CONNECT_SECONDS, _READ_SECONDS = 30.0, 300.0  # the SDK's defaults (create_mcp_http_client)

_PROXIES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}
)
SAFE_VARIABLES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ",
        "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA",
        "USERPROFILE",
        # CA bundles, without which `npx` behind a TLS-intercepting proxy hangs
        "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        *_PROXIES,
    }
)  # fmt: skip
"""Passed to a stdio upstream as they are in the proxy's environment (with every `LC_*` and
`XDG_*`); a proxy URL that carries a user or password is not passed."""


def upstream_environment(environ: Mapping[str, str], extra: Sequence[str] = ()) -> dict[str, str]:
    """The stdio upstream's environment: the allowlist, then each `NAME` or `NAME=VALUE`.

    Raises `ValueError` for an entry that is not a variable name (or names one that is unset,
    which would otherwise pass silently as nothing).
    """
    env = {k: v for k, v in environ.items() if _safe(k, v)}
    for entry in extra:
        name, sep, value = entry.partition("=")
        if not name or not (name.replace("_", "a").isalnum() and not name[0].isdigit()):
            raise ValueError(f"--upstream-env takes NAME or NAME=VALUE, got {entry!r}")
        if sep:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
        else:
            raise ValueError(f"--upstream-env {name}: the proxy's environment has no {name}")
    return env


def _safe(name: str, value: str) -> bool:
    if name in _PROXIES:
        return "@" not in value  # http://user:password@proxy: a credential
    return name in SAFE_VARIABLES or name.startswith(("LC_", "XDG_"))


@dataclass(frozen=True, kw_only=True)
class StdioUpstream:
    """A server the proxy launches: `command` and its arguments, with environment `env`.

    `env` defaults to the allowlist applied to the proxy's environment at construction.
    `max_line_bytes` bounds one message from it; None takes any size.
    """

    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: upstream_environment(os.environ))
    max_line_bytes: int | None = None

    def launch(self) -> Launch:
        return Launch(self.max_line_bytes)

    def transport(self, launch: Launch) -> AbstractAsyncContextManager[Any]:
        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=dict(self.env), cwd=self.cwd
        )
        return stdio_transport(params, launch)

    def __str__(self) -> str:
        return f"stdio command {self.command!r}"


@dataclass(frozen=True, kw_only=True)
class HttpUpstream:
    """A server reached over streamable HTTP at `url`.

    `max_event_bytes` bounds one message: an SSE event, or a JSON answer's body (refused as
    it streams in, never read whole); None takes any size.
    """

    url: str
    max_event_bytes: int | None = None

    def launch(self) -> Launch:
        return Launch()

    def transport(self, launch: Launch) -> AbstractAsyncContextManager[Any]:
        return _http_transport(self.url, self.max_event_bytes)

    def __str__(self) -> str:
        return f"streamable HTTP at {self.url}"


UpstreamTarget = StdioUpstream | HttpUpstream


@asynccontextmanager
async def _http_transport(url: str, limit: int | None) -> AsyncIterator[Any]:
    # The SDK refuses SSE events over 1 MiB by default; oversized results are exactly what
    # the proxy is for, so the bound is the proxy's own (--max-result-bytes). It reads a JSON
    # answer whole, so the proxy's HTTP client bounds that body as it streams (`_bounded`).
    # The timeouts are the SDK's own client's: a server may hold a stream open.
    hooks: dict[str, list[Callable[..., Any]]] = {}
    if limit is not None:
        hooks["response"] = [partial(_bounded, limit=limit)]
    timeout = httpx2.Timeout(_CONNECT_SECONDS, read=_READ_SECONDS)
    async with (
        httpx2.AsyncClient(timeout=timeout, event_hooks=hooks) as client,
        streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams,
    ):
        yield streams


async def _bounded(response: httpx2.Response, *, limit: int) -> None:
    """A JSON answer's body, counted as it streams in (before any decoding)."""
    if response.headers.get("content-type", "").lower().startswith("application/json"):
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _BoundedBody(response.stream, limit)


class _AnswerTooLargeError(httpx2.StreamError):
    """A JSON answer over the bound: a stream error, which the SDK answers the request with
    (as a parse error carrying this message), so the call ends and the connection serves on."""


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self._stream, self._limit = stream, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._stream:
            size += len(chunk)
            if size > self._limit:
                _log.warning("upstream: a JSON answer is over --max-result-bytes (%d)", self._limit)
                raise _AnswerTooLargeError(
                    "the upstream's answer is larger than the proxy takes "
                    f"(--max-result-bytes {self._limit})"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
