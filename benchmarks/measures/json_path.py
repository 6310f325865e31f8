"""Measure: reading a JSON claim by path (`fetch_result(handle, path=...)`).

Requests and bytes of one read by path on S3 (moto, counted on the wire) for pointers at the
start, middle and end of two documents: a list of records, and botocore's endpoints.json
repeated (deeply nested). The budget: at most 3 ranged GETs and 64 KiB beside the answer's
own window. What the check-in of a JSON claim sends beside it is in the check-in's
request count (one more PUT, its structure index); its time is not measured apart.
"""

from __future__ import annotations

import uuid

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int
from devkit.documents import MiB, nested, nested_pointers, record_pointers, records
from devkit.servers import Wire
from s3claim.s3 import S3ClaimCheckStore
from s3claim.scope import Scope

__all__ = ["run"]

BUDGET_GETS = 3
BUDGET_BYTES = 64 * 1024


def _reads(
    store: S3ClaimCheckStore, wire: Wire, name: str, text: str
) -> tuple[list[list[str]], list[str], tuple[int, int]]:
    """One document's read rows, the budgets it missed, and its most requests and bytes
    beside the window."""
    scope = Scope(tenant="bench", run=f"json-{uuid.uuid4().hex[:8]}")
    handle = store.put(scope, text, ttl_seconds=TTL)
    top = store.read_path(scope, handle, "")
    if name == "records":
        pointers = record_pointers(top.member_count)
    else:
        pointers = nested_pointers(store.read_path(scope, handle, "/partitions").member_count)
    reads: list[list[str]] = []
    failures: list[str] = []
    worst = (0, 0)
    for pointer in pointers:
        wire.clear()
        answer = store.read_path(scope, handle, pointer)
        got = wire.total_response_bytes
        beside = got - len(answer.text)  # ASCII: a byte a character
        worst = (max(worst[0], wire.total_requests), max(worst[1], beside))
        reads.append(
            [
                f"{name} ({len(text) / MiB:,.0f} Mi)",
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
    return reads, failures, worst


def run(bench: Bench) -> Section:
    chars = bench.profile.memory_chars  # 64 Mi characters in the full profile
    reads: list[list[str]] = []
    failures: list[str] = []
    worst = (0, 0)
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    try:
        for name, make in (("records", records), ("endpoints.json, repeated", nested)):
            rows, missed, most = _reads(store, wire, name, make(chars))
            reads += rows
            failures += missed
            worst = (max(worst[0], most[0]), max(worst[1], most[1]))
    finally:
        empty_bucket(client, bucket)
    return Section(
        title="Reading JSON by path",
        intro=__doc__.split("\n\n", 1)[1] if __doc__ else "",
        tables=[
            Table(
                title="One read by path on S3 (budget: 3 GETs, 64 KiB beside the window)",
                headers=["document", "pointer", "type", "requests", "bytes", "beside window"],
                rows=reads,
                align_left=3,
            ),
        ],
        headlines=[
            f"Reading JSON by path ({chars / MiB:,.0f} Mi characters): any pointer in at most "
            f"{worst[0]} ranged GETs (budget {BUDGET_GETS}) and {fmt_bytes(worst[1])} beside "
            f"the answer's window (budget {fmt_bytes(BUDGET_BYTES)})."
        ],
        budget_failures=failures,
    )
