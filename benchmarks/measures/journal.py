"""The run journal: what recording a run costs, and what resuming it costs.

Counted with botocore's event hooks on the journal's own client (`Wire`), on moto's HTTP
server: PUTs per model turn for the counsel scenario; requests before the first model call
when a run of 4 to 256 turns is resumed on a fresh runner; and the journal object's size
against the UTF-8 size of the conversation it holds, for two contract sizes. The same
functions back tests/journal/test_budgets.py, which asserts the issue's budgets on them.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.context import NO_WAIT, Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_int
from s3claim import (
    AgentRunner,
    AssistantMessage,
    HandleKey,
    Message,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
    ToolCall,
    tool,
)
from s3claim.cli.demo import TENANT, contract, run_scenario
from tests.servers import Wire

__all__ = ["Counsel", "conversation_bytes", "record_counsel", "resume_cost", "run"]

RESUME_TURNS = (4, 16, 64, 256)
CONTRACT_SIZES = (91_800, 1_000_000)


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


def run(bench: Bench) -> Section:
    from tests.servers import make_client

    store_client = make_client(bench.moto)
    journal_client = make_client(bench.moto)
    bucket = f"bench-{uuid.uuid4().hex[:12]}"
    store_client.create_bucket(Bucket=bucket)
    try:
        counsel = [
            record_counsel(store_client, journal_client, bucket, bench.key, contract_chars=n)
            for n in CONTRACT_SIZES
        ]
        resumes = {n: resume_cost(journal_client, bucket, bench.key, turns=n) for n in RESUME_TURNS}
    finally:
        empty_bucket(store_client, bucket)
    recording = [
        [
            fmt_int(c.contract_chars),
            str(c.model_calls),
            str(c.journal_requests["PutObject"]),
            ", ".join(f"{n} × {op}" for op, n in sorted(c.journal_requests.items())),
            fmt_int(c.journal_bytes),
            fmt_int(c.conversation_bytes),
            f"{c.ratio:.2f}×",
        ]
        for c in counsel
    ]
    resuming = [
        [str(n), str(sum(r.values())), ", ".join(f"{k} × {op}" for op, k in sorted(r.items()))]
        for n, r in resumes.items()
    ]
    worst_ratio = max(c.ratio for c in counsel)
    most = max(sum(r.values()) for r in resumes.values())
    return Section(
        title="Run journal",
        intro=(
            "The counsel scenario recorded to an S3 run journal (on a client of its own, on "
            "moto), and runs of 4 to 256 turns resumed on a fresh runner. Budgets: one PUT per "
            "model turn; at most 2 requests before a resume calls the model; journal bytes at "
            "most 1.5× the UTF-8 size of the final conversation's text."
        ),
        tables=[
            Table(
                title="Recording the counsel scenario",
                headers=[
                    "contract chars",
                    "model calls",
                    "PUTs",
                    "journal requests",
                    "journal bytes",
                    "conversation bytes",
                    "journal / conversation",
                ],
                rows=recording,
            ),
            Table(
                title="Resuming: journal requests before the first model call",
                headers=["turns recorded", "requests", "by operation"],
                rows=resuming,
            ),
        ],
        notes=[
            "The journal holds what the model saw (heads, markers, the windows it fetched) and "
            "the run's events, so its size follows the conversation, not the contract. Tool "
            "calls a resume runs again make their own requests (a fetch_result is one GET), "
            "counted on the store's client, not here.",
        ],
        headlines=[
            f"Run journal: one PUT per model turn; a resume reads a run of any length with "
            f"{most} request before calling the model; the counsel journal is "
            f"{worst_ratio:.2f}× its conversation's UTF-8 size at either contract size.",
        ],
    )
