"""Measure: reading a JSON claim by path (`fetch_result(handle, path=...)`).

1. Check-in: the structure index is built in one pass as the claim is stored. Timed on its
   own, beside `json.loads` of the same text (what any index must at least read), and as the
   S3 store's whole put against the same text put as plain text (one character that makes it
   not JSON), on moto; the index's size per MiB of JSON.
2. Reads: requests and bytes of one read by path on S3 (moto, counted on the wire) for
   pointers at the start, middle and end of two documents: a list of records, and botocore's
   endpoints.json repeated (deeply nested). The budget: at most 3 ranged GETs and 64 KiB
   beside the answer's own window.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from functools import partial

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, fmt_ratio
from devkit.documents import MiB, nested, nested_pointers, record_pointers, records
from devkit.servers import Wire
from s3claim._json_index import HEAD_BYTES, build_index, parse_head
from s3claim.s3 import S3ClaimCheckStore
from s3claim.scope import Scope

__all__ = ["run"]

BUDGET_GETS = 3
BUDGET_BYTES = 64 * 1024


def _seconds(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def _document(
    bench: Bench, store: S3ClaimCheckStore, wire: Wire, name: str, text: str
) -> tuple[list[str], list[list[str]], list[str], str]:
    """One document: its check-in row, its read rows, budget failures, a headline."""
    mib = len(text) / MiB
    index = build_index(text)
    assert index is not None
    head = parse_head(index[:HEAD_BYTES])
    build_s = _seconds(partial(build_index, text))
    loads_s = _seconds(partial(json.loads, text))
    scope = Scope(tenant="bench", run=f"json-{uuid.uuid4().hex[:8]}")
    put_s = _seconds(partial(store.put, scope, text, ttl_seconds=TTL))
    handle = store.put(scope, text, ttl_seconds=TTL)  # known to this process: sends nothing
    plain = Scope(tenant="bench", run=f"text-{uuid.uuid4().hex[:8]}")
    # the same size and width, not JSON (no index): what the put cost before
    plain_s = _seconds(partial(store.put, plain, "x" + text[1:], ttl_seconds=TTL))
    checkin = [
        name,
        f"{mib:,.1f} Mi",
        fmt_ms(build_s),
        fmt_ms(loads_s),
        fmt_ms(put_s),
        fmt_ms(plain_s),
        fmt_ratio(put_s / plain_s),
        fmt_bytes(len(index)),
        fmt_bytes(len(index) / mib),
        fmt_int(len(head.nodes)),
        fmt_bytes(head.small_chars),
    ]
    top = store.read_path(scope, handle, "")
    if name == "records":
        pointers = record_pointers(top.member_count)
    else:
        pointers = nested_pointers(store.read_path(scope, handle, "/partitions").member_count)
    reads: list[list[str]] = []
    failures: list[str] = []
    for pointer in pointers:
        wire.clear()
        answer = store.read_path(scope, handle, pointer)
        got = wire.total_response_bytes
        beside = got - len(answer.text)  # ASCII: a byte a character
        reads.append(
            [
                name,
                f"`{pointer}`" if pointer else "(the document)",
                answer.kind,
                fmt_int(wire.total_requests),
                fmt_bytes(got),
                fmt_bytes(beside),
            ]
        )
        if wire.total_requests > BUDGET_GETS or beside > BUDGET_BYTES:
            failures.append(
                f"{name} {pointer!r}: {wire.total_requests} requests, {beside} bytes beside "
                "the window"
            )
    headline = (
        f"Path index, {name} ({mib:,.0f} Mi characters): built in {fmt_ms(build_s)} "
        f"(json.loads: {fmt_ms(loads_s)}), {fmt_bytes(len(index) / mib)} per MiB"
    )
    return checkin, reads, failures, headline


def run(bench: Bench) -> Section:
    chars = bench.profile.memory_chars  # 64 Mi characters in the full profile
    checkins: list[list[str]] = []
    reads: list[list[str]] = []
    failures: list[str] = []
    headlines: list[str] = []
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    try:
        for name, make in (("records", records), ("endpoints.json, repeated", nested)):
            row, read_rows, missed, headline = _document(bench, store, wire, name, make(chars))
            checkins.append(row)
            reads += read_rows
            failures += missed
            headlines.append(headline)
    finally:
        empty_bucket(client, bucket)
    return Section(
        title="Reading JSON by path",
        intro=__doc__.split("\n\n", 1)[1] if __doc__ else "",
        tables=[
            Table(
                title="Check-in with the structure index (S3 store on moto)",
                headers=[
                    "document",
                    "characters",
                    "index build",
                    "json.loads",
                    "S3 put, JSON",
                    "S3 put, same text not JSON",
                    "ratio",
                    "index",
                    "index per MiB",
                    "nodes",
                    "read whole below",
                ],
                rows=checkins,
            ),
            Table(
                title="One read by path on S3 (budget: 3 GETs, 64 KiB beside the window)",
                headers=["document", "pointer", "type", "requests", "bytes", "beside window"],
                rows=reads,
                align_left=3,
            ),
        ],
        headlines=headlines,
        budget_failures=failures,
    )
