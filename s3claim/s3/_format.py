"""The object format: a UTF-32-LE body and five fields of user metadata.

Why UTF-32-LE. A reader has to choose its byte range before its first request: the object's
metadata only arrives with the response. In a variable-width encoding (UTF-8 is 1-4 bytes a
character) the bytes of character N cannot be known without an index, and a range can split a
character. At a fixed 4 bytes per character, window [offset, offset + limit) is always bytes
[4*offset, 4*(offset + limit)), so any process, cold, serves any window of any claim with one
ranged GET of at most 4*limit bytes, and every window is whole characters.

The price is storage against UTF-8: 4x for ASCII, 4/3x for most CJK, 1x outside the BMP.
Claims are short-lived and deleted by lifecycle, so bytes-at-rest are cheap next to a second
request per window or a window that is wrong.

Metadata carries what a read must check without another request: the expiry (integer epoch
seconds, enforced to the second on every read), the run tag (the scope is checked, not only
hashed into the key), the length in characters, the encoding and the format version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3claim.errors import ClaimStoreError

__all__ = [
    "BYTES_PER_CHAR",
    "CONTENT_TYPE",
    "ENCODING",
    "MAX_CONTENT_CHARS",
    "MAX_METADATA_BYTES",
    "ClaimMeta",
    "byte_range",
    "check_metadata_size",
    "decode",
    "encode",
    "metadata",
    "metadata_bytes",
    "parse_metadata",
]

ENCODING = "utf-32-le"
BYTES_PER_CHAR = 4
FORMAT_VERSION = "1"
CONTENT_TYPE = "text/plain; charset=utf-32le"

MAX_METADATA_BYTES = 2048
"""S3 refuses more user metadata than this (names and values, UTF-8); moto does not."""

MAX_CONTENT_CHARS = 5 * 1024**3 // BYTES_PER_CHAR
"""A single PutObject carries at most 5 GiB."""

_META_FORMAT = "s3claim-format"
_META_EXPIRES = "s3claim-expires-at"
_META_CHARS = "s3claim-chars"
_META_ENCODING = "s3claim-encoding"
_META_RUN = "s3claim-run"
_HEADER_PREFIX = "x-amz-meta-"


@dataclass(frozen=True, slots=True)
class ClaimMeta:
    expires_at: int
    chars: int
    run_tag: str

    def readable(self, *, run_tag: str, now: float) -> bool:
        """Readable while now < expires_at, and only from the run that stored it."""
        return self.run_tag == run_tag and now < self.expires_at


def encode(content: str) -> bytes:
    return content.encode(ENCODING)


def decode(body: bytes, *, operation: str) -> str:
    if len(body) % BYTES_PER_CHAR:
        raise ClaimStoreError(f"{operation}: body of {len(body)} bytes is not whole characters")
    try:
        return body.decode(ENCODING)
    except UnicodeDecodeError:
        raise ClaimStoreError(f"{operation}: body is not valid {ENCODING}") from None


def byte_range(offset: int, limit: int) -> str:
    """The HTTP range (inclusive) holding characters [offset, offset + limit)."""
    return f"bytes={BYTES_PER_CHAR * offset}-{BYTES_PER_CHAR * (offset + limit) - 1}"


def metadata_bytes(meta: Mapping[str, str]) -> int:
    """Size as S3 counts it, with the header prefix included to stay on the safe side."""
    return sum(len((_HEADER_PREFIX + k).encode()) + len(v.encode()) for k, v in meta.items())


def check_metadata_size(meta: Mapping[str, str]) -> None:
    size = metadata_bytes(meta)
    if size > MAX_METADATA_BYTES:
        raise ClaimStoreError(
            f"user metadata of {size} bytes exceeds the S3 limit of {MAX_METADATA_BYTES}"
        )


def metadata(*, expires_at: int, chars: int, run_tag: str) -> dict[str, str]:
    meta = {
        _META_FORMAT: FORMAT_VERSION,
        _META_EXPIRES: str(expires_at),
        _META_CHARS: str(chars),
        _META_ENCODING: ENCODING,
        _META_RUN: run_tag,
    }
    check_metadata_size(meta)
    return meta


def parse_metadata(meta: Mapping[str, str], *, operation: str) -> ClaimMeta:
    """Read our fields back; an object we cannot read is a store fault, not a refusal."""
    version = meta.get(_META_FORMAT)
    if version != FORMAT_VERSION or meta.get(_META_ENCODING) != ENCODING:
        raise ClaimStoreError(f"{operation}: object is not s3claim format {FORMAT_VERSION}")
    try:
        return ClaimMeta(
            expires_at=int(meta[_META_EXPIRES]),
            chars=int(meta[_META_CHARS]),
            run_tag=meta[_META_RUN],
        )
    except (KeyError, ValueError):
        raise ClaimStoreError(f"{operation}: object metadata is incomplete") from None
