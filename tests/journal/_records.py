"""Records to save: every message and event kind, and text that JSON and UTF-8 must carry."""

from __future__ import annotations

from s3claim import AssistantMessage, ToolCall
from s3claim.events import (
    ClaimFetched,
    ModelCalled,
    RunFinished,
    RunResumed,
    ToolFailed,
    ToolResultStored,
)
from s3claim.journal import RunRecord, RunStatus
from s3claim.messages import SystemMessage, ToolMessage, UserMessage

TRICKY = 'Zürich 契約 👩‍⚖️ e\u0301 \r\n \x00 \ufeff \u202e "quoted" \\ back </s> {"json": 1}'


def record(
    turns: int = 2,
    *,
    canary: str = "",
    status: RunStatus = "running",
    output: str | None = None,
) -> RunRecord:
    """A run `turns` model calls in: each turn a reply asking for a tool and its result, the
    last reply's result not yet recorded (as after a save in flight)."""
    messages: list[object] = [SystemMessage(content="be brief"), UserMessage(content=TRICKY)]
    events: list[object] = []
    for turn in range(1, turns + 1):
        events.append(ModelCalled(turn=turn, prefill_chars=100 * turn))
        call = ToolCall(id=f"c{turn}", name="read", arguments={"n": turn, "deep": {"q": TRICKY}})
        messages.append(AssistantMessage(content=None, tool_calls=(call,)))
        if turn < turns:
            messages.append(ToolMessage(tool_call_id=call.id, name="read", content=canary + TRICKY))
            events.append(
                ToolResultStored(
                    tool="read", agent="a", handle=f"claim:1{turn:032x}", size_chars=9_000,
                    inline_chars=600,
                )
            )  # fmt: skip
    events += [
        ClaimFetched(handle="claim:1" + "a" * 32, offset=0, chars=4096, total_chars=9000),
        ToolFailed(tool="read", agent="a", error="KeyError"),
        RunResumed(turns=1, messages=3, rerun_tools=("read",)),
    ]
    if status != "running":
        messages.append(AssistantMessage(content=output))
        events.append(RunFinished(turns=turns, reason=status))
    return RunRecord.model_validate(
        {
            "status": status,
            "turns": turns,
            "messages": [m.model_dump() for m in messages],  # type: ignore[attr-defined]
            "events": [e.model_dump() for e in events],  # type: ignore[attr-defined]
            "output": output,
        }
    )
