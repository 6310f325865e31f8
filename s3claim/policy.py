"""ClaimCheckPolicy: when a result is checked in, how much stays, how long it lives."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, model_validator

__all__ = ["ClaimCheckPolicy"]


class ClaimCheckPolicy(BaseModel):
    """Thresholds for one tool (or all tools).

    threshold_chars: results shorter than this pass through; a handle costs a tool call, and
        a small result is cheaper to just read.
    head_chars: the most of the result's start that stays in the conversation.
    tail_chars: the most of its end that stays too, after the marker (0: none, the spec's
        preview); for tools whose answer is at the end, such as a build log's error.
    ttl_seconds: how long the content can still be fetched.
    turn_budget_chars: the most one model turn's tool results may put in the conversation
        together; past it, the largest are checked in first, threshold or not, until the turn
        fits (`s3claim.turns`). A turn's budget is the smallest of its tools' policies'.
    max_share_of_room: the most of the room left in the model's context window (the window
        less the conversation so far) one result may take before it is checked in, threshold
        or not; needs the window, from `context_window_chars` or the runner's provider.
    context_window_chars: the model's context window, in characters.
    All three are off by default (None): the spec's behaviour.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    threshold_chars: PositiveInt = 4096
    head_chars: PositiveInt = 512
    tail_chars: NonNegativeInt = 0
    ttl_seconds: PositiveInt = 3600
    turn_budget_chars: PositiveInt | None = None
    max_share_of_room: Annotated[float, Field(gt=0, le=1)] | None = None
    context_window_chars: PositiveInt | None = None

    @model_validator(mode="after")
    def _head_smaller_than_threshold(self) -> Self:
        if self.head_chars + self.tail_chars >= self.threshold_chars:
            kept = (
                f"head_chars ({self.head_chars})"
                if not self.tail_chars
                else f"head_chars + tail_chars ({self.head_chars} + {self.tail_chars})"
            )
            raise ValueError(
                f"{kept} must be smaller than threshold_chars "
                f"({self.threshold_chars}): a preview that large would replace the result with "
                "something no smaller than what it checked in"
            )
        if self.context_window_chars is not None and self.max_share_of_room is None:
            raise ValueError(
                f"context_window_chars ({self.context_window_chars}) does nothing without "
                "max_share_of_room: give the share of the room left one result may take "
                "(such as 0.25)"
            )
        return self
