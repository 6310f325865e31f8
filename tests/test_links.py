"""Links: code reads a claim with nothing but an HTTP client (issue 38).

`s3claim serve` runs as a subprocess over moto, as an operator runs it; a second subprocess,
with no AWS or s3claim variable in its environment, reads links with urllib. What the
server costs the store per read is counted in this process, on the same app in-process.
"""

from __future__ import annotations

import base64
import http.client
import inspect
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from devkit.servers import Wire
from s3claim import (
    ClaimCheck,
    ClaimStoreError,
    ClaimUnavailableError,
    ConfigurationError,
    ManualClock,
    MemoryClaimCheckStore,
    RetryPolicy,
    S3ClaimCheckStore,
    Scope,
)
from s3claim.handles import HandleKey
from s3claim.links import Link, LinkKey, check_base_url, link
from s3claim.links.server import links_app
from s3claim.mcp import listen_socket, server_config
from tests._s3 import moto_client, s3_error, stored_bytes
from tests._slow_clients import read_slowly, stalled, still_open

KEY = "test-links-handle-key-0123456789"
SCOPE = Scope(tenant="acme-tenant", run="run-secret-7")
TEXT = "".join(f"ligne {n}: café, 東京, 🙂\n" for n in range(1, 3001))
RECORDS = json.dumps({"items": [{"id": n, "name": f"récord {n}"} for n in range(300)]})
BIG = "".join(f"ligne {n}: café crème, {n * 7919 % 10007}\n" for n in range(120_000))
"""3 MiB of Latin-1 text: larger than the socket buffers, so a slow reader makes the server
wait."""
HEADER_TIMEOUT = 1.0
"""`s3claim serve`'s bound on a request's headers here (S3CLAIM_HEADER_TIMEOUT; 10 s by
default): small, so the test of it takes a second or two."""
_START_SECONDS = 60.0


@dataclass
class Served:
    store: S3ClaimCheckStore
    base_url: str
    text: str
    records: str
    big: str
    wire: Wire
    log: list[str]
    """What the server wrote on stderr, line by line, as it writes it."""

    def logged(self, words: str, *, within: float = 10.0) -> bool:
        """Whether the server writes a line holding `words` within `within` seconds."""
        deadline = time.monotonic() + within
        while not any(words in line for line in self.log):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True


@contextmanager
def serve_links(env: dict[str, str], *flags: str) -> Iterator[tuple[str, list[str], int]]:
    """`s3claim serve` on 127.0.0.1 (port 0), with `env` and `flags`: its base URL, the lines
    it writes on stderr as it writes them, and its pid; stopped by SIGTERM at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "s3claim", "serve", "--listen", "127.0.0.1:0", *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    found: list[str] = []
    lines: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            serving = re.search(r"serving links at (http://\S+)/claims/", line)
            if serving:
                found.append(serving.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        ready.wait(_START_SECONDS)
        assert found, f"s3claim serve did not start: {''.join(lines)[-2000:]}"
        yield found[0], lines, process.pid
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        reader.join(timeout=15)
        assert process.stderr is not None
        process.stderr.close()


@pytest.fixture(scope="module")
def served(sealed_module: None, moto_endpoint: str) -> Iterator[Served]:
    """Two claims on moto, and `s3claim serve` over the same bucket and key."""
    client = moto_client(moto_endpoint)
    bucket = f"links-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    store = S3ClaimCheckStore(
        bucket, handle_key=KEY, client=client, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )
    text = store.put(SCOPE, TEXT, ttl_seconds=3600)
    records = store.put(SCOPE, RECORDS, ttl_seconds=3600)
    big = store.put(SCOPE, BIG, ttl_seconds=3600)
    env = {
        **os.environ,
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_HANDLE_KEY": KEY,
        "S3CLAIM_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
    }
    with serve_links(env) as (url, lines, _):
        yield Served(store, url, text, records, big, Wire.attach(client), lines)
    assert "ligne" not in "".join(lines)  # the server logged no content


_READER = """
import json, sys, urllib.request, urllib.error
answers = []
for url, headers in json.loads(sys.stdin.read()):
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, found, body = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, found, body = error.code, dict(error.headers), error.read()
    answers.append([status, {k.lower(): v for k, v in found.items()}, body.hex()])
