"""MemoryClaimCheckStore: a dict behind a lock, for one process and for tests.

Each claim is held as its text and its index (`s3claim.store.build_index`, built at
check-in, the same bytes the S3 store keeps), served to the reading engine as ranges.
Bounded (`max_bytes` in all, `DEFAULT_MAX_BYTES` unless told otherwise, `None` for no bound;
`max_tenant_bytes` per tenant, none by default), counting everything a claim holds: the UTF-8
bytes of its text and the bytes of its index. A put that would pass a bound first evicts the
oldest claims (the tenant's own when its share is full), each reported as a `ClaimEvicted`
event to `on_evict`. A claim larger than a bound is refused (`ClaimStoreError`), never stored
in part; its index is built under the room its text leaves (`build_index(budget=...)`), so
one that could not fit is refused before it is built, not after.

Each entry is one check-in, under an id of its own (`s3claim.store.new_check_in_id`): a
repeat put while it lives extends it and keeps the id; the same text put once it is gone
(forgotten, expired, evicted) is a new entry under a new id, which a link to the old one
does not read.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from s3claim.clock import Clock, SystemClock
from s3claim.erasure import ErasureReceipt, issue_receipt
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ConfigurationError
from s3claim.events import ClaimEvicted
from s3claim.handles import HandleKey, content_digest, utf8_of
from s3claim.scope import Scope
from s3claim.store import (
    CheckIn,
    ClaimInfo,
    ClaimRanges,
    Facts,
    IndexPart,
    IndexTooLargeError,
    RangedStore,
    TextPart,
    build_index,
    check_ttl,
    count_lines,
    new_check_in_id,
    recorded_tool,
)
from s3claim.telemetry import traced_forget

if TYPE_CHECKING:
    from s3claim.memory._journal import MemoryRunJournal

__all__ = ["DEFAULT_MAX_BYTES", "MemoryClaimCheckStore"]

DEFAULT_MAX_BYTES = 256 * 1024**2
"""What a memory store holds in all unless told otherwise (`max_bytes=None`: no bound): a
process that puts a 5 MB result in each of 60 runs keeps the newest 53, not all 300 MB, and
a claim of 64 MiB still fits with its index. A bound of the process's memory, not a quota."""

_SWEEP_EVERY_SECONDS = 60.0
_MARKS = 65_536
_SCAN_CHARS = 1024 * 1024


@dataclass(slots=True)
class _Entry:
    scope: Scope
    content: str
    index: bytes | None
    facts: Facts
    expires_at: float
    size: int
    """What the caps count: the text's UTF-8 bytes and the index's bytes."""
    tool: str | None = None
    handed_off: bool = False
    """A hand-off copy (`hand_off`), as an erasure's receipt counts it."""
    check_in_id: str = ""
    """The check-in the entry is: set as it is held (`_hold`), kept while it lives."""


