"""The async face: check-in, fetch and forget for coroutines, never blocking the event loop.

`AsyncClaimCheckStore` (in `s3claim.store`, beside the sync protocol) is implemented here for
any sync store by `ThreadedAsyncStore`, which runs each call on a small pool of worker threads
of its own, and `AsyncClaimCheck` does the same for a `ClaimCheck`'s check-in. The S3 store's
own async face, `AsyncS3ClaimCheckStore`, lives with the S3 family (`s3claim.s3`): it sends
fetches from the loop on aiobotocore, which `make bench` measured faster than worker threads
with less loop lag (docs/benchmarks.md#async-fetches-and-event-loop-lag). No blocking boto3
call ever runs on the event-loop thread, and claims are shared: a handle from either face
redeems on the other.
"""

from s3claim.aio._threaded import AsyncClaimCheck, ThreadedAsyncStore
from s3claim.aio._workers import DEFAULT_MAX_WORKERS, Workers

__all__ = ["DEFAULT_MAX_WORKERS", "AsyncClaimCheck", "ThreadedAsyncStore", "Workers"]
