"""Contents: resource reads and prompts from the upstream, claim-checked like tool results.

A resource read or a prompt can be as oversized as any tool result, and reaches the model
the same way. So each text over the threshold (one resource's `text`, one prompt message's
text block) goes through the same admission as a tool result, under the policy of the
method's name (`resources/read`, `prompts/get`): the client gets the head and the marker in
its place. Everything else is neutralised as it passes; binary contents pass as they came.
"""

from __future__ import annotations

from typing import Any, TypeVar

from mcp_types import (
    GetPromptResult,
    PromptMessage,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

from s3claim.claimcheck import ClaimCheck
from s3claim.hosting import admit, text_of
from s3claim.mcp._neutral import neutralised
from s3claim.tools import RunContext

__all__ = ["PROMPT", "RESOURCE", "checked_prompt", "checked_resource"]

_B = TypeVar("_B", bound=BaseModel)
RESOURCE = "resources/read"
PROMPT = "prompts/get"


def _admitted(
    text: str, *, kind: str, context: RunContext, claim_check: ClaimCheck, searchable: bool
) -> str | None:
    """The head and marker for an oversized text; None when it passes as it is."""
    if len(text) < claim_check.policy_for(kind).threshold_chars:
        return None
    safe = text_of(text, tool=kind)  # the boundary: neutralised, valid Unicode
    return admit(safe, tool=kind, context=context, claim_check=claim_check, searchable=searchable)


def checked_resource(
    result: ReadResourceResult,
    *,
    context: RunContext,
    claim_check: ClaimCheck,
    searchable: bool,
) -> ReadResourceResult:
    """The read as the client receives it (blocking: call it in a worker thread)."""
    contents: list[Any] = []
    for item in result.contents:
        admitted = None
        if isinstance(item, TextResourceContents):
            admitted = _admitted(
                item.text, kind=RESOURCE, context=context, claim_check=claim_check,
                searchable=searchable,
            )  # fmt: skip
        contents.append(_with_text(item, admitted))
    return _rebuilt(result, "contents", contents)


def checked_prompt(
    result: GetPromptResult,
    *,
    context: RunContext,
    claim_check: ClaimCheck,
    searchable: bool,
) -> GetPromptResult:
    """The prompt as the client receives it (blocking: call it in a worker thread)."""
    messages: list[PromptMessage] = []
    for message in result.messages:
        block = message.content
        admitted = None
        if isinstance(block, TextContent):
            admitted = _admitted(
                block.text, kind=PROMPT, context=context, claim_check=claim_check,
                searchable=searchable,
            )  # fmt: skip
        if admitted is None:
            messages.append(neutralised(message))
        else:
            shell = neutralised(message.model_copy(update={"content": TextContent(text="")}))
            messages.append(shell.model_copy(update={"content": _with_text(block, admitted)}))
    return _rebuilt(result, "messages", messages)


def _with_text(item: _B, admitted: str | None) -> _B:
    """`item` neutralised, its text replaced by `admitted` (the boundary's own output) if any."""
    if admitted is None:
        return neutralised(item)
    return neutralised(item.model_copy(update={"text": ""})).model_copy(update={"text": admitted})


def _rebuilt(result: _B, field: str, new: list[Any]) -> _B:
    rest = neutralised(result.model_copy(update={field: []}))
    return rest.model_copy(update={field: new})
