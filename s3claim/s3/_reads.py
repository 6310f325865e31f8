"""A claim on S3 as the reading engine's ranges.

A range of the text or the index is one ranged GetObject of the sealed blocks holding it; the
end of either, one suffix range (`bytes=-n`). The exceptions, each one request more: a range
at or past the end, or on an empty object, gets S3's 416, which carries no metadata (a
HeadObject says whether the object still stands); a server that answers a suffix range from
the start (s3rver) gets a second GET of the bytes by name; a claim with no index costs a
HeadObject of the claim to tell "not indexed" from "not there". A whole claim is streamed for
`scan` (`pieces`), in bounded memory. Every request goes through the bucket's client under
its retry policy; an expected refusal (missing, out of range) is `Refused`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from botocore.exceptions import BotoCoreError

import s3claim.s3._format as _format
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.s3._bucket import Bucket
from s3claim.s3._errors import MISSING, Refused
from s3claim.s3._format import ObjectMeta
from s3claim.s3._layout import Layout
from s3claim.s3._seal import BLOCK_BYTES, UNIT_BYTES, BlockStream, Seal, block_span, sealed_size
from s3claim.store import IndexPart, TextPart

if TYPE_CHECKING:
    from botocore.response import StreamingBody
    from mypy_boto3_s3.type_defs import GetObjectOutputTypeDef

__all__ = ["FirstFound", "Ranges", "Sealed", "head"]

_GET_EXPECTS = MISSING | {"InvalidRange"}
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Reply:
    """A GetObject's answer, its body read."""

    meta: Mapping[str, str]
    content_range: str | None
    data: bytes


def _has_body(content_range: str | None) -> bool:
    """False for an empty object: S3 answers a range on one with 416, but s3rver with a
    206 promising a byte it never sends. The metadata is in that answer either way."""
    answered = _format.content_range(content_range)
    return answered is None or answered[2] > 0


def _damaged(what: str) -> ClaimStoreError:
    return ClaimStoreError(f"GetObject: {what}", reason="damaged")


@dataclass(frozen=True, slots=True)
class Sealed:
    """One object of a claim as a reader in one scope checks it: its key and seal, the run
    that may read it, the claim's width (None for its index), the clock, and the check-in
    the reader expects (a link's; None: whichever stands)."""

    key: str
    run_tag: str
    width: int | None
    layout: Layout = field(repr=False)
    now: Callable[[], float] = field(repr=False)
    check_in_id: str | None = field(default=None, repr=False)

    def checked(self, raw: Mapping[str, str], *, operation: str) -> ObjectMeta:
        """The object's metadata once every check on it has passed; nothing of an object
        is used before its seal holds. Another check-in than the one expected is refused as
        unavailable, like a claim that is not there: it is not the one the reader names."""
        meta = _format.parse_metadata(raw, operation=operation)
        self.layout.seal(self.key).check_metadata(raw, operation=operation)
        if not meta.readable(run_tag=self.run_tag, now=self.now()):
            raise ClaimUnavailableError
        if self.check_in_id is not None and meta.check_in_id != self.check_in_id:
            raise ClaimUnavailableError
        if meta.width != self.width:  # the key binds the width: only a damaged object differs
            raise ClaimStoreError(
                f"{operation}: object's encoding disagrees with its handle", reason="damaged"
            )
        return meta

    def blocks_seal(self, meta: ObjectMeta) -> Seal:
        """The seal of the body's blocks: the object's own, or (a claim handed off by copy)
        the one of the key its sealed metadata names (a copy is made under its original's
        key of the ring: `S3ClaimCheckStore.hand_off`)."""
        return self.layout.seal(meta.blocks_key or self.key)


@contextmanager
def _present() -> Iterator[None]:
    """A missing claim refused as unavailable."""
    try:
        yield
    except Refused:
        raise ClaimUnavailableError from None


def _head(bucket: Bucket, obj: Sealed) -> ObjectMeta:
    found = bucket.request(
        "HeadObject", partial(bucket.client.head_object, Bucket=bucket.name, Key=obj.key),
        expect=MISSING,
    )  # fmt: skip
    return obj.checked(found["Metadata"], operation="HeadObject")


def head(bucket: Bucket, obj: Sealed) -> ObjectMeta:
    """The object's metadata from one HeadObject, checked as a read checks it (a missing
    object is unavailable)."""
    with _present():
        return _head(bucket, obj)


def _get(bucket: Bucket, key: str, range: str) -> _Reply:
    """One ranged GetObject, its body read inside the retry, so a cut stream is retried, and
    through StreamingBody itself: its `with` block yields the raw urllib3 stream, whose read()
    skips the length and checksum checks and raises urllib3's own errors, not botocore's."""

    def get() -> _Reply:
        response = bucket.client.get_object(Bucket=bucket.name, Key=key, Range=range)
        body, content_range = response["Body"], response.get("ContentRange")
        try:
            data = body.read() if _has_body(content_range) else b""
        finally:
            body.close()
        return _Reply(response["Metadata"], content_range, data)

    return bucket.request("GetObject", get, expect=_GET_EXPECTS)


