"""Drives an async store from sync test code, so the one contract suite runs against it too."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, AsyncClaimCheckStore, Window

__all__ = ["Blocking"]

_T = TypeVar("_T")


class Blocking:
    """A `ClaimCheckStore` whose every call is one coroutine of the async store.

    The coroutines run on one event loop in a thread of its own, as in an application, one
    after another. `close()` stops the loop.
    """

    def __init__(self, astore: AsyncClaimCheckStore) -> None:
        self.astore = astore
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=120)

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        return self._run(self.astore.put(scope, content, ttl_seconds=ttl_seconds))

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        return self._run(self.astore.fetch(scope, handle, offset, limit))

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        return self._run(self.astore.forget(tenant=tenant, run=run))

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
