"""The provider protocol: whatever turns a conversation into the model's next message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from s3claim.messages import AssistantMessage, Message

__all__ = ["Provider"]


@runtime_checkable
class Provider(Protocol):
    """One method. A provider that knows its model's context window may say so with a
    `context_window_chars` attribute (an int): a runner's `max_share_of_room` reads it."""

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        """The next assistant message; `tools` are chat-completions `function` schemas."""
        ...
