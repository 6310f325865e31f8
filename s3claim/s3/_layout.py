"""Where a claim lives in the bucket: `{prefix}{tenant_tag}/{run_tag}/{digest}`.

Tenant and run appear only as keyed hashes (`HandleKey`), so a listing reveals no name and no
name can move a key out of its place; tenant first, then run, so `forget` erases either with
a prefix listing. The digest is the handle's own hex digits. Beside a claim, never named like
one (33 hex digits): its index (`{claim key}.index`), and under its run's prefix the run's
journal (`journal`) and audit trail (`audit/{record}`), which erasing the prefix erases too.
"""

from __future__ import annotations

from s3claim.handles import HANDLE_PREFIX, HandleKey
from s3claim.s3._seal import Seal
from s3claim.scope import Scope
from s3claim.telemetry import names

__all__ = [
    "AUDIT_FOLDER",
    "INDEX_SUFFIX",
    "JOURNAL_NAME",
    "Layout",
    "is_audit_key",
    "is_claim_key",
    "is_journal_key",
]

JOURNAL_NAME = "journal"
INDEX_SUFFIX = ".index"
AUDIT_FOLDER = names.AUDIT_FOLDER


def is_journal_key(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == JOURNAL_NAME


def is_claim_key(key: str) -> bool:
    """A claim's own object: not a journal, an audit record or an index beside a claim."""
    return not (is_journal_key(key) or is_audit_key(key) or key.endswith(INDEX_SUFFIX))


def is_audit_key(key: str) -> bool:
    parts = key.rsplit("/", 2)
    return len(parts) == 3 and parts[1] == AUDIT_FOLDER


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

    def index_key(self, scope: Scope, handle: str) -> str:
        """Where a claim's index lives: beside the claim."""
        return self.index_of(self.object_key(scope, handle))

    @staticmethod
    def index_of(claim_key: str) -> str:
        """The key of the index beside the claim at `claim_key`."""
        return claim_key + INDEX_SUFFIX

    def journal_key(self, scope: Scope) -> str:
        return self.run_prefix(scope) + JOURNAL_NAME

    def seal(self, object_key: str) -> Seal:
        """The seal of the object at `object_key` (`s3claim.s3._seal`)."""
        return Seal(self._key, object_key)
