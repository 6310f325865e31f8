"""Upstream: the MCP server behind the proxy, reached as a client, reopened when it dies.

One connection serves every client of the proxy. It belongs to a supervisor task, because an
MCP client must be closed by the task that opened it: a call that finds it dead asks the
supervisor for a new one and waits, within the call's timeout. So a crashed stdio server is
restarted by the next call, and a hanging one ends the call in `UpstreamError` while the
proxy goes on serving. Restarting is for a closed transport, never for an answer: an error
answer is the upstream's, whatever its code (-32000 too, which is also the SDK's code for a
closed connection: a ping tells them apart).

The connection speaks the 2025-11-25 handshake (`mode="legacy"`), where what the server sends
during a call (progress, log lines, sampling, elicitation, roots) is plain JSON-RPC the proxy
relays (`downstream`), whatever protocol its client speaks. It advertises sampling,
elicitation and roots; a request its client cannot answer is refused as the client's SDK
would refuse it. A connection is handed out once a ping is answered, so what the server asks
on its `initialized` (roots) is seen before a request goes, and waited for (`Relay`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from s3claim.errors import UpstreamError
from s3claim.mcp._relay import Relay
from s3claim.mcp._stdio import Launch
from s3claim.mcp._targets import HttpUpstream, StdioUpstream, UpstreamTarget

__all__ = ["Upstream", "sole_exception"]

_log = logging.getLogger("s3claim.mcp")
_R = TypeVar("_R", bound=BaseModel)
_PING_SECONDS = 5.0  # to tell a closed connection from an upstream's own -32000 answer
_DEFAULT_STARTUP_SECONDS = 20.0
_BARRIER_SECONDS = 1.0


class Upstream:
    """The live connection to one upstream server; open it with `Upstream.connect(...)`.

    `timeout` bounds each request (and a restart); `startup_timeout` bounds the first
    connection, so a command that is not an MCP server fails in seconds, not minutes. `name`
    is a gateway's name for it (`Gateway`), in its log lines and what it relays.
    """

    def __init__(
        self,
        target: UpstreamTarget,
        *,
        timeout: float,
        startup_timeout: float | None = None,
        name: str | None = None,
    ) -> None:
        for what, value in (("timeout", timeout), ("startup_timeout", startup_timeout)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
        self.target = target
        self.name = name
        self.timeout = timeout
        self.startup_timeout = startup_timeout or min(timeout, _DEFAULT_STARTUP_SECONDS)
        self._downstream: Relay | None = None
        self._named = anyio.Event()  # a downstream is named
        self.instructions: str | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities = types.ServerCapabilities()
        self._client: Client | None = None
        self._failed: str | None = None  # why the last attempt to connect failed
        self._wanted = anyio.Event()  # a caller needs a connection
        self._drop = anyio.Event()  # the current connection is dead
        self._changed = anyio.Event()  # connected, or an attempt failed
        self._stopping = anyio.CancelScope()  # around the supervisor: `close` cancels it
        self._stopped = anyio.Event()

    @property
    def downstream(self) -> Relay | None:
        """Where what the upstream sends of its own goes; the proxy names it. Until then, a
        request of the upstream's waits for it (within the startup timeout: the upstream may
        ask as soon as it has started, as server-filesystem asks for roots), then is refused
        as the client's SDK refuses it; a notification is dropped."""
        return self._downstream

    @downstream.setter
    def downstream(self, relay: Relay | None) -> None:
        self._downstream = relay
        if relay is not None:
            self._named.set()

    async def _relay(self) -> Relay | None:
        if self._downstream is None:
            with anyio.move_on_after(self.startup_timeout):
                await self._named.wait()
        return self._downstream

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        target: UpstreamTarget,
        *,
        timeout: float,
        startup_timeout: float | None = None,
        name: str | None = None,
    ) -> AsyncIterator[Upstream]:
        """Connect once (raising `UpstreamError` if that fails); reconnect on demand after."""
        upstream = cls(target, timeout=timeout, startup_timeout=startup_timeout, name=name)
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
        try:
            with self._stopping:
                await self._connections(task_status)
        finally:
            self._stopped.set()

    async def _connections(self, task_status: TaskStatus[None]) -> None:
        started = False
        while True:
            connected = False
            failure: str | None = None
            launch = self.target.launch()
            limit = self.timeout if started else self.startup_timeout
            try:
                # One scope around the whole connection, so that the task groups the client
                # opens nest inside it: its deadline bounds the handshake, then is lifted.
                with anyio.CancelScope(deadline=anyio.current_time() + limit) as connecting:
                    async with self._open(launch) as client:
                        await _pinged(client)
                        connecting.deadline = math.inf
                        connected = True
                        self._adopt(client)
                        if not started:
                            task_status.started()
                            started = True
                        try:
                            await self._drop.wait()
                        finally:
                            self._client = None
                if not connected:
                    failure = _timed_out(self, launch, limit, started=started)
            except Exception as exc:  # a dead server's transport may also complain on closing
                failure = None if connected else _failed_to_start(self.target, launch, exc)
            if failure is not None and not started:
                raise UpstreamError("upstream_unavailable", f"cannot start the upstream: {failure}")
            label = f"upstream {self.name}" if self.name else "upstream"
            if failure is not None:
                _log.warning("%s: reconnecting failed (%s)", label, failure)
                self._failed = failure
                self._announce()
            else:
                _log.warning("%s: the connection was lost; reconnecting on the next call", label)
            await self._wanted.wait()
            self._wanted = anyio.Event()
            self._drop = anyio.Event()

    def _adopt(self, client: Client) -> None:
        self._client, self._failed = client, None
        self.instructions = client.instructions
        self.server_info = client.server_info
        self.capabilities = client.server_capabilities
        self._announce()

    def _open(self, launch: Launch) -> Client:
        # No response cache: the proxy lists the upstream's tools as they are now.
        return Client(
            self.target.transport(launch),
            mode="legacy",
            cache=None,
            sampling_callback=self._sampling,
            elicitation_callback=self._elicitation,
            list_roots_callback=self._roots,
            message_handler=self._message,
        )

    async def _sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        downstream = await self._relay()
        if downstream is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="Sampling not supported")
        return await downstream.sampling(params, upstream=self.name)

    async def _elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        downstream = await self._relay()
        if downstream is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="Elicitation not supported")
        return await downstream.elicitation(params, upstream=self.name)

    async def _roots(
        self, context: ClientRequestContext
    ) -> types.ListRootsResult | types.ErrorData:
        downstream = await self._relay()
        if downstream is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="List roots not supported")
        return await downstream.roots(upstream=self.name)

    async def _message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, types.ServerNotification) and self.downstream is not None:
            await self.downstream.notification(message, upstream=self.name)

    def _announce(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def close(self) -> None:
        """Stop the upstream now (a stdio server's whole process group) and wait until it is."""
        self._stopping.cancel()
        await self._stopped.wait()

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

    async def send(
        self,
        request: types.ClientRequest | types.Request[Any, Any],
        result_type: type[_R],
        *,
        progress: ProgressFnT | None = None,
    ) -> _R:
        """One request to the upstream, answered by `result_type`.

        Raises `MCPError` for the upstream's error answer (as it sent it), `UpstreamError`
        when it cannot answer (unreachable, closed, too slow, or an answer that breaks the
        protocol).
        """
        client: Client | None = None
        if self.name is not None and self.downstream is not None:
            self.downstream.routed(self.name)  # what this upstream sends meanwhile is for it
        try:
            with anyio.fail_after(self.timeout):
                client = await self._client_now()
                if self.downstream is not None:
                    await self.downstream.roots_answered()
                return await client.session.send_request(
                    request, result_type, progress_callback=progress
                )
        except TimeoutError:
            raise UpstreamError(
                "upstream_timeout",
                f"the upstream did not answer within {self.timeout:g} s (--upstream-timeout)",
            ) from None
        except MCPError as exc:
            if (
                exc.code == types.CONNECTION_CLOSED
                and client is not None
                and not await self._alive(client)
            ):
                self._forget(client)
                raise UpstreamError(
                    "upstream_unavailable", "the upstream closed the connection"
                ) from None
            raise  # the upstream's own answer
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

    async def notify(self, notification: types.ClientNotification) -> None:
        """Tell the upstream something (best effort: a closed connection drops it)."""
        client = self._client
        if client is not None:
            with suppress(Exception):
                await client.session.send_notification(notification)

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the upstream lists now, all pages."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a cursor that never ends cannot hang a call
            page = await self.send(
                types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor)),
                types.ListToolsResult,
            )
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _alive(self, client: Client) -> bool:
        with anyio.move_on_after(_PING_SECONDS):
            try:
                await client.session.send_request(types.PingRequest(), types.EmptyResult)
            except Exception:  # closed, or it refuses pings: either way not a live peer
                return False
            return True
        return False

    def _forget(self, client: Client | None) -> None:
        if client is not None and self._client is client:
            self._drop.set()


