"""Reading a claim by line and from its end: the same answers from every store.

Each store's `read_line` and `read_end` are checked against a reference written from the
definition (a line ends at `\\n`; whole lines up to the window; the last window from a line
start when it holds one), on texts chosen to break it: CRLF, no final newline, empty lines,
one line longer than a window, an empty claim, non-Latin text.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3claim._reading._lines import (
    LineWindow,
    NoLineIndexError,
    at_most_lines,
    count_lines,
    line_index,
)
from s3claim.errors import ClaimUnavailableError
from s3claim.memory import MemoryClaimCheckStore
from s3claim.scope import Scope
from tests._hosts import claim_answer, resolved_arguments
from tests._strategies import examples
from tests.conftest import StoreUnderTest

SCOPE = Scope(tenant="acme", run="run-1")
TEXTS = {
    "log": "".join(f"2026-01-01 line {n} INFO ok\n" for n in range(1, 2001)) + "ERROR: boom\n",
    "crlf": "".join(f"clause {n}: terms\r\n" for n in range(1, 600)),
    "no-final-newline": "first\nsecond\n\nfourth",
    "one-long-line": "x" * 10_000,
    "long-line-inside": "a\n" + "y" * 9_000 + "\nlast\n",
    "empty": "",
    "only-newlines": "\n" * 5000,
    "wide": "".join(f"行 {n} 🙂\n" for n in range(1, 900)),
}


def _starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text) if m.end() < len(text)]


def expected_line(text: str, line: int, limit: int) -> tuple[str, int]:
    starts = _starts(text) if text else []
    if line > len(starts):
        return "", len(text)
    start = starts[line - 1]
    window = text[start : start + limit]
    if start + len(window) < len(text) and "\n" in window:
        window = window[: window.rindex("\n") + 1]
    return window, start


def expected_end(text: str, limit: int) -> tuple[str, int]:
    start = max(0, len(text) - limit)
    window = text[start:]
    if start > 0 and text[start - 1] != "\n":
        cut = window.find("\n")
        if 0 <= cut < len(window) - 1:
            return window[cut + 1 :], start + cut + 1
    return window, start


def test_lines_are_counted_as_documented() -> None:
    assert [count_lines(t) for t in ("", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n", "\r")] == [
        0,
        1,
        1,
        2,
        2,
        1,
        1,
    ]
    assert line_index("ab\ncd\n\nef") == bytes([3, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0])
    assert line_index("one line\n") is None and line_index("") is None
    assert line_index("a\nb\nc") == bytes([2, 0, 0, 0, 4, 0, 0, 0])


# The stores under test come from conftest's `store_under_test` (memory, moto, s3rver).


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_line_of_a_claim_reads_as_the_reference_says(
    name: str, store_under_test: StoreUnderTest
) -> None:
    store: Any = store_under_test.store
    text = TEXTS[name]
    handle = store.put(SCOPE, text, ttl_seconds=60)
    lines = count_lines(text)
    probes = sorted({1, 2, 3, lines - 1, lines, lines + 1, lines + 2, 10**9} - {0, -1})
    for line in [p for p in probes if p >= 1]:
        for limit in (1, 7, 4096):
            got: LineWindow = store.read_line(SCOPE, handle, line, limit=limit)
            want_text, want_offset = expected_line(text, line, limit)
            assert (got.text, got.offset) == (want_text, want_offset), (line, limit)
            assert (got.total_chars, got.total_lines) == (len(text), lines)
            if got.text:
                assert got.first_line == line
                assert got.whole == (got.next_offset is None or got.text.endswith("\n"))


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_the_last_window_reads_as_the_reference_says(
    name: str, store_under_test: StoreUnderTest
) -> None:
    store: Any = store_under_test.store
    text = TEXTS[name]
    handle = store.put(SCOPE, text, ttl_seconds=60)
    for limit in (1, 2, 100, 4095, 4096):
        got: LineWindow = store.read_end(SCOPE, handle, limit=limit)
        assert (got.text, got.offset) == expected_end(text, limit), limit
        assert got.next_offset is None and got.total_chars == len(text)
        if got.text:  # its lines: the last, and as many before as the window holds
            assert got.last_line == count_lines(text)
            assert got.first_line == count_lines(text[: got.offset + 1])


def test_reads_by_line_refuse_what_fetch_refuses(store_under_test: StoreUnderTest) -> None:
    store: Any = store_under_test.store
    handle = store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    for read in (
        lambda: store.read_line(Scope("acme", "r-2"), handle, 2, limit=10),
        lambda: store.read_end(Scope("acme", "r-2"), handle, limit=10),
        lambda: store.read_line(SCOPE, "claim:nonsense", 2, limit=10),
        lambda: store.read_end(SCOPE, "claim:1" + "0" * 32, limit=10),
    ):
        with pytest.raises(ClaimUnavailableError):
            read()
    store_under_test.clock.advance(61)
    for line in (1, 2, 10**9):
        with pytest.raises(ClaimUnavailableError):
            store.read_line(SCOPE, handle, line, limit=10)
    with pytest.raises(ClaimUnavailableError):
        store.read_end(SCOPE, handle, limit=10)


@pytest.mark.parametrize("line", [0, -1, True, 1.5, "2", None])
def test_a_bad_line_is_a_developer_mistake(line: Any) -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, "a\nb\n", ttl_seconds=60)
    with pytest.raises(ValueError, match="line must be a positive integer"):
        store.read_line(SCOPE, handle, line, limit=10)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(alphabet=st.sampled_from("ab\r\né"), max_size=80),
    st.integers(1, 30),
    st.integers(1, 12),
)
def test_memory_reads_match_the_reference_on_any_text(text: str, line: int, limit: int) -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, text, ttl_seconds=60)
    got = store.read_line(SCOPE, handle, line, limit=limit)
    assert (got.text, got.offset) == expected_line(text, line, limit)
    end = store.read_end(SCOPE, handle, limit=limit)
    assert (end.text, end.offset) == expected_end(text, limit)


def _lines_of(text: str) -> list[str]:
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


@given(
    st.text(alphabet=st.sampled_from("ab\r\né"), max_size=80),
    st.integers(1, 30),
    st.integers(1, 12),
    st.integers(1, 6),
)
def test_lines_keeps_the_first_or_last_lines_of_the_window(
    text: str, line: int, limit: int, lines: int
) -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, text, ttl_seconds=60)
    window = store.read_line(SCOPE, handle, line, limit=limit)
    got = at_most_lines(window, lines, from_end=False)
    want, start = expected_line(text, line, limit)
    if window.whole:
        want = "".join(_lines_of(want)[:lines])
    assert (got.text, got.offset, got.first_line) == (want, start, window.first_line)
    if got.text and got.next_offset is not None and got.whole:
        assert got.next_line == line + count_lines(got.text)
    end = at_most_lines(store.read_end(SCOPE, handle, limit=limit), lines, from_end=True)
    want, start = expected_end(text, limit)
    kept = "".join(_lines_of(want)[-lines:])
    assert (end.text, end.offset) == (kept, start + len(want) - len(kept))
    if end.text:
        assert end.first_line == count_lines(text[: end.offset + 1])


# -- the S3 store's line index ---------------------------------------------------------------


def _s3_store(s3: Any, bucket: str, clock: Any = None) -> Any:
    from s3claim.s3 import RetryPolicy, S3ClaimCheckStore

    return S3ClaimCheckStore(
        bucket,
        handle_key="test-handle-key-0123456789",
        client=s3,
        clock=clock,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )


def test_a_claim_too_long_for_a_line_index_says_it_cannot_read_by_line(
    store_under_test: StoreUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line starts are 32-bit: a claim of 2**32 characters or more has none (made shorter
    here), reads by offset and from the end, and answers a read by line with a refusal."""
    from s3claim import claim_check_tool
    from s3claim.tools import RunContext

    store: Any = store_under_test.store
    monkeypatch.setattr("s3claim._reading._lines.MAX_INDEXED_CHARS", 1000)
    text = TEXTS["log"]
    handle = store.put(SCOPE, text, ttl_seconds=60)
    with pytest.raises(NoLineIndexError):
        store.read_line(SCOPE, handle, 1500, limit=100)
    assert store.read_line(SCOPE, handle, 1, limit=20).text == expected_line(text, 1, 20)[0]
    assert store.read_line(SCOPE, handle, 10**6, limit=20).text == ""  # past the last: counted
    answer = claim_answer(
        claim_check_tool(store), {"handle": handle, "line": 1500}, RunContext(SCOPE, "a", print)
    )
    assert answer.is_error and '"cannot_read_by_line"' in answer.text
    from s3claim import ClaimCheck
    from s3claim.errors import ToolError

    with pytest.raises(ToolError) as refused:  # a reference by line says the same
        resolved_arguments(
            {"text": {"$claim": handle, "line": 1500}},
            claim_check=ClaimCheck(store, references=True),
            tool="t",
            context=RunContext(SCOPE, "a", print),
        )
    assert refused.value.code == "cannot_read_by_line"
    end = store.read_end(SCOPE, handle, limit=50)
    assert (end.text, end.offset) == expected_end(text, 50)


