"""S3ClaimCheckStore against moto's HTTP server: layout, metadata, tags, encryption, request
budgets, erasure, and two processes sharing one bucket.

Every request of every client made here passes a `before-send` hook that checks its user
metadata against S3's 2 KB limit (moto would accept more; S3 would not).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import uuid
import zlib
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from moto import mock_aws

from s3claim.clock import ManualClock
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.s3._format import MAX_METADATA_BYTES, check_metadata_size
from s3claim.s3._seal import Seal
from s3claim.scope import Scope
from tests._s3 import moto_client

TTL = 3600
SCOPE = Scope(tenant="acme", run="run-1")
NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)
KMS_KEY = "arn:aws:kms:us-east-1:123456789012:key/0b1c2d3e-0000-4000-8000-000000000000"

_metadata_sizes: list[int] = []


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _check_metadata(request: AWSPreparedRequest, **_: Any) -> None:
    size = sum(
        len(name.encode()) + len(_text(value).encode())
        for name, value in request.headers.items()
        if name.lower().startswith("x-amz-meta-")
    )
    _metadata_sizes.append(size)
    assert size <= MAX_METADATA_BYTES, f"sent {size} bytes of user metadata"


class Wire:
    """What a client sent: one entry per HTTP attempt, and response sizes per call."""

    def __init__(self, client: Any) -> None:
        self.sent: list[tuple[str, AWSPreparedRequest]] = []
        self.response_bytes: list[int] = []
        client.meta.events.register("before-send.s3.*", self._on_send)
        client.meta.events.register("after-call.s3.GetObject", self._on_get)

    def _on_send(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> None:
        self.sent.append((event_name.rsplit(".", 1)[-1], request))

    def _on_get(self, http_response: Any, **_: Any) -> None:
        self.response_bytes.append(int(http_response.headers["content-length"]))

    @property
    def ops(self) -> list[str]:
        return [op for op, _ in self.sent]

    def headers(self, op: str) -> list[dict[str, str]]:
        return [
            {k.lower(): _text(v) for k, v in r.headers.items()} for o, r in self.sent if o == op
        ]

    def clear(self) -> None:
        self.sent.clear()
        self.response_bytes.clear()


def new_client(endpoint: str) -> Any:
    client = moto_client(endpoint)
    client.meta.events.register("before-send.s3.*", _check_metadata)
    return client


@pytest.fixture
def s3(moto_endpoint: str) -> Any:
    return new_client(moto_endpoint)


@pytest.fixture
def key() -> HandleKey:
    return HandleKey.generate()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_700_000_000.25)


@pytest.fixture
def store(bucket: str, key: HandleKey, s3: Any, clock: ManualClock) -> S3ClaimCheckStore:
    return S3ClaimCheckStore(bucket, handle_key=key, client=s3, clock=clock, retry=NO_WAIT)


@pytest.fixture
def wire(s3: Any) -> Wire:
    return Wire(s3)


def object_key(key: HandleKey, scope: Scope, handle: str) -> str:
    return f"claims/{key.tenant_tag(scope.tenant)}/{key.run_tag(scope)}/{handle[6:]}"


def all_keys(s3: Any, bucket: str) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


# -- layout and metadata -------------------------------------------------------------------

HOSTILE = ["../..", "a/b", "%2F..%2F", "/", "名前", "\x00\n\t", "tenant?x=1#frag", "e\u0301 👩‍👩‍👧"]


@pytest.mark.parametrize("name", HOSTILE)
def test_keys_reveal_no_names_and_names_cannot_move_them(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey, name: str
) -> None:
    scopes = [
        Scope(tenant=name, run="r"),
        Scope(tenant="t", run=name),
        Scope(tenant=name, run=name),
    ]
    handles = [store.put(scope, "content", ttl_seconds=TTL) for scope in scopes]
    keys = all_keys(s3, bucket)
    assert len(keys) == 3
    layout = re.compile(r"claims/[0-9a-f]{32}/[0-9a-f]{32}/[124][0-9a-f]{32}")
    assert all(layout.fullmatch(k) for k in keys), keys
    assert sorted(keys) == sorted(
        object_key(key, s, h) for s, h in zip(scopes, handles, strict=True)
    )


@pytest.mark.parametrize(
    ("content", "width", "encoding", "charset"),
    [
        ("hello world", 1, "latin-1", "iso-8859-1"),
        ("héllo wörld", 1, "latin-1", "iso-8859-1"),
        ("Łódź, 東京", 2, "utf-16-le", "utf-16le"),
        ("héllo wörld 👋", 4, "utf-32-le", "utf-32le"),
    ],
)
def test_metadata_carries_expiry_size_encoding_format_and_run(
    store: S3ClaimCheckStore,
    s3: Any,
    bucket: str,
    key: HandleKey,
    clock: ManualClock,
    content: str,
    width: int,
    encoding: str,
    charset: str,
) -> None:
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    assert handle.startswith(f"claim:{width}")
    head = s3.head_object(Bucket=bucket, Key=object_key(key, SCOPE, handle))
    meta = dict(head["Metadata"])
    assert re.fullmatch("[0-9a-f]{32}", meta.pop("s3claim-mac"))  # the seal: test_integrity
    assert re.fullmatch("[0-9a-f]{16}", meta.pop("s3claim-check-in"))  # which write: random
    assert meta == {
        "s3claim-format": "5",
        "s3claim-expires-at": str(math.ceil(clock.now() + TTL)),
        "s3claim-chars": str(len(content)),
        "s3claim-bytes": str(width * len(content)),
        "s3claim-encoding": encoding,
        "s3claim-run": key.run_tag(SCOPE),
        "s3claim-lines": "1",  # lines in the claim: one, so no index beside it
    }
    assert head["ContentLength"] == width * len(content) + 16  # one block, one 16-byte tag
    assert head["ContentType"] == f"application/vnd.s3claim.v5; charset={charset}"


def test_no_request_in_this_suite_sends_more_than_2kb_of_metadata(
    store: S3ClaimCheckStore, clock: ManualClock
) -> None:
    _metadata_sizes.clear()
    handle = store.put(SCOPE, "x" * 10_000, ttl_seconds=30 * 86_400)
    clock.advance(60)
    store.put(SCOPE, "x" * 10_000, ttl_seconds=30 * 86_400)  # the refresh copy
    store.fetch(SCOPE, handle, offset=20_000)
    store.forget(tenant=SCOPE.tenant)
    assert 0 < max(_metadata_sizes) <= MAX_METADATA_BYTES


def test_the_store_refuses_oversized_metadata_before_sending() -> None:
    check_metadata_size({"s3claim-run": "r" * 1000})
    with pytest.raises(ClaimStoreError, match="2048"):
        check_metadata_size({"s3claim-run": "r" * 1000, "s3claim-other": "o" * 1100})


def test_an_expired_claim_is_refused_though_its_object_remains(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "still on disk", ttl_seconds=60)
    clock.advance(61)
    with pytest.raises(ClaimUnavailableError):
        store.fetch(SCOPE, handle)
    s3.head_object(Bucket=bucket, Key=object_key(key, SCOPE, handle))  # lifecycle's job


def test_a_claim_copied_under_another_runs_prefix_is_refused_as_damaged(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey
) -> None:
    handle = store.put(SCOPE, "misplaced", ttl_seconds=TTL)
    elsewhere = Scope(tenant="acme", run="run-2")
    s3.copy_object(  # an object that somehow sits under another run's prefix
        Bucket=bucket,
        Key=object_key(key, elsewhere, handle),
        CopySource={"Bucket": bucket, "Key": object_key(key, SCOPE, handle)},
    )
    for offset in (0, 100):  # the seal is bound to the key it was made at (and the run checked)
        with pytest.raises(ClaimStoreError, match="seal does not hold") as failed:
            store.fetch(elsewhere, handle, offset=offset)
        assert failed.value.reason == "damaged"


# -- lifecycle tags and encryption ---------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "days"),
    [(1, 1), (86_400, 1), (86_401, 7), (7 * 86_400, 7), (7 * 86_400 + 1, 30), (30 * 86_400, 30)],
)
def test_objects_are_tagged_with_the_smallest_covering_day_class(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey, ttl: int, days: int
) -> None:
    handle = store.put(SCOPE, "tagged", ttl_seconds=ttl)
    tags = s3.get_object_tagging(Bucket=bucket, Key=object_key(key, SCOPE, handle))["TagSet"]
    assert tags == [{"Key": "s3claim-ttl-days", "Value": str(days)}]


def test_a_ttl_beyond_the_longest_class_is_refused_without_a_request(
    store: S3ClaimCheckStore, wire: Wire
) -> None:
    with pytest.raises(ValueError, match="31 days"):
        store.put(SCOPE, "too long", ttl_seconds=30 * 86_400 + 1)
    assert wire.ops == []


def test_custom_day_classes(bucket: str, key: HandleKey, s3: Any) -> None:
    store = S3ClaimCheckStore(bucket, handle_key=key, client=s3, ttl_day_classes=(2, 14))
    handle = store.put(SCOPE, "custom", ttl_seconds=3 * 86_400)
    tags = s3.get_object_tagging(Bucket=bucket, Key=object_key(key, SCOPE, handle))["TagSet"]
    assert tags == [{"Key": "s3claim-ttl-days", "Value": "14"}]
    with pytest.raises(ValueError, match="14 days"):
        store.put(SCOPE, "custom", ttl_seconds=15 * 86_400)


def test_the_refresh_copy_is_tagged_for_its_own_day_class(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "refreshed", ttl_seconds=60)
    clock.advance(30)
    store.put(SCOPE, "refreshed", ttl_seconds=60)
    tags = s3.get_object_tagging(Bucket=bucket, Key=object_key(key, SCOPE, handle))["TagSet"]
    assert tags == [{"Key": "s3claim-ttl-days", "Value": "1"}]  # a new object, a 1-day TTL
    clock.advance(30)
    store.put(SCOPE, "refreshed", ttl_seconds=8 * 86_400)
    tags = s3.get_object_tagging(Bucket=bucket, Key=object_key(key, SCOPE, handle))["TagSet"]
    assert tags == [{"Key": "s3claim-ttl-days", "Value": "30"}]


def test_a_shorter_refresh_from_another_instance_keeps_the_expiry_and_its_day_class(
    store: S3ClaimCheckStore, bucket: str, key: HandleKey, moto_endpoint: str, clock: ManualClock
) -> None:
    """The refresh copy is a new object: lifecycle counts from now, so it is tagged for the
    expiry it keeps, not for the shorter TTL that asked for it."""
    text = "lives eight days\n" * 3  # an index beside it: both objects
    handle = store.put(SCOPE, text, ttl_seconds=8 * 86_400)
    first = math.ceil(clock.now() + 8 * 86_400)
    client = new_client(moto_endpoint)
    other = S3ClaimCheckStore(bucket, handle_key=key, client=client, clock=clock, retry=NO_WAIT)
    clock.advance(86_400)
    other.put(SCOPE, text, ttl_seconds=60)
    for name in (object_key(key, SCOPE, handle), object_key(key, SCOPE, handle) + ".index"):
        meta = client.head_object(Bucket=bucket, Key=name)["Metadata"]
        assert meta["s3claim-expires-at"] == str(first), name
        tags = client.get_object_tagging(Bucket=bucket, Key=name)["TagSet"]
        assert tags == [{"Key": "s3claim-ttl-days", "Value": "7"}], name  # 7 days left
    clock.advance(7 * 86_400 - 1)
    assert other.fetch(SCOPE, handle).text == text


def test_sse_s3_by_default_on_put_and_refresh(
    store: S3ClaimCheckStore, wire: Wire, clock: ManualClock
) -> None:
    store.put(SCOPE, "encrypted", ttl_seconds=60)
    clock.advance(30)
    store.put(SCOPE, "encrypted", ttl_seconds=60)
    assert wire.ops == ["PutObject", "CopyObject"]
    for op in ("PutObject", "CopyObject"):
        (headers,) = wire.headers(op)
        assert headers["x-amz-server-side-encryption"] == "AES256"
        assert "x-amz-server-side-encryption-aws-kms-key-id" not in headers


def test_sse_kms_with_the_configured_key_on_put_and_refresh(
    bucket: str, key: HandleKey, s3: Any, wire: Wire, clock: ManualClock
) -> None:
    store = S3ClaimCheckStore(
        bucket, handle_key=key, client=s3, clock=clock, sse="aws:kms", kms_key_id=KMS_KEY
    )
    store.put(SCOPE, "encrypted", ttl_seconds=60)
    clock.advance(30)
    store.put(SCOPE, "encrypted", ttl_seconds=60)
    assert wire.ops == ["PutObject", "CopyObject"]
    for op in ("PutObject", "CopyObject"):
        (headers,) = wire.headers(op)
        assert headers["x-amz-server-side-encryption"] == "aws:kms"
        assert headers["x-amz-server-side-encryption-aws-kms-key-id"] == KMS_KEY


# -- request budgets -----------------------------------------------------------------------


def test_put_is_one_conditional_put_object(store: S3ClaimCheckStore, wire: Wire) -> None:
    store.put(SCOPE, "once", ttl_seconds=TTL)
    assert wire.ops == ["PutObject"]
    (headers,) = wire.headers("PutObject")
    assert headers["if-none-match"] == "*"
    assert headers["x-amz-tagging"] == "s3claim-ttl-days=1"


def _sent_crc32(request: AWSPreparedRequest) -> tuple[str | None, str]:
    """The CRC32 header a PutObject carried, and the CRC32 of the body it sent."""
    body = request.body
    if hasattr(body, "read"):
        body.seek(0)
        body = body.read()
    crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    return {k.lower(): _text(v) for k, v in request.headers.items()}.get(
        "x-amz-checksum-crc32"
    ), crc


def test_a_put_carries_the_crc32_of_the_body_it_sends(store: S3ClaimCheckStore, wire: Wire) -> None:
    """botocore takes the CRC32 of the body as it reads it (a file over the buffer, the same
    for every endpoint): S3 checks the upload against it, so it is that of the bytes sent."""
    handle = store.put(SCOPE, "a line of a log\n" * 4000, ttl_seconds=TTL)
    claim = next(
        r for op, r in wire.sent if op == "PutObject" and not r.url.endswith(".index")
    )  # both PUTs are conditional now: the claim is the one not at `.index`
    header, crc = _sent_crc32(claim)
    assert header == crc
    assert store.fetch(SCOPE, handle, offset=16_000).text.startswith("a line of a log\n")


def test_over_https_a_check_in_sends_a_file_that_moto_in_process_reads(key: HandleKey) -> None:
    """moto's `mock_aws` (https endpoints) reads no bytearray body: the store sends a file
    over its body, and botocore takes the CRC over https as it streams, in the trailer."""
    text = "a line of a log\n" * 4000
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="mocked")
        wire = Wire(client)
        store = S3ClaimCheckStore("mocked", handle_key=key, client=client, retry=NO_WAIT)
        handle = store.put(SCOPE, text, ttl_seconds=TTL)
        assert store.fetch(SCOPE, handle, offset=16_000).text == text[16_000 : 16_000 + 4096]
        assert store.read_line(SCOPE, handle, 3_999, limit=4096).text == "a line of a log\n" * 2
    headers = wire.headers("PutObject")[0]
    assert "x-amz-checksum-crc32" not in headers  # botocore's own, in the trailer


def test_a_client_that_sends_checksums_only_when_required_gets_none(
    bucket: str, key: HandleKey, moto_endpoint: str
) -> None:
    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        config=Config(
            s3={"addressing_style": "path"}, request_checksum_calculation="when_required"
        ),
    )
    wire = Wire(client)
    store = S3ClaimCheckStore(bucket, handle_key=key, client=client, retry=NO_WAIT)
    store.put(SCOPE, "no checksum asked for", ttl_seconds=TTL)
    ((_, claim),) = wire.sent
    assert _sent_crc32(claim)[0] is None


def test_a_repeat_put_this_process_made_sends_nothing(
    store: S3ClaimCheckStore, wire: Wire, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "twice", ttl_seconds=TTL)
    wire.clear()
    assert store.put(SCOPE, "twice", ttl_seconds=TTL) == handle
    assert store.put(SCOPE, "twice", ttl_seconds=60) == handle  # already covered
    assert wire.ops == []


def test_a_later_repeat_put_refreshes_with_one_bodiless_copy(
    store: S3ClaimCheckStore,
    wire: Wire,
    s3: Any,
    bucket: str,
    key: HandleKey,
    clock: ManualClock,
) -> None:
    handle = store.put(SCOPE, "later", ttl_seconds=TTL)
    clock.advance(100)
    wire.clear()
    store.put(SCOPE, "later", ttl_seconds=TTL)
    assert wire.ops == ["CopyObject"]
    ((_, copy),) = wire.sent
    assert not copy.body
    headers = wire.headers("CopyObject")[0]
    assert headers["x-amz-metadata-directive"] == "REPLACE"
    assert headers["x-amz-tagging-directive"] == "REPLACE"
    head = s3.head_object(Bucket=bucket, Key=object_key(key, SCOPE, handle))
    assert head["Metadata"]["s3claim-expires-at"] == str(math.ceil(clock.now() + TTL))


def test_another_instance_repeat_put_is_a_412_a_head_and_one_copy(
    store: S3ClaimCheckStore, bucket: str, key: HandleKey, moto_endpoint: str, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "shared", ttl_seconds=TTL)
    client = new_client(moto_endpoint)
    wire = Wire(client)
    other = S3ClaimCheckStore(bucket, handle_key=key, client=client, clock=clock, retry=NO_WAIT)
    clock.advance(100)
    assert other.put(SCOPE, "shared", ttl_seconds=TTL) == handle
    # The HEAD is new (issue 46): it reads the check-in the copy keeps, so links made before
    # this refresh read on, and the expiry and tool standing, so it never shortens the claim.
    assert wire.ops == ["PutObject", "HeadObject", "CopyObject"]
    clock.advance(TTL - 50)  # past the first expiry, within the refreshed one
    assert store.fetch(SCOPE, handle).text == "shared"


def test_a_put_after_the_object_vanished_writes_it_again(
    store: S3ClaimCheckStore, wire: Wire, s3: Any, bucket: str, key: HandleKey, clock: ManualClock
) -> None:
    handle = store.put(SCOPE, "collected", ttl_seconds=60)
    s3.delete_object(Bucket=bucket, Key=object_key(key, SCOPE, handle))  # as lifecycle would
    clock.advance(120)
    wire.clear()
    assert store.put(SCOPE, "collected", ttl_seconds=60) == handle
    assert wire.ops == ["CopyObject", "PutObject"]
    header, crc = _sent_crc32(wire.sent[1][1])  # the body tagged only once the copy failed
    assert header == crc
    assert store.fetch(SCOPE, handle).text == "collected"


def test_fetch_is_one_ranged_get_of_width_times_limit_bytes(
    store: S3ClaimCheckStore, wire: Wire, bucket: str, key: HandleKey, moto_endpoint: str
) -> None:
    content = "".join(chr(ord("a") + i % 26) for i in range(50_000))
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    wire.clear()
    # Stored as blocks of 4,096 bytes, each followed by its 16-byte tag (4,112 a block).
    window = store.fetch(SCOPE, handle, offset=4096)  # on a block: as a model reads in order
    assert window.text == content[4096:8192]
    assert wire.ops == ["GetObject"]
    assert wire.headers("GetObject")[0]["range"] == "bytes=4112-8223"
    assert wire.response_bytes == [4096 + 16]
    wire.clear()
    window = store.fetch(SCOPE, handle, offset=1000)  # across two blocks: both, whole
    assert window.text == content[1000:5096]
    assert wire.ops == ["GetObject"]
    assert wire.headers("GetObject")[0]["range"] == "bytes=0-8223"
    assert wire.response_bytes == [2 * (4096 + 16)]

    client = new_client(moto_endpoint)  # a cold process reads the same way
    cold_wire = Wire(client)
    cold = S3ClaimCheckStore(bucket, handle_key=key, client=client, clock=ManualClock())
    assert cold.fetch(SCOPE, handle, offset=49_000, limit=2000).text == content[49_000:]
    assert cold_wire.ops == ["GetObject"]
    # blocks 11 and 12 (the last: 848 bytes), from byte 11 * 4,112 to the end
    assert cold_wire.response_bytes == [4096 + 16 + 848 + 16]


@pytest.mark.slow
def test_windows_of_a_million_non_ascii_characters_cost_one_small_get_each(
    store: S3ClaimCheckStore, wire: Wire
) -> None:
    content = ("契約第一条 👩‍⚖️ é\u0301 ∑ " * 100_000)[:1_000_000]
    handle = store.put(SCOPE, content, ttl_seconds=TTL)
    for offset in (0, 123_457, 999_000):
        wire.clear()
        window = store.fetch(SCOPE, handle, offset=offset)
        assert window.text == content[offset : offset + 4096]
        assert window.total_chars == 1_000_000
        assert wire.ops == ["GetObject"]
        assert wire.response_bytes[0] <= 5 * (4096 + 16)  # 4 blocks, 5 off a block


def test_past_the_end_of_the_last_block_is_the_only_two_request_fetch(
    store: S3ClaimCheckStore, wire: Wire
) -> None:
    handle = store.put(SCOPE, "short", ttl_seconds=TTL)
    wire.clear()
    window = store.fetch(SCOPE, handle, offset=5)  # inside the last block: it comes back whole
    assert (window.text, window.total_chars, window.next_offset) == ("", 5, None)
    assert wire.ops == ["GetObject"]
    handle = store.put(SCOPE, "x" * 4096, ttl_seconds=TTL)
    wire.clear()
    window = store.fetch(SCOPE, handle, offset=4096)  # no block there: 416, then one HEAD
    assert (window.text, window.total_chars, window.next_offset) == ("", 4096, None)
    assert wire.ops == ["GetObject", "HeadObject"]


@pytest.mark.parametrize("handle", ["claim:XYZ", "../../etc", "", "claim:" + "F" * 32])
def test_malformed_handles_cost_no_request(
    store: S3ClaimCheckStore, wire: Wire, handle: str
) -> None:
    with pytest.raises(ClaimUnavailableError):
        store.fetch(SCOPE, handle)
    with pytest.raises(ValueError, match="offset"):
        store.fetch(SCOPE, "claim:1" + "0" * 32, offset=-1)
    assert wire.ops == []


def test_an_unknown_handle_is_one_get(store: S3ClaimCheckStore, wire: Wire) -> None:
    with pytest.raises(ClaimUnavailableError):
        store.fetch(SCOPE, "claim:1" + "0" * 32)
    assert wire.ops == ["GetObject"]


# -- forget --------------------------------------------------------------------------------


def _seed(bucket: str, prefix: str, count: int) -> None:
    """Objects straight into moto's backend (shared with the in-process server): 2,500
    PUTs over HTTP take ~15 s here, and forget's budget does not depend on how they arrived."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for i in range(count):
        backend.put_object(bucket, f"{prefix}1{uuid.UUID(int=i).hex}", b"x\x00\x00\x00")


