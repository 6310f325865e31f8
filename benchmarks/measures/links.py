"""Measure: reading a claim through a link (`ClaimCheck.link`, `s3claim serve`).

One claim (64 Mi characters in the full profile); the link server (`s3claim.links.server`)
on uvicorn in this process, on 127.0.0.1, read with urllib as a sandbox would. A
4,096-character window at the claim's middle, read directly (`store.fetch`, what
`fetch_result` runs) and through the link (`?offset=&length=`), on the timing server: the
median of 15 each. Then the S3 requests behind one read in each mode, counted on moto's
server (AWS-shaped: s3rver answers a suffix range as a prefix, which costs a read from the
end a second GET there).

Budget: a window through a link is one request to the server and one ranged GET behind it.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int, fmt_ms, fmt_ratio
from devkit.documents import MiB
from devkit.servers import Wire
from s3claim import ClaimCheck
from s3claim.links.server import links_app
from s3claim.mcp import listen_socket
from s3claim.s3 import S3ClaimCheckStore
from s3claim.scope import Scope

__all__ = ["run"]

_READS = 15
_WINDOW = 4096


def _median(read: Callable[[], object]) -> float:
    times = []
    for _ in range(_READS):
        began = time.perf_counter()
        read()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (loopback)
        data: bytes = response.read()
        return data


@contextmanager
def _serving(store: S3ClaimCheckStore) -> Iterator[str]:
    """The link server over `store` on uvicorn, in a thread: its base URL while it serves."""
    sock = listen_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(links_app(store), log_level="warning", access_log=False))
    serving = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    serving.start()
    try:
        while not server.started and serving.is_alive():
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        serving.join(timeout=30)
        sock.close()


def _timed(bench: Bench, text: str) -> tuple[float, float]:
    """(direct, through the link): a window at the middle, on the timing server."""
    client, bucket, store, _ = bench.stores(bench.timing)
    scope = Scope("bench", f"links-{uuid.uuid4().hex[:8]}")
    at = len(text) // 2
    try:
        with _serving(store) as base:
            handle = store.put(scope, text, ttl_seconds=TTL)
            url = ClaimCheck(store).link(handle, scope=scope, base_url=base)
            window = f"{url}?offset={at}&length={_WINDOW}"
            assert _get(window) == text[at : at + _WINDOW].encode()
            direct = _median(lambda: store.fetch(scope, handle, at, _WINDOW))
            return direct, _median(lambda: _get(window))
    finally:
        empty_bucket(client, bucket)


def _counted(bench: Bench, text: str) -> tuple[list[list[str]], list[str]]:
    """The S3 requests behind one read in each mode, counted on moto (AWS-shaped)."""
    records = json.dumps({"items": [{"id": n, "name": f"record {n}"} for n in range(2000)]})
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    scope = Scope("bench", f"links-{uuid.uuid4().hex[:8]}")
    at = len(text) // 2
    rows, failures = [], []
    try:
        with _serving(store) as base:
            claims = ClaimCheck(store)
            url = claims.link(store.put(scope, text, ttl_seconds=TTL), scope=scope, base_url=base)
            json_handle = store.put(scope, records, ttl_seconds=TTL)
            json_url = claims.link(json_handle, scope=scope, base_url=base)
            modes = {
                f"window (?offset={at:,}&length={_WINDOW:,})": (
                    f"{url}?offset={at}&length={_WINDOW}",
                    1,
                ),
                "lines (?line=1000&lines=10)": (f"{url}?line=1000&lines=10", 2),
                "the end (?from_end&lines=10)": (f"{url}?from_end&lines=10", 1),
                "JSON path (?path=/items/1500)": (f"{json_url}?path=/items/1500", 3),
            }
            for mode, (each, budget) in modes.items():
                wire.clear()
                _get(each)
                rows.append([mode, fmt_int(wire.total_requests), fmt_int(budget)])
                if wire.total_requests > budget or set(wire.requests) != {"GetObject"}:
                    failures.append(f"{mode}: {dict(wire.requests)}")
    finally:
        empty_bucket(client, bucket)
    return rows, failures


def run(bench: Bench) -> Section:
    chars = bench.profile.memory_chars
    text = ("The parties agree to the terms below.\n" * (chars // 38 + 1))[:chars]
    direct, linked = _timed(bench, text)
    rows, failures = _counted(bench, text)
    label = f"{chars / MiB:,.0f} Mi"
    return Section(
        title="Links",
        intro=__doc__.split("\n\n", 1)[1] if __doc__ else "",
        tables=[
            Table(
                title=f"A {_WINDOW:,}-character window of a {label}-character claim (median "
                f"of {_READS})",
                headers=["read", "time"],
                rows=[
                    ["direct (store.fetch, as fetch_result)", fmt_ms(direct)],
                    ["through the link (urllib, one HTTP request)", fmt_ms(linked)],
                ],
            ),
            Table(
                title=f"S3 requests (GetObject) behind one read through a link, on moto "
                f"({label}-character claim)",
                headers=["mode", "requests", "budget"],
                rows=rows,
            ),
        ],
        headlines=[
            f"Links: a {_WINDOW:,}-character window of a {label}-character claim through a "
            f"link in {fmt_ms(linked)} (one HTTP request, {rows[0][1]} ranged GET behind it) "
            f"against {fmt_ms(direct)} direct ({fmt_ratio(linked / direct)})",
        ],
        budget_failures=failures,
    )