def test_a_one_line_claim_has_no_index_and_reads_past_its_line_with_one_head(
    s3: Any, bucket: str
) -> None:
    store = _s3_store(s3, bucket)
    handle = store.put(SCOPE, "x" * 9000, ttl_seconds=60)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == [store.layout.object_key(SCOPE, handle)]
    sent: list[str] = []
    s3.meta.events.register("before-send.s3.*", lambda event_name, **_: sent.append(event_name))
    got = store.read_line(SCOPE, handle, 2, limit=100)
    assert (got.text, got.total_lines) == ("", 1)
    assert [s.rsplit(".", 1)[-1] for s in sent] == ["GetObject", "HeadObject"]
    first = store.read_line(SCOPE, handle, 1, limit=100)
    assert (first.text, first.whole, first.next_offset) == ("x" * 100, False, 100)


def test_the_index_expires_forgets_and_refreshes_with_its_claim(s3: Any, bucket: str) -> None:
    from s3claim.clock import ManualClock

    clock = ManualClock()
    store = _s3_store(s3, bucket, clock)
    text = TEXTS["crlf"]
    handle = store.put(SCOPE, text, ttl_seconds=60)
    index_key = store.layout.index_key(SCOPE, handle)
    index = s3.head_object(Bucket=bucket, Key=index_key)
    claim = s3.head_object(Bucket=bucket, Key=store.layout.object_key(SCOPE, handle))
    assert index["ServerSideEncryption"] == claim["ServerSideEncryption"]
    tags = s3.get_object_tagging(Bucket=bucket, Key=index_key)["TagSet"]
    assert tags == s3.get_object_tagging(Bucket=bucket, Key=claim_key(store, handle))["TagSet"]
    clock.advance(50)
    _fresh = _s3_store(s3, bucket, clock)  # another process refreshes it: CopyObject both
    assert _fresh.put(SCOPE, text, ttl_seconds=60) == handle
    clock.advance(30)  # past the first expiry, within the second
    assert store.read_line(SCOPE, handle, 300, limit=50).text.startswith("clause 300:")
    clock.advance(31)
    with pytest.raises(ClaimUnavailableError):
        store.read_line(SCOPE, handle, 300, limit=50)
    store.forget(tenant="acme")
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def claim_key(store: Any, handle: str) -> str:
    key: str = store.layout.object_key(SCOPE, handle)
    return key