print(json.dumps(answers))
"""


def read_elsewhere(
    requests: list[tuple[str, dict[str, str]]],
) -> list[tuple[int, dict[str, str], bytes]]:
    """Each (url, headers) read by urllib in a process with no AWS or s3claim settings."""
    env = {name: os.environ[name] for name in ("PATH", "SYSTEMROOT") if name in os.environ}
    assert not any(name.startswith(("AWS_", "S3CLAIM_")) for name in env)
    done = subprocess.run(
        [sys.executable, "-I", "-c", _READER],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return [
        (status, headers, bytes.fromhex(body)) for status, headers, body in json.loads(done.stdout)
    ]


def test_code_reads_a_claim_with_urllib_and_nothing_else(served: Served) -> None:
    claims = ClaimCheck(served.store)
    url = claims.link(served.text, scope=SCOPE, base_url=served.base_url)
    json_url = claims.link(served.records, scope=SCOPE, base_url=served.base_url)
    assert url.startswith(f"{served.base_url}/claims/")
    assert SCOPE.tenant not in url and SCOPE.run not in url
    utf8 = TEXT.encode("utf-8")
    middle = len(utf8) // 2
    whole, ranged, tail, past, by_line, by_offset, from_end, by_path = read_elsewhere(
        [
            (url, {}),
            (url, {"Range": f"bytes={middle}-{middle + 999}"}),
            (url, {"Range": "bytes=-1500"}),
            (url, {"Range": f"bytes={len(utf8)}-"}),
            (f"{url}?line=1500&lines=3", {}),
            (f"{url}?offset=40000&length=5000", {}),
            (f"{url}?from_end&lines=2", {}),
            (f"{json_url}?path=/items/42", {}),
        ]
    )
    assert whole[0] == 200 and whole[2] == utf8
    assert whole[1]["content-type"] == "text/plain; charset=utf-8"
    assert ranged[0] == 206 and ranged[2] == utf8[middle : middle + 1000]
    assert ranged[1]["content-range"] == f"bytes {middle}-{middle + 999}/*"
    assert tail[0] == 206 and tail[2] == utf8[-1500:]
    assert tail[1]["content-range"] == f"bytes {len(utf8) - 1500}-{len(utf8) - 1}/{len(utf8)}"
    assert past[0] == 416 and past[1]["content-range"] == f"bytes */{len(utf8)}"
    lines = TEXT.splitlines(keepends=True)
    assert by_line[0] == 200 and by_line[2].decode() == "".join(lines[1499:1502])
    assert by_offset[2].decode() == TEXT[40000:45000]
    assert by_offset[1]["x-claim-next-offset"] == "45000"
    assert by_offset[1]["x-claim-total-chars"] == str(len(TEXT))
    assert from_end[2].decode() == "".join(lines[-2:])
    start = RECORDS.index('{"id": 42')
    value = json.dumps({"id": 42, "name": "récord 42"})
    assert by_path[0] == 200 and by_path[2].decode() == value
    assert by_path[1]["x-claim-offset"] == str(start)


def test_expired_altered_foreign_and_unknown_links_are_one_404(served: Served) -> None:
    store, base = served.store, served.base_url
    seal = LinkKey(store.handle_key).seal
    good = link(store, served.text, scope=SCOPE, base_url=base)
    token = good.rsplit("/", 1)[1]
    flipped = token[:40] + ("A" if token[40] != "A" else "B") + token[41:]
    gone = store.put(SCOPE, "soon forgotten\n" * 10, ttl_seconds=3600)
    unknown = link(store, gone, scope=SCOPE, base_url=base)
    other_key = LinkKey(type(store.handle_key)("another-handle-key-0123456789"))
    later = int(time.time()) + 600
    urls = {
        "expired": f"{base}/claims/{seal(Link(served.text, SCOPE, int(time.time()) - 1))}",
        "altered": f"{base}/claims/{flipped}",
        "foreign": f"{base}/claims/{seal(Link(served.text, Scope('other', SCOPE.run), later))}",
        "another key": f"{base}/claims/{other_key.seal(Link(served.text, SCOPE, later))}",
        "garbled": f"{base}/claims/not-a-token",
        "unknown": unknown,
    }
    _delete_claim(store, gone)
    answers = read_elsewhere([(url, {}) for url in [good, *urls.values()]])
    assert answers[0][0] == 200
    refused = [(status, _without_date(headers), body) for status, headers, body in answers[1:]]
    assert refused[0][0] == 404 and refused[0][2] == b"Not Found"
    assert all(each == refused[0] for each in refused), dict(zip(urls, refused, strict=True))


def _delete_claim(store: S3ClaimCheckStore, handle: str) -> None:
    key = store.layout.object_key(SCOPE, handle)
    store.client.delete_object(Bucket=store.bucket.name, Key=key)


def _without_date(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k != "date"}


# -- in-process: requests per read, expiry, faults -------------------------------------------


def _ranges_sent(client: Any) -> list[str | None]:
    sent: list[str | None] = []

    def note(request: Any, **_: Any) -> None:
        found = request.headers.get("Range")
        sent.append(found.decode() if isinstance(found, bytes) else found)

    client.meta.events.register("before-send.s3.GetObject", note)
    return sent


def test_each_reading_mode_stays_within_the_stores_budget(served: Served) -> None:
    store, wire = served.store, served.wire
    path = link(store, served.text, scope=SCOPE, base_url="http://127.0.0.1")
    json_path = link(store, served.records, scope=SCOPE, base_url="http://127.0.0.1")
    path, json_path = (u.removeprefix("http://127.0.0.1") for u in (path, json_path))
    ranges = _ranges_sent(store.client)
    budgets = {
        f"{path}?offset=60000&length=4096": 1,  # a window: one ranged GET
        f"{path}?line=2000&lines=5": 2,
        f"{path}?from_end&lines=3": 1,
        f"{json_path}?path=/items/250/name": 3,
        path: 1,  # the whole text: one streaming GET
    }
    with TestClient(links_app(store)) as http:
        for url, most in budgets.items():
            wire.clear()
            ranges.clear()
            answer = http.get(url)
            assert answer.status_code == 200, url
            assert set(wire.requests) == {"GetObject"}, (url, wire.requests)
            assert wire.requests["GetObject"] <= most, (url, wire.requests)
        wire.clear()
        ranges.clear()
        http.get(f"{path}?offset=60000&length=4096")
    assert dict(wire.requests) == {"GetObject": 1}
    assert len(ranges) == 1 and ranges[0] is not None and ranges[0].startswith("bytes=")


def test_a_link_expires_with_its_ttl_or_its_claim_whichever_is_first() -> None:
    clock = ManualClock(1_000_000)
    store = MemoryClaimCheckStore(clock=clock)
    claims = ClaimCheck(store)
    short = store.put(SCOPE, "lives a minute\n", ttl_seconds=60)
    long = store.put(SCOPE, "lives a day\n", ttl_seconds=86_400)
    base = "http://localhost:9"
    to_short = claims.link(short, scope=SCOPE, base_url=base, ttl_seconds=300)
    to_long = claims.link(long, scope=SCOPE, base_url=base, ttl_seconds=300)
    opened = [LinkKey(store.handle_key).open(u.rsplit("/", 1)[1]) for u in (to_short, to_long)]
    assert [o.expires_at if o else None for o in opened] == [1_000_060, 1_000_300]
    with TestClient(links_app(store)) as http:
        get = lambda url: http.get(url.removeprefix(base))  # noqa: E731
        assert get(to_short).text == "lives a minute\n" and get(to_long).status_code == 200
        clock.advance(61)
        assert get(to_short).status_code == 404 and get(to_long).status_code == 200
        clock.advance(240)
        assert get(to_long).status_code == 404


def test_a_store_fault_is_a_503_in_one_line(served: Served) -> None:
    store = served.store
    path = link(store, served.text, scope=SCOPE, base_url="http://127.0.0.1")
    path = path.removeprefix("http://127.0.0.1")

    def fail(**_: Any) -> Any:
        return s3_error(503, "SlowDown")

    store.client.meta.events.register_first("before-send.s3.GetObject", fail)
    try:
        with TestClient(links_app(store)) as http:
            for url in (path, f"{path}?offset=10", f"{path}?line=3"):
                answer = http.get(url, headers={"Range": "bytes=0-9"})
                assert answer.status_code == 503
                assert answer.text == "the claim store is unavailable: try again later"
    finally:
        store.client.meta.events.unregister("before-send.s3.GetObject", fail)


def test_bad_queries_are_400_and_bad_settings_refused_at_once() -> None:
    store = MemoryClaimCheckStore()
    handle = store.put(SCOPE, "x" * 100, ttl_seconds=60)
    url = link(store, handle, scope=SCOPE, base_url="https://claims.example.com/base/")
    assert url.startswith("https://claims.example.com/base/claims/")
    path = url.removeprefix("https://claims.example.com/base")
    with TestClient(links_app(store)) as http:
        for query in ("offset=-1", "line=2&path=/a", "length=99999999", "lines=2", "zz=1"):
            answer = http.get(f"{path}?{query}")
            assert answer.status_code == 400 and "\n" not in answer.text, query
        assert http.get(f"{path}?path=/a").status_code == 422  # not JSON
        page = http.get(f"{path}?path=/a&offset=20")  # a listing's page: fetch_result's
        assert page.status_code == 400 and "a link delivers characters" in page.text
        assert "\n" not in page.text
    for bad in ("http://claims.example.com", "ftp://127.0.0.1", "https://u:p@h", "/relative"):
        with pytest.raises(ConfigurationError):
            check_base_url(bad)
    with pytest.raises(ConfigurationError):
        ClaimCheck(store, link_base_url="http://10.0.0.1:8080")
    with pytest.raises(ConfigurationError):
        link(store, handle, scope=SCOPE, base_url="http://[::1]:1", ttl_seconds=0)
    with pytest.raises(ClaimUnavailableError):
        link(store, handle, scope=Scope("acme-tenant", "another run"), base_url="http://[::1]")


# -- the edges (issue 46): slow clients, long numbers, damaged claims, odd requests ----------


def test_both_servers_bound_a_requests_headers_by_default() -> None:
    from s3claim.cli._mcp_proxy import mcp_proxy
    from s3claim.cli._serve import serve
    from s3claim.mcp import HEADER_TIMEOUT_SECONDS

    for command in (serve, mcp_proxy):
        default = inspect.signature(command).parameters["header_timeout"].default
        assert default == HEADER_TIMEOUT_SECONDS == 10.0, command


def test_a_request_whose_headers_never_arrive_is_closed_within_the_bound(served: Served) -> None:
    url = link(served.store, served.big, scope=SCOPE, base_url=served.base_url)
    utf8 = BIG.encode("utf-8")
    with stalled(served.base_url, 50) as held:
        started = time.monotonic()
        # Meanwhile a request is answered, and its large body read slowly, past the bound.
        status, body, took = read_slowly(url, size=len(utf8), seconds=2 * HEADER_TIMEOUT)
        assert status == 200 and body == utf8
        assert took > 1.5 * HEADER_TIMEOUT
        left = max(0.0, started + HEADER_TIMEOUT + 4 - time.monotonic())
        assert still_open(held, within=left) == []


def test_over_long_numbers_are_one_line_answers_never_a_traceback(served: Served) -> None:
    url = link(served.store, served.text, scope=SCOPE, base_url=served.base_url)
    utf8 = TEXT.encode("utf-8")
    digits = "9" * 5000  # past the 4,300 digits int() reads from a string
    queries = [f"offset={digits}", f"length={digits}", f"line={digits}", f"line=1&lines={digits}"]
    ranges = [f"bytes={digits}-", f"bytes=-{digits}", f"bytes=0-{digits}", f"bytes={'0' * 5000}5-9"]
    answers = read_elsewhere(
        [(f"{url}?{query}", {}) for query in queries] + [(url, {"Range": each}) for each in ranges]
    )
    for query, (status, _, body) in zip(queries, answers[: len(queries)], strict=True):
        name = query.rsplit("&", 1)[-1].split("=")[0]
        assert status == 400 and b"\n" not in body, (query[:20], body[:200])
        assert body.startswith(f"{name} must be a whole number".encode()), body[:200]
    past, suffix, to_end, padded = ((a[0], a[1].get("content-range"), a[2]) for a in answers[4:])
    # A range's numbers are read for what they are: past any text, or all of it.
    assert past == (416, f"bytes */{len(utf8)}", b"Range Not Satisfiable")
    assert suffix == to_end == (206, f"bytes 0-{len(utf8) - 1}/{len(utf8)}", utf8)
    assert padded == (206, "bytes 5-9/*", utf8[5:10])
    assert not any("Traceback" in line for line in served.log), "".join(served.log)[-3000:]


def _damage(store: S3ClaimCheckStore, handle: str, at: int) -> None:
    """Flip one bit of the claim's stored object at byte `at`, its metadata left whole."""
    key = store.layout.object_key(SCOPE, handle)
    client, bucket = store.client, store.bucket.name
    found = client.get_object(Bucket=bucket, Key=key)
    body = bytearray(found["Body"].read())
    body[at] ^= 0x01
    client.put_object(
        Bucket=bucket,
        Key=key,
        Body=bytes(body),
        Metadata=found["Metadata"],
        ContentType=found["ContentType"],
    )


