"""The async face: check-in, fetch and forget for coroutines, never blocking the event loop.

`AsyncClaimCheckStore` is a sibling of `ClaimCheckStore` (the same three operations, the same
errors), not a mode of it. `ThreadedAsyncStore` implements it for any sync store by running
each call on a small pool of worker threads of its own; `AsyncClaimCheck` does the same for a
`ClaimCheck`'s check-in. No boto3 call ever runs on the event-loop thread, and claims are
shared: a handle from either face redeems on the other.

Why worker threads and not an async S3 client (aiobotocore 3.10), by measurement: the async
measure of `make bench`, also run in a venv with aiobotocore, where the same 64 tasks make the
store's one ranged GET through aiobotocore. 64 tasks on one loop fetch random 4,096-character
windows from s3rver on 127.0.0.1 while a 1 ms ticker records the loop's lag (p99); the
baseline is 16 threads calling the sync store. 2 cores, shared with s3rver and with other
sessions' jobs (load average 3 to 7): each figure is the median of 3 to 7 interleaved runs of
960 fetches, and each range spans four to nine such measurements:

    =====================================  ======================  ==============
    face                                   fetches/s vs 16 sync    loop lag p99
    =====================================  ======================  ==============
    threads, 4 workers (the default)       0.71x - 1.41x           7.8 - 10.9 ms
    threads, 8 workers                     0.81x - 1.17x           11 - 22 ms
    aiobotocore, 4 requests in flight      0.84x - 1.70x           4.4 - 12.2 ms
    aiobotocore, 8 requests in flight      0.99x - 1.88x           8.2 - 23 ms
    aiobotocore, 64 requests in flight     0.97x - 1.39x           126 - 133 ms
    =====================================  ======================  ==============

Both need a bound: lag grows with what runs at once (each worker thread competes with the
loop for the GIL; aiobotocore parses every response on the loop itself), and unbounded
aiobotocore stalls the loop for over 100 ms. Within the bound aiobotocore measured faster,
by a margin that varied with the machine's load. Threads met the budget (lag p99 < 10 ms, at
least 16 sync threads' throughput) in the least loaded session (1.07x, 7.8 ms); in busier
ones they missed its throughput half, and at times its lag half. We use threads all the
same, because what aiobotocore buys is fetches per second that no agent uses (one window per
model turn, and a turn takes seconds: 64 agents fetch tens of windows a second, not
hundreds), while it costs:

- a second S3 store to keep identical to the first: widths and formats, conditional puts
  and refreshes, ranged reads and their 416s, versioned erasure and its fallbacks, the retry
  policy and its veto, each pinned by the sync store's tests and all still changing;
- a pin of botocore below 1.43.118, under the boto3 this project otherwise resolves;
- threads anyway for check-in: serialising, neutralising and cutting the head of a
  92,212-character result takes several milliseconds of CPU, which must not run on the loop.
"""

from typing import TYPE_CHECKING, Any

from s3claim.aio._claimcheck import AsyncClaimCheck
from s3claim.aio._store import AsyncClaimCheckStore, ThreadedAsyncStore
from s3claim.aio._workers import DEFAULT_MAX_WORKERS

if TYPE_CHECKING:
    from s3claim.aio._s3 import AsyncS3ClaimCheckStore


def __getattr__(name: str) -> Any:
    if name == "AsyncS3ClaimCheckStore":  # loads boto3: only when asked for
        from s3claim.aio._s3 import AsyncS3ClaimCheckStore

        return AsyncS3ClaimCheckStore
    raise AttributeError(f"module 's3claim.aio' has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_WORKERS",
    "AsyncClaimCheck",
    "AsyncClaimCheckStore",
    "AsyncS3ClaimCheckStore",
    "ThreadedAsyncStore",
]
