"""The object format (version 5): a claim and its index, each in sealed blocks, with sealed
metadata. docs/s3.md ("Format") argues the layout against the others, with their requests.

A reader chooses its byte range before its first request, so each claim is stored at a fixed
width, the narrowest its characters allow: Latin-1 (1 byte) when every code point is below
U+0100, UTF-16-LE (2) when all are in the BMP (the boundary refuses lone surrogates, so none
can be mistaken for half a pair), UTF-32-LE (4) otherwise. Window [offset, offset + limit) is
then bytes [w*offset, w*(offset + limit)): one ranged GET from any process, cold, and always
whole characters. The width travels in the handle (`s3claim.handles`).

A claim's index (`s3claim._reading._index`: line starts first, the JSON structure last) sits
beside it at the claim's key and `.index`, only for a claim of two lines or more, or JSON.
Both objects carry metadata a read checks without another request: expiry (epoch seconds),
run tag, length in characters and lines, the object's own length in bytes, the format
version and the check-in id (`s3claim.store.new_check_in_id`: which write of the claim this
is, the same on both objects and kept by a refresh; a link reads only its own); the claim
also its encoding, its index's length and, when the check-in named it, the tool
(percent-encoded UTF-8: S3 metadata is ASCII). A claim written before the tool or the
check-in id was added has none, and reads as before. Both are sealed (`s3claim.s3._seal`).
Objects of earlier formats are refused as damaged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

from s3claim.errors import ClaimStoreError
from s3claim.s3._seal import BLOCK_BYTES, content_bytes_within, laid_out
from s3claim.store import Facts, is_check_in_id, recorded_tool

__all__ = [
    "CONTENT_TYPES",
    "ENCODINGS",
    "INDEX_CONTENT_TYPE",
    "MAX_METADATA_BYTES",
    "MAX_OBJECT_BYTES",
    "ObjectMeta",
    "check_metadata_size",
    "content_range",
    "decode",
    "laid_out_body",
    "max_chars",
    "metadata",
    "parse_metadata",
]

FORMAT_VERSION = "5"
ENCODINGS = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}
"""Storage width (bytes a character) -> the codec that has exactly that width."""
CONTENT_TYPES = {  # text at that width, with a 16-byte tag after every 4,096 bytes
    1: "application/vnd.s3claim.v5; charset=iso-8859-1",
    2: "application/vnd.s3claim.v5; charset=utf-16le",
    4: "application/vnd.s3claim.v5; charset=utf-32le",
}
INDEX_CONTENT_TYPE = "application/vnd.s3claim.index.v5"

MAX_METADATA_BYTES = 2048
"""S3 refuses more user metadata than this (names and values, UTF-8); moto does not."""

MAX_OBJECT_BYTES = 5 * 1024**3
"""A single PutObject carries at most 5 GiB."""

_META_FORMAT = "s3claim-format"
_META_EXPIRES = "s3claim-expires-at"
_META_CHARS = "s3claim-chars"
_META_ENCODING = "s3claim-encoding"
_META_RUN = "s3claim-run"
_META_LINES = "s3claim-lines"
_META_BYTES = "s3claim-bytes"
_META_INDEX = "s3claim-index"
"""On a claim with an index beside it: the index's length in bytes (a hand-off and a refresh
copy it too, and a read that finds it missing knows the claim is damaged)."""
_META_BLOCKS = "s3claim-blocks"
"""On a claim handed off by server-side copy: the key its block tags are bound to (the
original's). Sealed with the rest, so only a holder of the handle key can name one."""
_META_TOOL = "s3claim-tool"
"""On a claim: the tool whose result it is, when the check-in said (`ClaimInfo.tool`)."""
_META_CHECK_IN = "s3claim-check-in"
"""On both objects: the check-in they belong to (16 hex digits). Optional: the version before
it wrote none."""
_HEADER_PREFIX = "x-amz-meta-"
_WIDTH_OF = {name: width for width, name in ENCODINGS.items()}
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    """The metadata of a claim or of its index, as read back (once its seal has held)."""

    expires_at: int
    chars: int
    lines: int
    size: int
    """The object's own content bytes (its stored size less the tags)."""
    run_tag: str
    width: int | None = None
    """The claim's bytes a character; None on an index."""
    index_size: int = 0
    """On a claim: its index's length in bytes (0: it has none)."""
    blocks_key: str | None = None
    """The key the body's block tags are bound to, when it is not the object's own."""
    tool: str | None = None
    """On a claim: the tool whose result it is, when its check-in said."""
    check_in_id: str | None = None
    """The check-in the object belongs to; None on one written before the field was."""

    @property
    def facts(self) -> Facts:
        return Facts(self.chars, self.lines)

    def readable(self, *, run_tag: str, now: float) -> bool:
        """Readable while now < expires_at, and only from the run that stored it."""
        return self.run_tag == run_tag and now < self.expires_at


def max_chars(width: int) -> int:
    """The most characters one object of this width can hold, its blocks' tags included."""
    return content_bytes_within(MAX_OBJECT_BYTES) // width


def laid_out_body(content: str, width: int) -> tuple[bytearray, list[bytes]]:
    """The body at `width` (which `content_width` chose, so every character fits) as stored,
    tag slots empty, and its blocks' digests (`_seal.laid_out`)."""
    return laid_out(_encoded_blocks(content, width), width * len(content))


_ENCODED_BLOCKS = 16
"""Blocks encoded at a time: one str slice and one encode for 16 blocks, not for each (8%
less time laying out 16 MiB); 64 KiB of bytes at a time, reused, never the whole body."""


def _encoded_blocks(content: str, width: int) -> Iterator[memoryview]:
    """`content` at `width`, as views of `BLOCK_BYTES` (the last may be short)."""
    chars, encoding = _ENCODED_BLOCKS * BLOCK_BYTES // width, ENCODINGS[width]
    for at in range(0, len(content), chars):
        encoded = memoryview(content[at : at + chars].encode(encoding))
        for start in range(0, len(encoded), BLOCK_BYTES):
            yield encoded[start : start + BLOCK_BYTES]


def decode(body: bytes, width: int, *, operation: str) -> str:
    if len(body) % width:
        raise ClaimStoreError(
            f"{operation}: body of {len(body)} bytes is not whole characters", reason="damaged"
        )
    try:
        return body.decode(ENCODINGS[width])
    except UnicodeDecodeError:
        raise ClaimStoreError(
            f"{operation}: body is not valid {ENCODINGS[width]}", reason="damaged"
        ) from None


def content_range(header: str | None) -> tuple[int, int, int] | None:
    """(first, last, total) of a `Content-Range: bytes a-b/total` header; None if absent."""
    if not header:
        return None
    found = _CONTENT_RANGE.fullmatch(header.strip())
    if found is None:
        raise ClaimStoreError(
            "GetObject: the server sent a malformed Content-Range", reason="damaged"
        )
    first, last, total = (int(n) for n in found.groups())
    return first, last, total


def check_metadata_size(meta: Mapping[str, str]) -> None:
    """Size as S3 counts it, with the header prefix included to stay on the safe side."""
    size = sum(len((_HEADER_PREFIX + k).encode()) + len(v.encode()) for k, v in meta.items())
    if size > MAX_METADATA_BYTES:
        raise ClaimStoreError(
            f"user metadata of {size} bytes exceeds the S3 limit of {MAX_METADATA_BYTES}"
        )


def metadata(
    *,
    expires_at: int,
    facts: Facts,
    size: int,
    run_tag: str,
    width: int | None = None,
    index_size: int = 0,
    blocks_key: str | None = None,
    tool: str | None = None,
    check_in_id: str | None = None,
) -> dict[str, str]:
    """The fields of a claim (`width` given) or of its index (none)."""
    meta = {
        _META_FORMAT: FORMAT_VERSION,
        _META_EXPIRES: str(expires_at),
        _META_CHARS: str(facts.chars),
        _META_LINES: str(facts.lines),
        _META_BYTES: str(size),
        _META_RUN: run_tag,
    }
    if width is not None:
        meta[_META_ENCODING] = ENCODINGS[width]
    if index_size:
        meta[_META_INDEX] = str(index_size)
    if blocks_key is not None:
        meta[_META_BLOCKS] = blocks_key
    tool = recorded_tool(tool)
    if tool is not None:
        meta[_META_TOOL] = quote(tool, safe="")
    if check_in_id is not None:
        if not is_check_in_id(check_in_id):
            raise ValueError("a check-in id is 16 hex digits (new_check_in_id)")
        meta[_META_CHECK_IN] = check_in_id
    check_metadata_size(meta)
    return meta


def parse_metadata(meta: Mapping[str, str], *, operation: str) -> ObjectMeta:
    """Read our fields back; an object we cannot read is a store fault, not a refusal."""
    version = meta.get(_META_FORMAT)
    encoding = meta.get(_META_ENCODING)
    width = None if encoding is None else _WIDTH_OF.get(encoding)
    if version != FORMAT_VERSION or (encoding is not None and width is None):
        found = f"format {version[:16]!r}" if version else "not an s3claim object"
        raise ClaimStoreError(
            f"{operation}: object is {found}, not s3claim format {FORMAT_VERSION}",
            reason="damaged",
        )
    try:
        return ObjectMeta(
            expires_at=int(meta[_META_EXPIRES]),
            chars=int(meta[_META_CHARS]),
            lines=int(meta[_META_LINES]),
            size=int(meta[_META_BYTES]),
            run_tag=meta[_META_RUN],
            width=width,
            index_size=int(meta.get(_META_INDEX, "0")),
            blocks_key=meta.get(_META_BLOCKS),
            tool=_tool(meta.get(_META_TOOL)),
            check_in_id=_check_in(meta.get(_META_CHECK_IN)),
        )
    except (KeyError, ValueError):
        raise ClaimStoreError(
            f"{operation}: object metadata is incomplete", reason="damaged"
        ) from None


def _check_in(found: str | None) -> str | None:
    if found is not None and not is_check_in_id(found):
        raise ValueError("not a check-in id")  # sealed, so ours: only a bug gets here
    return found


def _tool(found: str | None) -> str | None:
    # Sealed, so ours; unquote never raises (an undecodable escape becomes U+FFFD).
    return None if found is None else unquote(found)
