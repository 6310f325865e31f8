"""Issue 37's knobs through every adapter: the turn budget's running total, repeat reads and the
previews, in LangChain (sync and async), pydantic-ai and the OpenAI Agents SDK, each driven by
its framework's own scripted model. One script of turns (each a model response's calls) runs
through each host (`tests._hosts.drive`); every tool output the model read is compared.

What the adapter answers itself in a turn (a claim tool's window, a repeat read's earlier
answer) takes its room in the conversation like any result, so it counts toward the turn's
budget: a result that comes after it in the same turn is checked in sooner."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from s3claim import ClaimCheck, ClaimCheckPolicy, Event, MemoryClaimCheckStore, Scope
from s3claim.events import ToolResultStored
from s3claim.wording import HANDLE_SEEN, MARKER_SEEN, reused_reference
from tests._hosts import drive
from tests._hosts import turns as in_turns
from tests.test_previews import COMPARE, ERROR_LINE, picks_of, service_log
from tests.test_turns import part

TENANT, RUN = "acme", "run-1"
LOG, LOG_ERROR_AT = service_log(200_000)

# -- the tools: plain functions, given to each framework its own way ------------------------

RAN: list[str] = []
ANSWERED = threading.Event()
"""Set when the adapter has answered a call itself (a window read, a repeat): `later` waits
for it, so that it is counted after that answer whichever order the framework runs in."""


def read(seed: int, chars: int) -> str:
    """Return a part of the record."""
    RAN.append(f"read {seed}")
    return part(chars, seed)


def later(seed: int, chars: int) -> str:
    """Return a part of the record, once the turn's other call is answered."""
    assert ANSWERED.wait(10), "the turn's other call was never answered"
    time.sleep(0.05)  # the answer is counted just after its event
    RAN.append(f"later {seed}")
    return part(chars, seed)


def sign(name: str) -> str:
    """Sign a record (it changes what a read returns)."""
    RAN.append("sign")
    return "signed"


def ci_log() -> str:
    """Return the service's log."""
    return LOG


def compare() -> str:
    """Return the API's compare response."""
    return COMPARE


TOOLS = (read, later, sign, ci_log, compare)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()
    ANSWERED.clear()


# -- one script through each host ------------------------------------------------------------

Call = tuple[str, Mapping[str, Any]]


def handle_in(index: int) -> Callable[[Sequence[str]], str]:
    """An argument worked out when the model makes the call: the handle in output `index`."""

    def of(outputs: Sequence[str]) -> str:
        found = HANDLE_SEEN.search(outputs[index])
        assert found is not None, f"output {index} holds no handle"
        return found.group(1)

    return of


@dataclass
class Knobs:
    """What a host is given: the claim check and the adapter's own arguments."""

    claim_check: ClaimCheck
    events: list[Event]
    reuse: Mapping[str, int] | None = None
    read_only: Sequence[str] = ()

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        if event.kind in ("claim_fetched", "result_reused"):
            ANSWERED.set()


Host = Callable[[Sequence[Sequence[Call]], Knobs], list[str]]
"""Runs the turns, then a last response without calls; returns every tool output the model
read, in call order."""


def _host(name: str) -> Host:
    def run(script: Sequence[Sequence[Call]], knobs: Knobs) -> list[str]:
        ran = drive(
            name, TOOLS, in_turns(*script), claim_check=knobs.claim_check, scope=Scope(TENANT, RUN),
            on_event=knobs.on_event, reuse=knobs.reuse, read_only=knobs.read_only,
        )  # fmt: skip
        assert not any(a.retry for a in ran.answers)
        return ran.texts

    return run


ADAPTERS = ("langchain", "langchain_async", "pydantic_ai", "openai_agents")
HOSTS = pytest.mark.parametrize("host", [_host(n) for n in ADAPTERS], ids=ADAPTERS)


def reasons(events: Sequence[Event]) -> list[str]:
    return [e.reason for e in events if isinstance(e, ToolResultStored)]


def checked_in(text: str) -> bool:
    return MARKER_SEEN.search(text) is not None


def naming(text: str, call_id: str) -> str:
    """A repeat's answer: the call `call_id` (every driver numbers calls c0, c1, ...) and the
    handle of `text`, what the model read of it."""
    found = HANDLE_SEEN.search(text)
    assert found is not None, "no handle in the text"
    return reused_reference(handle=found.group(1), call_id=call_id, tool=None)


