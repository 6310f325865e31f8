"""The sessions side by side (issues 37, 47) measures what it says: held-out documents are the
bytes their provenance records, every witness is verbatim in its document, the scripted model
answers only from what a system shows, and the figures follow from the requests it was sent."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import heldout
from benchmarks.context import QUICK, Bench
from benchmarks.heldout import HERE, provenance, text
from benchmarks.measures import peers
from benchmarks.measures import sessions as study
from benchmarks.sessions import s3claim_side
from benchmarks.sessions.script import (
    SYSTEM_PROMPT,
    Question,
    Request,
    Script,
    Session,
    json_span,
    sessions,
)
from s3claim import HandleKey


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    out = tmp_path_factory.mktemp("bench")
    b = Bench(profile=QUICK, key=HandleKey.generate(), results=out, out=out)
    try:
        yield b
    finally:
        b.stop()


def _session(name: str) -> Session:
    return next(s for s in sessions() if s.name == name)


def test_every_held_out_file_is_committed_with_its_provenance_and_small_enough_for_git() -> None:
    files = {p.name for p in HERE.iterdir() if p.suffix not in (".py", ".pyc")}
    files -= {"provenance.json", "__pycache__"}
    assert files == set(provenance())
    for name, row in provenance().items():
        data = (HERE / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (row["bytes"], row["sha256"])
        assert len(data) < 400_000
        assert row["source"] and row["licence"] and row["kept"]
    assert text("vim-tutor.ja.utf-8").isascii() is False


def test_a_file_whose_bytes_differ_from_its_record_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "provenance.json").write_bytes((HERE / "provenance.json").read_bytes())
    (tmp_path / "GPL-3").write_bytes((HERE / "GPL-3").read_bytes() + b"\n")
    monkeypatch.setattr(heldout, "HERE", tmp_path)
    text.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"provenance\.json differs"):
            text("GPL-3")
    finally:
        text.cache_clear()


def test_every_witness_is_verbatim_in_its_document_and_every_member_anchor_is_unique() -> None:
    count = 0
    for session in sessions():
        for turn in session.turns:
            assert all(q.source in turn.calls for q in turn.questions)
            for q in turn.questions:
                document = text(q.source)
                assert q.witness in document
                if q.kind == "member":
                    assert document.count(q.needle) == 1
                    assert 1 <= q.reach < 60
                count += 1
    assert count == 26
    tails = [q for s in sessions() for t in s.turns for q in t.questions if q.kind == "tail"]
    assert Question("cpython-test_statistics.log", "tail", lines=3) in tails


def test_a_json_span_is_the_exact_text_of_the_value_at_its_pointer() -> None:
    document = '{"a": [1, {"b" : "x/y"}], "c~d": {"e": [ ]}}'
    assert document[slice(*json_span(document, "/a/1/b"))] == '"x/y"'
    assert document[slice(*json_span(document, "/a/1"))] == '{"b" : "x/y"}'
    assert document[slice(*json_span(document, "/c~0d/e"))] == "[ ]"
    assert document[slice(*json_span(document, ""))] == document


class _NoReads:
    def plain(self, result: str) -> str:
        return ""

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> None:
        return None


def test_the_script_answers_only_from_what_the_requests_show() -> None:
    session = _session("translation review")
    script = Script(session, _NoReads())
    calls = script.respond(Request(SYSTEM_PROMPT, [], [session.prompt], []))
    assert isinstance(calls, list)
    assert [c.arguments["path"] for c in calls] == ["vim-tutor.ja.utf-8", "vim-tutor.ru.utf-8"]
    shown = [(calls[0].id, text("vim-tutor.ja.utf-8")), (calls[1].id, "[saved elsewhere]")]
    again = script.respond(Request(SYSTEM_PROMPT, [], [session.prompt], shown))
    assert script.figures.answered == 2  # the Japanese two; the Russian two stay unanswered
    assert isinstance(again, list)  # nothing to read them with: on to the next turn's call
    assert [c.arguments["path"] for c in again] == ["vim-tutor.ru.utf-8"]


def test_inline_answers_everything_and_truncation_loses_what_is_past_its_cut(bench: Bench) -> None:
    session = _session("CI triage")
    inline = s3claim_side.run(bench, session, "inline")
    cut = s3claim_side.run(bench, session, f"truncation at {s3claim_side.TRUNCATE_AT:,}")
    assert (inline["answered"], inline["questions"]) == (6, 6)
    assert cut["answered"] < 6  # the failure and the summary are past the cut
    assert cut["conversation"] < inline["conversation"]


def test_s3claim_reads_on_through_its_tools_and_its_figures_follow_from_its_requests(
    bench: Bench,
) -> None:
    r = s3claim_side.run(bench, _session("endpoint lookup"), "s3claim (defaults)")
    assert (r["answered"], r["questions"]) == (4, 4)
    assert r["executions"] == 2  # get_json twice
    assert r["reads"] >= 3  # two members by path and a line
    assert r["store_requests"] > 0 and r["store_bytes"] > 0
    fixed = r["tools"] + len(SYSTEM_PROMPT)  # the same in every request
    assert r["whole"] == r["conversation"] + r["turns"] * fixed
    assert r["largest"] <= r["whole"]


def test_where_a_peer_sends_less_the_notes_say_so_and_why() -> None:
    session = sessions()[0].name

    def figures(system: str, conversation: int, tools: int, turns: int) -> dict[str, object]:
        whole = conversation + tools * turns
        return {
            "session": session,
            "system": system,
            "conversation": conversation,
            "whole": whole,
            "tools": tools,
            "turns": turns,
            "answered": 6,
            "questions": 6,
        }

    got = {
        (session, study.DEFAULTS): figures(study.DEFAULTS, 10_000, 3_000, 6),
        (session, "pydantic-ai-harness"): figures("pydantic-ai-harness", 12_000, 1_000, 6),
    }
    headlines, notes = study.findings(got)
    assert headlines == [
        f"{session}: with every answer exact, the fewest conversation characters "
        f"{study.DEFAULTS} (10,000), the fewest whole-request characters pydantic-ai-harness "
        "(18,000)."
    ]
    assert len(notes) == 1
    assert "pydantic-ai-harness sent fewer whole-request characters" in notes[0]
    assert "tool definitions are 1,000 characters against s3claim's 3,000" in notes[0]


def test_without_the_peers_venvs_the_section_still_builds_and_says_why(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peers, "PEER_VENVS", peers.ROOT / ".venv-peers-none-here")
    section = study.run(bench)
    systems = {row[1] for row in section.tables[0].rows}
    assert systems == set(s3claim_side.ARMS)
    missing = [n for n in section.notes if "run `make bench-peers-venvs`" in n]
    assert [n.split(":", 1)[0] for n in missing] == [
        "pydantic-ai-harness",
        "Deep Agents",
        "Strands",
    ]
    assert len(section.headlines) == len(sessions())
