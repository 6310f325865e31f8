"""Upstream: the MCP server behind the proxy, reached as a client, reopened when it dies.

One connection serves every client of the proxy (the SDK's client session multiplexes
requests). It belongs to a supervisor task, because an MCP client must be closed by the task
that opened it: a call that finds the connection dead asks the supervisor for a new one and
waits for it, within the call's timeout. So a crashed stdio server is restarted by the next
call, and a call to a server that hangs ends in `UpstreamError` after the timeout while the
proxy goes on serving.

The stdio child inherits the proxy's environment minus every `S3CLAIM_*` variable: the
handle key is the proxy's secret, not the upstream's.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskStatus
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Tool
from pydantic import ValidationError

from s3claim.errors import UpstreamError
from s3claim.mcp._stdio import stdio_transport

__all__ = ["HttpUpstream", "StdioUpstream", "Upstream", "UpstreamTarget", "sole_exception"]

_log = logging.getLogger("s3claim.mcp")
_T = TypeVar("_T")
_PAGES = 100  # tools/list pages followed at most: a cursor that never ends cannot hang a call


@dataclass(frozen=True, kw_only=True)
class StdioUpstream:
    """A server the proxy launches: `command` and its arguments."""

    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None

    def transport(self) -> AbstractAsyncContextManager[Any]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("S3CLAIM_")}
        params = StdioServerParameters(
            command=self.command, args=list(self.args), env=env, cwd=self.cwd
        )
        return stdio_transport(params)

    def __str__(self) -> str:
        return f"stdio command {self.command!r}"


@dataclass(frozen=True, kw_only=True)
class HttpUpstream:
    """A server reached over streamable HTTP at `url`."""

    url: str

    def transport(self) -> AbstractAsyncContextManager[Any]:
        # The SDK refuses SSE events over 1 MiB by default; oversized results are exactly
        # what the proxy is for, so it takes any size and checks them in.
        return streamable_http_client(self.url, max_sse_event_size=None)

    def __str__(self) -> str:
        return f"streamable HTTP at {self.url}"


UpstreamTarget = StdioUpstream | HttpUpstream


class Upstream:
    """The live connection to one upstream server; open it with `Upstream.connect(...)`."""

    def __init__(self, target: UpstreamTarget, *, timeout: float) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.target = target
        self.timeout = timeout
        self.instructions: str | None = None
        self._client: Client | None = None
        self._failed: str | None = None  # why the last attempt to connect failed
        self._wanted = anyio.Event()  # a caller needs a connection
        self._drop = anyio.Event()  # the current connection is dead
        self._changed = anyio.Event()  # connected, or an attempt failed

    @classmethod
    @asynccontextmanager
    async def connect(cls, target: UpstreamTarget, *, timeout: float) -> AsyncIterator[Upstream]:
        """Connect once (raising `UpstreamError` if that fails); reconnect on demand after."""
        upstream = cls(target, timeout=timeout)
        try:
            async with anyio.create_task_group() as group:
                await group.start(upstream._supervise)
                try:
                    yield upstream
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # one failure, the caller's or ours: as it is
            raise sole_exception(group) from None

    async def _supervise(self, *, task_status: TaskStatus[None]) -> None:
        started = False
        while True:
            connected = False
            failure: str | None = None
            try:
                # One scope around the whole connection, so that the task groups the client
                # opens nest inside it: its deadline bounds the handshake, then is lifted.
                with anyio.CancelScope() as connecting:
                    connecting.deadline = anyio.current_time() + self.timeout
                    async with self._open() as client:
                        connecting.deadline = math.inf
                        connected = True
                        self._client, self._failed = client, None
                        self.instructions = client.instructions
                        self._announce()
                        if not started:
                            task_status.started()
                            started = True
                        try:
                            await self._drop.wait()
                        finally:
                            self._client = None
                if not connected:
                    failure = "TimeoutError"
            except Exception as exc:  # a dead server's transport may also complain on closing
                failure = None if connected else type(exc).__name__
            if failure is not None and not started:
                raise UpstreamError(
                    "upstream_unavailable", f"cannot start the upstream ({failure})"
                )
            if failure is not None:
                _log.warning("upstream: reconnecting failed (%s)", failure)
                self._failed = failure
                self._announce()
            else:
                _log.warning("upstream: the connection was lost; reconnecting on the next call")
            await self._wanted.wait()
            self._wanted = anyio.Event()
            self._drop = anyio.Event()

    def _open(self) -> Client:
        # No response cache: the proxy lists the upstream's tools as they are now.
        return Client(self.target.transport(), cache=None)

    def _announce(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _client_now(self) -> Client:
        """The open connection, or a new one within the timeout."""
        while self._client is None:
            changed = self._changed
            self._wanted.set()
            await changed.wait()
            if self._client is None and self._failed is not None:
                raise UpstreamError(
                    "upstream_unavailable", f"the upstream is not reachable ({self._failed})"
                )
        return self._client

    def _lost(self, client: Client) -> None:
        if self._client is client:
            self._drop.set()

    async def list_tools(self) -> list[Tool]:
        """Every tool the upstream lists now, all pages."""
        return await self._request(self._list_tools)

    async def _list_tools(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None) -> CallToolResult:
        """The upstream's result; its JSON-RPC errors propagate as `MCPError`."""

        async def call(client: Client) -> CallToolResult:
            args = dict(arguments) if arguments is not None else None
            return await client.call_tool(name, args, read_timeout_seconds=self.timeout)

        return await self._request(call)

    async def _request(self, send: Callable[[Client], Awaitable[_T]]) -> _T:
        client: Client | None = None
        try:
            with anyio.fail_after(self.timeout):
                client = await self._client_now()
                return await send(client)
        except TimeoutError:
            raise UpstreamError(
                "upstream_timeout", f"the upstream did not answer within {self.timeout:g} s"
            ) from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise UpstreamError(
                    "upstream_timeout", f"the upstream did not answer within {self.timeout:g} s"
                ) from None
            if exc.code != CONNECTION_CLOSED:
                raise  # the upstream's own answer: the client gets it as it is
            self._forget(client)
            raise UpstreamError(
                "upstream_unavailable", "the upstream closed the connection"
            ) from None
        except (RuntimeError, ValidationError) as exc:
            # The connection works; the upstream broke the protocol (e.g. a result that does
            # not match its own output schema).
            raise UpstreamError(
                "upstream_invalid_result",
                f"the upstream's answer was refused ({type(exc).__name__})",
            ) from None
        except UpstreamError:
            raise
        except Exception as exc:  # a broken pipe, a refused connection: start afresh next time
            self._forget(client)
            raise UpstreamError(
                "upstream_unavailable", f"the upstream failed ({type(exc).__name__})"
            ) from None

    def _forget(self, client: Client | None) -> None:
        if client is not None:
            self._lost(client)


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task group wrapped, as itself; a group of several stays a group."""
    leaves = _leaves(group)
    return leaves[0] if len(leaves) == 1 and isinstance(leaves[0], Exception) else group


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
