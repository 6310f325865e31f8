"""The budget of a read by line and of the last window on S3, counted on the wire (moto).

On a 64 Mi-character log: any `line=N` costs at most 2 ranged GETs, one of them at most one
sealed block of the line index (4,096 bytes and its 16-byte tag), the other the window's own
blocks; `from_end` is one GET of a suffix range. Times live in `benchmarks/`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from s3claim._reading._lines import count_lines
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.s3._seal import UNIT_BYTES
from s3claim.scope import Scope

SCOPE = Scope(tenant="acme", run="run-1")
MI = 1024 * 1024


def log(chars: int) -> str:
    """A log of varied line lengths, an ERROR near the end and a stack trace after it."""
    lines: list[str] = []
    size, n = 0, 0
    while size < chars - 2000:
        n += 1
        line = f"2026-01-01T00:00:{n % 60:02d} INFO worker-{n % 7} request {n} ok" + " x" * (n % 40)
        lines.append(line + "\n")
        size += len(line) + 1
    tail = "ERROR request failed\nTraceback (most recent call last):\n" + "  frame\n" * 200
    return ("".join(lines) + tail)[:chars]


@dataclass
class Requests:
    """Each request as (operation, key, range, response bytes), in order."""

    seen: list[list[Any]] = field(default_factory=list)

    def attach(self, client: Any) -> Requests:
        client.meta.events.register("before-send.s3.*", self._send)
        client.meta.events.register("after-call.s3.*", self._answer)
        return self

    def _send(self, request: Any, event_name: str, **_: Any) -> None:
        ranged = request.headers.get("Range")
        key = request.url.split("?")[0].rsplit("/", 1)[-1]
        self.seen.append([event_name.rsplit(".", 1)[-1], key, ranged, 0])

    def _answer(self, http_response: Any, **_: Any) -> None:
        self.seen[-1][3] = int(http_response.headers.get("content-length") or 0)

    def detach(self, client: Any) -> None:
        client.meta.events.unregister("before-send.s3.*", self._send)
        client.meta.events.unregister("after-call.s3.*", self._answer)


@pytest.fixture
def wire(claim: tuple[Any, S3ClaimCheckStore, str, str]) -> Iterator[Requests]:
    requests = Requests().attach(claim[0])
    yield requests
    requests.detach(claim[0])


@pytest.fixture(scope="module")
def claim(moto_endpoint: str) -> Iterator[tuple[Any, S3ClaimCheckStore, str, str]]:
    """The 64 Mi-character log, put once for the module (seconds on moto)."""
    from tests._s3 import moto_client

    with pytest.MonkeyPatch.context() as env:  # module-scoped: before the sealed env fixture
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        client = moto_client(moto_endpoint)
        client.list_buckets()

    client.create_bucket(Bucket="line-budgets")
    store = S3ClaimCheckStore(
        "line-budgets",
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )
    text = log(64 * MI)
    handle = store.put(SCOPE, text, ttl_seconds=3600)
    try:
        yield client, store, handle, text
    finally:
        store.forget(tenant="acme")
        client.delete_bucket(Bucket="line-budgets")


@pytest.mark.slow
def test_the_index_costs_at_most_four_bytes_a_line_and_lives_beside_the_claim(
    claim: tuple[Any, S3ClaimCheckStore, str, str],
) -> None:
    client, store, handle, text = claim
    key = store.layout.index_key(SCOPE, handle)
    size = client.head_object(Bucket="line-budgets", Key=key)["ContentLength"]
    lines = count_lines(text)
    assert lines > 500_000
    assert size <= 4 * (lines - 1) * UNIT_BYTES / 4096 + UNIT_BYTES  # 4 bytes a line, sealed
    assert size >= 4 * (lines - 1)
    assert key.startswith(store.layout.run_prefix(SCOPE))


@pytest.mark.slow
def test_any_line_is_two_ranged_gets_and_one_index_block_beside_the_window(
    claim: tuple[Any, S3ClaimCheckStore, str, str],
) -> None:
    client, store, handle, text = claim
    starts = [0, *(m.end() for m in re.finditer("\n", text) if m.end() < len(text))]
    lines = len(starts)
    for line in (2, 3, 1024, 1025, lines // 2, lines - 1, lines):
        seen = Requests().attach(client)
        window = store.read_line(SCOPE, handle, line, limit=4096)
        seen.detach(client)
        assert window.offset == starts[line - 1] and text.startswith(window.text, window.offset)
        operations = [s[0] for s in seen.seen]
        assert operations == ["GetObject", "GetObject"], seen.seen
        index, body = seen.seen
        assert index[1].endswith(".index") and index[3] <= UNIT_BYTES  # one sealed block
        assert body[3] <= 2 * UNIT_BYTES  # the window's own blocks


@pytest.mark.slow
@pytest.mark.parametrize("line", [1, 10**6 * 3, 10**30])
def test_the_first_line_and_lines_past_the_last_cost_at_most_two_requests(
    claim: tuple[Any, S3ClaimCheckStore, str, str], wire: Requests, line: int
) -> None:
    _, store, handle, text = claim
    seen = wire
    window = store.read_line(SCOPE, handle, line, limit=4096)
    assert len(seen.seen) <= 2  # a HEAD's Content-Length is the object's, not bytes sent
    assert sum(s[3] for s in seen.seen if s[0] == "GetObject") <= 2 * UNIT_BYTES
    assert window.total_chars == len(text) and window.total_lines == count_lines(text)
    if line == 1:
        assert text.startswith(window.text) and window.text.endswith("\n")
    else:
        assert window.text == "" and window.offset == len(text)


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 200, 2000, 4096])
def test_the_last_window_is_one_get_of_a_suffix_range(
    claim: tuple[Any, S3ClaimCheckStore, str, str], wire: Requests, limit: int
) -> None:
    _, store, handle, text = claim
    seen = wire
    window = store.read_end(SCOPE, handle, limit=limit)
    assert [s[0] for s in seen.seen] == ["GetObject"]
    assert str(seen.seen[0][2]).removeprefix("b'").startswith("bytes=-")
    assert seen.seen[0][3] <= (-(-(limit + 1) // 4096) + 2) * UNIT_BYTES  # a few blocks
    assert text.endswith(window.text) and 0 < len(window.text) <= limit
    assert window.last_line == count_lines(text)
