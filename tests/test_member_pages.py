"""Paging a path read's member listing: `fetch_result(path=P, offset=N)` lists members N+1..
of the object or array at P, within the budgets of a read by path.

A small container is read whole and its members sliced; a large one (a node of the structure
index) reads its members' entries in document order and the few characters around each
member (its key, its first character), in at most `PAGE_READS` text reads of at most
`SPAN_CHARS` each. Every member is listed exactly once across the pages, the last page says
so, and on S3 each page is a handful of ranged GETs, counted on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from mcp.types import TextResourceContents

from devkit.servers import Wire
from s3claim import ClaimCheck, MemoryClaimCheckStore, RunContext, Scope
from s3claim._reading._index import TAIL_BYTES
from s3claim._reading._json_index import SMALL_BYTES, parse_head
from s3claim._reading._json_path import PAGE_READS, SPAN_CHARS, PathError, _behind, by_path
from s3claim._windows import render
from s3claim.hosting import Host
from s3claim.mcp._claims import read_claim
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore
from s3claim.s3._seal import UNIT_BYTES
from s3claim.store import Address
from tests.test_json_path import Slices, _Ranges

SCOPE = Scope(tenant="acme", run="run-1")
COUNT = 305
ROW = re.compile(r"(\S*) (object|array|string|number|boolean|null), characters (\d+)-(\d+)")
NEXT = re.compile(r"the next with path='([^']*)' and offset=(\d+)")


def _small() -> str:
    return json.dumps({"obj": {f"k{n:03d}": n for n in range(COUNT)}, "arr": list(range(COUNT))})


def _large() -> str:
    record = {"note": "lorem ipsum dolor sit amet " * 3}
    return json.dumps(
        {
            "obj": {f"key-{n:03d}": {"n": n, **record} for n in range(COUNT)},
            "arr": [{"n": n, **record} if n % 7 else f"text {n}" for n in range(COUNT)],
            "pad": "x" * 2**20,  # a claim of 1 MiB beside the containers: never read
        },
        indent=1,
    )


def _big_members() -> str:
    """Members far apart (each a large container of its own): a page reads around each."""
    part = ["x" * 60] * 300  # about 19 Ki characters: a node
    return json.dumps({"obj": {f"b{n:02d}": {"v": part} for n in range(30)}, "arr": [part] * 30})


DOCUMENTS = {"small": _small(), "large": _large(), "far": _big_members()}


def _expected(text: str, pointer: str) -> list[tuple[str, str]]:
    """Every member's pointer and JSON type, in document order, as json.loads reads them."""
    value = json.loads(text)[pointer[1:]]
    kinds = {dict: "object", list: "array", str: "string", int: "number"}
    if isinstance(value, dict):
        return [(f"{pointer}/{k}", kinds[type(v)]) for k, v in value.items()]
    return [(f"{pointer}/{n}", kinds[type(v)]) for n, v in enumerate(value)]


def _paragraph(answer: str, pointer: str) -> str:
    (found,) = [p for p in answer.split("\n\n") if p.startswith(f"[{pointer}: ")]
    return found


