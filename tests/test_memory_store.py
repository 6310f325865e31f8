"""What only the memory store promises: lazy purging, thread safety, clocks."""

from __future__ import annotations

import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from s3claim import (
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
    ManualClock,
    MemoryClaimCheckStore,
    Scope,
    SystemClock,
)
from s3claim.events import ClaimEvicted
from s3claim.memory import DEFAULT_MAX_BYTES
from s3claim.store import IndexTooLargeError, build_index

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_expired_entries_are_purged_lazily_on_put_and_on_fetch() -> None:
    clock = ManualClock()
    store = MemoryClaimCheckStore(clock=clock)
    scope = Scope("t", "r")
    old = [store.put(scope, f"doc {i}", ttl_seconds=10) for i in range(5)]
    assert len(store) == 5
    clock.advance(11)
    with pytest.raises(ClaimUnavailableError):
        store.fetch(scope, old[0])
    assert len(store) == 4  # the touched one is gone
    clock.advance(60)
    store.put(scope, "fresh", ttl_seconds=10)
    assert len(store) == 1  # the sweep on put dropped the rest


def test_a_repeat_put_never_shortens_a_claim() -> None:
    clock = ManualClock()
    store = MemoryClaimCheckStore(clock=clock)
    scope = Scope("t", "r")
    handle = store.put(scope, "doc", ttl_seconds=100)
    store.put(scope, "doc", ttl_seconds=10)
    clock.advance(50)
    assert store.fetch(scope, handle).text == "doc"


def test_concurrent_puts_and_fetches_from_many_threads() -> None:
    store = MemoryClaimCheckStore(clock=SystemClock())

    def work(worker: int) -> None:
        scope = Scope(f"tenant-{worker % 4}", f"run-{worker}")
        for i in range(200):
            content = f"worker {worker} item {i} " * 20
            handle = store.put(scope, content, ttl_seconds=60)
            assert store.fetch(scope, handle, 0, 10_000).text == content

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(work, range(16)))
    assert len(store) == 16 * 200


def test_window_arguments_are_checked() -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(Scope("t", "r"), "abc", ttl_seconds=60)
    with pytest.raises(ValueError, match="offset"):
        store.fetch(Scope("t", "r"), handle, -1)
    with pytest.raises(ValueError, match="limit"):
        store.fetch(Scope("t", "r"), handle, 0, 0)
    with pytest.raises(ValueError, match="ttl_seconds"):
        store.put(Scope("t", "r"), "abc", ttl_seconds=0)


def test_reprs_name_sizes_not_content() -> None:
    store = MemoryClaimCheckStore(clock=ManualClock(5))
    handle = store.put(Scope("t", "r"), "SECRET-CONTENT", ttl_seconds=60)
    window = store.fetch(Scope("t", "r"), handle)
    assert "SECRET" not in repr(store) + repr(window)
    assert "ManualClock(now=5.0)" in repr(store)


def test_manual_clock_only_moves_forward() -> None:
    clock = ManualClock(100)
    clock.advance(2.5)
    assert clock.now() == 102.5
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1)
    assert abs(SystemClock().now() - time.time()) < 5


def test_a_bounded_store_evicts_its_oldest_claims_and_says_so() -> None:
    """Issue 20, finding 6: the same 5 MB result under 60 runs was held 60 times."""
    evicted: list[ClaimEvicted] = []
    store = MemoryClaimCheckStore(max_bytes=12_000_000, on_evict=evicted.append)
    result = "r" * 5_000_000
    handles = [store.put(Scope("acme", f"run-{i}"), result, ttl_seconds=60) for i in range(60)]
    assert len(store) == 2  # 10 MB held of the 300 MB put
    assert [e.handle for e in evicted] == handles[:58]
    assert {(e.size_bytes, e.reason) for e in evicted} == {(5_000_000, "store_full")}
    assert store.fetch(Scope("acme", "run-59"), handles[59], 0, 10).text == "r" * 10
    with pytest.raises(ClaimUnavailableError):
        store.fetch(Scope("acme", "run-0"), handles[0])


def test_a_tenant_full_of_claims_evicts_its_own_oldest_never_anothers() -> None:
    evicted: list[ClaimEvicted] = []
    store = MemoryClaimCheckStore(max_tenant_bytes=3_000, on_evict=evicted.append)
    other = store.put(Scope("globex", "r"), "g" * 2_000, ttl_seconds=60)
    mine = [store.put(Scope("acme", "r"), f"{i}" * 1_000, ttl_seconds=60) for i in range(5)]
    assert [e.handle for e in evicted] == mine[:2]
    assert {e.reason for e in evicted} == {"tenant_full"}
    assert store.fetch(Scope("globex", "r"), other, 0, 5).text == "ggggg"
    assert len(store) == 4


def test_a_claim_larger_than_the_bound_is_refused_whole() -> None:
    store = MemoryClaimCheckStore(max_bytes=1_000)
    with pytest.raises(ClaimStoreError, match="1002 bytes is larger than the memory store holds"):
        store.put(Scope("acme", "r"), "é" * 501, ttl_seconds=60)
    assert len(store) == 0
    with pytest.raises(ConfigurationError, match="max_bytes must be a positive number"):
        MemoryClaimCheckStore(max_bytes=0)


