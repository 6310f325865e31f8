"""Claim references: a tool argument that names a claim, resolved before the tool runs.

With `ClaimCheck(references=True)`, a model may pass `{"$claim": handle}` as the value of any
parameter of the host's own tools, narrowed like a window (`s3claim.store.Address`: offset and
length, line and lines, from_end, path) or `"as": "link"` for a link to it. Every host
resolves them in the run's scope (`s3claim.hosting.Host.begin`), at most `MAX_REFERENCES` a
call and `max_reference_chars` in all; what cannot be resolved is the refusal the model
reads, and the tool does not run. docs/references.md says more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import s3claim.wording as wording
from s3claim.claim_tools import read_refusal
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ClaimUnavailableError, ToolError
from s3claim.errors import describe_validation_error as describe
from s3claim.events import ClaimPassed
from s3claim.handles import is_handle
from s3claim.safejson import MAX_DEPTH, loads
from s3claim.store import Address, AddressError, LineWindow, PathRead, Read, read
from s3claim.tools import RunContext

__all__ = ["MAX_REFERENCES", "REFERENCE_KEY"]

REFERENCE_KEY = "$claim"
MAX_REFERENCES = 64
"""The most claim references one call may hold: each is a read (a GET or two on S3), made
before the tool runs, so a call holding more is refused before any is read."""


def resolve(
    arguments: Mapping[str, Any] | str,
    *,
    claim_check: ClaimCheck | None,
    context: RunContext,
    tool: str,
) -> Mapping[str, Any] | str:
    """The arguments `tool` gets: as they came when references are off (the spec's
    behaviour) or hold none, else with every reference resolved (`ToolError` when one
    fails). A JSON text is answered as JSON text; one that is no JSON object passes, for
    its framework to say what is wrong with it."""
    if claim_check is None or not claim_check.references:
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = loads(arguments)
        except ValueError:
            return arguments
        if not isinstance(parsed, dict) or not _has_references(parsed):
            return arguments
        resolved = _References(claim_check, context, tool).resolve(parsed)
        return json.dumps(resolved, ensure_ascii=False)
    if not _has_references(arguments):
        return arguments
    return _References(claim_check, context, tool).resolve(arguments)


class _Reference(BaseModel):
    """One reference's shape: the handle, an address (`s3claim.store.Address`'s names), and
    "as": "link" for a link instead of the content."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    claim: str = Field(alias=REFERENCE_KEY)
    as_: Literal["link"] | None = Field(None, alias="as")

    def __repr__(self) -> str:
        return f"Reference(handle={self.claim if is_handle(self.claim) else None!r})"