def test_a_damaged_claim_is_the_one_404_read_whole_or_by_range(served: Served) -> None:
    store, base = served.store, served.base_url
    damaged_text = "".join(f"ligne {n}: abîmée\n" for n in range(180_000))  # 3 MiB
    damaged = store.put(SCOPE, damaged_text, ttl_seconds=3600)
    _damage(store, damaged, 2_500_000)  # after the first megabytes have been read
    url = link(store, damaged, scope=SCOPE, base_url=base)
    gone = store.put(SCOPE, "soon forgotten\n" * 10, ttl_seconds=3600)
    unknown = link(store, gone, scope=SCOPE, base_url=base)
    _delete_claim(store, gone)
    asked: list[tuple[str, dict[str, str]]] = [
        (url, {}),
        (url, {"Range": "bytes=-100"}),
        (url, {"Range": "bytes=2000000-"}),
        (url, {"Range": "bytes=0-2600000"}),
    ]
    *read, refused = read_elsewhere([*asked, (unknown, {})])
    assert refused[0] == 404 and refused[2] == b"Not Found"
    refusal = (refused[0], _without_date(refused[1]), refused[2])
    for (_, headers), (status, found, body) in zip(asked, read, strict=True):
        assert (status, _without_date(found), body) == refusal, headers
    assert served.logged(f"{damaged} is damaged")
    assert not any("Traceback" in line for line in served.log), "".join(served.log)[-3000:]


