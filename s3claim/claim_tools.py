"""The claim tools: `fetch_result` and `search_result`.

`fetch_result` redeems a handle one window at a time (by offset, by line, from the end, by
JSON path); `search_result` finds text in a claim without reading it all. `claim_tools(store)`
is the set every host offers (the runner, the framework adapters, the MCP proxy), each run
by `s3claim.hosting.run_claim_tool`, so a claim tool behaves the same whoever hosts it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any, TypeVar

import regex
from pydantic import Field, WithJsonSchema

import s3claim.wording as wording
from s3claim._reading import (
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    SNIPPET_CHARS,
    LineWindow,
    MatchTooLongError,
    NoIndexError,
    NoLineIndexError,
    PathRead,
    PatternTooCostlyError,
    SearchBusyError,
    SearchResult,
    at_most_lines,
    compile_pattern,
    search_slot,
    search_text,
)
from s3claim._windows import one_address, render_lines, render_offset, render_path
from s3claim.errors import ClaimUnavailableError, ToolError
from s3claim.events import ClaimFetched, ClaimSearched, ClaimSearchFailed
from s3claim.handles import is_handle
from s3claim.hosting import (
    claim_unavailable,
    failure_reason,
    neutralise,
    read_refusal,
    store_refusal,
)
from s3claim.store import (
    DEFAULT_FETCH_CHARS,
    ClaimCheckStore,
    LineReadableStore,
    PathReadableStore,
    SearchableStore,
    Window,
)
from s3claim.telemetry import Operation, search_operation
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
_log = logging.getLogger("s3claim")
_PATH_SCHEMA = WithJsonSchema({"title": "Path", "type": "string"})
_LINE_SCHEMA = WithJsonSchema({"title": "Line", "type": "integer", "minimum": 1})
_LINES_SCHEMA = WithJsonSchema({"title": "Lines", "type": "integer", "minimum": 1})


def _schema_default(value: object) -> Any:
    def edit(schema: dict[str, Any]) -> None:
        if value is None:
            schema.pop("default", None)
        else:
            schema["default"] = value

    return Field(json_schema_extra=edit)


_no_default = _schema_default(None)


def claim_check_tool(store: ClaimCheckStore) -> Tool:
    """The `fetch_result` tool for `store`; give it to every agent whose results are checked in."""

    def fetch_result(
        context: RunContext,
        handle: str,
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
        line: Annotated[int | None, Field(ge=1, strict=True), _LINE_SCHEMA, _no_default] = None,
        from_end: Annotated[bool, Field(strict=True)] = False,
        path: Annotated[str | None, _PATH_SCHEMA, _no_default] = None,
        limit: Annotated[int, Field(ge=1, le=DEFAULT_FETCH_CHARS, strict=True)] = (
            DEFAULT_FETCH_CHARS
        ),
        lines: Annotated[int | None, Field(ge=1, strict=True), _LINES_SCHEMA, _no_default] = None,
    ) -> str:
        if path is not None:
            return _read_path(store, context, handle, path, limit)
        if line is not None or from_end:
            return _read_lines(store, context, handle, line, limit, lines)
        window = _redeem(context, handle, lambda: store.fetch(context.scope, handle, offset, limit))
        return render_offset(window, handle)

    fetch_result.__doc__ = wording.FETCH_DESCRIPTION.format(window=DEFAULT_FETCH_CHARS)
    built = tool(fetch_result)
    return replace(
        built, arguments=one_address(built.arguments), check_in=False, redeems=store, read_only=True
    )


_W = TypeVar("_W", Window, LineWindow, PathRead)


def _redeem(context: RunContext, handle: str, read: Callable[[], _W]) -> _W:
    """One read of a window, its failures rendered for the model, its event emitted.

    The store's read is the operation's span (`s3claim.store.RangedStore`); this is what the
    model is told of it.
    """
    known = handle if is_handle(handle) else None
    try:
        window = read()
    except Exception as exc:  # told to the model, never the run's end
        raise read_refusal(exc, context, known, reader="fetch_result") from None
    start = window.start if isinstance(window, PathRead) else window.offset
    context.emit(
        ClaimFetched(
            handle=handle,
            offset=start,
            chars=len(window.text),
            total_chars=window.total_chars,
        )
    )
    return window


def _read_lines(
    store: ClaimCheckStore,
    context: RunContext,
    handle: str,
    line: int | None,
    limit: int,
    lines: int | None,
) -> str:
    """`fetch_result(handle, line=N)` or `fetch_result(handle, from_end=True)`, cut to
    `lines` lines when given (the store reads `limit` characters either way)."""

    def read() -> LineWindow:
        if not isinstance(store, LineReadableStore):
            raise NoLineIndexError
        if line is None:
            window = store.read_end(context.scope, handle, limit=limit)
        else:
            window = store.read_line(context.scope, handle, line, limit=limit)
        return window if lines is None else at_most_lines(window, lines, from_end=line is None)

    return render_lines(_redeem(context, handle, read), handle, line=line)


def _read_path(
    store: ClaimCheckStore, context: RunContext, handle: str, path: str, limit: int
) -> str:
    """`fetch_result(handle, path=...)`: the value at a JSON Pointer, and its members."""

    def read() -> PathRead:
        if not isinstance(store, PathReadableStore):
            raise NoIndexError
        return store.read_path(context.scope, handle, path, limit=limit)

    # A read by path is a fetch like any other: one span, one audit record (never the path).
    return render_path(_redeem(context, handle, read), handle)


def claim_search_tool(store: ClaimCheckStore) -> Tool:
    """The `search_result` tool for `store`; give it to agents beside `fetch_result`."""
    if not isinstance(store, SearchableStore):
        raise TypeError(f"{type(store).__name__} cannot be searched: it has no scan()")
    searchable: SearchableStore = store

    def search_result(
        context: RunContext,
        handle: str,
        pattern: Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS)],
        regex: bool = False,
        ignore_case: bool = False,
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
    ) -> str:
        known = handle if is_handle(handle) else None
        with search_operation(store, context.scope, handle=known, pattern_chars=len(pattern)) as op:
            try:
                compiled = compile_pattern(pattern, is_regex=regex, ignore_case=ignore_case)
            except ValueError as exc:
                op.outcome = "invalid_arguments"
                raise ToolError("invalid_arguments", str(exc)) from None
            result = _search(context, searchable, known, compiled, offset, op)
            op.set(search_matches=result.total_matches)
        context.emit(
            ClaimSearched(
                handle=handle,
                pattern_chars=len(pattern),
                matches=len(result.matches),
                total_matches=result.total_matches,
            )
        )
        return result.to_json(neutralise)

    search_result.__doc__ = wording.SEARCH_DESCRIPTION.format(
        matches=MAX_MATCHES, snippet=SNIPPET_CHARS
    )
    return replace(tool(search_result), check_in=False, redeems=store, read_only=True)


def _search(
    context: RunContext,
    store: SearchableStore,
    known: str | None,
    compiled: regex.Pattern[str],
    offset: int,
    op: Operation,
) -> SearchResult:
    """One search, its failures rendered for the model (and named in `op`)."""
    try:
        if known is None:  # malformed: refused here, it never reaches the store
            raise ClaimUnavailableError
        with search_slot(context.scope.tenant):  # a bounded number at once; others queue
            pieces = store.scan(context.scope, known)
            try:
                return search_text(pieces, compiled, offset=offset)
            finally:  # a stopped search must not leave an HTTP stream open
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()
    except ClaimUnavailableError:
        op.outcome = "unavailable"
        raise claim_unavailable(context, known) from None
    except SearchBusyError:
        op.outcome = "busy"
        context.emit(ClaimSearchFailed(handle=known, error="busy"))
        raise ToolError("busy", wording.SEARCH_BUSY_MESSAGE) from None
    except MatchTooLongError as exc:
        op.outcome = "match_too_long"
        context.emit(ClaimSearchFailed(handle=known, error="match_too_long"))
        raise ToolError("match_too_long", wording.match_too_long_message(chars=exc.chars)) from None
    except PatternTooCostlyError as exc:
        op.outcome = "pattern_too_costly"
        context.emit(ClaimSearchFailed(handle=known, error="pattern_too_costly"))
        message = wording.pattern_too_costly_message(
            seconds=exc.seconds, matches=exc.matches, backtracked=exc.backtracked
        )
        raise ToolError("pattern_too_costly", message) from None
    except Exception as exc:  # a store fault is told to the model, never the run's end
        op.outcome = "failed"
        _log.warning("search_result: store failed for %s (%s)", known, failure_reason(exc))
        context.emit(ClaimSearchFailed(handle=known, error=type(exc).__name__))
        raise store_refusal(exc) from None


def claim_tools(store: ClaimCheckStore) -> tuple[Tool, ...]:
    """Every tool that reads `store`'s claims: what a host offers beside its own tools.

    `fetch_result`, and `search_result` when the store can be searched (both of ours can).
    """
    if isinstance(store, SearchableStore):
        return (claim_check_tool(store), claim_search_tool(store))
    return (claim_check_tool(store),)
