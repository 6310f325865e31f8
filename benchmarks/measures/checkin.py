"""Measure 2: check-in throughput as the document grows, and what the head costs.

A check-in is `ClaimCheck.check_in`: hash the content into a handle, store it, cut the head.
Beside it, to the same server: the naive put (the UTF-8 body) and format 1's (UTF-32-LE, the
width every claim was stored at before format 2).
Each timed repeat uses a new run, so every repeat really writes (a repeat in the same run is
free by design and would measure nothing). The head is timed on its own: it reads only the
first `head_chars + 1` characters, so it must not grow with the document; the content digest
behind the handle must, and is shown beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from benchmarks.context import TTL, Bench, alternating_puts
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, median, time_once
from devkit.documents import CHARSETS, MiB, document, label
from devkit.servers import Endpoint
from s3claim._head import extract_head
from s3claim.claimcheck import ClaimCheck
from s3claim.handles import content_digest
from s3claim.memory import MemoryClaimCheckStore
from s3claim.policy import ClaimCheckPolicy
from s3claim.scope import Scope

__all__ = ["run"]

_HEAD_REPEATS = 51


def _throughput(utf8_bytes: int, seconds: float) -> str:
    rate = utf8_bytes / seconds / 1e6
    return f"{rate:,.0f} MB/s" if rate >= 10 else f"{rate:.1f} MB/s"


def _timed_puts(put: Callable[[int], object], repeats: int) -> float:
    put(-1)  # untimed: connections open, code warm
    return median([time_once(partial(put, i)) for i in range(repeats)])


@dataclass(frozen=True)
class _Row:
    utf8_bytes: int
    memory: float
    s3: dict[str, tuple[float, float, float]]
    """Server name -> (s3claim check-in, naive UTF-8 put, UTF-32-LE put) seconds."""
    rounds: dict[str, list[float]]
    """Server name -> naive put / check-in seconds, round by round (the spread)."""
    head: float
    digest: float


def _on_server(
    bench: Bench, endpoint: Endpoint, text: str, policy: ClaimCheckPolicy
) -> tuple[tuple[float, float, float], list[float]]:
    """Median seconds of (check-in, naive put, UTF-32 put), in alternating rounds, the bucket
    emptied after each put (untimed): every put meets the same server, holding one document.
    Beside them, each round's naive put over its check-in."""
    repeats = bench.profile.checkin_repeats(len(text))
    client, bucket, store, naive = bench.stores(endpoint)
    claimed = ClaimCheck(store, policy=policy)
    puts: list[Callable[[int], object]] = [
        lambda i: claimed.check_in(text, tool="t", scope=Scope("bench", f"s{i}")),
        lambda i: naive.put(Scope("bench", f"n{i}"), text, ttl_seconds=TTL),
        lambda i: client.put_object(Bucket=bucket, Key=f"utf32/{i}", Body=text.encode("utf-32-le")),
    ]
    times = alternating_puts(client, bucket, puts, repeats)
    rounds = [theirs / ours for ours, theirs in zip(times[0], times[1], strict=True)]
    return (median(times[0]), median(times[1]), median(times[2])), rounds


def _measure(bench: Bench, text: str, policy: ClaimCheckPolicy) -> _Row:
    repeats = bench.profile.checkin_repeats(len(text))
    memory = ClaimCheck(MemoryClaimCheckStore(), policy=policy)
    t_memory = _timed_puts(
        lambda i: memory.check_in(text, tool="t", scope=Scope("bench", f"m{i}")), repeats
    )
    measured = {e.name: _on_server(bench, e, text, policy) for e in (bench.moto, bench.timing)}
    s3 = {name: times for name, (times, _) in measured.items()}
    rounds = {name: ratios for name, (_, ratios) in measured.items()}
    heads = [time_once(lambda: extract_head(text, policy.head_chars)) for _ in range(_HEAD_REPEATS)]
    digests = [time_once(lambda: content_digest(text)) for _ in range(3)]
    return _Row(len(text.encode("utf-8")), t_memory, s3, rounds, median(heads), median(digests))


