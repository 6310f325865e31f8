"""The claim tools, and the one way any host runs them.

`fetch_result` redeems a handle one window at a time; `search_result` finds text in a claim
without reading it all. `claim_tools(store)` is the set every host offers (the runner, the
framework adapters, the MCP proxy), and `run_claim_tool` is how every host runs one: the
arguments validated, the scope from the host (never from the model), failures rendered as
the error result the model reads, events emitted. So a claim tool behaves the same whoever
hosts it, and `tests/test_claim_tool_hosts.py` runs one suite through all three.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, TypeVar

import regex
from pydantic import Field, WithJsonSchema

import s3claim._wording as _wording
from s3claim._boundary import neutralise, refusal_text
from s3claim._reading import (
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    SNIPPET_CHARS,
    LineWindow,
    MatchTooLongError,
    NoIndexError,
    NoLineIndexError,
    PathError,
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
from s3claim.errors import ClaimStoreError, ClaimUnavailableError, ToolError
from s3claim.events import (
    ClaimFetched,
    ClaimFetchFailed,
    ClaimSearched,
    ClaimSearchFailed,
    ClaimUnavailable,
    ToolFailed,
)
from s3claim.handles import is_handle
from s3claim.safejson import MAX_DEPTH, JSONTooDeepError, loads
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
    "ToolAnswer",
    "claim_check_tool",
    "claim_search_tool",
    "claim_tools",
    "run_claim_tool",
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


def _unavailable(context: RunContext, handle: str | None) -> ToolError:
    context.emit(ClaimUnavailable(handle=handle))
    return ToolError("claim_unavailable", _wording.UNAVAILABLE_MESSAGE)


def _store_failed(exc: Exception) -> ToolError:
    """What the model is told of a store fault: try again only when that may help.

    A damaged object is the uniform refusal, as a handle that cannot be redeemed: the model
    can do nothing different with it, and trying again reads the same bytes. A store that
    refuses this process (access, bucket, credentials, region) will refuse it again.
    """
    if isinstance(exc, ClaimStoreError) and exc.reason == "damaged":
        return ToolError("claim_unavailable", _wording.UNAVAILABLE_MESSAGE)
    if isinstance(exc, ClaimStoreError) and not exc.transient:
        return ToolError("store_unavailable", _wording.STORE_REFUSED_MESSAGE)
    return ToolError("store_unavailable", _wording.STORE_UNAVAILABLE_MESSAGE)


def _reason(exc: Exception) -> str:
    """For the log line: the error's type, and a store error's reason."""
    reason = getattr(exc, "reason", None)
    return f"{type(exc).__name__}: {reason}" if isinstance(reason, str) else type(exc).__name__


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

    fetch_result.__doc__ = _wording.FETCH_DESCRIPTION.format(window=DEFAULT_FETCH_CHARS)
    built = tool(fetch_result)
    return replace(built, arguments=one_address(built.arguments), check_in=False, redeems=store)


_W = TypeVar("_W", Window, LineWindow, PathRead)


def _redeem(context: RunContext, handle: str, read: Callable[[], _W]) -> _W:
    """One read of a window, its failures rendered for the model, its event emitted.

    The store's read is the operation's span (`s3claim.store.RangedStore`); this is what the
    model is told of it.
    """
    known = handle if is_handle(handle) else None
    try:
        window = read()
    except ClaimUnavailableError:
        raise _unavailable(context, known) from None
    except NoLineIndexError:
        raise ToolError(
            "cannot_read_by_line", _wording.NO_LINE_INDEX_MESSAGE, own_words=True
        ) from None
    except PathError as exc:
        raise ToolError(exc.kind, exc.message) from None
    except NoIndexError:
        raise ToolError("not_json", _wording.NOT_JSON_MESSAGE, own_words=True) from None
    except Exception as exc:  # a store fault is told to the model, never the run's end
        _log.warning("fetch_result: store failed for %s (%s)", known, _reason(exc))
        context.emit(ClaimFetchFailed(handle=known, error=type(exc).__name__))
        raise _store_failed(exc) from None
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

    search_result.__doc__ = _wording.SEARCH_DESCRIPTION.format(
        matches=MAX_MATCHES, snippet=SNIPPET_CHARS
    )
    return replace(tool(search_result), check_in=False, redeems=store)


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
        raise _unavailable(context, known) from None
    except SearchBusyError:
        op.outcome = "busy"
        context.emit(ClaimSearchFailed(handle=known, error="busy"))
        raise ToolError("busy", _wording.SEARCH_BUSY_MESSAGE) from None
    except MatchTooLongError as exc:
        op.outcome = "match_too_long"
        context.emit(ClaimSearchFailed(handle=known, error="match_too_long"))
        raise ToolError(
            "match_too_long", _wording.match_too_long_message(chars=exc.chars)
        ) from None
    except PatternTooCostlyError as exc:
        op.outcome = "pattern_too_costly"
        context.emit(ClaimSearchFailed(handle=known, error="pattern_too_costly"))
        message = _wording.pattern_too_costly_message(
            seconds=exc.seconds, matches=exc.matches, backtracked=exc.backtracked
        )
        raise ToolError("pattern_too_costly", message) from None
    except Exception as exc:  # a store fault is told to the model, never the run's end
        op.outcome = "failed"
        _log.warning("search_result: store failed for %s (%s)", known, _reason(exc))
        context.emit(ClaimSearchFailed(handle=known, error=type(exc).__name__))
        raise _store_failed(exc) from None


def claim_tools(store: ClaimCheckStore) -> tuple[Tool, ...]:
    """Every tool that reads `store`'s claims: what a host offers beside its own tools.

    `fetch_result`, and `search_result` when the store can be searched (both of ours can).
    """
    if isinstance(store, SearchableStore):
        return (claim_check_tool(store), claim_search_tool(store))
    return (claim_check_tool(store),)


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
    failed = ToolError("tool_failed", _wording.tool_failed_message(type(exc).__name__))
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
