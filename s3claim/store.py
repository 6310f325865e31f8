"""The store protocols, and the base every store of ours is built on.

`ClaimCheckStore` is all a claim check needs: put, fetch, forget. `AsyncClaimCheckStore` is
the same three for coroutines (a sibling, not a mode flag). The other protocols name what a
store may offer beyond them: a stream for search, reads by line and path, hand-off, and a
listing of a tenant's or a run's claims (`ListableStore`, each claim a `ClaimInfo`).

A claim's **check-in** is the write that made it: a repeat put of the same text in the same
run is the same handle and refreshes that check-in (it keeps its id, `new_check_in_id`),
while the same text checked in after an erasure is a check-in of its own. A read may name the
check-in it expects (`check_in_id=`, what a link does): any other is unavailable.

`RangedStore` is how a store offers all of them at once: it serves each claim as ranges of
its text and of its index (`ClaimRanges`; the obspec `get_range` shape), and gets every
reading mode from the one reading engine (`s3claim._reading`): windows by offset, lines,
the end, JSON paths and the stream search reads. The memory store and the S3 store are both
built on it, so a new store gets every mode by offering ranges (and building its index at
check-in with `build_index`). Each read is one span (`s3claim.fetch`), opened here.
"""

from __future__ import annotations

import inspect
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from s3claim._reading import (
    DEFAULT_FETCH_CHARS,
    AsyncClaimRanges,
    ClaimRanges,
    Facts,
    IndexPart,
    LineWindow,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathRead,
    Plan,
    TextPart,
    Window,
    arun,
    at_most_lines,
    build_index,
    count_lines,
    end_plan,
    line_plan,
    path_plan,
    run,
    window_plan,
)
from s3claim.errors import ClaimUnavailableError, ConfigurationError
from s3claim.handles import is_handle
from s3claim.scope import Scope
from s3claim.telemetry import Operation, fetch_operation

__all__ = [
    "CHECK_IN_ID_BYTES",
    "DEFAULT_FETCH_CHARS",
    "MAX_TOOL_NAME_BYTES",
    "NOWHERE",
    "AsyncClaimCheckStore",
    "AsyncClaimRanges",
    "AsyncListableStore",
    "CheckIn",
    "ClaimCheckStore",
    "ClaimInfo",
    "ClaimRanges",
    "Facts",
    "HandOffStore",
    "IndexPart",
    "LineReadableStore",
    "LineWindow",
    "ListableStore",
    "NoIndexError",
    "NoLineIndexError",
    "PathError",
    "PathRead",
    "PathReadableStore",
    "Plan",
    "RangedStore",
    "SearchableStore",
    "TextPart",
    "Window",
    "arun",
    "at_most_lines",
    "build_index",
    "check_ttl",
    "count_lines",
    "end_plan",
    "finish",
    "is_check_in_id",
    "line_plan",
    "new_check_in_id",
    "path_plan",
    "read_outcome",
    "recorded_tool",
    "takes_tool",
    "window_plan",
]

