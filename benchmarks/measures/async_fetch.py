"""64 concurrent async fetches, against 16 sync threads, with event-loop lag.

The async face, `ThreadedAsyncStore`, runs the sync S3 store on a bounded pool of worker
threads of its own. While 64 tasks fetch random windows of one document from the timing
server, a ticker on the same loop sleeps 1 ms at a time and records how late each wake-up
was: that delay is what every other coroutine of the application waits. Budget, for the
default pool: lag p99 under 10 ms and at least the throughput of 16 sync threads sharing one
store.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int, fmt_ms, fmt_ratio, median, percentile
from devkit.documents import document, label
from s3claim.aio import DEFAULT_MAX_WORKERS, ThreadedAsyncStore
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS

__all__ = ["run"]

TASKS = 64
SYNC_THREADS = 16
WORKERS = (2, DEFAULT_MAX_WORKERS, 8)
LAG_BUDGET = 0.010
TICK = 0.001
REPEATS = 3  # the median run of each configuration is reported
SCOPE = Scope(tenant="bench", run="async")


async def _ticker(stop: asyncio.Event, delays: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        started = loop.time()
        await asyncio.sleep(TICK)
        delays.append(max(0.0, loop.time() - started - TICK))


async def _drive(
    fetch: Callable[[int], Awaitable[object]], offsets: list[int]
) -> tuple[float, float, float]:
    """(fetches per second, lag p99, lag max) for TASKS tasks sharing the offsets."""
    stop = asyncio.Event()
    delays: list[float] = []
    ticker = asyncio.create_task(_ticker(stop, delays))
    pending = list(offsets)

    async def task() -> None:
        while pending:
            await fetch(pending.pop())

    began = time.perf_counter()
    await asyncio.gather(*(task() for _ in range(TASKS)))
    wall = time.perf_counter() - began
    stop.set()
    await ticker
    return len(offsets) / wall, percentile(delays, 99), max(delays, default=0.0)


def _median_run(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """The run with the median lag p99 (a whole run, so its three figures belong together)."""
    return sorted(runs, key=lambda r: r[1])[len(runs) // 2]


def _sync_rate(store: Any, handle: str, offsets: list[int]) -> float:
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=SYNC_THREADS) as pool:
        list(pool.map(lambda offset: store.fetch(SCOPE, handle, offset=offset), offsets))
    return len(offsets) / (time.perf_counter() - began)


def _threaded(
    store: Any, handle: str, offsets: list[int], workers: int
) -> tuple[float, float, float]:
    async def main() -> tuple[float, float, float]:
        astore = ThreadedAsyncStore(store, max_workers=workers)
        # Untimed: the pool starts its threads on demand, each start a wait on the loop.
        await asyncio.gather(*(astore.fetch(SCOPE, handle, offset=o) for o in offsets[:TASKS]))
        return await _drive(lambda offset: astore.fetch(SCOPE, handle, offset=offset), offsets)

    return asyncio.run(main())


def run(bench: Bench) -> Section:
    chars = bench.profile.concurrency_chars
    count = bench.profile.concurrency_fetches * 2
    rng = random.Random(7)  # noqa: S311  (offsets, not secrets)
    offsets = [rng.randrange(0, chars - DEFAULT_FETCH_CHARS) for _ in range(count)]
    client, bucket, store, _ = bench.stores(bench.timing, pool=TASKS)
    rows: list[list[str]] = []
    try:
        handle = store.put(SCOPE, document(chars, "ascii"), ttl_seconds=TTL)
        store.fetch(SCOPE, handle, offset=0)  # warm the connection
        sync = median([_sync_rate(store, handle, offsets) for _ in range(REPEATS)])
        rows.append([f"{SYNC_THREADS} sync threads", "", fmt_int(sync), "1.00×", "n/a", "n/a"])
        results: dict[str, tuple[float, float, float]] = {}
        for workers in WORKERS:
            default = " (default)" if workers == DEFAULT_MAX_WORKERS else ""
            results[f"ThreadedAsyncStore, {workers} workers{default}"] = _median_run(
                [_threaded(store, handle, offsets, workers) for _ in range(REPEATS)]
            )
        for name, (rate, lag99, lagmax) in results.items():
            rows.append(
                [
                    name,
                    str(TASKS),
                    fmt_int(rate),
                    fmt_ratio(rate / sync),
                    fmt_ms(lag99),
                    fmt_ms(lagmax),
                ]
            )
    finally:
        empty_bucket(client, bucket)
    default = next(r for n, r in results.items() if "(default)" in n)
    rate, lag99, _ = default
    failures = []
    if lag99 >= LAG_BUDGET:
        failures.append(f"event-loop lag p99 {fmt_ms(lag99)} is not under {fmt_ms(LAG_BUDGET)}")
    if rate < sync:
        failures.append(
            f"{fmt_int(rate)} async fetches/s is below {SYNC_THREADS} sync threads' {fmt_int(sync)}"
        )
    verdict = "within budget" if not failures else "OVER BUDGET: " + "; ".join(failures)
    return Section(
        title="Async fetches and event-loop lag",
        intro=(
            f"{TASKS} tasks on one event loop fetch {count} random 4,096-character windows of a "
            f"{label(chars)}-character ASCII document from {bench.timing.name} through "
            f"`ThreadedAsyncStore` (its default pool and two others; one boto3 client, pool "
            f"{TASKS}), while a ticker sleeps 1 ms at a time; lag is how late it woke (p99 "
            f"nearest-rank, and the worst). The baseline is {SYNC_THREADS} threads calling the "
            f"sync store. Each row is the median of {REPEATS} runs (by lag p99)."
        ),
        tables=[
            Table(
                headers=["face", "tasks", "fetches/s", "vs sync", "lag p99", "lag max"],
                rows=rows,
                align_left=1,
            )
        ],
        notes=[
            "Worker threads compete with the loop for the GIL: their lag grows with their "
            "number, and their throughput stays that of the sync store they run. The pool is "
            "bounded for that reason; on 2 cores a few threads already keep the store and the "
            "server busy.",
        ],
        headlines=[
            f"{TASKS} concurrent async fetches (ThreadedAsyncStore, {DEFAULT_MAX_WORKERS} "
            "workers): "
            f"{fmt_int(rate)} fetches/s, {fmt_ratio(rate / sync)} of {SYNC_THREADS} sync "
            f"threads, event-loop lag p99 {fmt_ms(lag99)} (budget < 10 ms): {verdict}.",
        ],
        budget_failures=failures,
    )
