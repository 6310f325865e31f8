"""Reading a JSON claim by JSON Pointer: the index built at check-in, and `read_path`.

The pure half runs on slices of a string (as the memory store reads); the store half runs
the same reads through every store (memory, S3 on moto and on s3rver), which must give the
same answers, and checks what lives beside an S3 claim: its index, erased by `forget`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3claim import MemoryClaimCheckStore, Scope
from s3claim._reading import Facts, IndexPart, TextPart, build_index, count_lines
from s3claim._reading._index import TAIL_BYTES, head_of
from s3claim._reading._json_index import LISTED, SMALL_BYTES, json_index, parse_head
from s3claim._reading._json_path import (
    NoIndexError,
    PathError,
    PathRead,
    by_path,
    parse_pointer,
)
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.s3 import S3ClaimCheckStore
from tests.conftest import StoreUnderTest

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600


class Slices:
    """A claim and its index as ranges (`ClaimRanges`), as the memory store serves them, each
    read recorded with its size."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.index = build_index(text)
        self.facts = Facts(len(text), count_lines(text))
        self.reads: list[tuple[str, int]] = []

    def text_range(self, start: int, end: int) -> TextPart:
        self.reads.append(("chars", end - start))
        return TextPart(self.text[start:end], start, self.facts)

    def tail(self, chars: int) -> TextPart:
        raise AssertionError("a read by path never reads the text's end")

    def index_range(self, start: int, end: int) -> IndexPart:
        assert self.index is not None
        self.reads.append(("index", min(end, len(self.index)) - start))
        return IndexPart(self.index[start:end], self.facts)

    def index_tail(self, size: int) -> IndexPart:
        if self.index is None:
            return IndexPart(None, self.facts)
        self.reads.append(("index", min(size, len(self.index))))
        return IndexPart(self.index[-size:], self.facts)

    def stream(self) -> Any:
        raise AssertionError("a read by path never streams")

    def head(self) -> Any:
        """The JSON index's head (the nodes), as a reader finds it at the index's end."""
        assert self.index is not None
        found = head_of(self.index[-TAIL_BYTES:])
        assert found is not None
        return parse_head(found)


def read_path(source: Slices, pointer: str, *, limit: int) -> PathRead:
    return by_path(_Ranges(source), pointer, limit=limit)


class _Ranges:
    def __init__(self, slices: Slices) -> None:
        self.slices = slices

    def text(self, start: int, end: int) -> TextPart:
        return self.slices.text_range(start, end)

    def tail(self, chars: int) -> TextPart:
        return self.slices.tail(chars)

    def index(self, start: int, end: int) -> IndexPart:
        return self.slices.index_range(start, end)

    def index_tail(self, size: int) -> IndexPart:
        return self.slices.index_tail(size)

    def stream(self) -> Any:
        return self.slices.stream()


def value_at(document: Any, tokens: list[str]) -> Any:
    for token in tokens:
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def records(n: int, *, indent: int | None = None) -> str:
    items = [
        {"id": i, "name": f"record {i}", "tags": ["a/b", "c~d"], "note": "é" * (i % 3)}
        for i in range(n)
    ]
    return json.dumps(
        {"items": items, "meta": {"a/b": 1, "c~d": [1, 2], "": "empty"}}, indent=indent
    )


POINTERS = [
    "",
    "/items",
    "/items/0",
    "/items/1499",
    "/items/1499/name",
    "/items/1999/tags/1",
    "/meta",
    "/meta/a~1b",
    "/meta/c~0d/1",
    "/meta/",
]


@pytest.mark.parametrize("indent", [None, 2], ids=["minified", "pretty"])
@pytest.mark.parametrize("pointer", POINTERS)
def test_a_value_is_its_exact_original_characters(indent: int | None, pointer: str) -> None:
    text = records(2000, indent=indent)
    source = Slices(text)
    answer = read_path(source, pointer, limit=10**9)
    assert json.loads(answer.text) == value_at(json.loads(text), parse_pointer(pointer))
    assert text[answer.start : answer.end] == answer.text  # never re-serialised
    assert answer.total_chars == len(text)