@pytest.mark.slow
def test_forget_2500_claims_in_three_deletes_and_five_lists(
    store: S3ClaimCheckStore, wire: Wire, s3: Any, bucket: str, key: HandleKey
) -> None:
    real = [store.put(SCOPE, f"claim {i}", ttl_seconds=TTL) for i in range(10)]
    _seed(bucket, f"claims/{key.tenant_tag(SCOPE.tenant)}/{key.run_tag(SCOPE)}/", 2490)
    kept = store.put(Scope(tenant="globex", run="run-1"), "kept", ttl_seconds=TTL)
    wire.clear()
    seen: list[int] = []

    assert store.forget(tenant=SCOPE.tenant, progress=seen.append) == 2500

    # each prefix is listed until it is empty: the claims' (a fourth time), the audit area's
    assert wire.ops == ["ListObjectVersions", "DeleteObjects"] * 3 + ["ListObjectVersions"] * 2
    assert seen == [1000, 2000, 2500]
    assert len(all_keys(s3, bucket)) == 1
    for handle in real:
        with pytest.raises(ClaimUnavailableError):
            store.fetch(SCOPE, handle)
    assert store.fetch(Scope(tenant="globex", run="run-1"), kept).text == "kept"


def test_forget_on_a_versioned_bucket_removes_every_version_and_marker(
    store: S3ClaimCheckStore, s3: Any, bucket: str, key: HandleKey, clock: ManualClock
) -> None:
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    run_a, run_b = Scope(tenant="acme", run="a"), Scope(tenant="acme", run="b")
    other = Scope(tenant="globex", run="a")
    refreshed = store.put(run_a, "refreshed", ttl_seconds=60)
    clock.advance(30)
    store.put(run_a, "refreshed", ttl_seconds=60)  # a second version
    deleted = store.put(run_b, "deleted", ttl_seconds=60)
    s3.delete_object(Bucket=bucket, Key=object_key(key, run_b, deleted))  # a delete marker
    store.put(run_b, "plain", ttl_seconds=60)
    kept = store.put(other, "kept", ttl_seconds=60)
    prefix = f"claims/{key.tenant_tag('acme')}/"
    before = s3.list_object_versions(Bucket=bucket, Prefix=prefix)
    assert len(before["Versions"]) == 4
    assert len(before["DeleteMarkers"]) == 1

    assert store.forget(tenant="acme") == 3

    after = s3.list_object_versions(Bucket=bucket, Prefix=prefix)
    assert "Versions" not in after
    assert "DeleteMarkers" not in after
    assert store.fetch(other, kept).text == "kept"
    with pytest.raises(ClaimUnavailableError):
        store.fetch(run_a, refreshed)


