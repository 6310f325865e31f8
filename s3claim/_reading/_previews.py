"""What a preview shows beside its head and tail: lines picked by a pattern, and the members
of a JSON result's root. docs/reading.md ("Picking lines", "The root of a JSON result")
gives the rules the model sees; here is how they hold.

Picked lines (`pick_lines`):

- One pass over the result with the search engine's matching (`_matching.matches`), under
  the CPU budget `search_result` grants its slowest patterns (0.5 s and 150 ns a
  character: a 5 MB log, 1.25 s; the log preset takes about 25 ns a character); a literal
  is never stopped. The pattern is the developer's, not the model's, and runs once a
  check-in, so it takes no search slot. A
  line is a match when a match starts on it, and only its first match counts: after one,
  the pass goes on from the next line. Lines wholly inside the head or the tail are not
  counted (the model already has them); a line cut by the head's or tail's edge is.
- When more lines match than may be shown, the first half (rounded up) and the last half
  are kept, in line order: in a build log the first error is usually the cause and the
  last lines the outcome (the failed step, the exception a traceback ends with), while the
  lines between them repeat the first. The count of all the others is said, so the model
  knows to search for them. Memory stays O(K), however many lines match.
- A line longer than `LINE_CHARS` is shown cut, where the text pauses (`_head`), around the
  match, with the span shown; never re-worded.

The root listing (`read_root`): the reading engine's own answer to a read of path `""` (the
listing `fetch_result(path="")` gives, or a page of it), over the result's text and index in
memory, so it is the same whatever store holds the claim. Which members it lists, and when
it is written at all, `ClaimCheck` decides (`_root_listing`).

A log's tail (`telling_end`): beside a pick pattern, where the end starts to tell something.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

import regex

from ._head import extract_head, extract_tail
from ._index import build_index
from ._json_path import NoIndexError, PathRead, by_path
from ._matching import CpuBudget, PatternTooCostlyError, compile_regex, is_literal, matches
from ._ranges import Facts, IndexPart, TextPart
from ._search import MAX_PATTERN_CHARS, PROBED_SECONDS_PER_CHAR, REGEX_SECONDS, SNIPPET_CHARS

__all__ = [
    "LINE_CHARS",
    "Pick",
    "Picks",
    "compile_pick_pattern",
    "pick_lines",
    "read_root",
    "telling_end",
]

LINE_CHARS = SNIPPET_CHARS
"""The most of one picked line shown: as much of a line as `search_result` shows."""
_LEAD_CHARS = LINE_CHARS // 4  # of a cut line, at most this much before the match
_AFTER_BLANK = regex.compile(r"\n(?:[^\S\n]*\n)+")  # a line break, then blank lines


@dataclass(frozen=True, slots=True)
class Pick:
    """One picked line: its number (from 1), the span shown, and the line's own span
    (without its break, or the `\\r` of a `\\r\\n`)."""

    line: int
    start: int
    end: int
    line_start: int
    line_end: int
    text: str

    @property
    def whole(self) -> bool:
        return self.start == self.line_start and self.end == self.line_end

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return f"Pick(line={self.line}, start={self.start}, end={self.end})"


@dataclass(frozen=True, slots=True)
class Picks:
    """The lines shown, in line order, and how many lines matched in all (those shown too).
    `stopped`: the pattern used up its CPU time, and `matched` counts what it found before."""

    shown: tuple[Pick, ...]
    matched: int
    stopped: bool = False


@functools.lru_cache(maxsize=64)
def compile_pick_pattern(pattern: str) -> regex.Pattern[str]:
    """The pattern, compiled as `search_result` compiles a regex (`^` and `$` anchor the
    whole text; `(?m)` makes them anchor lines); `ValueError` in one line saying why not."""
    if not pattern:
        raise ValueError("must not be empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"must be at most {MAX_PATTERN_CHARS} characters, got {len(pattern)}")
    compiled = compile_regex(pattern)
    if compiled.search("") is not None:
        raise ValueError(
            "matches the empty string, so it would pick every line; make it match some text"
        )
    return compiled


def pick_lines(
    text: str, pattern: regex.Pattern[str], *, most: int, shown_until: int, shown_from: int
) -> Picks:
    """Up to `most` lines of `text` that `pattern` matches, outside `text[:shown_until]`
    (the head) and `text[shown_from:]` (the tail); see the module docstring."""
    budget = (
        None
        if is_literal(pattern)
        else CpuBudget(REGEX_SECONDS + len(text) * PROBED_SECONDS_PER_CHAR)
    )
    first: list[tuple[int, int, int, int]] = []  # (line, line start, line end, match start)
    last: deque[tuple[int, int, int, int]] = deque(maxlen=most // 2)
    keep_first = most - most // 2
    matched, stopped = 0, False
    pos = text.rfind("\n", 0, shown_until) + 1  # the head's last line may go on past it
    line, counted = text.count("\n", 0, pos) + 1, pos
    try:
        for at in _line_matches(text, pattern, pos, budget):
            start = text.rfind("\n", 0, at) + 1
            if start >= shown_from:  # this line, and every one after it, is in the tail
                break
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            line += text.count("\n", counted, start)
            counted = start
            if end <= shown_until:  # wholly in the head
                continue
            matched += 1
            if end > start and text[end - 1] == "\r":
                end -= 1
            hit = (line, start, end, min(at, end))
            if len(first) < keep_first:
                first.append(hit)
            else:
                last.append(hit)
    except PatternTooCostlyError:
        stopped = True
    return Picks(tuple(_pick(text, *hit) for hit in [*first, *last]), matched, stopped)


def _line_matches(
    text: str, pattern: regex.Pattern[str], pos: int, budget: CpuBudget | None
) -> Iterator[int]:
    """Where the first match on each line that has one starts, from `pos` on."""
    while pos < len(text):
        with closing(matches(pattern, text, pos, budget)) as found:
            match = next(found, None)
        if match is None:
            return
        yield match.start()
        pos = text.find("\n", match.start()) + 1 or len(text)


def _pick(text: str, line: int, start: int, end: int, at: int) -> Pick:
    """The line, whole when it fits in `LINE_CHARS`; else cut where it pauses, around `at`."""
    if end - start <= LINE_CHARS:
        return Pick(line, start, end, start, end, text[start:end])
    if at - start <= LINE_CHARS // 2:  # the match is near the start: the line's start
        shown = extract_head(text[start : start + LINE_CHARS + 1], LINE_CHARS)
        return Pick(line, start, start + len(shown), start, end, shown)
    lead = extract_tail(text[at - _LEAD_CHARS - 1 : at], _LEAD_CHARS)
    rest = LINE_CHARS - len(lead)
    shown = extract_head(text[at : min(end, at + rest + 1)], rest)
    first = at - len(lead)
    return Pick(line, first, at + len(shown), start, end, lead + shown)


def telling_end(text: str, start: int, pattern: regex.Pattern[str]) -> int:
    """Where a tail that tells something starts in `text[start:]`, `len(text)` when none does.

    A log's end is worth showing when it is a final block (the text after a blank line: a
    test runner's summary) or holds a line the pick pattern matches (a failure, a traceback's
    first line); then the tail starts at the first line start in reach that follows a blank
    line or begins such a line, a boundary the text provides. An end of more lines like the
    others (an installer's log going on) has neither, and no tail.
    """
    first = start if start == 0 or text[start - 1] == "\n" else text.find("\n", start) + 1
    if first <= 0:  # no line starts in reach: one line going on
        return len(text)
    found = []
    # From the line break before the line that ends at `first`: a blank line just before it
    # is then found whether lines end in \n or \r\n.
    blank = _AFTER_BLANK.search(text, max(text.rfind("\n", 0, first - 1), 0))
    if blank is not None and text[blank.end() :].strip():
        found.append(blank.end())
    picks = pick_lines(text, pattern, most=1, shown_until=first, shown_from=len(text))
    found += [pick.line_start for pick in picks.shown]
    return min(found, default=len(text))


class _InMemory:
    """One text and its index as the engine reads a claim (`ClaimRanges`), for a read of a
    result that is not stored yet, or whatever store holds it."""

    def __init__(self, text: str, index: bytes | None) -> None:
        self._text, self._index = text, index
        self._facts = Facts(len(text), 0)  # a read by path asks the length only

    def text(self, start: int, end: int) -> TextPart:
        return TextPart(self._text[start:end], start, self._facts)

    def tail(self, chars: int) -> TextPart:
        start = max(0, len(self._text) - chars)
        return TextPart(self._text[start:], start, self._facts)

    def index(self, start: int, end: int) -> IndexPart:
        return IndexPart(None if self._index is None else self._index[start:end], self._facts)

    def index_tail(self, size: int) -> IndexPart:
        index = self._index
        return IndexPart(None if index is None else index[max(0, len(index) - size) :], self._facts)

    def stream(self) -> Iterator[str]:
        yield self._text


def read_root(text: str, *, first: int = 0) -> PathRead | None:
    """What a read of path `""` answers for `text` (its kind, span and first members, no
    characters of it; `first` past 0, a page of its members from that one), or None when
    `text` is not JSON that reads by path."""
    if text.lstrip(" \t\n\r")[:1] not in ("{", "["):  # the index would say so too, later
        return None
    try:
        return by_path(_InMemory(text, build_index(text)), "", limit=0, first=first)
    except NoIndexError:
        return None
