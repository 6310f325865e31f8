"""The structure index of a JSON claim: built in one pass at check-in, read back by range.

A claim is read by `path` (a JSON Pointer) with a few ranged reads, so the index is laid out
for a reader that knows nothing but the pointer: at most three reads and a few tens of KiB
whatever the claim's size. Two ideas make that hold.

- **Only large containers are indexed.** An object or array of at most `small_chars`
  characters is read whole from the claim and parsed there; its members cost no index bytes.
  A container longer than that is a *node*: its span, its member count, a short listing of
  its first members, and a table to find any member in one read (an array: one 8-byte entry
  per element; an object: an open-addressed hash table of 16-byte slots keyed by the
  member's name, then the same 8-byte entries in document order, which a page of its members
  reads).
- **The nodes sit in the index's head, at most `HEAD_BYTES` just before its trailer**
  (`s3claim._reading._index`: the head closes the claim's index, so a reader finds it with
  one read of the index's end), each under a 64-bit fingerprint of its pointer, so the
  reader's first read finds the deepest node on the pointer's way at once, however deep it
  is. When a document has more large containers than fit there, `small_chars` is doubled
  until they fit.

So a read by path (`_json_path`) is three reads at most. Spans are the original characters
of the claim, never re-serialised.

A build may be given a budget (a store's room left under its cap): the walk counts what the
containers it holds would take in the index (8 bytes an array member, at least 32 an object
member), and once that passes the budget it stops holding them and walks again counting only
(`_Tally.collect`), to tell whether the finished index could fit at all: what it can
take at least is refused as `IndexTooLargeError`; one that fits is built as without a budget,
the same bytes. So a refused build holds two to three times the budget at most (a member's
span is 16 bytes while it is walked, an object's key a string), never a multiple of the
document.

The pass is the standard library's C scanner (`json.scanner.c_make_scanner`) stepping over
members: each member is parsed in C, and only the members of large containers are visited
from Python. A text that is not one JSON object or array (a scalar, invalid JSON, nesting
deeper than the interpreter's recursion limit, about 1,000 levels) has no index: it is text.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from s3claim.handles import content_width
from s3claim.safejson import MAX_DEPTH, SCAN, deeper_than

__all__ = [
    "ENTRY_LENGTH_MAX",
    "HEAD_BYTES",
    "LISTED",
    "PROBE",
    "SCAN",
    "WHITESPACE",
    "Head",
    "IndexTooLargeError",
    "Node",
    "entry_of",
    "json_index",
    "key_fingerprint",
    "kind_of",
    "parse_head",
    "pointer_fingerprints",
]

HEAD_BYTES = 24 * 1024
"""The most a head takes (the header and every node): what the reader's first read asks for."""
SMALL_BYTES = 16 * 1024
"""Containers of at most this many bytes (as the S3 store keeps the text: 1, 2 or 4 a
character) are read whole from the claim, not indexed; doubled while too many nodes."""
LISTED = 20
"""Members a node's listing keeps (and any container's answer lists)."""
KEY_CHARS = 64
"""A listed key longer than this is shown cut (the listing says so)."""
PROBE = 32
"""Slots an object lookup reads from a key's home slot; every key sits within them."""

_MAGIC = b"S3CJIX1\x00"
_HEADER = struct.Struct("<8sQQQQI4x")  # magic, total chars, small chars, root start/end, nodes
_NODE = struct.Struct("<QQQQII")  # fingerprint, start, end, block offset, count, flags
MAX_NODES = (HEAD_BYTES - _HEADER.size) // _NODE.size
_LENGTH_BITS = 24
_LENGTH_MAX = (1 << _LENGTH_BITS) - 1
ENTRY_LENGTH_MAX = _LENGTH_MAX
"""An entry's length at its most: the member is at least that long."""
WHITESPACE = re.compile(r"[ \t\n\r]*")
_OBJECT_FLAG = 1 << 31
_SIZE_SHIFT = 20  # flags: listing bytes (bits 0-19), log2 of an object's slots (20-26)
_LISTING_MASK = (1 << _SIZE_SHIFT) - 1
_ORDER_FLAG = 1 << 27  # an object's entries follow its slots in document order (member pages)


class NotIndexable(ValueError):
    """The text is not one JSON object or array this index can describe."""


class IndexTooLargeError(Exception):
    """A claim's index would take more than the budget it was built under: `at_least` bytes."""

    def __init__(self, at_least: int) -> None:
        super().__init__(f"the index would take at least {at_least} bytes")
        self.at_least = at_least


class _OverBudget(Exception):
    """The containers a walk holds would take more than its budget in the index."""


