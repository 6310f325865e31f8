"""Admission: the one path from a tool's (boundary-checked) text into a conversation.

Shared by `AgentRunner`, the framework adapters and the MCP proxy, so that every way in
checks results in, falls back and reports it identically: with a claim check, an oversized
result becomes its head and marker; without one, or when the store fails, it is cut at the
caller's limit and the rest is gone. A store fault never escapes into the agent's loop.
"""

from __future__ import annotations

import logging

from s3claim._wording import truncation
from s3claim.claimcheck import ClaimCheck
from s3claim.events import ToolResultStored, ToolResultStoreFailed, ToolResultTruncated
from s3claim.telemetry import Operation, check_in_operation, names
from s3claim.tools import RunContext

__all__ = ["admit", "truncate"]

_log = logging.getLogger("s3claim")


def truncate(text: str, limit: int) -> str:
    """The behaviour without a claim check: keep `limit` characters, and say the rest is gone."""
    return f"{text[:limit]}\n\n{truncation(total_chars=len(text), kept_chars=limit)}"


def admit(
    text: str,
    *,
    tool: str,
    context: RunContext,
    claim_check: ClaimCheck | None,
    limit: int | None = None,
    searchable: bool = False,
) -> str:
    """What the conversation receives for `text`, a result that has passed the boundary.

    `limit` is where an oversized result is cut without a working claim check. The runner
    gives its `max_tool_result_chars`; hosts that have none leave it to the tool's policy:
    without a store, what passes through untouched (below the threshold) is the most that may.
    `searchable`: the agent has `search_result` for the claim check's store.
    """
    if limit is None:
        if claim_check is None:
            raise ValueError("admit without a claim check needs a limit")
        limit = claim_check.policy_for(tool).threshold_chars
    owner = claim_check.store if claim_check is not None else None
    with check_in_operation(owner, context.scope, tool=tool) as op:
        op.set(chars_total=len(text))
        admitted = _admit(text, tool, context, claim_check, limit, searchable, op)
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
        checked = claim_check.check_in(text, tool=tool, scope=context.scope, searchable=searchable)
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
            )
        )
    return checked.text
