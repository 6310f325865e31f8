"""Issue 21, findings 1 and 2: what the bucket returns is what s3claim wrote.

Someone who may write the bucket (and has no handle key) edits objects in s3claim's own
format, on moto's HTTP server. Each edit must be refused as damaged: a `ClaimStoreError`
(reason `damaged`) for the developer, and for the model the very answer an unknown handle
gets; nothing of the edited object is served or run.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimStoreError,
    HandleKey,
    ManualClock,
    RetryPolicy,
    RunContext,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
    ToolCall,
    claim_check_tool,
    claim_search_tool,
    tool,
)
from s3claim.journal import RunRecord
from s3claim.messages import SystemMessage, UserMessage
from s3claim.s3 import ClaimInfo
from s3claim.s3._layout import is_claim_key
from s3claim.s3._seal import (
    BLOCK_BYTES,
    TAG_BYTES,
    BlockStream,
    Seal,
    block_span,
    laid_out,
    sealed_size,
)
from tests._hosts import claim_answer
from tests._s3 import moto_client

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
NO_WAIT = RetryPolicy(attempts=3, initial_wait=0, max_wait=0)


@dataclass
class Bucket:
    client: Any
    name: str
    key: HandleKey
    clock: ManualClock
    store: S3ClaimCheckStore
    journal: S3RunJournal

    def only_key(self, suffix: str = "") -> str:
        """The one object whose key ends in `suffix`; with none, the one claim (the indexes
        beside claims are sealed objects of their own, tested in their own modules)."""
        (found,) = [
            o["Key"]
            for o in self.client.list_objects_v2(Bucket=self.name)["Contents"]
            if o["Key"].endswith(suffix) and (suffix or is_claim_key(o["Key"]))
        ]
        return found

    def rewrite(self, key: str, *, body: bytes | None = None, **meta: str) -> None:
        """What a writer without the key can do: a new object at the same key, its body and
        metadata as read back but for the changes, every other header kept."""
        got = self.client.get_object(Bucket=self.name, Key=key)
        self.client.put_object(
            Bucket=self.name,
            Key=key,
            Body=got["Body"].read() if body is None else body,
            ContentType=got["ContentType"],
            Metadata={**got["Metadata"], **meta},
        )

    def body(self, key: str) -> bytes:
        data: bytes = self.client.get_object(Bucket=self.name, Key=key)["Body"].read()
        return data


@pytest.fixture
def bucket(moto_endpoint: str) -> Bucket:
    client = moto_client(moto_endpoint)
    name = f"integrity-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=name)
    key, clock = HandleKey.generate(), ManualClock()
    common: dict[str, Any] = {"handle_key": key, "client": client, "clock": clock, "retry": NO_WAIT}
    return Bucket(
        client, name, key, clock, S3ClaimCheckStore(name, **common), S3RunJournal(name, **common)
    )


def _tool_answers(
    store: S3ClaimCheckStore, handle: str, pattern: str, offset: int = 0
) -> list[str]:
    """What the model reads from fetch_result (at `offset`) and search_result for this handle."""
    context = RunContext(scope=SCOPE, agent="a", emit=lambda _: None)
    return [
        claim_answer(claim_tool, arguments, context).text
        for claim_tool, arguments in (
            (claim_check_tool(store), {"handle": handle, "offset": offset}),
            (claim_search_tool(store), {"handle": handle, "pattern": pattern}),
        )
    ]


def _refused_as_damaged(bucket: Bucket, handle: str, *, offset: int = 0, pattern: str) -> None:
    with pytest.raises(ClaimStoreError) as failed:
        bucket.store.fetch(SCOPE, handle, offset=offset)
    assert failed.value.reason == "damaged"
    with pytest.raises(ClaimStoreError) as failed:
        list(bucket.store.scan(SCOPE, handle))
    assert failed.value.reason == "damaged"
    unknown = "claim:1" + "0" * 32  # the model cannot tell damaged from never stored
    assert _tool_answers(bucket.store, handle, pattern, offset) == _tool_answers(
        bucket.store, unknown, pattern, offset
    )
    for answer in _tool_answers(bucket.store, unknown, pattern, offset):
        assert json.loads(answer)["error"] == "claim_unavailable"


# -- finding 1: a rewritten journal becomes a tool call the model never made ---------------


def _transfer(to: str, amount: int) -> AssistantMessage:
    call = ToolCall(id="c1", name="transfer", arguments={"to": to, "amount": amount})
    return AssistantMessage(content=None, tool_calls=(call,))


def _pending_transfer(to: str, amount: int) -> RunRecord:
    """A run whose last reply asked for a transfer, its result not yet recorded (a crash)."""
    return RunRecord(
        status="running",
        turns=1,
        messages=(
            SystemMessage(content="You move money when asked."),
            UserMessage(content="Pay bob 10."),
            _transfer(to, amount),
        ),
    )


def _runner(bucket: Bucket, transfers: list[tuple[str, int]]) -> AgentRunner:
    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        transfers.append((to, amount))
        return "sent"

    return AgentRunner(
        # the model's script: turn 1 asked to pay bob 10; turn 2, after the result, ends
        provider=ScriptedProvider([_transfer("bob", 10), AssistantMessage(content="Done.")]),
        tools=[transfer],
        journal=bucket.journal,
    )


def test_resume_runs_the_recorded_tool_call(bucket: Bucket) -> None:
    """The control: untouched, resume runs the call the model made, once."""
    bucket.journal.save(SCOPE, _pending_transfer("bob", 10), replaces=None)
    transfers: list[tuple[str, int]] = []
    assert _runner(bucket, transfers).resume(tenant=SCOPE.tenant, run_id=SCOPE.run).output == (
        "Done."
    )
    assert transfers == [("bob", 10)]


@pytest.mark.parametrize("what", ["body", "body and metadata", "metadata"])
def test_a_rewritten_journal_is_refused_and_no_tool_runs(bucket: Bucket, what: str) -> None:
    bucket.journal.save(SCOPE, _pending_transfer("bob", 10), replaces=None)
    key = bucket.only_key("/journal")
    forged = bucket.body(key).replace(b'"to":"bob","amount":10', b'"to":"mallory","amount":1000000')
    assert b"mallory" in forged
    if what == "body":
        bucket.rewrite(key, body=forged)
    elif what == "body and metadata":  # the status and turns the listing shows, too
        bucket.rewrite(key, body=forged, **{"s3claim-turns": "7"})
    else:  # an extended expiry
        bucket.rewrite(key, **{"s3claim-expires-at": "99999999999"})
    transfers: list[tuple[str, int]] = []

    with pytest.raises(ClaimStoreError) as failed:
        _runner(bucket, transfers).resume(tenant=SCOPE.tenant, run_id=SCOPE.run)

    assert failed.value.reason == "damaged"
    assert bucket.key.run_tag(SCOPE) in str(failed.value)
    assert "mallory" not in str(failed.value)
    assert transfers == []
    (listed,) = bucket.journal.runs(tenant=SCOPE.tenant)
    assert listed.status == ("running" if what == "body" else "unreadable")


def test_a_journal_moved_from_another_run_is_refused(bucket: Bucket) -> None:
    other = Scope(tenant=SCOPE.tenant, run="run-2")
    bucket.journal.save(other, _pending_transfer("mallory", 1_000_000), replaces=None)
    source = bucket.only_key("/journal")
    bucket.journal.save(SCOPE, _pending_transfer("bob", 10), replaces=None)
    target = bucket.store.layout.journal_key(SCOPE)
    bucket.client.copy_object(
        Bucket=bucket.name, Key=target, CopySource={"Bucket": bucket.name, "Key": source}
    )
    transfers: list[tuple[str, int]] = []
    with pytest.raises(ClaimStoreError, match="seal does not hold"):
        _runner(bucket, transfers).resume(tenant=SCOPE.tenant, run_id=SCOPE.run)
    assert transfers == []


# -- finding 2: a rewritten claim is served silently ---------------------------------------

CONTRACT = "".join(f"Clause {i}. Pay bob 10 on the first of the month.\n" for i in range(700))


def test_a_claim_body_rewritten_at_the_same_length_is_not_served(bucket: Bucket) -> None:
    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    key = bucket.only_key()
    body = bucket.body(key)
    forged = body.replace(b"Pay bob 10", b"Pay eve 99")
    assert len(forged) == len(body) and forged != body
    bucket.rewrite(key, body=forged)
    _refused_as_damaged(bucket, handle, pattern="eve")


def test_metadata_that_shortens_a_claim_does_not_truncate_it_silently(bucket: Bucket) -> None:
    text = ("x" * 99 + "\n") * 310  # 31,000 characters
    handle = bucket.store.put(SCOPE, text, ttl_seconds=TTL)
    bucket.rewrite(bucket.only_key(), **{"s3claim-chars": "8192"})
    _refused_as_damaged(bucket, handle, offset=8192, pattern="x")


def test_an_extended_expiry_is_not_honoured(bucket: Bucket) -> None:
    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=60)
    got = bucket.client.head_object(Bucket=bucket.name, Key=bucket.only_key())
    later = int(got["Metadata"]["s3claim-expires-at"]) + 10**6
    bucket.rewrite(bucket.only_key(), **{"s3claim-expires-at": str(later)})
    bucket.clock.advance(120)  # past the real expiry, well within the forged one
    _refused_as_damaged(bucket, handle, pattern="bob")


@pytest.mark.parametrize(
    "field", ["s3claim-run", "s3claim-format", "s3claim-encoding", "s3claim-mac", "s3claim-new"]
)
def test_any_sealed_metadata_field_changed_added_or_dropped_is_refused(
    bucket: Bucket, field: str
) -> None:
    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    key = bucket.only_key()
    meta = bucket.client.head_object(Bucket=bucket.name, Key=key)["Metadata"]
    changed = {k: v for k, v in meta.items() if k != field}
    if field in ("s3claim-run", "s3claim-new"):
        changed[field] = "0" * 32
    elif field == "s3claim-encoding":
        changed[field] = "latin-1" if meta[field] != "latin-1" else "utf-16-le"
    bucket.client.put_object(Bucket=bucket.name, Key=key, Body=bucket.body(key), Metadata=changed)
    with pytest.raises(ClaimStoreError) as failed:
        bucket.store.fetch(SCOPE, handle)
    assert failed.value.reason == "damaged"


def test_metadata_of_other_names_is_not_sealed_and_not_read(bucket: Bucket) -> None:
    """A proxy or an operator may add headers of its own: s3claim reads none of them."""
    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    bucket.rewrite(bucket.only_key(), **{"owner": "ops"})
    assert bucket.store.fetch(SCOPE, handle).text == CONTRACT[:4096]


# -- content integrity per window: sealed blocks -------------------------------------------

UNIT = BLOCK_BYTES + TAG_BYTES


def test_a_rewritten_block_fails_the_windows_that_read_it_and_only_those(bucket: Bucket) -> None:
    """Each window's GET carries its blocks' tags: the damage is found where it is read, with
    no request more, and every search (which reads every block) refuses the claim."""
    text = "".join(f"line {i:06d} of the log\n" for i in range(2000))  # 46,000 characters
    handle = bucket.store.put(SCOPE, text, ttl_seconds=TTL)
    key = bucket.only_key()
    body = bytearray(bucket.body(key))
    assert len(body) == sealed_size(len(text)) == len(text) + 12 * TAG_BYTES
    body[2 * UNIT + 100 : 2 * UNIT + 104] = b"EVIL"  # inside block 2: characters 8192-12287
    bucket.rewrite(key, body=bytes(body))
    wire = Wire.attach(bucket.client)

    assert bucket.store.fetch(SCOPE, handle, offset=0).text == text[:4096]
    assert bucket.store.fetch(SCOPE, handle, offset=4096).text == text[4096:8192]
    assert bucket.store.fetch(SCOPE, handle, offset=12_288).text == text[12_288:16_384]
    for offset in (8192, 6000, 12_000):  # each window that holds a character of block 2
        with pytest.raises(ClaimStoreError, match="seal does not hold"):
            bucket.store.fetch(SCOPE, handle, offset=offset)
    assert dict(wire.requests) == {"GetObject": 6}  # one GET a window, damaged or not
    # a search whose only match lies before the damage is refused too: nothing is served
    # from a claim some of whose blocks fail
    _refused_as_damaged(bucket, handle, offset=8192, pattern="line 000001")


@pytest.mark.parametrize("damage", ["swap", "drop", "truncate", "append", "untagged"])
def test_blocks_moved_dropped_or_cut_are_refused(bucket: Bucket, damage: str) -> None:
    text = "abcdefgh" * 2048  # 16,384 characters: four whole blocks
    handle = bucket.store.put(SCOPE, text, ttl_seconds=TTL)
    key = bucket.only_key()
    body = bucket.body(key)
    units = [body[i : i + UNIT] for i in range(0, len(body), UNIT)]
    changed = {
        "swap": units[1] + units[0] + units[2] + units[3],  # same bytes, same tags, moved
        "drop": units[0] + units[1] + units[2],
        "truncate": body[:-1],
        "append": body + units[3],
        "untagged": text.encode(),  # format 2's body, under format 4's metadata
    }[damage]
    bucket.rewrite(key, body=changed)
    offset = 4096 if damage == "swap" else 12_288
    _refused_as_damaged(bucket, handle, offset=offset, pattern="abc")


def test_a_claim_copied_to_another_handles_key_is_refused(bucket: Bucket) -> None:
    """Blocks and metadata are sealed under the object's own key: moving them is a forgery."""
    honest = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    forged = bucket.store.put(SCOPE, CONTRACT.replace("bob", "eve"), ttl_seconds=TTL)
    keys = {bucket.store.layout.object_key(SCOPE, h): h for h in (honest, forged)}
    source, target = (bucket.store.layout.object_key(SCOPE, h) for h in (forged, honest))
    assert set(keys) == {source, target}
    bucket.client.copy_object(
        Bucket=bucket.name, Key=target, CopySource={"Bucket": bucket.name, "Key": source}
    )
    _refused_as_damaged(bucket, honest, pattern="eve")
    assert "eve" in bucket.store.fetch(SCOPE, forged).text  # the original stays readable


