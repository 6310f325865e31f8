"""AsyncS3ClaimCheckStore: the S3 store for coroutines, its fetches on aiobotocore.

A fetch is the one request an agent repeats at a model turn's pace, so it is sent from the
event loop on an async client, with at most `max_in_flight` at once: no thread competes with
the loop for the GIL, and no more requests than that parse their answers on it. Everything
else about a fetch is shared with the sync store (`s3claim.s3._read`: the range, the expiry
and scope checks, the format), and so is the retry policy (`request_async`). The last window
(`read_end`, one suffix-range GET) is sent from the loop the same way; reads by line and by
path, a few ranged GETs each, run through the sync store on worker threads. `put` and
`forget` run on worker threads through the sync store: a check-in serialises and hashes the
whole result (milliseconds of CPU that must stay off the loop), and erasure is rare. So does
`hand_off`: a few requests, none of them a body.

The async client is built, on first use in the running loop, from the sync store's client:
its endpoint, region, configuration and credentials (botocore keeps those on the client's
request signer and offers no public accessor), with one attempt per call, since the policy
owns the retries. It belongs to that loop: use one instance per loop, and close it
(`aclose()`, or `async with`).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

from botocore.config import Config

from s3claim._extras import require_extra
from s3claim._json_path import PathRead
from s3claim._lines import LineWindow, at_end
from s3claim._workers import DEFAULT_MAX_WORKERS
from s3claim.aio import ThreadedAsyncStore
from s3claim.errors import ClaimUnavailableError
from s3claim.s3._counting import count_requests
from s3claim.s3._errors import MISSING
from s3claim.s3._read import (
    WindowRead,
    empty_window_of,
    plan_read,
    plan_tail,
    tail_window_of,
    window_of,
)
from s3claim.s3._retry import Refused, request_async
from s3claim.s3._store import S3ClaimCheckStore
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window
from s3claim.telemetry import traced_fetch_async

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "AsyncS3ClaimCheckStore"]

DEFAULT_MAX_IN_FLIGHT = 4
"""Fetches on the wire at once. More adds throughput only while the loop has time to spare:
every answer is parsed on it (64 at once stalled it for over 100 ms in `make bench`)."""


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

    async def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        return await self._threads.put(scope, content, ttl_seconds=ttl_seconds)

    async def forget(self, *, tenant: str, run: str | None = None) -> int:
        return await self._threads.forget(tenant=tenant, run=run)

    async def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The sync store's `hand_off` (a HeadObject and server-side copies), on a worker."""
        return await self._threads.hand_off(scope, handle, to=to, ttl_seconds=ttl_seconds)

    @traced_fetch_async
    async def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        """content[offset:offset + limit]: the sync store's one ranged GET, sent from the loop."""
        store = self.store
        read = plan_read(store.layout, scope, handle, offset, limit)
        client = await self._open()
        async with self._bound:
            if read.past_any_object:
                return await self._empty_window(client, read)

            async def get() -> tuple[Any, str | None, bytes]:
                response = await client.get_object(
                    Bucket=store.bucket, Key=read.key, Range=read.byte_range
                )
                content_range = response.get("ContentRange")
                async with response["Body"] as body:  # read inside the retry, like the sync one
                    data = await body.read() if read.has_body(content_range) else b""
                return response["Metadata"], content_range, data

            try:
                answer = await request_async(
                    "GetObject", get, policy=store.retry, expect=MISSING | {"InvalidRange"}
                )
            except Refused as refused:
                if refused.code == "InvalidRange":
                    return await self._empty_window(client, read)
                raise ClaimUnavailableError from None
        return window_of(read, *answer, now=store.clock.now())

    async def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """The last window: the sync store's one suffix-range GET, sent from the loop."""
        store = self.store
        read = plan_tail(store.layout, scope, handle, limit + 1)
        client = await self._open()

        async def get(byte_range: str = read.byte_range) -> tuple[Any, str | None, bytes]:
            response = await client.get_object(Bucket=store.bucket, Key=read.key, Range=byte_range)
            content_range = response.get("ContentRange")
            async with response["Body"] as body:
                data = await body.read() if WindowRead.has_body(content_range) else b""
            return response["Metadata"], content_range, data

        async with self._bound:
            try:
                answer = await request_async(
                    "GetObject", get, policy=store.retry, expect=MISSING | {"InvalidRange"}
                )
                again = read.missed_end(answer[1])
                if again is not None:  # a server without suffix ranges
                    answer = await request_async(
                        "GetObject", lambda: get(again), policy=store.retry, expect=MISSING
                    )
            except Refused as refused:
                if refused.code != "InvalidRange":
                    raise ClaimUnavailableError from None
                empty = await self._empty_window(
                    client, plan_read(store.layout, scope, handle, 0, 1)
                )
                return at_end(empty, limit)
        return at_end(tail_window_of(read, *answer, now=store.clock.now()), limit)

    async def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """Whole lines from `line`: the sync store's reads (index block, window), on a worker."""
        return await self._threads.read_line(scope, handle, line, limit=limit)

    async def read_path(
        self, scope: Scope, handle: str, pointer: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> PathRead:
        """The value at a JSON Pointer: the sync store's ranged reads, on a worker."""
        return await self._threads.read_path(scope, handle, pointer, limit=limit)

    async def _empty_window(self, client: Any, read: WindowRead) -> Window:
        async def head() -> Any:
            return await client.head_object(Bucket=self.store.bucket, Key=read.key)

        try:
            answer = await request_async(
                "HeadObject", head, policy=self.store.retry, expect=MISSING
            )
        except Refused:
            raise ClaimUnavailableError from None
        return empty_window_of(read, answer["Metadata"], now=self.store.clock.now())

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
    credentials = getattr(getattr(sync, "_request_signer", None), "_credentials", None)
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        arguments |= {
            "aws_access_key_id": frozen.access_key,
            "aws_secret_access_key": frozen.secret_key,
            "aws_session_token": frozen.token,
        }
    return arguments
