"""The store protocols, side by side: put, fetch, forget; their async twin; and scan.

`ClaimCheckStore` is all a claim check needs. `AsyncClaimCheckStore` is the same three
operations for coroutines (a sibling, not a mode flag). `SearchableStore` is the one extra
capability a store may have: streaming a claim's text, which `search_result` reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from s3claim.errors import ConfigurationError
from s3claim.scope import Scope

if TYPE_CHECKING:
    from s3claim._json_path import PathRead
    from s3claim._lines import LineWindow

__all__ = [
    "DEFAULT_FETCH_CHARS",
    "AsyncClaimCheckStore",
    "ClaimCheckStore",
    "HandOffStore",
    "LineReadableStore",
    "PathReadableStore",
    "SearchableStore",
    "Window",
]

DEFAULT_FETCH_CHARS = 4096
"""One window: enough to read on, small enough not to undo the check-in."""


@dataclass(frozen=True, slots=True)
class Window:
    """`text` is content[offset:offset + limit], in characters; `next_offset` is None at the end.

    `total_lines` is the claim's line count (`s3claim._lines`) when the store knows it: an S3
    claim checked in before lines were counted does not.
    """

    text: str
    offset: int
    total_chars: int
    next_offset: int | None
    total_lines: int | None = None

    @classmethod
    def of(
        cls, text: str, *, offset: int, total_chars: int, total_lines: int | None = None
    ) -> Window:
        end = offset + len(text)
        return cls(text, offset, total_chars, end if end < total_chars else None, total_lines)

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return (
            f"Window(offset={self.offset}, chars={len(self.text)}, "
            f"total_chars={self.total_chars}, next_offset={self.next_offset})"
        )


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


@runtime_checkable
class SearchableStore(Protocol):
    """A store that can stream a claim's text, start to end, in pieces.

    `scan` checks the handle, the scope and the expiry exactly as `fetch` does, raising
    `ClaimUnavailableError` (before yielding anything) for every handle `fetch` refuses.
    """

    def scan(self, scope: Scope, handle: str) -> Iterator[str]: ...


@runtime_checkable
class LineReadableStore(Protocol):
    """A store that reads a claim by line and from its end (`s3claim._lines`).

    Both check the handle, scope and expiry exactly as `fetch` does. `read_line` starts at
    the beginning of line `line` (1-based) and holds whole lines, up to `limit` characters;
    `read_end` is the claim's last `limit` characters at most, from a line start when they
    hold one. A line past the last reads empty; `NoLineIndexError` when the store cannot
    find the line (an S3 claim checked in before line indexes, past the bounded scan).
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
    """A store that keeps a structure index of JSON claims and reads them by JSON Pointer.

    `read_path` checks the handle, scope and expiry exactly as `fetch` does; it raises
    `PathError` for a pointer to nothing and `NoIndexError` for a claim without an index.
    """

    def read_path(self, scope: Scope, handle: str, pointer: str, *, limit: int) -> PathRead: ...


def check_window(offset: int, limit: int) -> None:
    """Refuse window arguments no store can serve (a developer mistake, so it raises)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def check_line(line: int, limit: int) -> None:
    """Refuse line arguments no store can serve (a developer mistake, so it raises)."""
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise ValueError(f"line must be a positive integer (lines count from 1), got {line!r}")
    check_window(0, limit)


def check_ttl(ttl_seconds: int) -> None:
    """A TTL is a positive whole number of seconds (a `ConfigurationError`, a ValueError)."""
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
        raise ConfigurationError(f"ttl_seconds must be a positive integer, got {ttl_seconds!r}")
