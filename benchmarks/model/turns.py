"""The counsel scenario's conversations, call by call, exactly as each model call was sent them.

The runs are the conversation measure's (`benchmarks.measures.conversation`), played by
scripted models: the claim check (head, windows, answer), inline (the whole contract stays in
the conversation) and truncation at the runner's default limit. Each model call's messages
and tool schemas are recorded; `prefill` replays them to a real model. A scripted run is what
makes the arms comparable: the same turns, whatever a small model would have said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.baselines import TRUNCATE_AT, inline_limit
from benchmarks.measures.conversation import arm_runner, note, script
from s3claim.cli.demo import (
    QUESTION,
    TENANT,
    baseline_script,
    contract,
    counsel_script,
)
from s3claim.messages import AssistantMessage, Message, conversation_chars
from s3claim.providers import Provider, ScriptedProvider
from s3claim.tools import Tool

__all__ = ["CLAIM", "INLINE", "SCENARIOS", "TRUNCATION", "Arm", "Turn", "arms"]

CLAIM = "claim check"
INLINE = "inline"
TRUNCATION = f"truncation at {TRUNCATE_AT:,}"

SCENARIOS = {
    "counsel": "Counsel (the demo's 4-turn script)",
    "twenty": "20 turns, 2 windows read",
}


@dataclass(frozen=True)
class Turn:
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]

    @property
    def chars(self) -> int:
        return conversation_chars(list(self.messages))


@dataclass(frozen=True)
class Arm:
    scenario: str
    name: str
    turns: tuple[Turn, ...]


class _Recorder:
    """A provider that records every call's conversation, then lets the script answer."""

    def __init__(self, inner: Provider) -> None:
        self._inner = inner
        self.turns: list[Turn] = []

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        self.turns.append(Turn(tuple(messages), tuple(tools)))
        return self._inner.complete(messages, tools)


def _record(
    scenario: str,
    name: str,
    provider: ScriptedProvider,
    *,
    document: str,
    tools: tuple[Tool, ...] = (),
) -> Arm:
    recorder = _Recorder(provider)
    runner = arm_runner(
        recorder,
        document=document,
        claim=name == CLAIM,
        limit=inline_limit(document) if name == INLINE else TRUNCATE_AT,
        tools=tools,
    )
    if runner.run(QUESTION, tenant=TENANT).output is None:
        raise AssertionError(f"{scenario} / {name}: the script did not answer")
    return Arm(scenario, name, tuple(recorder.turns))


def arms() -> list[Arm]:
    """Every arm of both scenarios, in the order they are measured and shown."""
    document = contract()
    notes = (note,)
    return [
        _record("counsel", CLAIM, counsel_script(), document=document),
        _record("counsel", TRUNCATION, baseline_script(), document=document),
        _record("counsel", INLINE, baseline_script(), document=document),
        _record("twenty", CLAIM, ScriptedProvider(script(2, 20)), document=document, tools=notes),
        _record(
            "twenty", TRUNCATION, ScriptedProvider(script(0, 20)), document=document, tools=notes
        ),
        _record("twenty", INLINE, ScriptedProvider(script(0, 20)), document=document, tools=notes),
    ]
