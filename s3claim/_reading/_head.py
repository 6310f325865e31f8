"""The extractive head (the longest prefix that ends where the text itself pauses) and tail
(the longest suffix that starts where it pauses); docs/reading.md ("How the head is cut",
"Keeping the end too") gives the rules.

Cut candidates are the starts of whitespace runs for a head, their ends for a tail (so a cut
is never mid-word), and the ends of CJK sentence marks, which need no space after them. Only
`head_chars + 1` (or `tail_chars + 1`) characters are looked at, so the cost does not grow
with the document.
"""

from __future__ import annotations

import regex

__all__ = ["extract_head", "extract_tail"]

_BLANK, _NEWLINE, _SENTENCE, _SPACE = 4, 3, 2, 1
_RUN = regex.compile(r"\s+")
_CLUSTER = regex.compile(r"\X")
_SENTENCE_END = regex.compile(r"""[.!?…][)\]"'»”’]*\Z""")
_CJK_STOP = regex.compile(r"[。！？｡]")


def _cluster_ends(text: str) -> set[int]:
    return {match.end() for match in _CLUSTER.finditer(text)}


def _kind(prefix: str, run: str) -> int:
    newlines = run.count("\n") + run.count("\r") - run.count("\r\n")
    if newlines >= 2:
        return _BLANK
    if newlines == 1:
        return _NEWLINE
    if _SENTENCE_END.search(prefix[-8:]):
        return _SENTENCE
    return _SPACE


def _pick(longest: dict[int, int], allowance: int) -> int | None:
    """Of the longest head (or tail) each kind of cut leaves, the strongest kind's when it
    keeps at least half the allowance, else the longest; None when there is no cut."""
    for kind in (_BLANK, _NEWLINE, _SENTENCE, _SPACE):
        if longest.get(kind, 0) * 2 >= allowance:
            return longest[kind]
    return max(longest.values(), default=None)


def extract_head(content: str, head_chars: int) -> str:
    """A prefix of `content`, at most `head_chars` long, cut at the best natural boundary."""
    if len(content) <= head_chars:
        return content
    # head_chars + 1 characters: a cut at head_chars is only valid if a break follows it,
    # and grapheme rules never look ahead further than the next character.
    window = content[: head_chars + 1]
    ends = _cluster_ends(window)
    best: dict[int, int] = {}  # kind -> latest cut (the longest head)
    for match in _RUN.finditer(window):
        cut = match.start()
        if 0 < cut <= head_chars and cut in ends:
            kind = _kind(window[:cut], match.group())
            best[kind] = max(best.get(kind, 0), cut)
    for match in _CJK_STOP.finditer(window):
        cut = match.end()
        if cut <= head_chars and cut in ends:
            best[_SENTENCE] = max(best.get(_SENTENCE, 0), cut)
    kept = _pick(best, head_chars)
    if kept is not None:
        return content[:kept]
    return content[: max((end for end in ends if end <= head_chars), default=0)]


def extract_tail(content: str, tail_chars: int, *, after: int = 0) -> str:
    """A suffix of `content[after:]` (no copy of it is made), at most `tail_chars` long,
    starting at the best natural boundary."""
    if tail_chars <= 0:
        return ""
    if len(content) - after <= tail_chars:
        return content[after:]
    # One character more than the tail: a cut at its start is valid only after a break.
    window = content[-(tail_chars + 1) :]
    starts = _cluster_ends(window)  # where a cluster ends, the next one starts
    longest: dict[int, int] = {}  # kind -> the longest tail it cuts
    for match in _RUN.finditer(window):
        cut = match.end()
        if 0 < cut < len(window) and cut in starts:
            kind = _kind(window[: match.start()], match.group())
            longest[kind] = max(longest.get(kind, 0), len(window) - cut)
    for match in _CJK_STOP.finditer(window):
        cut = match.end()  # a space after the mark is a run above, whose end is the cut
        if 0 < cut < len(window) and cut in starts and not window[cut].isspace():
            longest[_SENTENCE] = max(longest.get(_SENTENCE, 0), len(window) - cut)
    kept = _pick(longest, tail_chars)
    if kept is not None:
        return window[len(window) - kept :]
    # No pause in reach: the longest run of whole clusters (the first may be cut off).
    return window[min((end for end in starts if end > 0), default=len(window)) :]
