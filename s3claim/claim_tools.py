"""The claim tools: `fetch_result` and `search_result`.

`fetch_result` redeems a handle one window at a time (by offset, by line, from the end, by
JSON path); `search_result` finds text in a claim without reading it all. `claim_tools(store)`
is the set every host offers (the runner, the framework adapters, the MCP proxy), each run
by `s3claim.hosting.Host`, so a claim tool behaves the same whoever hosts it. A window is
named by an `Address` (`s3claim._reading._address`), read by the one reader
(`s3claim.store.read`) and shown by `s3claim._windows`; what the model is told of a read that
failed is said here (`read_refusal`), for every door that reads a claim.

docs/reading.md has the tools as a model uses them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

import s3claim.wording as wording
from s3claim._boundary import neutralise
from s3claim._reading import (
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    MatchTooLongError,
    PatternError,
    PatternTooCostlyError,
    SearchBusyError,
)
from s3claim._windows import render
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ToolError
from s3claim.events import (
    ClaimFetched,
    ClaimFetchFailed,
    ClaimSearched,
    ClaimSearchFailed,
    ClaimUnavailable,
)
from s3claim.handles import is_handle, unwrapped
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    Address,
    AddressError,
    ClaimCheckStore,
    NoIndexError,
    NoLineIndexError,
    PathError,
    PathRead,
    RangedStore,
    read,
)
from s3claim.tools import RunContext, Tool, tool

__all__ = [
    "FETCH_TOOL_NAME",
    "SEARCH_TOOL_NAME",
    "claim_check_tool",
    "claim_search_tool",
    "claim_tools",
]

FETCH_TOOL_NAME = "fetch_result"
SEARCH_TOOL_NAME = "search_result"
_ADDRESS = frozenset({"offset", "line", "from_end", "path", "lines"})
# Optional arguments as a model sees them: the type alone (pydantic's would be `anyOf` with null).
_PATH_SCHEMA = WithJsonSchema({"type": "string"})
_LINE_SCHEMA = WithJsonSchema({"type": "integer", "minimum": 1})


def _lean_schema(schema: dict[str, Any]) -> None:
    """A claim tool's argument schema as it is sent with every request: no titles (the names
    say as much) and no defaults (an argument left out is the obvious one: offset 0, no flag,
    the largest window); the types and bounds stay. Validation is pydantic's, unchanged."""
    for each in schema["properties"].values():
        each.pop("title", None)
        each.pop("default", None)


class _Lean(BaseModel):
    model_config = ConfigDict(json_schema_extra=_lean_schema)


def _lean(built: Tool, validators: dict[str, Any] | None = None) -> type[BaseModel]:
    """`built`'s arguments, validated as before, with the lean schema (and `validators`)."""
    return create_model(
        built.arguments.__name__, __base__=(built.arguments, _Lean), __validators__=validators
    )


Handle = Annotated[str, AfterValidator(unwrapped)]
"""A handle argument: a handle in quotes, or in their HTML entities, is the handle it wraps."""


def claim_check_tool(store: ClaimCheckStore) -> Tool:
    """The `fetch_result` tool for `store`; give it to every agent whose results are checked in."""

    def fetch_result(
        context: RunContext,
        handle: Handle,
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
        line: Annotated[int | None, Field(ge=1, strict=True), _LINE_SCHEMA] = None,
        from_end: Annotated[bool, Field(strict=True)] = False,
        path: Annotated[str | None, _PATH_SCHEMA] = None,
        limit: Annotated[int, Field(ge=1, le=DEFAULT_FETCH_CHARS, strict=True)] = (
            DEFAULT_FETCH_CHARS
        ),
        lines: Annotated[int | None, Field(ge=1, strict=True), _LINE_SCHEMA] = None,
    ) -> str:
        # One way at most was given (`_one_way`, on the arguments): offset is the default,
        # and beside path the first member listed.
        given = {"line": line, "path": path, "lines": lines}
        address = Address.of(
            {k: v for k, v in given.items() if v is not None}
            | ({"from_end": True} if from_end else {})
            | ({} if line is not None or from_end else {"offset": offset})
        )
        return fetch_text(store, context, handle, address, length=limit)

    built = tool(description=wording.FETCH_DESCRIPTION)(fetch_result)
    arguments = _lean(built, {"one_way": model_validator(mode="after")(_one_way)})
    return replace(built, arguments=arguments, check_in=False, redeems=store, read_only=True)


