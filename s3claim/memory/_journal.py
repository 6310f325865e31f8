"""MemoryRunJournal: records in this process's memory, for tests and single-process agents.

It keeps the protocol's promises (conditional saves, one message for every missing run,
expiry) so the journal contract runs against it as against S3; what it cannot do is outlive
its process, which is the point of the S3 journal.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from s3claim.clock import Clock, SystemClock
from s3claim.errors import RunConflictError, RunNotFoundError
from s3claim.handles import HandleKey
from s3claim.journal import DEFAULT_JOURNAL_TTL_SECONDS, JournalEntry, RunInfo, RunRecord
from s3claim.memory._store import MemoryClaimCheckStore
from s3claim.scope import Scope
from s3claim.store import check_ttl
from s3claim.telemetry import traced_journal_load, traced_journal_save

__all__ = ["MemoryRunJournal"]

_SWEEP_EVERY_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class _Held:
    record: RunRecord
    version: str
    updated_at: float
    expires_at: int


class MemoryRunJournal:
    """Run records in a dict behind a lock; each save lives `ttl_seconds` from its time.

    Expired records are never loaded; they are swept at most once a minute on `save`.
    `store=` binds the journal to the memory store of the same runs: they erase together
    (either one's `forget` erases both), and the journal reads the store's clock and key
    unless given its own. Unbound, only its own `forget` erases its records.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        handle_key: HandleKey | None = None,
        ttl_seconds: int = DEFAULT_JOURNAL_TTL_SECONDS,
        store: MemoryClaimCheckStore | None = None,
    ) -> None:
        check_ttl(ttl_seconds)
        if store is not None and not isinstance(store, MemoryClaimCheckStore):
            raise TypeError(
                f"store must be a MemoryClaimCheckStore, got {type(store).__name__}: an S3 "
                "store erases the S3 run journals of its own bucket and prefix"
            )
        self._store = store
        self._clock = clock or (store._clock if store is not None else SystemClock())
        self._key = handle_key or (store._key if store is not None else HandleKey.generate())
        self._ttl = ttl_seconds
        if store is not None:
            store.bind_journal(self)
        self._held: dict[Scope, _Held] = {}
        self._versions = itertools.count(1)
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def exists(self, scope: Scope) -> bool:
        with self._lock:
            return scope in self._held

    @traced_journal_load
    def load(self, scope: Scope) -> JournalEntry:
        with self._lock:
            held = self._held.get(scope)
        if held is None or held.expires_at <= self._clock.now():
            raise RunNotFoundError
        return JournalEntry(held.record, held.version)

    @traced_journal_save
    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        if not isinstance(record, RunRecord):
            raise TypeError(f"save takes a RunRecord, got {type(record).__name__}")
        with self._lock:
            held = self._held.get(scope)
            if replaces is None and held is not None:
                raise RunConflictError("run id taken: a run with this id is already recorded")
            if replaces is not None:
                if held is None:
                    raise RunNotFoundError  # forgotten (or collected) while it ran
                if held.version != replaces:
                    raise RunConflictError(
                        "run conflict: another writer recorded this run since it was loaded"
                    )
            now = self._clock.now()
            if now >= self._next_sweep:  # expired records go, as lifecycle collects them on S3
                for gone in [s for s, h in self._held.items() if h.expires_at <= now]:
                    del self._held[gone]
                self._next_sweep = now + _SWEEP_EVERY_SECONDS
            version = str(next(self._versions))
            self._held[scope] = _Held(record, version, now, math.ceil(now + self._ttl))
        return version

    def tenant_tag(self, tenant: str) -> str:
        return self._key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        """Erase a tenant's runs (or one run), and the bound store's claims of them; returns
        how many of this journal's records went."""
        erased = self.erase_records(tenant=tenant, run=run)
        if self._store is not None:  # its forget erases every journal bound to it, as S3's does
            self._store.forget(tenant=tenant, run=run)
        return erased

    def erase_records(self, *, tenant: str, run: str | None = None) -> int:
        """This journal's records of a tenant (or one run) only."""
        with self._lock:
            doomed = [s for s in self._held if s.tenant == tenant and run in (None, s.run)]
            for scope in doomed:
                del self._held[scope]
        return len(doomed)

    def runs(self, *, tenant: str) -> Iterator[RunInfo]:
        """The tenant's runs, expired ones included, by tag: never their content."""
        with self._lock:
            mine = [(s, h) for s, h in self._held.items() if s.tenant == tenant]
        infos = [
            RunInfo(self._key.run_tag(s), h.record.status, h.record.turns, h.updated_at,
                    h.expires_at)
            for s, h in mine
        ]  # fmt: skip
        yield from sorted(infos, key=lambda i: i.run_tag)

    def __repr__(self) -> str:
        with self._lock:
            held = len(self._held)
        return f"MemoryRunJournal(runs={held}, ttl_seconds={self._ttl}, clock={self._clock!r})"
