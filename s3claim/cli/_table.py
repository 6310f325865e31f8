"""The listings: a count on stderr while they are read (one HEAD an entry), then a table.

The table is boxed on a terminal, its cells wrapping rather than ending in `…`; anywhere
else it is plain columns at their natural width, never cut, so `s3claim ls | grep` sees
every digit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO, TypeVar

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ["Column", "collected", "counting", "is_terminal", "print_table"]

T = TypeVar("T")


@contextmanager
def counting(description: str, verb: str) -> Iterator[Callable[[int], None]]:
    """A count on stderr, on a terminal only, erased when done; update it with the callable."""
    if not is_terminal(sys.stderr):
        yield lambda _: None
        return
    console = Console(stderr=True, force_terminal=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn(f"{{task.completed:,}} {verb}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=None)
        yield lambda n: progress.update(task, completed=n)


def collected(items: Iterable[T], description: str, verb: str) -> list[T]:
    """Every item, counted on stderr as it comes (see `counting`)."""
    found: list[T] = []
    with counting(description, verb) as update:
        for item in items:
            found.append(item)
            update(len(found))
    return found


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False
    """Right-aligned (numbers)."""
    whole: bool = False
    """Never wrapped, even on a narrow terminal (a handle must copy as one word)."""
    abbreviate: int | None = None
    """On a terminal, show this many leading characters (a run tag's 12 of 32 digits, as git
    shows short hashes); plain output and --json have them all."""


def is_terminal(stream: TextIO) -> bool:
    """The stream itself is a terminal. Not rich's view, which FORCE_COLOR turns on in a pipe:
    colour there is a choice, cut cells and spinner frames are not."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def print_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    if is_terminal(sys.stdout):
        console = Console(highlight=False, force_terminal=True)
        # No vertical rules and no edge padding: at 80 columns a handle, a short run tag and
        # a size leave a date the room to wrap at its space rather than mid-number.
        table = Table(
            header_style="bold", title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
        )
        for column in columns:
            table.add_column(
                column.header,
                justify="right" if column.right else "left",
                no_wrap=column.whole,
                overflow="fold",
            )
        for row in rows:
            table.add_row(*(_shown(cell, c) for cell, c in zip(row, columns, strict=True)))
        console.print(table)
        return
    typer.echo("\n".join([title, *_aligned(columns, rows)]))


def _shown(cell: str, column: Column) -> str:
    return cell[: column.abbreviate] if column.abbreviate else cell


def _aligned(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[str]:
    cells = [[c.header for c in columns], *[list(row) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return [
        "  ".join(
            cell.rjust(width) if column.right else cell.ljust(width)
            for cell, width, column in zip(row, widths, columns, strict=True)
        ).rstrip()
        for row in cells
    ]
