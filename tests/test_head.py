"""The extractive head: a prefix, within budget, cut where the text pauses."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from s3claim._reading._head import extract_head
from tests._strategies import examples, unicode_text

_CLUSTER = regex.compile(r"\X")


def cluster_ends(text: str) -> set[int]:
    return {0} | {m.end() for m in _CLUSTER.finditer(text)}


def test_prefers_a_blank_line_in_the_later_half() -> None:
    text = "A" * 300 + ".\n\n" + "b " * 40 + "c. d e f g " + "x" * 500
    head = extract_head(text, 400)
    assert head == "A" * 300 + "."


def test_a_later_newline_beats_a_much_earlier_blank_line() -> None:
    text = "Intro.\n\n" + "word " * 60 + "\nmore words here " + "z" * 600
    head = extract_head(text, 400)
    assert head.endswith("word")
    assert len(head) > 300


def test_sentence_end_beats_a_plain_space() -> None:
    text = "First sentence here. " + "word " * 20 + "Last one! trailing words " + "x" * 400
    head = extract_head(text, 140)
    assert head.endswith("Last one!")


def test_falls_back_to_a_space_between_words_never_mid_word() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    head = extract_head(text, 20)
    assert head == "alpha beta gamma"
    assert text[len(head)] == " "


def test_text_without_any_boundary_is_cut_at_a_character_boundary() -> None:
    token = "QUJDRA" * 200
    assert extract_head(token, 512) == token[:512]


def test_never_splits_a_combining_mark_or_emoji_sequence() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one cluster of 5 code points
    text = "a\u0301" * 3 + family * 10
    head = extract_head(text, 9)
    assert len(head) <= 9
    assert len(head) in cluster_ends(text)
    assert head == "a\u0301" * 3  # the family would not fit whole


def test_cjk_sentence_marks_are_boundaries_without_spaces() -> None:
    text = "本契約は日本法に準拠する。当事者は誠実に協議する。" * 20
    head = extract_head(text, 30)
    assert head.endswith("。")


def test_crlf_counts_as_one_newline_and_blank_crlf_as_a_paragraph() -> None:
    text = "line one\r\nline two\r\n\r\nparagraph two " + "w " * 300
    head = extract_head(text, 30)
    assert head == "line one\r\nline two"


def test_short_content_is_its_own_head() -> None:
    assert extract_head("short", 512) == "short"


def _space(char: str) -> bool:
    return regex.match(r"\s", char) is not None


@settings(max_examples=examples(400))
@given(unicode_text, st.integers(min_value=1, max_value=300))
def test_head_is_a_prefix_within_budget_at_a_cluster_and_word_boundary(
    text: str, head_chars: int
) -> None:
    head = extract_head(text, head_chars)
    assert text.startswith(head)
    assert len(head) <= head_chars or head == text
    ends = cluster_ends(text)
    assert len(head) in ends
    pauses = {
        p
        for p in range(1, min(head_chars, len(text) - 1) + 1)
        if _space(text[p]) and not _space(text[p - 1]) and p in ends
    }
    if head != text and pauses:  # a pause was in reach: the cut is at one, never mid-word
        assert len(head) in pauses or head[-1] in "。！？｡"
    if any(2 * p >= head_chars for p in pauses):  # one in the later half: not needlessly short
        assert 2 * len(head) >= head_chars
