"""Claim references: a tool argument that names a claim, resolved by the host before the tool runs.

A reference is a JSON object `{"$claim": handle}`, anywhere in a tool's arguments, optionally
narrowed the way the reading tools address a claim: `offset` (and `length`) in characters,
`line` (from 1, and `lines`) in lines, or `path` (a JSON Pointer: the value itself, parsed, so
a tool taking an object gets an object). The host resolves every reference in the run's
scope, then validates the resolved arguments against the tool's parameters as usual, so the
model passes a 92,000-character contract to a tool in a few dozen characters of its own.

The rules are the claim tools' rules: a handle that cannot be redeemed is the uniform
`claim_unavailable` refusal and the tool does not run; what one call resolves is bounded
(`ClaimCheck(max_reference_chars=...)`); events name the handle and a size, never content.
Resolution is one pass: a resolved value is handed over as it is, never searched for
references of its own (and tool output that imitates a reference is neutralised by the
result boundary before it could be checked in).

`resolve_references` is the one function every host calls: the runner, the framework
adapters and the MCP proxy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError

from s3claim._reading import NoIndexError, PathError, at_most_lines
from s3claim._wording import NOT_JSON_MESSAGE, REFERENCE_DESCRIPTION
from s3claim.claim_tools import _reason, _store_failed, _unavailable
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ClaimUnavailableError, ToolError
from s3claim.events import ClaimFetchFailed, ClaimPassed
from s3claim.handles import is_handle
from s3claim.safejson import MAX_DEPTH, loads
from s3claim.store import ClaimCheckStore, LineReadableStore, PathReadableStore
from s3claim.tools import RunContext, describe_validation_error

__all__ = [
    "REFERENCE_KEY",
    "described",
    "has_references",
    "resolve_arguments",
    "resolve_references",
]

REFERENCE_KEY = "$claim"
_log = logging.getLogger("s3claim")
_NARROWINGS = ({"offset", "length"}, {"line", "lines"}, {"path"})


class Reference(BaseModel):
    """One reference's shape: the handle, and at most one way to narrow it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    claim: str = Field(alias=REFERENCE_KEY)
    offset: NonNegativeInt | None = None
    length: PositiveInt | None = None
    line: PositiveInt | None = None
    lines: PositiveInt | None = None
    path: str | None = None

    def __repr__(self) -> str:
        return f"Reference(handle={self.claim if is_handle(self.claim) else None!r})"


