"""The S3 claim-check store: claims shared across processes through one bucket.

    store = S3ClaimCheckStore.from_settings()          # S3CLAIM_BUCKET, S3CLAIM_HANDLE_KEY, ...
    store = S3ClaimCheckStore("my-bucket", handle_key=secret)
"""

from s3claim.s3._retry import RetryPolicy
from s3claim.s3._store import S3ClaimCheckStore
from s3claim.s3.settings import S3ClaimSettings

__all__ = ["RetryPolicy", "S3ClaimCheckStore", "S3ClaimSettings"]
