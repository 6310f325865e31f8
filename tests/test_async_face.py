"""The async face: never a store call on the loop thread, a bounded pool, the same results.

The store contract itself runs against the async face in test_store_contract.py.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from s3claim import (
    AsyncClaimCheck,
    ClaimCheck,
    MemoryClaimCheckStore,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
    ThreadedAsyncStore,
)
from s3claim.store import DEFAULT_FETCH_CHARS, Window
from tests._contract import contract

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600


def test_no_s3_request_is_sent_from_the_event_loop_thread(s3: Any, bucket: str) -> None:
    senders: set[int] = set()
    s3.meta.events.register("before-send.s3.*", lambda **_: senders.add(threading.get_ident()))
    store = S3ClaimCheckStore(
        bucket, handle_key="test-handle-key-0123456789", client=s3, retry=RetryPolicy()
    )
    aclaim = AsyncClaimCheck(ClaimCheck(store))
    text = contract()

    async def main() -> int:
        checked = await aclaim.check_in(text, tool="read", scope=SCOPE)
        assert checked.handle is not None
        again = await aclaim.store.put(SCOPE, text + "!", ttl_seconds=TTL)
        window = await aclaim.store.fetch(SCOPE, checked.handle, 10, 20)
        assert window.text == text[10:30]
        assert (await aclaim.store.fetch(SCOPE, again, len(text), 5)).text == "!"
        assert await aclaim.store.forget(tenant="acme") == 2
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert senders  # requests were sent, and none from the loop's thread
    assert loop_thread not in senders


class _GatedStore(MemoryClaimCheckStore):
    """fetch blocks until the gate opens; it records how many fetches run at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.running = 0
        self.most = 0
        self._count = threading.Lock()

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        with self._count:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            if not self.gate.wait(timeout=10):
                raise TimeoutError("the gate never opened: the loop was blocked")
            return super().fetch(scope, handle, offset, limit)
        finally:
            with self._count:
                self.running -= 1


def test_the_loop_runs_other_coroutines_while_a_store_call_blocks() -> None:
    store = _GatedStore()
    handle = store.put(SCOPE, "abc", ttl_seconds=TTL)
    astore = ThreadedAsyncStore(store)

    async def main() -> str:
        pending = asyncio.ensure_future(astore.fetch(SCOPE, handle))
        while store.running == 0:  # the fetch has reached its worker and is blocked there
            await asyncio.sleep(0)
        store.gate.set()  # only possible because the loop is not the thread that blocks
        return (await pending).text

    assert asyncio.run(main()) == "abc"


def test_the_pool_bounds_how_many_calls_run_at_once() -> None:
    store = _GatedStore()
    handle = store.put(SCOPE, "abc", ttl_seconds=TTL)
    astore = ThreadedAsyncStore(store, max_workers=2)

    async def main() -> list[Window]:
        calls = [asyncio.ensure_future(astore.fetch(SCOPE, handle)) for _ in range(8)]
        while store.running < 2:
            await asyncio.sleep(0)
        store.gate.set()
        return list(await asyncio.gather(*calls))

    assert [w.text for w in asyncio.run(main())] == ["abc"] * 8
    assert store.most == 2


def test_check_in_through_either_face_gives_the_same_handle_and_head() -> None:
    claim_check = ClaimCheck(MemoryClaimCheckStore())
    text = contract()
    sync = claim_check.check_in(text, tool="read", scope=SCOPE)
    through = asyncio.run(AsyncClaimCheck(claim_check).check_in(text, tool="read", scope=SCOPE))
    assert through == sync
    assert asyncio.run(AsyncClaimCheck(claim_check).check_in("short", tool="r", scope=SCOPE)) == (
        claim_check.check_in("short", tool="r", scope=SCOPE)
    )


def test_construction_refuses_what_cannot_work() -> None:
    with pytest.raises(TypeError, match="wraps a ClaimCheckStore, got dict"):
        ThreadedAsyncStore({})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="wraps a ClaimCheck, got MemoryClaimCheckStore"):
        AsyncClaimCheck(MemoryClaimCheckStore())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_workers must be a positive integer, got 0"):
        ThreadedAsyncStore(MemoryClaimCheckStore(), max_workers=0)
    assert "max_workers=3" in repr(ThreadedAsyncStore(MemoryClaimCheckStore(), max_workers=3))
    assert "max_workers=4" in repr(AsyncClaimCheck(ClaimCheck(MemoryClaimCheckStore())))
