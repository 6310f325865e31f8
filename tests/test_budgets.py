"""The deterministic half of the benchmarks: request and byte budgets, never times.

`test_s3_store.py` already pins one fetch = one ranged GET of the window's sealed blocks, a
million non-ASCII characters at three offsets, and forget of 2,500 claims = 3 deletes and 5
lists (the last of each prefix finds it empty). Here: a window costs its storage width in
bytes a character (4,096 bytes for ASCII and Latin-1, 8,192 for Japanese and Russian, 16,384
with emoji) and a 16-byte tag per 4,096 bytes (issue 21: the seal that proves the window),
whatever the document's size or the window's position; what is stored between the tags is
ASCII's UTF-8 byte for byte and 2 bytes a BMP character; a put sends the body once; forget
costs two requests per thousand claims, and the listing of each prefix that finds it empty
(the claims', the audit area's). (The naive baselines `benchmarks/` compares with are pinned
in benchmarks/tests.)
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

from devkit.documents import KiB, MiB, document
from devkit.servers import Wire
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.s3._layout import is_claim_key
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, build_index
from tests._s3 import stored_bytes

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
WINDOW_BYTES = {"ascii": 4096, "latin1": 4096, "bmp": 8192, "utf8": 16384}
"""A 4,096-character window's body: the physical limit of each kind of text's width."""


@pytest.fixture
def key() -> HandleKey:
    return HandleKey.generate()


@pytest.fixture
def store(s3: Any, bucket: str, key: HandleKey) -> S3ClaimCheckStore:
    return S3ClaimCheckStore(
        bucket, handle_key=key, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )


@pytest.fixture
def wire(s3: Any) -> Wire:
    return Wire.attach(s3)


@pytest.mark.slow
@pytest.mark.parametrize("charset", list(WINDOW_BYTES))
def test_bytes_per_fetch_do_not_depend_on_document_size_or_position(
    store: S3ClaimCheckStore, wire: Wire, charset: Any
) -> None:
    for chars in (64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB):
        text = document(chars, charset)
        handle = store.put(Scope(tenant="acme", run=f"size-{chars}"), text, ttl_seconds=TTL)
        for offset in (0, chars // 2, chars - DEFAULT_FETCH_CHARS):
            wire.clear()
            window = store.fetch(Scope(tenant="acme", run=f"size-{chars}"), handle, offset=offset)
            assert window.text == text[offset : offset + DEFAULT_FETCH_CHARS]
            assert dict(wire.requests) == {"GetObject": 1}, (chars, offset)
            sealed = WINDOW_BYTES[charset] + WINDOW_BYTES[charset] // 4096 * 16  # on blocks
            assert dict(wire.response_bytes) == {"GetObject": sealed}, (chars, offset)


@pytest.mark.parametrize("charset", list(WINDOW_BYTES))
def test_a_put_sends_the_body_once_at_its_width(
    store: S3ClaimCheckStore, wire: Wire, charset: Any
) -> None:
    text = document(100_000, charset)
    store.put(SCOPE, text, ttl_seconds=TTL)
    index = build_index(text)  # beside the claim: 4 bytes a line after the first, sealed
    assert dict(wire.requests) == {"PutObject": 1 if index is None else 2}
    width = WINDOW_BYTES[charset] // 4096
    beside = 0 if index is None else stored_bytes(len(index))
    assert dict(wire.request_bytes) == {"PutObject": stored_bytes(width * len(text)) + beside}


def test_stored_ascii_is_its_utf8_and_bmp_text_two_bytes_a_character(
    store: S3ClaimCheckStore, s3: Any, bucket: str
) -> None:
    ascii_text, bmp_text = document(50_000, "ascii"), document(50_000, "bmp")
    japanese = "本契約は東京地方裁判所を専属的合意管轄裁判所とする。" * 1000
    for text in (ascii_text, bmp_text, japanese):
        store.put(SCOPE, text, ttl_seconds=TTL)
    objects = [o for o in s3.list_objects_v2(Bucket=bucket)["Contents"] if is_claim_key(o["Key"])]
    sizes = sorted(o["Size"] for o in objects)
    text_bytes = [len(ascii_text.encode()), 2 * len(bmp_text), 2 * len(japanese)]
    assert sizes == sorted(stored_bytes(n) for n in text_bytes)
    assert stored_bytes(2 * len(japanese)) < len(japanese.encode())  # mostly CJK: < UTF-8
    (ascii_object,) = [o["Key"] for o in objects if o["Size"] == stored_bytes(len(ascii_text))]
    body = s3.get_object(Bucket=bucket, Key=ascii_object)["Body"].read()
    untagged = b"".join(body[i : i + 4096 + 16][:-16] for i in range(0, len(body), 4096 + 16))
    assert untagged == ascii_text.encode()  # between its tags, byte for byte its UTF-8


def _seed(bucket: str, prefix: str, count: int) -> None:
    """Objects straight into moto's backend, which the in-process server shares."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for i in range(count):
        backend.put_object(bucket, f"{prefix}1{uuid.UUID(int=i).hex}", b"x\x00\x00\x00")


@pytest.mark.parametrize("claims", [1, 999, 1000, 1001])
def test_forget_sends_two_requests_per_thousand_claims(
    store: S3ClaimCheckStore, wire: Wire, bucket: str, key: HandleKey, claims: int
) -> None:
    _seed(bucket, f"claims/{key.tenant_tag('acme')}/{key.run_tag(SCOPE)}/", claims)
    assert store.forget(tenant="acme") == claims
    rounds = math.ceil(claims / 1000)
    # and the receipt's final listings: the claims' prefix, then the (empty) audit area's
    assert dict(wire.requests) == {"ListObjectVersions": rounds + 2, "DeleteObjects": rounds}