def _has_references(value: Any, depth: int = 0) -> bool:
    """Whether any value in the arguments is a reference (cheap: no store is touched).

    Arguments nested past `MAX_DEPTH` count as holding one, so resolving them refuses them
    clearly rather than hand an unresolved reference on."""
    if depth > MAX_DEPTH:
        return True
    if isinstance(value, Mapping):
        return REFERENCE_KEY in value or any(_has_references(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_references(v, depth + 1) for v in value)
    return False


class _References:
    """One call's references, resolved in its scope within `max_reference_chars` in all.

    Every reference is checked for shape before any is read, so a malformed one costs no
    request. A reference names exact content: by offset, `length` characters or the rest of
    the claim; by line, `lines` whole lines (one without it); from the end, `lines` lines (or
    the claim's every line); by path, the whole value. What does not fit in what is left of
    the call's bound is refused, never delivered cut."""

    def __init__(self, claim_check: ClaimCheck, context: RunContext, tool: str) -> None:
        self._claim_check = claim_check
        self._context = context
        self._tool = tool
        self._limit = claim_check.max_reference_chars
        self._left = self._limit

    def resolve(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if REFERENCE_KEY in arguments:
            raise ToolError(
                "invalid_arguments",
                "the arguments are an object of named parameters, not a claim reference: pass "
                'the reference as a parameter\'s value, such as {"text": {"$claim": handle}}',
            )
        found: list[tuple[_Reference, Address]] = []
        _collect(arguments, found, depth=0)
        if len(found) > MAX_REFERENCES:
            raise ToolError(
                "too_many_references",
                f"this call holds {len(found)} claim references, and a call may hold at most "
                f"{MAX_REFERENCES}: pass fewer, narrowed with offset and length, line and "
                "lines, or path",
            )
        values = [self._value(ref, address) for ref, address in found]
        replaced = _replace(arguments, iter(values))
        assert isinstance(replaced, dict)
        return replaced

    def _refuse(self) -> ToolError:
        return ToolError(
            "reference_too_large",
            f"the claim references in this call name more than {self._limit} characters in "
            "all (max_reference_chars): narrow them with offset and length, line and lines, "
            "or path",
        )

    def _value(self, ref: _Reference, address: Address) -> Any:
        handle = ref.claim if is_handle(ref.claim) else None
        context = self._context
        try:
            if ref.as_ == "link":
                value, chars = self._link(handle), 0
            elif handle is None:  # malformed: refused here, it never reaches the store
                raise ClaimUnavailableError
            else:
                value, chars = self._read(handle, address)
        except Exception as exc:  # told to the model, never the run's end
            raise read_refusal(exc, context, handle, reader="claim reference") from None
        context.emit(ClaimPassed(tool=self._tool, handle=handle, chars=chars))
        return value

    def _read(self, handle: str, address: Address) -> tuple[Any, int]:
        if address.length is not None and address.length > self._left:
            raise self._refuse()  # refused before a byte is read
        # One read of at most what is left: a claim longer than that is refused after it
        # (its size is known only from the read), never delivered cut.
        length = address.length if address.length is not None else max(self._left, 1)
        answer: Read = read(
            self._claim_check.store, self._context.scope, handle, address, length=length
        )
        if isinstance(answer, LineWindow) and address.way == "line" and not answer.text:
            total = answer.total_lines
            raise ToolError(
                "no_such_line",
                f"the claim has {total} line(s) (counted at line breaks), so line "
                f"{address.line} is past its end",
            )
        if not address.covered_by(answer):
            raise self._refuse()
        self._left -= len(answer.text)
        if not isinstance(answer, PathRead):
            return answer.text, len(answer.text)
        try:  # the exact characters of one JSON value, nesting bounded like any JSON we parse
            return loads(answer.text), len(answer.text)
        except json.JSONDecodeError:
            raise ToolError(
                "invalid_arguments", f"the value at path nests deeper than {MAX_DEPTH} levels"
            ) from None

    def _link(self, handle: str | None) -> str:
        """A link to the claim (`ClaimCheck.link`, one metadata read), for the host's link
        server; the content stays where it is."""
        claim_check = self._claim_check
        base_url = claim_check.link_base_url
        if base_url is None:
            raise ToolError("links_unavailable", wording.LINKS_UNAVAILABLE_MESSAGE, own_words=True)
        if handle is None:  # malformed: refused here, it never reaches the store
            raise ClaimUnavailableError
        return claim_check.link(handle, scope=self._context.scope, base_url=base_url)


def _collect(value: Any, found: list[tuple[_Reference, Address]], *, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ToolError("invalid_arguments", f"the arguments nest deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        if REFERENCE_KEY in value:
            found.append(_shape(value))
            return
        for each in value.values():
            _collect(each, found, depth=depth + 1)
    elif isinstance(value, list | tuple):
        for each in value:
            _collect(each, found, depth=depth + 1)


def _shape(value: Mapping[str, Any]) -> tuple[_Reference, Address]:
    if any(isinstance(v, Mapping | list | tuple) for v in value.values()):
        raise ToolError(
            "invalid_arguments",
            "a claim reference holds a handle and numbers or a path only: it cannot hold an "
            "object, a list or another reference",
        )
    try:
        reference = _Reference.model_validate(dict(value))
    except ValidationError as exc:
        raise ToolError("invalid_arguments", f"claim reference: {describe(exc)}") from None
    given = {k: v for k, v in value.items() if k not in (REFERENCE_KEY, "as")}
    if reference.as_ is not None and given:
        raise ToolError(
            "invalid_arguments",
            'a link reference ("as": "link") names the whole claim: the code that reads the '
            "link narrows it (its query: offset and length, line and lines, path)",
        )
    try:
        address = Address.of(given)
    except AddressError as exc:
        raise ToolError("invalid_arguments", f"claim reference: {exc.message}") from None
    if address.first_member:  # a page of a listing: nothing a reference can deliver
        message = wording.member_page_refused("a claim reference")
        raise ToolError("invalid_arguments", f"claim reference: {message}")
    if address.way == "line" and address.lines is None:  # a line, by itself, is one line
        address = address.model_copy(update={"lines": 1})
    return reference, address


def _replace(value: Any, values: Iterator[Any]) -> Any:
    """The same structure, each reference (in `_collect`'s order) replaced by its value."""
    if isinstance(value, Mapping):
        if REFERENCE_KEY in value:
            return next(values)
        return {k: _replace(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(v, values) for v in value]
    return value
