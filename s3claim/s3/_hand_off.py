"""Hand-off on S3: a claim copied, server-side, under another run's prefix of its tenant.

Measured against a sealed pointer object for a 64 MiB claim (docs/references.md): the copy
costs one HeadObject and one CopyObject (one more for each index beside it: a JSON claim's
structure, a claim of two lines or more its line index) and moves no
byte of the body through the process; afterwards the child's fetch is any claim's one
ranged GET, and the copy lives for the child's own TTL whatever becomes of the original.
A pointer would cost a GET more on every read and die with its parent.

The body keeps the block tags it was sealed with, bound to the original's key; the copy's
metadata (sealed under the copy's own key) names that key in `s3claim-blocks`, so the tags
still hold and no one without the handle key can point a copy at other blocks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import s3claim.s3._format as _format
from s3claim.errors import ClaimUnavailableError
from s3claim.handles import handle_width, is_handle
from s3claim.s3._errors import MISSING
from s3claim.s3._lifecycle import day_class
from s3claim.s3._read import checked_meta
from s3claim.s3._retry import Refused
from s3claim.scope import Scope
from s3claim.store import check_ttl

if TYPE_CHECKING:
    from s3claim.s3._store import S3ClaimCheckStore

__all__ = ["HandOffs", "HandsOff"]


class HandOffs:
    """`hand_off` for one S3 store."""

    def __init__(self, store: S3ClaimCheckStore) -> None:
        self._store = store

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim, readable in the run `to` for `ttl_seconds` (`HandOffStore`).

        One HeadObject checks the claim as a fetch would; one server-side CopyObject puts
        its body under `to`'s run prefix with new sealed metadata (`to`'s run, its own expiry,
        and the key the block tags are bound to), and one more copies each index beside it.
        No byte of the body passes through this process; the copy lives on whatever becomes
        of the original, until its own expiry or a `forget` of its tenant or run.
        """
        check_ttl(ttl_seconds)
        store = self._store
        if to.tenant != scope.tenant:
            raise ValueError("a claim is handed off within its tenant only")
        if not is_handle(handle):
            raise ClaimUnavailableError
        key, width = store._layout.object_key(scope, handle), handle_width(handle)
        try:
            head = store._request(
                "HeadObject",
                lambda: store._client.head_object(Bucket=store._bucket, Key=key),
                expect=MISSING,
            )
        except Refused:
            raise ClaimUnavailableError from None
        meta = checked_meta(
            head["Metadata"],
            seal=store._layout.seal(key),
            run_tag=store._layout.run_tag(scope),
            width=width,
            now=store._clock.now(),
            operation="HeadObject",
        )
        child = store._key.handed_off(handle, to)
        child_key = store._layout.object_key(to, child)
        expires_at = math.ceil(store._clock.now() + ttl_seconds)
        days = day_class(ttl_seconds, store._classes)
        fields = _format.metadata(
            expires_at=expires_at,
            chars=meta.chars,
            run_tag=store._layout.run_tag(to),
            width=width,
            lines=meta.lines,
            blocks_key=meta.blocks_key or key,
            json=meta.json,  # a hand-off of a hand-off: still the original
        )
        sealed = store._layout.seal(child_key).metadata(fields)
        if not store._copy(key, child_key, _format.CONTENT_TYPES[width], sealed, days):
            raise ClaimUnavailableError  # gone between the HEAD and the copy
        if meta.json:  # a structure index may sit beside it
            store._indexes.hand_off(scope, handle, to, child, expires_at=expires_at, days=days)
        store._lines.hand_off(
            scope, handle, to, child, claim=meta, expires_at=expires_at, days=days
        )
        store._remember(child_key, expires_at)
        return child


class HandsOff:
    """`hand_off` for the S3 store (a base class, so the store's module stays small)."""

    _hand_offs: HandOffs

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim, readable in the run `to` for `ttl_seconds` (`HandOffStore`)."""
        return self._hand_offs.hand_off(scope, handle, to=to, ttl_seconds=ttl_seconds)
