"""Targets: where the upstream server is, and what a launched one may see of the proxy.

A stdio upstream is third-party code, and the proxy holds the bucket's credentials and the
handle key: the child gets an allowlisted environment (`SAFE_VARIABLES`, every `LC_*` and
`XDG_*`: what runtimes need, such as CA bundles and proxies, never credentials) plus
exactly what the operator names with `--upstream-env NAME` or `NAME=VALUE`, never more.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

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

    `max_event_bytes` bounds one SSE event (one message); None takes any size.
    """

    url: str
    max_event_bytes: int | None = None

    def launch(self) -> Launch:
        return Launch()

    def transport(self, launch: Launch) -> AbstractAsyncContextManager[Any]:
        # The SDK refuses SSE events over 1 MiB by default; oversized results are exactly
        # what the proxy is for, so the bound is the proxy's own (--max-result-bytes).
        return streamable_http_client(self.url, max_sse_event_size=self.max_event_bytes)

    def __str__(self) -> str:
        return f"streamable HTTP at {self.url}"


UpstreamTarget = StdioUpstream | HttpUpstream
