"""Reading a JSON claim by JSON Pointer (RFC 6901), over the claim's ranges.

`by_path(ranges, pointer, limit=...)` asks a store for ranges of the claim's index and of its
characters (`s3claim._reading._ranges`), so every store gives the same answer for the same
claim, and costs at most three reads (see `_json_index` for the layout):

1. the index's end (`TAIL_BYTES`): its head, the deepest large container on the pointer's way;
2. that container's listing (the pointer names it), or its entry for the next token;
3. the characters of the answer's window, or of the small container that holds the answer,
   which is then parsed here.

Every failure a model can act on is a `PathError` with a kind the claim tool reports; a
claim with no structure index is a `NoIndexError`.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from s3claim.errors import ClaimStoreError

from ._index import TAIL_BYTES, head_of
from ._json_index import (
    KEY_CHARS,
    LISTED,
    PROBE,
    SCAN,
    WHITESPACE,
    Head,
    Node,
    entry_of,
    key_fingerprint,
    kind_of,
    parse_head,
    pointer_fingerprints,
)
from ._ranges import ClaimRanges

__all__ = [
    "Member",
    "NoIndexError",
    "PathError",
    "PathRead",
    "by_path",
    "escape",
    "parse_pointer",
]

_INDEX = re.compile(r"0|[1-9][0-9]{0,17}")
"""An array index: no leading zero, and at most 18 digits. A longer one is past the end of
any array, so it names nothing, before int() is asked (past 4,300 digits, int() raises)."""
_ESCAPE = re.compile(r"~[01]")
_Q = struct.Struct("<Q")


class NoIndexError(LookupError):
    """The claim has no structure index: it is not one JSON object or array."""


class PathError(ValueError):
    """A pointer the model can fix: `kind` is `invalid_arguments` or `no_such_path`."""

    def __init__(self, kind: Literal["invalid_arguments", "no_such_path"], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class Member:
    """One member of an object or array: its key (None in an array), span and type."""

    key: str | None
    index: int
    start: int
    end: int
    kind: str
    key_cut: bool = False


@dataclass(frozen=True, slots=True)
class PathRead:
    """The answer: the value's span and type, a window of its text, and its first members."""

    pointer: str
    kind: str
    start: int
    end: int
    total_chars: int
    text: str
    """The value's first characters (up to the limit), exactly as they are in the claim."""
    members: tuple[Member, ...] = ()
    member_count: int = 0

    @property
    def next_offset(self) -> int | None:
        """Where an offset read goes on when the window holds less than the value."""
        shown = self.start + len(self.text)
        return shown if shown < self.end else None

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return (
            f"PathRead(kind={self.kind!r}, start={self.start}, end={self.end}, "
            f"chars={len(self.text)}, members={self.member_count})"
        )


def escape(token: str) -> str:
    """A key as a pointer token (`~` as `~0`, `/` as `~1`)."""
    return token.replace("~", "~0").replace("/", "~1")


