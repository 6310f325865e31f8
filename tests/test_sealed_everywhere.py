"""Every byte a read trusts is sealed: a claim's text, its index, and both their metadata.

Someone who may write the bucket and has no handle key edits one byte of one object of a
claim, or one field of its metadata, on moto's HTTP server. Every read that uses that object
(by offset, by line, from the end, by path, search, an MCP resource read, a claim reference)
then refuses with the answer an unknown handle gets; a read that does not use it answers as
it did before the edit, from bytes that are all intact. And the request budgets hold.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from devkit.servers import Wire
from s3claim import (
    ClaimCheck,
    HandleKey,
    ManualClock,
    RetryPolicy,
    RunContext,
    S3ClaimCheckStore,
    Scope,
    claim_check_tool,
    claim_search_tool,
)
from s3claim._reading._index import TAIL_BYTES, head_of
from s3claim._reading._json_index import parse_head
from s3claim.errors import ToolError
from s3claim.s3._seal import BLOCK_BYTES, TAG_BYTES, UNIT_BYTES
from tests._hosts import claim_answer, resolved_arguments
from tests._s3 import moto_client

SCOPE = Scope(tenant="acme", run="run-1")
TTL = 3600
TEXT = "".join(f"line {n}: the parties agree to term {n}.\n" for n in range(1, 60))
DOCUMENT = json.dumps(
    {"title": "ledger", "rows": [{"i": n, "amount": 10 * n} for n in range(40)]}, indent=1
)
ROWS = json.dumps({"rows": [{"i": n, "amount": 10 * n, "pad": "x" * 30} for n in range(600)]})
UNKNOWN = "claim:1" + "0" * 32


def _store(moto_endpoint: str) -> S3ClaimCheckStore:
    client = moto_client(moto_endpoint)
    name = f"sealed-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=name)
    return S3ClaimCheckStore(
        name,
        handle_key=HandleKey.generate(),
        client=client,
        clock=ManualClock(),
        retry=RetryPolicy(attempts=2, initial_wait=0, max_wait=0),
    )


@pytest.fixture
def store(moto_endpoint: str) -> S3ClaimCheckStore:
    return _store(moto_endpoint)


@pytest.fixture(scope="module")
def refused(moto_endpoint: str) -> dict[str, str]:
    """What each read answers for a handle no store ever issued: the answer to match."""
    with pytest.MonkeyPatch.context() as env:  # module-scoped: before the sealed env fixture
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        return {name: read(UNKNOWN) for name, read in _reads(_store(moto_endpoint)).items()}


def _reads(store: S3ClaimCheckStore) -> dict[str, Callable[[str], str]]:
    """Every way to read a claim, each giving what the model (or the tool) is handed."""
    from s3claim.mcp._claims import read_claim

    context = RunContext(scope=SCOPE, agent="a", emit=lambda _: None)
    fetch, search = claim_check_tool(store), claim_search_tool(store)

    def tool(claim_tool: Any, **arguments: Any) -> Callable[[str], str]:
        return lambda handle: (
            claim_answer(claim_tool, {"handle": handle, **arguments}, context).text
        )

    def resource(query: str) -> Callable[[str], str]:
        def read(handle: str) -> str:
            from mcp.shared.exceptions import MCPError

            try:
                result = read_claim(store, f"{handle}?{query}", context)
            except MCPError as exc:
                return f"refused: {exc.error.message}"
            return str(result.contents[0].text)  # type: ignore[union-attr]

        return read

    def reference(**narrowing: Any) -> Callable[[str], str]:
        claim_check = ClaimCheck(store, references=True)

        def read(handle: str) -> str:
            arguments = {"value": {"$claim": handle, **narrowing}}
            try:
                resolved = resolved_arguments(
                    arguments, claim_check=claim_check, tool="t", context=context
                )
            except ToolError as exc:
                return f"refused: {exc.render()}"
            return json.dumps(resolved["value"])

        return read

    def through_link(query: str) -> Callable[[str], str]:
        from starlette.testclient import TestClient

        from s3claim.errors import ClaimUnavailableError
        from s3claim.links import link
        from s3claim.links.server import links_app

        def read(handle: str) -> str:
            try:  # one metadata read, checked as any read checks it
                url = link(store, handle, scope=SCOPE, base_url="http://127.0.0.1")
            except ClaimUnavailableError:
                return "404 Not Found"  # what the server answers any link to nothing
            with TestClient(links_app(store)) as http:
                answer = http.get(url.removeprefix("http://127.0.0.1") + query)
            return f"{answer.status_code} {answer.text}"

        return read

    return {
        "offset": tool(fetch, offset=100),
        "line": tool(fetch, line=3),
        "from_end": tool(fetch, from_end=True),
        "path": tool(fetch, path="/rows/1"),
        "search": tool(search, pattern="term 7"),
        "resource": resource("line=3"),
        "reference_offset": reference(offset=10, length=40),
        "reference_line": reference(line=3, lines=2),
        "reference_path": reference(path="/title"),
        "link_whole": through_link(""),
        "link_window": through_link("?offset=100&length=40"),
        "link_line": through_link("?line=3&lines=2"),
    }


USES_INDEX = {"line", "path", "resource", "reference_line", "reference_path", "link_line"}
"""The reads that use a claim's index (a line's start, the JSON structure)."""
USES_TEXT = {"offset", "line", "from_end", "search", "resource", "reference_offset",
             "reference_line", "link_whole", "link_window", "link_line"}  # fmt: skip
"""The reads that use its text; reads by path do too, on a claim that is JSON."""


def _flip(store: S3ClaimCheckStore, key: str, at: int) -> None:
    client, name = store.client, store.bucket.name
    got = client.get_object(Bucket=name, Key=key)
    body = bytearray(got["Body"].read())
    body[at % len(body)] ^= 0x01
    client.put_object(
        Bucket=name, Key=key, Body=bytes(body), ContentType=got["ContentType"],
        Metadata=got["Metadata"],
    )  # fmt: skip


def _rewrite_field(store: S3ClaimCheckStore, key: str, field: str) -> None:
    client, name = store.client, store.bucket.name
    got = client.get_object(Bucket=name, Key=key)
    meta = dict(got["Metadata"])
    if field in meta and field != "s3claim-mac":
        value = meta[field]
        meta[field] = str(int(value) + 1) if value.isdigit() else value[::-1] + "x"
    else:
        meta.pop(field, None)
    client.put_object(
        Bucket=name, Key=key, Body=got["Body"].read(), ContentType=got["ContentType"],
        Metadata=meta,
    )  # fmt: skip


FIELDS = [
    "s3claim-format",
    "s3claim-expires-at",
    "s3claim-chars",
    "s3claim-lines",
    "s3claim-bytes",
    "s3claim-run",
    "s3claim-mac",
]


@pytest.mark.parametrize("text", [TEXT, DOCUMENT], ids=["text", "json"])
@pytest.mark.parametrize("which", ["claim", "index"])
@pytest.mark.parametrize(
    "damage",
    ["first-byte", "middle-byte", "tag-byte", "last-byte", *FIELDS],
)
def test_an_edit_anywhere_is_refused_by_every_read_that_uses_it(
    store: S3ClaimCheckStore, refused: dict[str, str], text: str, which: str, damage: str
) -> None:
    handle = store.put(SCOPE, text, ttl_seconds=TTL)
    reads = _reads(store)
    before = {name: read(handle) for name, read in reads.items()}
    assert all(before[name] != refused[name] for name in before)
    key = (store.layout.object_key if which == "claim" else store.layout.index_key)(SCOPE, handle)
    size = store.client.head_object(Bucket=store.bucket.name, Key=key)["ContentLength"]
    assert size <= UNIT_BYTES  # one sealed block: every read of the object reads the edit
    if damage.startswith("s3claim-"):
        _rewrite_field(store, key, damage)
    else:
        at = {"first-byte": 0, "middle-byte": size // 2, "tag-byte": -TAG_BYTES // 2,
              "last-byte": -1}[damage]  # fmt: skip
        _flip(store, key, at)
    by_path = {"path", "reference_path"} if text is DOCUMENT else set()
    uses = USES_INDEX if which == "index" else USES_TEXT | by_path
    after = {name: read(handle) for name, read in reads.items()}
    for name in reads:
        if name in uses:
            assert after[name] == refused[name], (name, after[name][:200])
        else:  # it reads nothing of the edited object: the very answer it gave before
            assert after[name] == before[name], (name, after[name][:200])


def test_the_async_face_refuses_an_edited_index_as_the_store_does(
    store: S3ClaimCheckStore,
) -> None:
    from s3claim import ClaimStoreError, ThreadedAsyncStore

    handle = store.put(SCOPE, DOCUMENT, ttl_seconds=TTL)
    _flip(store, store.layout.index_key(SCOPE, handle), 5)

    async def main() -> list[str]:
        reasons = []
        face = ThreadedAsyncStore(store)
        for read in (
            face.read_line(SCOPE, handle, 3),
            face.read_path(SCOPE, handle, "/rows/1"),
        ):
            with pytest.raises(ClaimStoreError) as failed:
                await read
            reasons.append(failed.value.reason)
        assert (await face.fetch(SCOPE, handle, 0, 20)).text == DOCUMENT[:20]
        return reasons

    assert asyncio.run(main()) == ["damaged", "damaged"]


def _index_content(store: S3ClaimCheckStore, key: str) -> tuple[bytes, bytearray]:
    """An index object's content (its tags dropped), and its stored body."""
    stored = bytearray(store.client.get_object(Bucket=store.bucket.name, Key=key)["Body"].read())
    units = (stored[at : at + UNIT_BYTES] for at in range(0, len(stored), UNIT_BYTES))
    content = b"".join(unit[:-TAG_BYTES] for unit in units)
    return content, stored


