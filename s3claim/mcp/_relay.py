"""Relay: what the upstream sends on its own (requests, notifications) reaches the right client.

The upstream connection is shared by every client, and the 2025-11-25 protocol does not say
which call a server's request or log line belongs to. So: with calls in flight from exactly
one client connection, it goes there (on the call's own stream when there is one call, where
an HTTP client waits); with none in flight, to a stdio proxy's one client (`server-filesystem`
asks for roots right after its handshake: the request waits for the client to initialize),
to nobody on HTTP; otherwise to nobody, as one client's log line or sampling request must
never reach another tenant (a request is refused to the upstream, a notification dropped).
List-changed notifications go to every client, a resource update to its subscribers; all of
it neutralised first. A stdio client's requests wait until the upstream's roots requests
are answered (`roots_answered`), so its first call finds its roots there.

Behind a gateway (`_gateway`) one relay serves every upstream, and a call counts for the one
upstream it was routed to (`routed`): what an upstream sends (naming itself) goes to the
client with calls in flight to it, so clients busy with different upstreams do not block
each other.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel

from s3claim.mcp._neutral import neutralised

__all__ = ["Relay", "connection_of"]

_log = logging.getLogger("s3claim.mcp")
_BROADCAST = (
    types.ToolListChangedNotification,
    types.ResourceListChangedNotification,
    types.PromptListChangedNotification,
)
_T = TypeVar("_T", bound=BaseModel)
_ROOTS_SECONDS = 2.0
# No message says that an upstream has applied a roots answer, and servers do I/O first
# (server-filesystem checks each root on disk): a request forwarded at once raced it.
_APPLY_SECONDS = 0.1
_NOBODY = "the proxy cannot tell which of its clients this request is for"


def connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    """The client connection a request came on (the SDK keeps it behind the session)."""
    connection: Connection = ctx.session._connection
    return connection


@dataclass(eq=False)
class _Call:
    session: ServerSession
    request_id: types.RequestId | None
    connection: Connection
    meta: dict[str, Any] | None
    upstreams: set[str] = field(default_factory=set)  # a gateway's it went to; none: any


# The call the current task forwards: which of a gateway's upstreams it goes to is known only
# as one sends it (`Upstream.send`), inside `Relay.call`.
_CURRENT: ContextVar[_Call | None] = ContextVar("s3claim_mcp_call", default=None)


class Relay:
    """The upstream's `downstream`: routes its requests and notifications to the clients."""

    def __init__(self, *, single_client: bool, wait_seconds: float) -> None:
        self.single_client = single_client
        self.wait_seconds = wait_seconds
        self._calls: set[_Call] = set()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._subscribed: dict[str, weakref.WeakSet[Connection]] = {}
        self._first = anyio.Event()
        self._roots_open = 0  # the upstream's roots requests not answered yet
        self._roots_done = anyio.Event()
        self._roots_done.set()
        self._roots_given = -math.inf  # when the client's roots last reached the upstream

    def seen(self, ctx: ServerRequestContext[Any]) -> Connection:
        connection = connection_of(ctx)
        if connection not in self._connections:
            self._connections.add(connection)
            self._first.set()
        return connection

    @contextmanager
    def call(self, ctx: ServerRequestContext[Any]) -> Iterator[None]:
        """While a forwarded request is in flight, what the upstream sends may be for it."""
        meta = dict(ctx.meta) if ctx.meta is not None else None
        call = _Call(ctx.session, ctx.request_id, self.seen(ctx), meta)
        self._calls.add(call)
        token = _CURRENT.set(call)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            self._calls.discard(call)

    def routed(self, upstream: str) -> None:
        """The call this task forwards goes (also) to `upstream`, a gateway's, by name."""
        call = _CURRENT.get()
        if call is not None and call in self._calls:
            call.upstreams.add(upstream)

    def subscribe(self, ctx: ServerRequestContext[Any], uri: str) -> bool:
        """Record a subscription; True when it is the first, so the upstream must hear of it."""
        watchers = self._subscribed.setdefault(uri, weakref.WeakSet())
        first = not watchers
        watchers.add(self.seen(ctx))
        return first

    def unsubscribe(self, ctx: ServerRequestContext[Any], uri: str) -> bool:
        """Forget a subscription; True when it was the last one."""
        watchers = self._subscribed.get(uri)
        if watchers is None:
            return False
        watchers.discard(connection_of(ctx))
        if watchers:
            return False
        del self._subscribed[uri]
        return True

    async def _target(
        self, *, wait: bool = True, upstream: str | None = None
    ) -> _Call | Connection | None:
        """Who gets what the upstream sends now (see the module docstring).

        `wait`: a stdio proxy's client may not have connected yet; a request waits for it, a
        notification never does (it would hold up the upstream connection's other messages).
        `upstream`: the gateway's upstream that sends it; calls routed elsewhere do not count.
        """
        calls = [
            c for c in self._calls if upstream is None or not c.upstreams or upstream in c.upstreams
        ]
        connections = {call.connection for call in calls}
        if len(connections) == 1:
            if len(calls) == 1:
                return calls[0]
            return connections.pop()
        if connections or not self.single_client:
            return None
        if wait:
            with anyio.move_on_after(self.wait_seconds):
                await self._first.wait()
        return next(iter(self._connections), None)

    async def _ask(
        self,
        request: types.ServerRequest,
        result: type[_T],
        capable: types.ClientCapabilities,
        upstream: str | None,
    ) -> _T | types.ErrorData:
        target = await self._target(upstream=upstream)
        if target is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=_NOBODY)
        connection = target.connection if isinstance(target, _Call) else target
        if not connection.check_capability(capable):
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=f"the client does not support {request.method}"
            )
        try:
            if isinstance(target, _Call):
                metadata = ServerMessageMetadata(related_request_id=target.request_id)
                return await target.session.send_request(request, result, metadata=metadata)
            return await connection.send_request(request, result_type=result)
        except MCPError as exc:
            return exc.error
        except NoBackChannelError:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"the client's protocol ({connection.protocol_version}) takes no "
                "requests from a server in the middle of a call through the proxy",
            )

    async def sampling(
        self, params: types.CreateMessageRequestParams, *, upstream: str | None = None
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        request = types.CreateMessageRequest(params=neutralised(params))
        capable = types.ClientCapabilities(sampling=types.SamplingCapability())
        if params.tools:
            return await self._ask(request, types.CreateMessageResultWithTools, capable, upstream)
        return await self._ask(request, types.CreateMessageResult, capable, upstream)

    async def elicitation(
        self, params: types.ElicitRequestParams, *, upstream: str | None = None
    ) -> types.ElicitResult | types.ErrorData:
        request = types.ElicitRequest(params=neutralised(params))
        capable = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        return await self._ask(request, types.ElicitResult, capable, upstream)

    async def roots(
        self, *, upstream: str | None = None
    ) -> types.ListRootsResult | types.ErrorData:
        capable = types.ClientCapabilities(roots=types.RootsCapability())
        if not self._roots_open:
            self._roots_done = anyio.Event()
        self._roots_open += 1
        try:
            answer = await self._ask(
                types.ListRootsRequest(), types.ListRootsResult, capable, upstream
            )
            if isinstance(answer, types.ListRootsResult):
                self._roots_given = anyio.current_time()
            return answer
        finally:
            self._roots_open -= 1
            if not self._roots_open:
                self._roots_done.set()

    async def roots_answered(self) -> None:
        """Before a stdio client's request goes upstream: the upstream's roots requests are
        answered, and it has had a moment to apply the answer. Bounded: a client that does
        not answer holds its requests up for `_ROOTS_SECONDS` at most."""
        if not (self.single_client and self._first.is_set()):
            return  # HTTP: one client's exchange must not hold up another's calls
        if self._roots_open:
            with anyio.move_on_after(_ROOTS_SECONDS):
                await self._roots_done.wait()
        applied = self._roots_given + _APPLY_SECONDS - anyio.current_time()
        if applied > 0:
            await anyio.sleep(applied)

    async def notification(
        self, message: types.ServerNotification, *, upstream: str | None = None
    ) -> None:
        if isinstance(message, _BROADCAST):
            for connection in list(self._connections):
                await connection.notify(message.method, _params(message))
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            for connection in list(self._subscribed.get(message.params.uri, ())):
                await connection.notify(message.method, _params(neutralised(message)))
            return
        if not isinstance(
            message, types.LoggingMessageNotification | types.ElicitCompleteNotification
        ):
            return  # progress and cancellation are the dispatcher's; the rest has no client
        target = await self._target(wait=False, upstream=upstream)
        if target is None:
            _log.debug("upstream %s: no client to give it to", message.method)
            return
        safe = neutralised(message)
        if isinstance(target, _Call):
            levels = allowed_log_levels(target.connection.protocol_version, target.meta)
            if isinstance(message, types.LoggingMessageNotification) and (
                message.params.level not in levels
            ):
                return
            await target.session.send_notification(safe, related_request_id=target.request_id)
        else:
            await target.notify(message.method, _params(safe))


def _params(message: types.ServerNotification) -> dict[str, Any] | None:
    params = message.model_dump(by_alias=True, mode="json", exclude_none=True).get("params")
    return params if isinstance(params, dict) else None
