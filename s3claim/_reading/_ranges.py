"""What the engine asks of a store, and how a plan's asks are answered.

A store serves one claim as `ClaimRanges`: ranges of its text (in characters) and of its
index (in bytes, `s3claim._reading._index`), from the start or from the end, each answer
carrying the claim's `Facts`. Every reading mode is a *plan*: a generator that yields the
ranges it needs one at a time and returns its answer, driven by `run` over a store's ranges,
so the mode is written apart from any store's I/O.

Every range is served only after the store has checked that the claim stands in the
reader's scope (the handle, the run, the expiry, the seal): a plan never sees a byte of a
claim that is not there for it. A range past the end is empty, never an error.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast

__all__ = [
    "ClaimRanges",
    "Facts",
    "Index",
    "IndexPart",
    "IndexTail",
    "Plan",
    "Request",
    "Tail",
    "Text",
    "TextPart",
    "index_range",
    "index_tail",
    "run",
    "text_range",
    "text_tail",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Facts:
    """What a store knows of every claim without reading it: its length in characters and
    in lines (a line ends at `\\n`)."""

    chars: int
    lines: int


@dataclass(frozen=True, slots=True)
class Text:
    """Characters [start, end) of the claim (fewer at its end)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Tail:
    """The claim's last `chars` characters (all of it when it is shorter)."""

    chars: int


@dataclass(frozen=True, slots=True)
class Index:
    """Bytes [start, end) of the claim's index (fewer at its end)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class IndexTail:
    """The last `size` bytes of the claim's index (all of it when it is shorter)."""

    size: int


Request = Text | Tail | Index | IndexTail


@dataclass(frozen=True, slots=True)
class TextPart:
    """Characters of the claim: `text` starts at character `offset`."""

    text: str
    offset: int
    facts: Facts

    def __repr__(self) -> str:  # the text is tool content: never in a repr
        return f"TextPart(offset={self.offset}, chars={len(self.text)}, facts={self.facts})"


@dataclass(frozen=True, slots=True)
class IndexPart:
    """Bytes of the claim's index; `data` is None when the claim has none."""

    data: bytes | None
    facts: Facts

    def __repr__(self) -> str:
        size = None if self.data is None else len(self.data)
        return f"IndexPart(bytes={size}, facts={self.facts})"


Part = TextPart | IndexPart
Plan = Generator[Request, Part, _T]
"""A reading mode: yields `Request`s, is sent each one's `Part`, returns its answer."""


class ClaimRanges(Protocol):
    """One claim as a store serves it to the engine (checked, in its reader's scope)."""

    def text(self, start: int, end: int) -> TextPart: ...

    def tail(self, chars: int) -> TextPart: ...

    def index(self, start: int, end: int) -> IndexPart: ...

    def index_tail(self, size: int) -> IndexPart: ...

    def stream(self) -> Iterator[str]:
        """The whole text, start to end, in pieces (a search reads it so)."""
        ...


def text_range(start: int, end: int) -> Plan[TextPart]:
    part = yield Text(start, end)
    assert isinstance(part, TextPart)
    return part


def text_tail(chars: int) -> Plan[TextPart]:
    part = yield Tail(chars)
    assert isinstance(part, TextPart)
    return part


def index_range(start: int, end: int) -> Plan[IndexPart]:
    part = yield Index(start, end)
    assert isinstance(part, IndexPart)
    return part


def index_tail(size: int) -> Plan[IndexPart]:
    part = yield IndexTail(size)
    assert isinstance(part, IndexPart)
    return part


def _answer(ranges: ClaimRanges, request: Request) -> Part:
    match request:
        case Text(start, end):
            return ranges.text(start, end)
        case Tail(chars):
            return ranges.tail(chars)
        case Index(start, end):
            return ranges.index(start, end)
        case IndexTail(size):
            return ranges.index_tail(size)


def run(plan: Plan[_T], ranges: ClaimRanges) -> _T:
    """Drive `plan` over a store's ranges: its answer, or the first failure."""
    try:
        request = next(plan)
        while True:
            request = plan.send(_answer(ranges, request))
    except StopIteration as done:
        return cast(_T, done.value)
    finally:
        plan.close()
