"""The search engine behind `search_result`: a pattern over a claim streamed in pieces, in
bounded memory, with the same matches as over the whole text. docs/reading.md
("`search_result`: searching inside a claim") gives the rules the model sees; here is how
they hold:

- A match is accepted only once text still to come cannot change it. A pattern whose try
  reads fewer than `_CARRY` characters (`reach`) is settled once `_CARRY` characters follow
  it. Any other regex is settled up to the first position where a try of it ran into the end
  of the buffer (`_matching.first_unsettled`); the text from there is held until the next
  pieces settle it, up to `MAX_HELD_CHARS`, past which the search stops (`MatchTooLongError`)
  rather than lose or cut a match.
- Offsets are characters of the claim; lines are counted as the pieces pass. Empty matches
  are not matches.
- A regex is granted `REGEX_SECONDS` of CPU time (`_matching`), plus `_SECONDS_PER_CHAR`
  for each character streamed (a fast engine's pace, so an honest pattern never runs short),
  or `PROBED_SECONDS_PER_CHAR` when it is probed. A literal is never stopped: its matches
  past the page are counted by the engine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import regex

from ._matching import (
    CpuBudget,
    PatternTooCostlyError,
    SearchBusyError,
    compile_regex,
    count_within,
    first_unsettled,
    is_literal,
    matches,
    reach,
    search_slot,
    settling_probe,
)

__all__ = [
    "MAX_HELD_CHARS",
    "MAX_MATCHES",
    "MAX_PATTERN_CHARS",
    "PROBED_SECONDS_PER_CHAR",
    "REGEX_SECONDS",
    "SNIPPET_CHARS",
    "Match",
    "MatchTooLongError",
    "PatternError",
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
MAX_HELD_CHARS = 2 * 1024 * 1024
"""Text a regex's unsettled match may hold back (at most 8 MiB of `str`, beside a piece)."""
_CONTEXT = SNIPPET_CHARS
REGEX_SECONDS = 0.5
_SECONDS_PER_CHAR = 5e-9
PROBED_SECONDS_PER_CHAR = 1.5e-7  # the probe's partial matching runs at about 100 ns a char


class MatchTooLongError(Exception):
    """A regex's match may run longer than search holds at once: it cannot be found exactly."""

    def __init__(self, chars: int) -> None:
        super().__init__(f"a match may run longer than {chars} characters")
        self.chars = chars


class PatternError(ValueError):
    """A pattern no search can run: not a valid regular expression, or of a length out of
    bounds (the message says which, never quoting the pattern)."""


@dataclass(frozen=True, slots=True)
class Match:
    offset: int
    line: int
    """1-based; a line ends at `\\n`."""
    snippet: str

    def __repr__(self) -> str:  # the snippet is tool content: never in a repr
        return f"Match(offset={self.offset}, line={self.line}, snippet_chars={len(self.snippet)})"


@dataclass(frozen=True, slots=True)
class SearchResult:
    matches: tuple[Match, ...]
    total_matches: int
    next_offset: int | None

    def to_json(self, rewrite: Callable[[str], str]) -> str:
        """The answer as the model reads it, each snippet through `rewrite` (the result
        boundary's: a snippet is tool content)."""
        return json.dumps(
            {
                "matches": [
                    {"offset": m.offset, "line": m.line, "snippet": rewrite(m.snippet)}
                    for m in self.matches
                ],
                "total_matches": self.total_matches,
                "next_offset": self.next_offset,
            },
            ensure_ascii=False,
        )


def compile_pattern(pattern: str, *, is_regex: bool, ignore_case: bool) -> regex.Pattern[str]:
    """The compiled pattern; `PatternError` (with the engine's reason) for an invalid regex,
    or a pattern empty or longer than `MAX_PATTERN_CHARS`."""
    if not 0 < len(pattern) <= MAX_PATTERN_CHARS:
        raise PatternError(f"pattern: give 1 to {MAX_PATTERN_CHARS} characters")
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        compiled = compile_regex(pattern if is_regex else regex.escape(pattern), flags)
        if is_regex:  # the search's probe nests the pattern once more: refused here too
            settling_probe(compiled)
    except ValueError as exc:
        raise PatternError(f"pattern: {exc}") from None
    return compiled


