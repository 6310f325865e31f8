"""A claim on S3 as the reading engine's ranges.

Each range is a small plan of S3 calls (`Get` with a `Range` header, `Head`) that `perform`
sends through the bucket's client (`sender`) and answers here, so the byte ranges, every
check on the answers and the format are decided apart from the sending; and a whole claim
streamed for `scan` (`pieces`), in bounded memory.

A range of the text or the index is one ranged GetObject of the sealed blocks holding it; the
end of either, one suffix range (`bytes=-n`). The exceptions, each one request more: a range
at or past the end, or on an empty object, gets S3's 416, which carries no metadata (a
HeadObject says whether the object still stands); a server that answers a suffix range from
the start (s3rver) gets a second GET of the bytes by name; a claim with no index costs a
HeadObject of the claim to tell "not indexed" from "not there".
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeVar, cast

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

__all__ = [
    "SCAN_BYTES",
    "ClaimOps",
    "Get",
    "Head",
    "Reply",
    "Sealed",
    "head",
    "perform",
    "pieces",
    "present",
    "sender",
]

_T = TypeVar("_T")
_GET_EXPECTS = MISSING | {"InvalidRange"}


@dataclass(frozen=True, slots=True)
class Get:
    """GetObject of `key`, of `range` (a `Range` header) or whole."""

    key: str
    range: str | None = None


@dataclass(frozen=True, slots=True)
class Head:
    key: str


@dataclass(frozen=True, slots=True)
class Reply:
    meta: Mapping[str, str]
    content_range: str | None = None
    data: bytes = b""

    @staticmethod
    def has_body(content_range: str | None) -> bool:
        """False for an empty object: S3 answers a range on one with 416, but s3rver with a
        206 promising a byte it never sends. The metadata is in that answer either way."""
        answered = _format.content_range(content_range)
        return answered is None or answered[2] > 0


Call = Get | Head
Op = Generator[Call, Reply, _T]
"""S3 calls one at a time; an expected refusal (missing, out of range) is thrown into it
as `Refused`."""


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
        the one of the key its sealed metadata names."""
        return self.layout.seal(meta.blocks_key or self.key)


def head(obj: Sealed) -> Op[ObjectMeta]:
    reply = yield Head(obj.key)
    return obj.checked(reply.meta, operation="HeadObject")


def present(op: Op[_T]) -> Op[_T]:
    """`op`, a missing claim refused as unavailable."""
    try:
        return (yield from op)
    except Refused:
        raise ClaimUnavailableError from None


def read_range(obj: Sealed, first: int, end: int) -> Op[tuple[ObjectMeta, bytes]]:
    """Content bytes [first, end) of the object (fewer at its end, none past it)."""
    end = min(end, _format.MAX_OBJECT_BYTES)
    if first >= end:  # past what any object holds: a Range S3 need not parse as meant
        return (yield from head(obj)), b""
    block, low, high = block_span(first, end)
    high = min(high, _format.MAX_OBJECT_BYTES - 1)  # a huge end rounds up past any object
    try:
        reply = yield Get(obj.key, f"bytes={low}-{high}")
    except Refused as refused:
        if refused.code != "InvalidRange":
            raise
        meta = yield from head(obj)  # at or past the end: the 416 carried no metadata
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


def read_suffix(obj: Sealed, size: int) -> Op[tuple[ObjectMeta, int, bytes]]:
    """The last `size` content bytes (all, when fewer), and the byte they start at: one
    suffix range wide enough that the whole blocks in it hold them."""
    suffix = (-(-size // BLOCK_BYTES) + 2) * UNIT_BYTES
    try:
        reply = yield Get(obj.key, f"bytes=-{suffix}")
    except Refused as refused:
        if refused.code != "InvalidRange":
            raise
        meta = yield from head(obj)  # an empty object: S3 answers any range on it with 416
        if meta.size:
            raise _damaged("range refused inside the object's size") from None
        return meta, 0, b""
    answered = _format.content_range(reply.content_range)
    if answered is not None and answered[2] and answered[1] + 1 < answered[2]:
        # The bytes stop short of the end: a server that reads `bytes=-n` as `bytes=0-n`.
        total = answered[2]
        reply = yield Get(obj.key, f"bytes={max(0, total - suffix)}-{total - 1}")
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


class ClaimOps:
    """The engine's ranges of one claim (`s3claim.store.ClaimRanges`), each a plan of calls."""

    __slots__ = ("_claim", "_index", "_width")

    def __init__(self, claim: Sealed, index: Sealed, width: int) -> None:
        self._claim, self._index, self._width = claim, index, width

    def text(self, start: int, end: int) -> Op[TextPart]:
        width = self._width
        meta, data = yield from present(read_range(self._claim, width * start, width * end))
        return TextPart(_format.decode(data, width, operation="GetObject"), start, meta.facts)

    def tail(self, chars: int) -> Op[TextPart]:
        width = self._width
        meta, at, data = yield from present(read_suffix(self._claim, width * chars))
        text = _format.decode(data, width, operation="GetObject")
        return TextPart(text, at // width, meta.facts)

    def index(self, start: int, end: int) -> Op[IndexPart]:
        if start >= _format.MAX_OBJECT_BYTES:  # past any index: the claim's length answers
            meta = yield from present(head(self._claim))
            return IndexPart(b"" if meta.index_size else None, meta.facts)
        try:
            meta, data = yield from read_range(self._index, start, end)
        except Refused:
            return (yield from self._unindexed())
        return IndexPart(data, meta.facts)

    def index_tail(self, size: int) -> Op[IndexPart]:
        try:
            meta, _, data = yield from read_suffix(self._index, size)
        except Refused:
            return (yield from self._unindexed())
        return IndexPart(data, meta.facts)

    def _unindexed(self) -> Op[IndexPart]:
        """No index object: a claim written without one, or no claim at all (one HEAD)."""
        meta = yield from present(head(self._claim))
        if meta.index_size:
            raise ClaimStoreError("GetObject: the claim's index is missing", reason="damaged")
        return IndexPart(None, meta.facts)


def perform(op: Op[_T], send: Callable[[Call], Reply]) -> _T:
    """Run `op`, each call sent by `send` (which raises `Refused` for an expected refusal)."""
    try:
        call = next(op)
        while True:
            try:
                reply = send(call)
            except Refused as refused:
                call = op.throw(refused)
            else:
                call = op.send(reply)
    except StopIteration as done:
        return cast(_T, done.value)
    finally:
        op.close()


def sender(bucket: Bucket) -> Callable[[Call], Reply]:
    """How the bucket's client sends a call, under the retry policy."""

    def send(call: Call) -> Reply:
        client, name = bucket.client, bucket.name
        if isinstance(call, Head):
            found = bucket.request(
                "HeadObject", partial(client.head_object, Bucket=name, Key=call.key), expect=MISSING
            )
            return Reply(found["Metadata"])
        ranged = {"Range": call.range} if call.range else {}

        def get() -> Reply:
            response = client.get_object(Bucket=name, Key=call.key, **ranged)  # type: ignore[arg-type]
            # Read inside the retry, so a cut stream is retried, and through StreamingBody
            # itself: its `with` block yields the raw urllib3 stream, whose read() skips the
            # length and checksum checks and raises urllib3's own errors, not botocore's.
            body, content_range = response["Body"], response.get("ContentRange")
            try:
                data = body.read() if Reply.has_body(content_range) else b""
            finally:
                body.close()
            return Reply(response["Metadata"], content_range, data)

        return bucket.request("GetObject", get, expect=_GET_EXPECTS)

    return send


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
