"""One fetch, as both faces of the S3 store send it: the plan, and every check on the answer.

Pure: no client, no I/O. The sync store (`_store`) and the async face (`_async`) send the
same ranged GetObject, each its own way, and hand the answer back here, so the range, the
expiry and scope checks and the format are decided once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import s3claim.s3._format as _format
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import handle_width, is_handle
from s3claim.s3._format import ClaimMeta
from s3claim.s3._layout import Layout
from s3claim.s3._seal import BLOCK_BYTES, UNIT_BYTES, Seal, block_span, sealed_size
from s3claim.scope import Scope
from s3claim.store import Window, check_window

__all__ = [
    "TailRead",
    "WindowRead",
    "checked_meta",
    "empty_window_of",
    "plan_read",
    "plan_tail",
    "tail_window_of",
    "window_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class _ClaimRead:
    """A read of one claim object: its key, the run that may read it, and its seals."""

    key: str
    run_tag: str
    width: int
    seal: Seal = field(repr=False, compare=False)
    layout: Layout = field(repr=False, compare=False)

    def checked(self, raw_meta: Mapping[str, str], *, now: float, operation: str) -> ClaimMeta:
        """The object's metadata, once every check on it has passed (`checked_meta`)."""
        return checked_meta(
            raw_meta,
            seal=self.seal,
            run_tag=self.run_tag,
            width=self.width,
            now=now,
            operation=operation,
        )

    def blocks_seal(self, meta: ClaimMeta) -> Seal:
        """The seal of the body's blocks: the object's own, or (a claim handed off by copy)
        the one of the key its sealed metadata names."""
        return self.seal if meta.blocks_key is None else self.layout.seal(meta.blocks_key)


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowRead(_ClaimRead):
    """One fetch, planned: the object, the run that may read it, and the bytes to ask for."""

    offset: int
    limit: int
    """Characters to read; 0 when `offset` lies past what any object can hold."""

    @property
    def past_any_object(self) -> bool:
        return self.limit == 0

    @property
    def span(self) -> tuple[int, int, int]:
        """(first block, first and last stored byte) of the blocks that hold the window; never
        past the largest object, which a last block rounded up would reach from a huge limit."""
        block, first, last = block_span(
            self.width * self.offset, self.width * (self.offset + self.limit)
        )
        return block, first, min(last, _format.MAX_OBJECT_BYTES - 1)

    @property
    def byte_range(self) -> str:
        """The window's blocks with their tags: width*limit bytes and a tag per 4,096 when the
        window starts on a block (as a model's reads in order do), up to a block more if not."""
        _, first, last = self.span
        return f"bytes={first}-{last}"

    @staticmethod
    def has_body(content_range: str | None) -> bool:
        """False for an empty object: S3 answers a range on one with 416, but s3rver with a
        206 promising a byte it never sends. The metadata is in that answer either way."""
        answered = _format.content_range(content_range)
        return answered is None or answered[2] > 0


def plan_read(layout: Layout, scope: Scope, handle: str, offset: int, limit: int) -> WindowRead:
    """What one fetch asks S3 for; refuses bad arguments and malformed handles first."""
    check_window(offset, limit)
    if not is_handle(handle):
        raise ClaimUnavailableError
    width = handle_width(handle)
    key = layout.object_key(scope, handle)
    return WindowRead(
        key=key,
        run_tag=layout.run_tag(scope),
        width=width,
        offset=offset,
        # No object holds a character at or past max_chars, and a Range beyond it (up to
        # 10**30 from a model's offset) is a header S3 need not parse as meant.
        limit=max(0, min(limit, _format.max_chars(width) - offset)),
        seal=layout.seal(key),
        layout=layout,
    )


def checked_meta(
    raw_meta: Mapping[str, str], *, seal: Seal, run_tag: str, width: int, now: float, operation: str
) -> ClaimMeta:
    """The claim's metadata once its seal holds, its run and expiry allow the read, and its
    width is the handle's; nothing of an object is used before its seal is checked."""
    meta = _format.parse_metadata(raw_meta, operation=operation)
    seal.check_metadata(raw_meta, operation=operation)
    if not meta.readable(run_tag=run_tag, now=now):
        raise ClaimUnavailableError
    if meta.width != width:  # the key binds the width: only a damaged object disagrees
        raise ClaimStoreError(
            f"{operation}: object's encoding disagrees with its handle", reason="damaged"
        )
    return meta