def test_a_rewritten_index_is_refused_as_damaged(s3: Any, bucket: str) -> None:
    from s3claim.errors import ClaimStoreError

    store = _s3_store(s3, bucket)
    handle = store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    key = store.layout.index_key(SCOPE, handle)
    stored = s3.get_object(Bucket=bucket, Key=key)
    body = bytearray(stored["Body"].read())
    body[0] ^= 1  # line 2 now starts elsewhere
    s3.put_object(Bucket=bucket, Key=key, Body=bytes(body), Metadata=stored["Metadata"])
    with pytest.raises(ClaimStoreError) as raised:
        store.read_line(SCOPE, handle, 2, limit=50)
    assert raised.value.reason == "damaged"


def test_a_failed_index_write_fails_the_check_in_and_a_repeat_mends_it(
    s3: Any, bucket: str
) -> None:
    """A claim and its index stand together: a check-in whose index is refused fails (the
    host then falls back, as for any store fault), and checking the same text in again writes
    the index beside the claim that stands."""
    from botocore.exceptions import EndpointConnectionError

    from s3claim.errors import ClaimStoreError

    store = _s3_store(s3, bucket)

    def refuse(request: Any, **_: Any) -> None:
        if request.url.split("?")[0].endswith(".index"):
            raise EndpointConnectionError(endpoint_url=request.url)

    s3.meta.events.register("before-send.s3.PutObject", refuse)
    try:
        with pytest.raises(ClaimStoreError):
            store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", refuse)
    handle = store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    got = store.read_line(SCOPE, handle, 1500, limit=100)
    assert (got.text, got.offset) == expected_line(TEXTS["log"], 1500, 100)


