"""ThreadedAsyncStore and AsyncClaimCheck: a sync store and claim check for coroutines, on
worker threads."""

from __future__ import annotations

from s3claim.aio._workers import DEFAULT_MAX_WORKERS, Workers
from s3claim.claimcheck import CheckIn, ClaimCheck
from s3claim.erasure import ErasureReceipt
from s3claim.scope import Scope
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    ClaimCheckStore,
    ClaimInfo,
    LineWindow,
    PathRead,
    RangedStore,
    Window,
)

__all__ = ["AsyncClaimCheck", "ThreadedAsyncStore"]


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

    async def put(
        self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None
    ) -> str:
        """The store's `put`; `tool` reaches a store of the second level (`RangedStore`)."""
        if isinstance(self.store, RangedStore):
            put = self.store.put
            return await self._workers.run(put, scope, content, ttl_seconds=ttl_seconds, tool=tool)
        return await self._workers.run(self.store.put, scope, content, ttl_seconds=ttl_seconds)

    async def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        return await self._workers.run(self.store.fetch, scope, handle, offset, limit)

    async def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        return await self._workers.run(
            self._ranged("read by line").read_line, scope, handle, line, limit=limit
        )

    async def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        return await self._workers.run(
            self._ranged("read by line").read_end, scope, handle, limit=limit
        )

    async def read_path(
        self,
        scope: Scope,
        handle: str,
        pointer: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        first: int = 0,
    ) -> PathRead:
        return await self._workers.run(
            self._ranged("read by path").read_path, scope, handle, pointer, limit=limit, first=first
        )

    async def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        return await self._workers.run(
            self._ranged("hand claims off").hand_off, scope, handle, to=to, ttl_seconds=ttl_seconds
        )

    async def claims(self, *, tenant: str, run: str | None = None) -> list[ClaimInfo]:
        """The store's listing, gathered on a worker."""
        store = self._ranged("list its claims")
        return await self._workers.run(lambda: list(store.claims(tenant=tenant, run=run)))

    def _ranged(self, what: str) -> RangedStore:
        """The store, when it is of the second level (`RangedStore`), which can `what`."""
        if not isinstance(self.store, RangedStore):
            raise TypeError(f"{type(self.store).__name__} cannot {what}")
        return self.store

    async def forget(self, *, tenant: str, run: str | None = None) -> int:
        return await self._workers.run(self.store.forget, tenant=tenant, run=run)

    async def erase(self, *, tenant: str, run: str | None = None) -> ErasureReceipt:
        """The store's `erase` (its receipt), on a worker."""
        return await self._workers.run(
            self._ranged("erase with a receipt").erase, tenant=tenant, run=run
        )

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self.store!r}, max_workers={self._workers.max_workers})"


class AsyncClaimCheck:
    """The async face of a `ClaimCheck`, sharing its store, policies and handles.

    Each call runs the sync code on a worker thread, head extraction included (a few
    milliseconds of CPU on a large result, which would otherwise stall the loop). `store` is the
    claim check's store as an `AsyncClaimCheckStore`, for fetch and forget.
    """

    def __init__(self, claim_check: ClaimCheck, *, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        if not isinstance(claim_check, ClaimCheck):
            raise TypeError(f"AsyncClaimCheck wraps a ClaimCheck, got {type(claim_check).__name__}")
        self.claim_check = claim_check
        self.store = ThreadedAsyncStore(claim_check.store, max_workers=max_workers)
        self._workers = self.store._workers  # one pool: check-ins and fetches share its bound

    async def check_in(self, content: str, *, tool: str, scope: Scope) -> CheckIn:
        """`ClaimCheck.check_in`; store failures propagate as they do there."""
        return await self._workers.run(self.claim_check.check_in, content, tool=tool, scope=scope)

    async def hand_off(
        self, handle: str, *, scope: Scope, to: Scope, ttl_seconds: int | None = None
    ) -> str:
        """`ClaimCheck.hand_off` (a claim of `scope` readable in `to`), on a worker."""
        return await self._workers.run(
            self.claim_check.hand_off, handle, scope=scope, to=to, ttl_seconds=ttl_seconds
        )

    async def claims(self, scope: Scope) -> list[ClaimInfo]:
        """`ClaimCheck.claims` (the run's claims, never content), gathered on a worker."""
        return await self._workers.run(lambda: list(self.claim_check.claims(scope)))

    def __repr__(self) -> str:
        return f"AsyncClaimCheck({self.claim_check!r}, max_workers={self._workers.max_workers})"