def test_members_are_listed_with_spans_and_types_and_bounded() -> None:
    text = records(2000)
    items = read_path(Slices(text), "/items", limit=100)
    assert (items.kind, items.member_count, len(items.members)) == ("array", 2000, LISTED)
    assert len(items.text) == 100 and items.next_offset == items.start + 100
    for member in items.members:
        assert member.kind == "object" and member.key is None
        assert json.loads(text[member.start : member.end])["id"] == member.index
    record = read_path(Slices(text), "/items/7", limit=4096)
    assert [(m.key, m.kind) for m in record.members] == [
        ("id", "number"),
        ("name", "string"),
        ("tags", "array"),
        ("note", "string"),
    ]
    assert record.next_offset is None  # the whole record fits the window


def test_a_large_object_is_found_by_key_in_one_read_of_its_table() -> None:
    big = {f"key {n}": {"n": n, "pad": "x" * 40} for n in range(5000)}
    text = json.dumps({"services": big})
    source = Slices(text)
    answer = read_path(source, "/services/key 4321/n", limit=4096)
    assert answer.text == "4321"
    # the head, 32 slots of the object's table, the small member holding the answer
    assert [kind for kind, _ in source.reads] == ["index", "index", "chars"]
    assert source.reads[1][1] <= 32 * 16 and source.reads[2][1] < 100
    with pytest.raises(PathError) as info:
        read_path(source, "/services/key 5000", limit=4096)
    assert info.value.kind == "no_such_path" and "has no key 'key 5000'" in info.value.message


def test_the_reads_are_few_and_small_whatever_the_position() -> None:
    text = records(20_000)
    head = Slices(text).head()
    assert len(head.nodes) == 2  # the document and /items: records are read from the claim
    for pointer in ("/items/0/name", "/items/19999/tags/0", "/items/12345"):
        source = Slices(text)
        read_path(source, pointer, limit=4096)
        kinds = [kind for kind, _ in source.reads]
        assert kinds == ["index", "index", "chars"], pointer
        assert source.reads[1][1] == 8  # one array entry
        assert source.reads[2][1] < 200  # one record: the answer's own neighbourhood


@pytest.mark.parametrize(
    ("pointer", "reason"),
    [
        ("items", "starting with '/'"),
        ("#/items", "starting with '/'"),
        ("/a~2b", "'~0'"),
        ("/a~", "'~0'"),
    ],
)
def test_an_invalid_pointer_says_what_is_wrong(pointer: str, reason: str) -> None:
    source = Slices(records(10))
    with pytest.raises(PathError) as info:
        read_path(source, pointer, limit=10)
    assert info.value.kind == "invalid_arguments" and reason in info.value.message
    assert source.reads == []  # refused before any read


@pytest.mark.parametrize(
    ("pointer", "says"),
    [
        ("/items/10", "array of 10 elements (numbered 0 to 9)"),
        ("/items/-", "array of 10 elements"),
        ("/items/01", "array of 10 elements"),
        ("/nope", "has no key 'nope'"),
        ("/items/3/name/x", "/items/3/name is a string, which has no members"),
        ("/meta/a~1b/0", "/meta/a~1b is a number"),
    ],
)
def test_a_pointer_to_nothing_says_where_it_stopped(pointer: str, says: str) -> None:
    with pytest.raises(PathError) as info:
        read_path(Slices(records(10)), pointer, limit=10)
    assert info.value.kind == "no_such_path" and says in info.value.message


@pytest.mark.parametrize(
    "text",
    [
        "plain text, not JSON at all",
        '{"unterminated": [1, 2',
        '{"a": 1} trailing words',
        '"a JSON string is a scalar, not a document of members"',
        "12345",
        "[1, 2,]",
        '{"a" 1}',
        "",
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
    ],
    ids=lambda t: t[:12],
)
def test_what_is_not_a_json_document_has_no_index_and_checks_in_as_text(text: str) -> None:
    assert json_index(text, base=0) is None
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, text, ttl_seconds=TTL)  # never fails a check-in
    assert store.fetch(SCOPE, handle, 0, 10).text == text[:10]
    with pytest.raises(NoIndexError):
        store.read_path(SCOPE, handle, "")


