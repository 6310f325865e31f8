"""Test doubles for code built on s3claim, each a working part of the library.

`MemoryClaimCheckStore` and `MemoryRunJournal` hold claims and runs in this process;
`ManualClock` is a clock that moves only when told (expiry and repeat reads count by it);
`ScriptedProvider` plays a model's replies from a script; `FailingStore` is the memory store
failing on demand, as a store fails once its retries are spent. Tests of s3claim itself use
them as an application's would (docs/development.md, "Testing with s3claim").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from s3claim.clock import ManualClock
from s3claim.errors import ClaimStoreError
from s3claim.memory import MemoryClaimCheckStore, MemoryRunJournal
from s3claim.providers import ScriptedProvider
from s3claim.scope import Scope
from s3claim.store import ClaimRanges

__all__ = [
    "FailingStore",
    "ManualClock",
    "MemoryClaimCheckStore",
    "MemoryRunJournal",
    "ScriptedProvider",
]


class FailingStore(MemoryClaimCheckStore):
    """The memory store, whose operations named in `fail` (`put`; `read`: every read of a
    claim, each reading mode and the stream search reads) raise `error` while `failing` is
    true; else a memory store like any other. The other keywords are the memory store's."""

    def __init__(
        self,
        *,
        fail: Iterable[str] = ("put", "read"),
        error: Exception | None = None,
        failing: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.fail = frozenset(fail)
        unknown = self.fail - {"put", "read"}
        if unknown:
            raise ValueError(f"FailingStore fails put and read, not {sorted(unknown)}")
        self.error = error or ClaimStoreError("GetObject failed after 5 attempt(s): SlowDown")
        self.failing = failing

    def _check(self, operation: str) -> None:
        if self.failing and operation in self.fail:
            raise self.error

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        self._check("put")
        return super().put(scope, content, ttl_seconds=ttl_seconds, tool=tool)

    def ranges(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> ClaimRanges:
        self._check("read")  # every read of a claim asks for its ranges first
        return super().ranges(scope, handle, check_in_id=check_in_id)
