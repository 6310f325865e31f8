"""Measure 2: check-in throughput as the document grows, and what the head costs.

A check-in is `ClaimCheck.check_in`: hash the content into a handle, store it, cut the head.
Each timed repeat uses a new run, so every repeat really writes (a repeat in the same run is
free by design and would measure nothing). The head is timed on its own: it reads only the
first `head_chars + 1` characters, so it must not grow with the document; the SHA-256 behind
the handle must, and is shown beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.documents import CHARSETS, document, label
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, fmt_ratio, median, time_once
from s3claim.claimcheck import ClaimCheck
from s3claim.handles import content_digest
from s3claim.head import extract_head
from s3claim.memory import MemoryClaimCheckStore
from s3claim.policy import ClaimCheckPolicy
from s3claim.scope import Scope

__all__ = ["run"]

_HEAD_REPEATS = 51


def _throughput(utf8_bytes: int, seconds: float) -> str:
    return f"{utf8_bytes / seconds / 1e6:,.0f} MB/s"


def _timed_puts(put: Callable[[int], object], repeats: int) -> float:
    put(-1)  # untimed: connections open, code warm
    return median([time_once(partial(put, i)) for i in range(repeats)])


@dataclass(frozen=True)
class _Row:
    utf8_bytes: int
    memory: float
    s3: float
    naive: float
    head: float
    digest: float


def _measure(bench: Bench, text: str, policy: ClaimCheckPolicy) -> _Row:
    repeats = bench.profile.checkin_repeats(len(text))
    memory = ClaimCheck(MemoryClaimCheckStore(), policy=policy)
    t_memory = _timed_puts(
        lambda i: memory.check_in(text, tool="t", scope=Scope("bench", f"m{i}")), repeats
    )
    client, bucket, store, naive = bench.stores(bench.moto)
    try:
        claimed = ClaimCheck(store, policy=policy)
        t_s3 = _timed_puts(
            lambda i: claimed.check_in(text, tool="t", scope=Scope("bench", f"s{i}")), repeats
        )
        t_naive = _timed_puts(
            lambda i: naive.put(Scope("bench", f"n{i}"), text, ttl_seconds=TTL), repeats
        )
    finally:
        empty_bucket(client, bucket)
    heads = [time_once(lambda: extract_head(text, policy.head_chars)) for _ in range(_HEAD_REPEATS)]
    digests = [time_once(lambda: content_digest(text)) for _ in range(3)]
    return _Row(len(text.encode("utf-8")), t_memory, t_s3, t_naive, median(heads), median(digests))


def run(bench: Bench) -> Section:
    policy = ClaimCheckPolicy()
    rows: list[list[str]] = []
    head_rows: list[list[str]] = []
    s3_rates: list[float] = []
    head_times: list[float] = []
    for chars in bench.profile.checkin_sizes:
        for charset in CHARSETS:
            r = _measure(bench, document(chars, charset), policy)
            s3_rates.append(r.utf8_bytes / r.s3)
            head_times.append(r.head)
            name = "ASCII" if charset == "ascii" else "mixed UTF-8"
            rows.append(
                [
                    label(chars),
                    name,
                    fmt_ms(r.memory),
                    _throughput(r.utf8_bytes, r.memory),
                    fmt_ms(r.s3),
                    _throughput(r.utf8_bytes, r.s3),
                    fmt_ms(r.naive),
                    _throughput(r.utf8_bytes, r.naive),
                    fmt_ratio(r.s3 / r.naive),
                ]
            )
            head_rows.append([label(chars), name, fmt_ms(r.head), fmt_ms(r.digest)])
    sizes = bench.profile.checkin_sizes
    return Section(
        title="2. Check-in",
        intro=(
            "`ClaimCheck.check_in` of one document: SHA-256 for the handle, the store's put, "
            "the head. Median of "
            f"{bench.profile.fetch_repeats} check-ins (3 at 16 Mi characters and above), each "
            "into a new run so that each one writes. On S3 the put is one PutObject of the "
            "UTF-32-LE body to moto's server; the naive put is one PutObject of the UTF-8 body "
            "to the same server, shown for the cost of the wider encoding. MB/s are of UTF-8 "
            "input (10^6 bytes)."
        ),
        tables=[
            Table(
                title="Check-in time and throughput",
                headers=[
                    "document",
                    "text",
                    "memory store",
                    "memory MB/s",
                    "S3 (moto)",
                    "S3 MB/s",
                    "naive put (moto)",
                    "naive MB/s",
                    "s3claim / naive time",
                ],
                rows=rows,
                align_left=2,
            ),
            Table(
                title=f"Head extraction (head_chars={policy.head_chars}, median of "
                f"{_HEAD_REPEATS}) beside the SHA-256 of the whole document",
                headers=["document", "text", "extract_head", "SHA-256 (content_digest)"],
                rows=head_rows,
                align_left=2,
            ),
        ],
        notes=[
            f"The head takes {fmt_ms(min(head_times))}–{fmt_ms(max(head_times))} from "
            f"{label(sizes[0])} to {label(sizes[-1])} characters: flat. The hash, linear in "
            "the document, is the only part of a check-in besides the put that grows.",
        ],
        headlines=[
            f"Check-in to S3 (moto, over HTTP) of a {label(sizes[-1])}-character document: "
            f"{median(s3_rates[-2:]) / 1e6:,.0f} MB/s (median of ASCII and mixed UTF-8); head "
            f"extraction stays at {fmt_ms(median(head_times))} whatever the size.",
        ],
    )
