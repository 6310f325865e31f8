"""The async face: check-in, fetch and forget for coroutines, never blocking the event loop.

`AsyncClaimCheckStore` is a sibling of `ClaimCheckStore` (the same three operations, the same
errors), not a mode of it. `ThreadedAsyncStore` implements it for any sync store by running
each call on a small pool of worker threads of its own; `AsyncClaimCheck` does the same for a
`ClaimCheck`'s check-in, for the admission path and for claim tools. No boto3 call ever runs on
the event-loop thread, and claims are shared: a handle from either face redeems on the other.

Why threads and not an async S3 client (aiobotocore), by measurement (`make bench`, measure 7,
and the same measure run in a venv with aiobotocore 3.10): 64 tasks on one loop fetch random
4,096-character windows from s3rver on 127.0.0.1 while a 1 ms ticker records the loop's lag;
2 cores, shared with s3rver and with other jobs (load average 4-6), medians of 5 interleaved
runs of 960 fetches:

    ==========================================  =========  ==========  =============
    face                                        fetches/s  vs 16 sync  loop lag p99
    ==========================================  =========  ==========  =============
    16 sync threads (the baseline)                    588       1.00x        -
    threads, 4 workers (the default)                  592       1.01x      10.8 ms
    threads, 8 workers                                678       1.15x      17.3 ms
    aiobotocore, 4 requests in flight                 997       1.70x       4.4 ms
    aiobotocore, 8 requests in flight               1,104       1.88x       8.2 ms
    aiobotocore, 64 requests in flight                641       1.09x       126 ms
    ==========================================  =========  ==========  =============

Both need a bound: lag grows with what runs at once (worker threads contend with the loop for
the GIL; aiobotocore parses every response on the loop itself). Within the bound aiobotocore
is faster. We use threads anyway: both meet the budget's throughput, and the difference is
fetches per second that no agent can use (one window per model turn, and a turn takes
seconds), whereas aiobotocore would cost a second S3 store to keep identical to the first
(conditional puts, refreshes, ranged reads, versioned erasure, retries: everything the sync
store's tests pin) and a pin of botocore below the version boto3 needs here.
"""

from s3claim.aio._claimcheck import AsyncClaimCheck
from s3claim.aio._store import AsyncClaimCheckStore, ThreadedAsyncStore
from s3claim.aio._workers import DEFAULT_MAX_WORKERS

__all__ = ["DEFAULT_MAX_WORKERS", "AsyncClaimCheck", "AsyncClaimCheckStore", "ThreadedAsyncStore"]