def _read_range(bucket: Bucket, obj: Sealed, first: int, end: int) -> tuple[ObjectMeta, bytes]:
    """Content bytes [first, end) of the object (fewer at its end, none past it)."""
    end = min(end, _format.MAX_OBJECT_BYTES)
    if first >= end:  # past what any object holds: a Range S3 need not parse as meant
        return _head(bucket, obj), b""
    block, low, high = block_span(first, end)
    high = min(high, _format.MAX_OBJECT_BYTES - 1)  # a huge end rounds up past any object
    try:
        reply = _get(bucket, obj.key, f"bytes={low}-{high}")
    except Refused as refused:
        if refused.code != "InvalidRange":
            raise
        meta = _head(bucket, obj)  # at or past the end: the 416 carried no metadata
        if first < meta.size:
            raise _damaged("range refused inside the object's size") from None
        return meta, b""
    answered = _format.content_range(reply.content_range)
    if answered is not None and answered[2] and answered[0] != low:
        raise _damaged("the server answered another range")
    meta = obj.checked(reply.meta, operation="GetObject")
    stored = sealed_size(meta.size)
    data = reply.data[: high + 1 - low]  # s3rver answers `bytes=0-0` with the whole object
    if (answered is not None and answered[2] and answered[2] != stored) or len(data) != max(
        0, min(high + 1, stored) - low
    ):
        raise _damaged("stored length disagrees with the object's size")
    content = obj.blocks_seal(meta).open_blocks(data, first=block, operation="GetObject")
    at = first - block * BLOCK_BYTES
    part = content[at : at + end - first]
    if len(part) != max(0, min(end, meta.size) - first):
        raise _damaged("range length disagrees with the object's size")
    return meta, part


