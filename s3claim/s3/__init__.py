"""The S3 claim-check store: claims shared across processes through one bucket.

`S3ClaimCheckStore.from_settings()` reads `S3CLAIM_BUCKET`, `S3CLAIM_HANDLE_KEY` and the
other `S3CLAIM_*` variables; `S3ClaimCheckStore(bucket, handle_key=...)` takes them directly.
"""

from s3claim.s3._retry import RetryPolicy
from s3claim.s3._store import ClaimInfo, S3ClaimCheckStore
from s3claim.s3.settings import S3ClaimSettings

__all__ = ["ClaimInfo", "RetryPolicy", "S3ClaimCheckStore", "S3ClaimSettings"]
