"""Results: what the client receives for an upstream tool result, resource read or prompt.

A tool result's text is its text blocks joined by a blank line, plus its structured content's
JSON unless that only repeats the text (the MCP convention: the text is its JSON, or each
value is one of the text blocks, as the filesystem server's `{"content": <the file>}`), so
content like a `sha256` beside the file is measured and never lost. Under the threshold the
result passes as it came, every string neutralised (text blocks as if joined). At or over it,
the admitted text takes the first text block's place, the other text blocks and the
structured content go (either would hand over the whole after all; tools are listed without
`output_schema` for that reason), other blocks stay in place and a `resource_link` to the
claim follows. A resource's or prompt message's text over the threshold of `resources/read`
or `prompts/get` is admitted the same way. Blocking (S3, neutralising 50 MB): call these in
a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from mcp_types import (
    CallToolResult,
    GetPromptResult,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from pydantic import BaseModel

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ToolError
from s3claim.hosting import admit, text_of
from s3claim.mcp._neutral import joined_neutral, neutralised, neutralised_named
from s3claim.safejson import MAX_DEPTH, depth_of, loads
from s3claim.tools import RunContext
from s3claim.turns import TurnResult, plan_turn
from s3claim.wording import HANDLE_SEEN, claim_link_name

__all__ = [
    "JOIN",
    "advertised",
    "checked_prompt",
    "checked_resource",
    "claim_check_result",
    "error_result",
]

_B = TypeVar("_B", bound=BaseModel)
JOIN = "\n\n"
"""Between text blocks in the text that is checked in, so the head reads like the result."""


def advertised(tool: Tool) -> Tool:
    """An upstream tool as listed: no output schema, every string but its name neutralised."""
    safe = neutralised_named(tool)
    return safe if safe.output_schema is None else safe.model_copy(update={"output_schema": None})


def error_result(message: str) -> CallToolResult:
    """A tool error the model reads (`{"error": ..., "message": ...}`, as the library's)."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def claim_check_result(
    result: CallToolResult,
    *,
    tool: str,
    context: RunContext,
    claim_check: ClaimCheck,
    limit: int | None,
    searchable: bool = False,
) -> CallToolResult:
    """The result the client receives; raises `ToolError` when the text fails the boundary.

    `searchable`: the client is offered `search_result` too, so the marker may say so.
    """
    structured = result.structured_content
    if structured is not None and depth_of(structured) > MAX_DEPTH:
        raise ToolError(
            "upstream_invalid_result",
            f"the upstream's structured content nests deeper than {MAX_DEPTH} levels",
        )
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    parts: list[Any] = list(texts)
    if structured is not None and not _repeats(structured, texts):
        parts.append(structured)
    if not parts:  # images, audio, resources only: nothing to measure
        return neutralised(result)
    text = JOIN.join(text_of(part, tool=tool) for part in parts)
    # MCP has no batches (a JSON-RPC batch is refused since 2025-06-18): a turn's budget is
    # applied to each call as a turn of its own, so it acts as a lower threshold.
    policy = claim_check.policy_for(tool)
    kept = None  # measured exactly only where a budget may force a check-in
    if policy.turn_budget_chars is not None and len(text) < policy.threshold_chars:
        kept = claim_check.preview_chars(text, tool=tool, searchable=searchable)
    reason = plan_turn([TurnResult(len(text), policy, kept=kept)]).get(0)
    if reason is None:
        return _small(result)
    admitted = admit(
        text, tool=tool, context=context, claim_check=claim_check, limit=limit,
        searchable=searchable, forced=reason,
    )  # fmt: skip
    first = next((b for b in result.content if isinstance(b, TextContent)), None)
    lead = TextContent(text=admitted) if first is None else _retexted(first, admitted)
    content: list[Any] = [lead] if first is None else []
    for block in result.content:
        if block is first:
            content.append(lead)
        elif not isinstance(block, TextContent):
            content.append(neutralised(block))
    handle = HANDLE_SEEN.search(admitted)
    if handle is not None:  # checked in (a store fault truncates instead: no claim to link)
        name = claim_link_name(len(text))
        content.append(ResourceLink(uri=handle.group(1), name=name, mime_type="text/plain"))
    return _around(result.model_copy(update={"structured_content": None}), "content", content, [])


def checked_resource(
    result: ReadResourceResult, *, context: RunContext, claim_check: ClaimCheck, searchable: bool
) -> ReadResourceResult:
    """The read as the client receives it (blocking: call it in a worker thread)."""
    contents: list[Any] = []
    for item in result.contents:
        admitted = None
        if isinstance(item, TextResourceContents):
            admitted = _admitted(item.text, "resources/read", context, claim_check, searchable)
        contents.append(
            neutralised(item) if admitted is None else _around(item, "text", admitted, "")
        )
    return _around(result, "contents", contents, [])


def checked_prompt(
    result: GetPromptResult, *, context: RunContext, claim_check: ClaimCheck, searchable: bool
) -> GetPromptResult:
    """The prompt as the client receives it (blocking: call it in a worker thread)."""
    messages: list[Any] = []
    for message in result.messages:
        block = message.content
        admitted = None
        if isinstance(block, TextContent):
            admitted = _admitted(block.text, "prompts/get", context, claim_check, searchable)
        if admitted is None:
            messages.append(neutralised(message))
        else:
            safe = _around(block, "text", admitted, "")
            messages.append(_around(message, "content", safe, TextContent(text="")))
    return _around(result, "messages", messages, [])


def _admitted(
    text: str, kind: str, context: RunContext, claim_check: ClaimCheck, searchable: bool
) -> str | None:
    """The head and marker for an oversized resource or prompt text; None when it passes."""
    if len(text) < claim_check.policy_for(kind).threshold_chars:
        return None
    safe = text_of(text, tool=kind)  # the boundary: neutralised, valid Unicode
    return admit(safe, tool=kind, context=context, claim_check=claim_check, searchable=searchable)


def _around(model: _B, field: str, value: Any, blank: Any) -> _B:
    """`model` neutralised but for `field`, which becomes `value` (already safe): a large
    text is never walked twice. `model` itself when nothing changed."""
    shell = model.model_copy(update={field: blank})
    safe = neutralised(shell)
    if safe is shell and value is getattr(model, field):
        return model
    return safe.model_copy(update={field: value})


def _retexted(block: TextContent, text: str) -> TextContent:
    return block if text == block.text else block.model_copy(update={"text": text})


def _small(result: CallToolResult) -> CallToolResult:
    """The small result, unchanged unless some text in it imitates s3claim or a chat template."""
    safe = iter(joined_neutral([b.text for b in result.content if isinstance(b, TextContent)]))
    content = [
        _retexted(b, next(safe)) if isinstance(b, TextContent) else neutralised(b)
        for b in result.content
    ]
    if all(new is old for new, old in zip(content, result.content, strict=True)):
        content = result.content
    return _around(result, "content", content, [])


def _repeats(structured: Any, texts: list[str]) -> bool:
    """Whether structured content only repeats the text blocks (see the module docstring)."""
    if not texts:
        return False
    try:
        if loads(JOIN.join(texts)) == structured:
            return True
    except ValueError:
        pass
    leaves = list(_leaves(structured))
    known = set(texts)
    return bool(leaves) and all(isinstance(leaf, str) and leaf in known for leaf in leaves)


def _leaves(value: Any) -> Iterator[Any]:
    """Every value that is not a container, keys aside (depth is bounded before this runs)."""
    if isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _leaves(item)
    else:
        yield value