def _page_through(fetch: Any, text: str, pointer: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Follow the listing's own next call from the read by path to the last page; every row
    (checked against the claim's characters) and every paragraph."""
    rows: list[tuple[str, str]] = []
    paragraphs: list[str] = []
    arguments: dict[str, Any] = {"path": pointer}
    container = json.loads(text)[pointer[1:]]
    while True:
        paragraph = _paragraph(fetch(arguments), pointer)
        paragraphs.append(paragraph)
        for member, kind, start, end in ROW.findall(paragraph):
            value = json.loads(text[int(start) : int(end)])
            assert value == container[_token(member)]
            rows.append((member, kind))
        following = NEXT.search(paragraph)
        if following is None:
            return rows, paragraphs
        assert following.group(1) == pointer
        arguments = {"path": pointer, "offset": int(following.group(2))}


def _token(member: str) -> Any:
    token = member.rsplit("/", 1)[1]
    return int(token) if token.isdigit() else token


def _host(store: MemoryClaimCheckStore, text: str) -> tuple[str, Any]:
    """The claim's handle, and a call of fetch_result on it as a host runs one."""
    handle = store.put(SCOPE, text, ttl_seconds=3600)
    host = Host(ClaimCheck(store))
    context = RunContext(scope=SCOPE, agent="a", emit=lambda event: None)
    return handle, lambda arguments: host.run(
        "fetch_result", {"handle": handle, **arguments}, context
    )


def _host_fetch(store: MemoryClaimCheckStore, text: str) -> Any:
    _, run = _host(store, text)

    def fetch(arguments: dict[str, Any]) -> str:
        answer = run(arguments)
        assert not answer.is_error, answer.text
        return str(answer.text)

    return fetch


@pytest.mark.parametrize("pointer", ["/obj", "/arr"])
@pytest.mark.parametrize("document", sorted(DOCUMENTS))
def test_every_member_is_listed_exactly_once_across_the_pages(document: str, pointer: str) -> None:
    text = DOCUMENTS[document]
    rows, paragraphs = _page_through(_host_fetch(MemoryClaimCheckStore(), text), text, pointer)
    assert rows == _expected(text, pointer)
    count = len(rows)
    noun = "keys" if pointer == "/obj" else "elements"
    first = paragraphs[0]
    assert first.startswith(f"[{pointer}: {'object' if pointer == '/obj' else 'array'} of ")
    assert f"of {count} {noun}" in first and " Members 1-20:\n" in first
    assert f"{count - 20} more not listed: the next with path='{pointer}' and offset=20;" in first
    shown = 20
    for paragraph in paragraphs[1:-1]:
        listed = len(ROW.findall(paragraph))
        assert f" Members {shown + 1}-{shown + listed}:\n" in paragraph
        shown += listed
        assert f"the next with path='{pointer}' and offset={shown};" in paragraph
    last = paragraphs[-1]
    assert f" Members {shown + 1}-{count} (the last):\n" in last and "not listed" not in last


def test_a_page_lists_twenty_rows_within_a_bounded_number_of_small_reads() -> None:
    text = DOCUMENTS["large"]
    assert len(json.dumps(json.loads(text)["arr"], indent=1)) > SMALL_BYTES  # a node
    for pointer in ("/obj", "/arr"):
        for first in (20, 140, 300):
            source = Slices(text)
            page = by_path(_Ranges(source), pointer, limit=4096, first=first)
            assert [m.index for m in page.members] == list(range(first, min(first + 20, COUNT)))
            assert page.text == "" and page.first_member == first
            kinds = [kind for kind, _ in source.reads]
            # the head, the page's entries (one before it, one after), one text read
            assert kinds == ["index", "index", "chars"], (pointer, first, source.reads)
            assert source.reads[1][1] <= 8 * 22 and source.reads[2][1] <= SPAN_CHARS


def test_members_far_apart_end_a_page_early_rather_than_read_more() -> None:
    text = DOCUMENTS["far"]
    source = Slices(text)
    page = by_path(_Ranges(source), "/obj", limit=4096, first=20)
    texts = [size for kind, size in source.reads if kind == "chars"]
    assert len(texts) <= PAGE_READS and all(size <= SPAN_CHARS for size in texts)
    assert 1 <= len(page.members) < 10  # each key is ~19 Ki characters from the last
    source = Slices(text)
    page = by_path(_Ranges(source), "/arr", limit=4096, first=20)
    # elements that are nodes: their types and spans are the index's, no character read
    assert len(page.members) == 10 and [k for k, _ in source.reads] == ["index", "index"]


def test_a_page_of_a_small_container_is_its_members_sliced() -> None:
    text = DOCUMENTS["small"]
    source = Slices(text)
    page = by_path(_Ranges(source), "/obj", limit=4096, first=300)
    assert [m.key for m in page.members] == [f"k{n:03d}" for n in range(300, COUNT)]
    assert [k for k, _ in source.reads] == ["index", "chars"]  # as a read by path reads it


def test_an_offset_past_the_members_is_refused_saying_how_many_there_are() -> None:
    for document in ("small", "large"):
        source = Slices(DOCUMENTS[document])
        for pointer, noun in (("/obj", "keys"), ("/arr", "elements")):
            with pytest.raises(PathError) as info:
                by_path(_Ranges(source), pointer, limit=4096, first=COUNT)
            assert info.value.kind == "no_such_path"
            assert f"{pointer} has {COUNT} {noun} (offsets 0 to {COUNT - 1})" in info.value.message
            assert "drop path" in info.value.message
    _, run = _host(MemoryClaimCheckStore(), DOCUMENTS["large"])
    answer = run({"path": "/obj", "offset": 10**6})
    assert answer.is_error and json.loads(answer.text)["error"] == "no_such_path"


def test_offset_beside_path_on_a_value_without_members_is_refused() -> None:
    for document, pointer in (("small", "/obj/k007"), ("large", "/obj/key-007/note")):
        with pytest.raises(PathError) as info:
            by_path(_Ranges(Slices(DOCUMENTS[document])), pointer, limit=4096, first=3)
        assert info.value.kind == "invalid_arguments"
        message = info.value.message
        assert "has no members" in message and pointer in message and "drop" in message


def test_offset_zero_beside_path_is_the_read_by_path_itself() -> None:
    fetch = _host_fetch(MemoryClaimCheckStore(), DOCUMENTS["large"])
    assert fetch({"path": "/obj", "offset": 0}) == fetch({"path": "/obj"})


def test_limit_bounds_a_pages_listing_and_the_next_offset_follows_what_it_shows() -> None:
    text = DOCUMENTS["large"]
    fetch = _host_fetch(MemoryClaimCheckStore(), text)
    page = fetch({"path": "/obj", "offset": 20, "limit": 400})
    assert len(page) <= 400
    listed = len(ROW.findall(page))
    assert 0 < listed < 20 and f"offset={20 + listed};" in page


def test_a_claim_resource_uri_pages_as_fetch_result_does() -> None:
    store = MemoryClaimCheckStore()
    handle, run = _host(store, DOCUMENTS["large"])
    context = RunContext(scope=SCOPE, agent="a", emit=lambda event: None)
    resource = read_claim(store, f"{handle}?path=/obj&offset=20", context)
    (content,) = resource.contents
    assert isinstance(content, TextResourceContents)
    assert content.text == run({"path": "/obj", "offset": 20}).text


# -- on S3: the wire ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def on_s3(moto_endpoint: str) -> Iterator[tuple[Any, S3ClaimCheckStore, dict[str, str]]]:
    from tests._s3 import moto_client

    with pytest.MonkeyPatch.context() as env:  # module-scoped: before the sealed env fixture
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        client = moto_client(moto_endpoint)
        client.list_buckets()
    client.create_bucket(Bucket="member-pages")
    store = S3ClaimCheckStore(
        "member-pages",
        handle_key="test-handle-key-0123456789",
        client=client,
        retry=RetryPolicy(initial_wait=0, max_wait=0),
    )
    handles = {name: store.put(SCOPE, DOCUMENTS[name], ttl_seconds=3600) for name in DOCUMENTS}
    try:
        yield client, store, handles
    finally:
        store.forget(tenant="acme")
        client.delete_bucket(Bucket="member-pages")


PAGE_GETS = 2 + PAGE_READS
"""The index's end, the page's entries, and its text reads."""
PAGE_BYTES = TAIL_BYTES + UNIT_BYTES + 2 * UNIT_BYTES + PAGE_READS * (SPAN_CHARS + 2 * UNIT_BYTES)
"""At most: the index's end (and a block more, for its alignment), the entries' two blocks,
and each text read's span and the two blocks it may start and end in (ASCII: a byte a
character)."""


@pytest.mark.parametrize("pointer", ["/obj", "/arr"])
@pytest.mark.parametrize("document", ["large", "far"])
def test_on_s3_each_page_is_a_few_ranged_gets_never_the_document(
    on_s3: tuple[Any, S3ClaimCheckStore, dict[str, str]], document: str, pointer: str
) -> None:
    client, store, handles = on_s3
    text = DOCUMENTS[document]
    costs: list[tuple[int, int]] = []

    def fetch(arguments: dict[str, Any]) -> str:
        wire = Wire.attach(client)
        answer = store.read(SCOPE, handles[document], Address.of(arguments), length=4096)
        if "offset" in arguments:
            assert set(wire.requests) == {"GetObject"}
            costs.append((wire.requests["GetObject"], wire.total_response_bytes))
        return render(answer, handles[document], line=None)

    rows, _ = _page_through(fetch, text, pointer)
    assert rows == _expected(text, pointer)
    assert costs and all(gets <= PAGE_GETS for gets, _ in costs), costs
    assert all(size <= PAGE_BYTES for _, size in costs), costs
    assert max(size for _, size in costs) < len(text) / 10


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("indent", [None, 4])
def test_keys_past_the_listing_read_as_json_loads_reads_them(
    indent: int | None, ensure_ascii: bool
) -> None:
    """Escapes, characters beyond the BMP, and keys longer than a listing shows (cut, and
    said so), in a large object, minified and pretty."""
    keys = [
        ("L" * 100 + str(n)) if n % 10 == 3 else f'k{n:03d} "q" b\\s /~ é 😀 {chr(9)}'
        for n in range(COUNT)
    ]
    text = json.dumps(
        {"obj": {key: {"pad": "x" * 80} for key in keys}}, indent=indent, ensure_ascii=ensure_ascii
    )
    listed = []
    for first in range(20, COUNT, 20):
        page = by_path(_Ranges(Slices(text)), "/obj", limit=4096, first=first)
        listed += [(m.key, m.key_cut) for m in page.members]
    assert listed == [(key[:64], len(key) > 64) for key in keys[20:]]


@pytest.mark.parametrize(
    ("region", "is_object", "closing", "found"),
    [
        ('"prev"  ,\n  "ke\\"y\\\\" : ', True, False, (6, 12)),
        ("[1, 2] ,  ", False, False, (6, None)),
        ('{"a": 1}  \n ', True, True, (8, None)),
        ('tail of a long string", "k": ', True, False, (22, 24)),
        ("no key here: ", True, False, (None, None)),
        ('"unterminated: ', True, False, (None, None)),
    ],
)
def test_reading_back_from_what_follows_a_member_finds_its_end_and_the_next_key(
    region: str, is_object: bool, closing: bool, found: tuple[int | None, int | None]
) -> None:
    """What a page does for a member too long for its entry (a string of 16 Mi characters
    or more, too long to build here): its end, and the next key, read back from what follows."""
    assert _behind(region, is_object, closing) == found


def test_an_object_indexed_before_member_pages_is_refused_saying_what_still_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An index an earlier version built has no entries in document order for objects: its
    nodes read without the flag (arrays page as before, their table is in that order)."""
    import s3claim._reading._json_path as json_path

    def older(data: bytes) -> Any:
        head = parse_head(data)
        return replace(head, nodes={fp: replace(n, ordered=False) for fp, n in head.nodes.items()})

    monkeypatch.setattr(json_path, "parse_head", older)
    source = Slices(DOCUMENTS["large"])
    with pytest.raises(PathError) as info:
        by_path(_Ranges(source), "/obj", limit=4096, first=20)
    assert info.value.kind == "no_such_path"
    assert "read one with path='/obj/KEY', or find keys with search_result" in info.value.message
    assert len(by_path(_Ranges(source), "/arr", limit=4096, first=20).members) == 20
