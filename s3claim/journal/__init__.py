"""Run journals: a run recorded as it goes, so another instance can resume it.

The protocol (`RunJournal`: exists, load, save) and what a journal keeps (`RunRecord`). Its
implementations live with their families: `MemoryRunJournal` in `s3claim.memory`, and
`S3RunJournal` in `s3claim.s3`, beside each run's claims.
"""

from s3claim.journal._protocol import DEFAULT_JOURNAL_TTL_SECONDS, RunJournal
from s3claim.journal._record import JournalEntry, RunInfo, RunRecord, RunStatus

__all__ = [
    "DEFAULT_JOURNAL_TTL_SECONDS",
    "JournalEntry",
    "RunInfo",
    "RunJournal",
    "RunRecord",
    "RunStatus",
]