async def _pinged(client: Client) -> None:
    """A ping answered: what the server sent on its `initialized` before answering (a roots
    request, as server-filesystem sends) has been seen, so a request sent after this waits
    for it (`Relay.roots_answered`)."""
    with anyio.move_on_after(_BARRIER_SECONDS), suppress(Exception):  # no answer, no barrier
        await client.session.send_request(types.PingRequest(), types.EmptyResult)


def _timed_out(upstream: Upstream, launch: Launch, seconds: float, *, started: bool) -> str:
    if launch.returncode is not None:
        return _exited(launch)
    flag = "--upstream-timeout" if started else "--startup-timeout"
    said = f"no MCP handshake within {seconds:g} s ({flag}); is it an MCP server"
    if isinstance(upstream.target, HttpUpstream):
        return f"{said} (streamable HTTP)?"
    # A gateway's upstream (it has a name) gets its environment from the file, not the flag.
    how = (
        "--upstream-env NAME"
        if upstream.name is None
        else f"env or pass_env in [upstreams.{upstream.name}] of the --config file"
    )
    return (
        f"{said} on its stdin and stdout? Or it waits for something missing from its "
        "environment, which holds only PATH, HOME, locale, CA bundles and proxies: pass "
        f"a variable it needs with {how}"
    )


