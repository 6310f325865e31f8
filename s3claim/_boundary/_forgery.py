"""Structural forgery: tool output that imitates s3claim's structure or a chat template's tokens.

`neutralise` rewrites, in tool output, every handle, claim-tool name and chat-template control
token (`RULES`, the table docs/security.md shows). It matches on the *folded view* of the text:
what a reader, a tokenizer's normaliser or a later NFKC pass may make of it. Each character
is taken in NFKC (full-width, small, circled and mathematical forms become ASCII), and format
characters (zero-width space and joiners, soft hyphen, word joiner, bidi controls, Unicode
tags), other default-ignorable characters and combining marks are dropped. Case is ignored.
Text with Unicode tag characters is also matched as a reader that decodes them would read it,
each tag as the ASCII character it carries (`claim` spelled in tags, then `:` and a handle),
and a delimiter found that way is rewritten to ASCII too. A JSON string escape (`\\u0024`, a
surrogate pair's two) is the character it stands for, as a client decoding the JSON reads it;
a delimiter that was one is rewritten as its fold, rewritten.

A match is rewritten where it stands, and only its delimiters are: `<` and `[` become `(`,
`>` and `]` become `)`, the `:` of a handle and the `_` of a tool name become `-`. Every other
character stays as the tool returned it, invisible ones included; a delimiter that was a
look-alike (`＜`, `﹕`) is replaced by the rewritten ASCII. Rewriting only ever removes
delimiters, so repeating it until nothing matches ends, and the result is a fixed point.

Letters that merely look alike without being NFKC-equivalent (Cyrillic `а`, dotless `ı`) are
not folded: a handle made of them is not one any store accepts.

Cost: ASCII text without `\\uXXXX` is its own view, and is matched as it is (with one,
its escapes are decoded in C before the prefilter below). Other text is cut into blocks at
spaces, newlines and commas (no rule matches across one); a block is folded character by
character only when its NFKD form, matched with ignorable characters allowed between letters
(a superset of what the folded view can match), might hold a match. Honest text pays a
scan or two; only text that holds a forgery pays the folding.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

import regex

__all__ = ["RULES", "Rule", "fold", "folded_view", "neutralise"]

_IGNORABLE = r"\p{Cf}\p{M}\p{DI}"  # format characters, marks, other default-ignorables
_DROP = regex.compile(f"[{_IGNORABLE}]+")
_ESCAPE = r"\\(?:\\|u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))"
"""A JSON string escape, as a reader that decodes the JSON reads it: `\\uXXXX` (a surrogate
pair as the one character it encodes); an escaped backslash is itself, so what follows it is
no escape."""
_ESCAPES = regex.compile(_ESCAPE)
_FOLDING = regex.compile(rf"(?V1){_ESCAPE}|[[^\x00-\x7F]&&[{_IGNORABLE}\p{{NFKC_QC=N}}]]+")
"""JSON escapes, and runs of characters whose fold may not be themselves: ignorables, and
what NFKC changes (NFKC_QC=No, stable across Unicode versions). ASCII is excluded first,
which is cheap."""
_NAME = r"[^\s<>|,]+"  # a token's name: no space, comma or delimiter, any length


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the forgery table: what is found, what it becomes, whose structure it is.

    `pattern(literal, gap)` is the rule's regular expression: `literal(word)` spells a word,
    `gap` is what may sit between its characters (nothing on the folded view; ignorable
    characters in the prefilter's NFKD view).
    """

    found: tuple[str, ...]
    becomes: tuple[str, ...]
    source: str
    pattern: Callable[[Callable[[str], str], str], str]
    note: str = ""
    """What else the match needs, in words (the handle's letter or digit after `:`)."""


def _words(words: tuple[str, ...], literal: Callable[[str], str]) -> str:
    return "|".join(literal(w) for w in sorted(words, key=len, reverse=True))


def _angle(*words: str) -> Rule:
    return Rule(
        found=tuple(f"<{w}>" for w in words),
        becomes=tuple(f"({w})" for w in words),
        source="",
        pattern=lambda lit, gap: f"<{gap}(?:{_words(words, lit)}){gap}>",
    )


