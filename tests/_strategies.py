"""Hypothesis strategies for hostile Unicode: the text the boundary and the stores must carry."""

from __future__ import annotations

from hypothesis import strategies as st

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
