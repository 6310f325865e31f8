"""Everything that speaks S3, in one place: no module outside this package imports boto3.

- `Bucket`: the bucket as s3claim uses it (client, name, keyed layout, retry policy,
  encryption, lifecycle classes), built once and shared by the three below (`_bucket`).
- `S3ClaimCheckStore`: claims shared across processes through it (`_store`): each claim its
  text and its index in sealed blocks (`_format`, `_seal`, `_layout`), read in ranges by the
  reading engine (`_reads`). From a coroutine: `s3claim.ThreadedAsyncStore` over it.
- `S3RunJournal`: each run's record beside the run's claims (`_journal`).
- `S3AuditTrail`: the audit trail of redemptions, in the bucket's audit area (`_audit`).
- `RetryPolicy` (`_retry`) and the one table of S3 error codes (`_errors`), shared by all.
- `S3ClaimSettings`: the `S3CLAIM_*` variables; `s3claim.s3.admin`: provisioning, the
  doctor's checks and the capability probes the CLI uses.

`S3ClaimCheckStore.from_settings()` reads `S3CLAIM_BUCKET`, `S3CLAIM_HANDLE_KEY` and the
other `S3CLAIM_*` variables; `S3ClaimCheckStore(bucket, handle_key=...)` takes them directly,
and `S3RunJournal(store.bucket)` shares the store's bucket.
"""

from s3claim.s3._audit import S3AuditTrail
from s3claim.s3._bucket import Bucket
from s3claim.s3._journal import S3RunJournal
from s3claim.s3._retry import RetryPolicy
from s3claim.s3._store import S3ClaimCheckStore
from s3claim.s3.settings import S3ClaimSettings
from s3claim.store import ClaimInfo  # what `claims` lists; kept here for `ls`

__all__ = [
    "Bucket",
    "ClaimInfo",
    "RetryPolicy",
    "S3AuditTrail",
    "S3ClaimCheckStore",
    "S3ClaimSettings",
    "S3RunJournal",
]
