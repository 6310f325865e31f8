"""A claim's index: what a reader needs besides the text, as one run of bytes.

    [line starts][JSON listings and tables][JSON head][trailer]

- The line starts (`_lines.line_index`) open it, so the start of line N sits where a reader
  that knows nothing but N looks: bytes 4*(N-2) to 4*(N-1).
- The JSON structure index (`_json_index`) closes it, its head last, so a reader that knows
  nothing but a pointer finds the head with one read of the index's end.
- The trailer says how long the head is (0: the claim is not JSON).

A claim of one line that is not JSON has no index. Built once at check-in, the same bytes in
every store (memory keeps them beside the text; S3 in sealed blocks beside the claim), and
read by the engine in ranges. A store's caps count them (`index_bytes`).

A store with a cap builds it under a budget (the room left for it): the line starts are
counted before any is found (4 bytes a line after the first, `str.count` in C), and the JSON
index's walk stops once it holds more than is left (`_json_index`), so a claim refused as
`IndexTooLargeError` never had its index built whole; one that fits gets the same bytes.
"""

from __future__ import annotations

import struct

from ._json_index import HEAD_BYTES, IndexTooLargeError, json_index
from ._lines import ENTRY_BYTES, MAX_INDEXED_CHARS, line_index

__all__ = ["TAIL_BYTES", "TRAILER_BYTES", "IndexTooLargeError", "build_index", "head_of"]

_TRAILER = struct.Struct("<8sQ")  # magic, the JSON head's length
_MAGIC = b"s3cidx5\x00"
TRAILER_BYTES = _TRAILER.size
TAIL_BYTES = HEAD_BYTES + TRAILER_BYTES
"""What a read by path asks of the index's end: the longest head and the trailer."""


def build_index(text: str, *, budget: int | None = None) -> bytes | None:
    """The index of `text`, or None when it needs none (one line, not JSON);
    `IndexTooLargeError` (the least it would take) when it would take more than `budget`
    bytes, found before it is built."""
    left = budget
    if budget is not None:
        starts = text.count("\n") - text.endswith("\n") if len(text) < MAX_INDEXED_CHARS else 0
        least = ENTRY_BYTES * starts + TRAILER_BYTES if starts else 0
        if least > budget:
            raise IndexTooLargeError(least)
        left = budget - ENTRY_BYTES * starts - TRAILER_BYTES  # a JSON index has a trailer too
    lines = line_index(text)
    try:
        found = json_index(text, base=0 if lines is None else len(lines), budget=left)
    except IndexTooLargeError as exc:
        raise IndexTooLargeError(len(lines or b"") + exc.at_least + TRAILER_BYTES) from None
    if lines is None and found is None:
        return None
    tables, head = found or (b"", b"")
    index = b"".join((lines or b"", tables, head, _TRAILER.pack(_MAGIC, len(head))))
    if budget is not None and len(index) > budget:  # listings, collisions: more than the least
        raise IndexTooLargeError(len(index))
    return index


def head_of(tail: bytes) -> bytes | None:
    """The JSON head from the last bytes of an index (up to `TAIL_BYTES`); None when the
    claim is not JSON; `ValueError` when the bytes are not an index's end."""
    if len(tail) < TRAILER_BYTES:
        raise ValueError("the index ends before its trailer")
    magic, length = _TRAILER.unpack_from(tail, len(tail) - TRAILER_BYTES)
    if magic != _MAGIC or length > len(tail) - TRAILER_BYTES:
        raise ValueError("not the end of an s3claim index")
    if not length:
        return None
    return tail[len(tail) - TRAILER_BYTES - length : len(tail) - TRAILER_BYTES]