def parse_pointer(pointer: str) -> list[str]:
    """The tokens of an RFC 6901 pointer; `PathError` (invalid_arguments) saying what is wrong."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PathError(
            "invalid_arguments",
            "path must be a JSON Pointer: empty for the whole document, or starting with '/' "
            "(such as '/items/3')",
        )
    tokens = pointer[1:].split("/")
    for token in tokens:
        if token.count("~") != len(_ESCAPE.findall(token)):
            raise PathError(
                "invalid_arguments",
                "path has a '~' that is not '~0' (for ~) or '~1' (for /), as JSON Pointer "
                "escapes them",
            )
    return [_ESCAPE.sub(lambda m: "~" if m.group() == "~0" else "/", t) for t in tokens]


def _join(tokens: Sequence[str]) -> str:
    return "".join("/" + escape(t) for t in tokens)


def _damaged(what: str) -> ClaimStoreError:
    return ClaimStoreError(f"read by path: {what}", reason="damaged")


def by_path(ranges: ClaimRanges, pointer: str, *, limit: int) -> PathRead:
    """The value at `pointer`; see the module docstring for the reads it costs."""
    tokens = parse_pointer(pointer)  # before any read: a malformed pointer costs none
    tail = ranges.index_tail(TAIL_BYTES)
    if tail.data is None:
        raise NoIndexError
    try:
        found = head_of(tail.data)
        if found is None:
            raise NoIndexError
        head = parse_head(found)
    except ValueError:
        raise _damaged("the index's head does not parse") from None
    if head.total_chars != tail.facts.chars:
        raise _damaged("the index is another claim's")
    prints = pointer_fingerprints(tokens)
    depth = max((d for d, fp in enumerate(prints) if fp in head.nodes), default=-1)
    if depth == len(tokens):
        return _node_answer(ranges, head, tokens, head.nodes[prints[depth]], limit)
    if depth < 0:
        start, end = head.root
    else:
        start, end = _member_span(ranges, head.nodes[prints[depth]], tokens, depth)
    text = ranges.text(start, end).text
    if len(text) != end - start:
        raise _damaged("a span of the index lies past the claim's end")
    found_at, found_end, members, count = _within(text, tokens, depth + 1, start)
    return PathRead(
        pointer,
        kind_of(text[found_at]),
        start + found_at,
        start + found_end,
        head.total_chars,
        text[found_at : min(found_end, found_at + limit)],
        members,
        count,
    )


def _node_answer(
    ranges: ClaimRanges, head: Head, tokens: Sequence[str], node: Node, limit: int
) -> PathRead:
    rows = []
    if node.listing_bytes:
        listing = ranges.index(node.block, node.table)
        try:
            rows = json.loads(listing.data or b"")
        except ValueError:
            raise _damaged("a listing does not parse") from None
    members = tuple(
        _member(key, n, start, end, kind_of(first))
        for n, (key, start, end, first) in enumerate(rows)
    )
    text = ranges.text(node.start, min(node.end, node.start + limit)).text
    kind = "object" if node.is_object else "array"
    return PathRead(
        _join(tokens), kind, node.start, node.end, head.total_chars, text, members, node.count
    )


def _member_span(
    ranges: ClaimRanges, node: Node, tokens: Sequence[str], depth: int
) -> tuple[int, int]:
    """The span of the member that `tokens[depth]` names in a node: one read of its table."""
    token = tokens[depth]
    where = _join(tokens[:depth]) or "the document"
    if not node.is_object:
        if _INDEX.fullmatch(token) is None or int(token) >= node.count:
            raise PathError("no_such_path", _no_element(where, token, node.count))
        at = node.table + 8 * int(token)
        entry = ranges.index(at, at + 8).data or b""
        if len(entry) != 8:
            raise _damaged("an array's table ends early")
        start, length = entry_of(_Q.unpack(entry)[0])
        return start, start + length
    fp = key_fingerprint(token)
    home = node.table + 16 * (fp % node.slots)
    window = ranges.index(home, home + 16 * PROBE).data or b""
    for at in range(0, len(window) - 15, 16):
        slot_fp, raw = struct.unpack_from("<QQ", window, at)
        if slot_fp == fp:
            start, length = entry_of(raw)
            return start, start + length
        if slot_fp == 0:
            break
    raise PathError("no_such_path", f"nothing at path: {where} (an object) has no key {token!r}")


def _no_element(where: str, token: str, count: int) -> str:
    numbered = f"numbered 0 to {count - 1}" if count else "none"
    return (
        f"nothing at path: {where} is an array of {count} elements ({numbered}), and "
        f"{token!r} is not one of them"
    )


def _member(key: str | None, index: int, start: int, end: int, kind: str) -> Member:
    """A member as an answer lists it: a key longer than `KEY_CHARS` cut, and said so."""
    cut = key is not None and len(key) > KEY_CHARS
    return Member(key[:KEY_CHARS] if key else key, index, start, end, kind, cut)


def _members(text: str, start: int) -> list[Member]:
    """The members of the (valid, small) container at `text[start]`, each parsed by the C
    scanner, their keys whole."""
    is_object = text[start] == "{"
    close = "}" if is_object else "]"
    i = WHITESPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    found: list[Member] = []
    while text[i] != close:
        key: str | None = None
        if is_object:
            key, i = SCAN(text, i)
            i = WHITESPACE.match(text, WHITESPACE.match(text, i).end() + 1).end()  # type: ignore[union-attr]
        value_start = i
        _, i = SCAN(text, i)
        found.append(Member(key, len(found), value_start, i, kind_of(text[value_start])))
        i = WHITESPACE.match(text, i).end()  # type: ignore[union-attr]
        if text[i] == ",":
            i = WHITESPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    return found


def _within(
    text: str, tokens: Sequence[str], done: int, base: int
) -> tuple[int, int, tuple[Member, ...], int]:
    """Follow `tokens[done:]` inside `text`, one small JSON value read whole from `base`.

    Returns the value's span in `text`, its first `LISTED` members (their spans in the
    claim) and their count.
    """
    start = WHITESPACE.match(text).end()  # type: ignore[union-attr]
    end = len(text.rstrip(" \t\n\r"))
    for depth in range(done, len(tokens)):
        token = tokens[depth]
        where = _join(tokens[:depth]) or "the document"
        kind = kind_of(text[start])
        if kind not in ("object", "array"):
            raise PathError(
                "no_such_path", f"nothing at path: {where} is a {kind}, which has no members"
            )
        members = _members(text, start)
        if kind == "array":
            if _INDEX.fullmatch(token) is None or int(token) >= len(members):
                raise PathError("no_such_path", _no_element(where, token, len(members)))
            chosen = members[int(token)]
        else:
            named = [m for m in members if m.key == token]
            if not named:
                raise PathError(
                    "no_such_path", f"nothing at path: {where} (an object) has no key {token!r}"
                )
            chosen = named[-1]  # the last of duplicate keys wins, as in json.loads
        start, end = chosen.start, chosen.end
    members = _members(text, start) if text[start] in "[{" else []
    listed = tuple(
        _member(m.key, m.index, base + m.start, base + m.end, m.kind) for m in members[:LISTED]
    )
    return start, end, listed, len(members)