def test_a_whole_read_is_checked_before_it_answers_and_what_that_costs(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from s3claim.links import server

    store, wire = served.store, served.wire
    path = link(store, served.text, scope=SCOPE, base_url="http://127.0.0.1")
    path = path.removeprefix("http://127.0.0.1")
    utf8, stored = TEXT.encode("utf-8"), stored_bytes(4 * len(TEXT))  # 🙂: 4 bytes a char
    damaged_text = TEXT.replace("ligne", "ligne abîmée")
    damaged = store.put(SCOPE, damaged_text, ttl_seconds=3600)
    _damage(store, damaged, stored_bytes(4 * len(damaged_text)) - 100)  # in its last block
    to_damaged = link(store, damaged, scope=SCOPE, base_url="http://127.0.0.1")
    with TestClient(links_app(store)) as http:
        wire.clear()
        answer = http.get(path)  # held whole: one GET, what it read answers
        assert answer.content == utf8 and answer.headers["content-length"] == str(len(utf8))
        assert (wire.requests["GetObject"], wire.response_bytes["GetObject"]) == (1, stored)
        # Longer than a read holds: one streaming GET checks it all, a second serves it.
        monkeypatch.setattr(server, "MAX_HELD_BYTES", 64 * 1024)
        wire.clear()
        answer = http.get(path)
        assert answer.content == utf8 and answer.headers["content-length"] == str(len(utf8))
        assert (wire.requests["GetObject"], wire.response_bytes["GetObject"]) == (2, 2 * stored)
        wire.clear()
        answer = http.get(to_damaged.removeprefix("http://127.0.0.1"))
        assert (answer.status_code, answer.text) == (404, "Not Found")
        assert wire.requests["GetObject"] == 1  # nothing served, so no second read
        memory = MemoryClaimCheckStore()
        handle = memory.put(SCOPE, TEXT, ttl_seconds=60)
        memory_path = link(memory, handle, scope=SCOPE, base_url="http://127.0.0.1")
        with TestClient(links_app(memory)) as memory_http:
            answer = memory_http.get(memory_path.removeprefix("http://127.0.0.1"))
            assert answer.content == utf8 and answer.headers["content-length"] == str(len(utf8))


class _RewrittenAfterItsFirstRead(MemoryClaimCheckStore):
    """A store whose claims read once, then break after a piece: a claim rewritten between
    a whole read's check and its second read, as someone with the bucket's keys could."""

    def __init__(self) -> None:
        super().__init__()
        self.scans = 0

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        pieces = super().scan(scope, handle, check_in_id=check_in_id)
        self.scans += 1
        if self.scans == 1:
            return pieces

        def broken() -> Iterator[str]:
            yield next(pieces)
            raise ClaimStoreError("GetObject: the seal does not hold", reason="damaged")

        return broken()


def test_a_second_read_that_breaks_stops_short_of_its_length_in_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from s3claim.links import server

    monkeypatch.setattr(server, "MAX_HELD_BYTES", 1024)  # TEXT is read twice
    store = _RewrittenAfterItsFirstRead()
    handle = store.put(SCOPE, TEXT * 20, ttl_seconds=60)  # 2.4 M characters: 3 pieces
    sock = listen_socket("127.0.0.1", 0)
    running = uvicorn.Server(server_config(links_app(store)))  # uvicorn's logging set up
    uvicorn_said: list[logging.LogRecord] = []
    listener = _Kept(uvicorn_said)
    logging.getLogger("uvicorn.error").addHandler(listener)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        url = link(store, handle, scope=SCOPE, base_url=f"http://127.0.0.1:{sock.getsockname()[1]}")
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
            promised = int(response.headers["Content-Length"])
            assert promised == len((TEXT * 20).encode("utf-8"))
            with pytest.raises(http.client.IncompleteRead) as cut:
                response.read()
        assert 0 < len(cut.value.partial) < promised
    finally:
        running.should_exit = True
        thread.join(15)
        sock.close()
        logging.getLogger("uvicorn.error").removeHandler(listener)
    ours = [r.getMessage() for r in caplog.records if r.name == "s3claim.links"]
    assert ours == [f"link read: the stream of {handle} broke (ClaimStoreError)"]
    assert [r.getMessage() for r in uvicorn_said] == [
        "ASGI callable returned without completing response."
    ]
    assert not any(r.exc_info for r in [*caplog.records, *uvicorn_said])


class _Kept(logging.Handler):
    def __init__(self, kept: list[logging.LogRecord]) -> None:
        super().__init__()
        self.kept = kept

    def emit(self, record: logging.LogRecord) -> None:
        self.kept.append(record)


_ATOMS = (
    *("", "0", "1", "-1", "+1", " 1", "1.5", "1e3", "0x10", "٣", "²", "9" * 19, "9" * 5000),
    *("0" * 5000 + "1", "true", "%00", "%FF", "%E2%80%AE", "é", "/", "/items", "/items/1"),
    *("/items/-", "/items/01", "/items/" + "9" * 30, "/items/" + "9" * 5000, "/~2", "/~0~1"),
    *("/items/1/name/x", "/" + "a/" * 2000, "items", "/items/1/id"),
)
_KEYS = ("offset", "length", "line", "lines", "from_end", "path", "zz", "", "%00", "offset[]")
_RANGES = (
    *("bytes=0-0", "bytes=-0", "bytes=0-", "bytes=-", "bytes=5-3", "bytes=1-2,3-4", "items=0-1"),
    *("BYTES=0-1", "bytes = 0 - 1", "bytes=-99999999999999999999", "bytes=\t0-1", "", "bytes=-1"),
    *(f"bytes={'9' * 5000}-", f"bytes=0-{'9' * 5000}", "bytes=²-", "bytes=0-1-2", "bytes=a-b"),
)


def _odd_query(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        key, value = rng.choice(_KEYS), rng.choice(_ATOMS)
        parts.append(rng.choice((f"{key}={value}", f"{key}={value}", key, f"{key}=", f"={value}")))
    return "&".join(parts)


def _odd_token(rng: random.Random, good: str) -> str:
    alphabet = "ABCXYZabcxyz0189-_~.%!$&'()*+,;=:@"
    if rng.random() < 0.6:
        return good
    return rng.choice(
        (
            good[:-1],
            good + "A",
            good[:30] + rng.choice(alphabet) + good[31:],
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))),
            "A" * rng.choice((0, 1, 200, 20_000)),
            f"{good}/x",
            "%ff%fe",
            "../" + good,
        )
    )


