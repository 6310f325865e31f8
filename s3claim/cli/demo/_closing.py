"""What every demo shows the same way: the run's events, and how it ends.

A new user's first run leaves nothing behind (an embedded S3 stops with the demo), so the last
screen says so, and names the next commands the way this user can type them: `s3claim` when
the one on PATH is this install's, else its path (`make demo` runs `.venv/bin/python -m
s3claim`, and `.venv/bin` is rarely on PATH).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from s3claim.events import Event

__all__ = ["command_name", "event_table", "next_steps", "render_closing"]


def command_name() -> str:
    """`s3claim` if that is this install on PATH; else this install's script, as typed here."""
    script = Path(sys.executable).parent / "s3claim"
    found = shutil.which("s3claim")
    if found is not None and Path(found).resolve() == script.resolve():
        return "s3claim"
    if not script.exists():
        return f"{Path(sys.executable).name} -m s3claim"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def next_steps(*, failover: bool) -> list[dict[str, str]]:
    """The commands to try next, each with what it shows."""
    command = command_name()
    real_model = (
        f"{command} demo --provider openai --base-url URL --model NAME",
        "the same question to a real model (any chat-completions server)",
    )
    library = ("README.md (Library quickstart)", "the claim check in your own agent, in Python")
    resumed = (
        f"{command} demo --failover",
        "the run killed mid-way, and resumed from the bucket by a fresh process",
    )
    journal = ("docs/journal.md", "how a run outlives its process")
    steps = [real_model, journal, library] if failover else [resumed, real_model, library]
    return [{"command": c, "shows": shows} for c, shows in steps]


def event_table(events: Sequence[Event], *, commas: bool) -> Table:
    """Each event's kind and fields; `commas` groups the digits of whole numbers."""

    def shown(value: object) -> str:
        if isinstance(value, tuple | list):
            return ",".join(map(str, value))
        return f"{value:,}" if commas and isinstance(value, int) else str(value)

    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("event")
    table.add_column("details", overflow="fold")
    for event in events:
        fields = event.model_dump(exclude={"kind"})
        table.add_row(event.kind, "  ".join(f"{k}={shown(v)}" for k, v in fields.items()))
    return table


def render_closing(console: Console, data: dict[str, Any]) -> None:
    """How long the demo took, where its claims lived, and what to run next."""
    console.print(Text(f"\nFinished in {data['seconds']:.2f} s.", style="dim"))
    console.print(Rule("Where the claims lived"))
    console.print(Text(data["claims_lived"]))
    console.print(Text("Next:", style="bold"))
    for step in data["next"]:
        # Never cut: a command broken across two lines no longer pastes as one.
        console.print(Text(f"  {step['command']}", style="bold"), soft_wrap=True)
        console.print(Text(f"      {step['shows']}", style="dim"))
