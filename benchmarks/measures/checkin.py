"""Measure: what a check-in adds to the tool call whose result it stores.

A check-in is the S3 store's `put` of the tool's result: the text hashed into its handle,
sealed, and sent. It happens inside the tool call, before the model's next turn, so it is
reported as milliseconds and as a share of one model turn, over https as a deployed agent
sends it, to s3rver (a child process on 127.0.0.1, the page's timing server) on a
self-signed certificate made at start. Not to moto's server: its TLS server (werkzeug's)
answers every request after a fixed delay many times a small put's own time over its plain
http, which would be the server's figure, not the check-in's. Only the public API is used:
what is timed is what an application pays.
"""

from __future__ import annotations

import subprocess
import uuid
from functools import partial
from typing import Any

from benchmarks.context import TTL, Bench
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, median, time_once
from devkit.documents import CHARSETS, NAMES, document
from devkit.servers import Endpoint, S3rver, S3rverUnavailable, make_client
from devkit.third_party import NpmUnavailable
from s3claim import RetryPolicy, S3ClaimCheckStore, Scope

__all__ = ["TURN_SECONDS", "run"]

TURN_SECONDS = 2.0
"""The model turn a check-in is set against: an assumption (a short reply from a hosted
model), not a measurement."""


def _server(bench: Bench) -> tuple[Endpoint, Any, str | None]:
    """s3rver on https and a client that trusts it (stop it after); if TLS fails, the timing
    server on plain http (the harness stops it), and why."""
    try:
        server = S3rver(tls=True)
    except (S3rverUnavailable, NpmUnavailable, OSError, subprocess.SubprocessError) as exc:
        return bench.timing, make_client(bench.timing), f"{type(exc).__name__}: {exc}"
    try:
        client = make_client(server)
        client.list_buckets()
        return server, client, None
    except Exception as exc:  # any TLS failure: time over http rather than not at all
        server.stop()
        return bench.timing, make_client(bench.timing), f"{type(exc).__name__}: {exc}"


def _check_in(store: S3ClaimCheckStore, text: str, repeats: int) -> float:
    """Median seconds of `put`, each into a run of its own (a put the same run holds already
    sends nothing), the run forgotten after each (untimed): the server holds one text."""
    times: list[float] = []
    for i in range(-1, repeats):  # the first, untimed: a connection opened, code warm
        scope = Scope("bench", f"checkin-{uuid.uuid4().hex[:8]}")
        seconds = time_once(partial(store.put, scope, text, ttl_seconds=TTL))
        if i >= 0:
            times.append(seconds)
        store.forget(tenant="bench", run=scope.run)
    return median(times)


def run(bench: Bench) -> Section:
    server, client, why = _server(bench)
    rows: list[list[str]] = []
    ascii_ms: list[str] = []
    try:
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=bucket)
        retry = RetryPolicy(initial_wait=0, max_wait=0)
        store = S3ClaimCheckStore(bucket, handle_key=bench.key, client=client, retry=retry)
        for chars in bench.profile.checkin_sizes:
            repeats = 5 if chars > 1_000_000 else bench.profile.fetch_repeats
            for charset in CHARSETS:
                text = document(chars, charset)
                seconds = _check_in(store, text, repeats)
                share = f"{100 * seconds / TURN_SECONDS:.1f}%"
                rows.append(
                    [
                        f"{chars:,}",
                        NAMES[charset],
                        f"{len(text.encode('utf-8')):,}",
                        str(repeats),
                        fmt_ms(seconds),
                        share,
                    ]
                )
                if charset == "ascii":
                    ascii_ms.append(f"{fmt_ms(seconds)} for {chars:,} characters ({share})")
    finally:
        if why is None:
            server.stop()
    scheme = "http (TLS could not be started)" if why else "https"
    notes = [f"TLS could not be started ({why}), so this was timed over plain http."] if why else []
    return Section(
        title="Check-in",
        intro=(
            "`S3ClaimCheckStore.put` of a tool result (ASCII text, and the mixed text with "
            "emoji, which the store keeps at 4 bytes a character), each into a run of its own "
            f"so that each one writes, over {scheme} to {server.name} on 127.0.0.1, after one "
            "untimed put (the connection open, as an agent's client keeps it). Median of the "
            "repeats shown. A check-in runs inside the tool call, before the model's next "
            f"turn: its share is of one turn of {TURN_SECONDS:g} s, an assumption (a short "
            "reply from a hosted model), not a measurement. No budget: what a check-in adds is "
            "reported, not held against a put of the same bytes."
        ),
        tables=[
            Table(
                title=f"One check-in over {scheme}",
                headers=[
                    "characters",
                    "text",
                    "UTF-8 bytes",
                    "repeats",
                    "check-in",
                    f"of a {TURN_SECONDS:g} s turn",
                ],
                rows=rows,
                align_left=2,
            )
        ],
        notes=notes,
        headlines=[
            f"Check-in over {scheme} on loopback adds " + ", ".join(ascii_ms) + " of ASCII "
            f"text to its tool call (the share: of a {TURN_SECONDS:g} s model turn, assumed).",
        ],
    )
