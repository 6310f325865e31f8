"""What still hangs on each key of a ring: `s3claim doctor`'s keyring checks.

A key may leave `S3CLAIM_HANDLE_KEY` once no live claim or journal needs it. Which key made an
object is told by its seal (`s3claim.s3._seal`: a MAC under a subkey of the key that wrote
it, bound to the object's key), never by its name: the tenant and run tags are keyed hashes
of names the bucket does not hold. So counting lists the prefix (one ListObjectsV2 per 1,000
keys) and heads each claim and journal (one HeadObject each); no body is read. Objects past
their expiry are not counted: nothing reads them, lifecycle collects them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3claim.errors import ClaimStoreError
from s3claim.s3._bucket import Bucket
from s3claim.s3._doctor import Check, Status
from s3claim.s3._layout import kind_of
from s3claim.s3._seal import Seal

__all__ = ["KeyCount", "RingCount", "count_by_key", "keyring_checks"]

_EXPIRES = "s3claim-expires-at"  # the same field in a claim's metadata and a journal's


@dataclass(frozen=True, slots=True)
class KeyCount:
    """The live claims (hand-off copies included) and journals one key's seal holds."""

    claims: int = 0
    journals: int = 0


@dataclass(frozen=True, slots=True)
class RingCount:
    keys: tuple[KeyCount, ...]
    """One count per key of the ring, newest first."""
    unknown: int
    """Live claims and journals whose seal no key of the ring holds (made under a key that
    left the ring, or rewritten): unreadable."""


def count_by_key(bucket: Bucket, *, now: float) -> RingCount:
    """Each key of the bucket's ring, what still hangs on it (see the module docstring)."""
    claims, journals = [0] * len(bucket.layouts), [0] * len(bucket.layouts)
    unknown = 0
    for key in bucket.keys(bucket.layout.prefix):
        kind = kind_of(key)
        if kind not in ("claim", "journal"):
            continue
        found = bucket.head(key)
        if found is None:
            continue  # forgotten or collected since the listing
        meta = found.get("Metadata", {})
        expires = meta.get(_EXPIRES, "")
        if expires.isdigit() and int(expires) <= now:
            continue
        maker = next((at for at, o in enumerate(bucket.layouts) if _holds(o.seal(key), meta)), None)
        if maker is None:
            unknown += 1
        else:
            (claims if kind == "claim" else journals)[maker] += 1
    keys = tuple(KeyCount(c, j) for c, j in zip(claims, journals, strict=True))
    return RingCount(keys, unknown)


def _holds(seal: Seal, meta: Mapping[str, str]) -> bool:
    try:
        seal.check_metadata(meta, operation="HeadObject")
    except ClaimStoreError:
        return False
    return True


def keyring_checks(bucket: Bucket, *, now: float) -> list[Check]:
    """One check per key of a ring of two or more: what hangs on it, and whether it may go."""
    counts = count_by_key(bucket, now=now)
    days = bucket.classes[-1]
    checks = []
    for at, count in enumerate(counts.keys):
        held = f"{count.claims} claim(s), {count.journals} journal(s)"
        if at == 0:
            name, detail = "keyring: key 1 (newest)", f"{held}: what is made now is made under it"
            checks.append(Check(name, Status.passed, detail))
        elif count.claims or count.journals:
            checks.append(
                Check(
                    f"keyring: key {at + 1}",
                    Status.warning,
                    f"{held} still hang on it",
                    f"keep it in S3CLAIM_HANDLE_KEY until this says none: a claim expires "
                    f"within {days} days, a journal moves to the newest key at its next save",
                )
            )
        else:
            detail = "no live claim or journal hangs on it: it may leave S3CLAIM_HANDLE_KEY"
            checks.append(Check(f"keyring: key {at + 1}", Status.passed, detail))
    if counts.unknown:
        checks.append(
            Check(
                "keyring: under no key of the ring",
                Status.warning,
                f"{counts.unknown} live claim(s) or journal(s) sealed under no key of the ring "
                "(made under a key that left it, or rewritten): nothing can read them",
                f"lifecycle collects them within {days} days; to erase them now, forget their "
                "tenant under the key that made them",
            )
        )
    return checks
