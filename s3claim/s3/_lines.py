"""S3 claims by line and from the end: the line index beside each claim, and the reads.

The line index (`s3claim._lines.line_index`: the start of every line after the first, 4
bytes a line; built from the stored body by `counted_body_index`, with the claim's line
count) is written with its claim, one PutObject more, under the claim's key plus
`.lines`, and only for a claim of two lines or more (line 1 starts at 0). It is stored in
sealed blocks (`s3claim.s3._seal`), so the start of any line is one ranged GET of one
block (4,112 bytes) whose tag proves it; its metadata (sealed, with the claim's length in
characters and in lines) carries the same expiry and run tag as the claim, and a refresh of
the claim refreshes it. Same run prefix, SSE and expiry tag: lifecycle collects it and
`forget` erases it with its claim. Writing it never fails a check-in.

Costs, each a single request unless retried:

- `read_line(N)`: line 1 is one ranged GET (it starts at 0). Any other line is two: the
  index block holding line N's start, then the window (through `fetch`, so every check of a
  window applies). A line past the last costs the index GET and, when that range lies past
  the index (416, no metadata), one HEAD for the claim's length.
- `read_end`: one GET of a suffix range (`bytes=-n`, a few blocks more than the window), no
  length needed beforehand; an empty claim costs a HEAD more (S3 answers 416).
- A claim without an index (checked in before line indexes, or its index write failed):
  one HEAD says whether it has one line (then nothing more is needed); otherwise the claim
  is streamed up to `s3claim._lines.SCAN_CHARS` characters to find the line.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import s3claim.s3._format as _format
from s3claim._lines import (
    ENTRY_BYTES,
    MAX_INDEXED_CHARS,
    LineWindow,
    at_end,
    at_line,
    count_lines,
    find_line,
    past_last_line,
)
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import is_handle
from s3claim.s3._errors import MISSING
from s3claim.s3._layout import LINES_SUFFIX
from s3claim.s3._read import WindowRead, empty_window_of, plan_read, plan_tail, tail_window_of
from s3claim.s3._retry import Refused
from s3claim.s3._seal import BLOCK_BYTES, UNIT_BYTES, sealed_size
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window, check_line, check_window

if TYPE_CHECKING:
    from s3claim.s3._store import S3ClaimCheckStore

__all__ = ["LineIndexes", "LineReads", "counted_body_index"]

_CONTENT_TYPE = "application/octet-stream"
_ENTRY = struct.Struct("<I")
_SCANNED_BLOCKS = 128
"""Blocks compared with a break at a time: 512 KiB of the body, into one buffer of booleans
reused from one to the next, so the scan never holds a copy the size of the body."""
_log = logging.getLogger("s3claim")


def counted_body_index(
    body: bytes | bytearray, content: str, width: int
) -> tuple[int, bytes | None]:
    """`count_lines(content)` and `line_index(content)` (`s3claim._lines`), from `body`:
    `content` laid out at `width` in sealed blocks (`_seal.laid_out`), tagged or not.

    numpy compares every character of the blocks with a break and lists where they are, with
    the GIL let go: on a 16 Mi-character log of 122,638 lines 3.7 ms, where `str.find` from
    break to break takes 14.7 holding the GIL. So a worker indexes the body while the store
    takes its CRC32, both at once (4.1 ms for the two, against 3.9 for the CRC alone).
    """
    chars = len(content)
    if chars >= MAX_INDEXED_CHARS:  # the count, and no index (its entries are 32-bit)
        return count_lines(content), None
    per_block, kind = BLOCK_BYTES // width, np.dtype(f"<u{width}")
    # Not the last character: a break there ends the last line and starts none.
    whole, last = divmod(max(chars - 1, 0), per_block)
    data = np.frombuffer(body, np.uint8)
    units = data[: whole * UNIT_BYTES].reshape(whole, UNIT_BYTES)[:, :BLOCK_BYTES].view(kind)
    tail = data[whole * UNIT_BYTES :][: last * width].view(kind)
    breaks = np.empty((min(whole, _SCANNED_BLOCKS), per_block), np.bool_)
    starts = []  # little-endian 32-bit, as the index is stored
    for first in range(0, whole, _SCANNED_BLOCKS):
        blocks = units[first : first + _SCANNED_BLOCKS]
        found = breaks[: len(blocks)]
        np.equal(blocks, 10, out=found)
        starts.append((np.flatnonzero(found) + (first * per_block + 1)).astype("<u4"))
    starts.append((np.flatnonzero(tail == 10) + (whole * per_block + 1)).astype("<u4"))
    index = b"".join(part.data for part in starts)
    return (len(index) // ENTRY_BYTES + 1 if chars else 0), index or None


class _NoIndex(LookupError):
    """The claim has no line index object."""


class LineIndexes:
    """The line indexes of one S3 store's claims: written, refreshed and read beside them."""

    def __init__(self, store: S3ClaimCheckStore) -> None:
        self._store = store

    def _meta(
        self,
        scope: Scope,
        handle: str,
        *,
        expires_at: int,
        chars: int,
        lines: int,
        blocks_key: str | None = None,
    ) -> dict[str, str]:
        layout = self._store.layout
        fields = _format.metadata(
            expires_at=expires_at,
            chars=chars,
            run_tag=layout.run_tag(scope),
            width=1,
            lines=lines,
            blocks_key=blocks_key,
        )
        return layout.seal(layout.lines_key(scope, handle)).metadata(fields)

    def hand_off(
        self,
        scope: Scope,
        handle: str,
        to: Scope,
        child: str,
        *,
        claim: _format.ClaimMeta,
        expires_at: int,
        days: int,
    ) -> None:
        """Copy a handed-off claim's line index beside the copy (server-side), sealed for `to`
        and naming the key its block tags are bound to; never raises (without it, reads by
        line fall back to a scan)."""
        if (claim.lines or 0) < 2:
            return
        store, layout = self._store, self._store.layout
        source = layout.lines_key(scope, handle)
        meta = self._meta(
            to,
            child,
            expires_at=expires_at,
            chars=claim.chars,
            lines=claim.lines or 0,
            # the original's index, whose key is its claim's and the suffix, however deep
            blocks_key=(claim.blocks_key + LINES_SUFFIX) if claim.blocks_key else source,
        )
        try:
            store._copy(source, layout.lines_key(to, child), _CONTENT_TYPE, meta, days)
        except ClaimStoreError as exc:
            _log.warning("line index not handed off for %s (%s)", child, exc.reason)

    def write(
        self,
        scope: Scope,
        handle: str,
        index: bytes | None,
        *,
        chars: int,
        lines: int,
        expires_at: int,
        days: int,
    ) -> None:
        """Put the line index of a claim just created (None: it needs none); never raises."""
        if index is None:
            return
        store = self._store
        try:
            key = store.layout.lines_key(scope, handle)
            meta = self._meta(scope, handle, expires_at=expires_at, chars=chars, lines=lines)
            store._write(key, store.layout.seal(key).blocks(index), _CONTENT_TYPE, meta, days)
        except Exception as exc:  # the claim is stored: it reads by offset without it
            _log.warning("line index not stored for %s (%s)", handle, type(exc).__name__)

    def refresh(
        self, scope: Scope, handle: str, *, chars: int, lines: int, expires_at: int, days: int
    ) -> None:
        """Give the line index of a refreshed claim the claim's new expiry (if it has one)."""
        if lines < 2:
            return
        store = self._store
        key = store.layout.lines_key(scope, handle)
        meta = self._meta(scope, handle, expires_at=expires_at, chars=chars, lines=lines)
        try:  # False: its write failed, and reads by line fall back to a scan
            store._copy(key, key, _CONTENT_TYPE, meta, days)
        except ClaimStoreError as exc:
            _log.warning("line index not refreshed for %s (%s)", handle, exc.reason)

    def start(self, scope: Scope, handle: str, line: int) -> int | Window:
        """Where `line` (2 or more) starts, from one ranged GET of its index block; past the
        last line, the empty window at the end (its length from the index or one HEAD)."""
        store = self._store
        key = store.layout.lines_key(scope, handle)
        at = ENTRY_BYTES * (line - 2)
        block = at // BLOCK_BYTES

        def get() -> tuple[dict[str, str], str | None, bytes]:
            response = store.client.get_object(
                Bucket=store.bucket,
                Key=key,
                Range=f"bytes={block * UNIT_BYTES}-{(block + 1) * UNIT_BYTES - 1}",
            )
            body = response["Body"]
            try:
                return dict(response["Metadata"]), response.get("ContentRange"), body.read()
            finally:
                body.close()

        try:
            raw_meta, content_range, data = store._request(
                "GetObject", get, expect=MISSING | {"InvalidRange"}
            )
        except Refused as refused:
            if refused.code == "InvalidRange":  # past the index: past the last line
                return self._store.fetch(scope, handle, 10**12, 1)
            raise _NoIndex from None
        meta = self._checked(scope, key, raw_meta)
        lines = meta.lines or 0
        answered = _format.content_range(content_range)
        if answered is not None and answered[2] != sealed_size(ENTRY_BYTES * (lines - 1)):
            raise ClaimStoreError(
                "GetObject: line index length disagrees with its metadata", reason="damaged"
            )
        if line > lines:
            return Window.of("", offset=meta.chars, total_chars=meta.chars, total_lines=lines)
        seal = store.layout.seal(meta.blocks_key or key)  # a hand-off's: the original's blocks
        content = seal.open_blocks(data, first=block, operation="GetObject")
        within = at - block * BLOCK_BYTES
        if within + ENTRY_BYTES > len(content):
            raise ClaimStoreError("GetObject: line index ends early", reason="damaged")
        (start,) = _ENTRY.unpack_from(content, within)
        if start >= meta.chars:
            raise ClaimStoreError("GetObject: line index points past the claim", reason="damaged")
        return int(start)

    def _checked(self, scope: Scope, key: str, raw_meta: Mapping[str, str]) -> _format.ClaimMeta:
        store = self._store
        store.layout.seal(key).check_metadata(raw_meta, operation="GetObject")
        meta = _format.parse_metadata(raw_meta, operation="GetObject")
        if not meta.readable(run_tag=store.layout.run_tag(scope), now=store.clock.now()):
            raise ClaimUnavailableError
        if meta.lines is None:
            raise ClaimStoreError("GetObject: line index without a line count", reason="damaged")
        return meta


