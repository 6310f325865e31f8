"""The sessions side by side (issue 37) measures what it says: its scripted model answers only
from what a system shows, and the figures it reports follow from the requests it was sent."""

from __future__ import annotations

from benchmarks.measures import sessions as S


def _session(name: str) -> S.Session:
    return next(s for s in S.sessions() if s.name == name)


def test_truncation_loses_what_is_past_its_cut_and_inline_loses_nothing() -> None:
    audit = _session("API audit")
    inline = S.replay(audit, "inline")
    cut = S.replay(audit, f"truncation at {S.TRUNCATE_AT:,}")
    assert (inline.answered, inline.questions) == (3, 3)
    assert cut.answered == 1  # the customer is whole; records 812 and 1,500 are past the cut
    assert sum(cut.requests) < sum(inline.requests)


def test_s3claim_reads_on_through_its_tools_and_answers_every_question() -> None:
    audit = _session("API audit")
    stats = S.replay(audit, "s3claim (spec defaults)")
    assert (stats.answered, stats.questions) == (3, 3)
    assert stats.reads == 2  # one path read per record
    assert stats.executions == 3  # get_orders twice, get_customer once


def test_masking_rewrites_earlier_requests_and_loses_the_cached_prefix() -> None:
    build = _session("build failure")
    masked = S.replay(build, f"masking after {S.MASK_AFTER_TURNS} turns")
    inline = S.replay(build, "inline")
    assert S._cached(masked) < S._cached(inline)


def test_the_cached_prefix_is_the_common_start_of_consecutive_requests() -> None:
    assert S.common_prefix("abcdef", "abcxyz") == 3
    assert S.common_prefix("abc", "abcdef") == 3
    assert S.common_prefix("", "abc") == 0
