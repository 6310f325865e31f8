"""Measure 5: windows fetched by 1, 4 and 16 threads sharing one store (one client).

Offsets are drawn from a fixed seed, the same for both stores. Each level runs a fixed number
of fetches, and stops submitting early if it passes its time bound.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, fmt_ratio, median, percentile
from devkit.documents import document, label
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS

__all__ = ["run"]

THREADS = (1, 4, 16)
SCOPE = Scope(tenant="bench", run="concurrency")
_TIME_BOUND = 60.0  # seconds per store and thread count


def _level(
    target: Any, handle: str, offsets: list[int], threads: int
) -> tuple[float, list[float], int]:
    """(fetches per second, latencies, fetches done) for one thread count."""
    latencies: list[float] = []
    deadline = time.monotonic() + _TIME_BOUND

    def one(offset: int) -> None:
        if time.monotonic() > deadline:
            return
        start = time.perf_counter()
        target.fetch(SCOPE, handle, offset=offset)
        latencies.append(time.perf_counter() - start)  # list.append is atomic

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for future in [pool.submit(one, offset) for offset in offsets]:
            future.result()
    wall = time.perf_counter() - began
    return len(latencies) / wall, latencies, len(latencies)


def run(bench: Bench) -> Section:
    chars = bench.profile.concurrency_chars
    text = document(chars, "ascii")
    rng = random.Random(6)  # noqa: S311  (offsets, not secrets)
    offsets = [rng.randrange(0, chars - DEFAULT_FETCH_CHARS) for _ in range(10_000)]
    client, bucket, store, naive = bench.stores(bench.timing, pool=max(THREADS) * 2)
    rows: list[list[str]] = []
    speedups: list[float] = []
    try:
        handles = {
            "s3claim": store.put(SCOPE, text, ttl_seconds=TTL),
            "naive": naive.put(SCOPE, text, ttl_seconds=TTL),
        }
        for name, target in (("s3claim", store), ("naive", naive)):
            target.fetch(SCOPE, handles[name], offset=0)  # untimed warm-up
        for threads in THREADS:
            results = {}
            for name, target in (("s3claim", store), ("naive", naive)):
                count = bench.profile.concurrency_fetches
                if name == "naive":
                    count = max(2 * threads, count // 10)
                results[name] = _level(target, handles[name], offsets[:count], threads)
            for name in ("s3claim", "naive"):
                rate, latencies, done = results[name]
                rows.append(
                    [
                        str(threads),
                        name,
                        str(done),
                        f"{rate:,.0f}",
                        fmt_ms(percentile(latencies, 50)),
                        fmt_ms(percentile(latencies, 99)),
                    ]
                )
            speedups.append(results["s3claim"][0] / results["naive"][0])
    finally:
        empty_bucket(client, bucket)
    return Section(
        title="Concurrent fetches",
        intro=(
            f"Threads fetching random 4,096-character windows of one {label(chars)}-character "
            f"ASCII document from {bench.timing.name}, through one shared store and client "
            f"(connection pool {max(THREADS) * 2}). s3claim runs "
            f"{bench.profile.concurrency_fetches} fetches per level, the naive store a tenth "
            f"(at least two per thread). p99 is nearest-rank (with fewer than 100 fetches it "
            "is the slowest one)."
        ),
        tables=[
            Table(
                headers=["threads", "store", "fetches", "fetches/s", "p50", "p99"],
                rows=rows,
                align_left=2,
            )
        ],
        notes=[
            "Both the client (Python, one GIL) and the server share this machine's 2 cores, so "
            "throughput stops scaling early: the figure is the machine's, not S3's.",
        ],
        headlines=[
            f"Concurrent fetches from a {label(chars)}-character document: s3claim serves "
            f"{fmt_ratio(median(speedups))} the naive store's windows per second (median over "
            f"{', '.join(map(str, THREADS))} threads).",
        ],
    )
