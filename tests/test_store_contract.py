"""The claim-check store contract, written once and run against every store and both faces.

The S3 store runs against moto's real HTTP server, so each case here also crosses the wire.
The async face runs the same cases, each call a coroutine on one loop: `ThreadedAsyncStore`
over each store, the S3 stores included.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3claim import ThreadedAsyncStore
from s3claim.clock import ManualClock
from s3claim.errors import ClaimUnavailableError
from s3claim.scope import Scope
from s3claim.store import ClaimCheckStore
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._aio import Blocking
from tests._strategies import examples
from tests.conftest import StoreUnderTest

TTL = 3600
SCOPE = Scope(tenant="acme", run="run-1")

# Text that breaks byte-oriented windows: astral emoji, ZWJ sequences, combining marks, CJK,
# CRLF, NUL, BOM-like and right-to-left characters.
_TRICKY = st.sampled_from(
    [
        "👩‍👩‍👧‍👦",
        "🏳️‍🌈",
        "e\u0301",
        "한국어",
        "漢字かな",
        "\r\n",
        "\x00",
        "\ufeff",
        "\u202e",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "a",
        " ",
    ]
)
CONTENT = st.one_of(st.text(max_size=300), st.lists(_TRICKY, max_size=60).map("".join))


@pytest.fixture(params=["sync", "async"])
def store(
    store_under_test: StoreUnderTest, request: pytest.FixtureRequest
) -> Iterator[ClaimCheckStore]:
    if request.param == "sync":
        yield store_under_test.store
        return
    blocking = Blocking(ThreadedAsyncStore(store_under_test.store))
    try:
        yield blocking
    finally:
        blocking.close()


@pytest.fixture
def clock(store_under_test: StoreUnderTest) -> ManualClock:
    return store_under_test.clock


def read_all(store: ClaimCheckStore, scope: Scope, handle: str, limit: int) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        window = store.fetch(scope, handle, offset=offset, limit=limit)
        assert window.offset == offset
        assert len(window.text) <= limit
        parts.append(window.text)
        offset = window.next_offset
    return "".join(parts)


def test_both_stores_satisfy_the_protocol(store: ClaimCheckStore) -> None:
    assert isinstance(store, ClaimCheckStore)


def test_round_trip(store: ClaimCheckStore) -> None:
    content = "Clause 1. This agreement is governed by the laws of nowhere.\n" * 100
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    window = store.fetch(SCOPE, handle, limit=len(content))
    assert window.text == content
    assert (window.offset, window.total_chars, window.next_offset) == (0, len(content), None)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(content=CONTENT, windows=st.integers(min_value=1, max_value=8))
def test_windows_reassemble_any_text_exactly(
    store: ClaimCheckStore, content: str, windows: int
) -> None:
    limit = max(1, -(-len(content) // windows))
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    assert read_all(store, SCOPE, handle, limit) == content
    assert store.fetch(SCOPE, handle, limit=limit).total_chars == len(content)


def test_empty_content_reads_as_one_empty_window(store: ClaimCheckStore) -> None:
    handle = store.put(SCOPE, "", ttl_seconds=TTL)
    window = store.fetch(SCOPE, handle)
    assert (window.text, window.total_chars, window.next_offset) == ("", 0, None)


def test_limit_bounds_the_window(store: ClaimCheckStore) -> None:
    handle = store.put(SCOPE, "abcdefghij", ttl_seconds=TTL)
    window = store.fetch(SCOPE, handle, offset=2, limit=3)
    assert (window.text, window.offset, window.total_chars, window.next_offset) == (
        "cde",
        2,
        10,
        5,
    )
    last = store.fetch(SCOPE, handle, offset=7, limit=3)
    assert (last.text, last.next_offset) == ("hij", None)


@pytest.mark.parametrize("offset", [10, 11, 10_000])
def test_offset_at_or_past_the_end_reads_empty(store: ClaimCheckStore, offset: int) -> None:
    handle = store.put(SCOPE, "abcdefghij", ttl_seconds=TTL)
    window = store.fetch(SCOPE, handle, offset=offset)
    assert (window.text, window.offset, window.total_chars, window.next_offset) == (
        "",
        offset,
        10,
        None,
    )


@pytest.mark.parametrize(("offset", "limit"), [(-1, 10), (0, 0), (0, -5)])
def test_bad_window_arguments_raise(store: ClaimCheckStore, offset: int, limit: int) -> None:
    handle = store.put(SCOPE, "abc", ttl_seconds=TTL)
    with pytest.raises(ValueError, match=r"offset|limit"):
        store.fetch(SCOPE, handle, offset=offset, limit=limit)


def test_bad_ttl_raises(store: ClaimCheckStore) -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        store.put(SCOPE, "abc", ttl_seconds=0)


def test_lone_surrogate_content_is_refused(store: ClaimCheckStore) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        store.put(SCOPE, "bad \ud800 text", ttl_seconds=TTL)


def test_same_content_same_scope_same_handle(store: ClaimCheckStore) -> None:
    first = store.put(SCOPE, "the same result", ttl_seconds=TTL)
    assert store.put(SCOPE, "the same result", ttl_seconds=TTL) == first
    assert store.put(SCOPE, "another result", ttl_seconds=TTL) != first


@pytest.mark.parametrize(
    "other", [Scope(tenant="acme", run="run-2"), Scope(tenant="globex", run="run-1")]
)
def test_other_scope_gets_another_handle_and_cannot_redeem(
    store: ClaimCheckStore, other: Scope
) -> None:
    handle = store.put(SCOPE, "scoped content", ttl_seconds=TTL)
    assert store.put(other, "scoped content", ttl_seconds=TTL) != handle
    with pytest.raises(ClaimUnavailableError) as refused:
        store.fetch(other, handle)
    assert str(refused.value) == UNAVAILABLE_MESSAGE


@pytest.mark.parametrize(
    "handle",
    [
        "claim:1" + "0" * 32,  # well-formed, never stored
        "claim:XYZ",
        "../../etc/passwd",
        "",
        "claim:" + "A" * 32,
        "claim:" + "a" * 33,
        "claim:" + "a" * 10_000,
        "claim:" + "a" * 31 + "/",
    ],
)
def test_unknown_and_malformed_handles_are_unavailable(store: ClaimCheckStore, handle: str) -> None:
    store.put(SCOPE, "something stored", ttl_seconds=TTL)
    with pytest.raises(ClaimUnavailableError) as refused:
        store.fetch(SCOPE, handle)
    assert str(refused.value) == UNAVAILABLE_MESSAGE


@pytest.mark.parametrize(
    "content", ["plain ASCII", "Zoë Müller", "Łódź 東京", "emoji 👩‍⚖️"], ids=[1, "1b", 2, 4]
)
def test_a_handle_with_its_width_digit_altered_is_unavailable(
    store: ClaimCheckStore, content: str
) -> None:
    """The width rides in the handle; changing it must never read the object at another width."""
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    width = handle[len("claim:")]
    for other in "124":
        if other != width:
            forged = f"claim:{other}{handle[len('claim:') + 1 :]}"
            with pytest.raises(ClaimUnavailableError) as refused:
                store.fetch(SCOPE, forged)
            assert str(refused.value) == UNAVAILABLE_MESSAGE
    assert store.fetch(SCOPE, handle).text == content


def test_readable_until_the_ttl_and_not_after(store: ClaimCheckStore, clock: ManualClock) -> None:
    handle = store.put(SCOPE, "short-lived", ttl_seconds=TTL)
    clock.advance(TTL - 1)
    assert store.fetch(SCOPE, handle).text == "short-lived"
    clock.advance(2)
    with pytest.raises(ClaimUnavailableError) as refused:
        store.fetch(SCOPE, handle)
    assert str(refused.value) == UNAVAILABLE_MESSAGE
    with pytest.raises(ClaimUnavailableError):
        store.fetch(SCOPE, handle, offset=10_000)  # the past-the-end path checks expiry too


def test_putting_again_refreshes_the_expiry(store: ClaimCheckStore, clock: ManualClock) -> None:
    handle = store.put(SCOPE, "handed out twice", ttl_seconds=TTL)
    clock.advance(TTL - 10)
    assert store.put(SCOPE, "handed out twice", ttl_seconds=TTL) == handle
    clock.advance(20)
    assert store.fetch(SCOPE, handle).text == "handed out twice"


def test_put_after_expiry_makes_it_readable_again(
    store: ClaimCheckStore, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "back again", ttl_seconds=TTL)
    clock.advance(TTL + 1)
    assert store.put(SCOPE, "back again", ttl_seconds=TTL) == handle
    assert store.fetch(SCOPE, handle).text == "back again"


def test_forget_tenant_removes_all_its_claims_and_nothing_else(store: ClaimCheckStore) -> None:
    run_a, run_b = Scope(tenant="acme", run="a"), Scope(tenant="acme", run="b")
    other = Scope(tenant="globex", run="a")
    doomed = [store.put(run_a, f"a{i}", ttl_seconds=TTL) for i in range(3)]
    doomed.append(store.put(run_b, "b0", ttl_seconds=TTL))
    kept = store.put(other, "a0", ttl_seconds=TTL)

    assert store.forget(tenant="acme") == 4

    for handle, scope in zip(doomed, [run_a, run_a, run_a, run_b], strict=True):
        with pytest.raises(ClaimUnavailableError):
            store.fetch(scope, handle)
    assert store.fetch(other, kept).text == "a0"
    assert store.forget(tenant="acme") == 0


def test_forget_run_removes_only_that_run(store: ClaimCheckStore) -> None:
    run_a, run_b = Scope(tenant="acme", run="a"), Scope(tenant="acme", run="b")
    gone = store.put(run_a, "same text", ttl_seconds=TTL)
    kept = store.put(run_b, "same text", ttl_seconds=TTL)

    assert store.forget(tenant="acme", run="a") == 1

    with pytest.raises(ClaimUnavailableError):
        store.fetch(run_a, gone)
    assert store.fetch(run_b, kept).text == "same text"


def test_a_forgotten_claim_can_be_stored_again(store: ClaimCheckStore) -> None:
    handle = store.put(SCOPE, "stored, forgotten, stored", ttl_seconds=TTL)
    store.forget(tenant=SCOPE.tenant)
    assert store.put(SCOPE, "stored, forgotten, stored", ttl_seconds=TTL) == handle
    assert store.fetch(SCOPE, handle).text == "stored, forgotten, stored"