def _read_suffix(bucket: Bucket, obj: Sealed, size: int) -> tuple[ObjectMeta, int, bytes]:
    """The last `size` content bytes (all, when fewer), and the byte they start at: one
    suffix range wide enough that the whole blocks in it hold them."""
    suffix = (-(-size // BLOCK_BYTES) + 2) * UNIT_BYTES
    try:
        reply = _get(bucket, obj.key, f"bytes=-{suffix}")
    except Refused as refused:
        if refused.code != "InvalidRange":
            raise
        meta = _head(bucket, obj)  # an empty object: S3 answers any range on it with 416
        if meta.size:
            raise _damaged("range refused inside the object's size") from None
        return meta, 0, b""
    answered = _format.content_range(reply.content_range)
    if answered is not None and answered[2] and answered[1] + 1 < answered[2]:
        # The bytes stop short of the end: a server that reads `bytes=-n` as `bytes=0-n`.
        total = answered[2]
        reply = _get(bucket, obj.key, f"bytes={max(0, total - suffix)}-{total - 1}")
        answered = _format.content_range(reply.content_range)
    meta = obj.checked(reply.meta, operation="GetObject")
    stored = sealed_size(meta.size)
    first = answered[0] if answered is not None and answered[2] else 0
    if (answered is not None and answered[2] != stored) or first + len(reply.data) != stored:
        raise _damaged("stored length disagrees with the object's size")
    block = -(-first // UNIT_BYTES)  # the first whole block in the answer
    content = obj.blocks_seal(meta).open_blocks(
        reply.data[block * UNIT_BYTES - first :], first=block, operation="GetObject"
    )
    start = block * BLOCK_BYTES
    at = max(0, meta.size - size)
    if at < start:
        raise _damaged("the end of the object is shorter than its size")
    return meta, at, content[at - start :]


class Ranges:
    """One claim of an S3 store as the engine reads it (`s3claim.store.ClaimRanges`): each
    range a few requests, sent on the bucket's client."""

    __slots__ = ("_bucket", "_claim", "_index", "_width")

    def __init__(self, bucket: Bucket, claim: Sealed, index: Sealed) -> None:
        self._bucket, self._claim, self._index = bucket, claim, index
        self._width = claim.width or 1

    def text(self, start: int, end: int) -> TextPart:
        width = self._width
        with _present():
            meta, data = _read_range(self._bucket, self._claim, width * start, width * end)
        return TextPart(_format.decode(data, width, operation="GetObject"), start, meta.facts)

    def tail(self, chars: int) -> TextPart:
        width = self._width
        with _present():
            meta, at, data = _read_suffix(self._bucket, self._claim, width * chars)
        return TextPart(_format.decode(data, width, operation="GetObject"), at // width, meta.facts)

    def index(self, start: int, end: int) -> IndexPart:
        if start >= _format.MAX_OBJECT_BYTES:  # past any index: the claim's length answers
            meta = head(self._bucket, self._claim)
            return IndexPart(b"" if meta.index_size else None, meta.facts)
        try:
            meta, data = _read_range(self._bucket, self._index, start, end)
        except Refused:
            return self._unindexed()
        return IndexPart(data, meta.facts)

    def index_tail(self, size: int) -> IndexPart:
        try:
            meta, _, data = _read_suffix(self._bucket, self._index, size)
        except Refused:
            return self._unindexed()
        return IndexPart(data, meta.facts)

    def _unindexed(self) -> IndexPart:
        """No index object: a claim written without one, or no claim at all (one HEAD)."""
        meta = head(self._bucket, self._claim)
        if meta.index_size:
            raise ClaimStoreError("GetObject: the claim's index is missing", reason="damaged")
        return IndexPart(None, meta.facts)

    def stream(self) -> Iterator[str]:
        """The claim's text in pieces from one streaming GET (`pieces`). The GET and every
        check on its metadata happen here, so an unavailable claim raises at the call."""
        claim = self._claim
        response = self._open(first_byte=0)
        try:
            meta = claim.checked(response["Metadata"], operation="GetObject")
        except BaseException:
            response["Body"].close()
            raise
        return pieces(
            response["Body"],
            width=self._width,
            seal=claim.blocks_seal(meta),
            content_bytes=meta.size,
            reopen=lambda first_byte: self._open(first_byte=first_byte)["Body"],
            attempts=self._bucket.retry.attempts,
        )

    def _open(self, *, first_byte: int) -> GetObjectOutputTypeDef:
        bucket, key = self._bucket, self._claim.key
        ranged = {"Range": f"bytes={first_byte}-"} if first_byte else {}
        with _present():
            return bucket.request(
                "GetObject",
                lambda: bucket.client.get_object(Bucket=bucket.name, Key=key, **ranged),  # type: ignore[arg-type]
                expect=MISSING,
            )


class FirstFound:
    """A claim that may stand under any of several keys of a ring (`Bucket.layouts_for`), most
    likely first: a read that finds it unavailable under one asks the next, and the first to
    answer is the only one asked from then on. The key digits of a handle put its maker
    first, so this costs a request more only for a handle no key's digits name (one made
    before handles named their key, or under a key the ring does not hold: refused)."""

    __slots__ = ("_candidates",)

    def __init__(self, candidates: Sequence[Ranges]) -> None:
        self._candidates = list(candidates)

    def _first(self, read: Callable[[Ranges], _T]) -> _T:
        while True:
            try:
                answer = read(self._candidates[0])
            except ClaimUnavailableError:
                if len(self._candidates) == 1:
                    raise
                del self._candidates[0]
                continue
            del self._candidates[1:]
            return answer

    def text(self, start: int, end: int) -> TextPart:
        return self._first(lambda r: r.text(start, end))

    def tail(self, chars: int) -> TextPart:
        return self._first(lambda r: r.tail(chars))

    def index(self, start: int, end: int) -> IndexPart:
        return self._first(lambda r: r.index(start, end))

    def index_tail(self, size: int) -> IndexPart:
        return self._first(lambda r: r.index_tail(size))

    def stream(self) -> Iterator[str]:
        return self._first(Ranges.stream)


# -- a whole claim, streamed (what `scan` reads) --------------------------------------------

SCAN_BYTES = 1024 * 1024
"""How much of a claim `scan` reads at a time: memory is bounded by this, not the claim."""


def _short() -> ClaimStoreError:
    return _damaged("body length disagrees with the object's size")


def pieces(
    body: StreamingBody,
    *,
    width: int,
    seal: Seal,
    content_bytes: int,
    reopen: Callable[[int], StreamingBody],
    attempts: int,
) -> Iterator[str]:
    """The text of a sealed body of `content_bytes` (at `width`), in pieces of at most
    `SCAN_BYTES`, every block's tag checked before any of its text is yielded, so a search
    never serves a match from a rewritten block. A stream cut midway resumes with a ranged GET
    from the next stored byte (`reopen`), at most `attempts` times."""
    expected = sealed_size(content_bytes)
    blocks = BlockStream(seal, operation="GetObject")
    received = 0
    carry = b""  # the bytes of a character split between two reads
    resumes = 0
    try:
        while True:
            try:
                for chunk in body.iter_chunks(SCAN_BYTES):
                    received += len(chunk)
                    if received > expected:
                        break  # longer than sealed: refused below, the excess unread
                    data = carry + blocks.feed(chunk)
                    cut = len(data) - len(data) % width
                    carry = data[cut:]
                    if cut:
                        yield _format.decode(data[:cut], width, operation="GetObject")
                break
            except BotoCoreError as exc:  # the stream broke: go on from the next byte
                resumes += 1
                if resumes >= attempts:
                    raise ClaimStoreError(
                        f"GetObject stream failed {resumes} time(s): {type(exc).__name__}"
                    ) from exc
                body.close()
                body = reopen(received)
        if received != expected:
            raise _short()
        data = carry + blocks.end()
        if len(data) % width:
            raise _short()
        if data:
            yield _format.decode(data, width, operation="GetObject")
    finally:
        body.close()
