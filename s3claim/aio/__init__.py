"""The async face: check-in, fetch and forget for coroutines, never blocking the event loop.

`AsyncClaimCheckStore` is a sibling of `ClaimCheckStore` (the same three operations, the same
errors), not a mode of it. `AsyncS3ClaimCheckStore` implements it for the S3 store, fetching
on aiobotocore; `ThreadedAsyncStore` for any sync store, running each call on a small pool of
worker threads of its own; `AsyncClaimCheck` does the same for a `ClaimCheck`'s check-in. No
blocking boto3 call ever runs on the event-loop thread, and claims are shared: a handle from
either face redeems on the other.

Which async client, by measurement: the async measure of `make bench` (64 tasks on one loop
fetch random 4,096-character windows from s3rver on 127.0.0.1 while a 1 ms ticker records the
loop's lag; the baseline is 16 threads calling the sync store; 2 cores; each row the median of
3 runs), on a quiet machine, twice:

    ====================================  ====================  ==============
    face                                  fetches/s vs 16 sync  loop lag p99
    ====================================  ====================  ==============
    aiobotocore, 4 in flight (default)    1.50x - 1.55x         3.0 - 5.3 ms
    aiobotocore, 8 in flight              1.73x - 1.76x         5.9 - 6.3 ms
    aiobotocore, 64 in flight             1.63x - 1.73x         95 - 109 ms
    worker threads, 2                     0.75x - 0.78x         3.9 - 9.5 ms
    worker threads, 4                     0.84x - 0.92x         10.6 - 13.7 ms
    worker threads, 8                     0.93x - 0.97x         27 - 29 ms
    ====================================  ====================  ==============

Worker threads cannot meet the budget (lag p99 under 10 ms with at least the sync threads'
throughput): every thread that wakes competes with the loop for the GIL, and what they run is
the same sync store, so their throughput can at best equal it. aiobotocore meets it with room
to spare, bounded: the loop parses every answer itself, so 64 requests in flight stall it for
100 ms. So `AsyncS3ClaimCheckStore` sends fetches on aiobotocore, 4 in flight by default, and
shares everything else with the sync store (the range, the checks on the answer, the retry
policy): one fetch, sent two ways. Check-in and forget stay on worker threads
(`ThreadedAsyncStore`), as does every call on the memory store: serialising, neutralising and
hashing a 92,212-character result takes milliseconds of CPU that must not run on the loop,
and erasure is rare. The price is a dependency, `s3claim[aio]`, which pins botocore to the
releases aiobotocore was built against.
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
