"""Hand-off: a claim made readable in a sub-agent's run of the same tenant, on both stores.

The child's handle reads there (by offset, by path, by search, as a reference) for the
child's own TTL, whatever becomes of the parent's claim; `forget` of the tenant or of the
child's run reaches it; nothing crosses a tenant. On S3 the body never passes through the
process: one HEAD, two server-side copies and an empty mark, counted with botocore's hooks.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from s3claim import (
    ClaimCheck,
    ClaimCheckPolicy,
    ClaimUnavailableError,
    ManualClock,
    MemoryClaimCheckStore,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
)
from s3claim.events import Event
from s3claim.tools import RunContext
from tests._counsel import CONTRACT
from tests._hosts import resolved_arguments

PARENT = Scope("acme", "counsel-1")
CHILD = Scope("acme", "summariser-1")
RECORDS = json.dumps({"items": [{"id": n, "name": f"record {n}"} for n in range(300)]})


@pytest.fixture(params=["memory", "s3", "s3rver"])
def setup(request: pytest.FixtureRequest) -> tuple[ClaimCheck, ManualClock, Any]:
    clock = ManualClock()
    policy = ClaimCheckPolicy(ttl_seconds=60)
    if request.param == "memory":
        return ClaimCheck(MemoryClaimCheckStore(clock=clock), policy=policy), clock, None
    from tests._s3 import moto_client

    if request.param == "s3rver":  # an S3-compatible server without AWS's extras
        client = request.getfixturevalue("s3rver_client")
    else:
        client = moto_client(request.getfixturevalue("moto_endpoint"))
    bucket = f"handoff-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(
        bucket,
        handle_key="test-handle-key-0123456789",
        client=client,
        clock=clock,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )
    return ClaimCheck(store, policy=policy), clock, client


def read_all(claim_check: ClaimCheck, scope: Scope, handle: str) -> str:
    return claim_check.store.fetch(scope, handle, 0, 10**6).text


def test_the_child_reads_the_claim_in_its_own_run_only(setup: Any) -> None:
    claim_check, _, _ = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    assert child != handle and child[:7] == handle[:7]  # a new handle, the same width
    assert read_all(claim_check, CHILD, child) == CONTRACT
    assert claim_check.store.fetch(CHILD, child, 50_000, 100).text == CONTRACT[50_000:50_100]
    for scope, each in ((PARENT, child), (CHILD, handle), (Scope("acme", "other"), child)):
        with pytest.raises(ClaimUnavailableError):
            claim_check.store.fetch(scope, each)
    assert "".join(claim_check.store.scan(CHILD, child)) == CONTRACT  # search reads it too


def test_never_across_tenants_and_never_a_claim_the_parent_cannot_redeem(setup: Any) -> None:
    claim_check, _, _ = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    with pytest.raises(ValueError, match="within its tenant"):
        claim_check.hand_off(handle, scope=PARENT, to=Scope("globex", "summariser-1"))
    with pytest.raises(ValueError, match="within its tenant"):
        claim_check.store.hand_off(  # type: ignore[attr-defined]
            PARENT, handle, to=Scope("globex", "x"), ttl_seconds=60
        )
    theirs = claim_check.store.put(Scope("acme", "r-9"), CONTRACT, ttl_seconds=60)
    for bad in (theirs, "claim:1" + "0" * 32, "nonsense"):
        with pytest.raises(ClaimUnavailableError):
            claim_check.hand_off(bad, scope=PARENT, to=CHILD)


def test_the_child_has_its_own_ttl(setup: Any) -> None:
    claim_check, clock, _ = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    longer = claim_check.hand_off(handle, scope=PARENT, to=CHILD, ttl_seconds=600)
    shorter = claim_check.hand_off(handle, scope=PARENT, to=Scope("acme", "brief"), ttl_seconds=10)
    clock.advance(120)
    with pytest.raises(ClaimUnavailableError):
        claim_check.store.fetch(PARENT, handle)
    with pytest.raises(ClaimUnavailableError):
        claim_check.store.fetch(Scope("acme", "brief"), shorter)
    assert read_all(claim_check, CHILD, longer) == CONTRACT  # outlives its parent
    with pytest.raises(ClaimUnavailableError):  # an expired claim cannot be handed off
        claim_check.hand_off(handle, scope=PARENT, to=Scope("acme", "late"))


def test_forget_reaches_the_child_by_its_run_or_its_tenant(setup: Any) -> None:
    claim_check, _, _ = setup
    store = claim_check.store
    handle = store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    store.forget(tenant="acme", run=PARENT.run)  # the parent's run: the child's copy stays
    assert read_all(claim_check, CHILD, child) == CONTRACT
    store.forget(tenant="acme", run=CHILD.run)
    with pytest.raises(ClaimUnavailableError):
        store.fetch(CHILD, child)
    again = store.put(PARENT, CONTRACT, ttl_seconds=60)
    other = claim_check.hand_off(again, scope=PARENT, to=CHILD)
    store.forget(tenant="acme")
    for scope, each in ((PARENT, again), (CHILD, other)):
        with pytest.raises(ClaimUnavailableError):
            store.fetch(scope, each)


def test_a_json_claim_reads_by_path_and_a_hand_off_of_a_hand_off_reads_too(setup: Any) -> None:
    claim_check, _, _ = setup
    handle = claim_check.store.put(PARENT, RECORDS, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    answer = claim_check.store.read_path(CHILD, child, "/items/250", limit=4096)  # type: ignore[attr-defined]
    assert json.loads(answer.text) == {"id": 250, "name": "record 250"}
    grandchild_scope = Scope("acme", "checker-1")
    grandchild = claim_check.hand_off(child, scope=CHILD, to=grandchild_scope)
    assert read_all(claim_check, grandchild_scope, grandchild) == RECORDS


def test_the_child_passes_its_claim_by_reference(setup: Any) -> None:
    claim_check, _, _ = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    events: list[Event] = []
    context = RunContext(scope=CHILD, agent="summariser", emit=events.append)
    refs = ClaimCheck(claim_check.store, references=True)
    resolved = resolved_arguments(
        {"text": {"$claim": child, "offset": 10, "length": 20}},
        claim_check=refs,
        tool="summarise",
        context=context,
    )
    assert resolved == {"text": CONTRACT[10:30]}
    assert [e.kind for e in events] == ["claim_passed"]


@pytest.mark.parametrize("setup", ["s3"], indirect=True)  # memory shares the text: no copy
def test_on_s3_the_body_never_passes_through_the_process(setup: Any) -> None:
    claim_check, _, client = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    sent: list[str] = []
    received: list[int] = []

    def before(event_name: str, **_: Any) -> None:
        sent.append(event_name.rsplit(".", 1)[-1])

    def after(http_response: Any, **_: Any) -> None:
        received.append(len(http_response.content or b""))

    client.meta.events.register("before-call.s3", before)
    client.meta.events.register("after-call.s3", after)
    try:
        child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    finally:
        client.meta.events.unregister("before-call.s3", before)
        client.meta.events.unregister("after-call.s3", after)
    # the claim, then its line index (the contract is text, so no structure index to copy)
    # beside the empty mark that makes the copy count as one in an erasure's receipt
    assert sent[:2] == ["HeadObject", "CopyObject"]
    assert sorted(sent[2:]) == ["CopyObject", "PutObject"]
    assert sum(received) < 2_000  # the copies' answers: XML, never the body
    assert read_all(claim_check, CHILD, child) == CONTRACT


@pytest.mark.parametrize("setup", ["s3"], indirect=True)  # the seal is the S3 store's
def test_on_s3_a_forged_blocks_field_fails_the_seal(setup: Any) -> None:
    from s3claim import ClaimStoreError

    claim_check, _, client = setup
    store = claim_check.store
    handle = store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    key = store.layout.object_key(CHILD, child)  # type: ignore[attr-defined]
    bucket = store.bucket.name  # type: ignore[attr-defined]
    meta = client.head_object(Bucket=bucket, Key=key)["Metadata"]
    meta["s3claim-blocks"] = store.layout.object_key(Scope("acme", "x"), handle)  # type: ignore[attr-defined]
    client.copy_object(
        Bucket=bucket,
        Key=key,
        CopySource={"Bucket": bucket, "Key": key},
        MetadataDirective="REPLACE",
        Metadata=meta,
    )
    with pytest.raises(ClaimStoreError) as raised:
        store.fetch(CHILD, child)
    assert raised.value.reason == "damaged"


def test_the_child_reads_by_line_from_its_own_copy_of_the_line_index(setup: Any) -> None:
    """On S3 the line index is copied beside the claim (its blocks still bound to the
    original's key), so line N is the parent's two ranged GETs, not a scan of the claim."""
    claim_check, _, client = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    grandchild_scope = Scope("acme", "checker-2")
    grandchild = claim_check.hand_off(child, scope=CHILD, to=grandchild_scope)
    lines = CONTRACT.split("\n")
    sent: list[str] = []

    def before(event_name: str, **_: Any) -> None:
        sent.append(event_name.rsplit(".", 1)[-1])

    if client is not None:
        client.meta.events.register("before-call.s3", before)
    for scope, h in ((CHILD, child), (grandchild_scope, grandchild)):
        window = claim_check.store.read_line(scope, h, 120, limit=4096)  # type: ignore[attr-defined]
        assert window.text.startswith(lines[119] + "\n")
        assert CONTRACT[window.offset :].startswith(window.text)
    if client is not None:
        assert sent == ["GetObject", "GetObject"] * 2  # an index block, then the window


def test_the_child_reads_from_the_end_with_the_requests_the_parent_does(setup: Any) -> None:
    """The copy's blocks keep the tags of the original's key: a suffix read checks them
    against that key, as a read by offset does (it was refused as damaged before)."""
    claim_check, _, client = setup
    handle = claim_check.store.put(PARENT, CONTRACT, ttl_seconds=60)
    child = claim_check.hand_off(handle, scope=PARENT, to=CHILD)
    grandchild_scope = Scope("acme", "checker-3")
    grandchild = claim_check.hand_off(child, scope=CHILD, to=grandchild_scope)
    sent: list[str] = []
    if client is not None:
        client.meta.events.register(
            "before-call.s3", lambda event_name, **_: sent.append(event_name.rsplit(".", 1)[-1])
        )
    parents = claim_check.store.read_end(PARENT, handle, limit=300)  # type: ignore[attr-defined]
    parent_sent, sent[:] = list(sent), []
    for scope, h in ((CHILD, child), (grandchild_scope, grandchild)):
        window = claim_check.store.read_end(scope, h, limit=300)  # type: ignore[attr-defined]
        assert (window.text, window.offset) == (parents.text, parents.offset)
        assert CONTRACT.endswith(window.text) and window.total_chars == len(CONTRACT)
        assert sent == parent_sent  # one suffix GET on moto (s3rver: one more, the explicit range)
        sent.clear()
    with pytest.raises(ClaimUnavailableError):
        claim_check.store.read_end(PARENT, child, limit=300)  # type: ignore[attr-defined]
    if client is not None:
        assert parent_sent and set(parent_sent) == {"GetObject"} and len(parent_sent) <= 2
