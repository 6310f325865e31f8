"""A link's token: one check-in of a claim, one scope and an expiry, sealed under the handle key.

    token = base64url(version | nonce | sealed | tag)          (no padding)
    plain = expires_at | width digit | 16 bytes of handle | u8 len | check-in id
            | u16 len | tenant | u16 len | run
    sealed = plain XOR HMAC-SHA256(enc_key, nonce | counter), counter = 0, 1, ...
    tag = HMAC-SHA256(mac_key, version | nonce | sealed)[:16]

Both keys are subkeys of the handle key, each for this purpose only (`HandleKey.subkey`).
The server must rebuild the `Scope` to read through the store, so the token carries the
tenant and run names; the URL must not show them, so they are encrypted. The check-in id (8
bytes, or none for a claim stored before stores kept one) holds the link to the one write of
the claim it was made for: the same text checked in again after an erasure has the same
handle, and a new id. The standard
library has no AES, so the cipher is HMAC-SHA256 as a pseudo-random function in counter
mode under a fresh 128-bit nonce, then encrypt-then-MAC: confidential as long as
HMAC-SHA256 is a PRF and no nonce repeats (2**-64 after 2**32 links), and no bit of a
token changes without its tag failing. Opening checks the tag (in constant time) before it
decrypts anything.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass

from s3claim.handles import HANDLE_PREFIX, HandleKey, is_handle
from s3claim.scope import Scope
from s3claim.store import CHECK_IN_ID_BYTES, is_check_in_id

__all__ = ["Link", "LinkKey"]

_VERSION = b"\x02"
"""Version 2 carries the check-in id. A token of version 1 (none) no longer opens, and reads
as any unknown link does: a link lives minutes (5 by default), so an upgrade ends only those
issued just before it, and keeping them would have kept the hole the id closes (issue 46)."""
_NONCE_BYTES = 16
_TAG_BYTES = 16
_HEAD = struct.Struct(">Q1s16s")  # expires_at, width digit, handle bytes
_LEN = struct.Struct(">H")
_ID_LEN = struct.Struct(">B")
_MAX_TOKEN_CHARS = 16_384  # two names of 1,024 characters of 4 UTF-8 bytes, and room


@dataclass(frozen=True, slots=True)
class Link:
    """What a valid token names: a claim in a scope, readable until `expires_at`, of one
    check-in (`check_in_id`; None for a claim stored before stores kept one: any reads)."""

    handle: str
    scope: Scope
    expires_at: int
    """Epoch seconds; the link reads nothing from then on."""
    check_in_id: str | None = None

    def __repr__(self) -> str:  # the scope's names never in a repr
        return f"Link(handle={self.handle!r}, expires_at={self.expires_at})"


class LinkKey:
    """Seals and opens link tokens under two subkeys of a handle key: seals under the newest
    key of a ring, opens what any of its keys sealed."""

    __slots__ = ("_enc", "_mac", "_older")

    def __init__(self, key: HandleKey) -> None:
        self._enc = key.subkey("link", "encryption v1")
        self._mac = key.subkey("link", "mac v1")
        self._older = tuple(LinkKey(k) for k in key.ring[1:])

    def seal(self, link: Link) -> str:
        """The token for `link` (a fresh nonce each time: two tokens never look alike)."""
        if not is_handle(link.handle):
            raise ValueError("a link names a well-formed handle")
        if link.check_in_id is not None and not is_check_in_id(link.check_in_id):
            raise ValueError("a link names a check-in id as stores make them, or none")
        digits = link.handle[len(HANDLE_PREFIX) :]
        plain = _HEAD.pack(link.expires_at, digits[:1].encode(), bytes.fromhex(digits[1:]))
        check_in = b"" if link.check_in_id is None else bytes.fromhex(link.check_in_id)
        plain += _ID_LEN.pack(len(check_in)) + check_in
        for name in (link.scope.tenant, link.scope.run):
            data = name.encode("utf-8")
            plain += _LEN.pack(len(data)) + data
        nonce = secrets.token_bytes(_NONCE_BYTES)
        body = _VERSION + nonce + _xor(plain, self._stream(nonce, len(plain)))
        return _b64(body + self._tag(body))

    def open(self, token: str) -> Link | None:
        """The link a token names; None for anything not sealed by this key, whatever it is
        (the caller cannot tell an altered token from a foreign or a garbled one)."""
        if len(token) > _MAX_TOKEN_CHARS:
            return None
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            return None
        if _b64(raw) != token:  # one spelling only: unused bits set make another token
            return None
        if len(raw) < 1 + _NONCE_BYTES + _HEAD.size + _ID_LEN.size + 2 * _LEN.size + _TAG_BYTES:
            return None
        body, tag = raw[:-_TAG_BYTES], raw[-_TAG_BYTES:]
        if body[:1] != _VERSION:
            return None
        opener = next(
            (k for k in (self, *self._older) if hmac.compare_digest(tag, k._tag(body))), None
        )
        return None if opener is None else opener._opened(body)

    def _opened(self, body: bytes) -> Link | None:
        nonce, sealed = body[1 : 1 + _NONCE_BYTES], body[1 + _NONCE_BYTES :]
        return _parse(_xor(sealed, self._stream(nonce, len(sealed))))

    def _tag(self, body: bytes) -> bytes:
        return hmac.new(self._mac, body, hashlib.sha256).digest()[:_TAG_BYTES]

    def _stream(self, nonce: bytes, size: int) -> bytes:
        blocks = -(-size // 32)
        return b"".join(
            hmac.new(self._enc, nonce + n.to_bytes(4, "big"), hashlib.sha256).digest()
            for n in range(blocks)
        )[:size]

    def __repr__(self) -> str:
        return "LinkKey(<secret>)"


def _parse(plain: bytes) -> Link | None:
    """The link in a token's plaintext. The tag held, so it is ours; it is parsed with care
    all the same, so a bug elsewhere cannot turn into a crash here."""
    try:
        expires_at, width, digest = _HEAD.unpack_from(plain)
        (id_size,) = _ID_LEN.unpack_from(plain, _HEAD.size)
        at = _HEAD.size + _ID_LEN.size
        if id_size not in (0, CHECK_IN_ID_BYTES) or len(plain) < at + id_size:
            return None
        check_in_id = plain[at : at + id_size].hex() if id_size else None
        at += id_size
        names = []
        for _ in range(2):
            (size,) = _LEN.unpack_from(plain, at)
            at += _LEN.size
            names.append(plain[at : at + size].decode("utf-8"))
            at += size
        if at != len(plain):
            return None
        handle = f"{HANDLE_PREFIX}{width.decode('ascii')}{digest.hex()}"
        if not is_handle(handle):
            return None
        return Link(handle, Scope(tenant=names[0], run=names[1]), expires_at, check_in_id)
    except (struct.error, UnicodeDecodeError, ValueError):
        return None


def _xor(data: bytes, stream: bytes) -> bytes:
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
