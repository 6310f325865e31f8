"""One renderer for every page: sections saved as JSON, laid out the same whoever measured them.

`python -m benchmarks --only NAME` re-measures one study and renders every page from the
saved sections; `--render` re-lays them out measuring nothing. Headings carry no number, so
the anchors topic pages link to stay put when a section comes or goes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.report import (
    Section,
    Table,
    load_section,
    render_page,
    save_section,
    section_markdown,
    splice,
)

FETCH = Section(
    title="Fetch one window",
    intro="One window.",
    tables=[Table(headers=["a", "b"], rows=[["x", "1"]], title="Counted")],
    notes=["Flat."],
    headlines=["Fetch: 1 GET"],
)


def test_a_section_survives_its_json(tmp_path: Path) -> None:
    save_section(FETCH, tmp_path / "fetch.json")
    assert load_section(tmp_path / "fetch.json") == FETCH


def test_a_page_gathers_the_headlines_and_numbers_no_heading() -> None:
    peers = Section(title="Side by side with the peers", intro="Peers.", headlines=["12 of 12"])
    page = render_page([FETCH, peers], preamble="Pre.", environment=[("CPU", "2 cores")])
    assert page.startswith("# Benchmarks\n\nPre.\n\n## Headline figures\n\n")
    assert "- Fetch: 1 GET\n- 12 of 12\n\n## Machine and versions" in page
    assert "| CPU | 2 cores |" in page
    assert "## Fetch one window\n\nOne window.\n\n**Counted**\n\n| a | b |\n| :--- | ---: |" in page
    assert "| x | 1 |\n\n- Flat.\n\n## Side by side with the peers\n\nPeers.\n" in page


def test_a_block_of_a_page_written_by_hand_is_replaced_and_nothing_else() -> None:
    page = "# Capacity\n\nProse.\n\n<!-- load:begin -->\nold\n<!-- load:end -->\n\nMore prose.\n"
    once = splice(page, "load", FETCH)
    assert once == (
        "# Capacity\n\nProse.\n\n<!-- load:begin -->\n\n"
        + "\n".join([*section_markdown(FETCH, heading=None), "<!-- load:end -->"])
        + "\n\nMore prose.\n"
    )
    assert "## Fetch" not in once and "old" not in once
    assert splice(once, "load", FETCH) == once
    with pytest.raises(ValueError, match="costs:begin"):
        splice(page, "costs", FETCH)


def test_render_lays_out_the_saved_sections_in_the_studies_order(tmp_path: Path) -> None:
    sections = tmp_path / "results" / "sections"
    save_section(
        Section(title="Side by side with the peers", intro="Peers."), sections / "peers.json"
    )
    save_section(FETCH, sections / "fetch.json")
    save_section(Section(title="Retired", intro="Gone."), sections / "integrity.json")

    assert main(["--render", "--out", str(tmp_path)]) == 0

    page = (tmp_path / "benchmarks.md").read_text()
    assert page.index("## Fetch one window") < page.index("## Side by side with the peers")
    assert "Retired" not in page  # a study the harness no longer has is not rendered
    capacity = (tmp_path / "capacity.md").read_text()  # its costs, from the committed results
    assert "<!-- costs:begin -->\n\n| operation | S3 requests |" in capacity
