"""Neutral: every string the upstream wrote is defanged before a client (and its model) reads it.

`s3claim.hosting.neutralise` is the one rewrite; this module applies it to every string of an
MCP message, keys too, at any depth (a listing's schemas: property names, `enum`, `default`,
`examples`), except base64 (an image's or audio's `data`, a resource's `blob`) and a
listing's opaque `nextCursor`. Tool and prompt names are kept (`neutralised_named`), as
clients send them back; the proxy does not list one that holds a forgery
(`ClaimCheckProxy.refused`). A value nested deeper than `MAX_DEPTH` is a clear error
(`TooDeepError`), never a crashed handler.
"""

from __future__ import annotations

from typing import Any, TypeVar

from mcp_types import Prompt, Tool
from pydantic import BaseModel

from s3claim.hosting import neutralise
from s3claim.safejson import MAX_DEPTH, depth_of

__all__ = ["TooDeepError", "joined_neutral", "neutralised", "neutralised_named"]

_M = TypeVar("_M", bound=BaseModel)
_Named = TypeVar("_Named", Tool, Prompt)


class TooDeepError(ValueError):
    """A value from the upstream nests deeper than `s3claim.safejson.MAX_DEPTH`."""


def neutralised(model: _M) -> _M:
    """`model` with every upstream string neutralised (the same object when nothing changed)."""
    dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    if depth_of(dumped) > MAX_DEPTH:
        raise TooDeepError(f"the upstream sent a value nested deeper than {MAX_DEPTH} levels")
    walked = _walk(dumped)
    if walked == dumped:
        return model
    return type(model).model_validate(walked, by_name=False)


def neutralised_named(model: _Named) -> _Named:
    """`model` neutralised but for its `name` (a tool's, a prompt's), which clients send back."""
    shell = model.model_copy(update={"name": ""})
    safe = neutralised(shell)
    return model if safe is shell else safe.model_copy(update={"name": model.name})


def joined_neutral(texts: list[str]) -> list[str]:
    """Text blocks neutralised as if joined: a forgery split across two blocks is caught.

    The rewrite keeps lengths, so the joined text is cut back at the same places; were it
    ever to change a length, the blocks become one (safe, and still all the text).
    """
    if len(texts) < 2:
        return [neutralise(t) for t in texts]
    joined = neutralise("".join(texts))
    if len(joined) != sum(len(t) for t in texts):
        return [joined] + [""] * (len(texts) - 1)
    out: list[str] = []
    start = 0
    for text in texts:
        out.append(joined[start : start + len(text)])
        start += len(text)
    return out


def _kept(key: str | None, parent: dict[str, Any] | None) -> bool:
    """Base64 and cursors, which no model reads and the rewrite must not touch."""
    if key in ("blob", "nextCursor"):
        return True
    return key == "data" and parent is not None and parent.get("type") in ("image", "audio")


def _walk(value: Any, key: str | None = None, parent: dict[str, Any] | None = None) -> Any:
    # Depth is bounded above (`neutralised`), so recursion here stays within MAX_DEPTH frames.
    if isinstance(value, str):
        return value if _kept(key, parent) else neutralise(value)
    if isinstance(value, dict):
        return {neutralise(k): _walk(v, k, value) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(item) for item in value]
    return value
