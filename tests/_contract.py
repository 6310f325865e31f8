"""A realistic long document for tests: numbered clauses, headings, non-ASCII names."""

from __future__ import annotations

import random

_PARTIES = [
    "Zoë Müller GmbH",
    "Łukasz Nowak S.A.",
    "Søren Ærø ApS",
    "José Núñez y Cía.",
    "株式会社東京",
]
_VERBS = ["shall deliver", "may terminate", "must indemnify", "shall notify", "will maintain"]
_OBJECTS = [
    "the Services",
    "all Deliverables",
    "the Confidential Information",
    "the Fees",
    "the Premises",
]


def contract(n_clauses: int = 265, seed: int = 7) -> str:
    """About 345 characters per clause; 265 clauses is about 91,500 characters."""
    rng = random.Random(seed)
    parts = ["MASTER SERVICES AGREEMENT\n\nThis agreement is made between the parties below.\n"]
    for number in range(1, n_clauses + 1):
        if number % 20 == 1:
            parts.append(f"\nARTICLE {number // 20 + 1}. GENERAL PROVISIONS\n")
        sentences = []
        for _ in range(4):
            party = rng.choice(_PARTIES)
            sentences.append(
                f"{party} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} within "
                f"{rng.randint(5, 90)} days of the Effective Date."
            )
        parts.append(f"\nClause {number}. " + " ".join(sentences) + "\n")
    return "".join(parts)
