"""ClaimCheckPolicy: when a result is checked in, how much stays, how long it lives."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, model_validator

__all__ = ["ClaimCheckPolicy"]


class ClaimCheckPolicy(BaseModel):
    """Thresholds for one tool (or all tools).

    threshold_chars: results shorter than this pass through; a handle costs a tool call, and
        a small result is cheaper to just read.
    head_chars: the most of the result's start that stays in the conversation.
    tail_chars: the most of its end that stays too, after the marker (0: none, the spec's
        preview); for tools whose answer is at the end, such as a build log's error.
    ttl_seconds: how long the content can still be fetched.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    threshold_chars: PositiveInt = 4096
    head_chars: PositiveInt = 512
    tail_chars: NonNegativeInt = 0
    ttl_seconds: PositiveInt = 3600

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
        return self
