"""Admission: the one path from a tool's (boundary-checked) text into a conversation.

Shared by `AgentRunner`, the framework adapters and the MCP proxy, so that every way in
checks results in, falls back and reports it identically: with a claim check, an oversized
result becomes its head and marker; without one, or when the store fails, it is cut at the
caller's limit and the rest is gone. A store fault never escapes into the agent's loop.
"""

from __future__ import annotations

import logging

from s3claim.claimcheck import ClaimCheck
from s3claim.events import ToolResultStored, ToolResultStoreFailed, ToolResultTruncated
from s3claim.tools import RunContext

__all__ = ["admit", "truncate"]

_log = logging.getLogger("s3claim")


def truncate(text: str, limit: int) -> str:
    """The behaviour without a claim check: keep `limit` characters, and say the rest is gone."""
    dropped = len(text) - limit
    return f"{text[:limit]}\n\n[{len(text)} characters, {dropped} cut off and not retrievable.]"


def admit(
    text: str,
    *,
    tool: str,
    context: RunContext,
    claim_check: ClaimCheck | None,
    limit: int,
    searchable: bool = False,
) -> str:
    """What the conversation receives for `text`, a result that has passed the boundary.

    `searchable`: the agent has `search_result` for the claim check's store.
    """
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
            text, tool=tool, scope=context.scope, searchable=searchable
        )
    except Exception as exc:  # a store fault degrades the result, never the run
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
            )
        )
    return checked.text