def test_forget_refuses_an_empty_tenant(store: S3ClaimCheckStore, wire: Wire) -> None:
    with pytest.raises(ValueError, match="tenant"):
        store.forget(tenant="")
    assert wire.ops == []


def test_forget_then_put_in_process_writes_again(store: S3ClaimCheckStore, wire: Wire) -> None:
    handle = store.put(SCOPE, "remembered", ttl_seconds=TTL)
    store.forget(tenant=SCOPE.tenant, run=SCOPE.run)
    wire.clear()
    store.put(SCOPE, "remembered", ttl_seconds=TTL)
    assert wire.ops == ["PutObject"]  # the written-claims cache forgot it too
    assert store.fetch(SCOPE, handle).text == "remembered"


# -- errors, threads, processes ------------------------------------------------------------


def test_a_missing_bucket_is_a_store_error_naming_operation_and_code(
    s3: Any, key: HandleKey
) -> None:
    store = S3ClaimCheckStore(f"missing-{uuid.uuid4().hex}", handle_key=key, client=s3)
    with pytest.raises(
        ClaimStoreError, match=r"PutObject failed after 1 attempt\(s\): NoSuchBucket"
    ):
        store.put(SCOPE, "secret content", ttl_seconds=TTL)
    with pytest.raises(ClaimStoreError, match=r"GetObject.*NoSuchBucket") as failed:
        store.fetch(SCOPE, "claim:1" + "0" * 32)
    assert "secret content" not in str(failed.value)