def _one_way(arguments: BaseModel) -> BaseModel:
    """`fetch_result`'s arguments name one address (`Address`): which ways were *given* is
    what counts (an explicit offset=0 beside line is refused), so the check sits on the
    validated arguments, where pydantic records the fields set."""
    given = {name: getattr(arguments, name) for name in arguments.model_fields_set & _ADDRESS}
    try:
        Address.of(given)
    except AddressError as exc:
        raise PydanticCustomError("address", exc.message) from None
    return arguments


def fetch_text(
    store: ClaimCheckStore, context: RunContext, handle: str, address: Address, *, length: int
) -> str:
    """What `fetch_result` answers for `address` (a claim resource's read too): the window
    with its footer or end note, or the `ToolError` the model is told instead."""
    known = handle if is_handle(handle) else None
    try:
        answer = read(store, context.scope, handle, address, length=length)
    except Exception as exc:  # told to the model, never the run's end
        raise read_refusal(exc, context, known, reader=FETCH_TOOL_NAME) from None
    start = answer.start if isinstance(answer, PathRead) else answer.offset
    context.emit(
        ClaimFetched(
            handle=handle, offset=start, chars=len(answer.text), total_chars=answer.total_chars
        )
    )
    return render(answer, handle, line=address.line, length=length)


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
    context.emit(ClaimFetchFailed(handle=handle, error=failure_reason(exc)))
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


def claim_search_tool(store: ClaimCheckStore) -> Tool:
    """The `search_result` tool for `store`; give it to agents beside `fetch_result`."""
    if not isinstance(store, RangedStore):
        raise TypeError(f"{type(store).__name__} cannot be searched: it serves no ranges")
    searchable: RangedStore = store

    def search_result(
        context: RunContext,
        handle: Handle,
        pattern: Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS)],
        regex: bool = False,
        ignore_case: bool = False,
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
    ) -> str:
        known = handle if is_handle(handle) else None
        try:
            result = searchable.search(
                context.scope, handle, pattern, regex=regex, ignore_case=ignore_case, offset=offset
            )
        except Exception as exc:  # told to the model, never the run's end
            raise search_refusal(exc, context, known) from None
        context.emit(
            ClaimSearched(
                handle=handle,
                pattern_chars=len(pattern),
                matches=len(result.matches),
                total_matches=result.total_matches,
            )
        )
        return result.to_json(neutralise)

    built = tool(description=wording.SEARCH_DESCRIPTION.format(matches=MAX_MATCHES))(search_result)
    return replace(built, arguments=_lean(built), check_in=False, redeems=store, read_only=True)


def search_refusal(exc: Exception, context: RunContext, known: str | None) -> ToolError:
    """What the model is told of a search that failed (`RangedStore.search` raised `exc`)."""
    if isinstance(exc, PatternError):
        return ToolError("invalid_arguments", str(exc))
    if isinstance(exc, ClaimUnavailableError):
        return claim_unavailable(context, known)
    if isinstance(exc, SearchBusyError):
        context.emit(ClaimSearchFailed(handle=known, error="busy"))
        return ToolError("busy", wording.SEARCH_BUSY_MESSAGE)
    if isinstance(exc, MatchTooLongError):
        context.emit(ClaimSearchFailed(handle=known, error="match_too_long"))
        return ToolError("match_too_long", wording.match_too_long_message(chars=exc.chars))
    if isinstance(exc, PatternTooCostlyError):
        context.emit(ClaimSearchFailed(handle=known, error="pattern_too_costly"))
        message = wording.pattern_too_costly_message(
            seconds=exc.seconds, matches=exc.matches, backtracked=exc.backtracked
        )
        return ToolError("pattern_too_costly", message)
    context.emit(ClaimSearchFailed(handle=known, error=failure_reason(exc)))
    return store_refusal(exc)


def claim_tools(store: ClaimCheckStore) -> tuple[Tool, ...]:
    """Every tool that reads `store`'s claims: what a host offers beside its own tools.

    `fetch_result`, and `search_result` when the store is of the second level (a
    `RangedStore`: both of ours are).
    """
    if isinstance(store, RangedStore):
        return (claim_check_tool(store), claim_search_tool(store))
    return (claim_check_tool(store),)