def _odd_requests(rng: random.Random, text: str, records: str) -> Iterator[tuple[str, str | None]]:
    """(path and query, Range) to ask: every value in every mode and every Range once, on
    the right claim for it; then random mixes of odd tokens, queries and Ranges."""
    for value in _ATOMS:
        for key in ("offset", "length", "line", "lines", "from_end", "path"):
            yield f"/claims/{records if key == 'path' else text}?{key}={value}", None
    for each in _RANGES:
        yield f"/claims/{text}", each
    for _ in range(150):
        url = f"/claims/{_odd_token(rng, rng.choice((text, records)))}"
        query = _odd_query(rng)
        url = f"{url}?{query}" if query or rng.random() < 0.1 else url
        yield url, rng.choice(_RANGES) if rng.random() < 0.6 else None


def test_no_request_to_the_link_server_is_a_traceback_or_a_500(served: Served) -> None:
    """A bounded fuzz of the token, the query and the Range header, on both stores: every
    answer is one the module documents, in one line when it refuses."""
    rng = random.Random(46)
    allowed = {200, 206, 400, 404, 405, 416, 422}
    for store in (MemoryClaimCheckStore(), served.store):
        handles = [store.put(SCOPE, TEXT[:20_000], ttl_seconds=600)]
        handles.append(store.put(SCOPE, RECORDS, ttl_seconds=600))
        text, records = (
            link(store, h, scope=SCOPE, base_url="http://127.0.0.1").rsplit("/", 1)[1]
            for h in handles
        )
        with TestClient(links_app(store)) as http:  # a server exception raises here
            for url, asked in _odd_requests(rng, text, records):
                answer = http.get(url, headers={} if asked is None else {"Range": asked.encode()})
                said = (url[:120], asked and asked[:40], answer.status_code, answer.text[:120])
                assert answer.status_code in allowed, said
                assert answer.status_code < 400 or "\n" not in answer.text, said


