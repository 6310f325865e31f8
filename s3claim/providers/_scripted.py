"""ScriptedProvider: a deterministic model for tests, demos and benchmarks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from s3claim.messages import AssistantMessage, Message

__all__ = ["ScriptedProvider", "Step"]

Step = AssistantMessage | Callable[[Sequence[Message]], AssistantMessage]


class ScriptedProvider:
    """A deterministic provider that plays its steps in order.

    A step is a message, or a function of the conversation so far that returns one: that
    is how a script reads a handle out of a head and fetches with it. Like a real model it
    answers from the conversation alone: the step it plays is the number of assistant
    messages already in it, so a fresh provider carries on a resumed run where it stopped.
    `calls` counts the calls this instance answered. `context_window_chars`: the window it
    claims to have, for a runner's `max_share_of_room`.
    """

    def __init__(self, steps: Iterable[Step], *, context_window_chars: int | None = None) -> None:
        self._steps = list(steps)
        self.calls = 0
        self.context_window_chars = context_window_chars

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        index = sum(isinstance(m, AssistantMessage) for m in messages)
        if index >= len(self._steps):
            raise RuntimeError(
                f"ScriptedProvider has no step {index + 1} (the script has {len(self._steps)})"
            )
        step = self._steps[index]
        self.calls += 1
        return step(messages) if callable(step) else step