def _bracket(*words: str) -> Rule:
    return Rule(
        found=tuple(f"[{w}]" for w in words),
        becomes=tuple(f"({w})" for w in words),
        source="",
        pattern=lambda lit, gap: rf"\[{gap}(?:{_words(words, lit)}){gap}\]",
    )


def _from(rule: Rule, source: str) -> Rule:
    return Rule(rule.found, rule.becomes, source, rule.pattern, rule.note)


RULES: tuple[Rule, ...] = (
    Rule(
        found=("claim:",),
        becomes=("claim-",),
        source="s3claim's handles",
        pattern=lambda lit, gap: rf"(?<={lit('claim')}{gap}):(?={gap}[\p{{L}}\p{{N}}])",
        note="followed by a letter or digit",
    ),
    Rule(
        found=('"$claim"',),
        becomes=('"-claim"',),
        source="s3claim's claim references (a JSON key naming a claim)",
        pattern=lambda lit, gap: rf'(?<="{gap})\$(?={gap}{lit("claim")}{gap}\\*")',
        note="as a quoted key",
    ),
    Rule(
        found=("fetch_result", "search_result"),
        becomes=("fetch-result", "search-result"),
        source="s3claim's markers and footers (the claim tools' names)",
        pattern=lambda lit, gap: (
            f"(?<=(?:{lit('fetch')}|{lit('search')}){gap})_(?={gap}{lit('result')})"
        ),
    ),
    Rule(
        found=("<<SYS>>", "<</SYS>>"),
        becomes=("((SYS))", "((/SYS))"),
        source="Llama 2",
        pattern=lambda lit, gap: f"<{gap}<{gap}(?:{lit('/SYS')}|{lit('SYS')}){gap}>{gap}>",
    ),
    Rule(
        found=("<|name|>",),
        becomes=("(|name|)",),
        source=(
            "ChatML (Qwen `<|im_start|>`), Llama 3 and 4 (`<|eot_id|>`), Harmony (gpt-oss "
            "`<|channel|>`), Phi, DeepSeek (`<｜User｜>`, full-width bars), Gemma 4 "
            '(`<|think|>`, `<|"|>`)'
        ),
        pattern=lambda lit, gap: rf"<{gap}\|{_NAME}\|{gap}>",
    ),
    Rule(
        found=("<|name>", "<name|>"),
        becomes=("(|name)", "(name|)"),
        source="Gemma 4 (`<|turn>`, `<turn|>`, `<|tool_call>`, `<channel|>`)",
        pattern=lambda lit, gap: rf"<{gap}\|{_NAME}>|<{_NAME}\|{gap}>",
    ),
    Rule(
        found=("<function=name>", "<parameter=name>"),
        becomes=("(function=name)", "(parameter=name)"),
        source="Llama 3.1 custom tool calls, Qwen3-Coder",
        pattern=lambda lit, gap: f"<{gap}(?:{lit('function')}|{lit('parameter')}){gap}={_NAME}>",
    ),
    _from(_angle("s", "/s"), "Llama 2, Mistral"),
    _from(
        _angle("bos", "eos", "start_of_turn", "end_of_turn", "start_of_image", "end_of_image"),
        "Gemma 2 and 3",
    ),
    _from(
        _angle(
            "tool_call",
            "/tool_call",
            "tool_response",
            "/tool_response",
            "tools",
            "/tools",
            "think",
            "/think",
        ),
        "Qwen 2.5 and 3 (Hermes-style tool calls), DeepSeek R1 and V3 (reasoning)",
    ),
    _from(_angle("/function", "/parameter"), "Llama 3.1 custom tool calls, Qwen3-Coder"),
    _from(_bracket("INST", "/INST", "SYS", "/SYS"), "Llama 2, Mistral"),
    _from(
        _bracket(
            "SYSTEM_PROMPT",
            "/SYSTEM_PROMPT",
            "AVAILABLE_TOOLS",
            "/AVAILABLE_TOOLS",
            "TOOL_CALLS",
            "ARGS",
            "CALL_ID",
            "TOOL_RESULTS",
            "/TOOL_RESULTS",
            "TOOL_CONTENT",
            "THINK",
            "/THINK",
            "IMG",
            "IMG_BREAK",
            "IMG_END",
        ),
        "Mistral (tokenizers v3 to v13), Magistral",
    ),
)


