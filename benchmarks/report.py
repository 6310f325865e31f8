"""Results as sections of tables: saved as JSON, printed as text, and rendered as markdown.

The one renderer of every benchmark page. A study returns a `Section`; the harness saves it
under benchmarks/results/sections/ and renders the pages from what is saved there, so a
section measured alone (`--only`) or long ago (`make bench-model`) is laid out like the
rest. docs/benchmarks.md is generated whole; a page that is also written by hand
(docs/capacity.md) holds each of its sections between `<!-- NAME:begin -->` and
`<!-- NAME:end -->`. Headings carry no number, so a section's anchor is its title's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Section",
    "Table",
    "load_section",
    "machine",
    "render_page",
    "render_text",
    "save_section",
    "section_markdown",
    "splice",
]


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    title: str = ""
    align_left: int = 1
    """How many leading columns are labels (left-aligned); the rest are numbers."""


@dataclass
class Section:
    title: str
    intro: str
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headlines: list[str] = field(default_factory=list)
    """One-line results worth quoting (they also go to the top of the page)."""
    budget_failures: list[str] = field(default_factory=list)
    """Budgets this measure missed; any makes `python -m benchmarks` exit 1."""


def save_section(section: Section, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dataclasses.asdict(section), ensure_ascii=False, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def load_section(path: Path) -> Section:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return Section(**{**data, "tables": [Table(**t) for t in data["tables"]]})


def _markdown_table(table: Table) -> list[str]:
    out = [f"**{table.title}**", ""] if table.title else []
    out.append("| " + " | ".join(table.headers) + " |")
    aligns = [":---" if i < table.align_left else "---:" for i in range(len(table.headers))]
    out.append("| " + " | ".join(aligns) + " |")
    out.extend("| " + " | ".join(row) + " |" for row in table.rows)
    return [*out, ""]


def section_markdown(section: Section, *, heading: str | None = "##") -> list[str]:
    """A section's lines: its heading (none for a block inside a page written by hand), its
    intro, tables and notes, each followed by a blank line."""
    lines = [f"{heading} {section.title}", ""] if heading else []
    lines += [section.intro, ""] if section.intro else []
    for table in section.tables:
        lines += _markdown_table(table)
    lines += [f"- {note}" for note in section.notes]
    return [*lines, ""] if section.notes else lines


def render_page(
    sections: Sequence[Section], *, preamble: str, environment: Sequence[tuple[str, str]]
) -> str:
    """docs/benchmarks.md: the preamble, every headline, the machine, then each section."""
    lines = ["# Benchmarks", "", preamble, ""]
    headlines = [h for s in sections for h in s.headlines]
    if headlines:
        lines += ["## Headline figures", "", *(f"- {h}" for h in headlines), ""]
    if environment:
        lines += ["## Machine and versions", "", "| | |", "| :--- | :--- |"]
        lines += [f"| {name} | {value} |" for name, value in environment]
        lines.append("")
    for section in sections:
        lines += section_markdown(section)
    return "\n".join(lines).rstrip() + "\n"


def splice(page: str, name: str, section: Section) -> str:
    """`page` with the block between its `NAME` markers replaced by the section's body."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in page or end not in page:
        raise ValueError(f"the page has no {begin} ... {end} block")
    body = "\n".join([begin, "", *section_markdown(section, heading=None), end])
    return re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: body, page, flags=re.S)


def _text_table(table: Table) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in table.rows)) if table.rows else len(h)
        for i, h in enumerate(table.headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < table.align_left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    out = [table.title] if table.title else []
    out += [line(table.headers), line(["-" * w for w in widths])]
    out += [line(r) for r in table.rows]
    return [*out, ""]


def render_text(section: Section) -> str:
    """A section for the terminal: its tables aligned, its notes and missed budgets."""
    lines = [f"== {section.title} ==", ""]
    for table in section.tables:
        lines += _text_table(table)
    lines += [f"* {note}" for note in section.notes]
    lines += [f"! budget missed: {failure}" for failure in section.budget_failures]
    return "\n".join(lines)


def machine() -> list[tuple[str, str]]:
    """Cores, memory, OS and Python of this machine."""
    memory = "unknown"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for row in meminfo.read_text().splitlines():
            if row.startswith("MemTotal:"):
                memory = f"{int(row.split()[1]) / 1024**2:.1f} GiB"
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for row in cpuinfo.read_text().splitlines():
            if row.startswith("model name"):
                cpu = row.split(":", 1)[1].strip()
                break
    return [
        ("CPU", f"{os.cpu_count()} cores, {cpu}"),
        ("Memory", memory),
        ("OS", f"{platform.system()} {platform.release()} ({platform.machine()})"),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
    ]
