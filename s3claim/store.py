"""The two levels of store, and the one reader behind every door.

`ClaimCheckStore` is the first level, all a claim check needs: put, fetch (by offset),
forget; a store you bind offers at least it. `AsyncClaimCheckStore` is the same three for
coroutines (a sibling, not a mode flag). `RangedStore` is the second: a store that serves
each claim as ranges of its text and of its index (`ClaimRanges`; the obspec `get_range`
shape) gets every reading mode from the one reading engine (`s3claim._reading`): windows by
offset, lines, the end and JSON paths, the stream search reads; and it offers what the rest
of s3claim builds on (listing, hand-off, links, repeat reads). The memory store and the S3
store are both built on it, so a new store gets every mode by offering ranges (and building
its index at check-in with `build_index`). `read` is the one read of an `Address` for every
door; each read is one span (`s3claim.fetch`), opened here. docs/reading.md describes the
modes; docs/s3.md what each costs on S3.

A claim's **check-in** is the write that made it: a repeat put of the same text in the same
run is the same handle and refreshes that check-in (it keeps its id, `new_check_in_id`),
while the same text checked in after an erasure is a check-in of its own. A read may name the
check-in it expects (`check_in_id=`, what a link does): any other is unavailable.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from s3claim._reading import (
    DEFAULT_FETCH_CHARS,
    MAX_DIGITS,
    Address,
    AddressError,
    ClaimRanges,
    Facts,
    IndexPart,
    IndexTooLargeError,
    LineWindow,
    MatchTooLongError,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathRead,
    PatternError,
    PatternTooCostlyError,
    Read,
    SearchBusyError,
    SearchResult,
    TextPart,
    Window,
    at_most_lines,
    build_index,
    by_line,
    by_offset,
    by_path,
    compile_pattern,
    count_lines,
    from_end,
    search_slot,
    search_text,
)
from s3claim.clock import Clock
from s3claim.erasure import ErasureReceipt
from s3claim.errors import ClaimUnavailableError, ConfigurationError
from s3claim.handles import HandleKey, is_handle
from s3claim.scope import Scope
from s3claim.telemetry import Operation, fetch_operation, search_operation

__all__ = [
    "DEFAULT_FETCH_CHARS",
    "MAX_DIGITS",
    "MAX_TOOL_NAME_BYTES",
    "Address",
    "AddressError",
    "AsyncClaimCheckStore",
    "CheckIn",
    "ClaimCheckStore",
    "ClaimInfo",
    "ClaimRanges",
    "Facts",
    "IndexPart",
    "IndexTooLargeError",
    "LineWindow",
    "MatchTooLongError",
    "NoIndexError",
    "NoLineIndexError",
    "PathError",
    "PathRead",
    "PatternError",
    "PatternTooCostlyError",
    "RangedStore",
    "Read",
    "SearchBusyError",
    "SearchResult",
    "TextPart",
    "Window",
    "build_index",
    "count_lines",
    "read",
]

_T = TypeVar("_T", bound=Window | LineWindow | PathRead)


@runtime_checkable
class ClaimCheckStore(Protocol):
    """Where checked-in content lives until its TTL runs out.

    `fetch` raises `ClaimUnavailableError`, with one message, for a handle that is malformed,
    never stored, expired or from another scope; `ClaimStoreError` when the store itself fails.
    """

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str: ...

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window: ...

    def forget(self, *, tenant: str, run: str | None = None) -> int: ...


@runtime_checkable
class AsyncClaimCheckStore(Protocol):
    """`ClaimCheckStore` for coroutines: the same three operations, the same errors."""

    async def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str: ...

    async def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window: ...

    async def forget(self, *, tenant: str, run: str | None = None) -> int: ...


MAX_TOOL_NAME_BYTES = 128
"""The longest tool name a claim records, in UTF-8 bytes: MCP's bound on a tool's name (128
characters, ASCII). A longer one, which an MCP upstream may choose, is recorded as None,
rather than grow the metadata S3 bounds at 2 KiB."""


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """One claim as a store lists it (`RangedStore.claims`): what it is, never its content.

    `expires_at` is in seconds since the epoch; a claim is listed until its store drops it,
    so one at or past its expiry is still listed, and no read will serve it. `tool` is the
    tool whose result it is, None when the check-in did not say (a claim written before
    stores kept it, a `put` without `tool`, a name over `MAX_TOOL_NAME_BYTES`).
    """

    handle: str
    run_tag: str
    """The run's keyed tag (`store.run_tag(scope)`): stores keep no run's name."""
    chars: int
    expires_at: int
    damaged: bool = False
    """The S3 store's: the object's seal does not hold, or it is in a format this version does
    not read, so no fetch will serve it. Its sizes and expiry are then 0, its tool None."""
    tool: str | None = None
    lines: int = 0
    """Lines as a read by line counts them: the line breaks, and one more after the last
    when characters follow it (0 for an empty claim)."""


CHECK_IN_ID_BYTES = 8
"""A check-in id's random bytes (16 hex digits): two check-ins of one claim, in one run,
never meet by chance."""


def new_check_in_id() -> str:
    """A fresh check-in id: random, so that nothing but the claim's own metadata knows it."""
    return secrets.token_hex(CHECK_IN_ID_BYTES)


