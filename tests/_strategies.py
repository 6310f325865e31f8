"""Hypothesis strategies for hostile Unicode: the text the boundary and the stores must carry."""

from __future__ import annotations

import os

from hypothesis import settings
from hypothesis import strategies as st

CI = bool(os.environ.get("CI"))
"""Under CI (`make test` on a fresh machine, five minutes for the whole suite) hypothesis runs
its "ci" profile (loaded by tests/conftest.py): a fifth of each test's examples, no example
database (every run draws afresh, so runs add up), and the blob that reproduces a failure."""

settings.register_profile("ci", max_examples=20, database=None, print_blob=True)


def examples(n: int) -> int:
    """A property test's examples: `n` at a developer's desk, a fifth of them (10 at least)
    under CI."""
    return max(10, n // 5) if CI else n


PIECES = [
    " ",
    "\n",
    "\r\n",
    "\n\n",
    ". ",
    "! ",
    "\t",
    "\x00",
    "e\u0301",
    "\u0301",
    "\u200d",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: one grapheme cluster
    "\U0001f1ef\U0001f1f5",  # flag: regional indicator pair
    "\U0001f44d\U0001f3fd",  # thumbs up, skin tone
    "本契約。",
    "한국어",
    "Zoë",
    "Łódź",
    "naïve",
    "base64QUJD",
]

unicode_text = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
        st.sampled_from(PIECES),
    ),
    max_size=60,
).map("".join)