def test_an_object_in_format_2_is_refused_as_damaged(bucket: Bucket) -> None:
    """Objects from before the seal: unsealed, so indistinguishable from a forgery."""
    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    key = bucket.only_key()
    meta = bucket.client.head_object(Bucket=bucket.name, Key=key)["Metadata"]
    old = {k: v for k, v in meta.items() if k != "s3claim-mac"} | {"s3claim-format": "2"}
    bucket.client.put_object(Bucket=bucket.name, Key=key, Body=CONTRACT.encode(), Metadata=old)
    with pytest.raises(ClaimStoreError, match="format '2', not s3claim format 5"):
        bucket.store.fetch(SCOPE, handle)
    _refused_as_damaged(bucket, handle, pattern="bob")


def test_the_async_face_refuses_a_rewritten_window_as_the_store_does(bucket: Bucket) -> None:
    from s3claim import ThreadedAsyncStore

    handle = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    key = bucket.only_key()
    bucket.rewrite(key, body=bucket.body(key).replace(b"Pay bob 10", b"Pay eve 99"))

    async def main() -> str:
        with pytest.raises(ClaimStoreError) as failed:
            await ThreadedAsyncStore(bucket.store).fetch(SCOPE, handle)
        return failed.value.reason

    assert asyncio.run(main()) == "damaged"


