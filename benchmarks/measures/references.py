"""Measure: passing a claim by reference, and handing it off to a sub-agent's run.

1. The counsel scenario, side by side: a model checks in the 92,212-character contract and
   has a second tool (`summarise`) summarise it. With references it passes
   `{"$claim": handle}`; without, it reads the contract back window by window through
   `fetch_result` and re-emits it as the argument. Characters the model emits (its tool-call
   arguments) and receives (tool results), counted on the runner's conversation; no model
   server, so the figures are exact.
2. Hand-off of one claim (64 Mi characters in the full profile) to another run of the same
   tenant, on moto's HTTP server, counted on the wire: (a) the server-side copy s3claim
   ships (a HeadObject, then a CopyObject of the claim and one of each index beside it, with
   new sealed metadata, and the copy's empty mark), against (b) reading the claim back and
   putting it again. Time and requests of the hand-off and of one 4,096-character fetch
   after it (median of 15).

Budgets: by reference, at most 2,000 characters in all; the shipped hand-off, at most 3
requests and 4 KiB through the process whatever the claim's size.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.context import TTL, Bench, empty_bucket
from benchmarks.peers.common import strip_end_note
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, fmt_ratio
from devkit.documents import MiB
from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    MemoryClaimCheckStore,
    ScriptedProvider,
    ToolCall,
    claim_tools,
    tool,
)
from s3claim.cli.demo import contract
from s3claim.messages import ToolMessage
from s3claim.scope import Scope
from s3claim.wording import CONTINUE_SEEN, HANDLE_SEEN

__all__ = ["run"]

CONTRACT = contract()
_FETCHES = 15
BUDGET_REFERENCE_CHARS = 2_000
"""What summarising by reference may cost the model in all: a head, a marker and a call."""
BUDGET_HAND_OFF_REQUESTS = 3
BUDGET_HAND_OFF_BYTES = 4096
"""Through the process for a hand-off of any size: the copies' XML answers, never the body."""


def _summarise(text: str) -> str:
    """Summarise a text in one line."""
    return f"A master services agreement of {len(text.split())} words."


def _conversation(*, references: bool) -> tuple[int, int, int]:
    """(characters emitted, characters received, model turns) for one way of summarising."""
    store = MemoryClaimCheckStore()
    handle: list[str] = []
    window: list[str] = []

    def step(messages: Any) -> AssistantMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return _call("read_contract", {"name": "msa"})
        if last.name == "summarise":
            return AssistantMessage(content=last.content)
        if not handle:
            found = HANDLE_SEEN.search(last.content)
            assert found is not None
            handle.append(found.group(1))
            if references:
                return _call("summarise", {"text": {"$claim": handle[0]}})
            return _call("fetch_result", {"handle": handle[0], "offset": 0})
        more = CONTINUE_SEEN.search(last.content)
        window.append(strip_end_note(last.content))  # its footer, or the last one's end note
        if more is not None:
            return _call("fetch_result", {"handle": handle[0], "offset": int(more.group(1))})
        return _call("summarise", {"text": "".join(window)})  # re-emitted, whole

    def read_contract(name: str) -> str:
        """Return the full text of a named contract."""
        return CONTRACT

    runner = AgentRunner(
        provider=ScriptedProvider([step] * 40),
        tools=[tool(read_contract), tool(_summarise, name="summarise"), *claim_tools(store)],
        claim_check=ClaimCheck(store, references=references),
        max_turns=40,
    )
    result = runner.run("Summarise the MSA.", tenant="bench")
    assert result.output == _summarise(CONTRACT)  # both ways summarise the whole contract
    emitted = sum(
        len(json.dumps(c.arguments, ensure_ascii=False)) + len(m.content or "")
        for m in result.messages
        if isinstance(m, AssistantMessage)
        for c in (m.tool_calls or (ToolCall(id="-", name="-", arguments={}),))
    )
    received = sum(len(m.content) for m in result.messages if isinstance(m, ToolMessage))
    turns = sum(isinstance(m, AssistantMessage) for m in result.messages)
    return emitted, received, turns


def _call(name: str, arguments: dict[str, Any]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=(ToolCall(id=uuid.uuid4().hex[:8], name=name, arguments=arguments),)
    )


# -- hand-off on S3 ---------------------------------------------------------------------------


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    began = time.perf_counter()
    value = call()
    return time.perf_counter() - began, value