def _snippet(buffer: str, start: int, end: int) -> str:
    """The lines the match [start, end) is on, as `grep` shows them, when they fit in
    SNIPPET_CHARS; else SNIPPET_CHARS of them with the match centred. A match that begins
    (or ends) with a line break begins (or ends) its snippet there."""
    if end - start >= SNIPPET_CHARS:
        return buffer[start : start + SNIPPET_CHARS]
    low, high = max(0, start - SNIPPET_CHARS), min(len(buffer), end + SNIPPET_CHARS)
    first = start if buffer[start] == "\n" else (buffer.rfind("\n", low, start) + 1 or low)
    last = end if buffer[end - 1] == "\n" else buffer.find("\n", end, high)
    last = high if last < 0 else last
    if last - first <= SNIPPET_CHARS:
        return buffer[first:last]
    before = (SNIPPET_CHARS - (end - start)) // 2
    first = max(first, min(start - before, last - SNIPPET_CHARS))
    return buffer[first : first + SNIPPET_CHARS]


def search_text(
    pieces: Iterable[str], pattern: regex.Pattern[str], *, offset: int = 0
) -> SearchResult:
    """Search text given in consecutive pieces; see the module docstring for the rules."""
    literal = is_literal(pattern)
    budget = None if literal else CpuBudget(REGEX_SECONDS)
    # A try that reads less than the carry is settled by it; a longer one is probed for.
    probe = None if literal or reach(pattern, within=_CARRY) else settling_probe(pattern)
    per_char = _SECONDS_PER_CHAR if probe is None else PROBED_SECONDS_PER_CHAR
    found: list[Match] = []
    total = 0
    last_end: int | None = None  # end of the last match returned
    more = False  # a match after the page
    buffer, base = "", 0  # buffer[i] is character base + i of the claim
    line = 1  # the line buffer[0] is on
    resume = 0  # matches starting before this are settled
    iterator = iter(pieces)
    final = False
    while not final:
        piece = next(iterator, None)
        final = piece is None
        buffer += piece or ""
        if budget is not None:
            budget.granted += len(piece or "") * per_char
        if final:
            settled_until = base + len(buffer)
        elif probe is None or budget is None:  # no try reads as far as the carry
            settled_until = base + len(buffer) - _CARRY
        else:
            settled_until = base + first_unsettled(probe, buffer, resume - base, budget)
        if settled_until <= resume:
            _check_held(base + len(buffer) - resume)
            continue  # too little text after `resume` to settle anything yet
        deferred = False
        if budget is None and resume < offset:  # a literal's matches before the page: counted
            counted, last = count_within(
                pattern, buffer, resume - base, min(offset, settled_until) - base
            )
            total, resume = total + counted, base + last
        counted_to, match_line = 0, line  # each character counted once for the line numbers
        for m in matches(pattern, buffer, resume - base, budget):
            start, end = base + m.start(), base + m.end()
            # What text to come may change waits for it: a match that may go on past the
            # carry, or (probed) one from where a try first ran into the end.
            if not final and (end > settled_until if probe is None else start >= settled_until):
                resume, deferred = start, True
                break
            resume = end
            total += 1
            if start < offset:
                continue
            if len(found) < MAX_MATCHES:
                match_line += buffer.count("\n", counted_to, m.start())
                counted_to = m.start()
                found.append(Match(start, match_line, _snippet(buffer, m.start(), m.end())))
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
        if not final:
            _check_held(base + len(buffer) - resume)
        # Keep the unsettled tail, and the context its snippets may need.
        keep_from = max(0, resume - base - _CONTEXT)
        line += buffer.count("\n", 0, keep_from)
        buffer, base = buffer[keep_from:], base + keep_from
    return SearchResult(tuple(found), total, last_end if more else None)


def _check_held(chars: int) -> None:
    """A regex whose match may still be going on is waited for, up to `MAX_HELD_CHARS`."""
    if chars > MAX_HELD_CHARS:
        raise MatchTooLongError(MAX_HELD_CHARS)
