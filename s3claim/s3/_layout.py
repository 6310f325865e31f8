"""Where a claim lives in the bucket: `{prefix}{tenant_tag}/{run_tag}/{digest}`.

Tenant and run appear only as keyed hashes (`HandleKey`), so a listing reveals no name and no
name can move a key out of its place; tenant first, then run, so `forget` erases either with
a prefix listing. The digest is the handle's own digits (its width and 32 hex). Beside a
claim, never named like one: its index (`{claim key}.index`), the mark of a hand-off copy
(`{claim key}.handoff`, empty: an erasure counts copies by key, reading none), and under its
run's prefix the run's journal (`journal`) and its mark (`mark`: a token that changes after
every call that may write, so repeat reads end on every instance: `s3claim.reuse`). Only a
check-in (a put, a hand-off, a journal's save) and a run's mark write under a tenant's prefix.

The audit trail is apart, at `{prefix}audit/{tenant_tag}/{run_tag}/{record}`: a refused read
after an erasure is kept there without recreating the erased prefix, and `forget` sweeps
the tenant's (or run's) part of it too (`erased_prefixes`). "audit" is no tenant tag (32
hex), so the two never meet.
"""

from __future__ import annotations

import re
from typing import Literal

from s3claim.handles import HANDLE_PREFIX, HandleKey
from s3claim.s3._seal import Seal
from s3claim.scope import Scope
from s3claim.telemetry import names

__all__ = [
    "AUDIT_FOLDER",
    "HAND_OFF_SUFFIX",
    "INDEX_SUFFIX",
    "JOURNAL_NAME",
    "MARK_NAME",
    "Kind",
    "Layout",
    "is_audit_key",
    "is_claim_key",
    "is_hand_off_key",
    "is_index_key",
    "is_journal_key",
    "kind_of",
]

JOURNAL_NAME = "journal"
MARK_NAME = "mark"
INDEX_SUFFIX = ".index"
HAND_OFF_SUFFIX = ".handoff"
AUDIT_FOLDER = names.AUDIT_FOLDER

Kind = Literal["claim", "index", "hand_off", "journal", "mark", "audit", "other"]
"""What an object under a swept prefix is, told by its key alone (`kind_of`)."""

_TAG = "[0-9a-f]{32}"
_CLAIM = re.compile(rf"{_TAG}/{_TAG}/[124][0-9a-f]{{32}}")  # tenant/run/digest
_AUDIT = re.compile(rf"{AUDIT_FOLDER}/{_TAG}/{_TAG}/\d{{13}}-[0-9a-f]{{8}}")
_OLD_AUDIT = re.compile(rf"{_TAG}/{_TAG}/{AUDIT_FOLDER}/[^/]+")  # beside the claims, before


def _tail(key: str, parts: int) -> str:
    return "/".join(key.rsplit("/", parts)[-parts:])


def is_journal_key(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == JOURNAL_NAME


def is_claim_key(key: str) -> bool:
    """A claim's own object (a hand-off copy's included): `{tenant}/{run}/{digest}`."""
    return _CLAIM.fullmatch(_tail(key, 3)) is not None


def is_index_key(key: str) -> bool:
    return key.endswith(INDEX_SUFFIX) and is_claim_key(key.removesuffix(INDEX_SUFFIX))


def is_hand_off_key(key: str) -> bool:
    """The mark beside a hand-off copy (the copy itself is a claim's key)."""
    return key.endswith(HAND_OFF_SUFFIX) and is_claim_key(key.removesuffix(HAND_OFF_SUFFIX))


def is_audit_key(key: str) -> bool:
    """An audit record: in the audit area, or (kept by an earlier version) beside the claims."""
    return (
        _AUDIT.fullmatch(_tail(key, 4)) is not None
        or _OLD_AUDIT.fullmatch(_tail(key, 4)) is not None
    )


def kind_of(key: str) -> Kind:
    """What the object at `key` is, by its key alone."""
    if is_claim_key(key):
        return "claim"
    if is_index_key(key):
        return "index"
    if is_hand_off_key(key):
        return "hand_off"
    if is_journal_key(key):
        return "journal"
    if key.rsplit("/", 1)[-1] == MARK_NAME:
        return "mark"
    return "audit" if is_audit_key(key) else "other"


class Layout:
    __slots__ = ("_key", "prefix")

    def __init__(self, prefix: str, key: HandleKey) -> None:
        self.prefix = prefix
        self._key = key

    @property
    def key(self) -> HandleKey:
        """The key whose tags and seals this layout places (one key of a ring, or its newest)."""
        return self._key

    def tenant_prefix(self, tenant: str) -> str:
        return f"{self.prefix}{self._key.tenant_tag(tenant)}/"

    def run_prefix(self, scope: Scope) -> str:
        return f"{self.tenant_prefix(scope.tenant)}{self.run_tag(scope)}/"

    def run_tag(self, scope: Scope) -> str:
        return self._key.run_tag(scope)

    def audit_prefix(self, tenant: str, run: str | None = None) -> str:
        """Where the audit records of a tenant (or of one run) are kept."""
        under = f"{self.prefix}{AUDIT_FOLDER}/{self._key.tenant_tag(tenant)}/"
        return under if run is None else f"{under}{self.run_tag(Scope(tenant, run))}/"

    def erased_prefixes(self, tenant: str, run: str | None = None) -> tuple[str, str]:
        """What erasing a tenant (or one run) sweeps: its claims' prefix and its audit's."""
        claims = self.tenant_prefix(tenant) if run is None else self.run_prefix(Scope(tenant, run))
        return claims, self.audit_prefix(tenant, run)

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

    def mark_key(self, scope: Scope) -> str:
        return self.run_prefix(scope) + MARK_NAME

    def seal(self, object_key: str) -> Seal:
        """The seal of the object at `object_key` (`s3claim.s3._seal`)."""
        return Seal(self._key, object_key)