class MemoryClaimCheckStore(RangedStore):
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
        max_bytes: int | None = DEFAULT_MAX_BYTES,
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
        self._marks: OrderedDict[Scope, str] = OrderedDict()  # each run's, newest last

    @property
    def clock(self) -> Clock:
        """The clock claims expire by (and repeat reads, `s3claim.reuse`)."""
        return self._clock

    def tenant_tag(self, tenant: str) -> str:
        """The tenant's keyed tag (telemetry and the audit trail name tenants by it)."""
        return self._key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    @property
    def handle_key(self) -> HandleKey:
        """The secret behind handles, tags and links (`s3claim.links`); its repr hides it."""
        return self._key

    def checked_in(self, scope: Scope, handle: str) -> CheckIn:
        """Until when the claim reads (the store's clock) and which check-in it is, refused
        as `fetch` refuses (`ClaimUnavailableError`)."""
        entry = self._entry(scope, handle)
        return CheckIn(entry.expires_at, entry.check_in_id)

    def bind_journal(self, journal: MemoryRunJournal) -> None:
        """Erase `journal`'s records with this store's claims (`MemoryRunJournal(store=...)`)."""
        self._journals.add(journal)

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        """Store content for this scope (`tool`: whose result it is, for `claims`); the
        handle it returns is readable for ttl_seconds."""
        check_ttl(ttl_seconds)
        utf8 = utf8_of(content)  # encoded once, for the size and the digest both
        handle = self._key.handle(scope, content, digest=content_digest(content, utf8=utf8))
        text_bytes = len(utf8)
        del utf8
        bounds = [b for b in (self.max_bytes, self.max_tenant_bytes) if b is not None]
        bound = min(bounds, default=None)
        if bound is not None and text_bytes > bound:
            raise ClaimStoreError(
                f"a claim of {text_bytes} bytes is larger than the memory store holds ({bound})"
            )
        with self._lock:
            known = self._entries.get(handle)
        if known is None or known.expires_at <= self._clock.now():
            try:
                index = build_index(content, budget=None if bound is None else bound - text_bytes)
            except IndexTooLargeError as exc:
                raise ClaimStoreError(
                    f"a claim of {text_bytes} bytes with its index (at least {exc.at_least} "
                    f"bytes) is larger than the memory store holds ({bound})"
                ) from None
            facts = Facts(len(content), count_lines(content))
            size = text_bytes + len(index or b"")
            entry = _Entry(scope, content, index, facts, 0.0, size, recorded_tool(tool))
        else:
            entry = known
        self._hold(handle, entry, ttl_seconds)
        return handle

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim, readable in the run `to` for `ttl_seconds`: a new entry sharing the text
        and index (no copy), with its own expiry, a check-in of its own; `forget` of either run
        leaves the other's. Refuses exactly as `fetch` does; never across tenants."""
        check_ttl(ttl_seconds)
        if to.tenant != scope.tenant:
            raise ValueError("a claim is handed off within its tenant only")
        parent = self._entry(scope, handle)
        child = self._key.handed_off(handle, to)
        entry = dataclasses.replace(parent, scope=to, expires_at=0.0, handed_off=True)
        self._hold(child, entry, ttl_seconds)
        return child

    def _hold(self, handle: str, entry: _Entry, ttl_seconds: int) -> None:
        """Keep `entry` under `handle` for `ttl_seconds` from now, a check-in of its own; one
        held already lives on, for at least that long, the same check-in (a repeat put never
        shortens a claim's life, nor ends a link to it)."""
        evicted: list[ClaimEvicted] = []
        with self._lock:
            now = self._clock.now()
            if now >= self._next_sweep:
                self._sweep(now)
                self._next_sweep = now + _SWEEP_EVERY_SECONDS
            held = self._entries.get(handle)
            if held is not None and held.expires_at > now:
                held.expires_at = max(held.expires_at, now + ttl_seconds)
            else:
                if held is not None:
                    self._drop(handle)
                tenant = entry.scope.tenant
                for bound in (self.max_bytes, self.max_tenant_bytes):
                    if bound is not None and entry.size > bound:
                        raise ClaimStoreError(
                            f"a claim of {entry.size} bytes with its index is larger than the "
                            f"memory store holds ({bound})"
                        )
                evicted = self._make_room(tenant, entry.size)
                entry = dataclasses.replace(
                    entry, expires_at=now + ttl_seconds, check_in_id=new_check_in_id()
                )
                self._entries[handle] = entry
                self._bytes += entry.size
                self._tenant_bytes[tenant] = self._tenant_bytes.get(tenant, 0) + entry.size
        for event in evicted:  # outside the lock: the callback may log, or call back in
            if self._on_evict is not None:
                self._on_evict(event)

    def _make_room(self, tenant: str, size: int) -> list[ClaimEvicted]:
        """Drop the oldest claims (the tenant's own while its share is full) until `size` fits."""
        evicted: list[ClaimEvicted] = []
        while True:
            if self.max_tenant_bytes is not None and (
                self._tenant_bytes.get(tenant, 0) + size > self.max_tenant_bytes
            ):
                oldest = next(h for h, e in self._entries.items() if e.scope.tenant == tenant)
                reason: Literal["store_full", "tenant_full"] = "tenant_full"
            elif self.max_bytes is not None and self._bytes + size > self.max_bytes:
                oldest, reason = next(iter(self._entries)), "store_full"
            else:
                return evicted
            self._marks.pop(self._entries[oldest].scope, None)  # its run's reads end with it
            evicted.append(
                ClaimEvicted(handle=oldest, size_bytes=self._drop(oldest), reason=reason)
            )

    def _drop(self, handle: str) -> int:
        entry = self._entries.pop(handle)
        self._bytes -= entry.size
        left = self._tenant_bytes.get(entry.scope.tenant, 0) - entry.size
        if left > 0:
            self._tenant_bytes[entry.scope.tenant] = left
        else:
            self._tenant_bytes.pop(entry.scope.tenant, None)
        return entry.size

    # -- run marks (`s3claim.reuse`): in memory, at most `_MARKS` runs' (the oldest dropped,
    # which only ends that run's repeat reads) ------------------------------------------

    def run_mark(self, scope: Scope) -> str | None:
        with self._lock:
            return self._marks.get(scope)

    def new_run_mark(self, scope: Scope) -> str | None:
        with self._lock:
            if scope in self._marks:
                return None
            return self._set_mark(scope)

    def mark_written(self, scope: Scope) -> None:
        with self._lock:
            self._set_mark(scope)

    def _set_mark(self, scope: Scope) -> str:
        token = self._marks[scope] = secrets.token_hex(16)
        self._marks.move_to_end(scope)
        while len(self._marks) > _MARKS:
            self._marks.popitem(last=False)
        return token

    def ranges(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> ClaimRanges:
        return _Ranges(self, scope, handle, check_in_id)

    def _entry(self, scope: Scope, handle: str, check_in_id: str | None = None) -> _Entry:
        """The entry `scope` reads under `handle` (of that check-in, when one is given)."""
        with self._lock:
            entry = self._entries.get(handle)
            if entry is not None and entry.expires_at <= self._clock.now():
                self._drop(handle)
                entry = None
        if entry is None or entry.scope != scope:
            raise ClaimUnavailableError
        if check_in_id is not None and entry.check_in_id != check_in_id:
            raise ClaimUnavailableError
        return entry

    @traced_forget
    def erase(self, *, tenant: str, run: str | None = None) -> ErasureReceipt:
        """Erase a tenant's claims (or one run's) and the bound journals' records of them;
        return the signed receipt (`s3claim.erasure`), under this store's handle key.

        A memory store keeps no versions, no audit trail and nothing unnamed: those counts
        are 0, and what it swept is named as an S3 store's prefixes would be.
        """
        started = self._clock.now()
        journals = sum(j.erase_records(tenant=tenant, run=run) for j in list(self._journals))
        with self._lock:
            doomed = [
                handle
                for handle, entry in self._entries.items()
                if entry.scope.tenant == tenant and (run is None or entry.scope.run == run)
            ]
            entries = [self._entries[handle] for handle in doomed]
            for handle in doomed:
                self._drop(handle)
            marks = [m for m in self._marks if m.tenant == tenant and run in (None, m.run)]
            for scope in marks:
                del self._marks[scope]
        tenant_tag = self._key.tenant_tag(tenant)
        run_tag = None if run is None else self._key.run_tag(Scope(tenant, run))
        return issue_receipt(
            self._key,
            store="memory",
            tenant=tenant_tag,
            run=run_tag,
            swept=(f"{tenant_tag}/" if run_tag is None else f"{tenant_tag}/{run_tag}/",),
            started_at=datetime.fromtimestamp(started, UTC),
            finished_at=datetime.fromtimestamp(self._clock.now(), UTC),
            claims=len(entries),
            hand_offs=sum(e.handed_off for e in entries),
            indexes=sum(e.index is not None for e in entries),
            journals=journals,
            audit_records=0,
            other=len(marks),  # the runs' marks (`run_mark`), as an S3 store counts them
            versions=0,
            delete_markers=0,
            remaining=0,  # dropped under one lock: none of them was left after it
        )

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        """Erase a tenant's claims (or one run's) as `erase` does; returns how many went."""
        return self.erase(tenant=tenant, run=run).claims

    def claims(self, *, tenant: str, run: str | None = None) -> Iterator[ClaimInfo]:
        """Every claim of a tenant (or one run) held now, oldest first;
        one past its expiry is listed until it is dropped, as the S3 store lists it."""
        with self._lock:
            held = [
                (handle, entry)
                for handle, entry in self._entries.items()
                if entry.scope.tenant == tenant and (run is None or entry.scope.run == run)
            ]
        for handle, entry in held:
            yield ClaimInfo(
                handle,
                self._key.run_tag(entry.scope),
                entry.facts.chars,
                math.ceil(entry.expires_at),
                tool=entry.tool,
                lines=entry.facts.lines,
            )

    def _sweep(self, now: float) -> None:
        for handle in [h for h, e in self._entries.items() if e.expires_at <= now]:
            self._drop(handle)

    def __len__(self) -> int:
        """Claims held, expired or not (for tests of the purge)."""
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"MemoryClaimCheckStore(claims={len(self)}, clock={self._clock!r})"


class _Ranges:
    """One claim of a memory store, as slices; each checks the claim is there for its reader."""

    __slots__ = ("_check_in_id", "_handle", "_scope", "_store")

    def __init__(
        self, store: MemoryClaimCheckStore, scope: Scope, handle: str, check_in_id: str | None
    ) -> None:
        self._store, self._scope, self._handle = store, scope, handle
        self._check_in_id = check_in_id

    def _entry(self) -> _Entry:
        return self._store._entry(self._scope, self._handle, self._check_in_id)

    def text(self, start: int, end: int) -> TextPart:
        entry = self._entry()
        return TextPart(entry.content[start:end], start, entry.facts)

    def tail(self, chars: int) -> TextPart:
        entry = self._entry()
        start = max(0, len(entry.content) - chars)
        return TextPart(entry.content[start:], start, entry.facts)

    def index(self, start: int, end: int) -> IndexPart:
        entry = self._entry()
        return IndexPart(None if entry.index is None else entry.index[start:end], entry.facts)

    def index_tail(self, size: int) -> IndexPart:
        entry = self._entry()
        index = entry.index
        return IndexPart(None if index is None else index[max(0, len(index) - size) :], entry.facts)

    def stream(self) -> Iterator[str]:
        content = self._entry().content  # checked now, before the first piece
        return (content[i : i + _SCAN_CHARS] for i in range(0, len(content), _SCAN_CHARS))
