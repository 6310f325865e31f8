"""The in-process doubles: a claim store and a run journal in this process's memory.

They keep every promise of their protocols (scope, expiry, one message for every missing
claim or run, conditional saves), so the behaviour suites run against them as against S3;
what they cannot do is outlive their process. For tests, and for agents in one process.
"""

from s3claim.memory._journal import MemoryRunJournal
from s3claim.memory._store import DEFAULT_MAX_BYTES, MemoryClaimCheckStore

__all__ = ["DEFAULT_MAX_BYTES", "MemoryClaimCheckStore", "MemoryRunJournal"]
