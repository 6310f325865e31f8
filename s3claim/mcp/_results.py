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

from collections.abc import Callable, Iterator
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

from s3claim.errors import ToolError
from s3claim.hosting import Call, Host, text_of
from s3claim.mcp._neutral import joined_neutral, neutralised, neutralised_named
from s3claim.safejson import MAX_DEPTH, depth_of, loads
from s3claim.wording import HANDLE_SEEN, MARKER_SEEN, claim_link_name

__all__ = [
    "JOIN",
    "Admit",
    "admitted_result",
    "advertised",
    "checked_prompt",
    "checked_resource",
    "checked_result",
    "claim_link",
    "error_result",
    "measured_text",
]

_B = TypeVar("_B", bound=BaseModel)
Admit = Callable[[str, str], str | None]
"""The proxy's admission of a resource's or prompt's text (and what it is): the head and
marker when it is oversized, None when it passes."""
JOIN = "\n\n"
"""Between text blocks in the text that is checked in, so the head reads like the result."""


def advertised(tool: Tool) -> Tool:
    """An upstream tool as listed: no output schema, every string but its name neutralised."""
    safe = neutralised_named(tool)
    return safe if safe.output_schema is None else safe.model_copy(update={"output_schema": None})


def error_result(message: str) -> CallToolResult:
    """A tool error the model reads (`{"error": ..., "message": ...}`, as the library's)."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def measured_text(result: CallToolResult, *, tool: str) -> str | None:
    """The text of a tool result as it is measured and checked in, past the boundary (see the
    module docstring); None for a result with nothing to measure (images, audio, resources
    only). Raises `ToolError` when it fails the boundary."""
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
    if not parts:
        return None
    return JOIN.join(text_of(part, tool=tool) for part in parts)


def checked_result(host: Host, call: Call, result: CallToolResult) -> CallToolResult:
    """The result the client receives for the upstream's `result` of `call`, admitted by
    `host` (blocking: in a worker thread). Raises `ToolError` when its text fails the
    boundary, `TooDeepError` when a block nests too deep; an error result is never kept to
    answer a repeat (its tool runs again next time)."""
    text = measured_text(result, tool=call.tool)
    if text is None:  # nothing to measure: images, audio, resources
        host.untouched(call)
        return neutralised(result)
    admitted = host.admit(call, text, keep=not result.is_error).text
    return admitted_result(result, text, admitted)


def admitted_result(
    result: CallToolResult, text: str | None, admitted: str | None
) -> CallToolResult:
    """The result the client receives, once its `text` (`measured_text`) was `admitted`: as
    it came (every string neutralised) when it passed whole; else the admitted text in the
    first text block's place and a link to its claim (see the module docstring)."""
    if text is None or admitted is None:
        return neutralised(result)
    if admitted == text:
        return _small(result)
    first = next((b for b in result.content if isinstance(b, TextContent)), None)
    lead = TextContent(text=admitted) if first is None else _retexted(first, admitted)
    content: list[Any] = [lead] if first is None else []
    for block in result.content:
        if block is first:
            content.append(lead)
        elif not isinstance(block, TextContent):
            content.append(neutralised(block))
    link = claim_link(admitted)
    if link is not None:
        content.append(link)
    return _around(result.model_copy(update={"structured_content": None}), "content", content, [])


def claim_link(admitted: str) -> ResourceLink | None:
    """A link to the claim a preview names, by its marker (None when it names none: a store
    fault cut the text instead, and there is no claim to link)."""
    handle, marker = HANDLE_SEEN.search(admitted), MARKER_SEEN.search(admitted)
    if handle is None or marker is None:
        return None
    name = claim_link_name(int(marker.group(1)))
    return ResourceLink(uri=handle.group(1), name=name, mime_type="text/plain")


def checked_resource(result: ReadResourceResult, *, admit: Admit) -> ReadResourceResult:
    """The read as the client receives it (blocking: call it in a worker thread)."""
    contents: list[Any] = []
    for item in result.contents:
        admitted = None
        if isinstance(item, TextResourceContents):
            admitted = admit(item.text, "resources/read")
        contents.append(
            neutralised(item) if admitted is None else _around(item, "text", admitted, "")
        )
    return _around(result, "contents", contents, [])


def checked_prompt(result: GetPromptResult, *, admit: Admit) -> GetPromptResult:
    """The prompt as the client receives it (blocking: call it in a worker thread)."""
    messages: list[Any] = []
    for message in result.messages:
        block = message.content
        admitted = None
        if isinstance(block, TextContent):
            admitted = admit(block.text, "prompts/get")
        if admitted is None:
            messages.append(neutralised(message))
        else:
            safe = _around(block, "text", admitted, "")
            messages.append(_around(message, "content", safe, TextContent(text="")))
    return _around(result, "messages", messages, [])


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
