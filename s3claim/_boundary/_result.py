"""The result boundary: what a tool returned becomes safe text before anything else sees it.

Three steps, in order:

1. Validate the value against the tool's declared return type. A mismatch is a tool error
   for the model (`invalid_result`), not an exception.
2. Serialise: strings as they are; models and other values as JSON with one record to a
   line (`_layout`), whatever the result's size, so a line reader can read it
   and the threshold measures the very text that is stored. Text that UTF-8 cannot carry
   (a lone surrogate) and values nested deeper than `MAX_DEPTH` are refused the same way,
   by one walk of the value before it is serialised (`_check`).
3. Neutralise structural forgery (`_forgery`), so tool output cannot hand the model a
   forged handle, marker, footer or turn: the table there (and in docs/security.md) is
   matched on a folded view of the text, so look-alikes count, and only a match's delimiters
   are rewritten.

The rewrite is idempotent, and what is checked in is the rewritten text: storing what the
boundary refused would be storing an attack for later.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import regex
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from s3claim.errors import ToolError
from s3claim.safejson import MAX_DEPTH
from s3claim.tools import Tool

from ._forgery import neutralise
from ._layout import records_on_lines

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
    """The value as text, once the one check of what may cross the boundary has passed."""
    _check(valid, tool)
    if isinstance(valid, str):
        text = valid
    else:
        try:
            text = records_on_lines(adapter.dump_json(valid).decode("utf-8"))
        except PydanticSerializationError:
            raise ToolError(
                "invalid_result", f"tool {tool!r} returned a value that is not JSON-serialisable"
            ) from None
    return neutralise(text)


def _check(value: Any, tool: str) -> None:
    """Refuse what may not cross the boundary: a lone surrogate in a text result (by its
    index) or anywhere in a structure (mapping keys included: pydantic raises on one in a
    value, but replaces one in a key without a word), and nesting past `MAX_DEPTH`, the one
    bound s3claim puts on JSON.

    A walk with a stack of its own, not recursion: a value nested 100,000 deep is measured,
    never a `RecursionError`.
    """
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            raise ToolError(
                "invalid_result",
                f"tool {tool!r} returned text that is not valid Unicode "
                f"(a lone surrogate at index {found.start()})",
            )
        return
    deep = False  # the walk goes on to the end: a lone surrogate is the sharper refusal
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item) is not None:
                raise ToolError(
                    "invalid_result",
                    f"tool {tool!r} returned a value holding text that is not valid Unicode "
                    "(a lone surrogate)",
                )
            continue
        members = _members(item)
        if members is not None:
            deep = deep or level >= MAX_DEPTH
            pending += [(member, level + 1) for member in members]
    if deep:  # no bug of the tool's: s3claim reads no JSON nested this deep
        raise ToolError(
            "invalid_result", f"tool {tool!r} returned a value nested too deep to serialise as JSON"
        )


def _members(value: Any) -> list[Any] | None:
    """What a value holds, as the serialiser walks it; None for a value that holds nothing."""
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    if isinstance(value, BaseModel):
        return [*vars(value).values(), *(value.__pydantic_extra__ or {}).values()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    return None
