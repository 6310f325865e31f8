"""The link server: `GET /claims/{token}` answers with the claim's exact text.

One Starlette app (`claims_mount`), served alone by `s3claim serve` (`links_app`) and
mounted by the MCP gateway over HTTP beside `/mcp`. The body is `text/plain; charset=utf-8`:

- no query: the whole text, streamed (one streaming GET on S3); a `Range: bytes=A-B`,
  `A-` or `-N` cuts its UTF-8 (206 with `Content-Range`, 416 when none of it exists). UTF-8
  offsets cannot be found without reading what comes before them, so a byte range streams
  the text up to its end (one GET), at most `MAX_RANGE_BYTES` of it served;
- `offset`/`length` (characters): one window (one ranged GET);
- `line` (from 1) with `lines`: whole lines (at most two ranged GETs);
- `from_end` with `lines`: the end, from a line's start (one);
- `path` (a JSON Pointer): the value's exact text (at most three).

`length` bounds a reading mode's window (`DEFAULT_WINDOW_CHARS`, at most `MAX_WINDOW_CHARS`);
`X-Claim-*` headers say where the window is and where the next begins. An expired, altered,
foreign or unknown link, one whose check-in is gone (each read names it to the store), and a
damaged claim, are the same 404, byte for byte; a store fault is a 503 in one line. Nothing
of the content, and no name, is ever logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.links import LINK_PATH, Link, LinkableStore, LinkKey
from s3claim.store import (
    LineWindow,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathRead,
    Window,
    at_most_lines,
    read_outcome,
)
from s3claim.telemetry import fetch_operation

__all__ = [
    "DEFAULT_WINDOW_CHARS",
    "MAX_RANGE_BYTES",
    "MAX_WINDOW_CHARS",
    "claims_mount",
    "links_app",
]

DEFAULT_WINDOW_CHARS = 65_536
MAX_WINDOW_CHARS = 4 * 1024 * 1024
"""The largest window one read holds in memory (16 MiB at 4 bytes a character); the whole
text, streamed, is not bounded."""
MAX_RANGE_BYTES = 8 * 1024 * 1024
"""The most of a byte range one answer holds; `Content-Range` says what was served."""

_T = TypeVar("_T")
_log = logging.getLogger("s3claim.links")
_TEXT = "text/plain; charset=utf-8"
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_MODES = ("offset", "length", "line", "lines", "from_end", "path")
_TRUE = {"", "1", "true"}


def _not_found() -> Response:
    """The one answer for every link that reads nothing, whatever the reason."""
    return PlainTextResponse("Not Found", status_code=404, headers=_HEADERS)


def _said(status: int, line: str) -> Response:
    return PlainTextResponse(line, status_code=status, headers=_HEADERS)


class _BadRequest(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class _Query:
    """A reading mode from the query: one of offset, line, from_end and path."""

    offset: int | None = None
    length: int = DEFAULT_WINDOW_CHARS
    line: int | None = None
    lines: int | None = None
    from_end: bool = False
    path: str | None = None

    @classmethod
    def of(cls, query: Mapping[str, str]) -> _Query | None:
        """The mode the query asks for; None for no query (the whole text)."""
        unknown = sorted(set(query) - set(_MODES))
        if unknown:
            raise _BadRequest(f"unknown query parameter {unknown[0]!r}: use {', '.join(_MODES)}")
        if not query:
            return None
        flag = query.get("from_end")
        if flag is not None and flag.lower() not in _TRUE:
            raise _BadRequest("from_end takes no value (or 1, true)")
        asked = cls(
            offset=_number(query, "offset", least=0),
            length=_number(query, "length", least=1) or DEFAULT_WINDOW_CHARS,
            line=_number(query, "line", least=1),
            lines=_number(query, "lines", least=1),
            from_end=flag is not None,
            path=query.get("path"),
        )
        modes = [
            name
            for name, on in (
                ("offset", asked.offset is not None),
                ("line", asked.line is not None),
                ("from_end", asked.from_end),
                ("path", asked.path is not None),
            )
            if on
        ]
        if len(modes) > 1:
            raise _BadRequest(f"one reading mode at a time, got {' and '.join(modes)}")
        if asked.length > MAX_WINDOW_CHARS:
            raise _BadRequest(f"length is at most {MAX_WINDOW_CHARS} characters")
        if asked.lines is not None and asked.line is None and not asked.from_end:
            raise _BadRequest("lines goes with line or from_end")
        return asked

    def read(self, store: LinkableStore, link: Link) -> Window | LineWindow | PathRead:
        scope, handle, limit, check_in_id = link.scope, link.handle, self.length, link.check_in_id
        if self.path is not None:
            return store.read_path(scope, handle, self.path, limit=limit, check_in_id=check_in_id)
        if self.line is not None or self.from_end:
            if self.line is not None:
                window = store.read_line(
                    scope, handle, self.line, limit=limit, check_in_id=check_in_id
                )
            else:
                window = store.read_end(scope, handle, limit=limit, check_in_id=check_in_id)
            if self.lines is None:
                return window
            return at_most_lines(window, self.lines, from_end=self.line is None)
        return store.fetch(scope, handle, self.offset or 0, limit, check_in_id=check_in_id)


def _number(query: Mapping[str, str], name: str, *, least: int) -> int | None:
    given = query.get(name)
    if given is None:
        return None
    if not given.isascii() or not given.isdigit() or int(given) < least or len(given) > 18:
        raise _BadRequest(f"{name} must be a whole number of at least {least}, got {given!r}")
    return int(given)


def _window_headers(answer: Window | LineWindow | PathRead) -> dict[str, str]:
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
        server may ignore those, RFC 9110, and answer with the whole text)."""
        found = _RANGE.fullmatch((header or "").replace(" ", ""))
        if found is None or not any(found.groups()):
            return None
        first, last = (int(g) if g else None for g in found.groups())
        if first is not None and last is not None and last < first:
            return None
        return cls(first, last)


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


