"""A claim's lines: how they are counted, the index that finds them, the windows of them.

A line ends at `\\n` (so a `\\r\\n` is one break, its `\\r` the line's last character; a lone
`\\r` is not a break). Lines count from 1; a text of n characters has `count("\\n")` lines,
one more when it does not end in a break, and none when it is empty.

The line index is the start offset (in characters) of every line after the first, as
little-endian 32-bit integers (`ENTRY_BYTES` a line): line N starts at entry N-2. It opens a
claim's index (`s3claim._reading._index`), so a reader finds the start of any line with one
ranged read of the index. A claim of one line needs none (line 1 starts at 0), and a claim of
2**32 characters or more gets none: it reads by offset and from the end, not by line.

A window read by line or from the end (`_plans`) may be cut to a number of lines too
(`lines=K`): the first K of a read by line, the last K from the end.
"""

from __future__ import annotations

import sys
from array import array
from dataclasses import dataclass, replace

__all__ = [
    "ENTRY_BYTES",
    "MAX_INDEXED_CHARS",
    "LineWindow",
    "NoLineIndexError",
    "at_most_lines",
    "count_lines",
    "line_index",
]

ENTRY_BYTES = 4
"""Bytes of one line start in an index: a claim indexed by line is under 2**32 characters."""
MAX_INDEXED_CHARS = 2**32


class NoLineIndexError(LookupError):
    """The claim has no line index to find the line with (2**32 characters or more)."""


def count_lines(text: str) -> int:
    """Lines in `text`: one per break, and one more for a last line without a break."""
    breaks = text.count("\n")
    return breaks + (1 if text and not text.endswith("\n") else 0)


def _line_starts(text: str) -> array[int]:
    """The start of every line after the first, in characters.

    `str.find` from break to break (a memchr in C): faster than the regex engine's matches
    (a third on a log) and than a split with a running sum. Appended to the array as found,
    4 bytes a line, where a list would hold an int object of 36 a line until the end.
    """
    starts = array("I")
    add, find = starts.append, text.find
    at = find("\n") + 1
    while at:
        add(at)
        at = find("\n", at) + 1
    if starts and starts[-1] >= len(text):  # a break at the very end starts no line
        starts.pop()
    return starts


def line_index(text: str) -> memoryview | None:
    """The line index of `text` (`ENTRY_BYTES` a line after the first), a view of the array
    it was built in (no copy); None when it needs none (one line or none) or cannot have one
    (2**32 characters or more)."""
    if len(text) >= MAX_INDEXED_CHARS:
        return None
    starts = _line_starts(text)
    if not starts:  # one line (it starts at 0) or none
        return None
    if sys.byteorder == "big":  # the index is little-endian wherever it was built
        starts.byteswap()
    return memoryview(starts).cast("B")


@dataclass(frozen=True, slots=True)
class LineWindow:
    """A window read by line or from the end: where it sits in characters and in lines.

    `first_line` is the line the window starts in (None when the store does not count
    lines); `whole` is False when the window ends inside a line that goes on (a line longer
    than the window), which the reader continues by offset.
    """

    text: str
    offset: int
    total_chars: int
    total_lines: int | None
    first_line: int | None
    whole: bool = True

    @property
    def end(self) -> int:
        return self.offset + len(self.text)

    @property
    def next_offset(self) -> int | None:
        return self.end if self.end < self.total_chars else None

    @property
    def last_line(self) -> int | None:
        """The last line the window holds (or holds the start of)."""
        if self.first_line is None or not self.text:
            return None
        return self.first_line + count_lines(self.text) - 1

    @property
    def next_line(self) -> int | None:
        """The line to read next by line; None at the end, or inside a line that goes on."""
        if self.next_offset is None or not self.whole or self.last_line is None:
            return None
        return self.last_line + 1

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return (
            f"LineWindow(offset={self.offset}, chars={len(self.text)}, "
            f"total_chars={self.total_chars}, total_lines={self.total_lines}, "
            f"first_line={self.first_line}, whole={self.whole})"
        )


def at_most_lines(window: LineWindow, lines: int, *, from_end: bool) -> LineWindow:
    """At most `lines` lines of `window`: its first ones (a read by line) or, read from the
    end, its last ones; a window that holds no more is returned as it is."""
    text = window.text
    if from_end:
        at = len(text) - 1 if text.endswith("\n") else len(text)  # the last line's break
        for _ in range(lines):
            at = text.rfind("\n", 0, at)
            if at < 0:
                return window
        dropped = text[: at + 1]
        first = None if window.first_line is None else window.first_line + dropped.count("\n")
        return replace(window, text=text[at + 1 :], offset=window.offset + at + 1, first_line=first)
    at = -1
    for _ in range(lines):
        at = text.find("\n", at + 1)
        if at < 0:
            return window
    if at + 1 == len(text):
        return window
    return replace(window, text=text[: at + 1], whole=True)
