"""Neutral: every string the upstream wrote is defanged before a client (and its model) reads it.

`s3claim.hosting.neutralise` is the one rewrite; this module applies it to every string of an
MCP message, keys too, except base64: an image's or audio's `data` and a resource's `blob`.
A listing's names, input schema property names and URI templates are what the client sends
back, so there only descriptions and titles are rewritten (`neutralised_listing`). A value
nested deeper than `MAX_DEPTH` is a clear error (`TooDeepError`), never a crashed handler.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from s3claim.hosting import neutralise
from s3claim.safejson import MAX_DEPTH, depth_of

__all__ = ["TooDeepError", "joined_neutral", "neutralised", "neutralised_listing"]

_M = TypeVar("_M", bound=BaseModel)
_LISTING_TEXT = frozenset({"description", "title"})


class TooDeepError(ValueError):
    """A value from the upstream nests deeper than `s3claim.safejson.MAX_DEPTH`."""


def neutralised(model: _M) -> _M:
    """`model` with every upstream string neutralised (the same object when nothing changed)."""
    return _rewrite(model, _every_string)


def neutralised_listing(model: _M, *, also: frozenset[str] = frozenset()) -> _M:
    """A listing with its descriptions and titles (and the fields `also` names) neutralised."""
    keys = _LISTING_TEXT | also
    return _rewrite(model, lambda key, parent: key in keys)


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


def _every_string(key: str | None, parent: dict[str, Any] | None) -> bool:
    if key == "blob":
        return False
    return not (key == "data" and parent is not None and parent.get("type") in ("image", "audio"))


def _rewrite(model: _M, wanted: Callable[[str | None, dict[str, Any] | None], bool]) -> _M:
    dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    if depth_of(dumped) > MAX_DEPTH:
        raise TooDeepError(f"the upstream sent a value nested deeper than {MAX_DEPTH} levels")
    walked = _walk(dumped, wanted, keys=wanted is _every_string)
    if walked == dumped:
        return model
    return type(model).model_validate(walked, by_name=False)


def _walk(
    value: Any,
    wanted: Callable[[str | None, dict[str, Any] | None], bool],
    *,
    keys: bool,
    key: str | None = None,
    parent: dict[str, Any] | None = None,
) -> Any:
    # Depth is bounded above (`_rewrite`), so recursion here stays within MAX_DEPTH frames.
    if isinstance(value, str):
        return neutralise(value) if wanted(key, parent) else value
    if isinstance(value, dict):
        return {
            (neutralise(k) if keys else k): _walk(v, wanted, keys=keys, key=k, parent=value)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_walk(item, wanted, keys=keys) for item in value]
    return value
