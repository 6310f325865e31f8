"""Deterministic documents of a given length in characters, one per kind of text.

A document is a block of about 64 Ki characters, generated from a fixed seed, repeated and cut
to length: building a 64 Mi-character document takes a fraction of a second, and the same size
always yields the same text. The kinds, one per storage width and then some:

- `ascii`: English contract words (1 byte a character stored, as in UTF-8);
- `latin1`: Western European text with accents, all below U+0100 (1 byte stored; 1-2 UTF-8);
- `bmp`: Japanese and Russian, all in the BMP (2 bytes stored; 2-3 in UTF-8);
- `utf8` (mixed): Latin with accents and combining marks, CJK, emoji outside the BMP (ZWJ
  sequences, flags) and ASCII, so UTF-8 has characters of 1, 2, 3 and 4 bytes throughout
  (4 bytes a character stored).
"""

from __future__ import annotations

import random
from functools import cache
from typing import Literal

__all__ = ["CHARSETS", "NAMES", "WIDTH_CHARSETS", "Charset", "KiB", "MiB", "document", "label"]

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
