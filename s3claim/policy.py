"""ClaimCheckPolicy: when a result is checked in, how much stays, how long it lives."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, PositiveInt, model_validator

__all__ = ["ClaimCheckPolicy"]


class ClaimCheckPolicy(BaseModel):
    """Thresholds for one tool (or all tools).

    threshold_chars: results shorter than this pass through; a handle costs a tool call, and
        a small result is cheaper to just read.
    head_chars: the most that stays in the conversation.
    ttl_seconds: how long the content can still be fetched.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    threshold_chars: PositiveInt = 4096
    head_chars: PositiveInt = 512
    ttl_seconds: PositiveInt = 3600

    @model_validator(mode="after")
    def _head_smaller_than_threshold(self) -> Self:
        if self.head_chars >= self.threshold_chars:
            raise ValueError(
                f"head_chars ({self.head_chars}) must be smaller than threshold_chars "
                f"({self.threshold_chars}): a head that large would replace the result with "
                "something no smaller than what it checked in"
            )
        return self
