"""The budget of a read by path on S3, counted on the wire against moto's HTTP server.

On a 16 Mi-character JSON claim (a list of records, and botocore's endpoints.json repeated:
a deeply nested document), any pointer costs at most 3 ranged GETs, and at most 64 KiB of
index or structure bytes beside the answer's own window: a fixed bound, where the document's
index alone is several times that (59,835 records). A page of a container's members
(`offset` beside `path`) costs at most `2 + PAGE_READS` GETs, and here 64 KiB in all. The
64 Mi documents and the times live in `benchmarks/`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from devkit.documents import MiB, nested, nested_pointers, record_pointers, records
from devkit.servers import Wire
from s3claim._reading._json_path import PAGE_READS
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.scope import Scope

SCOPE = Scope(tenant="acme", run="run-1")
BUDGET_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def claims(moto_endpoint: str) -> Iterator[tuple[Any, S3ClaimCheckStore, dict[str, Any]]]:
    """Both 16 MiB documents, put once for the module (each put is seconds on moto)."""
    from tests._s3 import moto_client

    with pytest.MonkeyPatch.context() as env:  # module-scoped: before the sealed env fixture
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        client = moto_client(moto_endpoint)
        client.list_buckets()  # the credentials are resolved, and kept, here

    client.create_bucket(Bucket="json-budgets")
    store = S3ClaimCheckStore(
        "json-budgets",
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )
    handles = {}
    for name, make in (("records", records), ("nested", nested)):
        text = make(16 * MiB)
        handles[name] = (store.put(SCOPE, text, ttl_seconds=3600), text)
    try:
        yield client, store, handles
    finally:
        store.forget(tenant="acme")
        client.delete_bucket(Bucket="json-budgets")


# 59,835 records and 96 partitions at 16 Mi characters (pinned in the test below)
CASES = [("records", p) for p in record_pointers(59_835)] + [
    ("nested", p) for p in nested_pointers(96)
]


@pytest.mark.slow
@pytest.mark.parametrize(("document", "pointer"), CASES)
def test_a_path_read_is_three_ranged_gets_and_64_kib_beside_the_window(
    claims: tuple[Any, S3ClaimCheckStore, dict[str, Any]], document: str, pointer: str
) -> None:
    client, store, handles = claims
    handle, text = handles[document]
    wire = Wire.attach(client)
    answer = store.read_path(SCOPE, handle, pointer)
    members = {("records", ""): 59_835, ("nested", ""): 2, ("nested", "/partitions"): 96}
    if (document, pointer) in members:
        assert answer.member_count == members[document, pointer]
    assert text[answer.start : answer.start + len(answer.text)] == answer.text
    assert set(wire.requests) == {"GetObject"} and wire.requests["GetObject"] <= 3
    beside = wire.total_response_bytes - len(answer.text)  # ASCII: a byte a character
    assert beside <= BUDGET_BYTES, (beside, dict(wire.response_bytes))


def test_the_bound_is_well_below_what_a_document_holds_beside_its_text(
    claims: tuple[Any, S3ClaimCheckStore, dict[str, Any]],
) -> None:
    """The 64 KiB is a bound, not the indexes' size: a claim keeps megabytes beside its text."""
    client, _, handles = claims
    stored = sum(o["Size"] for o in client.list_objects_v2(Bucket="json-budgets")["Contents"])
    texts = sum(len(text.encode()) for _, text in handles.values())
    assert (stored - texts) / len(handles) > 16 * BUDGET_BYTES


PAGES = [("records", "", first) for first in (20, 29_900, 59_815)] + [
    ("nested", "/partitions", first) for first in (20, 80)
]


@pytest.mark.slow
@pytest.mark.parametrize(("document", "pointer", "first"), PAGES)
def test_a_page_of_members_is_a_few_ranged_gets_and_64_kib(
    claims: tuple[Any, S3ClaimCheckStore, dict[str, Any]], document: str, pointer: str, first: int
) -> None:
    client, store, handles = claims
    handle, text = handles[document]
    wire = Wire.attach(client)
    page = store.read_path(SCOPE, handle, pointer, first=first)
    listed = [m.index for m in page.members]
    assert listed == list(range(first, first + len(listed)))
    if document == "records":  # neighbours: one read for the page's 20
        assert len(listed) == min(20, page.member_count - first)
    else:  # partitions far apart (a small one costs a read of its own): fewer, never none
        assert len(listed) >= PAGE_READS
    kinds = {dict: "object", list: "array"}
    for member in page.members:
        assert kinds[type(json.loads(text[member.start : member.end]))] == member.kind
    assert set(wire.requests) == {"GetObject"} and wire.requests["GetObject"] <= 2 + PAGE_READS
    assert wire.total_response_bytes <= BUDGET_BYTES, dict(wire.response_bytes)
