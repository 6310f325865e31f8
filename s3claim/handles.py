"""Handle derivation, shared by every store.

A handle is `claim:`, one digit naming the claim's storage width (1, 2 or 4 bytes a
character; see `content_width`), 120 bits (30 lowercase hex digits) of
HMAC-SHA256(key, len-prefixed("handle", tenant, run, digest, width)), and 8 bits (2 hex
digits) that say which key of the ring made it (`HandleKey.makers`): the first byte of
HMAC-SHA256(key, len-prefixed("key id", the width and 30 digits)), where the content's
digest is the SHA-256 of the SHA-256s of its UTF-8 bytes' 4,096-byte blocks (`block_digests`:
the S3 store tags its stored blocks by their digests, so ASCII text, whose stored bytes are its
UTF-8, is hashed once for both).

The width travels in the handle because a cold S3 reader must choose its byte range before
its first request; it is bound into the MAC (and, by the S3 layout, into the object key), so
a handle whose width digit was altered names nothing and is refused like any unknown handle.
The length prefixes make the encoding unambiguous, so ("a/b", "c") and ("a", "b/c") never
meet; the key makes a handle impossible to derive, or to guess for another scope, without it.
The same key also yields the opaque tenant and run tags the S3 layout uses, and the per-object
keys that seal what the S3 store writes (`s3claim.s3._seal`).

A `HandleKey` may hold a ring of keys, newest first (`S3CLAIM_HANDLE_KEY=new,old`): what it
makes (handles, tags, subkeys) is the newest's; `ring` gives each key alone, for whatever must
find or verify what an older key made. A handle's last two digits name its maker without a
request: a reader tries the keys whose digits match first (1 in 256 of the others match by
chance), then the rest, so a handle made before the digits existed is still found.

docs/security.md ("Keyed handles") says what the key protects.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import re
import secrets

from s3claim.scope import Scope

__all__ = [
    "HANDLE_PREFIX",
    "HandleKey",
    "is_handle",
]

HANDLE_PREFIX = "claim:"
BLOCK_BYTES = 4096
"""One 4,096-character window at 1 byte a character: windows read in order are whole blocks."""
_HANDLE_HEX = 32
_MAC_HEX = 30  # the rest, 2 hex digits, name the key of the ring that made the handle
_HANDLE_RE = re.compile(r"claim:[124][0-9a-f]{32}")
_MIN_KEY_BYTES = 16
_ABOVE_LATIN1 = re.compile("[^\x00-\xff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def is_handle(value: object) -> bool:
    """True for a well-formed handle; anything else must never reach a store."""
    return isinstance(value, str) and _HANDLE_RE.fullmatch(value) is not None


def unwrapped(value: str) -> str:
    """A handle argument as a model may copy it from a marker: a handle in one pair of
    quotes, or in their HTML entities (a chat template that escapes messages shows it
    `handle=&#39;claim:…&#39;`), is the handle it wraps. Anything else is left as it is (and
    read, or refused, as it is): no other character around a handle is read past."""
    if is_handle(value) or len(value) > len(HANDLE_PREFIX) + 1 + _HANDLE_HEX + 32:
        return value
    plain = html.unescape(value)
    inner = plain[1:-1]
    return inner if plain[:1] == plain[-1:] and plain[:1] in "'\"" and is_handle(inner) else value


def handle_width(handle: str) -> int:
    """The storage width a well-formed handle names (the caller has checked `is_handle`)."""
    return int(handle[len(HANDLE_PREFIX)])


def content_width(content: str) -> int:
    """The narrowest fixed width that holds every character: 1 (Latin-1), 2 (BMP) or 4."""
    if content.isascii() or _ABOVE_LATIN1.search(content) is None:
        return 1
    return 2 if _ASTRAL.search(content) is None else 4


def utf8_of(content: str) -> bytes:
    """The content's UTF-8; refuses text that UTF-8 cannot carry (a lone surrogate)."""
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("content must be valid Unicode: it contains a lone surrogate") from None


def block_digests(data: bytes | bytearray | memoryview) -> list[bytes]:
    """The SHA-256 of each `BLOCK_BYTES` of `data` in order (the last block may be short)."""
    view, sha256 = memoryview(data), hashlib.sha256
    return [sha256(view[at : at + BLOCK_BYTES]).digest() for at in range(0, len(view), BLOCK_BYTES)]


def digest_of(digests: list[bytes]) -> bytes:
    """The content digest of a text whose block digests these are."""
    return hashlib.sha256(b"".join(digests)).digest()


