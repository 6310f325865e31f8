"""AsyncS3ClaimCheckStore: the S3 store for coroutines, its reads on aiobotocore.

Every reading mode is sent from the event loop on an async client: the sync store's plans
(`s3claim.store`) over the same ranges (`_reads`), with at most `max_in_flight` requests on
the wire, so no thread competes with the loop for the GIL. `put`, `forget` and `hand_off` run
on worker threads through the sync store: a check-in serialises and hashes the whole result
(CPU that must stay off the loop), erasure is rare, and a hand-off sends no body.

The async client is built, on first use in the running loop, from the sync store's client
(endpoint, region, configuration, credentials) with one attempt per call. It belongs to that
loop: use one instance per loop, and close it (`aclose()`, or `async with`).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar

from botocore.config import Config

from s3claim.aio import DEFAULT_MAX_WORKERS, ThreadedAsyncStore
from s3claim.erasure import ErasureReceipt
from s3claim.errors import ClaimUnavailableError
from s3claim.extras import require_extra
from s3claim.handles import is_handle
from s3claim.s3._counting import count_requests
from s3claim.s3._reads import Call, ClaimOps, Reply, async_sender, perform_async
from s3claim.s3._store import S3ClaimCheckStore, claim_objects
from s3claim.scope import Scope
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    ClaimInfo,
    IndexPart,
    LineWindow,
    PathRead,
    Plan,
    TextPart,
    Window,
    arun,
    end_plan,
    finish,
    line_plan,
    path_plan,
    read_outcome,
    window_plan,
)
from s3claim.telemetry import fetch_operation

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "AsyncS3ClaimCheckStore"]

DEFAULT_MAX_IN_FLIGHT = 4
"""Requests on the wire at once. More adds throughput only while the loop has time to spare:
every answer is parsed on it."""

_T = TypeVar("_T", Window, LineWindow, PathRead)


class AsyncS3ClaimCheckStore:
    """An `AsyncClaimCheckStore` over an `S3ClaimCheckStore`, sharing its bucket and claims.

    Needs the `aio` extra (aiobotocore): without it, construction raises `MissingExtraError`
    naming the install, rather than the first fetch failing on a bare import.
    """

    def __init__(
        self,
        store: S3ClaimCheckStore,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> None:
        if not isinstance(store, S3ClaimCheckStore):
            raise TypeError(
                f"AsyncS3ClaimCheckStore wraps an S3ClaimCheckStore, got {type(store).__name__}"
            )
        require_extra("aio")
        if (
            isinstance(max_in_flight, bool)
            or not isinstance(max_in_flight, int)
            or max_in_flight < 1
        ):
            raise ValueError(f"max_in_flight must be a positive integer, got {max_in_flight!r}")
        self.store = store
        self._threads = ThreadedAsyncStore(store, max_workers=max_workers)
        self._max_in_flight = max_in_flight
        self._opening = asyncio.Lock()
        self._stack: AsyncExitStack | None = None
        self._client: Any = None
        self._bound = asyncio.Semaphore(max_in_flight)

    async def put(
        self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None
    ) -> str:
        return await self._threads.put(scope, content, ttl_seconds=ttl_seconds, tool=tool)

    async def claims(self, *, tenant: str, run: str | None = None) -> list[ClaimInfo]:
        """The sync store's listing (a HeadObject a claim), on a worker."""
        return await self._threads.claims(tenant=tenant, run=run)

    async def forget(self, *, tenant: str, run: str | None = None) -> int:
        return await self._threads.forget(tenant=tenant, run=run)

    async def erase(self, *, tenant: str, run: str | None = None) -> ErasureReceipt:
        """The sync store's `erase` (its signed receipt), on a worker."""
        return await self._threads.erase(tenant=tenant, run=run)

    async def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The sync store's `hand_off` (a HeadObject and server-side copies), on a worker."""
        return await self._threads.hand_off(scope, handle, to=to, ttl_seconds=ttl_seconds)

    async def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        """content[offset:offset + limit]: the sync store's one ranged GET, from the loop."""
        return await self._read(scope, handle, offset, window_plan(offset, limit))

    async def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """Whole lines from `line`: the index range, then the window, from the loop."""
        return await self._read(scope, handle, None, line_plan(line, limit))

    async def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """The last window: one suffix-range GET, from the loop."""
        return await self._read(scope, handle, None, end_plan(limit))

    async def read_path(
        self, scope: Scope, handle: str, pointer: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> PathRead:
        """The value at a JSON Pointer: at most three ranged GETs, from the loop."""
        return await self._read(scope, handle, 0, path_plan(pointer, limit=limit))

    async def _read(self, scope: Scope, handle: str, offset: int | None, plan: Plan[_T]) -> _T:
        known = handle if is_handle(handle) else None
        with fetch_operation(self.store, scope, handle=known, offset=offset) as op:
            try:
                answer = await arun(plan, _Ranges(self, scope, known))
            except Exception as exc:
                op.outcome = read_outcome(exc)
                raise
            finish(op, answer)
            return answer

    async def send(self, call: Call) -> Reply:
        """One call of a read, on the loop's client, within `max_in_flight`."""
        client = await self._open()
        store = self.store
        async with self._bound:
            return await async_sender(client, store.bucket.name, store.retry)(call)

    async def _open(self) -> Any:
        if self._client is None:
            async with self._opening:
                if self._client is None:
                    from aiobotocore.session import get_session

                    stack = AsyncExitStack()
                    self._client = await stack.enter_async_context(
                        get_session().create_client(
                            "s3", **_client_arguments(self.store.client, self._max_in_flight)
                        )
                    )
                    count_requests(self._client)
                    self._stack = stack
        return self._client

    async def aclose(self) -> None:
        """Close the async client (the worker threads end with the process)."""
        if self._stack is not None:
            stack, self._stack, self._client = self._stack, None, None
            await stack.aclose()

    async def __aenter__(self) -> AsyncS3ClaimCheckStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncS3ClaimCheckStore({self.store!r}, max_in_flight={self._max_in_flight})"


class _Ranges:
    """One claim as the engine reads it from the loop (`AsyncClaimRanges`); a malformed
    handle's ranges refuse every read, after the plan has checked its own arguments."""

    __slots__ = ("_ops", "_send")

    def __init__(self, face: AsyncS3ClaimCheckStore, scope: Scope, handle: str | None) -> None:
        store = face.store
        self._send = face.send
        self._ops = None
        if handle is not None:
            claim, index = claim_objects(store.layout, scope, handle, store.clock)
            self._ops = ClaimOps(claim, index, claim.width or 1)

    def _claim(self) -> ClaimOps:
        if self._ops is None:
            raise ClaimUnavailableError
        return self._ops

    async def text(self, start: int, end: int) -> TextPart:
        return await perform_async(self._claim().text(start, end), self._send)

    async def tail(self, chars: int) -> TextPart:
        return await perform_async(self._claim().tail(chars), self._send)

    async def index(self, start: int, end: int) -> IndexPart:
        return await perform_async(self._claim().index(start, end), self._send)

    async def index_tail(self, size: int) -> IndexPart:
        return await perform_async(self._claim().index_tail(size), self._send)


def _client_arguments(sync: Any, max_in_flight: int) -> dict[str, Any]:
    """An aiobotocore client's arguments: the sync client's, with one attempt per call."""
    config = sync.meta.config.merge(
        Config(retries={"total_max_attempts": 1}, max_pool_connections=max_in_flight)
    )
    arguments: dict[str, Any] = {
        "endpoint_url": sync.meta.endpoint_url,
        "region_name": sync.meta.region_name,
        "config": config,
    }
    # botocore keeps them on the request signer, with no public accessor
    credentials = getattr(getattr(sync, "_request_signer", None), "_credentials", None)
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        arguments |= {
            "aws_access_key_id": frozen.access_key,
            "aws_secret_access_key": frozen.secret_key,
            "aws_session_token": frozen.token,
        }
    return arguments
