"""A request body as botocore gets it: the buffer itself over plain HTTP, a file over it else.

To an `http://` endpoint botocore signs the payload, so it hashes the whole body and only then
sends it. Handed the buffer itself (a `Body`), it does each in one call with no copy; handed a
file, it reads and copies 1 MiB pieces to hash and 128 KiB pieces to send (a 16 MiB PUT to
s3rver: 71.7 ms that way, 61.7 this one). To an `https://` endpoint it sends no payload hash
and streams the body from a file, with a trailing checksum it takes on the way; and moto's
in-process `mock_aws` (whose endpoints are https) reads no bytearray body at all. Neither shows
more than its size in a repr: botocore logs a request's parameters at DEBUG.
"""

from __future__ import annotations

import base64
import io
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
    from mypy_boto3_s3 import S3Client

__all__ = ["Body", "BodyFile", "crc32_checksum", "signs_payload"]


class Body(bytearray):
    """A body as the store lays it out and, over plain HTTP, sends it."""

    def __repr__(self) -> str:
        return f"<body of {len(self):,} bytes>"

    __str__ = __repr__


class BodyFile(io.RawIOBase):
    """A file over a body, read in pieces and never copied whole, for an https endpoint."""

    def __init__(self, data: bytes | bytearray) -> None:
        super().__init__()
        self._view, self._at = memoryview(data), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: len(self._view)}[whence]
        self._at = min(max(0, base + offset), len(self._view))
        return self._at

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else self._at + size
        piece = bytes(self._view[self._at : end])
        self._at += len(piece)
        return piece

    def readinto(self, buffer: WriteableBuffer) -> int:
        into = memoryview(buffer).cast("B")
        piece = self._view[self._at : self._at + len(into)]
        into[: len(piece)] = piece
        self._at += len(piece)
        return len(piece)


def signs_payload(client: S3Client) -> bool:
    """Whether botocore hashes a whole body before sending it: to a plain-HTTP endpoint."""
    return str(client.meta.endpoint_url).startswith("http://")


def crc32_checksum(body: bytes | bytearray) -> str:
    """`ChecksumCRC32` of a body: its CRC32, big-endian, in base64, as S3 checks it."""
    return base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode("ascii")