def content_digest(content: str, *, utf8: bytes | None = None) -> bytes:
    """The digest of the UTF-8 content's blocks; refuses text that UTF-8 cannot carry.

    `utf8`: the content's UTF-8 bytes, when the caller has them already (a store that keeps
    ASCII as it is need not encode a large result twice).
    """
    return digest_of(block_digests(utf8_of(content) if utf8 is None else utf8))


def _encode(*fields: str | bytes) -> bytes:
    out = bytearray()
    for field in fields:
        data = field.encode("utf-8") if isinstance(field, str) else field
        out += len(data).to_bytes(8, "big")
        out += data
    return bytes(out)


class HandleKey:
    """The secret behind handles and S3 tags, or a ring of them newest first (see the module
    docstring). Its repr never shows a secret."""

    __slots__ = ("_key", "_ring")

    def __init__(self, secret: str | bytes, *older: str | bytes) -> None:
        self._key = _secret(secret)
        self._ring: tuple[HandleKey, ...] = (self,)
        if older:
            ring = [self, *(HandleKey(o) for o in older)]
            for at, key in enumerate(ring):
                for earlier, seen in enumerate(ring[:at]):
                    if hmac.compare_digest(seen._key, key._key):
                        raise ValueError(f"entry {at + 1} repeats entry {earlier + 1}")
            self._ring = tuple(ring)

    @classmethod
    def generate(cls) -> HandleKey:
        return cls(secrets.token_bytes(32))

    @property
    def ring(self) -> tuple[HandleKey, ...]:
        """Every key of the ring, each alone, newest first (this key alone: itself)."""
        return self._ring

    def makers(self, handle: str) -> tuple[HandleKey, ...]:
        """The keys of the ring that may have made a well-formed `handle`, most likely first:
        those its key digits name (newest first), then the others (a handle made before
        handles named their key). No request: the digits are a MAC of the handle's others."""
        if len(self._ring) == 1:
            return self._ring
        named = [k for k in self._ring if k._names(handle)]
        return (*named, *(k for k in self._ring if k not in named))

    def _names(self, handle: str) -> bool:
        body = handle[len(HANDLE_PREFIX) :]
        return hmac.compare_digest(self._key_id(body[:-2]), body[-2:])

    def _key_id(self, body: str) -> str:
        return self._mac("key id", body)[:2]

    def _mac(self, *fields: str | bytes) -> str:
        return hmac.new(self._key, _encode(*fields), hashlib.sha256).hexdigest()

    def _made(self, width: int, mac: str) -> str:
        body = f"{width}{mac[:_MAC_HEX]}"
        return f"{HANDLE_PREFIX}{body}{self._key_id(body)}"

    def handle(self, scope: Scope, content: str, *, digest: bytes | None = None) -> str:
        """The one handle for this content in this scope (refuses lone surrogates).

        `digest`: the content's `content_digest`, when the caller has it already.
        """
        width = content_width(content)
        digest = digest if digest is not None else content_digest(content)
        return self._made(width, self._mac("handle", scope.tenant, scope.run, digest, str(width)))

    def handed_off(self, handle: str, to: Scope) -> str:
        """The handle a claim handed off to the run `to` has there (`ClaimCheck.hand_off`).

        Derived from the parent's handle, not the content, so a store need not read the
        content to hand it off; the width is the parent's, so it still names the storage.
        """
        return self._made(handle_width(handle), self._mac("hand-off", to.tenant, to.run, handle))

    def tenant_tag(self, tenant: str) -> str:
        return self._mac("tenant", tenant)[:_HANDLE_HEX]

    def run_tag(self, scope: Scope) -> str:
        return self._mac("run", scope.tenant, scope.run)[:_HANDLE_HEX]

    def subkey(self, purpose: str, name: str) -> bytes:
        """A 32-byte key for one purpose and one name (an object's key, for its seal): what
        it MACs cannot be forged, or moved to another name, without this key."""
        return hmac.new(self._key, _encode("subkey", purpose, name), hashlib.sha256).digest()

    def __repr__(self) -> str:
        older = len(self._ring) - 1
        return f"HandleKey(<secret>, {older} older)" if older else "HandleKey(<secret>)"


def _secret(secret: str | bytes) -> bytes:
    key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(key) < _MIN_KEY_BYTES:
        raise ValueError(
            f"a handle key needs at least {_MIN_KEY_BYTES} bytes of secret, got {len(key)}"
        )
    return key
