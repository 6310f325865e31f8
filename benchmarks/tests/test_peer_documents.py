"""The side-by-side's documents (benchmarks/peers/documents.py) are what the issue names."""

from __future__ import annotations

import itertools
import json

from benchmarks.peers.common import answer_line, answer_record, strip_end_note
from benchmarks.peers.documents import RECORD_INDEX, RECORDS, documents


def test_three_documents_four_layouts_three_tasks_each() -> None:
    docs = documents()
    assert [d.name for d in docs] == ["contract", "json-pretty", "json-minified", "log"]
    assert all([t.id for t in d.tasks] == ["find", "tail", "position"] for d in docs)
    assert all(d.tasks[1].expected == d.text[-2_000:] for d in docs)


def test_the_contract_holds_its_needle_once_and_clause_37_is_a_whole_line() -> None:
    contract = next(d for d in documents() if d.name == "contract")
    find, _, clause = contract.tasks
    assert contract.text.count("for convenience") == 1
    assert f"\n{find.expected}\n" in contract.text
    assert f"\n{clause.expected}\n" in contract.text
    assert clause.expected.startswith(clause.spec["needle"])


def test_the_json_response_is_two_thousand_records_in_both_layouts() -> None:
    pretty, minified = (d for d in documents() if d.kind == "json")
    assert json.loads(pretty.text) == json.loads(minified.text)
    items = json.loads(pretty.text)["items"]
    assert len(items) == RECORDS
    assert "\n" not in minified.text
    assert 300_000 <= len(minified.text.encode()) <= 400_000
    assert json.loads(pretty.tasks[2].expected) == items[RECORD_INDEX]
    named = [r for r in items if r["customer"] == pretty.tasks[0].spec["needle"]]
    assert len(named) == 1
    # every record spans the same number of lines, so a line reader can compute where one is
    lines = pretty.text.split("\n")
    starts = [i for i, line in enumerate(lines) if line == "    {"]
    assert len(starts) == RECORDS
    assert len({b - a for a, b in itertools.pairwise(starts)}) == 1


def test_the_log_has_one_error_at_sixty_percent_and_a_stack_trace_at_the_end() -> None:
    log = next(d for d in documents() if d.name == "log")
    find, tail, line = log.tasks
    assert 4_900_000 <= len(log.text.encode()) <= 5_000_000
    assert log.text.count(" ERROR ") == 1
    assert 0.59 <= log.text.index(find.expected) / len(log.text) <= 0.61
    assert "Traceback (most recent call last):" in tail.expected
    assert log.text.split("\n")[37_499] == line.expected


def test_answers_are_read_out_whole_or_not_at_all() -> None:
    text = 'x\n  {"id": 1, "name": "Ærø"},\n  {"id": 2}\n'
    assert answer_record(text, "Ærø") == '{"id": 1, "name": "Ærø"}'
    assert answer_record('"name": "Ærø"}', "Ærø") is None  # the record's start is not there
    assert answer_line("a\n4.7 b\n14.7 c", "4.7 ", starts=True) == "4.7 b"
    assert strip_end_note("text\n\n[characters 0-4 of 9. Call ...]") == "text"
    assert strip_end_note("text [kept]") == "text [kept]"
