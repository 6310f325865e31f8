"""What the engine asks of a store, and how a plan's asks are answered, sync or async.

A store serves one claim as `ClaimRanges`: ranges of its text (in characters) and of its
index (in bytes, `s3claim._reading._index`), from the start or from the end, each answer
carrying the claim's `Facts`. Every reading mode is a *plan*: a generator that yields the
ranges it needs one at a time and returns its answer, so it is written once and driven by
`run` over a sync store's ranges or by `arun` over an async one's.

Every range is served only after the store has checked that the claim stands in the
reader's scope (the handle, the run, the expiry, the seal): a plan never sees a byte of a
claim that is not there for it. A range past the end is empty, never an error.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, cast

__all__ = [
    "AsyncClaimRanges",
    "ClaimRanges",
    "Facts",
    "IndexPart",
    "Plan",
    "Request",
    "TextPart",
    "arun",
    "index_range",
    "index_tail",
    "run",
    "text_range",
    "text_tail",
]

_T = TypeVar("_T")
_P = TypeVar("_P", "TextPart", "IndexPart")


@dataclass(frozen=True, slots=True)
class Facts:
    """What a store knows of every claim without reading it: its length in characters and
    in lines (a line ends at `\\n`)."""

    chars: int
    lines: int


@dataclass(frozen=True, slots=True)
class Request:
    """One range a plan asks for: the answer of the `ClaimRanges` method `method` to `args`."""

    method: Literal["text", "tail", "index", "index_tail"]
    args: tuple[int, ...]


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


Plan = Generator[Request, TextPart | IndexPart, _T]
"""A reading mode: yields `Request`s, is sent each one's part, returns its answer."""


class ClaimRanges(Protocol):
    """One claim as a sync store serves it to the engine (checked, in its reader's scope).

    `text` is characters [start, end), `tail` the last `chars` characters; `index` and
    `index_tail` the same of the index, in bytes. Each is cut short at the end.
    """

    def text(self, start: int, end: int) -> TextPart: ...

    def tail(self, chars: int) -> TextPart: ...

    def index(self, start: int, end: int) -> IndexPart: ...

    def index_tail(self, size: int) -> IndexPart: ...

    def stream(self) -> Iterator[str]:
        """The whole text, start to end, in pieces (a search reads it so)."""
        ...


class AsyncClaimRanges(Protocol):
    """`ClaimRanges` for coroutines (no stream: the async faces do not search)."""

    async def text(self, start: int, end: int) -> TextPart: ...

    async def tail(self, chars: int) -> TextPart: ...

    async def index(self, start: int, end: int) -> IndexPart: ...

    async def index_tail(self, size: int) -> IndexPart: ...


def _ask(kind: type[_P], request: Request) -> Plan[_P]:
    part = yield request
    assert isinstance(part, kind)
    return part


def text_range(start: int, end: int) -> Plan[TextPart]:
    return _ask(TextPart, Request("text", (start, end)))


def text_tail(chars: int) -> Plan[TextPart]:
    return _ask(TextPart, Request("tail", (chars,)))


def index_range(start: int, end: int) -> Plan[IndexPart]:
    return _ask(IndexPart, Request("index", (start, end)))


def index_tail(size: int) -> Plan[IndexPart]:
    return _ask(IndexPart, Request("index_tail", (size,)))


def run(plan: Plan[_T], ranges: ClaimRanges) -> _T:
    """Drive `plan` over a sync store's ranges: its answer, or the first failure."""
    try:
        request = next(plan)
        while True:
            request = plan.send(getattr(ranges, request.method)(*request.args))
    except StopIteration as done:
        return cast(_T, done.value)
    finally:
        plan.close()


async def arun(plan: Plan[_T], ranges: AsyncClaimRanges) -> _T:
    """Drive `plan` over an async store's ranges, on the event loop."""
    try:
        request = next(plan)
        while True:
            request = plan.send(await getattr(ranges, request.method)(*request.args))
    except StopIteration as done:
        return cast(_T, done.value)
    finally:
        plan.close()
