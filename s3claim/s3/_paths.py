"""JSON claims on S3: the structure index beside each claim, and reads by JSON Pointer.

The index (`s3claim._json_index`) is written with its claim, one PutObject more, under the
claim's key plus `.index`: same run prefix, same SSE, same expiry tag and expiry metadata, so
lifecycle collects it with the claim and `forget` erases it with the claim. A refresh of the
claim refreshes it too. Writing it never fails a check-in: without it the claim still reads
by offset, and a read by path says it cannot.

A read by path (`s3claim._json_path.read_path`) is ranged GETs only: the index's head, one
entry or listing of it, and the characters of the answer (through `fetch`, so the claim's
own checks apply). The index's metadata is checked on every read of it, as a claim's is.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import s3claim.s3._format as _format
from s3claim._json_index import build_index
from s3claim._json_path import NoIndexError, PathRead, read_path
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import is_handle
from s3claim.s3._errors import MISSING
from s3claim.s3._retry import Refused
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, check_window

if TYPE_CHECKING:
    from s3claim.s3._store import S3ClaimCheckStore

__all__ = ["JsonIndexes", "PathReads", "looks_like_json"]

_CONTENT_TYPE = "application/octet-stream"
_log = logging.getLogger("s3claim")


def looks_like_json(content: str) -> bool:
    """Whether the text may have an index: it starts (after whitespace) an object or array."""
    stripped = content[:4096].lstrip(" \t\n\r")
    return stripped[:1] in ("{", "[")


class JsonIndexes:
    """The indexes of one S3 store's claims: written, refreshed and read beside them."""

    def __init__(self, store: S3ClaimCheckStore) -> None:
        self._store = store

    def _meta(self, scope: Scope, handle: str, expires_at: int) -> dict[str, str]:
        # chars=0: the index's size is not a window's concern; width 1: it is bytes. Sealed
        # like a claim's, so a rewritten expiry or run tag is refused.
        layout = self._store.layout
        run_tag = layout.run_tag(scope)
        fields = _format.metadata(expires_at=expires_at, chars=0, run_tag=run_tag, width=1)
        return layout.seal(layout.index_key(scope, handle)).metadata(fields)

    def write(self, scope: Scope, handle: str, content: str, *, expires_at: int, days: int) -> None:
        """Build and put the index of a claim just created; never raises."""
        if not looks_like_json(content):
            return
        try:
            index = build_index(content)
            if index is None:
                return
            key, meta = (
                self._store.layout.index_key(scope, handle),
                self._meta(scope, handle, expires_at),
            )
            self._store._write(key, index, _CONTENT_TYPE, meta, days)
        except Exception as exc:  # the claim is stored: it reads by offset without it
            _log.warning("JSON index not stored for %s (%s)", handle, type(exc).__name__)

    def refresh(
        self, scope: Scope, handle: str, content: str, *, expires_at: int, days: int
    ) -> None:
        """Give the index of a refreshed claim the claim's new expiry (if it has one)."""
        if not looks_like_json(content):
            return
        key, meta = (
            self._store.layout.index_key(scope, handle),
            self._meta(scope, handle, expires_at),
        )
        try:  # False: no index (text that only looks like JSON), nothing to refresh
            self._store._copy(key, key, _CONTENT_TYPE, meta, days)
        except ClaimStoreError as exc:
            _log.warning("JSON index not refreshed for %s (%s)", handle, exc.reason)

    def hand_off(
        self, scope: Scope, handle: str, to: Scope, child: str, *, expires_at: int, days: int
    ) -> None:
        """Copy a handed-off claim's index beside the copy (server-side), sealed for `to`."""
        store, layout = self._store, self._store.layout
        meta = self._meta(to, child, expires_at)
        source, key = layout.index_key(scope, handle), layout.index_key(to, child)
        try:
            store._copy(source, key, _CONTENT_TYPE, meta, days)  # False: no index to copy
        except ClaimStoreError as exc:  # the copy reads by offset without it
            _log.warning("JSON index not handed off for %s (%s)", child, exc.reason)

    def read(self, scope: Scope, handle: str, pointer: str, *, limit: int) -> PathRead:
        """The value at `pointer` (`PathReadableStore.read_path`)."""
        check_window(0, limit)
        if not is_handle(handle):
            raise ClaimUnavailableError
        try:
            return read_path(_Source(self._store, scope, handle), pointer, limit=limit)
        except NoIndexError:
            # No index: one HEAD tells a claim that stands (text) from one that does not.
            self._store.fetch(scope, handle, 10**12, 1)
            raise


class PathReads:
    """`read_path` for the S3 store (a base class, so the store's module stays small)."""

    _indexes: JsonIndexes

    def read_path(
        self, scope: Scope, handle: str, pointer: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> PathRead:
        """The value at a JSON Pointer: at most 3 ranged GETs (`s3claim._json_path`)."""
        return self._indexes.read(scope, handle, pointer, limit=limit)


class _Source:
    """`s3claim._json_path.Source` over ranged GETs of one claim and its index."""

    def __init__(self, store: S3ClaimCheckStore, scope: Scope, handle: str) -> None:
        self._store = store
        self._scope = scope
        self._handle = handle
        self._key = store.layout.index_key(scope, handle)
        self._run_tag = store.layout.run_tag(scope)

    def chars(self, start: int, end: int) -> str:
        return self._store.fetch(self._scope, self._handle, start, end - start).text

    def index_bytes(self, start: int, end: int) -> bytes:
        store = self._store

        def get() -> tuple[dict[str, str], bytes]:
            response = store.client.get_object(
                Bucket=store.bucket, Key=self._key, Range=f"bytes={start}-{end - 1}"
            )
            body = response["Body"]
            try:
                return dict(response["Metadata"]), body.read()
            finally:
                body.close()

        try:
            meta, data = store._request("GetObject", get, expect=MISSING | {"InvalidRange"})
        except Refused as refused:
            if refused.code == "InvalidRange":
                return b""
            raise NoIndexError from None
        store.layout.seal(self._key).check_metadata(meta, operation="GetObject")
        parsed = _format.parse_metadata(meta, operation="GetObject")
        if not parsed.readable(run_tag=self._run_tag, now=store.clock.now()):
            raise ClaimUnavailableError
        return data[: end - start]