def _compile(literal: Callable[[str], str], gap: str) -> regex.Pattern[str]:
    return regex.compile(
        "|".join(f"(?:{rule.pattern(literal, gap)})" for rule in RULES), regex.IGNORECASE
    )


_GAP = f"[{_IGNORABLE}]*"
_ON_VIEW = _compile(regex.escape, "")
"""The rules on the folded view (or on ASCII text, which is its own view)."""
_MAYBE = _compile(lambda word: _GAP.join(regex.escape(c) for c in word), _GAP)
"""The rules on a block's NFKD form, ignorables allowed anywhere: the prefilter."""
_TAG = regex.compile("[\U000e0020-\U000e007e]")
_TAGS = {0xE0000 + c: c for c in range(0x20, 0x7F)}
"""Unicode tag characters and the ASCII they carry."""
_BLOCK = 1024
_CUTS = (" ", "\n", ",")
_CUT = regex.compile("[ \n,]")


def fold(char: str) -> str:
    """One character's part of the folded view: its NFKC form without ignorables."""
    if _DROP.match(char):
        return ""
    normal = unicodedata.normalize("NFKC", char)
    return normal if normal == char else _DROP.sub("", normal)


class _Folds(dict[str, str]):
    """The fold of a character or a run of them, remembered (a bounded cache: a text has few
    distinct characters, and its runs of them repeat)."""

    def __missing__(self, text: str) -> str:
        if len(text) > 1:
            folded = "".join(map(self.__getitem__, text))
            if len(text) <= 16:  # a long run is folded, not kept
                self[text] = folded
            return folded
        if len(self) >= 65_536:
            self.clear()
        folded = self[text] = fold(text)
        return folded


_FOLDS = _Folds()


def _decoded(m: regex.Match[str]) -> str | None:
    """The character a JSON escape stands for; None for an escaped backslash."""
    high, low, single = m.groups()
    if single is not None:
        return chr(int(single, 16))
    if high is None:
        return None
    return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)


_MAYBE_ESCAPE = regex.compile(r"\\u[0-9a-fA-F]{4}")
"""What may be a `\\uXXXX` escape (or an escaped backslash before `uXXXX`: the view knows)."""


def _plain(text: str) -> bool:
    """Whether `text` is its own view: ASCII with no JSON escape in it."""
    return text.isascii() and ("\\u" not in text or _MAYBE_ESCAPE.search(text) is None)


def _unescaped(text: str) -> str:
    """`text` with its JSON escapes decoded (escaped backslashes left as they are)."""
    if "\\u" not in text:
        return text
    if text.isascii() and "\\U" not in text:  # the codec's escapes are JSON's, `\\U` aside
        try:  # in C: a `\\u` after an odd number of backslashes is an escape, as in JSON
            decoded = text.encode("ascii").decode("raw_unicode_escape")
        except UnicodeDecodeError:  # a `\\u` without four hex digits: JSON's are read below
            pass
        else:  # a surrogate pair is the one character it encodes
            return decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _ESCAPES.sub(lambda m: m.group() if (c := _decoded(m)) is None else c, text)


def folded_view(text: str) -> str:
    """The text as the rules see it."""
    return text if _plain(text) else "".join(map(_FOLDS.__getitem__, _unescaped(text)))


def neutralise(text: str) -> str:
    """Defang text that imitates s3claim's structure or a chat template's control tokens."""
    if _plain(text):
        return _settle_ascii(text)
    safe = _rewritten(text)
    while _TAG.search(safe):  # each round removes a delimiter, so it ends
        decoded = safe.translate(_TAGS)  # a reader that decodes tags: one character for one
        rewritten = _rewritten(decoded)
        if rewritten == decoded:
            break
        if len(rewritten) == len(safe):  # back to the text: a tag delimiter becomes ASCII
            kept = zip(safe, rewritten, decoded, strict=True)
            rewritten = "".join(s if r == d else r for s, r, d in kept)
        safe = _rewritten(rewritten)
    return safe


