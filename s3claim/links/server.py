"""The link server: `GET /claims/{token}` answers with the claim's exact text.

One Starlette app (`claims_mount`), served alone by `s3claim serve` (`links_app`) and
mounted by the MCP gateway over HTTP beside `/mcp`. The body is `text/plain; charset=utf-8`:

- no query: the whole text (below); a `Range: bytes=A-B`, `A-` or `-N` cuts its UTF-8 (206
  with `Content-Range`, 416 when none of it exists; its numbers of any length, read for what
  they are). UTF-8 offsets cannot be found without reading what comes before them, so a byte
  range reads the text up to its end (one GET), at most `MAX_RANGE_BYTES` of it served; a
  Range that is not one valid byte range is ignored, as RFC 9110 allows: the whole text;
- `offset`/`length` (characters): one window (one ranged GET);
- `line` (from 1) with `lines`: whole lines (at most two ranged GETs);
- `from_end` with `lines`: the end, from a line's start (one);
- `path` (a JSON Pointer): the value's exact text (at most three).

`length` bounds a reading mode's window (`DEFAULT_WINDOW_CHARS`, at most `MAX_WINDOW_CHARS`);
`X-Claim-*` headers say where the window is and where the next begins. An expired, altered,
foreign or unknown link, one whose check-in is gone (each read names it to the store), and a
damaged claim, are the same 404, byte for byte; a store fault
is a 503 in one line. Nothing of the content, and no name, is ever logged.

**Nothing is sent before what it says has been checked.** The S3 store checks a claim's
blocks as they stream in (`s3claim.s3._seal`), so a rewritten block is found only once it is
read: a whole text streamed as it arrived was a 200 that broke off there, with a traceback
(issue 46). So every answer is read, and checked, to the end of what it serves before its
status line: a byte range (held, at most `MAX_RANGE_BYTES`) and a reading mode's window
always were; the whole text is read to its end first. A text of at most `MAX_HELD_BYTES` of
UTF-8 is answered from that one read: one streaming GET, the object once, as before, and
the answer starts once the last block is checked (up to 8 MiB held per such read). A longer
one is read twice, in constant memory: once to check every block and count its UTF-8, then
again as it is sent, with that `Content-Length`: two GETs and the object twice (a 20 MiB
claim on moto: 2 GETs, 42,106,848 bytes, against 1 and 21,053,424 streamed unchecked; its
first byte 0.17 s after the request instead of 0.02 s). Only the first read is the audited
fetch (`s3claim.fetch`, its span and S3 tally); the second is outside it. Should the second
read still break (the object rewritten between the reads, or S3 failing past its retries),
the answer stops short of its `Content-Length` and the connection closes: one warning line
naming the handle, and uvicorn's one line, no traceback. Buffering every text whole would
save the second read but hold claims of any size in memory; the memory store's text is in
memory already and cannot be damaged, so it only pays the count.

docs/code.md ("The server") has the answers, their headers and their costs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import Message, Receive, Scope, Send

import s3claim.wording as wording
from s3claim.bounds import Bounds
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ToolError
from s3claim.links import LINK_PATH, Link, LinkKey
from s3claim.store import (
    Address,
    AddressError,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathRead,
    RangedStore,
    Read,
    read_outcome,
)
from s3claim.telemetry import fetch_operation

__all__ = [
    "DEFAULT_WINDOW_CHARS",
    "MAX_HELD_BYTES",
    "MAX_RANGE_BYTES",
    "MAX_WINDOW_CHARS",
    "claims_mount",
    "links_app",
]

DEFAULT_WINDOW_CHARS = 65_536
MAX_WINDOW_CHARS = 4 * 1024 * 1024
"""The largest window one read holds in memory (16 MiB at 4 bytes a character); the whole
text is held up to `MAX_HELD_BYTES`, and streamed, unbounded, beyond."""
MAX_RANGE_BYTES = 8 * 1024 * 1024
"""The most of a byte range one answer holds; `Content-Range` says what was served."""
MAX_HELD_BYTES = 8 * 1024 * 1024
"""The longest text (UTF-8 bytes) a whole read answers from the one read that checked it; a
longer one is read twice (the module docstring has the cost)."""

_T = TypeVar("_T")
_log = logging.getLogger("s3claim.links")
_PIECE = 64 * 1024
_TEXT = "text/plain; charset=utf-8"
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_RANGE = re.compile(r"(?i:bytes)=([0-9]*)-([0-9]*)")  # the unit is case-insensitive
_FAR_DIGITS = 18
"""A byte position of more digits than this is past the end of every claim (5 GiB stored, at
most 4 UTF-8 bytes a character): it is read as `_FAR`, never converted."""
_FAR = 10**_FAR_DIGITS


def _not_found() -> Response:
    """The one answer for every link that reads nothing, whatever the reason."""
    return PlainTextResponse("Not Found", status_code=404, headers=_HEADERS)


def _said(status: int, line: str) -> Response:
    return PlainTextResponse(line, status_code=status, headers=_HEADERS)


def _address(query: QueryParams) -> Address | None:
    """The window a query names (`Address.from_strings`, as every text door reads one); None
    for no query: the whole text."""
    pairs = query.multi_items()
    address = Address.from_strings(pairs) if pairs else None
    if address is not None and address.first_member:  # a listing's page: fetch_result's
        raise AddressError(wording.member_page_refused("a link"))
    return address


def _window_headers(answer: Read) -> dict[str, str]:
    """Where the window is, in characters, and where reading goes on."""
    start = answer.start if isinstance(answer, PathRead) else answer.offset
    headers = {"X-Claim-Offset": str(start), "X-Claim-Total-Chars": str(answer.total_chars)}
    if answer.next_offset is not None:
        headers["X-Claim-Next-Offset"] = str(answer.next_offset)
    if isinstance(answer, PathRead):
        headers["X-Claim-Value-End"] = str(answer.end)
    elif answer.total_lines is not None:
        headers["X-Claim-Total-Lines"] = str(answer.total_lines)
    return headers


# -- byte ranges ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bytes:
    """`bytes=first-last` (last None: to the end), or `bytes=-suffix` (first None)."""

    first: int | None
    last: int | None

    @classmethod
    def of(cls, header: str | None) -> _Bytes | None:
        """The one range asked for; None for none, several, or one that is not valid (a
        server may ignore those, RFC 9110, and answer with the whole text).

        Its numbers may have any number of digits, as RFC 9110's grammar allows: each is
        read for what it is (leading zeros and all), one past the end of every claim as
        `_FAR`, so a first byte past any text is a 416 and a last one, or a suffix, the end.
        """
        found = _RANGE.fullmatch((header or "").replace(" ", ""))
        if found is None or not any(found.groups()):
            return None
        first, last = (g.lstrip("0") or "0" if g else None for g in found.groups())
        if first is not None and last is not None and (len(last), last) < (len(first), first):
            return None  # last before first, compared as digits: no number is converted
        return cls(_position(first), _position(last))


def _position(digits: str | None) -> int | None:
    """A number of a range without leading zeros, `_FAR` when it has more digits than any
    position in a claim."""
    if digits is None:
        return None
    return int(digits) if len(digits) <= _FAR_DIGITS else _FAR


class _Unsatisfiable(Exception):
    def __init__(self, total: int) -> None:
        self.total = total


def _cut(pieces: Iterator[str], wanted: _Bytes) -> tuple[bytes, int, int | None]:
    """The bytes of the range, the first one's offset, and the UTF-8 length when the text
    was read to its end (None when the range ended before it)."""
    if wanted.first is None:  # the last N bytes: read to the end, keep a bounded tail
        keep = min(wanted.last or 0, MAX_RANGE_BYTES)
        tail, total = bytearray(), 0
        for piece in pieces:
            data = piece.encode("utf-8")
            total += len(data)
            tail += data[-keep:] if keep else b""
            del tail[: max(0, len(tail) - keep)]
        if not tail:
            raise _Unsatisfiable(total)
        return bytes(tail), total - len(tail), total
    first = wanted.first
    last = first + MAX_RANGE_BYTES - 1
    if wanted.last is not None:
        last = min(last, wanted.last)
    out, at = bytearray(), 0
    for piece in pieces:
        data = piece.encode("utf-8")
        if at + len(data) > first:
            out += data[max(0, first - at) : last + 1 - at]
        at += len(data)
        if at > last:
            return bytes(out), first, None
    if at <= first:
        raise _Unsatisfiable(at)
    return bytes(out), first, at


# -- the app ----------------------------------------------------------------------------


def claims_mount(store: RangedStore, bounds: Bounds | None = None) -> Mount:
    """The link server at `/claims`, for a Starlette app to mount (the MCP gateway does).
    Every read takes a slot of `bounds` (the proxy's, beside its calls; its own by default)
    for the link's tenant, holding what it may buffer, until its last byte is sent."""
    if not isinstance(store, RangedStore):
        raise TypeError(f"{type(store).__name__} cannot serve links")
    route = Route("/{token:path}", _Claims(store, bounds or Bounds()), methods=["GET"])
    return Mount(LINK_PATH.rstrip("/"), routes=[route])


class _Claims:
    """The one route, as an ASGI app of its own: its slot is held while the answer is sent,
    so a client that stops reading holds its slot and its bytes, and no more than that."""

    def __init__(self, store: RangedStore, bounds: Bounds) -> None:
        self.store, self.bounds, self.key = store, bounds, LinkKey(store.handle_key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        link = self.key.open(request.path_params["token"])
        if link is None or link.expires_at <= self.store.clock.now():
            return await _not_found()(scope, receive, send)  # nothing read, no slot taken
        try:
            address = _address(request.query_params)
            wanted = None if address is not None else _Bytes.of(request.headers.get("range"))
            length = (
                0
                if address is None
                else address.window(default=DEFAULT_WINDOW_CHARS, most=MAX_WINDOW_CHARS)
            )
        except AddressError as exc:
            return await _said(400, exc.message)(scope, receive, send)
        # What the answer may hold: a window's UTF-8 at its longest (4 bytes a character), a
        # byte range's most, or the most of a whole text that is held (`MAX_HELD_BYTES`).
        holding = (
            4 * length if address is not None else MAX_RANGE_BYTES if wanted else MAX_HELD_BYTES
        )
        try:
            with self.bounds.admitted(link.scope.tenant, holding=holding):
                answer = await self._answer(link, address, length, wanted)
                await answer(scope, receive, _in_pieces(send))
        except ToolError as busy:  # too_many_calls: refused at once, holding nothing
            await _said(503, busy.message)(scope, receive, send)

    async def _answer(
        self, link: Link, address: Address | None, length: int, wanted: _Bytes | None
    ) -> Response:
        store = self.store
        if address is not None:  # a reading mode: Range, which cuts the whole text, is ignored
            read = partial(
                store.read, link.scope, link.handle, address, length=length,
                check_in_id=link.check_in_id,
            )  # fmt: skip
            answer = await _guarded(link, read)
            if isinstance(answer, Response):
                return answer
            return Response(
                answer.text, media_type=_TEXT, headers={**_HEADERS, **_window_headers(answer)}
            )
        if wanted is None:
            return await _whole(store, link)
        return await _ranged(store, link, wanted)


def _in_pieces(send: Send) -> Send:
    """`send`, a body passed on in pieces of `_PIECE` bytes. The server waits, before each
    piece, until what it buffered of the one before has gone (uvicorn's flow control), and
    not after the last: a body sent whole would be buffered whole, and its read's slot given
    back before any of it had reached a client that does not read."""

    async def pieces(message: Message) -> None:
        body = message.get("body", b"")
        if message["type"] != "http.response.body" or len(body) <= _PIECE:
            return await send(message)
        view = memoryview(body)
        for start in range(0, len(body), _PIECE):
            await send(
                {
                    "type": "http.response.body",
                    "body": bytes(view[start : start + _PIECE]),
                    "more_body": True,
                }
            )
        await send(
            {
                "type": "http.response.body",
                "body": b"",
                "more_body": message.get("more_body", False),
            }
        )

    return pieces


def links_app(store: RangedStore, bounds: Bounds | None = None) -> Starlette:
    """The app `s3claim serve` runs: the link server alone; every other path a 404."""
    return Starlette(routes=[claims_mount(store, bounds)])


async def _guarded(link: Link, read: Callable[[], _T]) -> _T | Response:
    """`read()` in a worker thread, its failures as answers."""
    try:
        return await run_in_threadpool(read)
    except ClaimUnavailableError:
        return _not_found()
    except ClaimStoreError as exc:
        if exc.reason == "damaged":  # a rewritten object reads as nothing at all
            _log.warning("link read: %s is damaged", link.handle)
            return _not_found()
        return _store_failed(link, exc)
    except NoLineIndexError:
        return _said(422, "this claim cannot be read by line: read it by offset")
    except NoIndexError:
        return _said(422, "this claim is not JSON: it cannot be read by path")
    except PathError as exc:
        return _said(422, exc.message)
    except Exception as exc:  # a fault is an answer, never the server's end
        return _store_failed(link, exc)


def _store_failed(link: Link, exc: Exception) -> Response:
    reason = getattr(exc, "reason", None)
    _log.warning(
        "link read: store failed for %s (%s%s)",
        link.handle,
        type(exc).__name__,
        f": {reason}" if isinstance(reason, str) else "",
    )
    return _said(503, "the claim store is unavailable: try again later")


def _read_through(store: RangedStore, link: Link, consume: Callable[[Iterator[str]], _T]) -> _T:
    """`consume(pieces)` of the claim's text as a stream (`scan`), within one audited read:
    its span and its outcome cover the whole read, so a damaged block found midway is a
    failed fetch. The stream is closed however `consume` ends."""
    with fetch_operation(store, link.scope, handle=link.handle, offset=0) as op:
        try:
            pieces = store.scan(link.scope, link.handle, check_in_id=link.check_in_id)
            try:
                return consume(pieces)
            finally:
                _close(pieces)
        except Exception as exc:
            op.outcome = read_outcome(exc)
            raise


def _close(pieces: Iterator[str]) -> None:
    close = getattr(pieces, "close", None)
    if close is not None:
        close()


# -- the whole text -------------------------------------------------------------------------


def _held(pieces: Iterator[str]) -> tuple[bytes | None, int]:
    """The text's UTF-8 length, read to its end (every block checked on the way), and the
    UTF-8 itself when it is at most `MAX_HELD_BYTES`."""
    held: list[bytes] | None = []
    size = 0
    for piece in pieces:
        data = piece.encode("utf-8")
        size += len(data)
        if held is not None and size <= MAX_HELD_BYTES:
            held.append(data)
        else:
            held = None  # too long to hold: the rest is only checked and counted
    return (b"".join(held) if held is not None else None), size


async def _whole(store: RangedStore, link: Link) -> Response:
    """The whole text, once all of it has been read and checked: a damaged claim is the one
    404, never a 200 that breaks off. Up to `MAX_HELD_BYTES`, what was read is the answer;
    a longer text is read a second time, as it is sent, with its length promised."""
    read = await _guarded(link, lambda: _read_through(store, link, _held))
    if isinstance(read, Response):
        return read
    held, size = read
    headers = {**_HEADERS, "Accept-Ranges": "bytes"}
    if held is not None:
        return Response(held, media_type=_TEXT, headers=headers)
    # Outside the read's span: the claim's one redemption was the read that checked it.
    pieces = await _guarded(
        link, lambda: store.scan(link.scope, link.handle, check_in_id=link.check_in_id)
    )
    if isinstance(pieces, Response):
        return pieces
    headers["Content-Length"] = str(size)
    return _Promised(_sent(pieces, link.handle), media_type=_TEXT, headers=headers)


class _Broken(Exception):
    """A stream that had been checked whole broke as it was sent again."""


def _sent(pieces: Iterator[str], handle: str) -> Iterator[bytes]:
    try:
        for piece in pieces:
            yield piece.encode("utf-8")
    except Exception as exc:  # rewritten since it was checked, or S3 failed past its retries
        _log.warning("link read: the stream of %s broke (%s)", handle, type(exc).__name__)
        raise _Broken from None
    finally:
        _close(pieces)


class _Promised(StreamingResponse):
    """A streamed answer of a known length (`Content-Length`). If its stream breaks
    (`_Broken`), the answer stops there, unfinished: uvicorn closes the connection, so the
    client has fewer bytes than it was promised, and logs one line, with no traceback."""

    async def stream_response(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        try:
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except _Broken:
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


# -- a byte range ---------------------------------------------------------------------------


async def _ranged(store: RangedStore, link: Link, wanted: _Bytes) -> Response:
    """The bytes of the range, read (and checked) to its end before anything is sent."""

    def cut(pieces: Iterator[str]) -> tuple[bytes, int, int | None] | int:
        try:
            return _cut(pieces, wanted)
        except _Unsatisfiable as none:
            return none.total

    answer = await _guarded(link, lambda: _read_through(store, link, cut))
    if isinstance(answer, Response):
        return answer
    if isinstance(answer, int):
        headers = {**_HEADERS, "Content-Range": f"bytes */{answer}"}
        return PlainTextResponse("Range Not Satisfiable", status_code=416, headers=headers)
    data, first, total = answer
    span = f"bytes {first}-{first + len(data) - 1}/{'*' if total is None else total}"
    headers = {**_HEADERS, "Content-Range": span, "Accept-Ranges": "bytes"}
    return Response(data, status_code=206, media_type=_TEXT, headers=headers)
