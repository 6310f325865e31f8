"""Reading a JSON claim by JSON Pointer (RFC 6901), over the claim's ranges.

`by_path(ranges, pointer, limit=...)` asks a store for ranges of the claim's index and of its
characters (`s3claim._reading._ranges`), so every store gives the same answer for the same
claim, and costs at most three reads (see `_json_index` for the layout):

1. the index's end (`TAIL_BYTES`): its head, the deepest large container on the pointer's way;
2. that container's listing (the pointer names it), or its entry for the next token;
3. the characters of the answer's window, or of the small container that holds the answer,
   which is then parsed here.

With `first` (an offset into the members, what `offset` beside `path` names), the answer is
a page of the container's members from that one, without its characters: a small container
is read as above and its members sliced; a large one (a node) reads its members' entries in
document order (one index read) and the few characters that give each member's key and type
(at most `PAGE_READS` text reads, each spanning at most `SPAN_CHARS`; members that are nodes
need none). A page lists up to `LISTED` members, fewer when they lie too far apart for those
reads, and says where the next begins.

Every failure a model can act on is a `PathError` with a kind the claim tool reports; a
claim with no structure index is a `NoIndexError`.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import s3claim.wording as wording
from s3claim.errors import ClaimStoreError

from ._index import TAIL_BYTES, head_of
from ._json_index import (
    ENTRY_LENGTH_MAX,
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
    "PAGE_READS",
    "SPAN_CHARS",
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
PAGE_READS = 4
"""The most text reads a page of a large container's members makes: members too far apart
for them end the page early (it says where the next begins) rather than cost more."""
SPAN_CHARS = 8192
"""The most characters one of a page's text reads spans: members closer share a read."""
_KEY_REGION = 2048
"""Characters read from a member's separator for its key: a listed key's first `KEY_CHARS`
characters, each escaped as a surrogate pair at worst (12 characters), and whitespace."""
_KEY_TEXT = re.compile(r'(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
"""A JSON string's characters, up to its closing quote or a cut (a key's first characters)."""


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
    first_member: int = 0
    """The first member listed (from 0): past 0, the answer is a page of the members, without
    the value's characters (`text` is empty)."""

    @property
    def is_page(self) -> bool:
        return self.first_member > 0

    @property
    def next_offset(self) -> int | None:
        """Where an offset read goes on when the window holds less than the value (None for a
        page: it shows none of the value's characters)."""
        shown = self.start + len(self.text)
        return shown if shown < self.end and not self.is_page else None

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


def by_path(ranges: ClaimRanges, pointer: str, *, limit: int, first: int = 0) -> PathRead:
    """The value at `pointer`, or (`first` past 0) a page of its members from member `first`;
    see the module docstring for the reads it costs."""
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise ValueError(f"first must be a non-negative integer, got {first!r}")
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
        node = head.nodes[prints[depth]]
        if first:
            return _node_page(ranges, head, tokens, node, first)
        return _node_answer(ranges, head, tokens, node, limit)
    if depth < 0:
        start, end = head.root
    else:
        start, end = _member_span(ranges, head.nodes[prints[depth]], tokens, depth)
    text = ranges.text(start, end).text
    if len(text) != end - start:
        raise _damaged("a span of the index lies past the claim's end")
    found_at, found_end, members, count = _within(text, tokens, depth + 1, start, first)
    kind = kind_of(text[found_at])
    if first:
        _check_page(pointer, kind, count, first)
    return PathRead(
        pointer,
        kind,
        start + found_at,
        start + found_end,
        head.total_chars,
        "" if first else text[found_at : min(found_end, found_at + limit)],
        members,
        count,
        first,
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
    text: str, tokens: Sequence[str], done: int, base: int, first: int = 0
) -> tuple[int, int, tuple[Member, ...], int]:
    """Follow `tokens[done:]` inside `text`, one small JSON value read whole from `base`.

    Returns the value's span in `text`, its `LISTED` members from `first` (their spans in the
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
        _member(m.key, m.index, base + m.start, base + m.end, m.kind)
        for m in members[first : first + LISTED]
    )
    return start, end, listed, len(members)


# -- a page of a large container's members ----------------------------------------------------


def _check_page(pointer: str, kind: str, count: int, first: int) -> None:
    """A page lists members from `first`: refused for a value without members, or past them."""
    where = pointer or "the document"
    if kind not in ("object", "array"):
        raise PathError("invalid_arguments", wording.page_without_members_message(where, kind))
    if first >= count:
        raise PathError(
            "no_such_path", wording.page_past_members_message(where, kind, count=count, first=first)
        )


def _node_page(
    ranges: ClaimRanges, head: Head, tokens: Sequence[str], node: Node, first: int
) -> PathRead:
    """Members `first`.. of a node: its entries in document order (one index read, from the
    member before the page to the one after it), then the characters around each member that
    give its key and type, in at most `PAGE_READS` reads (see `_Page`)."""
    pointer = _join(tokens)
    _check_page(pointer, "object" if node.is_object else "array", node.count, first)
    if node.order is None:
        raise PathError("no_such_path", wording.no_member_pages_message(pointer or "the document"))
    lo, hi = first - 1, min(node.count, first + LISTED + 1)
    data = ranges.index(node.order + 8 * lo, node.order + 8 * hi).data or b""
    if len(data) != 8 * (hi - lo):
        raise _damaged("a member table ends early")
    page = _Page(node, head, lo, [entry_of(raw) for (raw,) in _Q.iter_unpack(data)])
    rows = page.rows(first, min(node.count, first + LISTED))
    members = page.read(ranges, rows)
    kind = "object" if node.is_object else "array"
    return PathRead(
        pointer, kind, node.start, node.end, head.total_chars, "", members, node.count, first
    )


class _Page:
    """What a page needs of the claim's characters, member by member: the first character of
    a member that is not a node (its type), the separator before each key, and, behind what
    follows a member too long for its entry (a string of `ENTRY_LENGTH_MAX` characters or
    more), where it ends."""

    def __init__(self, node: Node, head: Head, lo: int, entries: list[tuple[int, int]]) -> None:
        self.node, self.lo, self.entries = node, lo, entries
        self.nodes = {n.start: n for n in head.nodes.values()}

    def start(self, m: int) -> int:
        return self.entries[m - self.lo][0]

    def end(self, m: int) -> int | None:
        """A member's end, when its entry or the head knows it."""
        start, length = self.entries[m - self.lo]
        if length < ENTRY_LENGTH_MAX:
            return start + length
        inner = self.nodes.get(start)
        return None if inner is None else inner.end

    def following(self, m: int) -> int:
        """Where what follows member `m` starts: the next member, or the closing bracket."""
        return self.start(m + 1) if m + 1 < self.node.count else self.node.end - 1

    def key_region(self, m: int) -> tuple[int, int, bool]:
        """The characters holding member `m`'s key, and whether it is read behind them."""
        start, before = self.start(m), self.end(m - 1)
        if before is None:
            return max(self.start(m - 1), start - _KEY_REGION), start, True
        return before, min(start, before + _KEY_REGION), False

    def needs(self, m: int) -> list[tuple[int, int]]:
        start = self.start(m)
        wanted = [] if start in self.nodes else [(start, start + 1)]
        if self.end(m) is None:
            following = self.following(m)
            wanted.append((max(start, following - _KEY_REGION), following))
        if self.node.is_object:
            low, high, _ = self.key_region(m)
            wanted.append((low, high))
        return wanted

    def rows(self, first: int, last: int) -> int:
        """How many members from `first` (up to `last`) a page lists within `PAGE_READS`."""
        wanted = self.needs(first)
        for m in range(first + 1, last):
            more = wanted + self.needs(m)
            if len(_spans(more)) > PAGE_READS:
                return m - first
            wanted = more
        return last - first

    def read(self, ranges: ClaimRanges, rows: int) -> tuple[Member, ...]:
        first = self.lo + 1
        wanted = [w for m in range(first, first + rows) for w in self.needs(m)]
        parts: list[tuple[int, str]] = []
        for low, high in _spans(wanted):
            text = ranges.text(low, high).text
            if len(text) != high - low:
                raise _damaged("a member lies past the claim's end")
            parts.append((low, text))

        def chars(low: int, high: int) -> str:
            for at, text in parts:
                if at <= low and high <= at + len(text):
                    return text[low - at : high - at]
            raise AssertionError("a page reads what it needs")  # pragma: no cover

        return tuple(self._member(m, chars) for m in range(first, first + rows))

    def _member(self, m: int, chars: Callable[[int, int], str]) -> Member:
        start, end = self.start(m), self.end(m)
        inner = self.nodes.get(start)
        if inner is not None:
            kind = "object" if inner.is_object else "array"
        else:
            kind = kind_of(chars(start, start + 1))
        if end is None:
            following = self.following(m)
            low = max(start, following - _KEY_REGION)
            found, _ = _behind(chars(low, following), self.node.is_object, m + 1 == self.node.count)
            end = start + ENTRY_LENGTH_MAX if found is None else low + found
        if not self.node.is_object:
            return Member(None, m, start, end, kind)
        low, high, behind = self.key_region(m)
        region = chars(low, high)
        quote = _behind(region, True, False)[1] if behind else _separated(region)
        key, cut = ("", True) if quote is None else _key_at(region, quote)
        return Member(key[:KEY_CHARS], m, start, end, kind, cut or len(key) > KEY_CHARS)


def _spans(wanted: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The reads that cover `wanted`: neighbours share one while it spans `SPAN_CHARS`."""
    spans: list[tuple[int, int]] = []
    for low, high in sorted(wanted):
        if spans and max(spans[-1][1], high) - spans[-1][0] <= SPAN_CHARS:
            spans[-1] = (spans[-1][0], max(spans[-1][1], high))
        else:
            spans.append((low, high))
    return spans


def _separated(region: str) -> int | None:
    """Where the key starts (its opening quote) after a member's end: past `,` and spaces."""
    at = WHITESPACE.match(region).end()  # type: ignore[union-attr]
    if region[at : at + 1] != ",":
        return None
    at = WHITESPACE.match(region, at + 1).end()  # type: ignore[union-attr]
    return at if region[at : at + 1] == '"' else None


def _key_at(region: str, quote: int) -> tuple[str, bool]:
    """The key whose opening quote is at `quote`, and whether the region cut it."""
    raw = _KEY_TEXT.match(region, quote + 1).group()  # type: ignore[union-attr]
    whole = region[quote + 1 + len(raw) : quote + 2 + len(raw)] == '"'
    try:
        return json.loads(f'"{raw}"'), not whole
    except ValueError:
        raise _damaged("a member's key does not parse") from None


def _behind(region: str, is_object: bool, closing: bool) -> tuple[int | None, int | None]:
    """Read back from the end of `region`, which stops where what follows a member starts:
    (where the member ends, where the next key's opening quote is), None for what the region
    does not hold. Before a closing bracket there is only whitespace; before the next member,
    `,` and, in an object, its key and `:`."""
    at = len(region.rstrip(" \t\n\r"))
    if closing:
        return at, None
    quote = None
    if is_object:
        if region[at - 1 : at] != ":":
            return None, None
        at = len(region[: at - 1].rstrip(" \t\n\r"))
        if region[at - 1 : at] != '"':
            return None, None
        quote = at - 2
        while quote >= 0:  # the first quote back not escaped by an odd run of backslashes
            if region[quote] == '"':
                slashes = len(region[:quote]) - len(region[:quote].rstrip("\\"))
                if slashes % 2 == 0:
                    break
            quote -= 1
        else:
            return None, None
        at = quote
    at = len(region[:at].rstrip(" \t\n\r"))
    if region[at - 1 : at] != ",":
        return None, quote
    return len(region[: at - 1].rstrip(" \t\n\r")), quote
