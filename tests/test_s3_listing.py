"""S3ClaimCheckStore beyond the protocol: listing claims (`s3claim ls`), and its longest TTL."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from s3claim import (
    ClaimCheck,
    ClaimCheckPolicy,
    ConfigurationError,
    ManualClock,
    S3ClaimCheckStore,
    Scope,
)
from s3claim.s3 import ClaimInfo


@pytest.fixture
def store() -> Iterator[S3ClaimCheckStore]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="claims")
        yield S3ClaimCheckStore(
            "claims", handle_key="k" * 32, client=client, clock=ManualClock(1_000)
        )


def test_lists_a_tenant_or_one_run_with_sizes_and_expiry(store: S3ClaimCheckStore) -> None:
    a = store.put(Scope("acme", "r1"), "x" * 10, ttl_seconds=60)
    b = store.put(Scope("acme", "r2"), "ü" * 20, ttl_seconds=120)
    store.put(Scope("other", "r1"), "y" * 5, ttl_seconds=60)
    listed = {c.handle: c for c in store.claims(tenant="acme")}
    assert set(listed) == {a, b}
    assert (listed[a].chars, listed[a].expires_at) == (10, 1_060)
    assert (listed[b].chars, listed[b].expires_at) == (20, 1_120)
    assert listed[a].run_tag != listed[b].run_tag
    assert [c.handle for c in store.claims(tenant="acme", run="r2")] == [b]
    assert list(store.claims(tenant="nobody")) == []


def test_pages_past_one_thousand_keys_and_skips_foreign_objects(
    store: S3ClaimCheckStore,
) -> None:
    scope = Scope("big", "run")
    handles = {store.put(scope, f"claim {i}", ttl_seconds=60) for i in range(1_001)}
    client = store.client
    (some_key,) = [o["Key"] for o in client.list_objects_v2(Bucket="claims", MaxKeys=1)["Contents"]]
    client.put_object(Bucket="claims", Key=some_key.rsplit("/", 1)[0] + "/not-a-claim", Body=b"")
    listed = list(store.claims(tenant="big"))
    assert all(isinstance(c, ClaimInfo) for c in listed)
    assert {c.handle for c in listed} == handles


def test_a_policy_the_store_cannot_keep_is_refused_when_the_claim_check_is_built(
    store: S3ClaimCheckStore,
) -> None:
    assert store.max_ttl_seconds == 30 * 86_400
    ClaimCheck(store, policy=ClaimCheckPolicy(ttl_seconds=30 * 86_400))
    with pytest.raises(ConfigurationError, match=r"read_log: ttl_seconds=2678400 is longer"):
        ClaimCheck(store, per_tool={"read_log": ClaimCheckPolicy(ttl_seconds=31 * 86_400)})
