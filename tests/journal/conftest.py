"""Fixtures of the journal suites: a journal beside the store it shares a bucket (or a
process) with, on memory, moto and s3rver."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from s3claim import (
    ClaimCheckStore,
    HandleKey,
    ManualClock,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    RetryPolicy,
    RunJournal,
    S3ClaimCheckStore,
    S3RunJournal,
)
from s3claim.journal import RunInfo
from tests._s3 import moto_client

NO_WAIT = RetryPolicy(attempts=4, initial_wait=0, max_wait=0)


@dataclass
class JournalRig:
    """A journal and the claim store of the same runs, with the clock both read."""

    kind: str
    journal: RunJournal
    store: ClaimCheckStore
    clock: ManualClock
    key: HandleKey
    client: Any = None
    bucket: str = ""

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        """What an operator runs to erase: the store's forget takes the journal too (on S3 by
        sharing the bucket and prefix, in memory by binding the journal to the store)."""
        return self.store.forget(tenant=tenant, run=run)

    def runs(self, tenant: str) -> list[RunInfo]:
        journal: Any = self.journal
        return list(journal.runs(tenant=tenant))


def make_journal_rig(
    kind: str, *, client: Any = None, clock: ManualClock | None = None, ttl_seconds: int = 600
) -> JournalRig:
    clock = clock or ManualClock()
    key = HandleKey.generate()
    if kind == "memory":
        store = MemoryClaimCheckStore(clock=clock, handle_key=key)
        return JournalRig(
            kind, MemoryRunJournal(store=store, ttl_seconds=ttl_seconds), store, clock, key
        )
    bucket = f"journal-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    common: dict[str, Any] = {"handle_key": key, "client": client, "clock": clock, "retry": NO_WAIT}
    return JournalRig(
        kind,
        S3RunJournal(bucket, ttl_seconds=ttl_seconds, **common),
        S3ClaimCheckStore(bucket, **common),
        clock,
        key,
        client,
        bucket,
    )


def _rig(request: pytest.FixtureRequest) -> JournalRig:
    if request.param == "memory":
        return make_journal_rig("memory")
    if request.param == "s3rver":
        return make_journal_rig("s3rver", client=request.getfixturevalue("s3rver_client"))
    return make_journal_rig("s3", client=moto_client(request.getfixturevalue("moto_endpoint")))


@pytest.fixture(params=["memory", "s3", "s3rver"])
def rig(request: pytest.FixtureRequest) -> JournalRig:
    """Each journal in turn; s3rver only where conditional writes are not the point."""
    return _rig(request)


@pytest.fixture(params=["memory", "s3"])
def guarded(request: pytest.FixtureRequest) -> JournalRig:
    """The journals that keep a second writer out: memory, and S3 on moto (which, like AWS,
    honours If-None-Match and If-Match). s3rver ignores both."""
    return _rig(request)


@pytest.fixture
def s3_rig(moto_endpoint: str) -> JournalRig:
    return make_journal_rig("s3", client=moto_client(moto_endpoint))
