"""Fixtures of the reliability suite: each store behind a `Rig`, memory and S3 over HTTP."""

from __future__ import annotations

import uuid

import pytest

from s3claim import HandleKey, ManualClock
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from tests._s3 import moto_client
from tests.reliability._support import CountingMemoryStore, Rig

NO_WAIT = RetryPolicy(attempts=3, initial_wait=0, max_wait=0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_700_000_000.0)


def make_rig(
    kind: str,
    clock: ManualClock,
    endpoint: str | None,
    *,
    retry: RetryPolicy = NO_WAIT,
    pool: int = 10,
) -> Rig:
    key = HandleKey.generate()
    if kind == "memory":
        return Rig(kind, CountingMemoryStore(clock=clock, handle_key=key), clock, key)
    assert endpoint is not None
    client = moto_client(endpoint, pool=pool)
    bucket = f"rel-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(bucket, handle_key=key, client=client, clock=clock, retry=retry)
    return Rig(kind, store, clock, key, client=client, bucket=bucket)


@pytest.fixture(params=["memory", "s3"])
def rig(request: pytest.FixtureRequest, clock: ManualClock) -> Rig:
    """The same test against the memory store and the S3 store on moto's HTTP server."""
    endpoint = request.getfixturevalue("moto_endpoint") if request.param == "s3" else None
    return make_rig(request.param, clock, endpoint)


@pytest.fixture
def s3_rig(clock: ManualClock, moto_endpoint: str) -> Rig:
    return make_rig("s3", clock, moto_endpoint)
