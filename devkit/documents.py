"""Deterministic documents of a given length in characters: text of each kind, and JSON.

A document is a block of about 64 Ki characters, generated from a fixed seed, repeated and cut
to length: building a 64 Mi-character document takes a fraction of a second, and the same size
always yields the same text. The kinds, one per storage width and then some:

- `ascii`: English contract words (1 byte a character stored, as in UTF-8);
- `latin1`: Western European text with accents, all below U+0100 (1 byte stored; 1-2 UTF-8);
- `bmp`: Japanese and Russian, all in the BMP (2 bytes stored; 2-3 in UTF-8);
- `utf8` (mixed): Latin with accents and combining marks, CJK, emoji outside the BMP (ZWJ
  sequences, flags) and ASCII, so UTF-8 has characters of 1, 2, 3 and 4 bytes throughout
  (4 bytes a character stored).

And JSON, for reads by path:

- `records(chars)`: a list of records, the shape of an API response (pretty-printed, one
  record a few hundred characters).
- `nested(chars)`: botocore's `data/endpoints.json` (partitions, services, endpoints: about
  ten levels deep) with its partitions repeated, each copy renamed, until the size is reached.
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "CHARSETS",
    "NAMES",
    "WIDTH_CHARSETS",
    "Charset",
    "KiB",
    "MiB",
    "document",
    "label",
    "nested",
    "nested_pointers",
    "record_pointers",
    "records",
]

Charset = Literal["ascii", "latin1", "bmp", "utf8"]
CHARSETS: tuple[Charset, ...] = ("ascii", "utf8")
"""The two the latency and memory tables compare: the narrowest and the widest storage."""
WIDTH_CHARSETS: tuple[Charset, ...] = ("ascii", "latin1", "bmp", "utf8")
"""One of each kind, for the tables of bytes per window and bytes stored."""
NAMES: dict[Charset, str] = {
    "ascii": "ASCII",
    "latin1": "Latin-1",
    "bmp": "Japanese + Russian",
    "utf8": "mixed UTF-8",
}
KiB = 1024
MiB = 1024 * KiB
_BLOCK = 64 * KiB + 37  # not a multiple of a window: windows at different offsets differ

# fmt: off
_ASCII_WORDS = (
    "agreement", "supplier", "customer", "shall", "deliver", "services", "within", "days",
    "of", "notice", "party", "terms", "fees", "invoice", "payment", "liability", "warranty",
    "clause", "section", "article", "confidential", "data", "termination", "governing", "law",
    "the", "and", "to", "in", "for", "with", "by", "under", "any", "each",
)
_MIXED_WORDS = (
    *_ASCII_WORDS[:12],
    "Zoë", "Müller", "Łukasz", "Søren", "Ærø", "José", "Núñez", "façade", "naïve", "e\u0301té",
    "株式会社", "契約", "第一条", "東京", "甲は乙に対し", "本契約", "履行する。", "データ",
    "👩‍⚖️", "📄", "✅", "🇯🇵", "🧾", "∑", "€", "—", "«citation»",
)
_LATIN1_WORDS = (
    *_ASCII_WORDS[:12],
    "Zoë", "Müller", "Søren", "Ærø", "José", "Núñez", "façade", "naïve", "Königstraße", "été",
    "garçon", "Å", "£", "½", "«citation»",
)
_BMP_WORDS = (
    "株式会社", "契約", "第一条", "東京", "甲は乙に対し", "本契約", "履行する", "データ",
    "договор", "поставщик", "заказчик", "обязуется", "услуги", "в течение", "дней", "статья",
)
# fmt: on
_WORDS: dict[Charset, tuple[str, ...]] = {
    "ascii": _ASCII_WORDS,
    "latin1": _LATIN1_WORDS,
    "bmp": _BMP_WORDS,
    "utf8": _MIXED_WORDS,
}


@cache
def _block(charset: Charset) -> str:
    rng = random.Random(f"s3claim-bench-{charset}")  # noqa: S311  (text, not secrets)
    words = _WORDS[charset]
    parts: list[str] = []
    length = 0
    while length < _BLOCK:
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 18)))
        end = "\n\n" if rng.random() < 0.1 else ("。 " if charset in ("bmp", "utf8") else ". ")
        parts.append(sentence + end)
        length += len(sentence) + len(end)
    return "".join(parts)[:_BLOCK]


def document(chars: int, charset: Charset) -> str:
    """`chars` characters of the charset's block, repeated."""
    block = _block(charset)
    copies = -(-chars // len(block))
    return (block * copies)[:chars]


def label(chars: int) -> str:
    """64 Ki -> '64 Ki', 16 Mi -> '16 Mi' (characters)."""
    if chars >= MiB and chars % MiB == 0:
        return f"{chars // MiB} Mi"
    if chars >= KiB and chars % KiB == 0:
        return f"{chars // KiB} Ki"
    return str(chars)


# -- JSON ------------------------------------------------------------------------------------


def record_pointers(count: int) -> tuple[str, ...]:
    """Pointers at the start, middle and end of `records` of `count` records."""
    return ("", "/0", f"/{count // 2}/name", f"/{count - 1}/tags/1", f"/{count * 2 // 5}")


def nested_pointers(partitions: int) -> tuple[str, ...]:
    """Pointers into `nested` with this many partitions (8 a copy, `aws` first in each)."""
    last = (partitions - 1) // 8 * 8  # the last copy's `aws` partition
    return (
        "",
        "/partitions",
        "/partitions/0/services/ec2/endpoints/us-east-1",
        f"/partitions/{last}/services/s3",
        f"/partitions/{partitions - 1}/regions",
        f"/partitions/{last // 16 * 8}/services/sts/endpoints/aws-global/credentialScope/region",
    )


def records(chars: int) -> str:
    """A pretty-printed JSON list of records, at least `chars` characters long."""
    parts: list[str] = []
    size, n = 2, 0
    while size < chars:
        record = {
            "id": n,
            "name": f"record {n}",
            "status": "active" if n % 3 else "closed",
            "amount": round(n * 1.25, 2),
            "tags": ["alpha", f"group-{n % 17}"],
            "note": "lorem ipsum dolor sit amet, consectetur adipiscing elit " * (1 + n % 3),
        }
        part = json.dumps(record, indent=2).replace("\n", "\n  ")
        parts.append("  " + part)
        size += len(part) + 4
        n += 1
    return "[\n" + ",\n".join(parts) + "\n]"


@cache
def _endpoints() -> dict[str, Any]:
    import botocore

    path = Path(botocore.__file__).parent / "data" / "endpoints.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def nested(chars: int) -> str:
    """botocore's endpoints.json, its partitions repeated to at least `chars` characters."""
    document = dict(_endpoints())
    originals = document["partitions"]
    one_copy = len(json.dumps(originals, indent=2))
    copies = max(1, -(-chars // one_copy))
    document["partitions"] = [
        {**partition, "partition": f"{partition['partition']}-{copy}"}
        for copy in range(copies)
        for partition in originals
    ]
    return json.dumps(document, indent=2)
