"""Run journals: a run recorded as it goes, so another instance can resume it.

`RunJournal` is the protocol (exists, load, save); `MemoryRunJournal` keeps records in this
process and `S3RunJournal` in the claim bucket, beside each run's claims. The S3 journal loads
on first use, so importing this package never imports boto3.
"""

from typing import TYPE_CHECKING, Any

from s3claim.journal._memory import MemoryRunJournal
from s3claim.journal._protocol import DEFAULT_JOURNAL_TTL_SECONDS, RunJournal
from s3claim.journal._record import JournalEntry, RunInfo, RunRecord, RunStatus

if TYPE_CHECKING:
    from s3claim.journal._s3 import S3RunJournal


def __getattr__(name: str) -> Any:
    if name == "S3RunJournal":
        from s3claim.journal._s3 import S3RunJournal

        return S3RunJournal
    raise AttributeError(f"module 's3claim.journal' has no attribute {name!r}")


__all__ = [
    "DEFAULT_JOURNAL_TTL_SECONDS",
    "JournalEntry",
    "MemoryRunJournal",
    "RunInfo",
    "RunJournal",
    "RunRecord",
    "RunStatus",
    "S3RunJournal",
]
