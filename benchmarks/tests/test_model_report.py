"""The real-model section, built from the results JSON the model study saves.

No model runs here: the figures are synthetic, and only what the section makes of them is
under test (medians, refusals, ratios, the wide-window note), and that the committed results
still build one.
"""

from __future__ import annotations

import copy
from typing import Any

from benchmarks.model import report


def _sample(seconds: float, tokens: int, *, error: str | None = None) -> dict[str, Any]:
    return {
        "seconds": seconds * 2,
        "cpu_seconds": seconds,
        "prompt_tokens": tokens,
        "evaluated_tokens": 0 if error else tokens,
        "error": error,
    }


def _arm(scenario: str, name: str, turns: list[tuple[float, int]], refused: int | None = None):
    chars = [t * 4 for _, t in turns] + ([refused * 4] if refused else [])
    passes = []
    for spread in (1.0, 3.0, 2.0):  # medians come from the middle pass
        samples = [_sample(s * spread, t) for s, t in turns]
        if refused:
            samples.append(_sample(0.01, refused, error="HTTP 400: context_length_exceeded"))
        passes.append(samples)
    return {
        "scenario": scenario,
        "name": name,
        "chars": chars,
        "passes": {"cold": passes, "warm": copy.deepcopy(passes)},
    }


DATA: dict[str, Any] = {
    "date": "2026-12-01 00:00 UTC",
    "run_seconds": 600,
    "load_average": {"before": [1.0, 1.0, 1.0], "after": [2.0, 2.0, 2.0]},
    "environment": [["Model", "SmolLM2-135M-Instruct"]],
    "server": {"n_ctx": 8192},
    "model": {"name": "SmolLM2-135M-Instruct", "quantisation": "Q4_1", "n_ctx_train": 8192},
    "contract_chars": 92212,
    "truncate_at": 16384,
    "plan": {"warm": 3, "cold": {"counsel": 3, "twenty": 3}},
    "arms": [
        _arm("counsel", "claim check", [(0.1, 59), (1.0, 264), (5.0, 1278), (10.0, 2342)]),
        _arm("counsel", "truncation at 16,384", [(0.1, 59), (20.0, 3940)]),
        _arm("counsel", "inline", [(0.1, 59)], refused=21819),
        _arm("twenty", "claim check", [(0.1, 59)] + [(10.0, 2342)] * 19),
        _arm("twenty", "truncation at 16,384", [(0.1, 59)] + [(20.0, 3940)] * 19),
        _arm("twenty", "inline", [(0.1, 59)], refused=21819),
    ],
    "wide": None,
    "end_to_end": {},
}


def test_the_section_reports_medians_refusals_and_ratios() -> None:
    section = report.section(DATA)
    summary = section.tables[0]
    rows = {(r[0][:7], r[1]): r for r in summary.rows}

    inline = rows[("Counsel", "inline")]
    assert inline[2:4] == ["1 of 2", "no: turn 2 is 21,819 tokens > 8,192"]
    ours = rows[("Counsel", "claim check")]
    assert ours[2:6] == ["4 of 4", "yes", "3,943", "2,342"]
    assert ours[6] == "32.2 s"  # cold CPU: per-turn medians (the 2x pass) summed
    assert rows[("20 turn", "truncation at 16,384")][10] == "2.00×"
    counsel_turns = section.tables[1]
    assert counsel_turns.rows[1][7:] == ["21,819 ✗", "refused", "refused"]
    assert counsel_turns.rows[3][7:] == ["—", "—", "—"]
    [headline] = section.headlines
    assert headline.startswith(report.HEADLINE_START)
    assert "turn 2 is 21,819 tokens" in headline and "loses 82% of the contract" in headline


def test_the_committed_results_render() -> None:
    data = report.load()
    assert data is not None, "benchmarks/results/model.json is committed with the report"
    section = report.section(data)
    assert section.title == report.TITLE
    assert section.headlines and "refuses it" in section.headlines[0]


def test_a_wide_window_run_is_reported_when_there_is_one() -> None:
    assert any("WIDE=1" in note for note in report.section(DATA).notes)
    wide = copy.deepcopy(DATA)
    inline = _arm("twenty", "inline", [(0.1, 59), (600.0, 21819)] + [(1.0, 21837)] * 18)
    del inline["passes"]["cold"]
    wide["wide"] = {"n_ctx": 32768, "arms": [inline]}

    notes = report.section(wide).notes

    [note] = [n for n in notes if n.startswith("With a 32,768-token window")]
    assert "Its turn 2 (21,819 tokens, the contract) took 1,200 s of CPU" in note
    assert not any("WIDE=1" in n for n in notes)
