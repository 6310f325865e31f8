"""What every side of the comparison shares; standard library only (the peers' venvs run it).

A scripted policy is a generator: it is sent the text of the last tool result (first the
preview the system left in place of the document) and yields the next call as
`Call(tool, arguments)`, or returns its answer (a string, or None when its tools have no way
to reach the target). `Driver` turns one into the step function a fake model calls.

`answer_line`, `answer_record` and `answer_tail` read an answer out of the clean text a
policy put together, the way a model would quote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Call",
    "Driver",
    "Policy",
    "answer_line",
    "answer_record",
    "read_spec",
]


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


Policy = Generator[Call, str, "str | None"]


@dataclass
class Driver:
    """Feeds tool results to a policy, one model turn at a time; records what it saw."""

    policy: Policy
    seen: list[str] = field(default_factory=list)
    """Every tool result the model read, the preview first."""
    calls: list[Call] = field(default_factory=list)
    answer: str | None = None
    done: bool = False

    def step(self, last_tool_text: str) -> Call | None:
        """The next call after `last_tool_text`, or None once the policy has answered."""
        self.seen.append(last_tool_text)
        try:
            call = self.policy.send(last_tool_text) if self.calls else next(self.policy)
        except StopIteration as stop:
            self.answer, self.done = stop.value, True
            return None
        self.calls.append(call)
        return call

    def result(self, task: str, *, bytes_read: int, note: str = "") -> dict[str, Any]:
        return {
            "task": task,
            "preview_chars": len(self.seen[0]) if self.seen else 0,
            "context_chars": sum(len(s) for s in self.seen),
            "calls": len(self.calls) - 1,  # the first is the tool that produced the document
            "bytes_read": bytes_read,
            "answer": self.answer,
            "how": " → ".join(_call_text(c) for c in self.calls[1:]) or "(no read)",
            "note": note,
        }


def _call_text(call: Call) -> str:
    shown = {
        k: v for k, v in call.arguments.items() if k not in ("handle", "reference", "file_path")
    }
    args = ", ".join(f"{k}={v!r}" for k, v in shown.items())
    return f"{call.tool}({args})"


def answer_line(text: str, needle: str, *, starts: bool = False) -> str | None:
    """The whole line of `text` holding `needle` (starting with it, when `starts`)."""
    for line in text.split("\n"):
        if line.startswith(needle) if starts else needle in line:
            return line
    return None


def answer_record(text: str, needle: str | None = None) -> str | None:
    """The flat JSON object around `needle` (or the first one) in `text`, as it stands there."""
    at = text.find(needle) if needle is not None else text.find("{")
    if at < 0:
        return None
    start = text.rfind("{", 0, at + 1)
    end = text.find("}", at)
    if start < 0 or end < 0:
        return None
    candidate = text[start : end + 1]
    try:
        json.loads(candidate)
    except ValueError:
        return None
    return candidate


def strip_end_note(window: str) -> str:
    """A window without a trailing bracketed paragraph (a footer or an end note)."""
    return re.sub(r"\n\n\[[^\n]*\]\Z", "", window)


def read_spec(raw: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(raw)
    return spec
