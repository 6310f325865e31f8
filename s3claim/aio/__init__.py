"""The async face: check-in, fetch and forget for coroutines, never blocking the event loop.

`AsyncClaimCheckStore` (in `s3claim.store`, beside the sync protocol) is implemented here for
any sync store, the S3 store included, by `ThreadedAsyncStore`, which runs each call on a
small pool of worker threads of its own; `AsyncClaimCheck` does the same for a `ClaimCheck`.
Every store has one implementation, the sync one, and every async host of ours runs it on
workers: no blocking boto3 call runs on the event-loop thread, and claims are shared, so a
handle put from a coroutine redeems in sync code and the other way round. The pool is small
because each worker competes with the loop for the GIL
(docs/benchmarks.md#async-fetches-and-event-loop-lag).
"""

from s3claim.aio._threaded import AsyncClaimCheck, ThreadedAsyncStore
from s3claim.aio._workers import DEFAULT_MAX_WORKERS, Workers

__all__ = ["DEFAULT_MAX_WORKERS", "AsyncClaimCheck", "ThreadedAsyncStore", "Workers"]
