"""Serving: the proxy on stdio (what desktop clients launch) or on streamable HTTP.

On stdio the proxy ends when its client closes stdin, or at SIGTERM, SIGINT or SIGHUP, and
stops a stdio upstream's whole process group on the way out, within a second: clients kill
a server that takes longer, and an upstream in a session of its own would outlive it. Over
HTTP, those signals stop the server gracefully, then close the upstream. On stdio, fd 1 is
the protocol: nothing prints. Over HTTP a gateway's upstreams are also served each alone, at
`/mcp/<name>` beside `/mcp`, and links to its claims (`s3claim.links`) at `/claims/`.

On stdio the proxy speaks only the 2025-11-25 handshake. Its one client gains nothing from
2026-07-28's statelessness there, and loses what the upstream asks of it in the middle of a
call (roots, sampling, elicitation), which 2026-07-28 carries only as an `InputRequiredResult`
to retry. A client in the SDK's default mode asks `server/discover` first, is told there is no
such method, and falls back to the handshake, as it does with the Node reference servers.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Iterator, Mapping

import anyio
import uvicorn
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette

from s3claim.links.server import claims_mount
from s3claim.mcp._erase import erase_route
from s3claim.mcp._gateway import Gateway
from s3claim.mcp._http import HEADER_TIMEOUT_SECONDS, server_config
from s3claim.mcp._proxy import ClaimCheckProxy
from s3claim.mcp._upstream import Upstream, sole_exception
from s3claim.store import RangedStore

__all__ = ["MCP_PATH", "listen_socket", "serve_http", "serve_stdio"]

MCP_PATH = "/mcp"
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


async def _stop_on_signal(server: uvicorn.Server) -> None:
    with anyio.open_signal_receiver(*_SIGNALS) as signals:
        async for _ in signals:
            server.should_exit = True
            return


async def serve_stdio(proxy: ClaimCheckProxy) -> None:
    """Serve one client on stdin/stdout until it closes stdin or a signal ends the process."""
    server = proxy.server()
    async with anyio.create_task_group() as group:
        group.start_soon(_end_on_signal, proxy.upstream)
        async with server.lifespan(server) as state, stdio_server() as (read_stream, write_stream):
            # `Server.run` would serve either era (the client's first request picks one)
            await serve_loop(
                server,
                read_stream,
                write_stream,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )
        group.cancel_scope.cancel()


async def _end_on_signal(upstream: Upstream | Gateway) -> None:
    # The SDK reads stdin in a worker thread that no cancellation interrupts, so the process
    # cannot unwind while it waits for a line: stop the upstream, then die of the signal.
    with anyio.open_signal_receiver(*_SIGNALS) as signals:
        async for signum in signals:
            await upstream.close()
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket; port 0 picks a free one (read it from `getsockname`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Created with proto IPPROTO_TCP, which asyncio must see before it sets TCP_NODELAY on the
    # connections accepted from it: with proto 0 (what socket() and create_server() give),
    # Nagle and delayed ACKs added about 40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until the server accepts them
    except OSError:
        sock.close()
        raise
    return sock


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the proxy's stops it, then closes upstream."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_http(
    proxy: ClaimCheckProxy,
    sock: socket.socket,
    *,
    each: Mapping[str, ClaimCheckProxy] | None = None,
    header_timeout: float = HEADER_TIMEOUT_SECONDS,
) -> None:
    """Serve streamable HTTP at `MCP_PATH` on `sock` until a signal arrives; `each` (a
    gateway's upstreams, each alone, by name) at `MCP_PATH/<name>` beside it; and the links
    to the store's claims at `/claims/` (`s3claim.links.server`): the memory store's too,
    which no other process could serve; and signed erase requests at `/erase`
    (`s3claim.mcp._erase`). A request whose headers take longer than `header_timeout`
    seconds to arrive has its connection closed (`s3claim.mcp`).

    Clients on protocol 2026-07-28 send self-contained requests (no session), so any instance
    behind a load balancer can answer any of them. Older clients open a session
    (`Mcp-Session-Id`) that lives in one process: route them with session affinity.
    """
    host = sock.getsockname()[0]
    paths = {MCP_PATH: proxy, **{f"{MCP_PATH}/{name}": p for name, p in (each or {}).items()}}
    apps = [
        p.server().streamable_http_app(streamable_http_path=path, host=host)
        for path, p in paths.items()
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:  # each endpoint's session manager
            for one in apps:
                await stack.enter_async_context(one.router.lifespan_context(one))
            yield

    routes = [route for one in apps for route in one.routes]
    store = proxy.claim_check.store
    if isinstance(store, RangedStore):
        routes.append(claims_mount(store, proxy.bounds))  # one set of bounds: calls and reads
        routes.append(erase_route(store))  # the memory store's only way out, a signed request
    app = Starlette(routes=routes, lifespan=lifespan)
    server = _Uvicorn(server_config(app, header_timeout=header_timeout, lifespan="on"))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, server)
            await server.serve(sockets=[sock])
            group.cancel_scope.cancel()
    except BaseExceptionGroup as failed:  # the one failure, as itself
        raise sole_exception(failed) from None
