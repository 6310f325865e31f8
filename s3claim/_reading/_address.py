"""How a claim is addressed: one model of a window, for every door that reads one.

A window of a claim is named the same way wherever it is asked for (the `fetch_result`
tool's arguments, a claim reference, a link's query, a resource URI, the command line's
flags): at most one way to it, `offset` (characters from 0, the default), `line` (lines
from 1), `from_end`, or `path` (a JSON Pointer); `lines` keeps that many whole lines of a
read by line or from the end; `length` bounds the window's characters. Beside `path`,
`offset` is an offset into the value's members: the page of its member listing from that
member (0 is the read by path itself), for the doors that show a listing. `Address` is that
model, validated once here, and `RangedStore.read` (`s3claim.store`) the one read of it, so
every door reads a window the same way. Doors differ only in the bounds they set on `length`
and in how they show the answer; every word a reader is told is in `s3claim.wording`.

Text doors (a query string, a URI, flags) give strings: `Address.from_strings` reads
numbers as ASCII digits only, at most `MAX_DIGITS` of them, before any conversion, so no
input can make a number too large to parse or to use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

import s3claim.wording as wording
from s3claim.errors import describe_validation_error

from ._json_path import PathRead
from ._lines import LineWindow
from ._plans import Window

__all__ = ["MAX_DIGITS", "Address", "AddressError", "Read", "Way"]

Way = Literal["offset", "line", "from_end", "path"]
Read = Window | LineWindow | PathRead
"""What a read of an address answers."""
MAX_DIGITS = 18
"""The most digits a number may have in a text door: more than any claim's length."""
_NUMBERS = ("offset", "line", "lines", "length")
_NAMES = ("offset", "length", "line", "lines", "from_end", "path")
_SYNONYMS = {"limit": "length"}  # fetch_result's name for a window's length
_TRUE, _FALSE = ("", "1", "true"), ("0", "false")


class AddressError(ValueError):
    """An address no claim can be read by, with the one line that says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Address(BaseModel):
    """One window of a claim: at most one way to it, and what bounds it."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    offset: NonNegativeInt | None = None
    line: PositiveInt | None = None
    from_end: bool = False
    path: str | None = None
    lines: PositiveInt | None = None
    length: PositiveInt | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Address:
        # Which ways were given is what counts (an explicit offset=0 beside line is refused);
        # only from_end=false is no way at all, and offset beside path alone pages its members.
        given = {w for w in wording.ADDRESSES if w in self.model_fields_set}
        if not self.from_end:
            given.discard("from_end")
        if given == {"offset", "path"}:
            given = {"path"}
        if len(given) > 1:
            raise PydanticCustomError("addresses", wording.addresses_message(given))
        if self.lines is not None and self.line is None and not self.from_end:
            raise PydanticCustomError("lines", wording.LINES_WITHOUT_LINE_MESSAGE)
        return self

    @classmethod
    def of(cls, values: Mapping[str, object]) -> Address:
        """The address `values` name (typed values, as JSON gives them); `AddressError`
        saying what is wrong, never quoting a value."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise AddressError(describe_validation_error(exc)) from None

    @classmethod
    def from_strings(cls, pairs: Iterable[tuple[str, str]]) -> Address:
        """The address a text door names (a query string's pairs, a URI's, flags): numbers
        as ASCII digits, `from_end` as a flag (no value, 1 or true; 0 or false); `limit`
        (fetch_result's word) for `length`."""
        values: dict[str, object] = {}
        for given, text in pairs:
            name = _SYNONYMS.get(given, given)
            if name not in _NAMES:
                raise AddressError(wording.unknown_address_message(given, _NAMES))
            if name in values:
                raise AddressError(wording.given_twice_message(name))
            values[name] = _typed(name, text)
        return cls.of(values)

    @property
    def way(self) -> Way:
        """How the window is found."""
        if self.path is not None:
            return "path"
        if self.line is not None:
            return "line"
        return "from_end" if self.from_end else "offset"

    @property
    def first_member(self) -> int:
        """The first member a read by path lists: `offset` beside `path` (past 0, a page of
        the members, without the value's characters), else 0."""
        return (self.offset or 0) if self.path is not None else 0

    def window(self, *, default: int, most: int) -> int:
        """The window's length in characters: `length`, else the door's `default`;
        `AddressError` past the door's `most`."""
        length = self.length if self.length is not None else default
        if length > most:
            raise AddressError(wording.length_too_long_message(most))
        return length

    def covered_by(self, read: Read) -> bool:
        """Whether `read` holds all this address names, none of it cut off by the window:
        what a door that must never deliver part of it (a claim reference) checks.

        By offset: `length` characters, or the rest of the claim without one; by line or
        from the end: `lines` whole lines (one, by line, without it; the claim's every line
        from the end), or all there are; by path: the whole value."""
        if isinstance(read, PathRead):
            return read.next_offset is None and not read.is_page
        if isinstance(read, Window):
            return read.next_offset is None or (
                self.length is not None and len(read.text) == self.length
            )
        if not read.whole:
            return False
        held = (
            0
            if read.last_line is None or read.first_line is None
            else (read.last_line - read.first_line + 1)
        )
        if self.from_end:
            return read.offset == 0 or (self.lines is not None and held >= self.lines)
        return read.next_offset is None or held >= (self.lines or 1)


def _typed(name: str, text: str) -> object:
    if name in _NUMBERS:
        if not (0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()):
            raise AddressError(wording.whole_number_message(name, digits=MAX_DIGITS))
        return int(text)
    if name == "from_end":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise AddressError(wording.FROM_END_FLAG_MESSAGE)
    return text
