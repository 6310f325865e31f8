"""Results: what the client receives for an upstream tool's `CallToolResult`.

The rule, per result:

- Its *text* is its text blocks joined by a blank line (one block: exactly that block). Its
  structured content is taken to repeat that text (the MCP convention) when the text is that
  content's JSON, or when every value in it is a string that is one of the text blocks (the
  reference filesystem server sends `{"content": <the file>}`); structured content holding
  anything more (a number, a `sha256` beside the file) adds its JSON to the text, after a
  blank line, so that it is measured and, once checked in, still readable: never lost.
  The text passes the same result boundary as a library tool's
  (`s3claim.hosting.text_of`): serialisation checks and forgery neutralised.
- Text shorter than the tool's threshold: the result passes through as it came, the very
  object, unless neutralisation rewrote something; then only the rewritten strings change.
  Every upstream string is neutralised (`s3claim.mcp._neutral`): text blocks as if joined
  (a forgery split across two blocks is caught), and embedded resources, resource links,
  `_meta` and structured content (keys too).
- Text at or over the threshold goes through `admit` (check-in, or truncation on a store
  fault). The admitted text takes the place of the first text block, the other text blocks
  go, and images, audio, embedded resources and resource links stay where they were,
  neutralised, and a `resource_link` to the claim follows (its URI is the handle, which
  `resources/read` redeems: `s3claim.mcp._claims`). The structured content goes too, as it
  is in the text or repeats it: keeping it would hand the client the whole content after all.
  The proxy advertises upstream tools without their `output_schema` for that reason
  (`advertised`): a client must not reject a checked-in result for the structured output it
  no longer carries.
- `is_error` and `_meta` are kept; an error result is checked in like any other.
- Structured content nested deeper than `MAX_DEPTH` is refused as `upstream_invalid_result`.

Sync on purpose: check-in talks to S3 and neutralising 50 MB takes a while, so the proxy
calls this in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp_types import CallToolResult, ResourceLink, TextContent, Tool

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ToolError
from s3claim.hosting import admit, text_of
from s3claim.mcp._neutral import joined_neutral, neutralised, neutralised_listing
from s3claim.safejson import MAX_DEPTH, depth_of, loads
from s3claim.tools import RunContext
from s3claim.wording import HANDLE_SEEN, claim_link_name

__all__ = ["JOIN", "advertised", "claim_check_result", "claim_link", "error_result"]

JOIN = "\n\n"
"""Between text blocks in the text that is checked in, so the head reads like the result."""


def advertised(tool: Tool) -> Tool:
    """An upstream tool as the proxy lists it: without an output schema to break, and with its
    descriptions and titles neutralised (the model reads them)."""
    safe = neutralised_listing(tool)
    if safe.output_schema is None:
        return safe
    return safe.model_copy(update={"output_schema": None})


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
            content.append(neutralised(block))
        elif not placed:
            content.append(block.model_copy(update={"text": admitted}))
            placed = True
    if not placed:  # the text came from structured content alone: it leads
        content.insert(0, TextContent(text=admitted))
    handle = HANDLE_SEEN.search(admitted)
    if handle is not None:  # checked in (a store fault truncates instead: no claim to link)
        content.append(claim_link(handle.group(1), total_chars=len(text)))
    rest = neutralised(result.model_copy(update={"content": [], "structured_content": None}))
    return rest.model_copy(update={"content": content})


def claim_link(handle: str, *, total_chars: int) -> ResourceLink:
    """The link a checked-in result carries to its claim: `resources/read` of the handle."""
    return ResourceLink(uri=handle, name=claim_link_name(total_chars), mime_type="text/plain")


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
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _neutralised(result: CallToolResult) -> CallToolResult:
    """The small result, unchanged unless some text in it imitates s3claim or a chat template."""
    blocks = [b for b in result.content if isinstance(b, TextContent)]
    safe = iter(joined_neutral([b.text for b in blocks]))
    content: list[Any] = []
    changed = False
    for block in result.content:
        if isinstance(block, TextContent):
            text = next(safe)
            if text != block.text:
                block = block.model_copy(update={"text": text})
                changed = True
        else:
            new = neutralised(block)
            changed = changed or new is not block
            block = new
        content.append(block)
    rest = result.model_copy(update={"content": []})
    safe_rest = neutralised(rest)
    if not changed and safe_rest is rest:
        return result
    return safe_rest.model_copy(update={"content": content})
