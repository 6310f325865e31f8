"""Measure: reading a log by line, from its end, and with a limit (`fetch_result(line=...)`,
`from_end=true`, `limit=...`).

1. Reads: requests and bytes of one read on S3 (moto, counted on the wire) by line at the
   start, middle and end of the log, from the end, and with small limits, beside the naive
   store's whole download of the object, which every read of it costs.
2. The model's side: characters that enter the context to find the log's final error, the
   answer of every `fetch_result` call counted whole (footers and notes included). `from_end`
   is one call; an offset read needs the length from the marker first; paging from the start
   is what a model does that has only the spec's offset reads and no idea where the error is.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ratio
from devkit.documents import MiB
from devkit.servers import Wire
from s3claim import ClaimCheck
from s3claim.hosting import Host
from s3claim.memory import MemoryClaimCheckStore
from s3claim.scope import Scope
from s3claim.tools import RunContext
from s3claim.wording import CONTINUE_SEEN

__all__ = ["run", "service_log"]

FINAL_ERROR = "ERROR payment-service: upstream timed out after 30000 ms"
BUDGET_LINE_GETS = 2


def service_log(chars: int) -> str:
    """An application log of about `chars` characters: INFO lines of varied length, a WARN
    now and then, and at the end the final error with its stack trace."""
    trace = (
        f"2026-03-01T12:59:59.999Z {FINAL_ERROR}\n"
        "Traceback (most recent call last):\n"
        + "".join(
            f'  File "/srv/app/handlers/step_{n}.py", line {n * 7}, in handle\n'
            f"    return await next_step(request)\n"
            for n in range(1, 18)
        )
        + "TimeoutError: upstream timed out\n"
    )
    lines: list[str] = []
    size, n = 0, 0
    while size < chars - len(trace):
        n += 1
        level = "WARN" if n % 97 == 0 else "INFO"
        line = (
            f"2026-03-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z "
            f"{level} worker-{n % 8} request id={n:08d} path=/api/v1/items/{n % 5000} "
            f"status=200 ms={n % 250}" + " extra=" + "x" * (n % 60) + "\n"
        )
        lines.append(line)
        size += len(line)
    return "".join(lines)[: chars - len(trace)] + "\n" + trace


def _reads(store: Any, naive: Any, wire: Wire, text: str) -> tuple[list[list[str]], list[str]]:
    scope = Scope(tenant="bench", run=f"lines-{uuid.uuid4().hex[:8]}")
    handle = store.put(scope, text, ttl_seconds=TTL)
    naive_handle = naive.put(scope, text, ttl_seconds=TTL)
    lines = text.count("\n") + (not text.endswith("\n"))  # a line ends at a break
    wire.clear()
    naive.fetch(scope, naive_handle, 0, 4096)
    whole_requests, whole_bytes = wire.total_requests, wire.total_response_bytes
    cases: list[tuple[str, Callable[[], Any], bool]] = [
        ("line=1", partial(store.read_line, scope, handle, 1, limit=4096), True),
        ("line=2", partial(store.read_line, scope, handle, 2, limit=4096), True),
        (
            f"line={lines // 2:,} (middle)",
            partial(store.read_line, scope, handle, lines // 2, limit=4096),
            True,
        ),
        (
            f"line={lines:,} (last)",
            partial(store.read_line, scope, handle, lines, limit=4096),
            True,
        ),
        ("line=N, limit=200", partial(store.read_line, scope, handle, lines // 3, limit=200), True),
        ("from_end, limit=4096", partial(store.read_end, scope, handle, limit=4096), False),
        ("from_end, limit=2000", partial(store.read_end, scope, handle, limit=2000), False),
        ("offset, limit=200", partial(store.fetch, scope, handle, len(text) // 2, 200), False),
    ]
    rows: list[list[str]] = []
    failures: list[str] = []
    for name, read, by_line in cases:
        wire.clear()
        window = read()
        requests, got = wire.total_requests, wire.total_response_bytes
        rows.append(
            [
                name,
                fmt_int(len(window.text)),
                fmt_int(requests),
                fmt_bytes(got),
                fmt_int(whole_requests),
                fmt_bytes(whole_bytes),
                fmt_ratio(whole_bytes / max(got, 1)),
            ]
        )
        if by_line and requests > BUDGET_LINE_GETS:
            failures.append(f"{name}: {requests} requests (budget {BUDGET_LINE_GETS})")
        if name.startswith("from_end") and requests != 1:
            failures.append(f"{name}: {requests} requests (budget 1)")
    return rows, failures


def _model_side(text: str) -> list[list[str]]:
    """Characters into the context to find the final error, per strategy (memory store: the
    same answers as S3's, and paging from the start is thousands of calls)."""
    store = MemoryClaimCheckStore()
    scope = Scope(tenant="bench", run="lines-model")
    handle = store.put(scope, text, ttl_seconds=TTL)
    host = Host(ClaimCheck(store))
    context = RunContext(scope=scope, agent="ops", emit=lambda event: None)

    def call(arguments: dict[str, Any]) -> str:
        return host.run("fetch_result", {"handle": handle, **arguments}, context).text

    rows: list[list[str]] = []
    for name, arguments in (
        ("from_end=true", {"from_end": True}),
        ("from_end=true, limit=2000", {"from_end": True, "limit": 2000}),
        ("offset = length - 4096 (from the marker)", {"offset": len(text) - 4096}),
    ):
        answer = call(arguments)
        rows.append([name, "1", fmt_int(len(answer)), "yes" if FINAL_ERROR in answer else "no"])
    seen, calls, offset, found = 0, 0, 0, False
    while True:  # paging from the start until the error is in view
        answer = call({"offset": offset})
        calls, seen = calls + 1, seen + len(answer)
        if FINAL_ERROR in answer:
            found = True
            break
        more = CONTINUE_SEEN.search(answer)
        if more is None:
            break
        offset = int(more.group(1))
    rows.append(["offset paging from 0", fmt_int(calls), fmt_int(seen), "yes" if found else "no"])
    return rows


def run(bench: Bench) -> Section:
    text = service_log(bench.profile.memory_chars)  # 64 Mi characters in the full profile
    client, bucket, store, naive = bench.stores(bench.moto)
    wire = Wire.attach(client)
    try:
        reads, failures = _reads(store, naive, wire, text)
    finally:
        empty_bucket(client, bucket)
    model = _model_side(text)
    middle = next(r for r in reads if "(middle)" in r[0])
    tail = next(r for r in reads if r[0] == "from_end, limit=4096")
    headlines = [
        f"Reading by line and from the end ({len(text) / MiB:,.0f} Mi-character log): any "
        f"line in {middle[2]} GETs, {middle[3]}; the last window in {tail[2]} GET, {tail[3]} "
        f"(a whole download: {tail[5]})",
    ]
    return Section(
        title="Reading by line and from the end",
        intro=__doc__.split("\n\n", 1)[1] if __doc__ else "",
        tables=[
            Table(
                title="One read on S3 beside the naive whole download (budget: a line in 2 GETs)",
                headers=[
                    "read",
                    "characters",
                    "requests",
                    "bytes",
                    "naive requests",
                    "naive bytes",
                    "fewer bytes",
                ],
                rows=reads,
            ),
            Table(
                title="Characters into the context to find the log's final error",
                headers=["strategy", "tool calls", "characters read", "error found"],
                rows=model,
            ),
        ],
        headlines=headlines,
        budget_failures=failures,
    )
