"""`fetch_result`: the tool that redeems a handle, one window at a time."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Annotated

from pydantic import Field

from s3claim.errors import STORE_UNAVAILABLE_MESSAGE, UNAVAILABLE_MESSAGE, ClaimUnavailableError
from s3claim.events import ClaimFetched, ClaimFetchFailed, ClaimUnavailable
from s3claim.handles import is_handle
from s3claim.search import SearchableStore, claim_search_tool
from s3claim.store import DEFAULT_FETCH_CHARS, ClaimCheckStore
from s3claim.tools import RunContext, Tool, ToolError, tool

__all__ = ["FETCH_TOOL_NAME", "claim_check_tool", "claim_tools", "footer"]

FETCH_TOOL_NAME = "fetch_result"
_log = logging.getLogger("s3claim")


def footer(*, offset: int, next_offset: int, total_chars: int, handle: str) -> str:
    """The line after a window when more remains."""
    return (
        f"[characters {offset}-{next_offset} of {total_chars}. Call fetch_result with "
        f"handle='{handle}' and offset={next_offset} to continue.]"
    )


def claim_check_tool(store: ClaimCheckStore) -> Tool:
    """The `fetch_result` tool for `store`; give it to every agent whose results are checked in."""

    def fetch_result(
        context: RunContext,
        handle: str,
        offset: Annotated[int, Field(ge=0, strict=True)] = 0,
    ) -> str:
        try:
            if not is_handle(handle):  # malformed: refused here, it never reaches the store
                raise ClaimUnavailableError
            window = store.fetch(context.scope, handle, offset, DEFAULT_FETCH_CHARS)
        except ClaimUnavailableError:
            context.emit(ClaimUnavailable(handle=handle if is_handle(handle) else None))
            raise ToolError("claim_unavailable", UNAVAILABLE_MESSAGE) from None
        except Exception as exc:  # a store fault is the model's to retry, never the run's end
            known = handle if is_handle(handle) else None
            _log.warning("fetch_result: store failed for %s (%s)", known, type(exc).__name__)
            context.emit(ClaimFetchFailed(handle=known, error=type(exc).__name__))
            raise ToolError("store_unavailable", STORE_UNAVAILABLE_MESSAGE) from None
        context.emit(
            ClaimFetched(
                handle=handle,
                offset=offset,
                chars=len(window.text),
                total_chars=window.total_chars,
            )
        )
        if window.next_offset is None:
            return window.text
        more = footer(
            offset=offset,
            next_offset=window.next_offset,
            total_chars=window.total_chars,
            handle=handle,
        )
        return f"{window.text}\n\n{more}"

    fetch_result.__doc__ = (
        f"Read a tool result that was checked in: returns up to {DEFAULT_FETCH_CHARS} characters "
        "starting at `offset` (characters, from 0), exactly as the tool returned them. Use the "
        "handle from the result's marker; a footer gives the offset to continue from."
    )
    return replace(tool(fetch_result), check_in=False, redeems=store)


def claim_tools(store: ClaimCheckStore) -> tuple[Tool, ...]:
    """Every tool that reads `store`'s claims: what an adapter or proxy adds beside its own.

    One place, so each way in (runner, framework adapters, MCP proxy) offers the same set:
    `fetch_result`, and `search_result` when the store can be searched (both of ours can).
    """
    if isinstance(store, SearchableStore):
        return (claim_check_tool(store), claim_search_tool(store))
    return (claim_check_tool(store),)
