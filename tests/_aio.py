"""Drives an async store from sync test code, so the one contract suite runs against it too."""

from __future__ import annotations

import asyncio

from s3claim.aio import AsyncClaimCheckStore
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window

__all__ = ["Blocking"]


class Blocking:
    """A `ClaimCheckStore` whose every call is one coroutine of the async store, on a new loop."""

    def __init__(self, astore: AsyncClaimCheckStore) -> None:
        self.astore = astore

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        return asyncio.run(self.astore.put(scope, content, ttl_seconds=ttl_seconds))

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        return asyncio.run(self.astore.fetch(scope, handle, offset, limit))

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        return asyncio.run(self.astore.forget(tenant=tenant, run=run))