def _exited(launch: Launch) -> str:
    said = launch.stderr_tail
    tail = f"; its last stderr lines: {' | '.join(said)}" if said else "; it wrote nothing"
    return f"the command exited with code {launch.returncode} before the MCP handshake{tail}"


def _failed_to_start(target: UpstreamTarget, launch: Launch, exc: BaseException) -> str:
    leaves = _leaves(exc)
    if isinstance(target, StdioUpstream):
        missing = [leaf for leaf in leaves if isinstance(leaf, FileNotFoundError)]
        # The chdir into `cwd` fails with the FileNotFoundError an unknown command does.
        if missing and target.cwd is not None and not os.path.isdir(target.cwd):
            return f"its working directory (cwd) does not exist: {target.cwd!r}"
        if missing:
            return f"no such command: {target.command!r}"
        if any(isinstance(leaf, PermissionError) for leaf in leaves):
            return f"the command cannot be run (permission denied): {target.command!r}"
        if launch.returncode is not None:
            return _exited(launch)
    if isinstance(target, HttpUpstream):
        for leaf in leaves:
            name = type(leaf).__name__
            if name == "ConnectError" or isinstance(leaf, ConnectionRefusedError):
                return f"connection refused at {target.url}"
            if name == "HTTPStatusError":
                status = getattr(getattr(leaf, "response", None), "status_code", "?")
                return f"{target.url} answered HTTP {status}; is it an MCP endpoint?"
        if any(isinstance(leaf, MCPError) for leaf in leaves):
            return f"no MCP server answered at {target.url} (connection refused or closed)"
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            return f"the MCP handshake failed: {leaf.error.message[:200]}"
    return f"{type(leaves[0]).__name__} while connecting" if leaves else "unknown failure"


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a task group wrapped, as itself; a group of several stays a group."""
    leaves = _leaves(group)
    return leaves[0] if len(leaves) == 1 and isinstance(leaves[0], Exception) else group


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