def test_a_journal_body_rewritten_without_its_metadata_is_refused_unparsed(
    bucket: Bucket,
) -> None:
    """The seal is checked before the body is parsed: a body too deep, or not JSON, written
    by someone without the key is refused for its seal, not parsed first."""
    bucket.journal.save(SCOPE, _pending_transfer("bob", 10), replaces=None)
    bucket.rewrite(bucket.only_key("/journal"), body=b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(ClaimStoreError, match="seal does not hold"):
        bucket.journal.load(SCOPE)


# -- the seal as a piece others reuse (indexes beside a claim) ------------------------------


def test_a_seal_holds_only_at_its_own_key_and_under_its_own_handle_key() -> None:
    key = HandleKey.generate()
    seal = Seal(key, "claims/t/r/1abc.lines")
    meta = seal.metadata({"s3claim-index": "lines", "s3claim-entries": "12"}, body=b"index")
    seal.check_body(meta, b"index", operation="GetObject")
    seal.check_metadata(meta, operation="HeadObject")  # a HEAD checks the fields alone
    for other in (Seal(key, "claims/t/r/1abd.lines"), Seal(HandleKey.generate(), "x")):
        with pytest.raises(ClaimStoreError, match="seal does not hold"):
            other.check_metadata(meta, operation="HeadObject")
    with pytest.raises(ClaimStoreError, match="seal does not hold"):
        seal.check_body(meta, b"indeX", operation="GetObject")
    with pytest.raises(ClaimStoreError, match="seal does not hold"):
        seal.check_metadata({**meta, "s3claim-entries": "13"}, operation="HeadObject")
    with pytest.raises(ClaimStoreError, match="carries no seal"):
        seal.check_metadata({"s3claim-index": "lines"}, operation="HeadObject")
    assert repr(seal) == "Seal(<key>)"

    data = bytes(range(256)) * 40  # 10,240 bytes: two whole blocks and a short one
    stored = seal.blocks(data)
    assert len(stored) == sealed_size(len(data)) == len(data) + 3 * TAG_BYTES
    first, start, last = block_span(5000, 9000)
    assert (first, start, last) == (1, UNIT, 3 * UNIT - 1)
    opened = seal.open_blocks(stored[start : last + 1], first=first, operation="GetObject")
    assert opened == data[BLOCK_BYTES:]
    with pytest.raises(ClaimStoreError, match="seal does not hold"):
        seal.open_blocks(stored[start : last + 1], first=0, operation="GetObject")
    stream = BlockStream(seal, operation="GetObject")
    pieces = [stream.feed(stored[i : i + 1000]) for i in range(0, len(stored), 1000)]
    assert b"".join(pieces) + stream.end() == data


def test_a_block_tag_is_an_hmac_of_its_index_and_digest_under_the_objects_key() -> None:
    """The block tag, as anyone holding the handle key can recompute it with `hmac`."""
    key, object_key = HandleKey.generate(), "claims/t/r/1abc"
    data = bytes(range(256)) * 40
    stored = Seal(key, object_key).blocks(data)
    subkey = key.subkey("seal", object_key)
    for index, at in enumerate(range(0, len(data), BLOCK_BYTES)):
        digest = hashlib.sha256(data[at : at + BLOCK_BYTES]).digest()
        mac = hmac.new(subkey, b"block" + index.to_bytes(8, "big") + digest, hashlib.sha256)
        unit = stored[index * UNIT : (index + 1) * UNIT]
        assert unit[-TAG_BYTES:] == mac.digest()[:TAG_BYTES]
        assert unit[:-TAG_BYTES] == data[at : at + BLOCK_BYTES]


def test_the_listing_marks_a_claim_whose_seal_fails_as_damaged(bucket: Bucket) -> None:
    """`s3claim ls` reads metadata only: a forged expiry or size is never shown as true."""
    kept = bucket.store.put(SCOPE, "a claim left alone " * 300, ttl_seconds=TTL)
    forged = bucket.store.put(SCOPE, CONTRACT, ttl_seconds=TTL)
    bucket.rewrite(
        bucket.store.layout.object_key(SCOPE, forged),
        **{"s3claim-expires-at": "99999999999", "s3claim-chars": "8192"},
    )
    listed = {c.handle: c for c in bucket.store.claims(tenant=SCOPE.tenant)}
    assert not listed[kept].damaged and listed[kept].chars == 5700
    assert listed[forged] == ClaimInfo(
        forged, bucket.key.run_tag(SCOPE), chars=0, expires_at=0, damaged=True
    )
    assert list(bucket.store.claims(tenant=SCOPE.tenant, run=SCOPE.run)) == list(listed.values())


@pytest.mark.parametrize(
    ("unit", "chars"),
    [
        ("a", 0),
        ("a", 1),
        ("a", 4095),
        ("a", 4096),
        ("a", 4097),
        ("é", 9000),
        ("日", 3000),
        ("😀", 2049),
    ],
)
def test_a_stored_claim_is_its_encoding_in_blocks_each_followed_by_its_tag(
    bucket: Bucket, unit: str, chars: int
) -> None:
    """The body a check-in lays out block by block, read back raw and recomputed by hand:
    ASCII and Latin-1 at 1 byte a character, the BMP at 2, the rest at 4."""
    content = (unit + "\n") * (chars // 2) + unit * (chars % 2)
    handle = bucket.store.put(SCOPE, content, ttl_seconds=TTL)
    width = int(handle[len("claim:")])
    encoded = content.encode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[width])
    assert width == {"a": 1, "é": 1, "日": 2, "😀": 4}[unit]
    object_key = bucket.store.layout.object_key(SCOPE, handle)
    stored = bucket.client.get_object(Bucket=bucket.name, Key=object_key)["Body"].read()
    assert len(stored) == sealed_size(len(encoded))
    subkey = bucket.key.subkey("seal", object_key)
    blocks = [encoded[at : at + BLOCK_BYTES] for at in range(0, len(encoded), BLOCK_BYTES)]
    expected = b""
    for index, block in enumerate(blocks):
        digest = hashlib.sha256(block).digest()
        mac = hmac.new(subkey, b"block" + index.to_bytes(8, "big") + digest, hashlib.sha256)
        expected += block + mac.digest()[:TAG_BYTES]
    assert stored == expected


def test_a_layout_refuses_blocks_that_would_put_a_tag_over_content() -> None:
    whole, short = b"a" * BLOCK_BYTES, b"b" * 100
    stored, digests = laid_out([whole, short], BLOCK_BYTES + 100)
    assert stored == whole + bytes(TAG_BYTES) + short + bytes(TAG_BYTES)
    assert digests == [hashlib.sha256(whole).digest(), hashlib.sha256(short).digest()]
    with pytest.raises(ValueError, match="only the last block may be shorter"):
        laid_out([short, whole], BLOCK_BYTES + 100)
    with pytest.raises(ValueError, match="laid out for"):
        laid_out([whole], BLOCK_BYTES + 1)  # a block missing


def test_a_body_as_sent_shows_none_of_its_content(bucket: Bucket) -> None:
    """botocore logs a request's parameters at DEBUG: the body is a file over the buffer
    there, which reads back whole and shows only its size."""
    stored = Seal(HandleKey.generate(), "claims/t/r/1abc").blocks(b"confidential " * 400)
    arguments = bucket.store.bucket.put_arguments(
        "claims/t/r/1abc", stored, content_type="text/plain", meta={}, days=1
    )
    body = arguments["Body"]
    assert body.read() == stored and body.seek(0) == 0
    logged = "%s %r" % (body, body)  # noqa: UP031  (what logging does with its arguments)
    for shown in (repr(body), str(body), f"{body}", logged, repr(arguments)):
        assert "confidential" not in shown and f"{len(stored):,} bytes" in shown


@pytest.mark.parametrize("records", [65_536, 262_144], ids=["8Mi", "32Mi"])
def test_an_ascii_check_in_holds_one_copy_of_its_body(s3rver_client: Any, records: int) -> None:
    """The body is encoded block by block straight into the buffer that is sent, and sent as
    a file over it: a check-in of 8 Mi or 32 Mi ASCII characters allocates it once, and what
    it holds beside it (botocore's read buffers of 1 MiB, the index) does not grow with it
    (encoding it whole and then joining blocks and tags into a second buffer held it twice).
    s3rver runs in a child process, so what is traced is the client's alone."""
    import tracemalloc

    name = f"memory-{uuid.uuid4().hex}"
    s3rver_client.create_bucket(Bucket=name)
    store = S3ClaimCheckStore(name, handle_key=HandleKey.generate(), client=s3rver_client)
    line = "{:>8}: " + "all is well, " * 9 + "\n"  # 128 characters: 4 bytes of index a line
    content = "".join(map(line.format, range(records)))
    store.put(SCOPE, "warm", ttl_seconds=TTL)  # connections and code paths, untraced
    tracemalloc.start()
    try:
        store.put(SCOPE, content, ttl_seconds=TTL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    body, index = sealed_size(len(content)), sealed_size(4 * records)
    assert body <= peak < body + 2 * index + 3 * 1024 * 1024
