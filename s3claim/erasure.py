"""Erasure receipts: what one erasure removed, signed so it can be checked later.

A store of the second level (`s3claim.store.RangedStore.erase`) returns an `ErasureReceipt`:
the tenant and run erased (keyed tags, never names), the prefixes swept, when the erasure
started and finished (UTC), what went by kind (claims, of which hand-off copies; indexes,
journals, audit records, anything else; every object version and delete marker) and what a
final listing still found (0: an erasure that leaves anything raises instead). Its `mac` is
HMAC-SHA256, under a key derived from the handle key for receipts alone, of its canonical
JSON (`to_json` without `mac`: sorted keys, no spaces), so `verify_receipt(receipt, key)` says
whether any field was edited since (given the text, whether it is the text that was
signed). It proves what a holder of the handle key signed, not what happened: whoever holds
the key can sign any receipt (docs/security.md, "Erasure receipts").
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Annotated, Final, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    NonNegativeInt,
    StringConstraints,
)

from s3claim.handles import HandleKey
from s3claim.safejson import loads

__all__ = [
    "ERASE_PATH",
    "ERASE_SIGNATURE_HEADER",
    "RECEIPT_FORMAT",
    "EraseRequest",
    "ErasureReceipt",
    "issue_receipt",
    "verify_receipt",
]

RECEIPT_FORMAT: Final = "s3claim-erasure-receipt/1"
_PURPOSE = ("erasure receipt", RECEIPT_FORMAT)  # the subkey's: receipts MAC under no other key
ERASE_PATH: Final = "/erase"
"""Where a proxy serving HTTP takes signed erase requests (`EraseRequest`)."""
ERASE_SIGNATURE_HEADER: Final = "S3claim-Signature"
_REQUEST_PURPOSE = ("erase request", "s3claim-erase-request/1")
_FRESH_SECONDS = 60.0
"""How far a request's time may be from the server's: a request is good for a minute."""


def _utc(moment: datetime) -> datetime:
    if moment.utcoffset():
        raise ValueError("times are UTC")
    return moment.astimezone(UTC)


_Tag = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
_Time = Annotated[AwareDatetime, AfterValidator(_utc)]
_Mac = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class ErasureReceipt(BaseModel):
    """One erasure, as the store that did it signed it (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["s3claim-erasure-receipt/1"] = RECEIPT_FORMAT
    store: str
    """Where: `s3://{bucket}` for an S3 store, `memory` for the memory store."""
    tenant: _Tag
    """The tenant's keyed tag (`store.tenant_tag(name)`)."""
    run: _Tag | None = None
    """The run's keyed tag, or None for the whole tenant."""
    swept: tuple[str, ...]
    """The key prefixes listed and emptied (keyed tags, never names)."""
    started_at: _Time
    finished_at: _Time
    claims: NonNegativeInt
    """Claims erased (distinct keys), hand-off copies included: what `forget` returns."""
    hand_offs: NonNegativeInt
    """Of the claims, how many were hand-off copies (`ClaimCheck.hand_off`)."""
    indexes: NonNegativeInt
    """Indexes beside claims (lines, JSON structure)."""
    journals: NonNegativeInt
    """Run journals."""
    audit_records: NonNegativeInt
    other: NonNegativeInt
    """Objects under the prefixes of no kind above (an S3 store's only)."""
    versions: NonNegativeInt
    """Object versions deleted, of every kind (an S3 store's; one an object unversioned)."""
    delete_markers: NonNegativeInt
    remaining: NonNegativeInt
    """What a final listing of every prefix still found: 0."""
    mac: _Mac

    def to_json(self) -> str:
        """The receipt as canonical JSON: sorted keys, no spaces, times as ISO 8601 `Z`."""
        return _canonical(self.model_dump(mode="json"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ErasureReceipt:
        """A receipt read back; `ValueError` for anything that is not one (whether it
        verifies is `verify_receipt`'s question)."""
        return cls.model_validate(loads(text))  # pydantic's ValidationError is a ValueError


def issue_receipt(key: HandleKey, **fields: object) -> ErasureReceipt:
    """A receipt of these fields (all but `mac`), signed under `key`'s receipt subkey."""
    unsigned = ErasureReceipt.model_validate({**fields, "mac": "0" * 64})
    return unsigned.model_copy(update={"mac": _mac(unsigned, key)})


def verify_receipt(receipt: ErasureReceipt | str | bytes, key: HandleKey | str | bytes) -> bool:
    """Whether `receipt` is as a holder of `key` signed it: False once any field is edited,
    and for a receipt signed under another key. A ring (`HandleKey(newest, *older)`) verifies
    what any of its keys signed.

    Given as text (what `to_json` wrote; one final newline aside), the text itself is what is
    checked: the same fields spelled otherwise (`1.0` or `"1"` for `1`, `+00:00` for `Z`, keys
    in another order, spaces) are not the bytes that were signed, and are False. Text that is
    no receipt at all is `ValueError`, as `ErasureReceipt.from_json` says.
    """
    key = key if isinstance(key, HandleKey) else HandleKey(key)
    if not isinstance(receipt, ErasureReceipt):
        text = receipt.decode("utf-8") if isinstance(receipt, bytes) else receipt
        parsed = ErasureReceipt.from_json(text)
        if text.removesuffix("\n") != parsed.to_json():
            return False
        receipt = parsed
    return any(hmac.compare_digest(_mac(receipt, k), receipt.mac) for k in key.ring)


def _mac(receipt: ErasureReceipt, key: HandleKey) -> str:
    signed = _canonical(receipt.model_dump(mode="json", exclude={"mac"})).encode("utf-8")
    return hmac.new(key.subkey(*_PURPOSE), signed, hashlib.sha256).hexdigest()


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class EraseRequest(BaseModel):
    """A request to erase a tenant (or one run of it) from a store another process holds,
    the MCP proxy's memory store above all: no other process can reach its claims.

    Its body is canonical JSON, signed like a receipt (HMAC-SHA256, under a subkey of the
    handle key for erase requests alone) in the `S3claim-Signature` header, and good for
    a minute of the server's clock. Names travel in the body, never in a URL or a log line;
    a replayed request erases what is already gone.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    tenant: str
    run: str | None = None
    at: float
    """When it was signed (seconds since the epoch)."""

    def signed(self, key: HandleKey) -> tuple[bytes, str]:
        """(the body, its signature) to send."""
        body = _canonical(self.model_dump()).encode("utf-8")
        return body, _request_mac(body, key)

    @classmethod
    def received(cls, body: bytes, signature: str, key: HandleKey, *, now: float) -> EraseRequest:
        """The request `body` holds, if `signature` is its signature under `key` and it is
        fresh; `ValueError` saying which is not so (never naming what the body holds). Signed
        under any key of a ring is signed."""
        if not any(hmac.compare_digest(_request_mac(body, k), signature) for k in key.ring):
            raise ValueError("not signed under this server's S3CLAIM_HANDLE_KEY")
        request = cls.model_validate(loads(body))
        if abs(now - request.at) > _FRESH_SECONDS:
            raise ValueError(
                f"signed more than {_FRESH_SECONDS:.0f} s from the server's time: check the clocks"
            )
        return request


def _request_mac(body: bytes, key: HandleKey) -> str:
    return hmac.new(key.subkey(*_REQUEST_PURPOSE), body, hashlib.sha256).hexdigest()