# -- a link names one check-in (issue 46) ----------------------------------------------------

BASE = "http://127.0.0.1"
DOC = json.dumps({"items": [{"id": n, "name": f"récord {n}"} for n in range(40)]}, indent=1)
"""JSON of many lines: it has an index, so line and path reads go through it."""
READS: list[tuple[str, dict[str, str]]] = [
    ("", {}),
    ("", {"Range": "bytes=0-9"}),
    ("?offset=3&length=20", {}),
    ("?line=2&lines=1", {}),
    ("?line=100000", {}),  # past the last line: answered from the index alone
    ("?from_end&lines=1", {}),
    ("?path=/items/1", {}),
    ("?path=/nothing", {}),  # no such member: refused from the index alone
]
READ_STATUSES = [200, 206, 200, 200, 200, 200, 200, 422]
NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)


@pytest.fixture(params=["memory", "s3"])
def linkable(request: pytest.FixtureRequest) -> MemoryClaimCheckStore | S3ClaimCheckStore:
    """Each store a link server reads, on a clock of the test's own (S3: moto's server)."""
    clock = ManualClock(1_700_000_000)
    if request.param == "memory":
        return MemoryClaimCheckStore(clock=clock, handle_key=HandleKey(KEY))
    return S3ClaimCheckStore(
        request.getfixturevalue("bucket"),
        handle_key=KEY,
        client=request.getfixturevalue("s3"),
        clock=clock,
        retry=NO_WAIT,
    )


