"""The search engine behind `search_result`: a pattern over a claim streamed in pieces.

The store streams the claim's text (`SearchableStore.scan`: the S3 store with one GET, read
in pieces), and the pattern runs over it here, beside the store, in bounded memory:

- Pieces are scanned in a buffer that keeps the last `_CARRY` characters of the one before,
  so a match that spans two pieces is found whole. A match is accepted only once the buffer
  holds `_CARRY` characters after it, so matches of up to `_CARRY` characters are exact;
  a longer one (only a regex can match that much) may be found cut at a piece boundary.
- Offsets are characters of the claim, the unit `fetch_result` reads in, whatever width the
  store keeps the text at.
- `total_matches` counts every match in the claim, so it is the same on every page;
  `next_offset` continues after the last match returned. Empty matches are not matches.
- A regex's matching is budgeted in CPU time of the searching thread (`s3claim._matching`):
  `_REGEX_SECONDS`, plus `_SECONDS_PER_CHAR` for each character the store streams (a fast
  engine's pace, so an honest pattern never runs short on a large claim). The store's I/O
  does not count, nor does waiting for a core. A pattern that backtracks catastrophically
  uses up its budget on the first piece and stops with `pattern_too_costly` instead of
  holding the run. A literal is never stopped: the matches past the page are counted by the
  engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import regex

from s3claim._boundary import neutralise
from s3claim._matching import (
    CpuBudget,
    PatternTooCostlyError,
    SearchBusyError,
    count_within,
    is_literal,
    matches,
    search_slot,
)

__all__ = [
    "MAX_MATCHES",
    "MAX_PATTERN_CHARS",
    "SNIPPET_CHARS",
    "Match",
    "PatternTooCostlyError",
    "SearchBusyError",
    "SearchResult",
    "compile_pattern",
    "search_slot",
    "search_text",
]

MAX_MATCHES = 20
SNIPPET_CHARS = 200
MAX_PATTERN_CHARS = 1000
_CARRY = 64 * 1024
_CONTEXT = SNIPPET_CHARS
_REGEX_SECONDS = 0.5
_SECONDS_PER_CHAR = 5e-9


@dataclass(frozen=True, slots=True)
class Match:
    offset: int
    snippet: str

    def __repr__(self) -> str:  # the snippet is tool content: never in a repr
        return f"Match(offset={self.offset}, snippet_chars={len(self.snippet)})"


@dataclass(frozen=True, slots=True)
class SearchResult:
    matches: tuple[Match, ...]
    total_matches: int
    next_offset: int | None

    def to_json(self) -> str:
        return json.dumps(
            {
                "matches": [{"offset": m.offset, "snippet": m.snippet} for m in self.matches],
                "total_matches": self.total_matches,
                "next_offset": self.next_offset,
            },
            ensure_ascii=False,
        )


def compile_pattern(pattern: str, *, is_regex: bool, ignore_case: bool) -> regex.Pattern[str]:
    """The compiled pattern; `ValueError` (with the engine's reason) for an invalid regex."""
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        return regex.compile(pattern if is_regex else regex.escape(pattern), flags)
    except regex.error as exc:  # "missing ) at position 4": the reason, never the pattern
        raise ValueError(f"pattern: not a valid regular expression ({exc})") from None


def _snippet(buffer: str, start: int, end: int) -> str:
    """At most SNIPPET_CHARS of `buffer` around [start, end), the match centred."""
    if end - start >= SNIPPET_CHARS:
        return buffer[start : start + SNIPPET_CHARS]
    before = (SNIPPET_CHARS - (end - start)) // 2
    first = max(0, start - before)
    return buffer[first : first + SNIPPET_CHARS]


def search_text(
    pieces: Iterable[str], pattern: regex.Pattern[str], *, offset: int = 0
) -> SearchResult:
    """Search text given in consecutive pieces; see the module docstring for the rules."""
    budget = None if is_literal(pattern) else CpuBudget(_REGEX_SECONDS)
    found: list[Match] = []
    total = 0
    last_end: int | None = None  # end of the last match returned
    more = False  # a match after the page
    buffer, base = "", 0  # buffer[i] is character base + i of the claim
    resume = 0  # matches starting before this are settled
    iterator = iter(pieces)
    final = False
    while not final:
        piece = next(iterator, None)
        final = piece is None
        buffer += piece or ""
        if budget is not None:
            budget.grant(len(piece or "") * _SECONDS_PER_CHAR)
        settled_until = base + len(buffer) - (0 if final else _CARRY)
        if settled_until <= resume:
            continue  # too little text after `resume` to settle anything yet
        deferred = False
        if budget is None and resume < offset:  # a literal's matches before the page: counted
            counted, last = count_within(
                pattern, buffer, resume - base, min(offset, settled_until) - base
            )
            total, resume = total + counted, base + last
        for m in matches(pattern, buffer, resume - base, budget):
            start, end = base + m.start(), base + m.end()
            if not final and end > settled_until and start >= settled_until - _CARRY:
                resume, deferred = start, True  # it may go on: the next round settles it
                break
            resume = end
            total += 1
            if start < offset:
                continue
            if len(found) < MAX_MATCHES:
                found.append(Match(start, neutralise(_snippet(buffer, m.start(), m.end()))))
                last_end = end
            else:
                more = True
                if budget is None:  # a literal with a full page: the rest is only counted
                    counted, last = count_within(
                        pattern, buffer, resume - base, settled_until - base
                    )
                    total, resume = total + counted, base + last
                    crossing = None if final else pattern.search(buffer, last, concurrent=True)
                    if crossing is not None and base + crossing.start() < settled_until:
                        resume, deferred = base + crossing.start(), True
                    break
        if not deferred:
            resume = max(resume, settled_until)
        # Keep the unsettled tail, and the context its snippets may need.
        keep_from = max(0, resume - base - _CONTEXT)
        buffer, base = buffer[keep_from:], base + keep_from
    return SearchResult(tuple(found), total, last_end if more else None)
