"""The naive ways s3claim is measured against. They live here, never in the library.

- `NaiveS3Store`: what common large-payload offloaders do. The payload is one plain UTF-8
  object; every read GETs the whole object and slices the window out in memory (a UTF-8 byte
  offset cannot be computed from a character offset without an index, so they don't try);
  erasure lists the prefix and sends one DeleteObject per key.
- No claim check: the runner keeps the whole tool result in the conversation
  (`max_tool_result_chars` at least the result's length).
- Truncation: the runner's own fallback, the result cut at `max_tool_result_chars` (16,384)
  and the rest lost.
- `neutralise_before_21`: the result boundary's forgery rewrite as it was before issue 21
  (five regular-expression passes over the text, ASCII and full-width forms only), so the
  boundary's cost is measured against what it replaced.

The naive store speaks the same `put` / `fetch` / `forget` protocol as the real stores, so the
benchmarks drive both through one code path. It checks nothing (no expiry, no run check): the
comparison is of wire costs, and every check it skips only flatters it.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import regex

from s3claim.errors import ClaimUnavailableError
from s3claim.runner import AgentRunner
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window

__all__ = ["TRUNCATE_AT", "NaiveS3Store", "inline_limit", "neutralise_before_21"]

TRUNCATE_AT: int = inspect.signature(AgentRunner).parameters["max_tool_result_chars"].default
"""The runner's default `max_tool_result_chars`: 16,384."""


def inline_limit(document: str) -> int:
    """A `max_tool_result_chars` large enough that the whole document stays inline."""
    return max(len(document), 1)


class NaiveS3Store:
    """One UTF-8 object per payload; whole-object GETs; one DeleteObject per key."""

    def __init__(self, bucket: str, *, client: Any, prefix: str = "naive/") -> None:
        self._bucket = bucket
        self._client = client
        self._prefix = prefix

    def _key(self, scope: Scope, handle: str) -> str:
        return f"{self._prefix}{scope.tenant}/{scope.run}/{handle}"

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        body = content.encode("utf-8")
        handle = "claim:" + hashlib.sha256(body).hexdigest()[:32]
        self._client.put_object(
            Bucket=self._bucket,
            Key=self._key(scope, handle),
            Body=body,
            ContentType="text/plain; charset=utf-8",
        )
        return handle

    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._key(scope, handle))
        except self._client.exceptions.NoSuchKey:
            raise ClaimUnavailableError from None
        with response["Body"] as body:
            text: str = body.read().decode("utf-8")
        return Window.of(text[offset : offset + limit], offset=offset, total_chars=len(text))

    def forget(self, *, tenant: str, run: str | None = None) -> int:
        prefix = f"{self._prefix}{tenant}/" + (f"{run}/" if run is not None else "")
        keys: list[str] = []
        for page in self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=prefix
        ):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        for key in keys:
            self._client.delete_object(Bucket=self._bucket, Key=key)
        return len(keys)

    def key_prefix(self, scope: Scope) -> str:
        """Where this scope's objects live (for seeding)."""
        return f"{self._prefix}{scope.tenant}/{scope.run}/"


# -- the result boundary before issue 21 -----------------------------------------------------

_HANDLE = regex.compile(r"([cｃ][lｌ][aａ][iｉ][mｍ])[:：](?=[\p{L}\p{N}])", regex.IGNORECASE)
_TOOL_NAME = regex.compile(
    r"([fｆ][eｅ][tｔ][cｃ][hｈ]|[sｓ][eｅ][aａ][rｒ][cｃ][hｈ])[_＿]([rｒ][eｅ][sｓ][uｕ][lｌ][tｔ])",
    regex.IGNORECASE,
)
_BAR_TOKEN = regex.compile(r"<([|｜][^\s<>|｜]{1,64}[|｜])>")
_BRACKET_TOKEN = regex.compile(
    r"\[(/?(?:INST|SYS|TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS))\]", regex.IGNORECASE
)
_ANGLE_TOKEN = regex.compile(
    r"<<(/?SYS)>>|<(/?s|bos|eos|start_of_turn|end_of_turn)>", regex.IGNORECASE
)


def _angle(match: regex.Match[str]) -> str:
    if match.group(1) is not None:
        return f"(({match.group(1)}))"
    return f"({match.group(2)})"


def neutralise_before_21(text: str) -> str:
    """`s3claim._boundary.neutralise` as it was before issue 21, for the boundary's baseline."""
    text = _HANDLE.sub(r"\1-", text)
    text = _TOOL_NAME.sub(r"\1-\2", text)
    text = _ANGLE_TOKEN.sub(_angle, text)
    text = _BAR_TOKEN.sub(r"(\1)", text)
    return _BRACKET_TOKEN.sub(r"(\1)", text)
