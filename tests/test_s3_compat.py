"""The S3 store on servers that are not AWS-shaped, and on clients it did not build.

- Erasure everywhere: where `ListObjectVersions` answers 501 (Garage) or 405 (s3rver), forget
  lists with `ListObjectsV2` instead, remembers it, and still fails loudly on anything else.
- Retries owned once: whatever retry configuration a passed client has, a store operation
  against a dead endpoint costs at most `RetryPolicy.attempts` requests.
- The budgets and a failover between two store instances, on s3rver.
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

import boto3
import pytest
from botocore.config import Config

from devkit.documents import document
from devkit.servers import Wire
from s3claim import ClaimStoreError, ClaimUnavailableError, ManualClock
from s3claim.handles import HandleKey
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.scope import Scope
from s3claim.store import build_index
from tests._s3 import s3_response, stored_bytes, window_bytes
from tests.test_s3_faults import Injector, answer

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
NO_WAIT = RetryPolicy(attempts=3, initial_wait=0, max_wait=0)


def _store(client: Any, bucket: str, key: HandleKey | None = None) -> S3ClaimCheckStore:
    return S3ClaimCheckStore(
        bucket, handle_key=key or HandleKey.generate(), client=client, retry=NO_WAIT
    )


_S3RVER_DELETE_RACE = """s3rver deletes the keys of one DeleteObjects concurrently, each then
removing its directory when empty: two removals race and it answers 500 after the files are
gone. The store retries (a 500 is retryable) and the retry finds nothing left, so a batch
costs one or two requests there, never a claim left behind."""


@pytest.fixture
def s3rver_bucket(s3rver_client: Any) -> str:
    name = f"compat-{uuid.uuid4().hex[:20]}"
    s3rver_client.create_bucket(Bucket=name)
    return name


# -- erasure without the versioning API ------------------------------------------------------


def test_forget_on_s3rver_lists_keys_once_it_knows_there_are_no_versions(
    s3rver_client: Any, s3rver_bucket: str
) -> None:
    store = _store(s3rver_client, s3rver_bucket)
    wire = Wire.attach(s3rver_client)
    for i in range(3):
        store.put(Scope(tenant="acme", run=f"r{i}"), f"claim {i}", ttl_seconds=TTL)
    kept = store.put(Scope(tenant="globex", run="r0"), "claim 0", ttl_seconds=TTL)
    wire.clear()

    assert store.forget(tenant="acme") == 3
    assert wire.requests["ListObjectVersions"] == 1  # 405 MethodNotAllowed: asked once only
    assert wire.requests["ListObjectsV2"] == 3  # the claims, the claims once empty, the audit
    assert 1 <= wire.requests["DeleteObjects"] <= NO_WAIT.attempts  # see _S3RVER_DELETE_RACE
    wire.clear()
    store.put(SCOPE, "again", ttl_seconds=TTL)
    assert store.forget(tenant="acme", run=SCOPE.run) == 1
    assert wire.requests["ListObjectVersions"] == 0
    listed = s3rver_client.list_objects_v2(Bucket=s3rver_bucket).get("Contents", [])
    assert len(listed) == 1
    assert store.fetch(Scope(tenant="globex", run="r0"), kept).text == "claim 0"


@pytest.mark.slow
def test_forget_on_s3rver_deletes_in_batches_of_a_thousand(
    s3rver_client: Any, s3rver_bucket: str
) -> None:
    key = HandleKey.generate()
    store = _store(s3rver_client, s3rver_bucket, key)
    prefix = f"claims/{key.tenant_tag('acme')}/{key.run_tag(SCOPE)}/"
    for i in range(1001):
        s3rver_client.put_object(Bucket=s3rver_bucket, Key=f"{prefix}1{i:032x}", Body=b"x")
    wire = Wire.attach(s3rver_client)
    assert store.forget(tenant="acme") == 1001
    # two pages, then each prefix listed empty: the claims', the audit area's
    assert (wire.requests["ListObjectVersions"], wire.requests["ListObjectsV2"]) == (1, 4)
    assert 2 <= wire.requests["DeleteObjects"] <= 2 * NO_WAIT.attempts  # _S3RVER_DELETE_RACE
    assert s3rver_client.list_objects_v2(Bucket=s3rver_bucket).get("KeyCount", 0) == 0


@pytest.mark.parametrize(("status", "code"), [(501, "NotImplemented"), (405, "MethodNotAllowed")])
def test_forget_falls_back_where_the_versioning_api_is_missing(
    s3: Any, bucket: str, status: int, code: str
) -> None:
    store = _store(s3, bucket)
    handles = [store.put(SCOPE, f"text {i}", ttl_seconds=TTL) for i in range(2)]
    refused = Injector(s3, "ListObjectVersions", answer(status, code), times=100)
    wire = Wire.attach(s3)
    assert store.forget(tenant="acme") == 2
    assert store.forget(tenant="acme") == 0
    assert refused.attempts == 1  # remembered per store
    assert wire.requests["ListObjectsV2"] == 3 + 2  # each prefix until empty, twice
    for handle in handles:
        with pytest.raises(ClaimUnavailableError):
            store.fetch(SCOPE, handle)


@pytest.mark.parametrize(
    ("status", "code", "attempts"),
    [(403, "AccessDenied", 1), (404, "NoSuchBucket", 1), (500, "InternalError", 3)],
)
def test_any_other_listing_failure_fails_loudly_and_erases_nothing(
    s3: Any, bucket: str, status: int, code: str, attempts: int
) -> None:
    store = _store(s3, bucket)
    handle = store.put(SCOPE, "kept", ttl_seconds=TTL)
    refused = Injector(s3, "ListObjectVersions", answer(status, code), times=100)
    with pytest.raises(ClaimStoreError, match=f"ListObjectVersions failed .*{code}"):
        store.forget(tenant="acme")
    assert refused.attempts == attempts
    assert store.fetch(SCOPE, handle).text == "kept"


def test_a_fallback_delete_that_keeps_failing_is_never_reported_as_forgotten(
    s3rver_client: Any, s3rver_bucket: str
) -> None:
    store = _store(s3rver_client, s3rver_bucket)
    handle = store.put(SCOPE, "must go", ttl_seconds=TTL)
    errors = (
        b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>k</Key>'
        b"<Code>InternalError</Code><Message>x</Message></Error></DeleteResult>"
    )
    Injector(s3rver_client, "DeleteObjects", lambda _r: s3_response(200, errors), times=100)
    with pytest.raises(ClaimStoreError, match="DeleteObjects failed after 3 attempt"):
        store.forget(tenant="acme")
    assert store.fetch(SCOPE, handle).text == "must go"


# -- retries, whatever the client ---------------------------------------------------------------


def _dead_endpoint() -> str:
    with socket.socket() as probe:  # a port nothing listens on: every connection is refused
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize(
    "config",
    [
        None,  # botocore's defaults: legacy mode, 5 attempts
        Config(retries={"mode": "standard", "max_attempts": 10}),
        Config(retries={"mode": "adaptive", "total_max_attempts": 8}),
    ],
    ids=["default", "standard", "adaptive"],
)
def test_a_passed_client_retries_no_more_than_the_store_policy(
    config: Config | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("botocore.endpoint.time.sleep", lambda _s: None)  # botocore's backoff
    client = boto3.client("s3", endpoint_url=_dead_endpoint(), config=config)
    sent = Wire.attach(client)
    for _ in range(2):  # stores sharing a client: the veto is registered once, and holds
        store = S3ClaimCheckStore(
            "claims",
            handle_key=HandleKey.generate(),
            client=client,
            clock=ManualClock(),
            retry=RetryPolicy(attempts=3, initial_wait=0, max_wait=0, max_seconds=5),
        )
    started = time.monotonic()
    with pytest.raises(ClaimStoreError, match="PutObject failed after 3 attempt"):
        store.put(SCOPE, "x" * 5000, ttl_seconds=TTL)
    with pytest.raises(ClaimStoreError, match="GetObject failed after 3 attempt"):
        store.fetch(SCOPE, "claim:1" + "0" * 32)
    with pytest.raises(ClaimStoreError, match="ListObjectVersions failed after 3 attempt"):
        store.forget(tenant="acme")
    assert dict(sent.requests) == {"PutObject": 3, "GetObject": 3, "ListObjectVersions": 3}
    assert time.monotonic() - started < 5

    # The veto holds only for the store's own requests: the caller's keep their retries.
    sent.clear()
    with pytest.raises(Exception, match="Could not connect"):
        client.head_bucket(Bucket="claims")
    assert sent.requests["HeadBucket"] > 1


def test_the_policy_time_bound_holds_against_a_dead_endpoint() -> None:
    client = boto3.client("s3", endpoint_url=_dead_endpoint())
    store = S3ClaimCheckStore(
        "claims",
        handle_key=HandleKey.generate(),
        client=client,
        retry=RetryPolicy(attempts=100, initial_wait=0.05, max_wait=0.2, max_seconds=1.0),
    )
    started = time.monotonic()
    with pytest.raises(ClaimStoreError):
        store.fetch(SCOPE, "claim:1" + "0" * 32)
    assert time.monotonic() - started < 2.5


# -- the budgets and a failover, on s3rver -------------------------------------------------------

WINDOW_BYTES = {"ascii": 4096, "latin1": 4096, "bmp": 8192, "utf8": 16384}


@pytest.mark.parametrize("charset", list(WINDOW_BYTES))
def test_s3rver_serves_each_window_with_one_ranged_get_at_the_width(
    s3rver_client: Any, s3rver_bucket: str, charset: Any
) -> None:
    store = _store(s3rver_client, s3rver_bucket)
    wire = Wire.attach(s3rver_client)
    text = document(100_000, charset)
    handle = store.put(SCOPE, text, ttl_seconds=TTL)
    index = build_index(text)  # the index beside the claim: one PutObject more
    assert dict(wire.requests) == {"PutObject": 1 if index is None else 2}
    width = WINDOW_BYTES[charset] // 4096
    beside = 0 if index is None else stored_bytes(len(index))
    assert dict(wire.request_bytes) == {"PutObject": stored_bytes(width * len(text)) + beside}
    for offset in (0, 50_000, 100_000 - 4096):
        wire.clear()
        assert store.fetch(SCOPE, handle, offset=offset).text == text[offset : offset + 4096]
        assert dict(wire.requests) == {"GetObject": 1}
        assert dict(wire.response_bytes) == {
            "GetObject": window_bytes(width, offset, len(text))  # the window's blocks, tagged
        }


def test_s3rver_failover_between_two_store_instances(s3rver: Any, s3rver_bucket: str) -> None:
    from devkit.servers import make_client

    key = HandleKey.generate()
    first = _store(make_client(s3rver), s3rver_bucket, key)
    second = _store(make_client(s3rver), s3rver_bucket, key)  # another client, cold
    text = document(20_000, "bmp")
    handle = first.put(SCOPE, text, ttl_seconds=TTL)
    assert second.put(SCOPE, text, ttl_seconds=TTL) == handle  # same content, same handle
    assert second.fetch(SCOPE, handle, offset=4096).text == text[4096:8192]
    with pytest.raises(ClaimUnavailableError):
        second.fetch(Scope(tenant="acme", run="other"), handle)
    assert second.forget(tenant="acme") == 1
    with pytest.raises(ClaimUnavailableError):
        first.fetch(SCOPE, handle)


# -- a search's stream cut midway --------------------------------------------------------------


class _CutStream:
    """A response body that delivers `keep` bytes, then breaks like a dropped connection."""

    def __init__(self, body: bytes, keep: int) -> None:
        self._parts = [body[:keep]]

    def read(self, *_: Any, **__: Any) -> bytes:
        if self._parts:
            return self._parts.pop()
        from urllib3.exceptions import ProtocolError

        raise ProtocolError("connection broken")

    def stream(self, **_: Any) -> Any:
        yield self.read()

    def close(self) -> None:
        self._parts = []


@pytest.mark.parametrize("breaks", [1, 2, 3])
def test_a_cut_search_stream_resumes_from_the_next_byte_or_fails_loudly(
    s3: Any, bucket: str, breaks: int
) -> None:
    from botocore.awsrequest import AWSResponse

    from s3claim import RunContext, ToolError, claim_search_tool
    from s3claim._reading._search import compile_pattern, search_text

    store = _store(s3, bucket)  # RetryPolicy(attempts=3): two resumes, then a store error
    text = ("ж" * 700_001) + "needle" + ("ж" * 500_000)  # 2 bytes a character
    handle = store.put(SCOPE, text, ttl_seconds=TTL)
    whole = s3.get_object(Bucket=bucket, Key=f"claims/{_tags(store)}/{handle[6:]}")
    body, headers = whole["Body"].read(), whole["ResponseMetadata"]["HTTPHeaders"]
    ranges: list[str | None] = []

    def cut(request: Any, **_: Any) -> AWSResponse | None:
        ranged = request.headers.get("Range")
        ranges.append(ranged.decode() if ranged else None)
        if len(ranges) > breaks:
            return None  # the server answers for real
        first = int(ranged.decode().split("=")[1].split("-")[0]) if ranged else 0
        status = 206 if ranged else 200
        stream = _CutStream(body[first:], 300_001)
        return AWSResponse("https://injected", status, dict(headers), stream)

    s3.meta.events.register("before-send.s3.GetObject", cut)
    compiled = compile_pattern("needle", is_regex=False, ignore_case=False)
    if breaks < NO_WAIT.attempts:
        found = search_text(store.scan(SCOPE, handle), compiled)
        assert [m.offset for m in found.matches] == [700_001]
        # each resume asks for the byte after the last one received (an odd cut splits a
        # character: its first byte waits for the rest)
        assert ranges == [None, *(f"bytes={300_001 * k}-" for k in range(1, breaks + 1))]
        return
    with pytest.raises(ClaimStoreError, match="GetObject stream failed 3 time"):
        search_text(store.scan(SCOPE, handle), compiled)
    ranges.clear()
    context = RunContext(scope=SCOPE, agent="a", emit=lambda _event: None)
    with pytest.raises(ToolError) as refused:
        claim_search_tool(store).call({"handle": handle, "pattern": "needle"}, context)
    assert refused.value.code == "store_unavailable"


def _tags(store: S3ClaimCheckStore) -> str:
    return store.layout.run_prefix(SCOPE).removeprefix("claims/").rstrip("/")
