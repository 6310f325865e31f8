"""Measure: bytes per window and bytes stored, for each kind of text, against UTF-32.

Counted, not timed: each kind of text (ASCII, Latin-1, Japanese + Russian, mixed with emoji,
and ASCII with a single emoji) is checked in on moto and one 4,096-character window fetched,
with botocore's hooks counting the body bytes of both. Format 1 stored every claim as
UTF-32-LE (4 bytes a character); its figures stand beside format 2's, and UTF-8 (what a naive
store keeps) beside both.
"""

from __future__ import annotations

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ratio
from devkit.documents import NAMES, WIDTH_CHARSETS, MiB, document
from devkit.servers import Wire
from s3claim.handles import content_width
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS

__all__ = ["run"]

_CHARS = 1 * MiB
_UTF32 = 4


def _texts() -> list[tuple[str, str]]:
    kinds = [(NAMES[c], document(_CHARS, c)) for c in WIDTH_CHARSETS]
    ascii_text = document(_CHARS, "ascii")
    one_emoji = ascii_text[: _CHARS // 2] + "👍" + ascii_text[_CHARS // 2 + 1 :]
    return [*kinds, ("ASCII with one emoji", one_emoji)]


def run(bench: Bench) -> Section:
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    window_rows: list[list[str]] = []
    stored_rows: list[list[str]] = []
    window_bytes: dict[str, int] = {}
    try:
        for i, (name, text) in enumerate(_texts()):
            scope = Scope(tenant="bench", run=f"width-{i}")
            wire.clear()
            handle = store.put(scope, text, ttl_seconds=TTL)
            stored = wire.request_bytes["PutObject"]
            wire.clear()
            offset = _CHARS // 3
            window = store.fetch(scope, handle, offset=offset)
            if window.text != text[offset : offset + DEFAULT_FETCH_CHARS]:
                raise AssertionError(f"wrong window for {name}")
            got = wire.response_bytes["GetObject"]
            window_bytes[name] = got
            utf8 = len(text.encode("utf-8"))
            utf8_window = len(window.text.encode("utf-8"))
            width = content_width(text)
            window_rows.append(
                [
                    name,
                    str(width),
                    fmt_int(wire.requests["GetObject"]),
                    fmt_int(got),
                    fmt_int(_UTF32 * DEFAULT_FETCH_CHARS),
                    fmt_int(utf8_window),
                    fmt_ratio(_UTF32 * DEFAULT_FETCH_CHARS / got),
                ]
            )
            stored_rows.append(
                [
                    name,
                    fmt_bytes(stored),
                    fmt_bytes(_UTF32 * len(text)),
                    fmt_bytes(utf8),
                    f"{stored / utf8:.2f}",
                    f"{_UTF32 * len(text) / utf8:.2f}",
                ]
            )
    finally:
        empty_bucket(client, bucket)
    ascii_name, bmp_name = NAMES["ascii"], NAMES["bmp"]
    return Section(
        title="Storage width",
        intro=(
            "Each claim is stored at the narrowest fixed width its characters allow: Latin-1 "
            "(1 byte a character), UTF-16-LE (2, the BMP) or UTF-32-LE (4). One 1 Mi-character "
            "document of each kind of text is checked in and one 4,096-character window "
            "fetched from its middle, on moto, with botocore's hooks counting body bytes. "
            "Format 1 (UTF-32-LE for every claim) is shown beside it, and UTF-8 (a naive "
            "store's object) beside both."
        ),
        tables=[
            Table(
                title="One 4,096-character window",
                headers=[
                    "text",
                    "width",
                    "GETs",
                    "bytes (format 2)",
                    "bytes (format 1)",
                    "UTF-8 bytes of the same window",
                    "format 1 / format 2",
                ],
                rows=window_rows,
                align_left=1,
            ),
            Table(
                title="One 1 Mi-character document stored",
                headers=[
                    "text",
                    "format 2",
                    "format 1 (UTF-32-LE)",
                    "UTF-8",
                    "format 2 / UTF-8",
                    "format 1 / UTF-8",
                ],
                rows=stored_rows,
                align_left=1,
            ),
        ],
        notes=[
            "One character outside the BMP makes the whole claim UTF-32: the price of serving "
            "any window with one ranged GET whose bytes are known before it is sent.",
        ],
        headlines=[
            f"A 4,096-character window is one GET of {fmt_int(window_bytes[ascii_name])} bytes "
            f"of ASCII or Latin-1 and {fmt_int(window_bytes[bmp_name])} of Japanese + Russian "
            f"(format 1: {fmt_int(_UTF32 * DEFAULT_FETCH_CHARS)} for all); ASCII is stored as "
            "its UTF-8, byte for byte, and BMP text at 2 bytes a character.",
        ],
    )
