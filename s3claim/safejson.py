"""JSON that s3claim did not write, parsed with its nesting bounded: the one loader.

`json.loads` recurses once per level of nesting: text nested 100,000 deep raises
`RecursionError` (and, under a raised recursion limit, can overflow the C stack). s3claim
parses JSON that others wrote: a run journal another process saved, a model server's replies,
a model's tool arguments, an MCP upstream's results, a setting. So text nested deeper than
`MAX_DEPTH` levels is refused before it is parsed, as a `json.JSONDecodeError` (a
`ValueError`) like any other text that is not the JSON expected: every caller already handles
that. `MAX_DEPTH` is the one bound on nesting anywhere in s3claim: a claim's structure index
(`deeper_than`) and the values a tool returns hold to it too.

docs/security.md ("The result boundary") has the bound and why.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DEPTH", "JSONTooDeepError", "loads"]

MAX_DEPTH = 200
"""Levels of arrays and objects inside one another; no record s3claim reads needs more."""
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)  # brackets inside strings do not nest
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


Scan = Callable[[str, int], tuple[Any, int]]


def _scanner() -> Scan:
    scan: Scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
    return scan


SCAN = _scanner()
"""The standard library's C scanner: `SCAN(text, i)` is the JSON value starting at `text[i]`
and where it ends (`StopIteration` when none starts there). For walking JSON whose nesting
is bounded (`deeper_than`) or that s3claim wrote itself."""


class JSONTooDeepError(json.JSONDecodeError):
    """The text nests arrays and objects deeper than `MAX_DEPTH` levels."""


def loads(data: str | bytes) -> Any:
    """`json.loads`, refusing text nested deeper than `MAX_DEPTH` levels first."""
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if text.count("[") + text.count("{") > MAX_DEPTH and deeper_than(text, MAX_DEPTH):
        raise JSONTooDeepError(f"nested deeper than {MAX_DEPTH} levels", text, 0)
    return json.loads(data)


def deeper_than(text: str, limit: int) -> bool:
    """Whether JSON text nests arrays and objects deeper than `limit` levels."""
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def depth_of(value: Any) -> int:
    """How deep a parsed JSON value nests (its dicts and lists), counted without recursion up
    to one level past `MAX_DEPTH`: deeper values are measured as just that."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest
