"""The result boundary: what a tool returned becomes safe text before anything else sees it.

Three steps, in order:

1. Validate the value against the tool's declared return type. A mismatch is a tool error
   for the model (`invalid_result`), not an exception.
2. Serialise: strings as they are; models and other values as JSON with one record to a
   line (`s3claim._json_layout`), whatever the result's size, so a line reader can read it
   and the threshold measures the very text that is stored. Text that UTF-8 cannot carry
   (a lone surrogate) is refused the same way.
3. Neutralise structural forgery (`s3claim._forgery`), so tool output cannot hand the model a
   forged handle, marker, footer or turn: the table there (and in docs/security.md) is
   matched on a folded view of the text, so look-alikes count, and only a match's delimiters
   are rewritten.

The rewrite is idempotent, and what is checked in is the rewritten text: storing what the
boundary refused would be storing an attack for later.
"""

from __future__ import annotations

from typing import Any

import regex
from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from s3claim._forgery import neutralise
from s3claim._json_layout import records_on_lines
from s3claim.errors import ToolError
from s3claim.tools import Tool

__all__ = ["neutralise", "refusal_text", "result_text", "text_of"]

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def result_text(tool: Tool, value: Any) -> str:
    """Validate, serialise and neutralise one tool result."""
    try:
        valid = tool.returns.validate_python(value)
    except ValidationError as exc:
        # Only the kinds of error: locations inside a result are the tool's own keys and
        # values (content), which must not reach the model un-neutralised, nor any exception.
        kinds = sorted({error["type"] for error in exc.errors(include_url=False)})
        raise ToolError(
            "invalid_result",
            f"tool {tool.name!r} returned a value that does not match its declared type "
            f"({exc.error_count()} error(s): {', '.join(kinds)})",
        ) from None
    return _serialise(tool.returns, valid, tool=tool.name)


def refusal_text(error: ToolError) -> str:
    """What the model reads of a refusal: neutralised, unless the words are s3claim's own."""
    text = error.render()
    return text if error.own_words else neutralise(text)


_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def text_of(value: Any, *, tool: str) -> str:
    """Serialise and neutralise a result whose type another framework declared and checked.

    For the adapters and the MCP proxy: their tools have no s3claim `Tool`, so there is no
    type to validate against, but serialisation and forgery rules are the same as ours.
    """
    return _serialise(_ANY, value, tool=tool)


def _serialise(adapter: TypeAdapter[Any], valid: Any, *, tool: str) -> str:
    if isinstance(valid, str):
        text = valid
    else:
        try:
            # Checked before serialising: pydantic raises on a lone surrogate in a value but
            # silently replaces one in a mapping key, and neither may pass the boundary.
            if _has_lone_surrogate(adapter.dump_python(valid)):
                raise ToolError(
                    "invalid_result",
                    f"tool {tool!r} returned a value holding text that is not valid "
                    "Unicode (a lone surrogate)",
                )
            text = records_on_lines(adapter.dump_json(valid).decode("utf-8"))
        except PydanticSerializationError as exc:
            # pydantic-core stops at its own depth limit (a few hundred levels), whatever the
            # interpreter's: say so, as a value nested 100,000 deep is no bug of the tool's.
            deep = "depth exceeded" in str(exc)
            raise ToolError(
                "invalid_result",
                f"tool {tool!r} returned a value nested too deep to serialise as JSON"
                if deep
                else f"tool {tool!r} returned a value that is not JSON-serialisable",
            ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            "invalid_result",
            f"tool {tool!r} returned text that is not valid Unicode "
            f"(a lone surrogate at index {exc.start})",
        ) from None
    return neutralise(text)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string in a dumped value, mapping keys included, holds a lone surrogate.

    A walk with a stack of its own, not recursion: a value nested 100,000 deep must reach
    the serialiser's clear refusal, not raise `RecursionError` here.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, dict):
            pending += item.keys()
            pending += item.values()
        elif isinstance(item, list | tuple | set | frozenset):
            pending += item
    return False