def _answers(store: Any, url: str) -> list[tuple[int, dict[str, str], bytes]]:
    """What the link server answers to each of `READS` of `url`, in-process."""
    path = url.removeprefix(BASE)
    with TestClient(links_app(store)) as http:
        answers = [http.get(path + query, headers=headers) for query, headers in READS]
    return [(a.status_code, _without_date(dict(a.headers)), a.content) for a in answers]


def _not_found(store: Any) -> tuple[int, dict[str, str], bytes]:
    """The answer to a token that names nothing: what every refused link must answer."""
    with TestClient(links_app(store)) as http:
        answer = http.get("/claims/not-a-token")
    return answer.status_code, _without_date(dict(answer.headers)), answer.content


def _reads(store: Any, url: str) -> bool:
    return [status for status, _, _ in _answers(store, url)] == READ_STATUSES


def _refused(store: Any, url: str) -> bool:
    return all(answer == _not_found(store) for answer in _answers(store, url))


def _forget(store: Any, erased: str) -> None:
    if erased == "tenant":
        store.forget(tenant=SCOPE.tenant)
    else:
        store.forget(tenant=SCOPE.tenant, run=SCOPE.run)


@pytest.mark.parametrize("erased", ["tenant", "run"])
def test_a_forgotten_link_stays_revoked_when_its_text_is_checked_in_again(
    linkable: MemoryClaimCheckStore | S3ClaimCheckStore, erased: str
) -> None:
    """Issue 46: the same text in the same run is the same handle, but not the same link."""
    store = linkable
    handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    url = link(store, handle, scope=SCOPE, base_url=BASE)
    assert _reads(store, url)
    _forget(store, erased)
    assert store.put(SCOPE, DOC, ttl_seconds=3600) == handle  # checked in again: same handle
    assert store.fetch(SCOPE, handle, 0, 10).text == DOC[:10]
    assert _refused(store, url)  # every mode, index-only answers included: the one 404
    assert _reads(store, link(store, handle, scope=SCOPE, base_url=BASE))  # a new link reads


def test_a_link_reads_on_through_refreshes_of_its_claim_until_it_is_forgotten(
    linkable: MemoryClaimCheckStore | S3ClaimCheckStore,
) -> None:
    store, clock = linkable, linkable.clock
    assert isinstance(clock, ManualClock)
    handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    url = link(store, handle, scope=SCOPE, base_url=BASE, ttl_seconds=3000)
    for _ in range(2):  # each a refresh: a repeat put that extends the claim's life
        clock.advance(600)
        assert store.put(SCOPE, DOC, ttl_seconds=3600) == handle
        assert _reads(store, url)
    store.forget(tenant=SCOPE.tenant, run=SCOPE.run)
    store.put(SCOPE, DOC, ttl_seconds=3600)
    assert _refused(store, url)


def _other_instance(store: S3ClaimCheckStore, moto_endpoint: str) -> tuple[S3ClaimCheckStore, Wire]:
    """Another process's view of the same claims: its own client, on the same bucket and key."""
    client = moto_client(moto_endpoint)
    other = S3ClaimCheckStore(
        store.bucket.name,
        handle_key=KEY,
        client=client,
        clock=store.clock,
        retry=NO_WAIT,
    )
    return other, Wire.attach(client)


def test_a_refresh_from_another_process_keeps_the_link_and_the_longer_expiry(
    s3: Any, bucket: str, moto_endpoint: str
) -> None:
    clock = ManualClock(1_700_000_000)
    store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3, clock=clock, retry=NO_WAIT)
    handle = store.put(SCOPE, DOC, ttl_seconds=7200, tool="first_tool")
    url = link(store, handle, scope=SCOPE, base_url=BASE, ttl_seconds=3600)
    other, wire = _other_instance(store, moto_endpoint)
    clock.advance(100)
    assert other.put(SCOPE, DOC, ttl_seconds=60, tool="second_tool") == handle
    # 412 for both objects (neither overwritten), the HEAD that reads the check-in and the
    # expiry standing, then each object's in-place copy keeping them
    assert dict(wire.requests) == {"PutObject": 2, "HeadObject": 1, "CopyObject": 2}
    clock.advance(120)  # past the other process's 60 s: the first check-in's 7,200 s stand
    assert _reads(store, url) and _reads(other, url)
    (listed,) = store.claims(tenant=SCOPE.tenant)
    assert listed.expires_at == 1_700_000_000 + 7200 and listed.tool == "first_tool"
    other.forget(tenant=SCOPE.tenant)
    other.put(SCOPE, DOC, ttl_seconds=60)
    assert _refused(store, url)


