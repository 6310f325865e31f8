"""Authenticated records: what the S3 store reads back is what a holder of the handle key wrote.

Anyone who may write the bucket can rewrite an object in s3claim's own format, so every object
s3claim writes is sealed under a key derived from the handle key *and the object's own key*
(`HandleKey.subkey("seal", object_key)`): a record copied or moved to another key fails its
seal, as does any edit (docs/security.md, "Sealed records", and what a seal cannot tell). Two
seals, one for each way an object is read, both HMAC-SHA256:

- **Metadata** (`Seal.metadata`, `Seal.check_metadata`): `s3claim-mac` is a MAC of every other
  `s3claim-*` field, names and values; an object read whole (a journal) adds its body's
  SHA-256 (`s3claim-body`). Fields of other names are never read, so they are not sealed.
- **Blocks** (`laid_out` then `Seal.tag`, or `Seal.blocks`; `Seal.open_blocks`, `BlockStream`):
  a body read in ranges is stored as blocks of `BLOCK_BYTES`, each followed by a `TAG_BYTES`
  tag, a MAC of the block's index and SHA-256 (for ASCII text the digests its handle is made
  of, so its bytes are hashed once for both). The ranged GET of a window's blocks carries
  their tags; the index keeps blocks in their place, the sealed length the object whole.

Any failure is a `ClaimStoreError` with reason `damaged`, which quotes nothing of the object.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence

from s3claim.errors import ClaimStoreError
from s3claim.handles import BLOCK_BYTES, HandleKey

__all__ = [
    "BLOCK_BYTES",
    "MAC_FIELD",
    "TAG_BYTES",
    "UNIT_BYTES",
    "BlockStream",
    "Seal",
    "block_span",
    "content_bytes_within",
    "laid_out",
    "sealed_size",
]

TAG_BYTES = 16
"""128 bits of HMAC-SHA256 after each block: 0.39% of the body."""
MAC_FIELD = "s3claim-mac"
BODY_FIELD = "s3claim-body"
_SEALED_PREFIX = "s3claim-"
UNIT_BYTES = BLOCK_BYTES + TAG_BYTES
"""A block and its tag, as stored."""
_UNIT = UNIT_BYTES
_SEAL_FAILED = "the object's seal does not hold (rewritten, moved, or not written with this key)"


def sealed_size(content_bytes: int) -> int:
    """The stored size of a body of `content_bytes`: its bytes and one tag a block."""
    return content_bytes + -(-content_bytes // BLOCK_BYTES) * TAG_BYTES


def content_bytes_within(stored_bytes: int) -> int:
    """The largest body whose sealed size fits in `stored_bytes`."""
    whole, rest = divmod(stored_bytes, _UNIT)
    return whole * BLOCK_BYTES + max(0, rest - TAG_BYTES)


def block_span(first_byte: int, end_byte: int) -> tuple[int, int, int]:
    """(first block, first stored byte, last stored byte inclusive) holding content bytes
    [first_byte, end_byte): the one HTTP range to ask for (the server clips it at the end)."""
    first = first_byte // BLOCK_BYTES
    last = max(first, (end_byte - 1) // BLOCK_BYTES)
    return first, first * _UNIT, (last + 1) * _UNIT - 1


def laid_out(
    blocks: Iterable[bytes | memoryview], content_bytes: int
) -> tuple[bytearray, list[bytes]]:
    """A body of `content_bytes` as stored, its tag slots left empty for `Seal.tag`, and the
    SHA-256 of each block, taken as the block is placed (every block whole but the last).

    One buffer, written once: the body is the largest thing a check-in holds, and encoding
    it whole, then joining blocks and tags into a second buffer, held it twice.
    """
    stored = bytearray(sealed_size(content_bytes))
    view, sha256, digests, at = memoryview(stored), hashlib.sha256, [], 0
    for block in blocks:
        if at % _UNIT:  # a short block before the last: `Seal.tag` would write over content
            raise ValueError("only the last block may be shorter than BLOCK_BYTES")
        digests.append(sha256(block).digest())
        view[at : at + len(block)] = block
        at += len(block) + TAG_BYTES
    if at != len(stored):
        raise ValueError(f"blocks of {at} stored bytes laid out for {len(stored)}")
    return stored, digests


def _damaged(operation: str, what: str = _SEAL_FAILED) -> ClaimStoreError:
    return ClaimStoreError(f"{operation}: {what}", reason="damaged")


def _fields(meta: Mapping[str, str]) -> bytes:
    """The sealed fields, length-prefixed so no two sets of fields encode alike."""
    out = bytearray()
    for name in sorted(k.lower() for k in meta):
        if name.startswith(_SEALED_PREFIX) and name != MAC_FIELD:
            for part in (name, _value(meta, name)):
                data = part.encode("utf-8")
                out += len(data).to_bytes(8, "big") + data
    return bytes(out)


def _value(meta: Mapping[str, str], lower: str) -> str:
    return next(v for k, v in meta.items() if k.lower() == lower)


class Seal:
    """The seal of one object, under a key only the handle key and the object's key give."""

    __slots__ = ("_key",)

    def __init__(self, handle_key: HandleKey, object_key: str) -> None:
        self._key = handle_key.subkey("seal", object_key)

    def _mac(self, data: bytes) -> str:
        return hmac.digest(self._key, b"metadata" + data, "sha256")[:16].hex()

    # -- metadata -------------------------------------------------------------------------

    def metadata(self, fields: Mapping[str, str], *, body: bytes | None = None) -> dict[str, str]:
        """`fields` with the seal added (and the body's digest, for an object read whole)."""
        sealed = dict(fields)
        if body is not None:
            sealed[BODY_FIELD] = hashlib.sha256(body).hexdigest()
        sealed[MAC_FIELD] = self._mac(_fields(sealed))
        return sealed

    def check_metadata(self, meta: Mapping[str, str], *, operation: str) -> None:
        """Refuse metadata whose seal is missing or does not hold."""
        found = {k.lower(): v for k, v in meta.items()}.get(MAC_FIELD)
        if found is None:
            raise _damaged(operation, "the object carries no seal")
        if not hmac.compare_digest(found.encode(), self._mac(_fields(meta)).encode()):
            raise _damaged(operation)

    def check_body(self, meta: Mapping[str, str], body: bytes, *, operation: str) -> None:
        """Refuse a body read whole unless its digest is the one the (checked) metadata seals."""
        self.check_metadata(meta, operation=operation)
        digest = {k.lower(): v for k, v in meta.items()}.get(BODY_FIELD, "")
        if not hmac.compare_digest(digest.encode(), hashlib.sha256(body).hexdigest().encode()):
            raise _damaged(operation)

    # -- blocks ---------------------------------------------------------------------------

    def _tag(self, index: int, digest: bytes) -> bytes:
        """HMAC-SHA256(key, "block", index, the block's SHA-256), cut to `TAG_BYTES`."""
        message = b"block" + index.to_bytes(8, "big") + digest
        return hmac.digest(self._key, message, "sha256")[:TAG_BYTES]

    def blocks(self, body: bytes) -> bytearray:
        """The body as stored: each block followed by its tag."""
        view = memoryview(body)
        blocks = (view[at : at + BLOCK_BYTES] for at in range(0, len(body), BLOCK_BYTES))
        return self.tag(*laid_out(blocks, len(body)))

    def tag(self, stored: bytearray, digests: Sequence[bytes]) -> bytearray:
        """Fill the tag slots of a body `laid_out` with these digests, in place."""
        for index, digest in enumerate(digests):
            end = min((index + 1) * _UNIT, len(stored))  # a short last block ends the body
            stored[end - TAG_BYTES : end] = self._tag(index, digest)
        return stored

    def open_blocks(self, data: bytes, *, first: int, operation: str) -> bytes:
        """The content of consecutive stored blocks from block `first`, every tag checked.

        Only the last block may be short (the object's last); the caller checks, against the
        sealed length, that it is.
        """
        view = memoryview(data)
        out: list[memoryview] = []
        for index, start in enumerate(range(0, len(data), _UNIT), start=first):
            unit = view[start : start + _UNIT]
            if len(unit) <= TAG_BYTES:
                raise _damaged(operation, "the object ends inside a block's tag")
            block, tag = unit[:-TAG_BYTES], unit[-TAG_BYTES:]
            if not hmac.compare_digest(tag, self._tag(index, hashlib.sha256(block).digest())):
                raise _damaged(operation)
            out.append(block)
        return b"".join(out)

    def __repr__(self) -> str:
        return "Seal(<key>)"


class BlockStream:
    """`open_blocks` for a body read as a stream: feed it pieces, take back checked content."""

    __slots__ = ("_carry", "_next", "_operation", "_seal")

    def __init__(self, seal: Seal, *, operation: str) -> None:
        self._seal = seal
        self._operation = operation
        self._carry = b""
        self._next = 0

    def feed(self, piece: bytes) -> bytes:
        """The content of every whole block the stream now holds."""
        data = self._carry + piece if self._carry else piece
        whole = len(data) - len(data) % _UNIT
        self._carry = data[whole:]
        if not whole:
            return b""
        content = self._seal.open_blocks(data[:whole], first=self._next, operation=self._operation)
        self._next += whole // _UNIT
        return content

    def end(self) -> bytes:
        """The last, short block's content (empty if the body ended on a block)."""
        data, self._carry = self._carry, b""
        if not data:
            return b""
        return self._seal.open_blocks(data, first=self._next, operation=self._operation)
