"""`python -m benchmarks --only NAME` rewrites its sections of the report in place."""

from __future__ import annotations

from benchmarks.report import Section, Table, render_markdown, replace_sections


def _report() -> str:
    sections = [
        Section(title="Fetch one window", intro="first"),
        Section(title="Side by side with the peers", intro="old figures"),
        Section(title="Prefill on a real model", intro="kept"),
    ]
    return render_markdown(sections, preamble=["pre"], environment=[("CPU", "2 cores")])


def test_a_section_is_rewritten_under_its_number_and_the_rest_kept() -> None:
    fresh = Section(
        title="Side by side with the peers",
        intro="new figures",
        tables=[Table(headers=["a", "b"], rows=[["x", "1"]])],
    )
    out = replace_sections(_report(), [fresh])
    assert "old figures" not in out
    assert "## 2. Side by side with the peers\n\nnew figures\n\n| a | b |" in out
    assert (
        out.index("## 1. Fetch one window") < out.index("## 2. Side") < out.index("## 3. Prefill")
    )
    assert "\n\n## 3. Prefill on a real model\n\nkept\n" in out
    assert out.endswith("kept\n")
    assert replace_sections(out, [fresh]) == out  # a second run changes nothing


def test_a_section_the_report_lacks_is_appended_with_the_next_number() -> None:
    out = replace_sections(_report(), [Section(title="Something new", intro="appended")])
    assert out.endswith("\n\n## 4. Something new\n\nappended\n")
    assert "old figures" in out


def test_the_headlines_of_a_rewritten_section_replace_its_old_ones() -> None:
    sections = [
        Section(title="Fetch one window", intro="a", headlines=["Fetch: 1 GET"]),
        Section(title="Side by side", intro="b", headlines=["Side by side: old"]),
    ]
    report = render_markdown(sections, preamble=["pre"], environment=[("CPU", "2")])
    fresh = Section(title="Side by side", intro="c", headlines=["Side by side: new"])
    out = replace_sections(report, [fresh])
    assert "- Fetch: 1 GET\n- Side by side: new\n\n## Machine" in out
    assert "old" not in out
