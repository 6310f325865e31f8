"""Hosting the claim check: what every host does with a tool call, in order, written once.

A host (s3claim's `AgentRunner`, the framework adapters in `s3claim.integrations`, the MCP
proxy, or one of your own) runs an agent's tools and hands the model their results. For a
claim check to behave the same whoever hosts it, each host takes the same three steps:

1. **Before the tool runs**, `resolve_arguments` (or `resolve_references` directly): a tool
   argument that is a claim reference (`{"$claim": handle}`, when the `ClaimCheck` allows
   them) becomes what it names, in the run's scope, bounded per call; a reference that
   cannot be redeemed is the uniform `claim_unavailable` refusal and the tool does not run.
2. **After it returns**, the result boundary (`result_text` for a tool with a declared type,
   `text_of` for another framework's), then `admit`: the one path from a result's text into
   the conversation, checking it in when it is oversized and falling back, never failing
   the run, when the store does.
3. **For the claim tools themselves** (`fetch_result`, `search_result`: `claim_tools(store)`),
   `run_claim_tool`: the arguments validated, the scope the host's (never the model's),
   every failure the error result the model reads.

Each step emits the run's events and never lets a store fault escape into the agent's
loop. `tests/test_claim_tool_hosts.py` runs one suite through every host of ours.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError

import s3claim.wording as wording
from s3claim._boundary import folded_view, neutralise, refusal_text, result_text, text_of
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ToolError
from s3claim.events import (
    ClaimFetchFailed,
    ClaimPassed,
    ClaimUnavailable,
    ToolFailed,
    ToolResultStored,
    ToolResultStoreFailed,
    ToolResultTruncated,
)
from s3claim.handles import is_handle
from s3claim.safejson import MAX_DEPTH, JSONTooDeepError, loads
from s3claim.store import (
    ClaimCheckStore,
    LineReadableStore,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathReadableStore,
    at_most_lines,
)
from s3claim.telemetry import Operation, check_in_operation, names
from s3claim.tools import RunContext, Tool, describe_validation_error
from s3claim.turns import CheckInReason

__all__ = [
    "REFERENCE_KEY",
    "ToolAnswer",
    "admit",
    "claim_unavailable",
    "described",
    "failure_answer",
    "failure_reason",
    "folded_view",
    "has_references",
    "neutralise",
    "read_refusal",
    "refusal_text",
    "resolve_arguments",
    "resolve_references",
    "result_text",
    "run_claim_tool",
    "store_refusal",
    "text_of",
    "truncate",
]

_log = logging.getLogger("s3claim")


# -- 1. before the tool runs: claim references -------------------------------------------

REFERENCE_KEY = "$claim"
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
    as_: Literal["link"] | None = Field(None, alias="as")
    """"link": the tool receives a link to the claim (`s3claim.links`), not its content."""

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
    said = wording.REFERENCE_DESCRIPTION
    if claim_check.link_base_url is not None:
        said = f"{said} {wording.REFERENCE_LINK_DESCRIPTION}"
    return f"{description}\n\n{said}" if description else said


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
    values = [_resolve(ref, claim_check, context, tool=tool, budget=budget) for ref in found]
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
    given = {k for k in value if k not in (REFERENCE_KEY, "as")}
    if reference.as_ is not None and given:
        raise ToolError(
            "invalid_arguments",
            'a link reference ("as": "link") names the whole claim: the code that reads the '
            "link narrows it (its query: offset and length, line and lines, path)",
        )
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
    ref: Reference, claim_check: ClaimCheck, context: RunContext, *, tool: str, budget: _Budget
) -> Any:
    handle = ref.claim if is_handle(ref.claim) else None
    store = claim_check.store
    try:
        if ref.as_ == "link":
            value, chars = _as_link(claim_check, context, handle), 0
        elif handle is None:  # malformed: refused here, it never reaches the store
            raise ClaimUnavailableError
        elif ref.path is not None:
            value, chars = _by_path(store, context, handle, ref.path, budget)
        elif ref.line is not None or ref.lines is not None:
            text = _by_lines(store, context, handle, ref.line or 1, ref.lines or 1, budget)
            value, chars = text, len(text)
        else:
            text = _by_offset(store, context, handle, ref.offset or 0, ref.length, budget)
            value, chars = text, len(text)
    except Exception as exc:  # told to the model, never the run's end
        raise read_refusal(exc, context, handle, reader="claim reference") from None
    context.emit(ClaimPassed(tool=tool, handle=handle, chars=chars))
    return value


def _as_link(claim_check: ClaimCheck, context: RunContext, handle: str | None) -> str:
    """A link to the claim (`ClaimCheck.link`, one metadata read), for the host's link
    server; the content stays where it is."""
    base_url = claim_check.link_base_url
    if base_url is None:
        raise ToolError("links_unavailable", wording.LINKS_UNAVAILABLE_MESSAGE, own_words=True)
    if handle is None:  # malformed: refused here, it never reaches the store
        raise ClaimUnavailableError
    return claim_check.link(handle, scope=context.scope, base_url=base_url)


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
        raise NoIndexError  # refused as a claim that is not JSON (`read_refusal`)
    answer = store.read_path(context.scope, handle, pointer, limit=max(budget.left, 1))
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


# -- 2. after it returns: admission ------------------------------------------------


def truncate(text: str, limit: int) -> str:
    """The behaviour without a claim check: keep `limit` characters, and say the rest is gone."""
    return f"{text[:limit]}\n\n{wording.truncation(total_chars=len(text), kept_chars=limit)}"


def admit(
    text: str,
    *,
    tool: str,
    context: RunContext,
    claim_check: ClaimCheck | None,
    limit: int | None = None,
    searchable: bool = False,
    forced: CheckInReason | None = None,
) -> str:
    """What the conversation receives for `text`, a result that has passed the boundary.

    `limit` is where an oversized result is cut without a working claim check. The runner
    gives its `max_tool_result_chars`; hosts that have none leave it to the tool's policy:
    without a store, what passes through untouched (below the threshold) is the most that may.
    `searchable`: the agent has `search_result` for the claim check's store.
    `forced`: why a result under the threshold is checked in (`turn_budget` or `room`, from
    `s3claim.turns`); the event and the span say so.
    """
    if limit is None:
        if claim_check is None:
            raise ValueError("admit without a claim check needs a limit")
        limit = claim_check.policy_for(tool).threshold_chars
    owner = claim_check.store if claim_check is not None else None
    with check_in_operation(owner, context.scope, tool=tool) as op:
        op.set(chars_total=len(text))
        forced = None if forced == "threshold" else forced
        if forced is not None and claim_check is not None:
            op.set(check_in_reason=forced)
        admitted = _admit(text, tool, context, claim_check, limit, searchable, forced, op)
        if op.outcome is None:  # not checked in: passed or cut, without a claim check
            op.outcome = "passed" if admitted is text else "truncated"
            op.set(chars_shown=len(admitted))
        elif op.outcome == "store_failed":
            op.set(chars_shown=len(admitted))
        return admitted


def _admit(
    text: str,
    tool: str,
    context: RunContext,
    claim_check: ClaimCheck | None,
    limit: int,
    searchable: bool,
    forced: CheckInReason | None,
    op: Operation,
) -> str:
    if claim_check is None:
        if len(text) <= limit:
            return text
        context.emit(
            ToolResultTruncated(
                tool=tool, agent=context.agent, size_chars=len(text), kept_chars=limit
            )
        )
        return truncate(text, limit)
    try:
        checked = claim_check.check_in(
            text, tool=tool, scope=context.scope, searchable=searchable, force=forced is not None
        )
    except Exception as exc:  # a store fault degrades the result, never the run
        op.outcome = "store_failed"
        op.attributes[names.ERROR_TYPE] = type(exc).__name__
        _log.warning("check-in failed for %s (%d chars): %s", tool, len(text), type(exc).__name__)
        context.emit(
            ToolResultStoreFailed(
                tool=tool,
                agent=context.agent,
                size_chars=len(text),
                kept_chars=min(len(text), limit),
                error=type(exc).__name__,
            )
        )
        return text if len(text) <= limit else truncate(text, limit)
    if checked.handle is not None:
        context.emit(
            ToolResultStored(
                tool=tool,
                agent=context.agent,
                handle=checked.handle,
                size_chars=checked.total_chars,
                inline_chars=len(checked.text),
                reason=forced or "threshold",
            )
        )
    return checked.text


# -- 3. the claim tools, and what a failure tells the model -------------------------------


def read_refusal(
    exc: Exception, context: RunContext, handle: str | None, *, reader: str
) -> ToolError:
    """What the model is told of a read of a claim that failed (the claim tool's, a
    reference's): the uniform refusal, the reading mode's own refusal, or the store's fault,
    logged by type and emitted as `claim_fetch_failed`."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, ClaimUnavailableError):
        return claim_unavailable(context, handle)
    if isinstance(exc, NoLineIndexError):
        return ToolError("cannot_read_by_line", wording.NO_LINE_INDEX_MESSAGE, own_words=True)
    if isinstance(exc, PathError):
        return ToolError(exc.kind, exc.message)
    if isinstance(exc, NoIndexError):
        return ToolError("not_json", wording.NOT_JSON_MESSAGE, own_words=True)
    _log.warning("%s: store failed for %s (%s)", reader, handle, failure_reason(exc))
    context.emit(ClaimFetchFailed(handle=handle, error=type(exc).__name__))
    return store_refusal(exc)


def claim_unavailable(context: RunContext, handle: str | None) -> ToolError:
    context.emit(ClaimUnavailable(handle=handle))
    return ToolError("claim_unavailable", wording.UNAVAILABLE_MESSAGE)


def store_refusal(exc: Exception) -> ToolError:
    """What the model is told of a store fault: try again only when that may help.

    A damaged object is the uniform refusal, as a handle that cannot be redeemed: the model
    can do nothing different with it, and trying again reads the same bytes. A store that
    refuses this process (access, bucket, credentials, region) will refuse it again.
    """
    if isinstance(exc, ClaimStoreError) and exc.reason == "damaged":
        return ToolError("claim_unavailable", wording.UNAVAILABLE_MESSAGE)
    if isinstance(exc, ClaimStoreError) and not exc.transient:
        return ToolError("store_unavailable", wording.STORE_REFUSED_MESSAGE)
    return ToolError("store_unavailable", wording.STORE_UNAVAILABLE_MESSAGE)


def failure_reason(exc: Exception) -> str:
    """For the log line: the error's type, and a store error's reason."""
    reason = getattr(exc, "reason", None)
    return f"{type(exc).__name__}: {reason}" if isinstance(reason, str) else type(exc).__name__


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a host hands back for one tool call: the text, and whether it is an error result."""

    text: str
    is_error: bool = False

    def __repr__(self) -> str:  # the text can be tool content: never in a repr
        return f"ToolAnswer(chars={len(self.text)}, is_error={self.is_error})"


def failure_answer(exc: Exception, *, tool: str, context: RunContext) -> ToolAnswer:
    """The error result for a tool call that failed: what every host tells the model.

    A `ToolError`'s message may quote the model's own arguments, so it is neutralised like a
    result (unless its words are s3claim's own, `own_words`); any other exception is a
    `tool_failed` naming only the exception's type.
    """
    if isinstance(exc, ToolError):
        return ToolAnswer(refusal_text(exc), is_error=True)
    _log.warning("tool %s raised %s", tool, type(exc).__name__)
    context.emit(ToolFailed(tool=tool, agent=context.agent, error=type(exc).__name__))
    failed = ToolError("tool_failed", wording.tool_failed_message(type(exc).__name__))
    return ToolAnswer(failed.render(), is_error=True)


def run_claim_tool(
    claim_tool: Tool, arguments: Mapping[str, Any] | str, context: RunContext
) -> ToolAnswer:
    """Run one claim tool for any host; never raises for anything the model sent or a store did.

    `arguments` is the model's JSON object, decoded or not (frameworks hand over either).
    Its output is never checked in: a window is already as small as it may be.
    """
    try:
        if isinstance(arguments, str):
            arguments = _json_object(arguments)
        return ToolAnswer(str(claim_tool.call(arguments, context)))
    except Exception as exc:
        return failure_answer(exc, tool=claim_tool.name, context=context)


def _json_object(arguments: str) -> dict[str, Any]:
    try:
        parsed = loads(arguments or "{}")
    except JSONTooDeepError:
        raise ToolError(
            "invalid_arguments", f"the arguments nest deeper than {MAX_DEPTH} levels"
        ) from None
    except json.JSONDecodeError:
        raise ToolError("invalid_arguments", "the arguments are not valid JSON") from None
    if not isinstance(parsed, dict):
        raise ToolError("invalid_arguments", "the arguments must be a JSON object")
    return parsed