def test_repr_shows_no_secret(bucket: str, s3: Any) -> None:
    store = S3ClaimCheckStore(bucket, handle_key="a-very-secret-handle-key", client=s3)
    assert "secret" not in repr(store)
    assert bucket in repr(store)


def test_concurrent_puts_and_fetches_from_threads(store: S3ClaimCheckStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(5):
                content = f"thread {n} item {i} " * 50
                handle = store.put(SCOPE, content, ttl_seconds=TTL)
                assert store.put(SCOPE, content, ttl_seconds=TTL) == handle
                assert store.fetch(SCOPE, handle, offset=7, limit=30).text == content[7:37]
        except BaseException as exc:  # reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


_CHILD = textwrap.dedent(
    """
    import json, sys
    from s3claim.s3 import S3ClaimCheckStore
    from s3claim.scope import Scope

    store = S3ClaimCheckStore.from_settings()
    scope = Scope(tenant="acme", run="run-1")
    request = json.loads(sys.stdin.read())
    reply = {"handle": store.put(scope, request["put"], ttl_seconds=600)}
    if request.get("fetch"):
        reply["text"] = store.fetch(scope, request["fetch"], offset=2, limit=5).text
    print(json.dumps(reply))
    """
)


@pytest.fixture
def shared_env(monkeypatch: pytest.MonkeyPatch, moto_endpoint: str, bucket: str) -> dict[str, str]:
    monkeypatch.setenv("S3CLAIM_BUCKET", bucket)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "shared-secret-between-processes")
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_REGION", "us-east-1")
    return dict(os.environ)