def kind_of(first: str) -> str:
    """A value's JSON type, from its first character."""
    return {"{": "object", "[": "array", '"': "string", "t": "boolean", "f": "boolean"}.get(
        first, "null" if first == "n" else "number"
    )


def key_fingerprint(key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1  # 0 marks an empty slot


def _token(token: str) -> bytes:
    raw = token.encode("utf-8", "surrogatepass")
    return len(raw).to_bytes(4, "little") + raw


def pointer_fingerprints(tokens: Sequence[str]) -> list[int]:
    """The fingerprint of every prefix of a pointer's tokens, the root's first."""
    state = hashlib.blake2b(digest_size=8)
    prints = [int.from_bytes(state.copy().digest(), "little")]
    for token in tokens:
        state.update(_token(token))
        prints.append(int.from_bytes(state.copy().digest(), "little"))
    return prints


def entry_of(raw: int) -> tuple[int, int]:
    """An 8-byte member entry as (start, length); a length of `_LENGTH_MAX` means at least."""
    return raw >> _LENGTH_BITS, raw & _LENGTH_MAX


@dataclass(frozen=True, slots=True)
class Node:
    """A large container as the index's head describes it."""

    start: int
    end: int
    block: int
    count: int
    is_object: bool
    listing_bytes: int
    slots: int = 0
    """An object's hash table size (0 for an array)."""
    ordered: bool = False
    """Whether an object's member entries follow its slots in document order (an index built
    before member pages has none)."""

    @property
    def table(self) -> int:
        """Where the member table starts in the index: after the listing."""
        return self.block + self.listing_bytes

    @property
    def order(self) -> int | None:
        """Where the members' 8-byte entries start in document order: an array's table, or
        after an object's slots; None for an object indexed without them."""
        if not self.is_object:
            return self.table
        return self.table + 16 * (self.slots + PROBE) if self.ordered else None


@dataclass(frozen=True, slots=True)
class Head:
    total_chars: int
    small_chars: int
    root: tuple[int, int]
    nodes: dict[int, Node]


def parse_head(data: bytes) -> Head:
    """The header and the nodes, from a head's bytes exactly."""
    if len(data) < _HEADER.size:
        raise ValueError("index too short")
    magic, total, small, root_start, root_end, count = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + count * _NODE.size != len(data):
        raise ValueError("not an s3claim JSON index")
    nodes: dict[int, Node] = {}
    for n in range(count):
        at = _HEADER.size + n * _NODE.size
        fp, start, end, block, members, flags = _NODE.unpack_from(data, at)
        is_object = bool(flags & _OBJECT_FLAG)
        slots = 1 << ((flags >> _SIZE_SHIFT) & 0x7F) if is_object else 0
        ordered = bool(flags & _ORDER_FLAG)
        listing = flags & _LISTING_MASK
        nodes[fp] = Node(start, end, block, members, is_object, listing, slots, ordered)
    return Head(total, small, (root_start, root_end), nodes)


@dataclass(slots=True)
class _Found:
    fp: int
    start: int
    end: int
    is_object: bool
    count: int
    starts: array[int]  # (start, end) pairs of members, in document order (empty: counting)
    keys: list[str] | None


_ARRAY_MEMBER = 8  # bytes of an array member's entry in its table
_OBJECT_MEMBER = 32  # the least an object member takes: 16-byte slots, at most half full


@dataclass(slots=True)
class _Tally:
    """What a walk found and holds, against its budget (None: no bound).

    `held` is what the containers held (the finished nodes, and those being walked) would
    take in the index were they kept. `cut` is the least the final `small_chars` can be: when
    more than `MAX_NODES` containers are larger than it, it doubles, and the nodes it leaves
    out are dropped at once rather than held to the end (they could never be kept).
    """

    budget: int | None
    cut: int
    collect: bool = True
    found: list[_Found] = field(default_factory=list)
    held: int = 0

    def hold(self, is_object: bool) -> None:
        """One more member of a container being walked."""
        if not self.collect:
            return
        self.held += _OBJECT_MEMBER if is_object else _ARRAY_MEMBER
        if self.budget is not None and self.held > self.budget:
            raise _OverBudget

    def finish(self, found: _Found) -> None:
        """A container walked to its end: a node when larger than the cut, else let go."""
        if found.end - found.start <= self.cut:
            self.held -= _members_bytes(found)
            return
        self.found.append(found)
        if len(self.found) > MAX_NODES:
            while sum(1 for f in self.found if f.end - f.start > self.cut) > MAX_NODES:
                self.cut *= 2
            kept = [f for f in self.found if f.end - f.start > self.cut]
            self.held -= sum(map(_members_bytes, self.found)) - sum(map(_members_bytes, kept))
            self.found = kept


def _members_bytes(found: _Found) -> int:
    """What `_Tally.hold` counted for the container's members (nothing, when counting)."""
    if not found.starts:
        return 0
    return found.count * (_OBJECT_MEMBER if found.is_object else _ARRAY_MEMBER)


def _table_bytes(found: _Found) -> int:
    """The least the node's table takes (an object's may double on a run of collisions)."""
    if not found.is_object:
        return _ARRAY_MEMBER * found.count
    size = 8
    while size < 2 * found.count:
        size *= 2
    return 16 * (size + PROBE)


def json_index(text: str, *, base: int, budget: int | None = None) -> tuple[bytes, bytes] | None:
    """The structure index of `text` as (its listings and tables, its head), to be placed at
    `base` in the claim's index; None when it is not a JSON object or array (it is text).
    `IndexTooLargeError` when it would take more than `budget` bytes."""
    start = WHITESPACE.match(text).end()  # type: ignore[union-attr]
    if start >= len(text) or text[start] not in "[{":
        return None
    small = SMALL_BYTES // content_width(text)
    # The scanner builds each member's values whole before dropping them: trees of fresh
    # objects that the cyclic collector would traverse again and again (a 16 MiB nested
    # document: 3.6 s with it, 0.4 s without). Nothing here makes a cycle.
    collecting = gc.isenabled()
    gc.disable()
    try:
        end, tally = _walk_within(text, start, small, budget)
    except (ValueError, RecursionError, StopIteration, IndexError):  # NotIndexable is a ValueError
        return None
    finally:
        if collecting:
            gc.enable()
    if WHITESPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
        return None
    small = _cut(tally)
    if small >= _LENGTH_MAX:  # member entries could no longer tell a node by its length
        return None
    kept = [f for f in tally.found if f.end - f.start > small]
    return _encode(text, kept, small, (start, end), base)


def _walk_within(text: str, start: int, small: int, budget: int | None) -> tuple[int, _Tally]:
    """Walk the document (where it ends, what it found); when what it holds passes `budget`,
    walk again counting only, and refuse what could not fit (`IndexTooLargeError`) or walk a
    third time without the budget (what passed it may be left out of the index after all:
    a head that cannot hold every large container keeps only the largest)."""
    fingerprint = hashlib.blake2b(digest_size=8)
    first = _Tally(budget, small)
    try:
        return _walk(text, start, fingerprint.copy(), first, 0, small), first
    except _OverBudget:
        del first  # what it held goes now, with the exception's frames
    counted = _Tally(None, small, collect=False)
    end = _walk(text, start, fingerprint.copy(), counted, 0, small)
    _check_fits(text, counted, end, budget or 0)
    built = _Tally(None, small)
    return _walk(text, start, fingerprint.copy(), built, 0, small), built


def _cut(tally: _Tally) -> int:
    """The final `small_chars`: doubled until the containers larger than it fit in a head."""
    small = tally.cut
    while sum(1 for f in tally.found if f.end - f.start > small) > MAX_NODES:
        small *= 2
    return small


def _check_fits(text: str, tally: _Tally, end: int, budget: int) -> None:
    """`IndexTooLargeError` when the nodes a counting walk found take more than `budget`,
    counting their tables and the head (the least they take: listings are left out)."""
    if WHITESPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
        return  # not JSON: no structure index at all
    small = _cut(tally)
    if small >= _LENGTH_MAX:
        return
    kept = [f for f in tally.found if f.end - f.start > small]
    least = _HEADER.size + _NODE.size * len(kept) + sum(_table_bytes(f) for f in kept)
    if least > budget:
        raise IndexTooLargeError(least)


def _walk(text: str, start: int, state: Any, tally: _Tally, depth: int, small: int) -> int:
    """Step over the members of the container at `start`; returns where it ends.

    Each member is parsed by the C scanner (which also finds its end); a member that is a
    container longer than `small` characters is then walked too, so it becomes a node. A
    container whose previous sibling was large is walked at once (large members come in
    runs: the partitions of a document, the records of a page of pages), which saves
    parsing it twice; a walk validates as the scanner does.
    """
    if depth >= MAX_DEPTH:
        raise NotIndexable
    is_object = text[start] == "{"
    close = "}" if is_object else "]"
    collect = tally.collect
    spans: array[int] = array("Q")
    keys: list[str] | None = [] if is_object else None
    count = 0
    match, scan = WHITESPACE.match, SCAN
    last_large = False
    i = match(text, start + 1).end()  # type: ignore[union-attr]
    if text[i] == close:
        i += 1
    else:
        while True:
            key = ""
            if is_object:
                if text[i] != '"':
                    raise NotIndexable
                key, i = scan(text, i)
                i = match(text, i).end()  # type: ignore[union-attr]
                if text[i] != ":":
                    raise NotIndexable
                i = match(text, i + 1).end()  # type: ignore[union-attr]
            value_start = i
            nested = text[i] in "[{"
            if not (nested and last_large):  # its sibling was large: walk it, skip a parse in C
                _, i = scan(text, i)
                if nested and _deeper(text, value_start, i, MAX_DEPTH - depth - 1):
                    raise NotIndexable
            if nested and (last_large or i - value_start > small):
                child = state.copy()
                child.update(_token(key if is_object else str(count)))
                i = _walk(text, value_start, child, tally, depth + 1, small)
            last_large = nested and i - value_start > small
            count += 1
            if collect:
                tally.hold(is_object)
                if keys is not None:
                    keys.append(key)
                spans.append(value_start)
                spans.append(i)
            i = match(text, i).end()  # type: ignore[union-attr]
            if text[i] == ",":
                i = match(text, i + 1).end()  # type: ignore[union-attr]
            elif text[i] == close:
                i += 1
                break
            else:
                raise NotIndexable
    fp = int.from_bytes(state.copy().digest(), "little") if i - start > small else 0
    tally.finish(_Found(fp, start, i, is_object, count, spans, keys))
    return i


def _deeper(text: str, start: int, end: int, levels: int) -> bool:
    """Whether the value at text[start:end] nests deeper than `levels`: counted only where it
    holds that many brackets at all (a count in C), so most members cost no walk."""
    if text.count("[", start, end) + text.count("{", start, end) <= levels:
        return False
    return deeper_than(text[start:end], levels)


def _slots(keys: list[str], entries: array[int]) -> tuple[int, array[int]]:
    """An object's hash table (size, slots): (key fingerprint, entry) per slot, `PROBE` more
    at the end so no probe wraps; the last of duplicate keys wins, as in `json.loads`. Its
    size is a power of two, at most half full."""
    size = 8
    while size < 2 * len(keys):
        size *= 2
    while True:
        table = array("Q", bytes(16 * (size + PROBE)))
        for key, entry in zip(keys, entries, strict=True):
            fp = key_fingerprint(key)
            home = fp % size
            for slot in range(home, home + PROBE):
                if table[2 * slot] in (0, fp):
                    table[2 * slot], table[2 * slot + 1] = fp, entry
                    break
            else:
                break  # a run longer than PROBE: a bigger table
        else:
            return size, table
        size *= 2


def _listing(text: str, found: _Found) -> bytes:
    rows: list[list[Any]] = []
    for n in range(min(LISTED, len(found.starts) // 2)):
        start, end = found.starts[2 * n], found.starts[2 * n + 1]
        key = found.keys[n] if found.keys is not None else None
        rows.append([key if key is None else key[: KEY_CHARS + 1], start, end, text[start]])
    return json.dumps(rows, ensure_ascii=True).encode("ascii")


def _encode(
    text: str, nodes: Sequence[_Found], small: int, root: tuple[int, int], base: int
) -> tuple[bytes, bytes]:
    """(the nodes' listings and tables, the head naming where each sits from `base`)."""
    blocks: list[bytes] = []
    rows: list[bytes] = []
    offset = base
    for node in nodes:
        listing = _listing(text, node)
        spans = zip(node.starts[0::2], node.starts[1::2], strict=True)
        entries = array("Q", (s << _LENGTH_BITS | min(e - s, _LENGTH_MAX) for s, e in spans))
        flags = len(listing)
        if node.keys is not None:  # its slots, then its entries in document order
            size, table = _slots(node.keys, entries)
            table.extend(entries)
            flags |= _OBJECT_FLAG | _ORDER_FLAG | (size.bit_length() - 1) << _SIZE_SHIFT
        else:
            table = entries
        if sys.byteorder == "big":  # the index is little-endian wherever it was built
            table.byteswap()
        rows.append(_NODE.pack(node.fp, node.start, node.end, offset, node.count, flags))
        blocks += (listing, table.tobytes())
        offset += len(listing) + len(blocks[-1])
    header = _HEADER.pack(_MAGIC, len(text), small, root[0], root[1], len(nodes))
    return b"".join(blocks), b"".join([header, *rows])