def window_of(
    read: WindowRead,
    raw_meta: Mapping[str, str],
    content_range: str | None,
    data: bytes,
    *,
    now: float,
) -> Window:
    """The window a GetObject answer holds, once every check on it has passed."""
    answered = _format.content_range(content_range)
    block, first, last = read.span
    if answered is not None and answered[2] and answered[0] != first:
        raise ClaimStoreError("GetObject: the server answered another range", reason="damaged")
    meta = read.checked(raw_meta, now=now, operation="GetObject")
    stored = sealed_size(meta.chars * read.width)
    # s3rver answers `bytes=0-0` with the whole object: keep what was asked for.
    data = data[: last + 1 - first]
    if (answered is not None and answered[2] and answered[2] != stored) or len(data) != max(
        0, min(last + 1, stored) - first
    ):
        raise ClaimStoreError(
            "GetObject: stored length disagrees with the object's size", reason="damaged"
        )
    content = read.blocks_seal(meta).open_blocks(data, first=block, operation="GetObject")
    start = read.width * read.offset - block * BLOCK_BYTES
    text = _format.decode(
        content[start : start + read.width * read.limit], read.width, operation="GetObject"
    )
    if len(text) != max(0, min(read.limit, meta.chars - read.offset)):
        raise ClaimStoreError(
            "GetObject: window length disagrees with the object's size", reason="damaged"
        )
    return Window.of(text, offset=read.offset, total_chars=meta.chars, total_lines=meta.lines)


def empty_window_of(read: WindowRead, raw_meta: Mapping[str, str], *, now: float) -> Window:
    """The empty window at or past the end, from the object's metadata (a HEAD's)."""
    meta = read.checked(raw_meta, now=now, operation="HeadObject")
    if read.offset < meta.chars:
        raise ClaimStoreError("GetObject: range refused inside the object's size", reason="damaged")
    return Window.of("", offset=read.offset, total_chars=meta.chars, total_lines=meta.lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class TailRead(_ClaimRead):
    """The last `chars` characters of a claim whose length is not known: one suffix range.

    The range is wide enough that, once the partial block at its start is dropped, the whole
    blocks left hold those characters (or the claim starts inside it); S3 answers a suffix
    longer than the object with the whole object.
    """

    chars: int

    @property
    def suffix_bytes(self) -> int:
        return (-(-self.width * self.chars // BLOCK_BYTES) + 2) * UNIT_BYTES

    @property
    def byte_range(self) -> str:
        return f"bytes=-{self.suffix_bytes}"

    def missed_end(self, content_range: str | None) -> str | None:
        """The same bytes as an explicit range when the server answered the suffix range
        with bytes that stop short of the end (s3rver reads `bytes=-n` as `bytes=0-n`)."""
        answered = _format.content_range(content_range)
        if answered is None or not answered[2] or answered[1] + 1 >= answered[2]:
            return None
        total = answered[2]
        return f"bytes={max(0, total - self.suffix_bytes)}-{total - 1}"


def plan_tail(layout: Layout, scope: Scope, handle: str, chars: int) -> TailRead:
    """What a read from the end asks S3 for; refuses bad arguments and malformed handles."""
    check_window(0, chars)
    if not is_handle(handle):
        raise ClaimUnavailableError
    key = layout.object_key(scope, handle)
    width = handle_width(handle)
    return TailRead(
        key=key,
        run_tag=layout.run_tag(scope),
        width=width,
        chars=chars,
        seal=layout.seal(key),
        layout=layout,
    )


def tail_window_of(
    read: TailRead,
    raw_meta: Mapping[str, str],
    content_range: str | None,
    data: bytes,
    *,
    now: float,
) -> Window:
    """The last characters a suffix GetObject answer holds, once every check has passed."""
    meta = read.checked(raw_meta, now=now, operation="GetObject")
    stored = sealed_size(meta.chars * read.width)
    answered = _format.content_range(content_range)
    first = answered[0] if answered is not None and answered[2] else 0
    if (answered is not None and answered[2] != stored) or first + len(data) != stored:
        raise ClaimStoreError(
            "GetObject: stored length disagrees with the object's size", reason="damaged"
        )
    block = -(-first // UNIT_BYTES)  # the first whole block in the answer
    content = read.blocks_seal(
        meta
    ).open_blocks(  # a handed-off copy's: the original's
        data[block * UNIT_BYTES - first :], first=block, operation="GetObject"
    )
    start_char = block * BLOCK_BYTES // read.width
    offset = max(start_char, meta.chars - read.chars)
    text = _format.decode(
        content[(offset - start_char) * read.width :], read.width, operation="GetObject"
    )
    if offset + len(text) != meta.chars or (offset > 0 and len(text) != read.chars):
        raise ClaimStoreError(
            "GetObject: window length disagrees with the object's size", reason="damaged"
        )
    return Window.of(text, offset=offset, total_chars=meta.chars, total_lines=meta.lines)