def test_a_claim_whose_index_is_gone_is_refused_as_damaged(s3: Any, bucket: str) -> None:
    from s3claim.errors import ClaimStoreError

    store = _s3_store(s3, bucket)
    handle = store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    s3.delete_object(Bucket=bucket, Key=store.layout.index_key(SCOPE, handle))
    with pytest.raises(ClaimStoreError) as raised:
        store.read_line(SCOPE, handle, 2, limit=50)
    assert raised.value.reason == "damaged"


def test_a_single_one_mib_line_reads_from_its_start_and_on_by_offset(
    store_under_test: StoreUnderTest,
) -> None:
    from s3claim import claim_check_tool
    from s3claim.tools import RunContext

    store: Any = store_under_test.store
    text = "".join(chr(0x41 + n % 26) for n in range(1024 * 1024))  # no newline at all
    handle = store.put(SCOPE, text, ttl_seconds=60)
    fetch = claim_check_tool(store)
    context = RunContext(SCOPE, "a", lambda _: None)

    def read(**arguments: Any) -> str:
        answer = claim_answer(fetch, {"handle": handle, **arguments}, context)
        assert not answer.is_error, answer.text[:200]
        return answer.text

    first = read(line=1)
    assert first == text[:4096] + "\n\n" + (
        f"[line 1 of 1 goes on past this window (characters 0-4096 of {len(text)}). Call "
        f"fetch_result with handle='{handle}' and offset=4096 to continue.]"
    )
    assert read(line=2).startswith(f"[fetch_result: no line 2; the result is {len(text)} ")
    end = read(from_end=True, limit=100)
    assert end == text[-100:] + "\n\n" + (
        f"[end of the result (fetch_result): characters {len(text) - 100}-{len(text)} of "
        f"{len(text)}, line 1 of 1.]"
    )


def test_the_index_is_put_while_the_claims_body_is_sent(s3: Any, bucket: str) -> None:
    """The claim's PutObject waits, at the wire, for its index's: only a put that sends both
    at once gets past it (one after the other, the index would never come)."""
    import threading

    store = _s3_store(s3, bucket)
    index_sent = threading.Event()
    claim_waited: list[bool] = []

    def hold(request: Any, **_: Any) -> None:
        if request.url.split("?")[0].endswith(".index"):
            index_sent.set()
        else:
            claim_waited.append(index_sent.wait(timeout=10))

    s3.meta.events.register("before-send.s3.PutObject", hold)
    try:
        handle = store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", hold)
    assert claim_waited == [True]
    got = store.read_line(SCOPE, handle, 1500, limit=100)
    assert (got.text, got.offset) == expected_line(TEXTS["log"], 1500, 100)


def test_a_claim_whose_write_fails_is_not_readable_and_forget_erases_its_index(
    s3: Any, bucket: str
) -> None:
    from botocore.exceptions import EndpointConnectionError

    from s3claim.errors import ClaimStoreError

    store = _s3_store(s3, bucket)

    def refuse(request: Any, **_: Any) -> Any:
        if not request.url.split("?")[0].endswith(".index"):  # the claim, every retry of it
            raise EndpointConnectionError(endpoint_url=request.url)
        return None

    s3.meta.events.register("before-send.s3.PutObject", refuse)
    try:
        with pytest.raises(ClaimStoreError):
            store.put(SCOPE, TEXTS["log"], ttl_seconds=60)
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", refuse)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert len(keys) == 1 and keys[0].endswith(".index")  # the index alone, no claim
    assert store.forget(tenant=SCOPE.tenant) == 0  # it counts claims, and erases the index too
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
