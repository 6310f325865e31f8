"""Measure 6: the peak memory one fetch allocates (tracemalloc), s3claim against naive.

The server is a child process (s3rver, or moto in a child process): tracemalloc sees only this
process, so an in-process server's copy of the object would pollute the figure. Tracing
starts after a warm-up fetch (connections open, code loaded), so the peak is the fetch's own.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_ratio
from devkit.documents import CHARSETS, document, label
from s3claim.scope import Scope

__all__ = ["run"]

SCOPE = Scope(tenant="bench", run="memory")


def _peak(target: Any, handle: str, offset: int) -> int:
    target.fetch(SCOPE, handle, offset=offset)
    gc.collect()
    tracemalloc.start()
    try:
        target.fetch(SCOPE, handle, offset=offset)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def run(bench: Bench) -> Section:
    chars = bench.profile.memory_chars
    rows: list[list[str]] = []
    peaks: list[str] = []
    for charset in CHARSETS:
        text = document(chars, charset)
        utf8 = len(text.encode("utf-8"))
        client, bucket, store, naive = bench.stores(bench.timing)
        try:
            ours = _peak(store, store.put(SCOPE, text, ttl_seconds=TTL), chars // 2)
            theirs = _peak(naive, naive.put(SCOPE, text, ttl_seconds=TTL), chars // 2)
        finally:
            empty_bucket(client, bucket)
        del text
        peaks.append(
            f"{'ASCII' if charset == 'ascii' else 'mixed UTF-8'} {fmt_bytes(ours)} for s3claim "
            f"against {fmt_bytes(theirs)} naive ({fmt_ratio(theirs / ours)} less)"
        )
        rows.append(
            [
                "ASCII" if charset == "ascii" else "mixed UTF-8",
                f"{fmt_bytes(4 * chars)} / {fmt_bytes(utf8)}",
                fmt_bytes(ours),
                fmt_bytes(theirs),
                fmt_ratio(theirs / ours),
            ]
        )
    return Section(
        title="Memory of one fetch",
        intro=(
            f"tracemalloc's peak during one fetch of a middle window of a {label(chars)}-"
            f"character document from {bench.timing.name}."
        ),
        tables=[
            Table(
                headers=[
                    "text",
                    "objects (s3claim / naive)",
                    "s3claim peak",
                    "naive peak",
                    "naive / s3claim",
                ],
                rows=rows,
            )
        ],
        notes=[
            "s3claim's peak is the 16 KiB window, its decoded text and botocore's request and "
            "response objects; the naive store holds the whole body and its decoded text at "
            "once.",
        ],
        headlines=[
            f"Peak memory of one fetch from a {label(chars)}-character document: "
            + "; ".join(peaks)
            + ".",
        ],
    )
