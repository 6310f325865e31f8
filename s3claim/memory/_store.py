"""MemoryClaimCheckStore: a dict behind a lock, for one process and for tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from s3claim.clock import Clock, SystemClock
from s3claim.errors import ClaimUnavailableError
from s3claim.handles import HandleKey, is_handle
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window, check_ttl, check_window

__all__ = ["MemoryClaimCheckStore"]

_SWEEP_EVERY_SECONDS = 60.0
_SCAN_CHARS = 1024 * 1024


@dataclass(slots=True)
class _Entry:
    scope: Scope
    content: str
    expires_at: float


class MemoryClaimCheckStore:
    """Claims in this process's memory; they die with it, which suits a run in flight.

    Expired entries are never served; they are dropped when touched and swept at most
    once a minute (of the store's clock) on `put`.
    """

    def __init__(self, *, clock: Clock | None = None, handle_key: HandleKey | None = None) -> None:
        self._clock = clock or SystemClock()
        self._key = handle_key or HandleKey.generate()
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        check_ttl(ttl_seconds)
        handle = self._key.handle(scope, content)
        with self._lock:
            now = self._clock.now()
            if now >= self._next_sweep:
                self._sweep(now)
                self._next_sweep = now + _SWEEP_EVERY_SECONDS
            entry = self._entries.get(handle)
            if entry is None or entry.expires_at <= now:
                self._entries[handle] = _Entry(scope, content, now + ttl_seconds)
            else:  # handed out again: it must live a full TTL from now
                entry.expires_at = max(entry.expires_at, now + ttl_seconds)
        return handle

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        check_window(offset, limit)
        content = self._content(scope, handle)
        return Window.of(content[offset : offset + limit], offset=offset, total_chars=len(content))

    def scan(self, scope: Scope, handle: str) -> Iterator[str]:
        """The claim's text in pieces (`SearchableStore`); refuses exactly as `fetch` does."""
        content = self._content(scope, handle)
        return (content[i : i + _SCAN_CHARS] for i in range(0, len(content), _SCAN_CHARS))

    def _content(self, scope: Scope, handle: str) -> str:
        if not is_handle(handle):
            raise ClaimUnavailableError
        with self._lock:
            entry = self._entries.get(handle)
            if entry is not None and entry.expires_at <= self._clock.now():
                del self._entries[handle]
                entry = None
        if entry is None or entry.scope != scope:
            raise ClaimUnavailableError
        return entry.content

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        with self._lock:
            doomed = [
                handle
                for handle, entry in self._entries.items()
                if entry.scope.tenant == tenant and (run is None or entry.scope.run == run)
            ]
            for handle in doomed:
                del self._entries[handle]
        return len(doomed)

    def _sweep(self, now: float) -> None:
        for handle in [h for h, e in self._entries.items() if e.expires_at <= now]:
            del self._entries[handle]

    def __len__(self) -> int:
        """Claims held, expired or not (for tests of the purge)."""
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"MemoryClaimCheckStore(claims={len(self)}, clock={self._clock!r})"
