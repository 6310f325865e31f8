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

from s3claim._lines import LineWindow, count_lines, find_line, line_index, line_starts
from s3claim.errors import ClaimUnavailableError
from s3claim.memory import MemoryClaimCheckStore
from s3claim.scope import Scope
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
    assert list(line_starts("ab\ncd\n\nef")) == [3, 6, 7]
    assert line_index("one line\n") is None and line_index("") is None
    assert line_index("a\nb\nc") == bytes([2, 0, 0, 0, 4, 0, 0, 0])


@given(st.text(alphabet="ab\r\n", max_size=60), st.integers(1, 70), st.integers(1, 7))
def test_a_scan_finds_every_line_start_in_pieces_of_any_size(
    text: str, line: int, piece: int
) -> None:
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    starts = _starts(text) if text else [0]
    assert find_line(pieces, line) == (starts[line - 1] if line <= len(starts) else None)


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


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
