"""The async face: never a store call on the loop thread, a bounded pool, the same results.

The S3 store's async face is `ThreadedAsyncStore` over it: here on moto, each read the same
requests as the sync store's, sent from a worker. The store contract itself runs against the
async face in test_store_contract.py.
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
from s3claim.cli.demo import contract
from s3claim.store import DEFAULT_FETCH_CHARS, Window

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


# -- the S3 store on workers: the same requests as the sync store, none from the loop -------


def _sends(s3: Any) -> list[tuple[str, str | None, int]]:
    """Every request the client sends from now on: its operation, its Range and its thread."""
    sent: list[tuple[str, str | None, int]] = []

    def record(request: Any, event_name: str, **_: Any) -> None:
        ranged = request.headers.get("Range")
        ranged = ranged.decode() if isinstance(ranged, bytes) else ranged
        sent.append((event_name.rsplit(".", 1)[-1], ranged, threading.get_ident()))

    s3.meta.events.register("before-send.s3.*", record)
    return sent


def test_the_threaded_face_fetches_from_s3_with_one_ranged_get_on_a_worker(
    s3: Any, bucket: str
) -> None:
    sent = _sends(s3)
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    text = "ж" * 50_000  # 2 bytes a character
    handle = store.put(SCOPE, text, ttl_seconds=TTL)
    astore = ThreadedAsyncStore(store)

    async def main() -> tuple[list[Window], int, list[tuple[str, str | None, int]]]:
        windows = [await astore.fetch(SCOPE, handle, offset) for offset in (0, 4096, 49_990)]
        windows.append(await astore.fetch(SCOPE, handle, 60_000))  # past the end
        sent.clear()
        windows.append(await astore.fetch(SCOPE, handle, 8192, 10))
        return windows, threading.get_ident(), list(sent)

    windows, loop_thread, last = asyncio.run(main())
    assert [w.text for w in windows[:3]] == [text[:4096], text[4096:8192], text[49_990:]]
    assert (windows[3].text, windows[3].total_chars, windows[3].next_offset) == ("", 50_000, None)
    assert windows[4].text == text[8192:8202]
    assert [(op, ranged) for op, ranged, _ in last] == [
        ("GetObject", f"bytes={4 * 4112}-{5 * 4112 - 1}")  # the 5th sealed block, whole
    ]
    assert loop_thread not in {thread for *_, thread in last}


def test_the_threaded_face_over_s3_refuses_like_the_store_and_shares_its_claims(
    s3: Any, bucket: str
) -> None:
    from s3claim import ClaimUnavailableError
    from s3claim.wording import UNAVAILABLE_MESSAGE

    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    astore = ThreadedAsyncStore(store, max_workers=2)

    async def main() -> None:
        handle = await astore.put(SCOPE, "shared claims", ttl_seconds=TTL)
        assert store.fetch(SCOPE, handle).text == "shared claims"  # the same bucket
        for scope, candidate in [
            (Scope(tenant="acme", run="other"), handle),
            (SCOPE, "claim:1" + "0" * 32),
            (SCOPE, "not a handle"),
        ]:
            with pytest.raises(ClaimUnavailableError) as refused:
                await astore.fetch(scope, candidate)
            assert str(refused.value) == UNAVAILABLE_MESSAGE  # one answer for every case
        assert await astore.forget(tenant="acme") == 1
        with pytest.raises(ClaimUnavailableError):
            await astore.fetch(SCOPE, handle)

    asyncio.run(main())


def test_the_threaded_face_over_s3_retries_by_the_store_policy_then_fails_as_a_store_error() -> (
    None
):
    import socket

    import boto3

    from s3claim import ClaimStoreError

    with socket.socket() as probe:  # nothing listens there: every connection is refused
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    client = boto3.client("s3", endpoint_url=dead)  # botocore's own retries, vetoed by the store
    sent = _sends(client)
    store = S3ClaimCheckStore(
        "claims",
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(attempts=3, initial_wait=0, max_wait=0),
    )

    async def main() -> None:
        with pytest.raises(ClaimStoreError, match="GetObject failed after 3 attempt"):
            await ThreadedAsyncStore(store).fetch(SCOPE, "claim:1" + "0" * 32)

    asyncio.run(main())
    assert [op for op, *_ in sent] == ["GetObject"] * 3


# -- reading by line, from the end and by path, through the async face ----------------------

LOG = "".join(f"line {n}: ok\n" for n in range(1, 3000)) + "ERROR: the end\r\n"
JSON_TEXT = '{"items": [' + ", ".join(f'{{"id": {n}}}' for n in range(500)) + "]}"


def test_the_threaded_face_reads_s3_by_line_from_the_end_and_by_path_on_workers(
    s3: Any, bucket: str
) -> None:
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    handle = store.put(SCOPE, LOG, ttl_seconds=TTL)
    json_handle = store.put(SCOPE, JSON_TEXT, ttl_seconds=TTL)
    empty = store.put(SCOPE, "", ttl_seconds=TTL)
    sent = _sends(s3)
    astore = ThreadedAsyncStore(store)

    async def main() -> tuple[Any, ...]:
        end = await astore.read_end(SCOPE, handle, limit=100)
        nothing = await astore.read_end(SCOPE, empty, limit=100)
        line = await astore.read_line(SCOPE, handle, 2000, limit=100)
        value = await astore.read_path(SCOPE, json_handle, "/items/400", limit=100)
        return end, nothing, line, value, threading.get_ident()

    end, nothing, line, value, loop_thread = asyncio.run(main())
    assert sent and loop_thread not in {thread for *_, thread in sent}
    assert (end.text, end.next_offset) == (store.read_end(SCOPE, handle, limit=100).text, None)
    assert LOG.endswith(end.text) and end.text.startswith("line ") and end.last_line == 3000
    assert (nothing.text, nothing.total_chars) == ("", 0)
    assert line.text.startswith("line 2000: ok\n") and line.first_line == 2000
    assert value.text == '{"id": 400}'


def test_the_threaded_async_face_reads_by_line_from_the_end_and_by_path() -> None:
    store = MemoryClaimCheckStore()
    astore = ThreadedAsyncStore(store)
    handle = store.put(SCOPE, LOG, ttl_seconds=TTL)
    json_handle = store.put(SCOPE, JSON_TEXT, ttl_seconds=TTL)

    async def main() -> tuple[Any, ...]:
        return (
            await astore.read_line(SCOPE, handle, 3000, limit=50),
            await astore.read_end(SCOPE, handle, limit=30),
            await astore.read_path(SCOPE, json_handle, "/items/1", limit=50),
        )

    line, end, value = asyncio.run(main())
    assert line.text == "ERROR: the end\r\n" and line.next_offset is None
    assert end.text == "line 2999: ok\nERROR: the end\r\n" and end.first_line == 2999
    assert value.text == '{"id": 1}'


CHILD = Scope(tenant="acme", run="child-1")


def test_hand_off_through_the_async_face_runs_on_workers_and_reads_in_the_child_only(
    s3: Any, bucket: str
) -> None:
    from s3claim import ClaimUnavailableError

    senders: set[int] = set()
    s3.meta.events.register("before-send.s3.*", lambda **_: senders.add(threading.get_ident()))
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    aclaim = AsyncClaimCheck(ClaimCheck(store))
    astore = ThreadedAsyncStore(store)
    text, grandchild_run = contract(), Scope(tenant="acme", run="child-2")

    async def main() -> tuple[int, tuple[str, str]]:
        checked = await aclaim.check_in(text, tool="read", scope=SCOPE)
        assert checked.handle is not None
        child = await aclaim.hand_off(checked.handle, scope=SCOPE, to=CHILD)
        with pytest.raises(ValueError, match="within its tenant"):
            await aclaim.hand_off(checked.handle, scope=SCOPE, to=Scope("globex", "r"))
        grandchild = await astore.hand_off(CHILD, child, to=grandchild_run, ttl_seconds=TTL)
        read = (
            (await astore.fetch(CHILD, child, 100, 50)).text,
            (await astore.fetch(grandchild_run, grandchild, 0, 40)).text,
        )
        # The copies' blocks keep the original's tags: the suffix read checks them.
        end = await astore.read_end(grandchild_run, grandchild, limit=200)
        assert text.endswith(end.text) and end.total_chars == len(text)
        assert text[end.offset - 1] == "\n" and 0 < len(end.text) <= 200  # from a line start
        for scope, handle in ((SCOPE, child), (CHILD, checked.handle), (SCOPE, grandchild)):
            with pytest.raises(ClaimUnavailableError):
                await astore.fetch(scope, handle)
        with pytest.raises(ClaimUnavailableError):  # the parent's scope cannot redeem it
            await astore.hand_off(SCOPE, child, to=grandchild_run, ttl_seconds=TTL)
        with pytest.raises(ValueError, match="within its tenant"):
            await astore.hand_off(SCOPE, checked.handle, to=Scope("globex", "r"), ttl_seconds=1)
        return threading.get_ident(), read

    loop_thread, read = asyncio.run(main())
    assert read == (text[100:150], text[:40])
    assert senders and loop_thread not in senders  # the HEADs, copies and reads: on workers


class _PlainStore:
    """The three operations of a store and nothing more (no hand-off)."""

    def __init__(self) -> None:
        self._inner = MemoryClaimCheckStore()

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        return self._inner.put(scope, content, ttl_seconds=ttl_seconds)

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        return self._inner.fetch(scope, handle, offset, limit)

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        return self._inner.forget(tenant=tenant, run=run)


def test_the_threaded_async_face_hands_off_what_its_store_can() -> None:
    astore, plain = ThreadedAsyncStore(MemoryClaimCheckStore()), ThreadedAsyncStore(_PlainStore())

    async def main() -> str:
        handle = await astore.put(SCOPE, "shared with a sub-agent", ttl_seconds=TTL)
        child = await astore.hand_off(SCOPE, handle, to=CHILD, ttl_seconds=TTL)
        other = await plain.put(SCOPE, "kept", ttl_seconds=TTL)
        with pytest.raises(TypeError, match="_PlainStore cannot hand claims off"):
            await plain.hand_off(SCOPE, other, to=CHILD, ttl_seconds=TTL)
        return (await astore.fetch(CHILD, child)).text

    assert asyncio.run(main()) == "shared with a sub-agent"
