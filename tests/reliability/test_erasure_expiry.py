"""Right to erasure on a versioned bucket, and expiry to the second.

tests/test_s3_store.py shows one tenant's forget on a versioned bucket (one refresh, one
delete marker) and the contract suite expiry at TTL +- 1 at the store. Here the history is
longer (refreshes from two instances, deletes, re-puts, lookalike tenants, a forgotten run,
listings over several pages) and expiry is seen through `fetch_result`, object still present.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from s3claim import RunContext, Scope, ToolError, claim_check_tool
from s3claim.s3 import S3ClaimCheckStore
from s3claim.wording import UNAVAILABLE_MESSAGE, strip_notes
from tests._s3 import moto_client
from tests.reliability._support import Rig

TTL = 600


def versions_under(rig: Rig, prefix: str) -> tuple[int, int]:
    """(versions, delete markers) under a prefix, every page."""
    versions = markers = 0
    paginator = rig.client.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=rig.bucket, Prefix=prefix):
        versions += len(page.get("Versions", []))
        markers += len(page.get("DeleteMarkers", []))
    return versions, markers


def tenant_prefix(rig: Rig, tenant: str) -> str:
    return f"claims/{rig.key.tenant_tag(tenant)}/"


def run_prefix(rig: Rig, scope: Scope) -> str:
    return f"{tenant_prefix(rig, scope.tenant)}{rig.key.run_tag(scope)}/"


def object_key(rig: Rig, scope: Scope, handle: str) -> str:
    return run_prefix(rig, scope) + handle.removeprefix("claim:")


def test_forget_on_a_versioned_bucket_leaves_no_version_or_marker_and_spares_others(
    s3_rig: Rig, moto_endpoint: str
) -> None:
    rig = s3_rig
    rig.client.put_bucket_versioning(
        Bucket=rig.bucket, VersioningConfiguration={"Status": "Enabled"}
    )
    other_instance = S3ClaimCheckStore(
        rig.bucket, handle_key=rig.key, client=moto_client(moto_endpoint), clock=rig.clock
    )
    tenants = ["acme", "acme/x", "acmE", "globex"]
    scopes = [Scope(tenant=t, run=r) for t in tenants for r in ("r1", "r2")]
    rng = random.Random(42)
    live: dict[tuple[Scope, str], str] = {}  # (scope, content) -> handle
    for step in range(160):
        scope = rng.choice(scopes)
        content = f"{scope.tenant} {scope.run} claim {rng.randrange(6)} " * 20
        action = rng.random()
        if action < 0.5:
            live[(scope, content)] = rig.store.put(scope, content, ttl_seconds=TTL)
        elif action < 0.75 and live:  # a refresh: one CopyObject, one more version
            scope, content = rng.choice(sorted(live, key=repr))
            store = other_instance if step % 2 else rig.store
            assert store.put(scope, content, ttl_seconds=TTL) == live[(scope, content)]
        elif live:  # a plain delete (as a lifecycle expiration would): a delete marker
            scope, content = rng.choice(sorted(live, key=repr))
            handle = live.pop((scope, content))
            rig.client.delete_object(Bucket=rig.bucket, Key=object_key(rig, scope, handle))
        rig.clock.advance(1)  # so a put after a plain delete writes again (see _store.py)
    assert rig.store.forget(tenant="nobody") == 0
    # the erasure must see versions and delete markers, or this test proves nothing
    assert versions_under(rig, tenant_prefix(rig, "acme"))[0] > 10
    assert versions_under(rig, tenant_prefix(rig, "acme"))[1] > 0
    before = {t: versions_under(rig, tenant_prefix(rig, t)) for t in tenants}

    rig.store.forget(tenant="acme", run="r2")
    assert versions_under(rig, run_prefix(rig, Scope(tenant="acme", run="r2"))) == (0, 0)
    assert versions_under(rig, run_prefix(rig, Scope(tenant="acme", run="r1")))[0] > 0
    rig.store.forget(tenant="acme")

    assert versions_under(rig, tenant_prefix(rig, "acme")) == (0, 0)
    for tenant in tenants[1:]:
        assert versions_under(rig, tenant_prefix(rig, tenant)) == before[tenant]
    for (scope, content), handle in live.items():
        if scope.tenant == "acme":
            with pytest.raises(Exception, match="claim unavailable"):
                rig.store.fetch(scope, handle)
            continue
        assert rig.store.fetch(scope, handle, limit=len(content)).text == content


@pytest.mark.slow
def test_forget_pages_through_thousands_of_versions_and_markers(s3_rig: Rig) -> None:
    """Seeded straight into moto's backend (the in-process server shares it): 1,500
    versions and 300 delete markers over HTTP would take most of a minute here."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    rig = s3_rig
    rig.client.put_bucket_versioning(
        Bucket=rig.bucket, VersioningConfiguration={"Status": "Enabled"}
    )
    backend: Any = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    doomed, spared = Scope(tenant="acme", run="r"), Scope(tenant="acme/", run="r")
    for scope, count in ((doomed, 600), (spared, 50)):
        prefix = run_prefix(rig, scope)
        for i in range(count):
            key = f"{prefix}1{uuid.UUID(int=i).hex}"
            backend.put_object(rig.bucket, key, b"x\x00\x00\x00")
            backend.put_object(rig.bucket, key, b"y\x00\x00\x00")
            if i % 2:
                backend.delete_object(rig.bucket, key)
    assert versions_under(rig, tenant_prefix(rig, "acme")) == (1200, 300)
    progress: list[int] = []

    assert rig.store.forget(tenant="acme", progress=progress.append) == 600

    assert len(progress) >= 2  # more than one page
    assert versions_under(rig, tenant_prefix(rig, "acme")) == (0, 0)
    assert versions_under(rig, tenant_prefix(rig, "acme/")) == (100, 25)


# -- expiry ----------------------------------------------------------------------------------


def tool_answer(rig: Rig, scope: Scope, handle: str, offset: int) -> str:
    context = RunContext(scope=scope, agent="a", emit=lambda _e: None)
    try:
        return str(claim_check_tool(rig.store).call({"handle": handle, "offset": offset}, context))
    except ToolError as error:
        return error.render()


@pytest.mark.parametrize("offset", [0, 5, 10_000], ids=["start", "middle", "past-the-end"])
def test_a_claim_is_readable_until_its_ttl_and_refused_at_once_after(rig: Rig, offset: int) -> None:
    scope = Scope(tenant="acme", run="r")
    content = "expiring content"
    handle = rig.store.put(scope, content, ttl_seconds=TTL)
    never_stored = tool_answer(rig, scope, "claim:1" + "0" * 32, offset)
    assert never_stored == (
        '{"error": "claim_unavailable", "message": "' + UNAVAILABLE_MESSAGE + '"}'
    )

    rig.clock.advance(TTL - 1)
    readable = tool_answer(rig, scope, handle, offset)
    assert strip_notes(readable) == content[offset:] and readable != never_stored
    rig.clock.advance(1)  # the instant it expires
    assert tool_answer(rig, scope, handle, offset) == never_stored
    rig.clock.advance(1)
    assert tool_answer(rig, scope, handle, offset) == never_stored
    if rig.client is not None:  # refused by the store, though lifecycle has not collected it
        head = rig.client.head_object(Bucket=rig.bucket, Key=object_key(rig, scope, handle))
        assert head["Metadata"]["s3claim-expires-at"] == str(int(rig.clock.now()) - 1)
