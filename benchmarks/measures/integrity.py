"""Measure: what sealing costs (issue 21), beside the format it replaced and the alternatives.

Format 3 stores every 4,096 bytes of a claim's text followed by a 16-byte HMAC tag, and seals
the metadata with one more MAC, so that a window's one ranged GET proves itself. Three
figures, each beside format 2's (the same store with sealing taken out: what s3claim did
before) and the naive UTF-8 put:

- bytes: stored per claim, and moved per window on a block boundary and off one, counted
  with botocore's hooks on moto;
- check-in: `ClaimCheck.check_in` of ASCII documents, sealed, unsealed and naive, timed in
  alternating rounds (so drift on a shared machine falls on all three alike) on moto and on
  the timing server: what the seal costs a check-in (the budget against a naive put, 16 Mi
  ASCII characters at least 0.8x, is measured in `checkin`);
- CPU: sealing and checking alone, and the SHA-256 the handle already costs, so the
  alternatives (bigger blocks, a tag object beside the claim, one MAC of the whole body) are
  compared with figures rather than argued.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping

from benchmarks.context import TTL, Bench, alternating_puts, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, median, time_once
from devkit.documents import Charset, MiB, document, label
from devkit.servers import Endpoint, Wire
from s3claim.claimcheck import ClaimCheck
from s3claim.s3 import S3ClaimCheckStore
from s3claim.s3._format import laid_out_body
from s3claim.s3._layout import Layout
from s3claim.s3._seal import BLOCK_BYTES, TAG_BYTES, Seal, block_span
from s3claim.scope import Scope

__all__ = ["run"]

_WIDTHS: tuple[tuple[str, Charset, int], ...] = (
    ("ASCII", "ascii", 1),
    ("Japanese + Russian", "bmp", 2),
    ("mixed, with emoji", "utf8", 4),
)
_CPU_BYTES = 16 * MiB
_CPU_REPEATS = 7


class _NoSeal:
    """Format 2's put: the same store, its seal a no-op (what s3claim sent before issue 21;
    the body keeps its tag slots, zero)."""

    def metadata(self, fields: Mapping[str, str], *, body: bytes | None = None) -> dict[str, str]:
        return dict(fields)

    def blocks(self, body: bytes) -> bytes:
        return body

    def tag(self, stored: bytearray, digests: object) -> bytearray:
        return stored


class _Unsealed(Layout):
    __slots__ = ()

    def seal(self, object_key: str) -> Seal:
        return _NoSeal()  # type: ignore[return-value]


def _unsealed(store: S3ClaimCheckStore, bench: Bench) -> S3ClaimCheckStore:
    twin = S3ClaimCheckStore(store.bucket, handle_key=bench.key, client=store.client)
    twin._layout = _Unsealed(store.layout.prefix, bench.key)
    return twin


def _bytes_rows(bench: Bench) -> tuple[list[list[str]], float]:
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    rows: list[list[str]] = []
    overheads: list[float] = []
    try:
        for i, (name, charset, width) in enumerate(_WIDTHS):
            text = document(1 * MiB, charset)
            scope = Scope("bench", f"bytes-{i}")
            wire.clear()
            handle = store.put(scope, text, ttl_seconds=TTL)
            stored = wire.request_bytes["PutObject"]
            moved = []
            for offset in (4096 * 100, 4096 * 100 + 1000):  # on a block boundary, then off it
                wire.clear()
                store.fetch(scope, handle, offset=offset)
                moved.append(wire.response_bytes["GetObject"])
            plain = width * len(text)
            overheads.append(stored / plain - 1)
            rows.append(
                [
                    name,
                    str(width),
                    fmt_bytes(plain),
                    fmt_bytes(stored),
                    f"+{100 * (stored / plain - 1):.2f}%",
                    fmt_int(width * 4096),
                    fmt_int(moved[0]),
                    fmt_int(moved[1]),
                ]
            )
    finally:
        empty_bucket(client, bucket)
    return rows, max(overheads)


def _checkins(bench: Bench, endpoint: Endpoint, chars: int) -> tuple[float, float, float]:
    """Median seconds of (sealed, unsealed, naive) check-ins of `chars` ASCII characters."""
    repeats = bench.profile.checkin_repeats(chars)
    client, bucket, store, naive = bench.stores(endpoint)
    text = document(chars, "ascii")
    sealed, unsealed = ClaimCheck(store), ClaimCheck(_unsealed(store, bench))
    puts: list[Callable[[int], object]] = [
        lambda i: sealed.check_in(text, tool="t", scope=Scope("bench", f"s{i}")),
        lambda i: unsealed.check_in(text, tool="t", scope=Scope("bench", f"u{i}")),
        lambda i: naive.put(Scope("bench", f"n{i}"), text, ttl_seconds=TTL),
    ]
    times = alternating_puts(client, bucket, puts, repeats)
    return median(times[0]), median(times[1]), median(times[2])


def _tags(data: bytes, block: int) -> Callable[[], None]:
    """Tag `data` in blocks of `block` bytes with an HMAC of each block's bytes, as format 3's
    `Seal.blocks` did (without the join)."""
    key, view = b"k" * 32, memoryview(data)

    def tag_all() -> None:
        for index, start in enumerate(range(0, len(data), block)):
            hmac.digest(key, index.to_bytes(8, "big") + view[start : start + block], "sha256")

    return tag_all


def _cpu_rows(bench: Bench) -> tuple[list[list[str]], dict[str, float]]:
    """Each piece of work timed in turn, round after round (so load on a shared machine falls
    on all alike); the best round of each."""
    text = document(_CPU_BYTES, "ascii")
    data = text.encode("ascii")
    seal = Seal(bench.key, "claims/bench/cpu/1" + "0" * 32)
    laid, digests = laid_out_body(text, 1)
    stored = seal.tag(laid, digests)
    _, first, last = block_span(4096 * 1000, 4096 * 1001)
    window = stored[first : last + 1]

    def check_windows() -> None:  # 100 windows' checks, as 100 fetches would make them
        for _ in range(100):
            seal.open_blocks(window, first=1000, operation="GetObject")

    work: dict[str, Callable[[], object]] = {
        "digests": lambda: laid_out_body(text, 1),
        "sha256": lambda: hashlib.sha256(data).digest(),
        "seal": lambda: seal.tag(laid, digests),
        "tags4096": _tags(data, 4096),
        "window": check_windows,
        "whole": lambda: hashlib.sha256(stored).digest(),
        "tags16384": _tags(data, 16 * 1024),
        "tags65536": _tags(data, 64 * 1024),
    }
    times: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(_CPU_REPEATS):
        for name, call in work.items():
            times[name].append(time_once(call))
    figures = {name: min(found) for name, found in times.items()}
    figures["window"] /= 100
    rows = [
        [
            "the body laid out: each 4 KiB encoded, hashed and copied into place (format 4's "
            "handle and its tags' input)",
            fmt_ms(figures["digests"]),
        ],
        ["SHA-256 of the whole document (format 3's handle)", fmt_ms(figures["sha256"])],
        [
            "Seal.tag, the body laid out: a tag a block, in place (format 4's put, added)",
            fmt_ms(figures["seal"]),
        ],
        [
            "an HMAC of every 4 KiB block's bytes (format 3's put, added)",
            fmt_ms(figures["tags4096"]),
        ],
        ["check one window's block (format 4's fetch, added)", fmt_ms(figures["window"])],
        ["SHA-256 of the whole body (a whole-body MAC's, every fetch)", fmt_ms(figures["whole"])],
    ]
    return rows, figures


def run(bench: Bench) -> Section:
    byte_rows, worst_overhead = _bytes_rows(bench)
    sizes = (1 * MiB, 16 * MiB)  # the budget's size; section 3 has the larger sizes
    servers = (bench.moto, bench.timing)
    time_rows: list[list[str]] = []
    seal_cost = float("nan")  # sealed over unsealed throughput, 16 Mi, the timing server
    for chars in sizes:
        row = [label(chars)]
        for endpoint in servers:
            sealed, unsealed, naive = _checkins(bench, endpoint, chars)
            rate = chars / 1e6
            row += [
                fmt_ms(sealed),
                f"{rate / sealed:,.0f}",
                fmt_ms(unsealed),
                f"{rate / unsealed:,.0f}",
                f"{rate / naive:,.0f}",
                f"{naive / sealed:.2f}",
                f"{naive / unsealed:.2f}",
            ]
            if chars == 16 * MiB and endpoint is bench.timing:
                seal_cost = unsealed / sealed
        time_rows.append(row)
    cpu_rows, cpu = _cpu_rows(bench)
    unit = BLOCK_BYTES + TAG_BYTES
    alternatives = [
        [
            "blocks of 4 KiB, tags of their digests interleaved (format 4)",
            f"+{100 * TAG_BYTES / BLOCK_BYTES:.2f}%",
            "1",
            f"{unit:,} / {2 * unit:,}",
            fmt_ms(cpu["seal"] + cpu["digests"] - cpu["sha256"]),
        ],
        [
            "blocks of 4 KiB, tags of their bytes interleaved (format 3)",
            f"+{100 * TAG_BYTES / BLOCK_BYTES:.2f}%",
            "1",
            f"{unit:,} / {2 * unit:,}",
            fmt_ms(cpu["tags4096"]),
        ],
        [
            "blocks of 16 KiB, interleaved",
            f"+{100 * TAG_BYTES / 16384:.2f}%",
            "1",
            f"{16384 + 16:,} / {2 * (16384 + 16):,}",
            fmt_ms(cpu["tags16384"]),
        ],
        [
            "blocks of 64 KiB, interleaved",
            f"+{100 * TAG_BYTES / 65536:.3f}%",
            "1",
            f"{65536 + 16:,} / {2 * (65536 + 16):,}",
            fmt_ms(cpu["tags65536"]),
        ],
        [
            "tags of 4 KiB blocks in an object beside the claim",
            f"+{100 * TAG_BYTES / BLOCK_BYTES:.2f}% (a 2nd object)",
            "2 (and 2 PUTs a check-in)",
            f"{4096 + 16:,} / {8192 + 32:,}",
            fmt_ms(cpu["seal"] + cpu["digests"] - cpu["sha256"]),
        ],
        [
            "one MAC of the whole body, in metadata",
            "+0%",
            "1",
            f"{_CPU_BYTES:,} (the whole claim, every window)",
            fmt_ms(cpu["sha256"]),
        ],
    ]
    big = label(sizes[1])
    return Section(
        title="Integrity: what the seal costs",
        intro=(
            "Format 4 follows every 4,096 bytes of a claim's text with a 16-byte HMAC-SHA256 "
            "tag of the block's index and SHA-256, and seals the metadata with one more MAC, "
            "all under a key derived from the handle key and the object's key; the handle's "
            "digest is the SHA-256 of the same blocks' SHA-256s, so an ASCII check-in hashes "
            "its text once (format 3, issue 21, MACed each block's bytes: a second pass). "
            "Beside it, format 2: the same store with its seal taken out. "
            "Bytes are counted on moto with botocore's hooks (1 Mi characters of each kind of "
            "text; windows at offset 409,600, on a block boundary, and 410,600, off one). "
            "Check-ins are `ClaimCheck.check_in` of ASCII text into a new run each, sealed, "
            "unsealed and naive in alternating rounds, the order turning each round (median of "
            f"{bench.profile.fetch_repeats}, {bench.profile.checkin_repeats(16 * MiB)} at 16 Mi), "
            "MB/s of input; CPU figures are the "
            f"best of {_CPU_REPEATS} alternating rounds over {_CPU_BYTES // MiB} MiB in this "
            "process."
        ),
        tables=[
            Table(
                title="Bytes: stored, and moved by one 4,096-character window",
                headers=[
                    "text",
                    "width",
                    "format 2 stored",
                    "format 4 stored",
                    "overhead",
                    "format 2 window bytes",
                    "format 4, on a block",
                    "format 4, off a block",
                ],
                rows=byte_rows,
                align_left=1,
            ),
            Table(
                title="Check-in of ASCII documents: sealed (format 4), unsealed (format 2), naive",
                headers=[
                    "document",
                    *(
                        h
                        for e in servers
                        for h in (
                            f"{e.name}: sealed",
                            "MB/s",
                            "unsealed",
                            "MB/s",
                            "naive MB/s",
                            "sealed / naive",
                            "unsealed / naive",
                        )
                    ),
                ],
                rows=time_rows,
                align_left=1,
            ),
            Table(
                title=f"CPU in this process, {_CPU_BYTES // MiB} MiB of ASCII",
                headers=["work", "time"],
                rows=cpu_rows,
                align_left=1,
            ),
            Table(
                title="The alternatives (ASCII; bytes per window on a block / off one; CPU to "
                f"seal {_CPU_BYTES // MiB} MiB)",
                headers=["scheme", "storage", "requests a fetch", "bytes a window", "seal CPU"],
                rows=alternatives,
                align_left=1,
            ),
        ],
        notes=[
            f"The seal adds at most {100 * worst_overhead:.2f}% to what is stored; a window "
            "read in order (on a block boundary) moves its width's bytes and one 16-byte tag "
            "per 4,096; one that starts off a boundary reads one block more. The seal adds no "
            "request: a check-in's PutObjects (the claim, and its line index) and a window's "
            "one ranged GET carry it.",
            f"Sealing {_CPU_BYTES // MiB} MiB takes {fmt_ms(cpu['seal'])} once the body is "
            f"laid out and its blocks hashed ({fmt_ms(cpu['digests'])}, against "
            f"{fmt_ms(cpu['sha256'])} for one SHA-256 of the whole text); format 3's HMAC of "
            f"every block's bytes took {fmt_ms(cpu['tags4096'])}, a second pass over the "
            "text. Blocks of 16 KiB hashed that way cost "
            f"{fmt_ms(cpu['tags16384'])}, and 64 KiB {fmt_ms(cpu['tags65536'])}, at 4 and 16 "
            "times the bytes of every in-order ASCII window; a tag object beside the claim "
            "doubles the requests of "
            "every fetch and check-in; one MAC of the whole body makes every window cost the "
            f"whole claim. Checking one window's block costs {fmt_ms(cpu['window'])}.",
        ],
        headlines=[
            f"Integrity: what the seal costs: sealed records (format 4) store "
            f"+{100 * worst_overhead:.2f}%, one 16-byte tag "
            f"per 4,096 bytes a window moves, the same requests; a sealed check-in of {big} "
            f"ASCII characters runs at {seal_cost:.2f}× an unsealed one's throughput on "
            f"{bench.timing.name} (the check-in budget against a naive put: section 3).",
        ],
    )
