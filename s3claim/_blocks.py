"""Block digests: the SHA-256 of every 4,096-byte block of a text's bytes.

A handle's content digest is the SHA-256 of these digests (`s3claim.handles`), and the S3
store's seal tags each stored block with a MAC of the block's digest (`s3claim.s3._seal`).
For ASCII text the stored body is the UTF-8, so a check-in hashes its bytes once for both
(the S3 store takes them as it lays the body out, `s3claim.s3._seal.laid_out`): half the
hashing of a digest of the whole text beside a MAC of every block.

Above `SPLIT_BYTES`, `block_digests` hashes the second half of the blocks on a worker thread:
hashlib lets go of the GIL for each block, so the two halves run on two cores. The S3 store's
layout hashes on one thread: a second one, encoding and copying its half, measured slower.
"""

from __future__ import annotations

import hashlib

from s3claim._background import Background

__all__ = ["BLOCK_BYTES", "DIGEST_BYTES", "SPLIT_BYTES", "block_digests", "digest_of"]

BLOCK_BYTES = 4096
"""One 4,096-character window at 1 byte a character: windows read in order are whole blocks."""
DIGEST_BYTES = 32
SPLIT_BYTES = 1024 * 1024
"""Below this the second thread costs more than it saves."""

_worker = Background(1, "s3claim-digests")


def _digests(view: memoryview, start: int, end: int) -> list[bytes]:
    sha256 = hashlib.sha256
    return [sha256(view[at : at + BLOCK_BYTES]).digest() for at in range(start, end, BLOCK_BYTES)]


def block_digests(data: bytes) -> list[bytes]:
    """The SHA-256 of each `BLOCK_BYTES` of `data` in order (the last block may be short)."""
    view = memoryview(data)
    if len(data) < SPLIT_BYTES:
        return _digests(view, 0, len(data))
    middle = len(data) // 2 // BLOCK_BYTES * BLOCK_BYTES
    second = _worker.submit(_digests, view, middle, len(data))
    return _digests(view, 0, middle) + second.result()


def digest_of(digests: list[bytes]) -> bytes:
    """The content digest of a text whose block digests these are."""
    return hashlib.sha256(b"".join(digests)).digest()