def _hand_off_rows(bench: Bench) -> tuple[list[list[str]], list[str]]:
    """The two designs' rows, and the shipped one's missed budgets."""
    chars = bench.profile.memory_chars
    text = ("The parties agree to the terms below. " * (chars // 38 + 1))[:chars]
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    claim_check = ClaimCheck(store)
    parent = Scope("bench", f"parent-{uuid.uuid4().hex[:8]}")
    rows: list[list[str]] = []
    failures: list[str] = []
    try:
        handle = store.put(parent, text, ttl_seconds=TTL)

        def measure(
            name: str, hand_off: Callable[[Scope], Any], fetch: Callable[[Any], str]
        ) -> None:
            child = Scope("bench", f"child-{uuid.uuid4().hex[:8]}")
            wire.clear()
            seconds, made = _timed(lambda: hand_off(child))
            # A HEAD's Content-Length is the object's, but no body follows it.
            requests = wire.total_requests
            got = wire.total_response_bytes - wire.response_bytes["HeadObject"]
            put = sum(wire.request_bytes.values())
            times, fetched = [], 0
            for _ in range(_FETCHES):
                wire.clear()
                took, window = _timed(lambda: fetch(made))
                times.append(took)
                fetched = wire.total_requests
                assert window == text[8 * 4096 : 9 * 4096]
            if name.startswith("(a)") and (
                requests > BUDGET_HAND_OFF_REQUESTS or got + put > BUDGET_HAND_OFF_BYTES
            ):
                failures.append(f"hand-off: {requests} requests, {got + put} bytes")
            rows.append(
                [
                    name,
                    f"{chars / MiB:,.0f} Mi",
                    fmt_int(requests),
                    fmt_bytes(got + put),
                    fmt_ms(seconds),
                    fmt_int(fetched),
                    fmt_ms(statistics.median(times)),
                ]
            )

        measure(
            "(a) server-side copy (shipped)",
            lambda child: (child, claim_check.hand_off(handle, scope=parent, to=child)),
            lambda made: store.fetch(made[0], made[1], 8 * 4096, 4096).text,
        )
        measure(
            "(b) read back and put again",
            lambda child: (
                child,
                store.put(child, store.fetch(parent, handle, 0, chars).text, ttl_seconds=TTL),
            ),
            lambda made: store.fetch(made[0], made[1], 8 * 4096, 4096).text,
        )
    finally:
        empty_bucket(client, bucket)
    return rows, failures


def run(bench: Bench) -> Section:
    with_refs = _conversation(references=True)
    without = _conversation(references=False)
    conversation = [
        [
            way,
            fmt_int(emitted),
            fmt_int(received),
            fmt_int(emitted + received),
            fmt_int(turns),
        ]
        for way, (emitted, received, turns) in (
            ("by reference", with_refs),
            ("read back and re-emitted", without),
        )
    ]
    hand_off, failures = _hand_off_rows(bench)
    if with_refs[0] + with_refs[1] > BUDGET_REFERENCE_CHARS:
        failures.append(f"by reference: {with_refs[0] + with_refs[1]} characters")
    copy = hand_off[0]
    saved = (without[0] + without[1]) / (with_refs[0] + with_refs[1])
    return Section(
        title="Passing a claim by reference",
        intro=__doc__.split("\n\n", 1)[1] if __doc__ else "",
        tables=[
            Table(
                title=f"Summarise the {len(CONTRACT):,}-character contract via a second tool",
                headers=["way", "chars emitted", "chars received", "in all", "model turns"],
                rows=conversation,
            ),
            Table(
                title="Hand-off to another run of the tenant (S3 store on moto)",
                headers=[
                    "design",
                    "claim",
                    "requests",
                    "bytes through the process",
                    "hand-off",
                    "requests a fetch",
                    "fetch after (median)",
                ],
                rows=hand_off,
            ),
        ],
        headlines=[
            f"References: summarising the {len(CONTRACT):,}-character contract costs the model "
            f"{with_refs[0] + with_refs[1]:,} characters by reference against "
            f"{without[0] + without[1]:,} read back and re-emitted ({fmt_ratio(saved)})",
            f"Hand-off of a {copy[1]} claim: server-side copy in {copy[4]} with {copy[3]} "
            f"through the process, then {copy[5]} request a fetch",
        ],
        budget_failures=failures,
    )