def has_references(value: Any, depth: int = 0) -> bool:
    """Whether any value in the arguments is a reference (cheap: no store is touched).

    Arguments nested past `MAX_DEPTH` count as holding one, so resolving them refuses them
    clearly rather than hand an unresolved reference on."""
    if depth > MAX_DEPTH:
        return True
    if isinstance(value, Mapping):
        return REFERENCE_KEY in value or any(has_references(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_references(v, depth + 1) for v in value)
    return False


def described(description: str, claim_check: ClaimCheck | None) -> str:
    """A tool's description as the model reads it: one line more when references resolve."""
    if claim_check is None or not claim_check.references:
        return description
    return f"{description}\n\n{REFERENCE_DESCRIPTION}" if description else REFERENCE_DESCRIPTION


def resolve_arguments(
    arguments: Mapping[str, Any],
    *,
    claim_check: ClaimCheck | None,
    tool: str,
    context: RunContext,
) -> Mapping[str, Any]:
    """What a host hands its tool: the arguments as they came when references are off (the
    spec's behaviour), else with every reference resolved (`ToolError` when one fails)."""
    if claim_check is None or not claim_check.references or not has_references(arguments):
        return arguments
    return resolve_references(arguments, claim_check=claim_check, tool=tool, context=context)


def resolve_references(
    arguments: Mapping[str, Any], *, claim_check: ClaimCheck, tool: str, context: RunContext
) -> dict[str, Any]:
    """The arguments with every reference replaced by what it names (`ToolError` if one fails).

    Every reference is checked for shape before any is read, so a malformed one costs no
    request; the characters resolved in one call, all references together, are bounded.
    """
    if REFERENCE_KEY in arguments:
        raise ToolError(
            "invalid_arguments",
            "the arguments are an object of named parameters, not a claim reference: pass the "
            'reference as a parameter\'s value, such as {"text": {"$claim": handle}}',
        )
    found: list[Reference] = []
    _collect(arguments, found, depth=0)
    if not found:
        return dict(arguments)
    budget = _Budget(claim_check.max_reference_chars)
    values = [_resolve(ref, claim_check.store, context, tool=tool, budget=budget) for ref in found]
    replaced = _replace(arguments, iter(values))
    assert isinstance(replaced, dict)
    return replaced


def _collect(value: Any, found: list[Reference], *, depth: int) -> None:
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


def _shape(value: Mapping[str, Any]) -> Reference:
    if any(isinstance(v, Mapping | list | tuple) for v in value.values()):
        raise ToolError(
            "invalid_arguments",
            "a claim reference holds a handle and numbers or a path only: it cannot hold an "
            "object, a list or another reference",
        )
    try:
        reference = Reference.model_validate(dict(value))
    except ValidationError as exc:
        raise ToolError(
            "invalid_arguments", f"claim reference: {describe_validation_error(exc)}"
        ) from None
    given = {k for k in value if k != REFERENCE_KEY}
    if sum(1 for family in _NARROWINGS if given & family) > 1:
        raise ToolError(
            "invalid_arguments",
            "a claim reference narrows one way at most: offset and length, line and lines, or path",
        )
    return reference


def _replace(value: Any, values: Iterator[Any]) -> Any:
    """The same structure, each reference (in `_collect`'s order) replaced by its value."""
    if isinstance(value, Mapping):
        if REFERENCE_KEY in value:
            return next(values)
        return {k: _replace(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(v, values) for v in value]
    return value


class _Budget:
    """What is left of one call's `max_reference_chars`."""

    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def refuse(self) -> ToolError:
        return ToolError(
            "reference_too_large",
            f"the claim references in this call name more than {self.limit} characters in "
            "all (max_reference_chars): narrow them with offset and length, line and lines, "
            "or path",
        )

    def take(self, chars: int) -> None:
        if chars > self.left:
            raise self.refuse()
        self.left -= chars


def _resolve(
    ref: Reference, store: ClaimCheckStore, context: RunContext, *, tool: str, budget: _Budget
) -> Any:
    handle = ref.claim if is_handle(ref.claim) else None
    try:
        if handle is None:  # malformed: refused here, it never reaches the store
            raise ClaimUnavailableError
        if ref.path is not None:
            value, chars = _by_path(store, context, handle, ref.path, budget)
        elif ref.line is not None or ref.lines is not None:
            text = _by_lines(store, context, handle, ref.line or 1, ref.lines or 1, budget)
            value, chars = text, len(text)
        else:
            text = _by_offset(store, context, handle, ref.offset or 0, ref.length, budget)
            value, chars = text, len(text)
    except ClaimUnavailableError:
        raise _unavailable(context, handle) from None
    except ToolError:
        raise
    except Exception as exc:  # a store fault is told to the model, never the run's end
        _log.warning("claim reference: store failed for %s (%s)", handle, _reason(exc))
        context.emit(ClaimFetchFailed(handle=handle, error=type(exc).__name__))
        raise _store_failed(exc) from None
    context.emit(ClaimPassed(tool=tool, handle=handle, chars=chars))
    return value


def _by_offset(
    store: ClaimCheckStore,
    context: RunContext,
    handle: str,
    offset: int,
    length: int | None,
    budget: _Budget,
) -> str:
    if length is not None and length > budget.left:
        raise budget.refuse()  # refused before a byte is read
    # One read of at most what is left: a claim longer than that is refused after it
    # (its size is known only from the read), never delivered cut.
    limit = length if length is not None else max(budget.left, 1)
    window = store.fetch(context.scope, handle, offset, limit)
    if length is None and window.next_offset is not None:
        raise budget.refuse()
    budget.take(len(window.text))
    return window.text


def _by_path(
    store: ClaimCheckStore, context: RunContext, handle: str, pointer: str, budget: _Budget
) -> tuple[Any, int]:
    if not isinstance(store, PathReadableStore):
        raise ToolError("not_json", NOT_JSON_MESSAGE, own_words=True)
    try:
        answer = store.read_path(context.scope, handle, pointer, limit=max(budget.left, 1))
    except PathError as exc:
        raise ToolError(exc.kind, exc.message) from None
    except NoIndexError:
        raise ToolError("not_json", NOT_JSON_MESSAGE, own_words=True) from None
    if answer.next_offset is not None:
        raise budget.refuse()
    budget.take(len(answer.text))
    try:  # the exact characters of one JSON value, nesting bounded like any JSON we parse
        return loads(answer.text), len(answer.text)
    except json.JSONDecodeError:
        raise ToolError(
            "invalid_arguments", f"the value at path nests deeper than {MAX_DEPTH} levels"
        ) from None


def _by_lines(
    store: ClaimCheckStore,
    context: RunContext,
    handle: str,
    line: int,
    lines: int,
    budget: _Budget,
) -> str:
    """Lines `line` to `line + lines - 1` (from 1), each with its line break: one read by
    line of at most what is left of the budget (a line ends at `\\n`, so `\\r\\n` is one
    break, kept whole). Lines that do not fit in it are refused, never delivered cut."""
    if not isinstance(store, LineReadableStore):
        raise ToolError("invalid_arguments", "this store cannot read a claim by lines")
    read = store.read_line(context.scope, handle, line, limit=max(budget.left, 1))
    if not read.text:
        raise ToolError(
            "no_such_line",
            f"the claim has {read.total_lines} line(s) (counted at line breaks), so line "
            f"{line} is past its end",
        )
    wanted = at_most_lines(read, lines, from_end=False)
    short = wanted is read and read.next_offset is not None and read.text.count("\\n") < lines
    if short or not read.whole:  # the lines asked for run on past what is left
        raise budget.refuse()
    budget.take(len(wanted.text))
    return wanted.text