class LineReads:
    """`read_line` and `read_end` for the S3 store (a base class, as `PathReads` is)."""

    _lines: LineIndexes

    def read_line(
        self, scope: Scope, handle: str, line: int, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """Whole lines from the start of `line`: one or two ranged GETs (see the module)."""
        check_line(line, limit)
        if not is_handle(handle):
            raise ClaimUnavailableError
        store: Any = self
        if line == 1:
            return _from(store.fetch(scope, handle, 0, limit), 1)
        if line - 1 > MAX_INDEXED_CHARS:  # more lines than any indexed claim has characters
            return _past(store.fetch(scope, handle, 10**12, 1))
        try:
            found = self._lines.start(scope, handle, line)
        except _NoIndex:
            found = _scanned(store, scope, handle, line)
        if isinstance(found, Window):
            return _past(found)
        return _from(store.fetch(scope, handle, found, limit), line)

    def read_end(
        self, scope: Scope, handle: str, *, limit: int = DEFAULT_FETCH_CHARS
    ) -> LineWindow:
        """The last window, from one GET of a suffix range (see the module docstring)."""
        check_window(0, limit)
        store: Any = self
        read = plan_tail(store.layout, scope, handle, limit + 1)

        def get(byte_range: str = read.byte_range) -> tuple[Mapping[str, str], str | None, bytes]:
            response = store.client.get_object(Bucket=store.bucket, Key=read.key, Range=byte_range)
            body, content_range = response["Body"], response.get("ContentRange")
            try:  # an empty object: s3rver promises a byte it never sends (`has_body`)
                data = body.read() if WindowRead.has_body(content_range) else b""
            finally:
                body.close()
            return response["Metadata"], content_range, data

        try:
            answer = store._request("GetObject", get, expect=MISSING | {"InvalidRange"})
        except Refused as refused:
            if refused.code != "InvalidRange":
                raise ClaimUnavailableError from None
            # An empty object: S3 answers a suffix range on it with 416, without metadata.
            try:
                head = store._request(
                    "HeadObject",
                    lambda: store.client.head_object(Bucket=store.bucket, Key=read.key),
                    expect=MISSING,
                )
            except Refused:
                raise ClaimUnavailableError from None
            empty = plan_read(store.layout, scope, handle, 0, 1)
            window = empty_window_of(empty, head["Metadata"], now=store.clock.now())
        else:
            again = read.missed_end(answer[1])
            if again is not None:  # a server without suffix ranges: ask for the bytes by name
                try:
                    answer = store._request("GetObject", lambda: get(again), expect=MISSING)
                except Refused:
                    raise ClaimUnavailableError from None
            window = tail_window_of(read, *answer, now=store.clock.now())
        return at_end(window, limit)


def _from(window: Window, line: int) -> LineWindow:
    return _past(window) if not window.text else at_line(window, line)


def _past(window: Window) -> LineWindow:
    return past_last_line(window.total_chars, window.total_lines)


def _scanned(store: Any, scope: Scope, handle: str, line: int) -> int | Window:
    """A claim without a line index: one HEAD, then (for a claim of many lines) a scan."""
    head: Window = store.fetch(scope, handle, 10**12, 1)
    if head.total_lines is not None and line > head.total_lines:
        return head
    pieces = store.scan(scope, handle)
    try:
        start = find_line(pieces, line)
    finally:  # a stopped scan must not leave an HTTP stream open
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    return head if start is None else start