def test_a_huge_array_becomes_a_node_and_its_listing_stays_bounded() -> None:
    text = "[" + ",".join(str(n) for n in range(300_000)) + "]"
    index = build_index(text)
    assert index is not None and len(index) < 9 * 300_000 + TAIL_BYTES
    answer = read_path(Slices(text), "/299999", limit=4096)
    assert answer.text == "299999"
    whole = read_path(Slices(text), "", limit=4096)
    assert (whole.member_count, len(whole.members), len(whole.text)) == (300_000, LISTED, 4096)


def test_nested_large_containers_and_many_nodes_stay_in_the_head() -> None:
    # more large containers than the head holds: the size that counts as small doubles
    text = json.dumps([{"pad": "x" * SMALL_BYTES, "n": n} for n in range(1000)])
    source = Slices(text)
    head = source.head()
    assert head.small_chars > SMALL_BYTES and len(head.nodes) == 1
    assert read_path(source, "/999/n", limit=10).text == "999"


def test_keys_with_escapes_duplicates_and_unicode_read_as_json_loads_reads_them() -> None:
    text = '{"\\u00e9t\\u00e9": 1, "dup": 1, "dup": 2, "emoji 👩‍👩‍👧": [true, null, -1.5e3]}'
    source = Slices(text)
    assert read_path(source, "/été", limit=10).text == "1"
    assert read_path(source, "/dup", limit=10).text == "2"  # the last wins, as in json.loads
    assert read_path(source, "/emoji 👩‍👩‍👧/2", limit=10).text == "-1.5e3"
    kinds = [m.kind for m in read_path(source, "/emoji 👩‍👩‍👧", limit=99).members]
    assert kinds == ["boolean", "null", "number"]


# -- through every store ------------------------------------------------------------------


def _answers(store: Any, handle: str) -> list[PathRead | str]:
    answers: list[PathRead | str] = []
    for pointer in [*POINTERS, "/items/2000", "/nope"]:
        try:
            answers.append(store.read_path(SCOPE, handle, pointer, limit=512))
        except PathError as exc:
            answers.append(exc.message)
    return answers


def _fields(answer: PathRead | str) -> Any:
    if isinstance(answer, str):
        return answer
    return (answer.pointer, answer.kind, answer.start, answer.end, answer.text, answer.members)


@pytest.mark.parametrize("indent", [None, 2], ids=["minified", "pretty"])
def test_every_store_gives_the_memory_stores_answers(
    store_under_test: StoreUnderTest, indent: int | None
) -> None:
    text = records(2000, indent=indent)
    store: Any = store_under_test.store
    handle = store.put(SCOPE, text, ttl_seconds=TTL)
    reference = MemoryClaimCheckStore()
    expected = _answers(reference, reference.put(SCOPE, text, ttl_seconds=TTL))
    assert [_fields(a) for a in _answers(store, handle)] == [_fields(a) for a in expected]


def test_a_path_read_is_refused_like_a_fetch(store_under_test: StoreUnderTest) -> None:
    store: Any = store_under_test.store
    handle = store.put(SCOPE, records(50), ttl_seconds=TTL)
    with pytest.raises(ClaimUnavailableError):
        store.read_path(Scope(tenant="acme", run="run-2"), handle, "/items/0")
    with pytest.raises(ClaimUnavailableError):
        store.read_path(SCOPE, "claim:1" + "0" * 32, "")
    store_under_test.clock.advance(TTL)
    with pytest.raises(ClaimUnavailableError):
        store.read_path(SCOPE, handle, "/items/0")


def test_text_that_is_not_json_cannot_be_read_by_path(store_under_test: StoreUnderTest) -> None:
    store: Any = store_under_test.store
    handle = store.put(SCOPE, "[not json] " * 500, ttl_seconds=TTL)
    with pytest.raises(NoIndexError):
        store.read_path(SCOPE, handle, "")


