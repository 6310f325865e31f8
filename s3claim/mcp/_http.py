"""What s3claim's HTTP servers share: uvicorn, configured once (it comes with the MCP SDK).

Two servers run on it: `s3claim serve` (the link server alone) and `s3claim mcp-proxy
--listen` (streamable HTTP, the links beside it). Both take `server_config`: warnings only,
no access log (a link's URL is a credential until it expires), and a bound on the time a
request's line and headers may take to arrive.

**Why the bound.** A connection that opens and never finishes its headers held a connection
and a file descriptor for as long as its client liked (300 of 300 after 20 s, issue 46).
uvicorn bounds only the wait *between* requests: `timeout_keep_alive` is armed when a
response completes and cancelled by the first byte of the next request, so it never covers
a fresh connection, nor a request that has begun and stalls, in its h11 and httptools
implementations alike; no option of uvicorn bounds the header phase. So the servers speak
HTTP/1.1 through `BoundedH11`, uvicorn's h11 protocol with one timer more.

**What it bounds.** The timer is armed when a connection opens, and again when the first
bytes of another request arrive on it after a response; it is cancelled once that
request's headers are whole. When it fires, the connection is closed without an answer.
The bound is the time to the end of the headers, whatever arrives before it: sending a byte
at a time does not extend it. A body a client uploads slowly, an answer it reads slowly and
a long MCP stream (SSE) are not bounded: their headers have arrived. An idle keep-alive
connection is uvicorn's own (5 s).

The protocol is h11, named, not uvicorn's "auto", which picks httptools whenever httptools
is importable: the bound would come and go with whatever else is installed.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import h11
import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol

# How long a request's line and headers may take to arrive, from the connection's opening
# (or, on a kept-alive connection, from the request's first byte); the commands'
# `--header-timeout` (env `S3CLAIM_HEADER_TIMEOUT`), declared with the proxy's settings.
from s3claim.proxy_settings import HEADER_TIMEOUT_SECONDS

__all__ = ["HEADER_TIMEOUT_SECONDS", "BoundedH11", "ServerConfig", "server_config"]


class ServerConfig(uvicorn.Config):
    """uvicorn's configuration, with the bound on a request's headers (`BoundedH11`)."""

    def __init__(
        self, app: Starlette, *, header_timeout: float, lifespan: Literal["on", "off"]
    ) -> None:
        if not 0 < header_timeout < float("inf"):
            raise ValueError(f"header_timeout is a number of seconds above 0, not {header_timeout}")
        super().__init__(
            app, http=BoundedH11, lifespan=lifespan, log_level="warning", access_log=False
        )
        self.header_timeout = header_timeout


def server_config(
    app: Starlette,
    *,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
    lifespan: Literal["on", "off"] = "off",
) -> ServerConfig:
    """How every HTTP server of s3claim runs `app` (see the module docstring)."""
    return ServerConfig(app, header_timeout=header_timeout, lifespan=lifespan)


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol, a request's headers bounded in time (the module docstring)."""

    _headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # a request yet to come whole: its headers
            self._await_headers()
        else:  # headers whole (a body may follow, or the answer), or the connection failed
            self._stop_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        if self._headers_due is None and not self.transport.is_closing():
            config = self.config
            seconds = (
                config.header_timeout
                if isinstance(config, ServerConfig)
                else HEADER_TIMEOUT_SECONDS
            )
            self._headers_due = self.loop.call_later(seconds, self._headers_late)

    def _stop_waiting(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _headers_late(self) -> None:
        self._headers_due = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