def is_check_in_id(value: object) -> bool:
    """Whether `value` is a check-in id as `new_check_in_id` makes them."""
    return (
        isinstance(value, str)
        and len(value) == 2 * CHECK_IN_ID_BYTES
        and all(c in "0123456789abcdef" for c in value)
    )


@dataclass(frozen=True, slots=True)
class CheckIn:
    """What a link needs of a claim, from one metadata read: until when it reads, and which
    check-in it is (None for a claim written before stores kept one: nothing to hold it to)."""

    expires_at: float
    id: str | None


def recorded_tool(tool: object) -> str | None:
    """What a store records of `put`'s `tool`: the name, when it is one it keeps (valid
    Unicode, 1 to `MAX_TOOL_NAME_BYTES` bytes of UTF-8)."""
    if not isinstance(tool, str) or not tool:
        return None
    try:
        size = len(tool.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: not a name we can write anywhere
        return None
    return tool if size <= MAX_TOOL_NAME_BYTES else None


class RangedStore(ABC):
    """The second level of store: one that serves its claims as ranges, and so does
    everything a claim check offers beyond put, fetch and forget.

    A subclass implements `ranges` (each claim as ranges of its text and index), `put`
    (taking `tool=`, which its listing keeps), `forget`, `claims`, `hand_off`, `checked_in`, its
    `clock` and `handle_key`, and the run marks that end repeat reads on every instance
    (`mark_written`, `run_mark`, `new_run_mark`); every reading mode comes from the engine
    here (`read`, by an `Address`), each read checking the handle's form first (a malformed
    one never reaches the store) and each one `s3claim.fetch` span. Both stores of s3claim
    are built on it; a store that offers only the first level (`ClaimCheckStore`) is read
    by offset alone.
    Each read takes `check_in_id`: given, only that check-in of the claim is read, any other
    is unavailable, checked on what each range reads anyway (a link's reads; no request more).
    """

    @abstractmethod
    def ranges(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> ClaimRanges:
        """The claim `handle` names, as ranges (a well-formed handle: the caller checked).

        Making it costs nothing; each range checks the claim as `fetch` does
        (`ClaimUnavailableError`), and `stream` does so before it returns; with
        `check_in_id`, a claim of another check-in is unavailable too.
        """

    @abstractmethod
    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        """Store `content` for `scope` (`tool`: whose result it is, which `claims` lists)."""

    @abstractmethod
    def forget(self, *, tenant: str, run: str | None = None) -> int:
        """Erase a tenant's claims (or one run's); how many claims went."""

    @abstractmethod
    def erase(self, *, tenant: str, run: str | None = None) -> ErasureReceipt:
        """Erase as `forget` does, and return the signed receipt of what went
        (`s3claim.erasure`)."""

    @abstractmethod
    def claims(self, *, tenant: str, run: str | None = None) -> Iterator[ClaimInfo]:
        """The claims of a tenant, or of one run, without reading their content.

        A same-content put in the same run is the same claim: the first check-in's tool is
        the one listed."""

    @abstractmethod
    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim's handle in the run `to` (same tenant), readable there for
        `ttl_seconds` whatever becomes of the original; checked in `scope` as `fetch`
        checks it (`ClaimUnavailableError`). The content does not pass through the caller."""

    @abstractmethod
    def checked_in(self, scope: Scope, handle: str) -> CheckIn:
        """The claim's check-in: when it stops being readable (the store's clock) and its id,
        refused as `fetch` refuses (`ClaimUnavailableError`): one metadata read."""

    @property
    @abstractmethod
    def clock(self) -> Clock:
        """The clock claims expire by (and repeat reads count by)."""

    @property
    @abstractmethod
    def handle_key(self) -> HandleKey:
        """The secret behind handles, tags and links."""

    @abstractmethod
    def run_mark(self, scope: Scope) -> str | None:
        """The run's mark: a token that changes whenever a call that may write runs in it,
        on any instance sharing the store (`mark_written`), and is gone once the run (or its
        tenant) is forgotten or loses a claim; None when it has none. One request at most."""

    @abstractmethod
    def new_run_mark(self, scope: Scope) -> str | None:
        """Give a run that has no mark one, and return it; None when it has one already
        (a call that may write came first, on some instance). One request at most."""

    @abstractmethod
    def mark_written(self, scope: Scope) -> None:
        """A call that may write has run in the run: change its mark. One request."""

    def read(
        self,
        scope: Scope,
        handle: str,
        address: Address,
        *,
        length: int,
        check_in_id: str | None = None,
    ) -> Read:
        """The window `address` names, of at most `length` characters: the one read behind
        every door (the claim tools, references, links, resource URIs, the command line), by
        the reading method of its way (so a subclass that wraps one wraps every door's)."""
        match address.way:
            case "path":
                assert address.path is not None
                return self.read_path(
                    scope,
                    handle,
                    address.path,
                    limit=length,
                    first=address.first_member,
                    check_in_id=check_in_id,
                )
            case "line":
                assert address.line is not None
                window = self.read_line(
                    scope, handle, address.line, limit=length, check_in_id=check_in_id
                )
            case "from_end":
                window = self.read_end(scope, handle, limit=length, check_in_id=check_in_id)
            case "offset":
                return self.fetch(
                    scope, handle, address.offset or 0, length, check_in_id=check_in_id
                )
        if address.lines is None:
            return window
        return at_most_lines(window, address.lines, from_end=address.from_end)

    def fetch(
        self,
        scope: Scope,
        handle: str,
        offset: int = 0,
        limit: int = DEFAULT_FETCH_CHARS,
        *,
        check_in_id: str | None = None,
    ) -> Window:
        """content[offset:offset + limit]; at or past the end, an empty window."""
        return self._read(scope, handle, offset, lambda r: by_offset(r, offset, limit), check_in_id)

    def read_line(
        self,
        scope: Scope,
        handle: str,
        line: int,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        check_in_id: str | None = None,
    ) -> LineWindow:
        """Whole lines from the start of `line` (1-based), up to `limit` characters."""
        return self._read(scope, handle, None, lambda r: by_line(r, line, limit), check_in_id)

    def read_end(
        self,
        scope: Scope,
        handle: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        check_in_id: str | None = None,
    ) -> LineWindow:
        """The claim's last `limit` characters at most, from a line's start when they hold one."""
        return self._read(scope, handle, None, lambda r: from_end(r, limit), check_in_id)

    def read_path(
        self,
        scope: Scope,
        handle: str,
        pointer: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        first: int = 0,
        check_in_id: str | None = None,
    ) -> PathRead:
        """The value at a JSON Pointer, and its first members; with `first`, a page of its
        members from that one (`PathError` for a pointer to nothing or a page past the
        members, `NoIndexError` for a claim that is not JSON)."""
        return self._read(
            scope, handle, 0, lambda r: by_path(r, pointer, limit=limit, first=first), check_in_id
        )

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        """The claim's text, start to end, in pieces (search reads it so); refuses as
        `fetch` does, before yielding anything."""
        if not is_handle(handle):
            raise ClaimUnavailableError
        return self.ranges(scope, handle, check_in_id=check_in_id).stream()

    def search(
        self,
        scope: Scope,
        handle: str,
        pattern: str,
        *,
        regex: bool = False,
        ignore_case: bool = False,
        offset: int = 0,
    ) -> SearchResult:
        """The one search behind every door (`search_result`, `s3claim search`): `pattern`, a
        literal or with `regex` a regular expression, over the claim's text streamed
        (`scan`), a page of matches from `offset` on; one `s3claim.search` span. Refuses a
        pattern before any read (`PatternError`), a handle as `fetch` does; and
        `SearchBusyError`, `MatchTooLongError`, `PatternTooCostlyError` as their names say."""
        known = handle if is_handle(handle) else None
        with search_operation(self, scope, handle=known, pattern_chars=len(pattern)) as op:
            try:
                compiled = compile_pattern(pattern, is_regex=regex, ignore_case=ignore_case)
                if known is None:  # malformed: refused here, it never reaches the store
                    raise ClaimUnavailableError
                with search_slot(scope.tenant):  # a bounded number at once; others queue
                    pieces = self.scan(scope, known)
                    try:
                        result = search_text(pieces, compiled, offset=offset)
                    finally:  # a stopped search must not leave an HTTP stream open
                        close = getattr(pieces, "close", None)
                        if close is not None:
                            close()
            except Exception as exc:
                op.outcome = search_outcome(exc)
                raise
            op.set(search_matches=result.total_matches)
            return result

    def _read(
        self,
        scope: Scope,
        handle: str,
        offset: int | None,
        mode: Callable[[ClaimRanges], _T],
        check_in_id: str | None = None,
    ) -> _T:
        known = handle if is_handle(handle) else None
        # A malformed handle is refused at the first range, after the mode has checked its
        # own arguments: it never reaches the store.
        ranges = (
            self.ranges(scope, known, check_in_id=check_in_id) if known is not None else NOWHERE
        )
        with fetch_operation(self, scope, handle=known, offset=offset) as op:
            try:
                answer = mode(ranges)
            except Exception as exc:
                op.outcome = read_outcome(exc)
                raise
            _finish(op, answer)
            return answer


def read(
    store: ClaimCheckStore, scope: Scope, handle: str, address: Address, *, length: int
) -> Read:
    """The window `address` names in any store: every way in a `RangedStore`; by offset
    alone in a store of the first level (another way is refused as the claim's lack of the
    index it needs: `NoLineIndexError`, `NoIndexError`)."""
    if isinstance(store, RangedStore):
        return store.read(scope, handle, address, length=length)
    if address.way == "path":
        raise NoIndexError
    if address.way != "offset":
        raise NoLineIndexError
    return store.fetch(scope, handle, address.offset or 0, length)


class _Nowhere:
    """The ranges of a handle that is not one: every range refused as unavailable."""

    def text(self, start: int, end: int) -> TextPart:
        raise ClaimUnavailableError

    def tail(self, chars: int) -> TextPart:
        raise ClaimUnavailableError

    def index(self, start: int, end: int) -> IndexPart:
        raise ClaimUnavailableError

    def index_tail(self, size: int) -> IndexPart:
        raise ClaimUnavailableError

    def stream(self) -> Iterator[str]:
        raise ClaimUnavailableError


NOWHERE = _Nowhere()


def _finish(op: Operation, answer: Window | LineWindow | PathRead) -> None:
    """What a read's span records of its answer: where it starts, and its size."""
    start = answer.start if isinstance(answer, PathRead) else answer.offset
    op.set(window_offset=start, window_chars=len(answer.text))


def read_outcome(exc: BaseException) -> str:
    """A failed read's span outcome, from what it raised."""
    if isinstance(exc, ClaimUnavailableError):
        return "unavailable"
    if isinstance(exc, PathError):
        return exc.kind
    if isinstance(exc, NoIndexError):
        return "not_json"
    return "failed"


_SEARCH_OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (PatternError, "invalid_arguments"),
    (ClaimUnavailableError, "unavailable"),
    (SearchBusyError, "busy"),
    (MatchTooLongError, "match_too_long"),
    (PatternTooCostlyError, "pattern_too_costly"),
)


def search_outcome(exc: BaseException) -> str:
    """A failed search's span outcome, from what it raised."""
    return next((name for kind, name in _SEARCH_OUTCOMES if isinstance(exc, kind)), "failed")


def check_ttl(ttl_seconds: int) -> None:
    """A TTL is a positive whole number of seconds (a `ConfigurationError`, a ValueError)."""
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
        raise ConfigurationError(f"ttl_seconds must be a positive integer, got {ttl_seconds!r}")
