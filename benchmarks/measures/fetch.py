"""Measure: one 4,096-character window from documents of growing size, and its plot.

Requests and response bytes are counted on moto (the wire is the same on any S3); latency is
timed on the streaming server. Each window is checked against the document once, outside the
timed loop, so a fast wrong answer cannot pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, fmt_ratio, median, time_once
from devkit.documents import CHARSETS, Charset, document, label
from devkit.servers import Wire
from s3claim.handles import content_width
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS

__all__ = ["run"]

SCOPE = Scope(tenant="bench", run="fetch")
WINDOW = DEFAULT_FETCH_CHARS
STORES = ("s3claim", "naive")
PLOT = "benchmarks.png"


@dataclass(frozen=True)
class FetchPoint:
    """One curve point of the plot: medians over positions, for one store and charset."""

    chars: int
    charset: str
    store: str
    seconds: float
    response_bytes: float


def positions(chars: int) -> list[tuple[str, int]]:
    """Start, middle and the last whole window."""
    return [("start", 0), ("middle", chars // 2), ("end", chars - WINDOW)]


@dataclass
class _Cell:
    requests: int = 0
    response_bytes: int = 0
    seconds: float = float("nan")


def _count(bench: Bench, chars: int, charset: Charset, text: str) -> dict[tuple[str, str], _Cell]:
    """Requests and bytes per fetch, on moto, for each store and position."""
    client, bucket, store, naive = bench.stores(bench.moto)
    wire = Wire.attach(client)
    cells: dict[tuple[str, str], _Cell] = {}
    try:
        handles = {
            "s3claim": store.put(SCOPE, text, ttl_seconds=TTL),
            "naive": naive.put(SCOPE, text, ttl_seconds=TTL),
        }
        for where, offset in positions(chars):
            for name, target in (("s3claim", store), ("naive", naive)):
                wire.clear()
                window = target.fetch(SCOPE, handles[name], offset=offset)
                if window.text != text[offset : offset + WINDOW]:
                    raise AssertionError(f"{name} returned the wrong window at {offset}")
                cells[(name, where)] = _Cell(wire.total_requests, wire.total_response_bytes)
    finally:
        empty_bucket(client, bucket)
    return cells


def _time(bench: Bench, chars: int, text: str, cells: dict[tuple[str, str], _Cell]) -> None:
    """Median latency per fetch on the timing server, into `cells`."""
    client, bucket, store, naive = bench.stores(bench.timing)
    try:
        handles = {
            "s3claim": store.put(SCOPE, text, ttl_seconds=TTL),
            "naive": naive.put(SCOPE, text, ttl_seconds=TTL),
        }
        targets: dict[str, Any] = {"s3claim": store, "naive": naive}
        naive_repeats = bench.profile.naive_repeats(chars)
        for where, offset in positions(chars):
            samples: dict[str, list[float]] = {"s3claim": [], "naive": []}
            for name in STORES:  # one untimed fetch each: connections open, caches warm
                window = targets[name].fetch(SCOPE, handles[name], offset=offset)
                if window.text != text[offset : offset + WINDOW]:
                    raise AssertionError(f"{name} returned the wrong window at {offset}")
            for i in range(bench.profile.fetch_repeats):  # interleaved, so drift hits both
                for name in STORES:
                    if name == "naive" and i >= naive_repeats:
                        continue
                    samples[name].append(
                        time_once(partial(targets[name].fetch, SCOPE, handles[name], offset=offset))
                    )
            for name in STORES:
                cells[(name, where)].seconds = median(samples[name])
    finally:
        empty_bucket(client, bucket)


def run(bench: Bench) -> Section:
    wire_rows: list[list[str]] = []
    time_rows: list[list[str]] = []
    stored_rows: list[list[str]] = []
    points: list[FetchPoint] = []
    flat: list[int] = []
    ratios: dict[tuple[int, str], list[float]] = {}  # (size, charset) -> naive / s3claim time
    byte_ratios: dict[tuple[int, str], list[float]] = {}
    for chars in bench.profile.fetch_sizes:
        for charset in CHARSETS:
            text = document(chars, charset)
            cells = _count(bench, chars, charset, text)
            _time(bench, chars, text, cells)
            name = "ASCII" if charset == "ascii" else "mixed UTF-8"
            for where, _ in positions(chars):
                ours, theirs = cells[("s3claim", where)], cells[("naive", where)]
                flat.append(ours.response_bytes)
                ratios.setdefault((chars, charset), []).append(theirs.seconds / ours.seconds)
                byte_ratios.setdefault((chars, charset), []).append(
                    theirs.response_bytes / ours.response_bytes
                )
                wire_rows.append(
                    [
                        label(chars),
                        name,
                        where,
                        fmt_int(ours.requests),
                        fmt_int(ours.response_bytes),
                        fmt_int(theirs.requests),
                        fmt_int(theirs.response_bytes),
                        fmt_ratio(theirs.response_bytes / ours.response_bytes),
                    ]
                )
                time_rows.append(
                    [
                        label(chars),
                        name,
                        where,
                        fmt_ms(ours.seconds),
                        fmt_ms(theirs.seconds),
                        fmt_ratio(theirs.seconds / ours.seconds),
                    ]
                )
            for store in STORES:
                here = [cells[(store, w)] for w, _ in positions(chars)]
                points.append(
                    FetchPoint(
                        chars=chars,
                        charset=charset,
                        store=store,
                        seconds=median([c.seconds for c in here]),
                        response_bytes=median([c.response_bytes for c in here]),
                    )
                )
            stored_rows.append(
                [
                    label(chars),
                    name,
                    fmt_bytes(len(text.encode("utf-8"))),
                    fmt_bytes(content_width(text) * chars),
                    fmt_bytes(4 * chars),
                ]
            )
    sizes = bench.profile.fetch_sizes
    smallest, largest = sizes[0], sizes[-1]
    ours_small = median([p.seconds for p in points if p.store == "s3claim" and p.chars == smallest])
    ours_large = median([p.seconds for p in points if p.store == "s3claim" and p.chars == largest])
    even = median(ratios[(smallest, "ascii")] + ratios[(smallest, "utf8")])
    section = Section(
        title="Fetch one window",
        intro=(
            "One `fetch(handle, offset)` of a 4,096-character window at the start, middle and "
            "last window of documents of growing size (sizes in characters; for ASCII that is "
            "also bytes). s3claim stores each claim at its narrowest fixed width (ASCII: 1 "
            "byte a character; the mixed text, with emoji: 4) and sends one ranged GET; the "
            "naive store keeps UTF-8, GETs the whole object and slices. Requests and response "
            "body bytes are counted with botocore event hooks on moto's HTTP server; latency is "
            "the median "
            f"of {bench.profile.fetch_repeats} timed fetches (naive: 3 to "
            f"{bench.profile.fetch_repeats}, fewer as objects grow) against "
            f"{bench.timing.name}.\n\n"
            f"![Fetch latency and bytes per fetch against document size]({PLOT})"
        ),
        tables=[
            Table(
                title="Requests and response bytes per fetch (counted on moto)",
                headers=[
                    "document",
                    "text",
                    "window",
                    "s3claim requests",
                    "s3claim bytes",
                    "naive requests",
                    "naive bytes",
                    "naive / s3claim bytes",
                ],
                rows=wire_rows,
                align_left=3,
            ),
            Table(
                title=f"Latency per fetch ({bench.timing.name}, median)",
                headers=["document", "text", "window", "s3claim", "naive", "naive / s3claim"],
                rows=time_rows,
                align_left=3,
            ),
            Table(
                title="Objects stored per document",
                headers=[
                    "document",
                    "text",
                    "naive (UTF-8)",
                    "s3claim (format 2)",
                    "format 1 (UTF-32-LE)",
                ],
                rows=stored_rows,
                align_left=2,
            ),
        ],
        notes=[
            "s3claim's bytes per fetch are the same at every size and position: "
            f"{fmt_int(min(flat))} bytes for ASCII and {fmt_int(max(flat))} for the mixed text "
            "(its width times 4,096).",
            f"s3claim's median latency: {fmt_ms(ours_small)} at {label(smallest)} characters, "
            f"{fmt_ms(ours_large)} at {label(largest)} characters.",
        ],
        headlines=[
            f"Fetching one 4,096-character window from a {label(largest)}-character document "
            f"(median of start, middle and end): s3claim is "
            f"{fmt_ratio(median(ratios[(largest, 'ascii')]))} faster than a whole-object GET "
            f"for ASCII and {fmt_ratio(median(ratios[(largest, 'utf8')]))} for mixed UTF-8, "
            f"and moves {fmt_ratio(median(byte_ratios[(largest, 'ascii')]))} / "
            f"{fmt_ratio(median(byte_ratios[(largest, 'utf8')]))} fewer bytes. Its latency "
            f"stays flat ({fmt_ms(ours_small)} at {label(smallest)} characters, "
            f"{fmt_ms(ours_large)} at {label(largest)}); at {label(smallest)} the two are "
            f"even ({fmt_ratio(even)}).",
        ],
    )
    bench.out.mkdir(parents=True, exist_ok=True)
    plot_fetch(points, bench.out / PLOT, timing_server=bench.timing.name)
    return section


def plot_fetch(points: Sequence[FetchPoint], path: Path, *, timing_server: str) -> None:
    """Latency and bytes per fetch against document size, s3claim against naive, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, (latency, traffic) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    styles = {
        ("s3claim", "ascii"): ("tab:blue", "o", "-"),
        ("s3claim", "utf8"): ("tab:blue", "s", "--"),
        ("naive", "ascii"): ("tab:red", "o", "-"),
        ("naive", "utf8"): ("tab:red", "s", "--"),
    }
    names = {"ascii": "ASCII", "utf8": "mixed UTF-8"}
    for (store, charset), (color, mark, dash) in styles.items():
        curve = sorted(
            (p for p in points if p.store == store and p.charset == charset), key=lambda p: p.chars
        )
        if not curve:
            continue
        xs = [p.chars for p in curve]
        style: dict[str, Any] = {
            "color": color,
            "marker": mark,
            "linestyle": dash,
            "label": f"{store}, {names[charset]}",
            # hollow, larger markers for UTF-8: where the two curves coincide, both still show
            "markerfacecolor": "none" if charset == "utf8" else color,
            "markersize": 9 if charset == "utf8" else 5,
        }
        latency.plot(xs, [p.seconds * 1000 for p in curve], **style)
        traffic.plot(xs, [p.response_bytes for p in curve], **style)

    sizes = sorted({p.chars for p in points})
    for axis in (latency, traffic):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(sizes, [_size_label(x) for x in sizes])
        axis.minorticks_off()
        axis.set_xlabel("document size (characters)")
        axis.grid(True, which="major", alpha=0.4)
        axis.legend(fontsize=8, loc="upper left")
    latency.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    latency.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g} ms"))
    traffic.yaxis.set_major_locator(LogLocator(base=4))  # 16 KiB, 64 KiB, 256 KiB, 1 MiB...
    traffic.yaxis.set_major_formatter(FuncFormatter(lambda y, _: _bytes_label(y)))
    latency.set_ylabel("median latency per fetch")
    latency.set_title(f"Fetch latency ({timing_server})", fontsize=10)
    traffic.set_ylabel("response body per fetch")
    traffic.set_title("Bytes moved per fetch (counted on moto)", fontsize=10)
    fig.suptitle("One 4,096-character window: s3claim (one ranged GET) vs naive (whole object)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _size_label(chars: float) -> str:
    for unit, scale in (("Mi", 1024**2), ("Ki", 1024)):
        if chars >= scale:
            return f"{chars / scale:g} {unit}"
    return f"{chars:g}"


def _bytes_label(value: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"
