"""What a journal keeps of a run: the conversation the model saw, and where the run stands.

A record is written whole after every model call, so one read restores a run of any length.
It holds exactly what the model was sent (heads and markers, never the content behind a
handle) and the run's events (sizes, tool names and handles), never anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from s3claim.events import Event
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage

__all__ = ["JournalEntry", "RunInfo", "RunRecord", "RunStatus"]

RunStatus = Literal["running", "answered", "max_turns"]
"""`running` until the model answers (`answered`) or the run uses its last turn (`max_turns`)."""


class RunRecord(BaseModel):
    """One run as its journal holds it; `turns` counts the model calls recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: RunStatus
    turns: int = Field(ge=0)
    messages: tuple[Message, ...]
    events: tuple[Event, ...] = ()
    output: str | None = None

    @property
    def finished(self) -> bool:
        return self.status != "running"

    def unanswered(self) -> tuple[ToolCall, ...]:
        """The last assistant message's tool calls that have no recorded result.

        The assistant's reply is recorded before its tools run, and their results with the
        next reply: a run stopped in between resumes by running these again.
        """
        for index in range(len(self.messages) - 1, -1, -1):
            message = self.messages[index]
            if isinstance(message, AssistantMessage):
                answered = {
                    m.tool_call_id for m in self.messages[index + 1 :] if isinstance(m, ToolMessage)
                }
                return tuple(c for c in message.tool_calls if c.id not in answered)
        return ()

    def __repr__(self) -> str:  # messages hold tool results: never in a repr
        return (
            f"RunRecord(status={self.status!r}, turns={self.turns}, "
            f"messages={len(self.messages)}, events={len(self.events)})"
        )

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """A record as loaded, with the version a conditional save must replace."""

    record: RunRecord
    version: str

    def __repr__(self) -> str:
        return f"JournalEntry(record={self.record!r}, version={self.version!r})"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as a listing shows it: tag, status, size and times, never content.

    `unreadable` is a journal object this version cannot read (damaged, or a newer format):
    listed by its tag, its numbers zero.
    """

    run_tag: str
    status: RunStatus | Literal["unreadable"]
    turns: int
    updated_at: float
    expires_at: int