_T = TypeVar("_T", Window, LineWindow, PathRead)


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
    """One claim as a store lists it (`ListableStore.claims`): what it is, never its content.

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


@runtime_checkable
class ListableStore(Protocol):
    """A store that lists the claims of a tenant, or of one run, without reading content.

    For an application to show what an agent stored, and offer to erase it (`forget`).
    Such a store's `put` takes `tool=` (`put(scope, content, *, ttl_seconds, tool=None)`),
    which `ClaimCheck.check_in` passes, and lists it. A same-content put in the same run is
    the same claim: the first check-in's tool is the one listed.
    """

    def claims(self, *, tenant: str, run: str | None = None) -> Iterator[ClaimInfo]: ...


@runtime_checkable
class AsyncListableStore(Protocol):
    """`ListableStore` for coroutines: the same listing, gathered into a list."""

    async def claims(self, *, tenant: str, run: str | None = None) -> list[ClaimInfo]: ...


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


def takes_tool(put: Callable[..., Any]) -> bool:
    """Whether a store's `put` takes the `tool` keyword: a store written before it (or a
    subclass overriding `put` without it) is called as it was, and lists no tool."""
    try:
        parameter = inspect.signature(put).parameters.get("tool")
    except (TypeError, ValueError):  # no signature to read: call it as before
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


@runtime_checkable
class SearchableStore(Protocol):
    """A store that can stream a claim's text, start to end, in pieces.

    `scan` checks the handle, the scope and the expiry exactly as `fetch` does, raising
    `ClaimUnavailableError` (before yielding anything) for every handle `fetch` refuses.
    """

    def scan(self, scope: Scope, handle: str) -> Iterator[str]: ...


@runtime_checkable
class LineReadableStore(Protocol):
    """A store that reads a claim by line and from its end.

    Both check the handle, scope and expiry exactly as `fetch` does. `read_line` starts at
    the beginning of line `line` (1-based) and holds whole lines, up to `limit` characters;
    `read_end` is the claim's last `limit` characters at most, from a line start when they
    hold one. A line past the last reads empty.
    """

    def read_line(self, scope: Scope, handle: str, line: int, *, limit: int) -> LineWindow: ...

    def read_end(self, scope: Scope, handle: str, *, limit: int) -> LineWindow: ...


@runtime_checkable
class HandOffStore(Protocol):
    """A store that can make a claim readable in another run of the same tenant.

    `hand_off` checks the handle in `scope` exactly as `fetch` does (`ClaimUnavailableError`),
    and returns the claim's handle in `to`, readable there for `ttl_seconds` whatever
    becomes of the original. The content does not pass through the caller's process.
    """

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str: ...


@runtime_checkable
class PathReadableStore(Protocol):
    """A store that reads JSON claims by JSON Pointer.

    `read_path` checks the handle, scope and expiry exactly as `fetch` does; it raises
    `PathError` for a pointer to nothing and `NoIndexError` for a claim that is not JSON.
    """

    def read_path(self, scope: Scope, handle: str, pointer: str, *, limit: int) -> PathRead: ...


class RangedStore(ABC):
    """A store that serves its claims as ranges, and so reads them every way.

    A subclass implements `ranges` (and `put`, `forget`); every read below checks the handle's
    form first (a malformed one never reaches the store) and is one `s3claim.fetch` span.
    Each takes `check_in_id`: given, only that check-in of the claim is read, any other is
    unavailable, checked on what each range reads anyway (a link's reads; no request more).
    """

    @abstractmethod
    def ranges(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> ClaimRanges:
        """The claim `handle` names, as ranges (a well-formed handle: the caller checked).

        Making it costs nothing; each range checks the claim as `fetch` does
        (`ClaimUnavailableError`), and `stream` does so before it returns; with
        `check_in_id`, a claim of another check-in is unavailable too.
        """

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
        return self._read(scope, handle, offset, window_plan(offset, limit), check_in_id)

    def read_line(
        self,
        scope: Scope,
        handle: str,
        line: int,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        check_in_id: str | None = None,
    ) -> LineWindow:
        """Whole lines from the start of `line` (`LineReadableStore`)."""
        return self._read(scope, handle, None, line_plan(line, limit), check_in_id)

    def read_end(
        self,
        scope: Scope,
        handle: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        check_in_id: str | None = None,
    ) -> LineWindow:
        """The last window, from a line's start when it holds one (`LineReadableStore`)."""
        return self._read(scope, handle, None, end_plan(limit), check_in_id)

    def read_path(
        self,
        scope: Scope,
        handle: str,
        pointer: str,
        *,
        limit: int = DEFAULT_FETCH_CHARS,
        check_in_id: str | None = None,
    ) -> PathRead:
        """The value at a JSON Pointer, and its first members (`PathReadableStore`)."""
        return self._read(scope, handle, 0, path_plan(pointer, limit=limit), check_in_id)

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        """The claim's text in pieces (`SearchableStore`); refuses as `fetch` does."""
        if not is_handle(handle):
            raise ClaimUnavailableError
        return self._ranges(scope, handle, check_in_id).stream()

    def _ranges(self, scope: Scope, handle: str, check_in_id: str | None) -> ClaimRanges:
        # Named only when a read names it: a subclass's `ranges` written before it still
        # serves every other read.
        if check_in_id is None:
            return self.ranges(scope, handle)
        return self.ranges(scope, handle, check_in_id=check_in_id)

    def _read(
        self,
        scope: Scope,
        handle: str,
        offset: int | None,
        plan: Plan[_T],
        check_in_id: str | None = None,
    ) -> _T:
        known = handle if is_handle(handle) else None
        # A malformed handle is refused at the first range, after the plan has checked its
        # own arguments: it never reaches the store.
        ranges = self._ranges(scope, known, check_in_id) if known is not None else NOWHERE
        with fetch_operation(self, scope, handle=known, offset=offset) as op:
            try:
                answer = run(plan, ranges)
            except Exception as exc:
                op.outcome = read_outcome(exc)
                raise
            finish(op, answer)
            return answer


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


def finish(op: Operation, answer: Window | LineWindow | PathRead) -> None:
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


def check_ttl(ttl_seconds: int) -> None:
    """A TTL is a positive whole number of seconds (a `ConfigurationError`, a ValueError)."""
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
        raise ConfigurationError(f"ttl_seconds must be a positive integer, got {ttl_seconds!r}")