def test_a_link_read_costs_what_it_did_and_a_refused_one_no_more(
    s3: Any, bucket: str, moto_endpoint: str
) -> None:
    wire = Wire.attach(s3)
    store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3, retry=NO_WAIT)
    handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    wire.requests.clear()
    url = link(store, handle, scope=SCOPE, base_url=BASE)
    assert dict(wire.requests) == {"HeadObject": 1}  # the link's one metadata read
    path = url.removeprefix(BASE)
    with TestClient(links_app(store)) as http:
        for query in ("", "?offset=3&length=20", "?from_end&lines=1"):
            wire.requests.clear()
            assert http.get(path + query).status_code == 200
            assert dict(wire.requests) == {"GetObject": 1}, query
        store.forget(tenant=SCOPE.tenant)
        store.put(SCOPE, DOC, ttl_seconds=3600)
        for query in ("", "?offset=3&length=20", "?from_end&lines=1"):
            wire.requests.clear()
            assert http.get(path + query).status_code == 404
            assert dict(wire.requests) == {"GetObject": 1}, query  # refused on its own answer


@pytest.mark.parametrize("erased", ["tenant", "run"])
def test_a_link_to_a_hand_off_copy_ends_with_that_copy(
    linkable: MemoryClaimCheckStore | S3ClaimCheckStore, erased: str
) -> None:
    """A hand-off copy is a check-in of its own: erased with its run, a new copy is new."""
    store = linkable
    child_scope = Scope(SCOPE.tenant, "sub-agent-run")
    handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    child = store.hand_off(SCOPE, handle, to=child_scope, ttl_seconds=3600)
    url = link(store, child, scope=child_scope, base_url=BASE)
    assert _reads(store, url)
    if erased == "tenant":
        store.forget(tenant=SCOPE.tenant)
        handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    else:
        store.forget(tenant=SCOPE.tenant, run=child_scope.run)
    assert store.hand_off(SCOPE, handle, to=child_scope, ttl_seconds=3600) == child
    assert _refused(store, url)


def test_a_claim_written_before_check_in_ids_reads_by_fetch_and_by_link(
    s3: Any, bucket: str
) -> None:
    """The previous version wrote no check-in id: such objects read, and links to them read
    as they did (there is no check-in to hold them to)."""
    store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3, retry=NO_WAIT)
    handle = store.put(SCOPE, DOC, ttl_seconds=3600)
    layout = store.layout
    for key in (layout.object_key(SCOPE, handle), layout.index_key(SCOPE, handle)):
        found = s3.head_object(Bucket=bucket, Key=key)
        fields = {k: v for k, v in found["Metadata"].items() if k != "s3claim-mac"}
        assert fields.pop("s3claim-check-in")  # written now, and taken out again
        s3.copy_object(
            Bucket=bucket,
            Key=key,
            CopySource={"Bucket": bucket, "Key": key},
            MetadataDirective="REPLACE",
            ContentType=found["ContentType"],
            Metadata=layout.seal(key).metadata(fields),
        )
    assert store.fetch(SCOPE, handle, 5, 30).text == DOC[5:35]
    lines = DOC.splitlines(keepends=True)
    window = store.read_line(SCOPE, handle, 3, limit=100).text
    assert window.startswith(lines[2]) and "".join(lines[2:]).startswith(window)
    url = link(store, handle, scope=SCOPE, base_url=BASE)
    opened = LinkKey(store.handle_key).open(url.rsplit("/", 1)[1])
    assert opened is not None and opened.check_in_id is None
    assert _reads(store, url)


def test_a_token_carries_its_check_in_and_older_tokens_do_not_open() -> None:
    key = LinkKey(HandleKey(KEY))
    handle = MemoryClaimCheckStore().put(SCOPE, "x", ttl_seconds=60)
    for check_in_id in ("0123456789abcdef", None):
        token = key.seal(Link(handle, SCOPE, 2_000_000_000, check_in_id))
        assert key.open(token) == Link(handle, SCOPE, 2_000_000_000, check_in_id)
    token = key.seal(Link(handle, SCOPE, 2_000_000_000, "0123456789abcdef"))
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[0] = 1  # the version before check-ins, its tag made again so only the version differs
    raw[-16:] = key._tag(bytes(raw[:-16]))
    assert key.open(base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()) is None
