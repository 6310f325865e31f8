"""Conversation messages, in the chat-completions shape.

docs/journal.md shows them recorded and resumed.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "conversation_chars",
]


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SystemMessage(_Message):
    role: Literal["system"] = "system"
    content: str


class UserMessage(_Message):
    role: Literal["user"] = "user"
    content: str


class ToolCall(_Message):
    """A request by the model to run a tool; `arguments` is the decoded JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class AssistantMessage(_Message):
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ToolMessage(_Message):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


def conversation_chars(messages: list[Message]) -> int:
    """Characters a provider is sent for these messages: contents and tool-call arguments."""
    total = 0
    for message in messages:
        total += len(message.content or "")
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                total += len(call.name) + len(json.dumps(call.arguments, ensure_ascii=False))
    return total