def _stored_at(content_at: int) -> int:
    """Where a content byte of a sealed object sits in its stored body."""
    return content_at + content_at // BLOCK_BYTES * TAG_BYTES


def test_swapped_entries_of_an_index_never_answer_another_record(
    store: S3ClaimCheckStore,
) -> None:
    """Swap the table entries of two array elements: `/rows/1` would read record 2."""
    handle = store.put(SCOPE, ROWS, ttl_seconds=TTL)
    assert store.read_path(SCOPE, handle, "/rows/1").text.startswith('{"i": 1,')
    key = store.layout.index_key(SCOPE, handle)
    content, stored = _index_content(store, key)
    head = parse_head(head_of(content[-TAIL_BYTES:]) or b"")
    (rows,) = [n for n in head.nodes.values() if n.count == 600]
    first, second = _stored_at(rows.table + 8), _stored_at(rows.table + 16)
    stored[first : first + 8], stored[second : second + 8] = (
        stored[second : second + 8],
        stored[first : first + 8],
    )
    got = store.client.head_object(Bucket=store.bucket.name, Key=key)
    store.client.put_object(
        Bucket=store.bucket.name, Key=key, Body=bytes(stored), Metadata=got["Metadata"]
    )
    answer = _reads(store)["path"](handle)
    assert answer == _reads(store)["path"](UNKNOWN) and '"i": 2' not in answer


