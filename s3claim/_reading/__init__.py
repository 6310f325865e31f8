"""The reading engine: every way to read a claim, written once, above every store.

A store serves one claim as ranges of its text and of its index (`_ranges.ClaimRanges`),
built at check-in by `_index.build_index`; the modes are functions of those ranges
(`_plans`, `_json_path`). Search (`_search`, `_matching`) reads a claim's text
as a stream, and the head and tail of a preview (`_head`) are cut here too, as are the
lines it picks and the JSON root it lists (`_previews`). Only the
top-level modules of s3claim import this package: `s3claim.store` offers it to stores.
"""

from ._address import MAX_DIGITS, Address, AddressError, Read, Way
from ._head import extract_head, extract_tail
from ._index import IndexTooLargeError, build_index
from ._json_path import NoIndexError, PathError, PathRead, by_path, escape
from ._lines import LineWindow, NoLineIndexError, at_most_lines, count_lines
from ._matching import (
    MAX_CONCURRENT_SEARCHES,
    MAX_SEARCHES_PER_TENANT,
    PatternTooCostlyError,
    SearchBusyError,
    search_slot,
)
from ._plans import DEFAULT_FETCH_CHARS, Window, by_line, by_offset, from_end
from ._previews import (
    LINE_CHARS,
    Pick,
    Picks,
    compile_pick_pattern,
    pick_lines,
    read_root,
    telling_end,
)
from ._ranges import ClaimRanges, Facts, IndexPart, TextPart
from ._search import (
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    SNIPPET_CHARS,
    MatchTooLongError,
    PatternError,
    SearchResult,
    compile_pattern,
    search_text,
)

__all__ = [
    "DEFAULT_FETCH_CHARS",
    "LINE_CHARS",
    "MAX_CONCURRENT_SEARCHES",
    "MAX_DIGITS",
    "MAX_MATCHES",
    "MAX_PATTERN_CHARS",
    "MAX_SEARCHES_PER_TENANT",
    "SNIPPET_CHARS",
    "Address",
    "AddressError",
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
    "Pick",
    "Picks",
    "Read",
    "SearchBusyError",
    "SearchResult",
    "TextPart",
    "Way",
    "Window",
    "at_most_lines",
    "build_index",
    "by_line",
    "by_offset",
    "by_path",
    "compile_pattern",
    "compile_pick_pattern",
    "count_lines",
    "escape",
    "extract_head",
    "extract_tail",
    "from_end",
    "pick_lines",
    "read_root",
    "search_slot",
    "search_text",
    "telling_end",
]
