"""MemoryClaimCheckStore: a dict behind a lock, for one process and for tests.

Optionally bounded (`max_bytes` in all, `max_tenant_bytes` per tenant, UTF-8 bytes of the
claims' text): a put that would pass a bound first evicts the oldest claims (the tenant's
own when its share is full), each reported as a `ClaimEvicted` event to `on_evict`. A claim
larger than a bound is refused (`ClaimStoreError`), never stored in part.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from s3claim._json_index import build_index
from s3claim._json_path import NoIndexError, PathRead, read_path
from s3claim._lines import LineWindow, at_end, at_line, count_lines, line_starts, past_last_line
from s3claim.clock import Clock, SystemClock
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ConfigurationError
from s3claim.events import ClaimEvicted
from s3claim.handles import HandleKey, content_digest, is_handle, utf8_of
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window, check_line, check_ttl, check_window
from s3claim.telemetry import traced_fetch, traced_forget

if TYPE_CHECKING:
    from s3claim.memory._journal import MemoryRunJournal

__all__ = ["MemoryClaimCheckStore"]

_SWEEP_EVERY_SECONDS = 60.0
_SCAN_CHARS = 1024 * 1024


@dataclass(slots=True)
class _Entry:
    scope: Scope
    content: str
    expires_at: float
    size: int = 0
    index: bytes | None = None
    starts: array[int] | None = None
    """Line starts (`s3claim._lines.line_starts`), built at the first read by line."""
    lines: int | None = None

    def line_starts(self) -> array[int]:
        # Built outside any lock: two readers racing build the same array, one is kept.
        if self.starts is None:
            self.starts = line_starts(self.content)
        return self.starts

    def total_lines(self) -> int:
        if self.lines is None:  # counted once, at the first read (a C scan of the text)
            self.lines = count_lines(self.content)
        return self.lines


def _index_of(content: str) -> bytes | None:
    """The structure index, built at check-in; a check-in never fails for want of one."""
    try:
        return build_index(content)
    except Exception:  # whatever the text, it is still stored as text
        return None


@dataclass(frozen=True, slots=True)
class _Slices:
    """A claim and its index as `read_path` reads them (`s3claim._json_path.Source`)."""

    content: str
    index: bytes | None

    def index_bytes(self, start: int, end: int) -> bytes:
        if self.index is None:
            raise NoIndexError
        return self.index[start:end]

    def chars(self, start: int, end: int) -> str:
        return self.content[start:end]


class MemoryClaimCheckStore:
    """Claims in this process's memory; they die with it, which suits a run in flight.

    Expired entries are never served; they are dropped when touched and swept at most
    once a minute (of the store's clock) on `put`. `forget` erases the records of every
    `MemoryRunJournal(store=...)` bound to this store as well, as an S3 store's erases the
    journals in its bucket.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        handle_key: HandleKey | None = None,
        max_bytes: int | None = None,
        max_tenant_bytes: int | None = None,
        on_evict: Callable[[ClaimEvicted], None] | None = None,
    ) -> None:
        for name, bound in (("max_bytes", max_bytes), ("max_tenant_bytes", max_tenant_bytes)):
            if bound is not None and (isinstance(bound, bool) or bound < 1):
                raise ConfigurationError(
                    f"{name} must be a positive number of bytes, got {bound!r}"
                )
        self._clock = clock or SystemClock()
        self._key = handle_key or HandleKey.generate()
        self._entries: dict[str, _Entry] = {}  # oldest first
        self._lock = threading.Lock()
        self._next_sweep = 0.0
        self.max_bytes = max_bytes
        self.max_tenant_bytes = max_tenant_bytes
        self._on_evict = on_evict
        self._bytes = 0
        self._tenant_bytes: dict[str, int] = {}
        self._journals: weakref.WeakSet[MemoryRunJournal] = weakref.WeakSet()

    def tenant_tag(self, tenant: str) -> str:
        """The tenant's keyed tag (telemetry and the audit trail name tenants by it)."""
        return self._key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    def _bind(self, journal: MemoryRunJournal) -> None:
        """Erase `journal`'s records with this store's claims (`MemoryRunJournal(store=...)`)."""
        self._journals.add(journal)

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        check_ttl(ttl_seconds)
        bounded = self.max_bytes is not None or self.max_tenant_bytes is not None
        if not bounded:
            size, handle = 0, self._key.handle(scope, content)
        elif content.isascii():  # one byte a character: no copy to count them
            size, handle = len(content), self._key.handle(scope, content)
        else:  # encoded once, for the size and the digest both
            utf8 = utf8_of(content)
            size, handle = (
                len(utf8),
                self._key.handle(scope, content, digest=content_digest(content, utf8=utf8)),
            )
            del utf8
        for bound in (self.max_bytes, self.max_tenant_bytes):
            if bound is not None and size > bound:
                raise ClaimStoreError(
                    f"a claim of {size} bytes is larger than the memory store holds ({bound})"
                )
        index = _index_of(content) if handle not in self._entries else None
        evicted: list[ClaimEvicted] = []
        with self._lock:
            now = self._clock.now()
            if now >= self._next_sweep:
                self._sweep(now)
                self._next_sweep = now + _SWEEP_EVERY_SECONDS
            entry = self._entries.get(handle)
            if entry is None or entry.expires_at <= now:
                if entry is not None:
                    self._drop(handle)
                evicted = self._make_room(scope.tenant, size)
                self._entries[handle] = _Entry(scope, content, now + ttl_seconds, size, index)
                self._bytes += size
                self._tenant_bytes[scope.tenant] = self._tenant_bytes.get(scope.tenant, 0) + size
            else:  # handed out again: it must live a full TTL from now
                entry.expires_at = max(entry.expires_at, now + ttl_seconds)
        for event in evicted:  # outside the lock: the callback may log, or call back in
            if self._on_evict is not None:
                self._on_evict(event)
        return handle

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim, readable in the run `to` for `ttl_seconds` (`HandOffStore`): a new entry
        sharing the text (no copy), with its own expiry; `forget` of either run leaves the
        other's. Refuses exactly as `fetch` does; never across tenants."""
        check_ttl(ttl_seconds)
        if to.tenant != scope.tenant:
            raise ValueError("a claim is handed off within its tenant only")
        content = self._content(scope, handle)
        child = self._key.handed_off(handle, to)
        with self._lock:
            parent = self._entries.get(handle)
            index = parent.index if parent is not None else None
            size = parent.size if parent is not None else 0
            now = self._clock.now()
            entry = self._entries.get(child)
            if entry is not None and entry.expires_at > now:
                entry.expires_at = max(entry.expires_at, now + ttl_seconds)
                return child
            if entry is not None:
                self._drop(child)
            evicted = self._make_room(to.tenant, size)
            self._entries[child] = _Entry(to, content, now + ttl_seconds, size, index)
            self._bytes += size
            self._tenant_bytes[to.tenant] = self._tenant_bytes.get(to.tenant, 0) + size
        for event in evicted:
            if self._on_evict is not None:
                self._on_evict(event)
        return child

    def _make_room(self, tenant: str, size: int) -> list[ClaimEvicted]:
        evicted: list[ClaimEvicted] = []
        reason: Literal["store_full", "tenant_full"] = "tenant_full"
        while (
            self.max_tenant_bytes is not None
            and self._tenant_bytes.get(tenant, 0) + size > self.max_tenant_bytes
        ):
            oldest = next(h for h, e in self._entries.items() if e.scope.tenant == tenant)
            evicted.append(
                ClaimEvicted(handle=oldest, size_bytes=self._drop(oldest), reason=reason)
            )
        reason = "store_full"
        while self.max_bytes is not None and self._bytes + size > self.max_bytes:
            oldest = next(iter(self._entries))
            evicted.append(
                ClaimEvicted(handle=oldest, size_bytes=self._drop(oldest), reason=reason)
            )
        return evicted

    def _drop(self, handle: str) -> int:
        entry = self._entries.pop(handle)
        self._bytes -= entry.size
        left = self._tenant_bytes.get(entry.scope.tenant, 0) - entry.size
        if left > 0:
            self._tenant_bytes[entry.scope.tenant] = left
        else:
            self._tenant_bytes.pop(entry.scope.tenant, None)
        return entry.size

    @traced_fetch
    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        check_window(offset, limit)
        entry = self._entry(scope, handle)
        content = entry.content
        return Window.of(
            content[offset : offset + limit],
            offset=offset,
            total_chars=len(content),
            total_lines=entry.total_lines(),
        )

    def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """Whole lines from the start of `line` (`LineReadableStore`); refuses as `fetch` does."""
        check_line(line, limit)
        entry = self._entry(scope, handle)
        content, starts = entry.content, entry.line_starts()
        lines = entry.total_lines()
        if line > lines:
            return past_last_line(len(content), lines)
        start = 0 if line == 1 else starts[line - 2]
        window = Window.of(
            content[start : start + limit],
            offset=start,
            total_chars=len(content),
            total_lines=lines,
        )
        return at_line(window, line)

    def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """The last window (`LineReadableStore`); refuses exactly as `fetch` does."""
        check_window(0, limit)
        entry = self._entry(scope, handle)
        content = entry.content
        start = max(0, len(content) - limit - 1)
        window = Window.of(
            content[start:], offset=start, total_chars=len(content), total_lines=entry.total_lines()
        )
        return at_end(window, limit)

    def read_path(
        self, scope: Scope, handle: str, pointer: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> PathRead:
        """The value at a JSON Pointer (`PathReadableStore`); refuses exactly as `fetch` does."""
        check_window(0, limit)
        content = self._content(scope, handle)
        with self._lock:
            entry = self._entries.get(handle)
        index = entry.index if entry is not None else None
        return read_path(_Slices(content, index), pointer, limit=limit)

    def scan(self, scope: Scope, handle: str) -> Iterator[str]:
        """The claim's text in pieces (`SearchableStore`); refuses exactly as `fetch` does."""
        content = self._content(scope, handle)
        return (content[i : i + _SCAN_CHARS] for i in range(0, len(content), _SCAN_CHARS))

    def _content(self, scope: Scope, handle: str) -> str:
        return self._entry(scope, handle).content

    def _entry(self, scope: Scope, handle: str) -> _Entry:
        if not is_handle(handle):
            raise ClaimUnavailableError
        with self._lock:
            entry = self._entries.get(handle)
            if entry is not None and entry.expires_at <= self._clock.now():
                self._drop(handle)
                entry = None
        if entry is None or entry.scope != scope:
            raise ClaimUnavailableError
        return entry

    @traced_forget
    def forget(self, *, tenant: str, run: str | None = None) -> int:
        """Erase a tenant's claims (or one run's) and the bound journals' records of them;
        returns how many claims went."""
        for journal in list(self._journals):
            journal._erase_records(tenant=tenant, run=run)
        return self._erase_claims(tenant=tenant, run=run)

    def _erase_claims(self, *, tenant: str, run: str | None = None) -> int:
        """This store's claims of a tenant (or one run) only, bound journals untouched."""
        with self._lock:
            doomed = [
                handle
                for handle, entry in self._entries.items()
                if entry.scope.tenant == tenant and (run is None or entry.scope.run == run)
            ]
            for handle in doomed:
                self._drop(handle)
        return len(doomed)

    def _sweep(self, now: float) -> None:
        for handle in [h for h, e in self._entries.items() if e.expires_at <= now]:
            self._drop(handle)

    def __len__(self) -> int:
        """Claims held, expired or not (for tests of the purge)."""
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"MemoryClaimCheckStore(claims={len(self)}, clock={self._clock!r})"
