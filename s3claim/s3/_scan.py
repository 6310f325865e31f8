"""The body of a claim as `scan` streams it: sealed blocks in, checked text out.

Memory stays bounded by `SCAN_BYTES` whatever the claim's size. Each block's tag is checked
before any of its text is yielded (`s3claim.s3._seal.BlockStream`), so a search never serves
a match from a rewritten block: the scan stops there with a `ClaimStoreError` (`damaged`). A
stream cut midway resumes with a ranged GET from the next stored byte (`reopen`), at most
`attempts` times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError

import s3claim.s3._format as _format
from s3claim.errors import ClaimStoreError
from s3claim.s3._seal import BlockStream, Seal, sealed_size

if TYPE_CHECKING:
    from botocore.response import StreamingBody

__all__ = ["SCAN_BYTES", "pieces"]

SCAN_BYTES = 1024 * 1024
"""How much of a claim `scan` reads at a time: memory is bounded by this, not the claim."""


def _short() -> ClaimStoreError:
    return ClaimStoreError(
        "GetObject: body length disagrees with the object's size", reason="damaged"
    )


def pieces(
    body: StreamingBody,
    *,
    width: int,
    seal: Seal,
    content_bytes: int,
    reopen: Callable[[int], StreamingBody],
    attempts: int,
) -> Iterator[str]:
    """The text of a sealed body of `content_bytes` (at `width`), in pieces, every tag checked."""
    expected = sealed_size(content_bytes)
    blocks = BlockStream(seal, operation="GetObject")
    received = 0
    carry = b""  # the bytes of a character split between two reads
    resumes = 0
    try:
        while True:
            try:
                for chunk in body.iter_chunks(SCAN_BYTES):
                    received += len(chunk)
                    if received > expected:
                        break  # longer than sealed: refused below, the excess unread
                    data = carry + blocks.feed(chunk)
                    cut = len(data) - len(data) % width
                    carry = data[cut:]
                    if cut:
                        yield _format.decode(data[:cut], width, operation="GetObject")
                break
            except BotoCoreError as exc:  # the stream broke: go on from the next byte
                resumes += 1
                if resumes >= attempts:
                    raise ClaimStoreError(
                        f"GetObject stream failed {resumes} time(s): {type(exc).__name__}"
                    ) from exc
                body.close()
                body = reopen(received)
        if received != expected:
            raise _short()
        data = carry + blocks.end()
        if len(data) % width:
            raise _short()
        if data:
            yield _format.decode(data, width, operation="GetObject")
    finally:
        body.close()
