"""The reading modes, each written once as a plan over a claim's ranges (`_ranges`).

Requests per read, in ranges (each store's cost per range is its own; the S3 store's is one
ranged GET, `s3claim/s3`):

- `window_plan`: one text range.
- `line_plan`: line 1 is one text range; any other line is two: the index range holding the
  line's start, then the text from there. A line past the last is answered by the first.
- `end_plan`: one range from the text's end.
- `path_plan` (`_json_path`): at most three.
"""

from __future__ import annotations

import struct

from s3claim.errors import ClaimStoreError

from ._lines import (
    ENTRY_BYTES,
    LineWindow,
    NoLineIndexError,
    at_end,
    at_line,
    past_last_line,
)
from ._ranges import Plan, TextPart, index_range, text_range, text_tail
from ._window import Window, check_line, check_window

__all__ = ["end_plan", "line_plan", "window_plan"]

_ENTRY = struct.Struct("<I")


def _window(part: TextPart) -> Window:
    facts = part.facts
    return Window.of(
        part.text, offset=part.offset, total_chars=facts.chars, total_lines=facts.lines
    )


def window_plan(offset: int, limit: int) -> Plan[Window]:
    """content[offset:offset + limit]; at or past the end, empty at `offset`."""
    check_window(offset, limit)
    return _window((yield from text_range(offset, offset + limit)))


def line_plan(line: int, limit: int) -> Plan[LineWindow]:
    """Whole lines from the start of `line` (from 1), up to `limit` characters; a line longer
    than that from its start. Past the last line: empty, at the end."""
    check_line(line, limit)
    if line > 1:
        entry = yield from index_range(ENTRY_BYTES * (line - 2), ENTRY_BYTES * (line - 1))
        facts = entry.facts
        if line > facts.lines:
            return past_last_line(facts.chars, facts.lines)
        if entry.data is None:  # lines past line 1, and no index to find them by
            raise NoLineIndexError
        if len(entry.data) != ENTRY_BYTES:
            raise ClaimStoreError("read by line: the line index ends early", reason="damaged")
        (start,) = _ENTRY.unpack(entry.data)
        if not 0 < start < facts.chars:
            raise ClaimStoreError("read by line: a line starts past the claim", reason="damaged")
    else:
        start = 0
    window = _window((yield from text_range(start, start + limit)))
    if not window.text:
        return past_last_line(window.total_chars, window.total_lines)
    return at_line(window, line)


def end_plan(limit: int) -> Plan[LineWindow]:
    """The last `limit` characters at most, from a line's start when they hold one."""
    check_window(0, limit)
    # One character more than the window: whether it starts a line is the one before it.
    return at_end(_window((yield from text_tail(limit + 1))), limit)