def _child(env: dict[str, str], request: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(request),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    reply: dict[str, str] = json.loads(done.stdout)
    return reply


@pytest.mark.slow
def test_a_handle_minted_by_one_process_is_redeemed_by_another(
    shared_env: dict[str, str],
) -> None:
    here = S3ClaimCheckStore.from_settings()
    scope = Scope(tenant="acme", run="run-1")

    minted_there = _child(shared_env, {"put": "née à Zürich 👩‍🔬"})["handle"]
    assert here.fetch(scope, minted_there).text == "née à Zürich 👩‍🔬"

    minted_here = here.put(scope, "𝔘nicode here", ttl_seconds=600)
    reply = _child(shared_env, {"put": "𝔘nicode here", "fetch": minted_here})
    assert reply == {"handle": minted_here, "text": "icode"}


# -- objects the store did not write as it would -------------------------------------------

_GOOD_META = {
    "s3claim-format": "5",
    "s3claim-expires-at": "1800000000",
    "s3claim-chars": "3",
    "s3claim-lines": "1",
    "s3claim-bytes": "12",
    "s3claim-encoding": "utf-32-le",
}
_ABC32 = "abc".encode("utf-32-le")


@pytest.mark.parametrize(
    ("width", "body", "meta", "offset", "message"),
    [
        (4, _ABC32, {"s3claim-format": "1"}, 0, "format '1', not s3claim format 5"),
        (4, _ABC32, {"s3claim-format": "2"}, 0, "format '2', not s3claim format 5"),
        (4, _ABC32, {"s3claim-format": "4"}, 0, "format '4', not s3claim format 5"),
        (4, _ABC32, {"s3claim-format": "6"}, 0, "format '6', not s3claim format 5"),
        (4, _ABC32, {"s3claim-encoding": "utf-8"}, 0, "not s3claim format 5"),
        (4, _ABC32, {"s3claim-chars": "three"}, 0, "incomplete"),
        (4, _ABC32, {"s3claim-lines": ""}, 0, "incomplete"),
        (4, b"abcde", {"s3claim-chars": "2", "s3claim-bytes": "8"}, 0, "stored length disagrees"),
        (
            4,
            b"\x00\xd8\x00\x00",
            {"s3claim-chars": "1", "s3claim-bytes": "4"},
            0,
            "not valid utf-32-le",
        ),
        (
            2,
            b"\x00\xd8",
            {"s3claim-chars": "1", "s3claim-bytes": "2", "s3claim-encoding": "utf-16-le"},
            0,
            "not valid utf-16-le",
        ),
        (4, _ABC32, {"s3claim-encoding": "latin-1"}, 0, "encoding disagrees with its handle"),
        (4, _ABC32, {"s3claim-bytes": "400"}, 0, "stored length disagrees"),
        (4, _ABC32, {"s3claim-bytes": "12000"}, 2000, "refused inside"),
    ],
)
def test_a_sealed_object_that_breaks_the_format_is_a_store_error(
    store: S3ClaimCheckStore,
    s3: Any,
    bucket: str,
    key: HandleKey,
    width: int,
    body: bytes,
    meta: dict[str, str],
    offset: int,
    message: str,
) -> None:
    """What a writer holding the key could still get wrong (an older or newer s3claim, a bug):
    sealed, so only the format checks behind the seal stand in the way."""
    handle = f"claim:{width}" + "ab" * 16
    at = object_key(key, SCOPE, handle)
    seal = Seal(key, at)
    s3.put_object(
        Bucket=bucket,
        Key=at,
        Body=seal.blocks(body),
        Metadata=seal.metadata({**_GOOD_META, "s3claim-run": key.run_tag(SCOPE), **meta}),
    )
    with pytest.raises(ClaimStoreError, match=message) as failed:
        store.fetch(SCOPE, handle, offset=offset)
    assert failed.value.reason == "damaged"


def test_content_too_large_for_one_object_is_refused_without_a_request(
    store: S3ClaimCheckStore, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    from s3claim.s3 import _format

    monkeypatch.setattr(_format, "MAX_OBJECT_BYTES", 26)  # 10 bytes of content and a tag
    with pytest.raises(ValueError, match=r"11 characters exceeds the 10 .* 1 byte"):
        store.put(SCOPE, "elevenchars", ttl_seconds=TTL)
    with pytest.raises(ValueError, match=r"6 characters exceeds the 5 .* 2 byte"):
        store.put(SCOPE, "sixsiĀ", ttl_seconds=TTL)
    store.put(SCOPE, "fivéĀ", ttl_seconds=TTL)  # 5 characters at 2 bytes: fits
    assert wire.ops == ["PutObject"]


def test_the_written_claims_cache_is_bounded(
    store: S3ClaimCheckStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from s3claim.s3 import _store

    monkeypatch.setattr(_store, "_WRITTEN_CACHE", 2)
    for i in range(4):
        store.put(SCOPE, f"claim {i}", ttl_seconds=TTL)
    assert len(store._written) == 2