def claims_mount(store: LinkableStore) -> Mount:
    """The link server at `/claims`, for a Starlette app to mount (the MCP gateway does)."""
    if not isinstance(store, LinkableStore):
        raise TypeError(f"{type(store).__name__} cannot serve links")
    key = LinkKey(store.handle_key)

    async def claim(request: Request) -> Response:
        link = key.open(request.path_params["token"])
        if link is None or link.expires_at <= store.clock.now():
            return _not_found()
        try:
            query = _Query.of(request.query_params)
        except _BadRequest as exc:
            return _said(400, str(exc))
        if query is not None:  # a reading mode: Range, which cuts the whole text, is ignored
            answer = await _guarded(link, lambda: query.read(store, link))
            if isinstance(answer, Response):
                return answer
            return Response(
                answer.text, media_type=_TEXT, headers={**_HEADERS, **_window_headers(answer)}
            )
        wanted = _Bytes.of(request.headers.get("range"))
        if wanted is None:
            return await _whole(store, link)
        return await _ranged(store, link, wanted)

    route = Route("/{token:path}", claim, methods=["GET"])
    return Mount(LINK_PATH.rstrip("/"), routes=[route])


def links_app(store: LinkableStore) -> Starlette:
    """The app `s3claim serve` runs: the link server alone; every other path a 404."""
    return Starlette(routes=[claims_mount(store)])


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


def _opened(store: LinkableStore, link: Link) -> Iterator[str]:
    """The claim's text as a stream, opened (and so checked) now: one audited read."""
    with fetch_operation(store, link.scope, handle=link.handle, offset=0) as op:
        try:
            return store.scan(link.scope, link.handle, check_in_id=link.check_in_id)
        except Exception as exc:
            op.outcome = read_outcome(exc)
            raise


def _closing(pieces: Iterator[str], handle: str) -> Iterator[bytes]:
    try:
        for piece in pieces:
            yield piece.encode("utf-8")
    except Exception as exc:  # cut short: the connection drops, the client sees it
        _log.warning("link read: the stream of %s broke (%s)", handle, type(exc).__name__)
        raise
    finally:
        _close(pieces)


def _close(pieces: Iterator[str]) -> None:
    close = getattr(pieces, "close", None)
    if close is not None:
        close()


async def _whole(store: LinkableStore, link: Link) -> Response:
    pieces = await _guarded(link, lambda: _opened(store, link))
    if isinstance(pieces, Response):
        return pieces
    return StreamingResponse(
        _closing(pieces, link.handle),
        media_type=_TEXT,
        headers={**_HEADERS, "Accept-Ranges": "bytes"},
    )


async def _ranged(store: LinkableStore, link: Link, wanted: _Bytes) -> Response:
    def read() -> tuple[bytes, int, int | None] | int:
        pieces = _opened(store, link)
        try:
            return _cut(pieces, wanted)
        except _Unsatisfiable as none:
            return none.total
        finally:
            _close(pieces)

    answer = await _guarded(link, read)
    if isinstance(answer, Response):
        return answer
    if isinstance(answer, int):
        headers = {**_HEADERS, "Content-Range": f"bytes */{answer}"}
        return PlainTextResponse("Range Not Satisfiable", status_code=416, headers=headers)
    data, first, total = answer
    span = f"bytes {first}-{first + len(data) - 1}/{'*' if total is None else total}"
    headers = {**_HEADERS, "Content-Range": span, "Accept-Ranges": "bytes"}
    return Response(data, status_code=206, media_type=_TEXT, headers=headers)