def test_a_listing_rewritten_with_forged_text_is_never_shown(store: S3ClaimCheckStore) -> None:
    """Rewrite the keys a member listing shows: a model would read them as the claim's own."""
    handle = store.put(SCOPE, ROWS, ttl_seconds=TTL)
    key = store.layout.index_key(SCOPE, handle)
    content, stored = _index_content(store, key)
    at = content.index(b'"rows"')  # the key the document's listing shows
    forged = b"<|im_s"
    stored[_stored_at(at) : _stored_at(at) + len(forged)] = forged
    got = store.client.head_object(Bucket=store.bucket.name, Key=key)
    store.client.put_object(
        Bucket=store.bucket.name, Key=key, Body=bytes(stored), Metadata=got["Metadata"]
    )
    answer = claim_answer(
        claim_check_tool(store),
        {"handle": handle, "path": ""},
        RunContext(scope=SCOPE, agent="a", emit=lambda _: None),
    )
    assert answer.is_error and json.loads(answer.text)["error"] == "claim_unavailable"
    assert "im_start" not in answer.text and "<|im" not in answer.text


# -- the request budgets ----------------------------------------------------------------


def test_every_read_keeps_its_request_budget(store: S3ClaimCheckStore) -> None:
    """Check-in at most 2 PutObjects (a pretty-printed JSON document: its text and one index
    for its lines and its structure), a window 1 ranged GET, a line at most 2, the end 1, a
    path at most 3."""
    wire = Wire.attach(store.client)
    handle = store.put(SCOPE, ROWS.replace("}, {", "},\n{"), ttl_seconds=TTL)
    assert dict(wire.requests) == {"PutObject": 2}
    for read, budget in (
        (lambda: store.fetch(SCOPE, handle, 5000, 4096), 1),
        (lambda: store.read_line(SCOPE, handle, 300), 2),
        (lambda: store.read_line(SCOPE, handle, 1), 1),
        (lambda: store.read_end(SCOPE, handle), 1),
        (lambda: store.read_path(SCOPE, handle, "/rows/345/amount"), 3),
        (lambda: store.read_path(SCOPE, handle, "/rows"), 3),
    ):
        wire.clear()
        read()
        assert set(wire.requests) == {"GetObject"} and sum(wire.requests.values()) <= budget
    # a one-line text that is not JSON: one object, one PutObject
    wire.clear()
    store.put(SCOPE, "x" * 9000, ttl_seconds=TTL)
    assert dict(wire.requests) == {"PutObject": 1}


