"""Where a claim lives in the bucket: `{prefix}{tenant_tag}/{run_tag}/{digest}`.

Tenant and run appear only as keyed hashes (from `HandleKey`), so a bucket listing reveals no
tenant or run name, and no name (slashes, `..`, `%2F`, control characters) can move a key out
of its place. Tenant first, then run: `forget` erases a tenant or one run with a prefix listing.
The digest is the handle's own 32 hex digits; the handle is derived exactly as in every other
store (`HandleKey.handle`).

A run's journal lives beside its claims, at `{run prefix}journal`: erasing a run's prefix
erases its journal, and the name, not being 33 hex digits, can never be a claim's.
"""

from __future__ import annotations

from s3claim.handles import HANDLE_PREFIX, HandleKey
from s3claim.scope import Scope

__all__ = ["JOURNAL_NAME", "Layout", "is_journal_key"]

JOURNAL_NAME = "journal"


def is_journal_key(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == JOURNAL_NAME


class Layout:
    __slots__ = ("_key", "prefix")

    def __init__(self, prefix: str, key: HandleKey) -> None:
        self.prefix = prefix
        self._key = key

    def tenant_prefix(self, tenant: str) -> str:
        return f"{self.prefix}{self._key.tenant_tag(tenant)}/"

    def run_prefix(self, scope: Scope) -> str:
        return f"{self.tenant_prefix(scope.tenant)}{self.run_tag(scope)}/"

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    def object_key(self, scope: Scope, handle: str) -> str:
        """The key for a well-formed handle (the caller has checked it with `is_handle`)."""
        return self.run_prefix(scope) + handle.removeprefix(HANDLE_PREFIX)

    def journal_key(self, scope: Scope) -> str:
        return self.run_prefix(scope) + JOURNAL_NAME
