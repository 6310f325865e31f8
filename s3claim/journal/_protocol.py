"""The run journal protocol: exists, load, save. One writer per run, by conditional save."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from s3claim.journal._record import JournalEntry, RunRecord
from s3claim.scope import Scope

__all__ = ["DEFAULT_JOURNAL_TTL_SECONDS", "RunJournal"]

DEFAULT_JOURNAL_TTL_SECONDS = 3600
"""A run can be resumed this long after its last recorded step: the claims its conversation
names live as long by default (`ClaimCheckPolicy.ttl_seconds`), and a journal that outlived
them would resume into handles that lead nowhere."""


@runtime_checkable
class RunJournal(Protocol):
    """Where a run is recorded as it goes, so another instance can carry it on.

    `save` is conditional: `replaces=None` creates the record and fails if the run exists;
    otherwise it must name the version last loaded or saved, and fails if another writer has
    saved since. Either failure is `RunConflictError`, and nothing is overwritten. `load`
    raises `RunNotFoundError` with one message for a run never recorded, expired, forgotten or
    of another tenant; a record it cannot read is a `ClaimStoreError` naming the run's tag.
    """

    def exists(self, scope: Scope) -> bool:
        """Whether a record holds this run id (expired or not): `run` must not take it."""
        ...

    def load(self, scope: Scope) -> JournalEntry: ...

    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        """Record the run; returns the new version."""
        ...