def run(bench: Bench) -> Section:
    policy = ClaimCheckPolicy()
    servers = (bench.moto.name, bench.timing.name)
    rows: list[list[str]] = []
    head_rows: list[list[str]] = []
    rates: dict[str, list[float]] = {name: [] for name in servers}
    costs: list[tuple[int, str, str, float]] = []  # (size, charset, server, naive / s3claim)
    head_times: list[float] = []
    spread: dict[tuple[int, str], list[float]] = {}  # the timing server's rounds
    for chars in bench.profile.checkin_sizes:
        for charset in CHARSETS:
            r = _measure(bench, document(chars, charset), policy)
            head_times.append(r.head)
            spread[chars, charset] = r.rounds[bench.timing.name]
            row = [label(chars), "ASCII" if charset == "ascii" else "mixed UTF-8"]
            row += [fmt_ms(r.memory), _throughput(r.utf8_bytes, r.memory)]
            for server in servers:
                ours, theirs, utf32 = r.s3[server]
                rates[server].append(r.utf8_bytes / ours)
                costs.append((chars, charset, server, theirs / ours))
                row += [
                    fmt_ms(ours),
                    _throughput(r.utf8_bytes, ours),
                    _throughput(r.utf8_bytes, theirs),
                    _throughput(r.utf8_bytes, utf32),
                    f"{theirs / ours:.2f}",
                ]
            rows.append(row)
            head_rows.append([row[0], row[1], fmt_ms(r.head), fmt_ms(r.digest)])
    sizes = bench.profile.checkin_sizes
    largest = label(sizes[-1])
    big = {c: [k for n, cs, _, k in costs if n >= MiB and cs == c] for c in CHARSETS}
    # The budget: 16 Mi ASCII characters to the timing server, at least 0.8x a naive put.
    at = 16 * MiB if 16 * MiB in sizes else sizes[-1]
    (budget,) = [k for n, cs, sv, k in costs if n == at and cs == "ascii" and sv == servers[1]]
    low, high = min(spread[at, "ascii"]), max(spread[at, "ascii"])
    verdict = "met" if budget >= 0.8 else "not met"
    return Section(
        title="Check-in",
        intro=(
            "`ClaimCheck.check_in` of one document: the content digest for the handle (the "
            "SHA-256s of its 4 KiB blocks, which the seal's tags reuse for ASCII text), the "
            f"store's put, the head. Median of {bench.profile.fetch_repeats} check-ins "
            f"({bench.profile.checkin_repeats(16 * MiB)} at 16 Mi characters, "
            f"{bench.profile.checkin_repeats(64 * MiB)} above), each "
            "into a new run so that each one writes, in alternating rounds with the naive and "
            "UTF-32 puts (the order turning each round, so no put always follows the same "
            "one), the bucket emptied after each put. The S3 put is one PutObject of "
            "the sealed body at the claim's width (ASCII: Latin-1, 1 byte a character; the "
            "mixed text: UTF-32-LE) and one of its line index, sent while the body is, to "
            "moto's server (in this process: it competes with the client for the GIL) and to "
            f"{bench.timing.name} (a child process); the naive put is one PutObject of the "
            "UTF-8 body to the same server, and the UTF-32 put one of the UTF-32-LE body "
            '(format 1\'s). "s3claim / naive" is the throughput of the check-in over the naive '
            "put's: 1.00 is even. MB/s are of UTF-8 input (10^6 bytes)."
        ),
        tables=[
            Table(
                title="Check-in time and throughput",
                headers=[
                    "document",
                    "text",
                    "memory store",
                    "MB/s",
                    *(
                        h
                        for server in servers
                        for h in (
                            f"S3: {server}",
                            "MB/s",
                            "naive put MB/s",
                            "UTF-32 put MB/s",
                            "s3claim / naive",
                        )
                    ),
                ],
                rows=rows,
                align_left=2,
            ),
            Table(
                title=f"Head extraction (head_chars={policy.head_chars}, median of "
                f"{_HEAD_REPEATS}) beside the content digest of the whole document",
                headers=["document", "text", "extract_head", "content_digest"],
                rows=head_rows,
                align_left=2,
            ),
        ],
        notes=[
            f"The head takes {fmt_ms(min(head_times))}–{fmt_ms(max(head_times))} from "
            f"{label(sizes[0])} to {largest} characters: flat. The hash, linear in "
            "the document, is the only part of a check-in besides the put that grows.",
            "From 1 Mi characters up, an ASCII check-in runs at "
            f"{min(big['ascii']):.2f}–{max(big['ascii']):.2f} of a naive UTF-8 put's "
            "throughput (the same bytes, plus the hashing behind the handle and the seal, and "
            "the line index); the mixed text, "
            f"stored at 4 bytes a character, at {min(big['utf8']):.2f}–{max(big['utf8']):.2f}.",
        ],
        headlines=[
            f"Check-in of a {largest}-character document over HTTP: "
            f"{median(rates[servers[1]][-2:]) / 1e6:,.0f} MB/s to {servers[1]}, "
            f"{median(rates[servers[0]][-2:]) / 1e6:,.0f} MB/s to moto (median of ASCII and "
            f"mixed UTF-8); {label(at)} ASCII characters check in at {budget:.2f}× a naive "
            f"UTF-8 put's throughput on {servers[1]} (its {len(spread[at, 'ascii'])} rounds: "
            f"{low:.2f}–{high:.2f}; budget: at least 0.80, {verdict}); head extraction "
            f"stays at {fmt_ms(median(head_times))} whatever the size.",
        ],
    )
