"""The extractive head (the longest prefix that ends where the text itself pauses) and tail
(the longest suffix that starts where it pauses).

Cut candidates are the starts of whitespace runs (so a cut is never mid-word) and the ends
of CJK sentence marks, which need no space after them. Their strength:

    blank line > newline > sentence end > space between words

The strongest kind wins only if it lies in the later half of the allowance; otherwise a
weaker, later cut is preferred, so the head is not needlessly short. Text with no pause in
reach (one long base64 token) is cut at the last grapheme cluster boundary. A cut is always
a grapheme cluster boundary: combining marks and emoji sequences stay whole.

Only the first `head_chars + 1` characters are looked at, so the cost does not grow with
the document. The tail mirrors it: its cut is at the end of a whitespace run (or of a CJK
sentence mark), ranked by the same kinds, preferring a longer tail the same way, and only the
last `tail_chars + 1` characters are looked at.
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


def extract_head(content: str, head_chars: int) -> str:
    """A prefix of `content`, at most `head_chars` long, cut at the best natural boundary."""
    if len(content) <= head_chars:
        return content
    # head_chars + 1 characters: a cut at head_chars is only valid if a break follows it,
    # and grapheme rules never look ahead further than the next character.
    window = content[: head_chars + 1]
    ends = _cluster_ends(window)
    best: dict[int, int] = {}  # kind -> latest cut
    for match in _RUN.finditer(window):
        cut = match.start()
        if 0 < cut <= head_chars and cut in ends:
            kind = _kind(window[:cut], match.group())
            best[kind] = max(best.get(kind, 0), cut)
    for match in _CJK_STOP.finditer(window):
        cut = match.end()
        if cut <= head_chars and cut in ends:
            best[_SENTENCE] = max(best.get(_SENTENCE, 0), cut)
    for kind in (_BLANK, _NEWLINE, _SENTENCE, _SPACE):
        if best.get(kind, 0) * 2 >= head_chars:
            return content[: best[kind]]
    if best:
        return content[: max(best.values())]
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
    best: dict[int, int] = {}  # kind -> earliest cut (the longest tail)
    for match in _RUN.finditer(window):
        cut = match.end()
        if 0 < cut < len(window) and cut in starts:
            kind = _kind(window[: match.start()], match.group())
            best[kind] = min(best.get(kind, cut), cut)
    for match in _CJK_STOP.finditer(window):
        cut = match.end()  # a space after the mark is a run above, whose end is the cut
        if 0 < cut < len(window) and cut in starts and not window[cut].isspace():
            best[_SENTENCE] = min(best.get(_SENTENCE, cut), cut)
    for kind in (_BLANK, _NEWLINE, _SENTENCE, _SPACE):
        if kind in best and (len(window) - best[kind]) * 2 >= tail_chars:
            return window[best[kind] :]
    if best:
        return window[min(best.values()) :]
    # No pause in reach: the longest run of whole clusters (the first may be cut off).
    return window[min((end for end in starts if end > 0), default=len(window)) :]