# -- the command line -------------------------------------------------------------------

CLI_DOORS = {
    "fetch": ["fetch", "--offset", "10"],
    "line": ["fetch", "--line", "3"],
    "from_end": ["fetch", "--from-end"],
    "path": ["fetch", "--path", "/rows/1"],
    "search": ["search", "amount"],
    "link": ["link", "--base-url", "http://127.0.0.1"],
}
"""Every way `s3claim` reads a claim (the command, then its flags; the handle goes first)."""
CLI_USES = {
    ("claim", "middle-byte"): {"fetch", "line", "from_end", "path", "search"},
    ("claim", "s3claim-mac"): set(CLI_DOORS),  # a link is made from the claim's metadata
    ("index", "middle-byte"): {"line", "path"},
    ("index", "s3claim-mac"): {"line", "path"},
}


@pytest.mark.parametrize(("which", "damage"), list(CLI_USES), ids="-".join)
def test_the_command_line_refuses_a_damaged_claim_as_it_refuses_an_unknown_handle(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, which: str, damage: str
) -> None:
    """`s3claim fetch` (every way), `search` and `link` on an edited object: the one line and
    exit 1 an unknown handle gets; a door that reads nothing of it answers as before."""
    from typer.testing import CliRunner

    from s3claim.cli import app

    key = "sealed-everywhere-cli-key-0123456"
    client = moto_client(moto_endpoint)
    name = f"sealed-cli-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=name)
    store = S3ClaimCheckStore(name, handle_key=HandleKey(key), client=client)  # the CLI's clock
    for variable, value in (("BUCKET", name), ("ENDPOINT_URL", moto_endpoint), ("HANDLE_KEY", key)):
        monkeypatch.setenv(f"S3CLAIM_{variable}", value)
    runner = CliRunner()
    scope = ["--tenant", SCOPE.tenant, "--run", SCOPE.run]

    def answers(handle: str) -> dict[str, tuple[int, str, str]]:
        said = {}
        for door, (command, *flags) in CLI_DOORS.items():
            result = runner.invoke(app, [command, *scope, handle, *flags])
            out = result.stdout if door != "link" else result.stdout[:24]  # a fresh token each
            said[door] = (result.exit_code, out, result.stderr)
        return said

    handle = store.put(SCOPE, DOCUMENT, ttl_seconds=TTL)
    refused, before = answers(UNKNOWN), answers(handle)
    assert refused["fetch"][0] == 1 and refused["fetch"][2].startswith("s3claim: error: claim ")
    assert all(before[door] != refused[door] for door in CLI_DOORS)
    object_key = (store.layout.object_key if which == "claim" else store.layout.index_key)(
        SCOPE, handle
    )
    if damage.startswith("s3claim-"):
        _rewrite_field(store, object_key, damage)
    else:
        size = client.head_object(Bucket=name, Key=object_key)["ContentLength"]
        _flip(store, object_key, size // 2)
    after = answers(handle)
    for door in CLI_DOORS:
        expected = refused[door] if door in CLI_USES[which, damage] else before[door]
        assert after[door] == expected, (door, after[door])
