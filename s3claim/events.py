"""Typed run events, and their one observation. They name sizes, tools and handles, never
content.

Whatever happens to a tool call (stored, fetched, failed) is one event, and the event is the
one observation of it (`observing`): the host's callback gets it (the runner's record, an
adapter's `on_event`), the span it happened in gets it as a span event, and the log gets one
line of it, on `s3claim.events`: a failure's in words at WARNING (`Failure.line`), any other
as its JSON at INFO. No other line is written for the same thing. docs/observability.md
lists the events and their fields.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from opentelemetry import trace
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from s3claim.turns import CheckInReason

__all__ = [
    "ClaimEvicted",
    "ClaimFetchFailed",
    "ClaimFetched",
    "ClaimPassed",
    "ClaimSearchFailed",
    "ClaimSearched",
    "ClaimUnavailable",
    "Event",
    "ModelCalled",
    "ResultReused",
    "RunFinished",
    "RunResumed",
    "ToolFailed",
    "ToolResultStoreFailed",
    "ToolResultStored",
    "ToolResultTruncated",
    "observe",
    "observing",
]

_log = logging.getLogger("s3claim.events")


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelCalled(_Event):
    kind: Literal["model_called"] = "model_called"
    turn: int
    prefill_chars: int


class ToolResultStored(_Event):
    """`reason`: why it was checked in: at its threshold (the spec's rule, left out of the
    event's dump so that records without the turn's knobs read as before), for its turn's
    budget (`turn_budget`) or for the room left in the context window (`room`)."""

    kind: Literal["tool_result_stored"] = "tool_result_stored"
    tool: str
    agent: str
    handle: str
    size_chars: int
    inline_chars: int
    reason: CheckInReason = "threshold"

    @model_serializer(mode="wrap")
    def _without_default_reason(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if dumped.get("reason") == "threshold":
            del dumped["reason"]
        return dumped


class ToolResultTruncated(_Event):
    kind: Literal["tool_result_truncated"] = "tool_result_truncated"
    tool: str
    agent: str
    size_chars: int
    kept_chars: int


class ToolResultStoreFailed(_Event):
    """Check-in failed; the result was truncated instead, and the run went on."""

    kind: Literal["tool_result_store_failed"] = "tool_result_store_failed"
    tool: str
    agent: str
    size_chars: int
    kept_chars: int
    error: str

    def line(self) -> str:
        return f"check-in failed for {self.tool[:64]} ({self.size_chars} chars): {self.error}"


class ToolFailed(_Event):
    """The tool raised; the model was told it failed, by exception type only."""

    kind: Literal["tool_failed"] = "tool_failed"
    tool: str
    agent: str
    error: str

    def line(self) -> str:
        return f"tool {self.tool[:64]} raised {self.error}"


class ClaimFetched(_Event):
    kind: Literal["claim_fetched"] = "claim_fetched"
    handle: str
    offset: int
    chars: int
    total_chars: int


class ClaimPassed(_Event):
    """A claim reference in a tool's arguments was resolved: the tool got `chars` characters
    of the claim (for a reference by path, the JSON value's), without the model reading them."""

    kind: Literal["claim_passed"] = "claim_passed"
    tool: str
    handle: str
    chars: int


class ClaimUnavailable(_Event):
    """`handle` is None when what the model sent was not even a well-formed handle."""

    kind: Literal["claim_unavailable"] = "claim_unavailable"
    handle: str | None


class ClaimEvicted(_Event):
    """A bounded memory store dropped its oldest claim to make room (`store_full`, or
    `tenant_full` when the tenant's own share was used up). The handle then reads as
    unavailable, like an expired one."""

    kind: Literal["claim_evicted"] = "claim_evicted"
    handle: str
    size_bytes: int
    reason: Literal["store_full", "tenant_full"]

    def line(self) -> str:
        return f"claim {self.handle} evicted ({self.size_bytes} bytes, {self.reason})"


class ClaimFetchFailed(_Event):
    """A read of a claim failed in the store (after its retries); `error` is the exception's
    type, and a store error's reason (`ClaimStoreError: damaged`)."""

    kind: Literal["claim_fetch_failed"] = "claim_fetch_failed"
    handle: str | None
    error: str

    def line(self) -> str:
        return f"read failed for {self.handle}: {self.error}"


class ClaimSearched(_Event):
    """A search ran: how long the pattern was and what it found, never the pattern itself."""

    kind: Literal["claim_searched"] = "claim_searched"
    handle: str
    pattern_chars: int
    matches: int
    total_matches: int


class ClaimSearchFailed(_Event):
    """The store failed, the pattern used up its matching time (`pattern_too_costly`), or its
    match may run longer than search holds (`match_too_long`)."""

    kind: Literal["claim_search_failed"] = "claim_search_failed"
    handle: str | None
    error: str

    def line(self) -> str:
        return f"search failed for {self.handle}: {self.error}"


class ResultReused(_Event):
    """A repeat read was answered from its claim (`s3claim.reuse`): the tool did not run, and
    the model received `chars` characters, the earlier result with the reuse line."""

    kind: Literal["result_reused"] = "result_reused"
    tool: str
    agent: str
    handle: str
    chars: int


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    turns: int
    reason: Literal["answered", "max_turns"]


class RunResumed(_Event):
    """A run carried on from its journal: what was restored, and which tools ran again.

    `rerun_tools` names the calls whose results were not recorded before the last instance
    stopped: they ran again (at least once, possibly twice in all).
    """

    kind: Literal["run_resumed"] = "run_resumed"
    turns: int
    messages: int
    rerun_tools: tuple[str, ...]


Event = Annotated[
    ModelCalled
    | ToolResultStored
    | ToolResultTruncated
    | ToolResultStoreFailed
    | ClaimFetched
    | ClaimPassed
    | ClaimUnavailable
    | ClaimEvicted
    | ClaimFetchFailed
    | ClaimSearched
    | ClaimSearchFailed
    | ToolFailed
    | ResultReused
    | RunFinished
    | RunResumed,
    Field(discriminator="kind"),
]


Failure = ToolResultStoreFailed | ToolFailed | ClaimFetchFailed | ClaimSearchFailed | ClaimEvicted
"""The events that are failures (or losses, an eviction): logged at WARNING, in words."""


def observe(event: Event) -> None:
    """The log line and the span event of `event` (see the module docstring)."""
    attributes = {
        f"s3claim.{k}": v
        for k, v in event.model_dump(mode="json").items()
        if isinstance(v, str | int | float | bool)
    }
    trace.get_current_span().add_event(f"s3claim.{event.kind}", attributes)
    if isinstance(event, Failure):
        _log.warning("%s", event.line())
    else:
        _log.info("event %s", event.model_dump_json())


def observing(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """`emit`, each event observed first (`observe`): what a host hands its run context."""

    def observed(event: Event) -> None:
        observe(event)
        emit(event)

    return observed
