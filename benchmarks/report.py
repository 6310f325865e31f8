"""Results as tables: printed to the terminal, written to docs/benchmarks.md, and one plot."""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FetchPoint",
    "Section",
    "Table",
    "plot_fetch",
    "render_markdown",
    "render_text",
    "replace_sections",
    "section_markdown",
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
    """Without a number: sections are numbered in the order the report runs them."""
    intro: str
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headlines: list[str] = field(default_factory=list)
    """One-line results worth quoting (they also go to the top of the report)."""
    budget_failures: list[str] = field(default_factory=list)
    """Budgets this measure missed; any makes `python -m benchmarks` exit 1."""


@dataclass(frozen=True)
class FetchPoint:
    """One curve point of the plot: medians over positions, for one store and charset."""

    chars: int
    charset: str
    store: str
    seconds: float
    response_bytes: float


def _markdown_table(table: Table) -> list[str]:
    out = [f"**{table.title}**", ""] if table.title else []
    out.append("| " + " | ".join(table.headers) + " |")
    aligns = [":---" if i < table.align_left else "---:" for i in range(len(table.headers))]
    out.append("| " + " | ".join(aligns) + " |")
    out.extend("| " + " | ".join(row) + " |" for row in table.rows)
    out.append("")
    return out


def render_markdown(
    sections: Sequence[Section], *, preamble: Sequence[str], environment: Sequence[tuple[str, str]]
) -> str:
    lines = ["# Benchmarks", "", *preamble, ""]
    headlines = [h for s in sections for h in s.headlines]
    if headlines:
        lines += ["## Headline figures", "", *(f"- {h}" for h in headlines), ""]
    lines += ["## Machine and versions", "", "| | |", "| :--- | :--- |"]
    lines += [f"| {name} | {value} |" for name, value in environment]
    lines.append("")
    for number, section in enumerate(sections, start=1):
        lines += section_markdown(section, number)
    return "\n".join(lines).rstrip() + "\n"


def section_markdown(section: Section, number: int | None = None) -> list[str]:
    """One section's lines, from its `## ` heading (numbered when given) to the blank line
    that ends it."""
    heading = section.title if number is None else f"{number}. {section.title}"
    lines = [f"## {heading}", "", section.intro, ""]
    for table in section.tables:
        lines += _markdown_table(table)
    lines += [f"- {note}" for note in section.notes]
    if section.notes:
        lines.append("")
    return lines


def replace_sections(markdown: str, sections: Sequence[Section]) -> str:
    """`markdown` with each section rewritten in place, under its number; a section the
    report does not have yet is appended with the next number. Its headlines that start
    with its title replace those in the headline block."""
    blocks = re.split(r"(?m)^(?=## )", markdown)
    numbered = [re.match(r"## (\d+)\. (.*)", b) for b in blocks]
    for section in sections:
        at = next(
            (i for i, m in enumerate(numbered) if m and m.group(2).strip() == section.title), None
        )
        if at is None:
            number = 1 + max((int(m.group(1)) for m in numbered if m), default=0)
            blocks[-1] = blocks[-1].rstrip() + "\n\n"
            blocks.append("\n".join(section_markdown(section, number)).rstrip() + "\n\n")
            numbered.append(re.match(r"## (\d+)\. (.*)", blocks[-1]))
        else:
            match = numbered[at]
            assert match is not None
            blocks[at] = "\n".join(section_markdown(section, int(match.group(1)))).rstrip() + "\n\n"
    for i, block in enumerate(blocks):
        if block.startswith("## Headline figures"):
            blocks[i] = _replace_headlines(block, sections)
    return "".join(blocks).rstrip() + "\n"


def _replace_headlines(block: str, sections: Sequence[Section]) -> str:
    """The headline block with the bullets that start with a rewritten section's title
    replaced by its new headlines (which start with it too); the others kept."""
    titles = tuple(f"- {s.title}" for s in sections)
    kept = [line for line in block.rstrip().split("\n") if not line.startswith(titles)]
    fresh = [f"- {h}" for s in sections for h in s.headlines if h.startswith(s.title)]
    return "\n".join([*kept, *fresh]) + "\n\n"


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


def render_text(section: Section, number: int) -> str:
    lines = [f"== {number}. {section.title} ==", ""]
    for table in section.tables:
        lines += _text_table(table)
    lines += [f"* {note}" for note in section.notes]
    return "\n".join(lines)


def plot_fetch(points: Sequence[FetchPoint], path: Path, *, timing_server: str) -> None:
    """Latency and bytes per fetch against document size, s3claim against naive, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, (latency, traffic) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    styles = {
        ("s3claim", "ascii"): ("tab:blue", "o", "-"),
        ("s3claim", "utf8"): ("tab:blue", "s", "--"),
        ("naive", "ascii"): ("tab:red", "o", "-"),
        ("naive", "utf8"): ("tab:red", "s", "--"),
    }
    names = {"ascii": "ASCII", "utf8": "mixed UTF-8"}
    for (store, charset), (color, mark, dash) in styles.items():
        curve = sorted(
            (p for p in points if p.store == store and p.charset == charset), key=lambda p: p.chars
        )
        if not curve:
            continue
        xs = [p.chars for p in curve]
        style: dict[str, Any] = {
            "color": color,
            "marker": mark,
            "linestyle": dash,
            "label": f"{store}, {names[charset]}",
            # hollow, larger markers for UTF-8: where the two curves coincide, both still show
            "markerfacecolor": "none" if charset == "utf8" else color,
            "markersize": 9 if charset == "utf8" else 5,
        }
        latency.plot(xs, [p.seconds * 1000 for p in curve], **style)
        traffic.plot(xs, [p.response_bytes for p in curve], **style)

    sizes = sorted({p.chars for p in points})
    for axis in (latency, traffic):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xticks(sizes, [_size_label(x) for x in sizes])
        axis.minorticks_off()
        axis.set_xlabel("document size (characters)")
        axis.grid(True, which="major", alpha=0.4)
        axis.legend(fontsize=8, loc="upper left")
    latency.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    latency.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g} ms"))
    traffic.yaxis.set_major_locator(LogLocator(base=4))  # 16 KiB, 64 KiB, 256 KiB, 1 MiB...
    traffic.yaxis.set_major_formatter(FuncFormatter(lambda y, _: _bytes_label(y)))
    latency.set_ylabel("median latency per fetch")
    latency.set_title(f"Fetch latency ({timing_server})", fontsize=10)
    traffic.set_ylabel("response body per fetch")
    traffic.set_title("Bytes moved per fetch (counted on moto)", fontsize=10)
    fig.suptitle("One 4,096-character window: s3claim (one ranged GET) vs naive (whole object)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _size_label(chars: float) -> str:
    for unit, scale in (("Mi", 1024**2), ("Ki", 1024)):
        if chars >= scale:
            return f"{chars / scale:g} {unit}"
    return f"{chars:g}"


def _bytes_label(value: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def machine() -> list[tuple[str, str]]:
    """Cores, memory, OS and Python of this machine."""
    import os

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
