"""A run's claims for the application: `ClaimCheck.claims(scope)` and `RangedStore.claims`,
on the memory store and the S3 store (moto's server), with the tool each claim came from."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from s3claim import (
    AsyncClaimCheck,
    ClaimCheck,
    ClaimCheckPolicy,
    ManualClock,
    MemoryClaimCheckStore,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
    ThreadedAsyncStore,
)
from s3claim.store import MAX_TOOL_NAME_BYTES, ClaimInfo, RangedStore
from tests._s3 import moto_client

RUN, OTHER_RUN = Scope("acme", "matter-7"), Scope("acme", "matter-8")
POLICY = ClaimCheckPolicy(threshold_chars=100, head_chars=20, ttl_seconds=600)
LOG = "".join(f"line {n}\n" for n in range(200))  # 200 lines
JSON = '{"rows": [' + ",".join(str(n) for n in range(100)) + "]}"  # one line, no break


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000)


@pytest.fixture(params=["memory", "s3"])
def store(request: pytest.FixtureRequest, clock: ManualClock) -> Any:
    if request.param == "memory":
        return MemoryClaimCheckStore(clock=clock)
    client = moto_client(request.getfixturevalue("moto_endpoint"))
    bucket = f"listing-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    return S3ClaimCheckStore(
        bucket,
        handle_key="listing-handle-key-0123456789",
        client=client,
        clock=clock,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )


def test_a_runs_claims_list_their_tool_size_lines_and_expiry(store: Any) -> None:
    assert isinstance(store, RangedStore)
    claim_check = ClaimCheck(store, policy=POLICY)
    log = claim_check.check_in(LOG, tool="read_log", scope=RUN).handle
    rows = claim_check.check_in(JSON, tool="query", scope=RUN).handle
    claim_check.check_in("short", tool="query", scope=RUN)  # passed through: no claim
    elsewhere = claim_check.check_in(LOG + "!", tool="read_log", scope=OTHER_RUN).handle
    claim_check.check_in(LOG, tool="read_log", scope=Scope("globex", "matter-7"))

    listed = sorted(claim_check.claims(RUN), key=lambda c: c.tool or "")
    assert listed == [
        ClaimInfo(rows, store.run_tag(RUN), len(JSON), 1_600, tool="query", lines=1),
        ClaimInfo(log, store.run_tag(RUN), len(LOG), 1_600, tool="read_log", lines=200),
    ]
    tenant = {c.handle for c in store.claims(tenant="acme")}
    assert tenant == {log, rows, elsewhere}  # a whole tenant: every run, no other tenant's

    store.forget(tenant="acme", run="matter-7")  # what a UI's "erase this run" does
    assert list(claim_check.claims(RUN)) == []
    assert [c.handle for c in claim_check.claims(OTHER_RUN)] == [elsewhere]


def test_the_first_check_in_names_the_claim_and_a_hand_off_keeps_its_tool(
    store: Any, clock: ManualClock
) -> None:
    claim_check = ClaimCheck(store, policy=POLICY)
    first = claim_check.check_in(LOG, tool="read_log", scope=RUN).handle
    clock.advance(300)  # the repeat extends the claim's life: on S3, a refresh
    again = claim_check.check_in(LOG, tool="tail_log", scope=RUN).handle
    assert again == first
    (claim,) = claim_check.claims(RUN)
    assert (claim.tool, claim.expires_at) == ("read_log", 1_900)

    child = claim_check.hand_off(first, scope=RUN, to=OTHER_RUN)
    (handed,) = claim_check.claims(OTHER_RUN)
    assert (handed.handle, handed.tool, handed.lines) == (child, "read_log", 200)


def test_a_claim_put_without_a_tool_or_with_a_name_too_long_lists_none(store: Any) -> None:
    """A claim the store kept before it kept tools has no tool field: it lists None."""
    plain = store.put(RUN, LOG, ttl_seconds=60)
    named = "𝄞" * (MAX_TOOL_NAME_BYTES // 4)  # the longest name kept, at its widest
    longest = store.put(RUN, LOG + "a", ttl_seconds=60, tool=named)
    too_long = store.put(RUN, LOG + "b", ttl_seconds=60, tool="é" * 65)  # 130 bytes
    invalid = store.put(RUN, LOG + "c", ttl_seconds=60, tool="\ud800")  # not Unicode
    tools = {c.handle: c.tool for c in store.claims(tenant="acme", run="matter-7")}
    assert tools == {plain: None, longest: named, too_long: None, invalid: None}
    assert store.fetch(RUN, plain).text == LOG[:4096]  # readable as ever
    child = store.hand_off(RUN, longest, to=OTHER_RUN, ttl_seconds=60)  # its metadata grows
    assert [c.tool for c in store.claims(tenant="acme", run="matter-8")] == [named]
    assert store.fetch(OTHER_RUN, child).text == LOG + "a"


def test_a_store_of_the_first_level_is_called_as_its_protocol_says() -> None:
    """A store that offers put, fetch and forget only is never handed `tool`."""
    inner = MemoryClaimCheckStore()
    puts: list[dict[str, Any]] = []

    class Plain:
        def put(self, scope: Scope, content: str, **given: Any) -> str:
            puts.append(given)
            return inner.put(scope, content, **given)

        def fetch(self, scope: Scope, handle: str, offset: int = 0, limit: int = 1) -> Any:
            return inner.fetch(scope, handle, offset, limit)

        def forget(self, *, tenant: str, run: str | None = None) -> int:
            return inner.forget(tenant=tenant, run=run)

    claim_check = ClaimCheck(Plain(), policy=POLICY)
    handle = claim_check.check_in(LOG, tool="read_log", scope=RUN).handle
    assert puts == [{"ttl_seconds": POLICY.ttl_seconds}]
    assert handle is not None and inner.fetch(RUN, handle).text == LOG[:4096]


def test_a_store_that_cannot_list_says_so() -> None:
    class Plain:
        def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
            raise AssertionError

        def fetch(self, scope: Scope, handle: str, offset: int = 0, limit: int = 1) -> Any:
            raise AssertionError

        def forget(self, *, tenant: str, run: str | None = None) -> int:
            return 0

    with pytest.raises(TypeError, match="Plain cannot list its claims"):
        ClaimCheck(Plain()).claims(RUN)


def test_the_async_faces_list_what_the_sync_store_holds(store: Any) -> None:
    async def main() -> tuple[list[ClaimInfo], list[ClaimInfo], str]:
        faces = AsyncClaimCheck(ClaimCheck(store, policy=POLICY))
        checked = await faces.check_in(LOG, tool="read_log", scope=RUN)
        assert checked.handle is not None
        face = ThreadedAsyncStore(store)
        await face.put(OTHER_RUN, LOG, ttl_seconds=60, tool="tail_log")
        return (
            await faces.claims(RUN),
            await face.claims(tenant="acme", run="matter-8"),
            checked.handle,
        )

    run, other, handle = asyncio.run(main())
    assert [(c.handle, c.tool) for c in run] == [(handle, "read_log")]
    assert [c.tool for c in other] == ["tail_log"]