def test_the_index_sits_beside_the_claim_and_forget_erases_both(
    store_under_test: StoreUnderTest,
) -> None:
    store: Any = store_under_test.store
    store.put(SCOPE, records(500), ttl_seconds=TTL)
    if isinstance(store, S3ClaimCheckStore):
        keys = [k for k in _keys(store_under_test)]
        assert len(keys) == 2 and keys[1] == keys[0] + ".index"
        assert keys[0].startswith(store.layout.run_prefix(SCOPE))
    assert store.forget(tenant="acme", run="run-1") == 1  # one claim; its index went with it
    assert store_under_test.count() == 0


def _keys(sut: StoreUnderTest) -> list[str]:
    client = sut.store.client  # type: ignore[attr-defined]
    listing = client.list_objects_v2(Bucket=sut.bucket)
    return sorted(item["Key"] for item in listing.get("Contents", []))


def test_an_s3_index_has_the_claims_encryption_tags_and_expiry(s3: Any, bucket: str) -> None:
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    handle = store.put(SCOPE, records(500), ttl_seconds=TTL)
    claim = store.layout.object_key(SCOPE, handle)
    index = store.layout.index_key(SCOPE, handle)
    heads = [s3.head_object(Bucket=bucket, Key=k) for k in (claim, index)]
    assert {h["ServerSideEncryption"] for h in heads} == {"AES256"}
    for field in ("s3claim-expires-at", "s3claim-run", "s3claim-format"):
        assert heads[0]["Metadata"][field] == heads[1]["Metadata"][field]
    tags = [s3.get_object_tagging(Bucket=bucket, Key=k)["TagSet"] for k in (claim, index)]
    assert tags[0] == tags[1] and tags[0]
    # the claim says it has an index: without it, it still reads by offset, and a read by
    # path is refused as damaged, as any object of a claim that is not as it was written
    s3.delete_object(Bucket=bucket, Key=index)
    assert store.fetch(SCOPE, handle, 0, 8).text == records(500)[:8]
    with pytest.raises(ClaimStoreError) as caught:
        store.read_path(SCOPE, handle, "/items/0")
    assert caught.value.reason == "damaged"


def test_a_refresh_gives_the_index_the_claims_new_expiry(s3: Any, bucket: str) -> None:
    from s3claim import ManualClock

    clock = ManualClock()
    first, second = (
        S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3, clock=clock)
        for _ in range(2)
    )
    handle = first.put(SCOPE, records(500), ttl_seconds=TTL)
    clock.advance(TTL - 10)
    assert second.put(SCOPE, records(500), ttl_seconds=TTL) == handle  # another process
    clock.advance(60)  # past the first expiry, inside the second
    assert first.read_path(SCOPE, handle, "/items/3/id").text == "3"
    index = s3.head_object(Bucket=bucket, Key=first.layout.index_key(SCOPE, handle))
    claim = s3.head_object(Bucket=bucket, Key=first.layout.object_key(SCOPE, handle))
    same = ("s3claim-expires-at", "s3claim-run")
    assert {k: index["Metadata"][k] for k in same} == {k: claim["Metadata"][k] for k in same}
    assert index["Metadata"]["s3claim-mac"] != claim["Metadata"]["s3claim-mac"]  # own key


def test_an_index_whose_metadata_is_rewritten_is_refused_as_damaged(s3: Any, bucket: str) -> None:
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    handle = store.put(SCOPE, records(500), ttl_seconds=TTL)
    key = store.layout.index_key(SCOPE, handle)
    meta = s3.head_object(Bucket=bucket, Key=key)["Metadata"]
    meta["s3claim-expires-at"] = str(int(meta["s3claim-expires-at"]) + 10**6)  # extended
    s3.copy_object(
        Bucket=bucket,
        Key=key,
        CopySource={"Bucket": bucket, "Key": key},
        MetadataDirective="REPLACE",
        Metadata=meta,
    )
    with pytest.raises(ClaimStoreError) as caught:
        store.read_path(SCOPE, handle, "/items/3/id")
    assert not caught.value.transient
