"""The counsel scenario for the framework adapters, and what its scripted models need.

Three questions in one conversation about the 92,212-character contract. The first needs the
parties (in the head); the second and third need clauses near the end, which a model that was
shown only the head must fetch. With the claim check the scripted model fetches the window
that holds the clause; without it the whole contract is in the conversation, or was until
the framework's own answer to large outputs cut it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from s3claim.claim_tools import claim_tools
from s3claim.cli.demo import contract
from s3claim.memory import MemoryClaimCheckStore
from s3claim.store import DEFAULT_FETCH_CHARS
from s3claim.wording import strip_notes

__all__ = [
    "CLAIM_TOOLS",
    "CONTRACT",
    "HANDLE",
    "QUESTIONS",
    "Question",
    "chars_in",
    "reassemble",
    "window_body",
]

CONTRACT = contract()
CLAIM_TOOLS = [t.name for t in claim_tools(MemoryClaimCheckStore())]
"""What every adapter adds: each claim tool, whatever the set holds today."""
HANDLE = re.compile(r"claim:[0-9a-z]+")
_FOOTER = re.compile(
    r"\n\n\[characters \d+-\d+ of \d+\. Call fetch_result with handle='[^']+' "
    r"and offset=\d+ to continue\.\]\Z"
)


@dataclass(frozen=True)
class Question:
    text: str
    clause: str
    """Text the answer needs: the model must have been shown it when it answers."""

    @property
    def offset(self) -> int:
        """Where the window that holds the clause starts (windows are 4,096 characters)."""
        return CONTRACT.index(self.clause) // DEFAULT_FETCH_CHARS * DEFAULT_FETCH_CHARS


def _section(number: str) -> str:
    start = CONTRACT.index(f"\n{number} ") + 1
    return CONTRACT[start : start + 120]


QUESTIONS = (
    Question("Who are the parties to the agreement?", "Zoë Müller GmbH, a company incorporated"),
    Question("What does section 17.1 on governing law say?", _section("17.1")),
    Question("What does section 19.2 on notices say?", _section("19.2")),
)
assert all(len(q.clause) < 200 and CONTRACT.count(q.clause) == 1 for q in QUESTIONS)
assert all(  # each clause lies within one window
    CONTRACT.index(q.clause) + len(q.clause) <= q.offset + DEFAULT_FETCH_CHARS for q in QUESTIONS
)


def window_body(output: str) -> str:
    """A fetch_result output without its footer or end note: exactly the window's text."""
    return strip_notes(_FOOTER.sub("", output))


def reassemble(outputs: Iterable[str]) -> str:
    return "".join(window_body(o) for o in outputs)


def chars_in(value: object) -> int:
    """Characters of text in a request: every string in it, keys and structure aside."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(chars_in(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(chars_in(v) for v in value)
    return 0
