"""Results: what the client receives for an upstream tool's `CallToolResult`.

The rule, per result:

- Its *text* is its text blocks joined by a blank line (one block: exactly that block). Its
  structured content is taken to repeat that text (the MCP convention) when the text is that
  content's JSON, or when every text block is one of the content's strings (the reference
  filesystem server sends `{"content": <the file>}`); structured content that repeats nothing
  adds its JSON to the text, after a blank line, so that it is measured and, once checked in,
  still readable. The text passes the same result boundary as a library tool's
  (`s3claim._boundary.text_of`): serialisation checks and forgery neutralised.
- Text shorter than the tool's threshold: the result passes through as it came, the very
  object, unless neutralisation rewrote something; then only the rewritten text blocks and
  structured-content strings change.
- Text at or over the threshold goes through `admit` (check-in, or truncation on a store
  fault). The admitted text takes the place of the first text block, the other text blocks
  go, and images, audio, embedded resources and resource links stay where they were,
  untouched. The structured content goes too, as it is in the text or repeats it: keeping it
  would hand the client the whole content after all. The proxy advertises upstream tools
  without their `output_schema` for that reason (`advertised`): a client must not reject a
  checked-in result for the structured output it no longer carries.
- `is_error` and `_meta` are kept; an error result is checked in like any other.

Sync on purpose: check-in talks to S3 and neutralising 50 MB takes a while, so the proxy
calls this in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool

from s3claim._admission import admit
from s3claim._boundary import neutralise, text_of
from s3claim.claimcheck import ClaimCheck
from s3claim.tools import RunContext

__all__ = ["JOIN", "advertised", "claim_check_result", "error_result"]

JOIN = "\n\n"
"""Between text blocks in the text that is checked in, so the head reads like the result."""


def advertised(tool: Tool) -> Tool:
    """An upstream tool as the proxy lists it: the same, without an output schema to break."""
    if tool.output_schema is None:
        return tool
    return tool.model_copy(update={"output_schema": None})


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
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    parts: list[Any] = list(texts)
    structured = result.structured_content
    if structured is not None and not _repeats(structured, texts):
        parts.append(structured)
    if not parts:  # images, audio, resources only: nothing to measure, nothing to neutralise
        return result
    text = JOIN.join(text_of(part, tool=tool) for part in parts)
    if len(text) < claim_check.policy_for(tool).threshold_chars:
        return _neutralised(result)
    admitted = admit(
        text,
        tool=tool,
        context=context,
        claim_check=claim_check,
        limit=limit,
        searchable=searchable,
    )
    content: list[Any] = []
    placed = False
    for block in result.content:
        if not isinstance(block, TextContent):
            content.append(block)
        elif not placed:
            content.append(block.model_copy(update={"text": admitted}))
            placed = True
    if not placed:  # the text came from structured content alone: it leads
        content.insert(0, TextContent(text=admitted))
    return result.model_copy(update={"content": content, "structured_content": None})


def _repeats(structured: Any, texts: list[str]) -> bool:
    """Whether structured content only repeats the text blocks (see the module docstring)."""
    if not texts:
        return False
    try:
        if json.loads(JOIN.join(texts)) == structured:
            return True
    except ValueError:
        pass
    strings = set(_strings(structured))
    return all(text in strings for text in texts)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _neutralised(result: CallToolResult) -> CallToolResult:
    """The small result, unchanged unless some text in it imitates s3claim or a chat template."""
    content: list[Any] = []
    changed = False
    for block in result.content:
        if isinstance(block, TextContent):
            safe = neutralise(block.text)
            if safe != block.text:
                block = block.model_copy(update={"text": safe})
                changed = True
        content.append(block)
    structured = _neutralise_json(result.structured_content)
    if not changed and structured == result.structured_content:
        return result
    return result.model_copy(update={"content": content, "structured_content": structured})


def _neutralise_json(value: Any) -> Any:
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        return {_neutralise_json(k): _neutralise_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_neutralise_json(item) for item in value]
    return value
