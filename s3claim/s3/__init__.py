"""Everything that speaks S3, in one place: no module outside this package imports boto3.

- `S3ClaimCheckStore`: claims shared across processes through one bucket (`_store`), each
  window one ranged GET planned and checked by `_read`, with the object format in `_format`
  and the key layout in `_layout`.
- `AsyncS3ClaimCheckStore`: its async face, fetching on aiobotocore (`_async`).
- `S3RunJournal`: each run's record beside the run's claims (`_journal`).
- `S3AuditTrail`: the audit trail of redemptions kept beside them too (`_audit`).
- `RetryPolicy` (`_retry`) and the one table of S3 error codes (`_errors`), shared by all three.
- `S3ClaimSettings`: the `S3CLAIM_*` variables; `s3claim.s3.admin`: provisioning, the
  doctor's checks and the capability probes the CLI uses.

`S3ClaimCheckStore.from_settings()` reads `S3CLAIM_BUCKET`, `S3CLAIM_HANDLE_KEY` and the
other `S3CLAIM_*` variables; `S3ClaimCheckStore(bucket, handle_key=...)` takes them directly.
"""

from s3claim.s3._async import AsyncS3ClaimCheckStore
from s3claim.s3._audit import S3AuditTrail
from s3claim.s3._journal import S3RunJournal
from s3claim.s3._retry import RetryPolicy
from s3claim.s3._store import ClaimInfo, S3ClaimCheckStore
from s3claim.s3.settings import S3ClaimSettings

__all__ = [
    "AsyncS3ClaimCheckStore",
    "ClaimInfo",
    "RetryPolicy",
    "S3AuditTrail",
    "S3ClaimCheckStore",
    "S3ClaimSettings",
    "S3RunJournal",
]