def test_the_bounds_count_a_claims_index_as_well_as_its_text() -> None:
    """Issue 35, point 10: a claim of many short lines holds an index of 4 bytes a line (and
    a JSON one its structure): what a bound counts is everything a claim holds, so a cap of
    64 KiB is a cap on memory, not on text alone."""
    evicted: list[ClaimEvicted] = []
    store = MemoryClaimCheckStore(max_bytes=64 * 1024, on_evict=evicted.append)
    scope = Scope("t", "r")
    log = "x\n" * 10_000  # 20,000 characters of text, 39,996 bytes of line starts
    first = store.put(scope, log, ttl_seconds=60)
    assert len(store) == 1 and store.read_line(scope, first, 9_999, limit=2).text == "x\n"
    second = store.put(scope, log + "y", ttl_seconds=60)  # 60 KB again: the first must go
    assert [(e.handle, e.size_bytes) for e in evicted] == [(first, 20_000 + 39_996 + 16)]
    assert len(store) == 1 and store.fetch(scope, second).total_lines == 10_001
    with pytest.raises(ClaimStoreError, match=r"with its index \(at least 60012 bytes\) is larger"):
        store.put(scope, "z\n" * 15_000, ttl_seconds=60)  # 30 KB of text: 90 KB with its index
    assert len(store) == 1  # refused whole, nothing evicted for it


# -- issue 48, item 14: a cap by default, and a claim refused before its index is built ------


def test_the_store_is_capped_by_default_as_the_docs_say() -> None:
    assert DEFAULT_MAX_BYTES == 256 * 1024**2
    assert MemoryClaimCheckStore().max_bytes == DEFAULT_MAX_BYTES
    assert MemoryClaimCheckStore().max_tenant_bytes is None
    assert MemoryClaimCheckStore(max_bytes=None).max_bytes is None  # unbounded, by asking
    limits = " ".join((DOCS / "limits.md").read_text(encoding="utf-8").split())
    assert f"at most {DEFAULT_MAX_BYTES // 1024**2} MiB in all by default" in limits
    assert "`max_bytes=None`" in limits


def test_sixty_runs_of_a_5_mb_result_stay_under_the_default_cap() -> None:
    """Issue 48, item 14: 60 runs of 5 MB each took RSS from 74 to 376 MiB by default."""
    evicted: list[ClaimEvicted] = []
    store = MemoryClaimCheckStore(on_evict=evicted.append)
    for i in range(60):
        store.put(Scope("acme", f"run-{i}"), f"{i:02d}" + "r" * 4_999_998, ttl_seconds=60)
    held = sum(c.chars for c in store.claims(tenant="acme"))  # ASCII, one line: no index
    assert held <= DEFAULT_MAX_BYTES < held + 5_000_000  # full, as full as 5 MB claims fit
    assert len(store) == DEFAULT_MAX_BYTES // 5_000_000 == 53
    assert len(evicted) == 60 - 53 and {e.reason for e in evicted} == {"store_full"}


_CAP = 256 * 1024
_TOO_LARGE = {  # each under the cap as text, its index over it
    "lines": "\n" * 150_000,  # 150 KB of text, 600 KB of line starts
    "array": "[" + "0," * 100_000 + "0]",  # 200 KB of text, a table of 800 KB
    "object": "{" + ",".join(f'"{i:x}":0' for i in range(25_000)) + "}",  # 220 KB, 1 MB
}


@pytest.mark.parametrize("kind", sorted(_TOO_LARGE))
def test_a_claim_whose_index_would_pass_the_cap_is_refused_before_it_is_built(
    kind: str,
) -> None:
    """Issue 48, item 14: a refused claim's index was built whole first (481 MiB of RSS under a
    cap of 64 MiB). Now what can be counted is counted first, and the JSON index's build stops
    once it holds more than the room left: what a refusal allocates is bounded by the cap."""
    text = _TOO_LARGE[kind]
    store = MemoryClaimCheckStore(max_bytes=_CAP)
    kept = store.put(Scope("acme", "r"), "kept", ttl_seconds=60)
    tracemalloc.start()
    try:
        with pytest.raises(ClaimStoreError, match=r"with its index \(at least \d+ bytes\)") as e:
            store.put(Scope("acme", "r"), text, ttl_seconds=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(len(text)) in str(e.value) and str(_CAP) in str(e.value)  # sizes, no content
    assert "0," not in str(e.value) and "\n" not in str(e.value)
    assert peak < _CAP  # 4 to 20 times the cap when the whole index was built first
    assert len(store) == 1 and store.fetch(Scope("acme", "r"), kept).text == "kept"


def _documents() -> dict[str, str]:
    part = "[" + ",".join([f'"{"x" * 490}"'] * 40) + "]"  # 20,000 characters, 40 members
    nested = '{"a": [' + ",".join(f'{{"id": {i}, "v": "{"x" * 40}"}}' for i in range(4_000))
    return {
        "lines": "a line\n" * 50_000,
        "records": nested + '], "b": {"c": [1, 2, 3]}}',
        # more large containers than a head holds: the cut is doubled until they fit, and
        # what the walk held for them on the way (their member tables) is dropped
        "many large containers": "[" + ",".join([part] * 700) + "]",
        "one line": "just text",
    }


@pytest.mark.parametrize("name", sorted(_documents()))
def test_a_claim_that_fits_is_indexed_exactly_as_without_a_cap(name: str) -> None:
    text = _documents()[name]
    index = build_index(text)
    size = len(index or b"")
    store = MemoryClaimCheckStore(max_bytes=len(text) + size)  # exactly full with it
    handle = store.put(Scope("acme", "r"), text, ttl_seconds=60)
    held = store.ranges(Scope("acme", "r"), handle).index(0, size + 1).data
    assert held == index
    for budget in (size, size + 1, 10 * size + 100):
        assert build_index(text, budget=budget) == index
    if size:
        with pytest.raises(IndexTooLargeError) as refused:
            build_index(text, budget=size - 1)
        assert size - 1 < refused.value.at_least <= size  # the least it could take
