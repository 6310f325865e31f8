"""AsyncClaimCheck: check-in and hand-off for coroutines, off the event loop."""

from __future__ import annotations

from s3claim.aio._threaded import ThreadedAsyncStore
from s3claim.aio._workers import DEFAULT_MAX_WORKERS
from s3claim.claimcheck import CheckIn, ClaimCheck
from s3claim.scope import Scope

__all__ = ["AsyncClaimCheck"]


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

    def __repr__(self) -> str:
        return f"AsyncClaimCheck({self.claim_check!r}, max_workers={self._workers.max_workers})"
