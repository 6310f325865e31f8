"""ClaimCheckPolicy: when a result is checked in, how much stays, how long it lives.

docs/reading.md has each knob, its presets and when not to use them.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    field_validator,
    model_validator,
)

from s3claim._reading import LINE_CHARS, compile_pick_pattern

__all__ = ["LOG_PATTERN", "ROOT_LISTING_CHARS", "ClaimCheckPolicy"]

ROOT_LISTING_CHARS = 1024
"""The most the JSON root listing (`json_root`) takes; members that do not fit are counted."""

LOG_PATTERN = (
    r"(?m)\b(?:ERROR|FATAL|CRITICAL|SEVERE|PANIC|FAIL(?:ED)?)\b|\bfailed\b|(?:Error|Exception):|"
    r"\berror(?:\[\w+\])?:|##\[error\]|^Traceback |^E   |^panic:|^Caused by:|^npm ERR!|\*\*\* \["
)
"""What `for_logs` picks: lines that say something failed, in the words build tools, test
runners and loggers use: levels ERROR and above, `FAIL`, `FAILED` and `failed` (pytest, Go,
most tools), `ValueError:` and any `...Exception:`, compilers' `error:` and `error[E0308]:`,
GitHub Actions' `##[error]`, a traceback's first line, pytest's `E   ` lines, Go's `panic:`,
Java's `Caused by:`, npm's `ERR!`, make's `*** [`; never a warning. `(?m)` makes `^` the
start of a line, as in `search_result`."""


class ClaimCheckPolicy(BaseModel):
    """Thresholds for one tool (or all tools).

    threshold_chars: results shorter than this pass through; a handle costs a tool call, and
        a small result is cheaper to just read.
    head_chars: the most of the result's start that stays in the conversation.
    tail_chars: the most of its end that stays too, after the marker (0: none, the spec's
        preview); for tools whose answer is at the end, such as a build log's error. Beside
        `pick_lines`, only an end that tells something: from the first line in reach after
        a blank line or matching the pattern, else no tail (`telling_end`).
    pick_lines: a regular expression (as `search_result` takes one); up to `pick_max` whole
        lines it matches that neither the head nor the tail shows are shown after the
        marker, each with its line number (None: none, the spec's preview).
    pick_max: the most lines `pick_lines` shows: the first half and the last half of the
        lines it matches, when more match.
    json_root: a result that is a JSON object gets the root's members the head does not show
        whole listed after the marker (each key, its type and its span), as a read by path
        lists them; only where that listing is shorter than those members' characters.
    ttl_seconds: how long the content can still be fetched.
    turn_budget_chars: the most one model turn's tool results may put in the conversation
        together; past it, the largest are checked in first, threshold or not, until the turn
        fits (`s3claim.turns`). A turn's budget is the smallest of its tools' policies'.
    max_share_of_room: the most of the room left in the model's context window (the window
        less the conversation so far) one result may take before it is checked in, threshold
        or not; needs the window, from `context_window_chars` or the runner's provider.
    context_window_chars: the model's context window, in characters.
    All three are off by default (None): the spec's behaviour.

    What a preview keeps of the result (head, tail, `pick_max` lines of at most
    `LINE_CHARS`, a root listing of at most `ROOT_LISTING_CHARS`) must be smaller than the
    threshold. `for_logs()` and `for_json()` are the presets (docs/reading.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    threshold_chars: PositiveInt = 4096
    head_chars: PositiveInt = 512
    tail_chars: NonNegativeInt = 0
    pick_lines: str | None = None
    pick_max: PositiveInt = 10
    json_root: bool = False
    ttl_seconds: PositiveInt = 3600
    turn_budget_chars: PositiveInt | None = None
    max_share_of_room: Annotated[float, Field(gt=0, le=1)] | None = None
    context_window_chars: PositiveInt | None = None

    @classmethod
    def for_logs(cls, *, threshold_chars: int = 4096, ttl_seconds: int = 3600) -> Self:
        """A build or test log, a service's log: its start, up to 8 lines that say something
        failed (`LOG_PATTERN`) from anywhere after it, and an end that tells something (a
        final block, a failure: at most 1,024 characters; none for an end of like lines)."""
        return cls(
            threshold_chars=threshold_chars,
            ttl_seconds=ttl_seconds,
            head_chars=512,
            tail_chars=1024,
            pick_lines=LOG_PATTERN,
            pick_max=8,
        )

    @classmethod
    def for_json(cls, *, threshold_chars: int = 4096, ttl_seconds: int = 3600) -> Self:
        """An API response: its start, and the root's members the head does not show, with
        their types and spans, so the model reads the one it needs by path."""
        return cls(
            threshold_chars=threshold_chars,
            ttl_seconds=ttl_seconds,
            head_chars=512,
            json_root=True,
        )

    @field_validator("pick_lines")
    @classmethod
    def _a_pattern(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            compile_pick_pattern(pattern)  # ValueError, one line: pydantic names the field
        return pattern

    @model_validator(mode="after")
    def _head_smaller_than_threshold(self) -> Self:
        kept = [("head_chars", self.head_chars)]
        if self.tail_chars:
            kept.append(("tail_chars", self.tail_chars))
        if self.pick_lines is not None:
            kept.append((f"pick_max * {LINE_CHARS}", self.pick_max * LINE_CHARS))
        if sum(size for _, size in kept) >= self.threshold_chars:
            names = " + ".join(name for name, _ in kept)
            sizes = " + ".join(str(size) for _, size in kept)
            raise ValueError(
                f"{names} ({sizes}) must be smaller than threshold_chars "
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
