"""What the engine asks of a store.

A store serves one claim as `ClaimRanges`: ranges of its text (in characters) and of its
index (in bytes, `s3claim._reading._index`), from the start or from the end, each answer
carrying the claim's `Facts`. Every reading mode (`_plans`, `_json_path`) is a function of
a claim's ranges, asking for the ranges it needs one at a time, whatever the store.

Every range is served only after the store has checked that the claim stands in the
reader's scope (the handle, the run, the expiry, the seal): a mode never sees a byte of a
claim that is not there for it. A range past the end is empty, never an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ClaimRanges", "Facts", "IndexPart", "TextPart"]


@dataclass(frozen=True, slots=True)
class Facts:
    """What a store knows of every claim without reading it: its length in characters and
    in lines (a line ends at `\\n`)."""

    chars: int
    lines: int


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


class ClaimRanges(Protocol):
    """One claim as a store serves it to the engine (checked, in its reader's scope)."""

    def text(self, start: int, end: int) -> TextPart: ...

    def tail(self, chars: int) -> TextPart: ...

    def index(self, start: int, end: int) -> IndexPart: ...

    def index_tail(self, size: int) -> IndexPart: ...

    def stream(self) -> Iterator[str]:
        """The whole text, start to end, in pieces (a search reads it so)."""
        ...
