"""ThreadedAsyncStore: any sync store as an `AsyncClaimCheckStore`, on worker threads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from s3claim.aio._workers import DEFAULT_MAX_WORKERS, Workers
from s3claim.scope import Scope
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    ClaimCheckStore,
    HandOffStore,
    LineReadableStore,
    PathReadableStore,
    Window,
)

if TYPE_CHECKING:
    from s3claim.store import LineWindow, PathRead

__all__ = ["ThreadedAsyncStore"]


class ThreadedAsyncStore:
    """Any sync store (memory, S3) as an `AsyncClaimCheckStore`: each call runs on a worker.

    The sync store stays the one implementation of layout, retries and expiry, and claims
    are shared: a handle put through either face is fetched through the other. boto3 clients
    are thread-safe, so the S3 store needs nothing more; give its client a connection pool at
    least `max_workers` wide (botocore's default is 10) or the extra threads open and drop
    connections.
    """

    def __init__(self, store: ClaimCheckStore, *, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        if not isinstance(store, ClaimCheckStore):
            raise TypeError(
                f"ThreadedAsyncStore wraps a ClaimCheckStore, got {type(store).__name__}"
            )
        self.store = store
        self._workers = Workers(max_workers)

    async def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        return await self._workers.run(self.store.put, scope, content, ttl_seconds=ttl_seconds)

    async def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        return await self._workers.run(self.store.fetch, scope, handle, offset, limit)

    async def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """`LineReadableStore.read_line` of the wrapped store, on a worker."""
        store = self._lines()
        return await self._workers.run(store.read_line, scope, handle, line, limit=limit)

    async def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """`LineReadableStore.read_end` of the wrapped store, on a worker."""
        store = self._lines()
        return await self._workers.run(store.read_end, scope, handle, limit=limit)

    async def read_path(
        self, scope: Scope, handle: str, pointer: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> PathRead:
        """`PathReadableStore.read_path` of the wrapped store, on a worker."""
        if not isinstance(self.store, PathReadableStore):
            raise TypeError(f"{type(self.store).__name__} cannot read by path")
        store: PathReadableStore = self.store
        return await self._workers.run(store.read_path, scope, handle, pointer, limit=limit)

    async def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """`HandOffStore.hand_off` of the wrapped store, on a worker."""
        if not isinstance(self.store, HandOffStore):
            raise TypeError(f"{type(self.store).__name__} cannot hand claims off")
        store: HandOffStore = self.store
        return await self._workers.run(
            store.hand_off, scope, handle, to=to, ttl_seconds=ttl_seconds
        )

    def _lines(self) -> LineReadableStore:
        if not isinstance(self.store, LineReadableStore):
            raise TypeError(f"{type(self.store).__name__} cannot read by line")
        return self.store

    async def forget(self, *, tenant: str, run: str | None = None) -> int:
        return await self._workers.run(self.store.forget, tenant=tenant, run=run)

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self.store!r}, max_workers={self._workers.max_workers})"