def _rewritten(text: str) -> str:
    """`neutralise` on the folded view (tags dropped), block by block."""
    pieces, last = [], 0  # only rewritten blocks are copied: most text is left as it is
    for start, end in _blocks(text):
        block = text[start:end]
        if _plain(block):
            settled = _settle_ascii(block)
        elif _MAYBE.search(unicodedata.normalize("NFKD", _unescaped(block))) is None:
            continue
        else:
            settled = _settle_folded(block)
        if settled is not block:
            pieces += [text[last:start], settled]
            last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _blocks(text: str) -> list[tuple[int, int]]:
    """About `_BLOCK` characters each, cut after a space, newline or comma (no rule spans one)."""
    spans: list[tuple[int, int]] = []
    start, length = 0, len(text)
    while length - start > _BLOCK:
        cut = max(text.rfind(c, start + _BLOCK // 2, start + _BLOCK) for c in _CUTS)
        if cut < 0:
            found = _CUT.search(text, start + _BLOCK)
            if found is None:
                break
            cut = found.start()
        spans.append((start, cut + 1))
        start = cut + 1
    spans.append((start, length))
    return spans


def _edits(view: str) -> dict[int, str]:
    """(index in the view, replacement) for every delimiter of every match, in order."""
    edits: dict[int, str] = {}
    for m in _ON_VIEW.finditer(view):
        start, end = m.span()
        if end - start == 1:  # the `:` of a handle or the `_` of a tool name
            edits[start] = "-"
        elif view.startswith("<<", start):
            edits.update({start: "(", start + 1: "(", end - 2: ")", end - 1: ")"})
        else:
            edits.update({start: "(", end - 1: ")"})
    return edits


def _apply(text: str, edits: list[tuple[int, str]]) -> str:
    pieces, last = [], 0
    for index, replacement in edits:
        pieces += [text[last:index], replacement]
        last = index + 1
    pieces.append(text[last:])
    return "".join(pieces)


def _settled(view: str) -> dict[int, str]:
    """Every edit of the view, repeated until nothing matches: a rewrite can complete an
    enclosing token (`<|<s>|>`), and each replaces one character with one, so indices hold."""
    edits: dict[int, str] = {}
    while found := _edits(view):
        edits.update(found)
        view = _apply(view, sorted(found.items()))
    return edits


def _settle_ascii(text: str) -> str:
    edits = _settled(text)
    return _apply(text, sorted(edits.items())) if edits else text


def _settle_folded(block: str) -> str:
    """Rewrite on the folded view; each edit goes back to the character whose fold holds
    it, and that character is replaced by its fold, rewritten."""
    # The view is the block with each run of characters that fold to something else folded,
    # and each JSON escape replaced by its character's fold: runs[k] = (start, end, folded,
    # whole), whole for an escape (its characters are one), and view_at[k] is where run k's
    # fold starts in the view.
    runs: list[tuple[int, int, str, bool]] = []
    view_at: list[int] = []
    pieces, last, shift = [], 0, 0
    for m in _FOLDING.finditer(block):
        start, end = m.span()
        escape = m.group().startswith("\\")
        char = _decoded(m) if escape else m.group()
        if char is None:
            continue  # an escaped backslash: itself
        folded = _FOLDS[char]
        pieces += [block[last:start], folded]
        runs.append((start, end, folded, escape))
        view_at.append(start + shift)
        shift += len(folded) - (end - start)
        last = end
    pieces.append(block[last:])
    edits = _settled("".join(pieces))
    if not edits:
        return block
    rewritten: dict[int, str] = {}  # index in the block -> its new text
    for at, replacement in sorted(edits.items()):
        k = bisect_right(view_at, at) - 1
        if k < 0 or at >= view_at[k] + len(runs[k][2]):  # a character that is its own fold
            rewritten[at - (view_at[k] + len(runs[k][2]) - runs[k][1] if k >= 0 else 0)] = (
                replacement
            )
            continue
        offset = at - view_at[k]
        first, stop, folded, whole = runs[k]
        if whole:  # an escape is rewritten as the fold of its character, rewritten
            held = rewritten.get(first, folded)
            rewritten[first] = held[:offset] + replacement + held[offset + 1 :]
            rewritten.update(dict.fromkeys(range(first + 1, stop), ""))
            continue
        for index in range(first, stop):  # the character whose fold holds `at`
            folded = rewritten.get(index, _FOLDS[block[index]])
            if offset < len(folded):
                rewritten[index] = folded[:offset] + replacement + folded[offset + 1 :]
                break
            offset -= len(folded)
    return _apply(block, sorted(rewritten.items()))
