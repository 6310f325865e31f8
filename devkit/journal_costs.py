"""What the run journal costs on the wire: the counsel scenario recorded, a run resumed.

Counted with `Wire` on the journal's own client. tests/journal/test_budgets.py asserts the
journal's budgets on these; `make bench` publishes them (benchmarks/measures/journal.py).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    AssistantMessage,
    HandleKey,
    Message,
    RetryPolicy,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
    ToolCall,
    tool,
)
from s3claim.cli.demo import TENANT, contract, run_scenario

__all__ = ["Counsel", "conversation_bytes", "record_counsel", "resume_cost"]

NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)


def conversation_bytes(messages: Sequence[Message]) -> int:
    """UTF-8 bytes of the conversation's text: every content, and every tool call's name and
    JSON arguments (what a provider is sent, as `conversation_chars` counts it)."""
    total = 0
    for message in messages:
        total += len((message.content or "").encode("utf-8"))
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                total += len(call.name.encode("utf-8")) + len(arguments.encode("utf-8"))
    return total


@dataclass(frozen=True)
class Counsel:
    contract_chars: int
    model_calls: int
    journal_requests: Counter[str]
    journal_bytes: int
    conversation_bytes: int

    @property
    def ratio(self) -> float:
        return self.journal_bytes / self.conversation_bytes


def _journal(bucket: str, key: HandleKey, client: Any) -> S3RunJournal:
    return S3RunJournal(bucket, handle_key=key, client=client, retry=NO_WAIT)


def record_counsel(
    store_client: Any, journal_client: Any, bucket: str, key: HandleKey, *, contract_chars: int
) -> Counsel:
    """The counsel scenario recorded to S3, the journal on a client of its own."""
    wire = Wire.attach(journal_client)
    store = S3ClaimCheckStore(bucket, handle_key=key, client=store_client, retry=NO_WAIT)
    run_id = f"counsel-{uuid.uuid4().hex}"
    scenario = run_scenario(
        store,
        journal=_journal(bucket, key, journal_client),
        baseline=False,
        text=contract(target_chars=contract_chars),
        run_id=run_id,
    )
    requests = Counter(wire.requests)
    layout_key = f"claims/{key.tenant_tag(TENANT)}/{key.run_tag(Scope(TENANT, run_id))}/journal"
    size = journal_client.head_object(Bucket=bucket, Key=layout_key)["ContentLength"]
    calls = sum(1 for e in scenario.claimed.events if e.kind == "model_called")
    conversation = conversation_bytes(scenario.claimed.messages)
    return Counsel(scenario.contract_chars, calls, requests, size, conversation)


class _Stop(BaseException):
    """Ends the first process's run after its last recorded turn, as a crash would."""


def resume_cost(journal_client: Any, bucket: str, key: HandleKey, *, turns: int) -> Counter[str]:
    """Requests on the journal's client between `resume` and its first model call, for a run
    recorded `turns` model calls in (its last reply's tool call still to run)."""

    @tool
    def note(n: int) -> str:
        """Take note n."""
        return f"note {n}"

    def stop(_messages: Sequence[Message]) -> AssistantMessage:
        raise _Stop

    steps: list[Any] = [
        AssistantMessage(tool_calls=(ToolCall(id=f"n{i}", name="note", arguments={"n": i}),))
        for i in range(turns)
    ]
    run_id = f"resume-{turns}-{uuid.uuid4().hex}"
    first = AgentRunner(
        provider=ScriptedProvider([*steps, stop]),
        tools=[note],
        journal=_journal(bucket, key, journal_client),
        max_turns=turns + 1,
    )
    with contextlib.suppress(_Stop):
        first.run("take notes", tenant=TENANT, run_id=run_id)
    wire = Wire.attach(journal_client)
    seen: list[Counter[str]] = []

    def answer(_messages: Sequence[Message]) -> AssistantMessage:
        seen.append(Counter(wire.requests))
        return AssistantMessage(content="done")

    fresh = AgentRunner(
        provider=ScriptedProvider([*steps, answer]),
        tools=[note],
        journal=_journal(bucket, key, journal_client),  # a fresh instance: nothing cached
        max_turns=turns + 1,
    )
    result = fresh.resume(tenant=TENANT, run_id=run_id)
    if result.output != "done" or len(seen) != 1:
        raise AssertionError(f"the resumed run of {turns} turns did not finish as scripted")
    return seen[0]
