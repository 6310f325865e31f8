"""How every demo ends: where its claims lived, and the commands to try next.

A new user's first run leaves nothing behind (an embedded S3 stops with the demo), so the last
screen says so, and names the next commands the way this user can type them: `s3claim` when
the one on PATH is this install's, else its path (`make demo` runs `.venv/bin/python -m
s3claim`, and `.venv/bin` is rarely on PATH).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

__all__ = ["command_name", "next_steps", "render_closing"]

Step = tuple[str, str]
"""A command to type, and what it shows."""


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


def next_steps(*, failover: bool) -> list[Step]:
    command = command_name()
    real_model = (
        f"{command} demo --provider openai --base-url URL --model NAME",
        "the same question to a real model (any chat-completions server)",
    )
    library = ("README.md (Library quickstart)", "the claim check in your own agent, in Python")
    if failover:
        return [real_model, ("docs/journal.md", "how a run outlives its process"), library]
    resumed = (
        f"{command} demo --failover",
        "the run killed mid-way, and resumed from the bucket by a fresh process",
    )
    return [resumed, real_model, library]


def render_closing(console: Console, lived: str, steps: list[Step]) -> None:
    console.print(Rule("Where the claims lived"))
    console.print(Text(lived))
    console.print(Text("Next:", style="bold"))
    for command, shows in steps:
        # Never cut: a command broken across two lines no longer pastes as one.
        console.print(Text(f"  {command}", style="bold"), soft_wrap=True)
        console.print(Text(f"      {shows}", style="dim"))
