"""The reading modes by offset, by line and from the end, each a function of a claim's
ranges (`_ranges`), and the arguments they take (checked before any request).

Requests per read, in ranges (each store's cost per range is its own; the S3 store's is one
ranged GET, `s3claim/s3`):

- `by_offset`: one text range.
- `by_line`: line 1 is one text range; any other line is two: the index range holding the
  line's start, then the text from there. A line past the last is answered by the first.
- `from_end`: one range from the text's end.
- `by_path` (`_json_path`): at most three.

A window read by line is cut after its last break, so it holds whole lines; a line longer
than the window is returned from its start, and the reader goes on by offset. A window read
from the end starts after the first break in it, when it holds one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from s3claim.errors import ClaimStoreError

from ._lines import ENTRY_BYTES, LineWindow, NoLineIndexError, count_lines
from ._ranges import ClaimRanges

__all__ = [
    "DEFAULT_FETCH_CHARS",
    "Window",
    "by_line",
    "by_offset",
    "check_line",
    "check_window",
    "from_end",
]

DEFAULT_FETCH_CHARS = 4096
"""One window: enough to read on, small enough not to undo the check-in."""

_ENTRY = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class Window:
    """`text` is content[offset:offset + limit], in characters; `next_offset` is None at the end.

    `total_lines` is the claim's line count (a line ends at `\\n`; see `count_lines`).
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


def by_offset(ranges: ClaimRanges, offset: int, limit: int) -> Window:
    """content[offset:offset + limit]; at or past the end, empty at `offset`."""
    check_window(offset, limit)
    part = ranges.text(offset, offset + limit)
    facts = part.facts
    return Window.of(
        part.text, offset=part.offset, total_chars=facts.chars, total_lines=facts.lines
    )


def by_line(ranges: ClaimRanges, line: int, limit: int) -> LineWindow:
    """Whole lines from the start of `line` (from 1), up to `limit` characters; a line longer
    than that from its start. Past the last line: empty, at the end."""
    check_line(line, limit)
    start = 0
    if line > 1:
        entry = ranges.index(ENTRY_BYTES * (line - 2), ENTRY_BYTES * (line - 1))
        facts = entry.facts
        if line > facts.lines:
            return LineWindow("", facts.chars, facts.chars, facts.lines, None)
        if entry.data is None:  # lines past line 1, and no index to find them by
            raise NoLineIndexError
        if len(entry.data) != ENTRY_BYTES:
            raise ClaimStoreError("read by line: the line index ends early", reason="damaged")
        (start,) = _ENTRY.unpack(entry.data)
        if not 0 < start < facts.chars:
            raise ClaimStoreError("read by line: a line starts past the claim", reason="damaged")
    part = ranges.text(start, start + limit)
    text, facts, whole = part.text, part.facts, True
    if not text:
        return LineWindow("", facts.chars, facts.chars, facts.lines, None)
    if part.offset + len(text) < facts.chars:  # more follows: keep whole lines only
        cut = text.rfind("\n")
        if cut >= 0:
            text = text[: cut + 1]
        else:
            whole = False  # one line longer than the window: its start, on by offset
    return LineWindow(text, part.offset, facts.chars, facts.lines, line, whole)


def from_end(ranges: ClaimRanges, limit: int) -> LineWindow:
    """The last `limit` characters at most, from a line's start when they hold one."""
    check_window(0, limit)
    # One character more than the window: whether it starts a line is the one before it.
    part = ranges.tail(limit + 1)
    text, offset, facts = part.text, part.offset, part.facts
    if len(text) > limit:
        before, text, offset = text[0], text[1:], offset + 1
        if before != "\n":
            cut = text.find("\n")
            if 0 <= cut < len(text) - 1:  # a line starts inside the window: begin there
                text, offset = text[cut + 1 :], offset + cut + 1
    first = max(1, facts.lines - count_lines(text) + 1)
    return LineWindow(text, offset, facts.chars, facts.lines, first)