# -- the turn budget ----------------------------------------------------------------------


@HOSTS
def test_a_turn_over_its_budget_checks_in_what_takes_it_past_and_the_next_starts_afresh(
    host: Host,
) -> None:
    policy = ClaimCheckPolicy(turn_budget_chars=5_000)
    knobs = Knobs(ClaimCheck(MemoryClaimCheckStore(), policy=policy), [])
    turns: list[list[Call]] = [
        [("read", {"seed": s, "chars": 3_000}) for s in (1, 2, 3)],
        [("read", {"seed": 4, "chars": 3_000})],
    ]
    outputs = host(turns, knobs)
    # The three calls of turn 1 may finish in any order: the first counted passes whole, the
    # other two would each take the turn past 5,000. Turn 2 starts afresh.
    assert reasons(knobs.events) == ["turn_budget", "turn_budget"]
    assert sum(map(checked_in, outputs[:3])) == 2
    assert outputs[3] == part(3_000, 4)


@HOSTS
def test_a_window_read_and_a_repeat_answer_count_toward_their_turn(host: Host) -> None:
    policy = ClaimCheckPolicy(threshold_chars=8_000, turn_budget_chars=5_000)
    knobs = Knobs(
        ClaimCheck(MemoryClaimCheckStore(), policy=policy), [], reuse={"read": 300},
        read_only=["later"],
    )  # fmt: skip
    turns: list[list[Call]] = [
        [("read", {"seed": 1, "chars": 9_000})],  # over the threshold: checked in
        # A window of 4,096 and more, then 2,000: the turn is past its budget.
        [("fetch_result", {"handle": handle_in(0)}), ("later", {"seed": 2, "chars": 2_000})],
        # The earlier answer by reference (about 150), then 4,900: past it again.
        [("read", {"seed": 1, "chars": 9_000}), ("later", {"seed": 3, "chars": 4_900})],
    ]
    outputs = host(turns, knobs)
    first, window, second, again, third = outputs
    assert len(window) > 4_096 and window.startswith(part(9_000, 1)[:4_096])
    assert again == naming(first, "c0") and 100 < len(again) < 200
    assert checked_in(second) and checked_in(third)
    assert reasons(knobs.events) == ["threshold", "turn_budget", "turn_budget"]
    assert RAN == ["read 1", "later 2", "later 3"]  # the repeat did not run


# -- repeat reads ---------------------------------------------------------------------------


@HOSTS
def test_a_repeat_read_is_answered_from_its_claim_until_a_write(host: Host) -> None:
    knobs = Knobs(
        ClaimCheck(MemoryClaimCheckStore()), [], reuse={"read": 300}, read_only=["ci_log"]
    )
    read_1: Call = ("read", {"seed": 1, "chars": 6_000})
    turns: list[list[Call]] = [
        [read_1],
        [("ci_log", {})],  # read-only: reuse goes on
        [read_1],
        [("read", {"seed": 1, "chars": 6_001})],  # other arguments: it runs
        [("sign", {"name": "msa"})],  # a write ends reuse
        [read_1],
    ]
    first, _, again, other, _, after = host(turns, knobs)
    assert RAN == ["read 1", "read 1", "sign", "read 1"]
    assert again == naming(first, "c0") and after == first
    assert checked_in(other) and other != first
    assert [e.kind for e in knobs.events].count("result_reused") == 1


# -- previews -------------------------------------------------------------------------------


@HOSTS
def test_the_presets_show_the_logs_error_and_the_responses_root(host: Host) -> None:
    # The compare response's listing needs a head of 1,024 to fit in its second half.
    wide_json = ClaimCheckPolicy(json_root=True, head_chars=1_024)
    per_tool = {"ci_log": ClaimCheckPolicy.for_logs(), "compare": wide_json}
    knobs = Knobs(ClaimCheck(MemoryClaimCheckStore(), per_tool=per_tool), [])
    log, response = host([[("ci_log", {}), ("compare", {})]], knobs)
    assert (LOG_ERROR_AT, ERROR_LINE) in picks_of(log)
    assert log.endswith("\n\n" + LOG[LOG.rindex("\nTraceback ") + 1 :])  # its traceback, whole
    head, _, listing = response.split("\n\n")
    assert COMPARE.startswith(head) and "\n/files array, characters " in listing
