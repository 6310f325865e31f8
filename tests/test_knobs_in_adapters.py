"""Issue 37's knobs through every adapter: the turn budget's running total, repeat reads and the
previews, in LangChain (sync and async), pydantic-ai and the OpenAI Agents SDK, each driven by
its framework's own scripted model. One script of turns (each a model response's calls) runs
through each host; what the model was sent last is compared.

What the adapter answers itself in a turn (a claim tool's window, a repeat read's earlier
answer) takes its room in the conversation like any result, so it counts toward the turn's
budget: a result that comes after it in the same turn is checked in sooner."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent as OpenAIAgent
from agents import RunConfig, Runner, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from s3claim import ClaimCheck, ClaimCheckPolicy, Event, MemoryClaimCheckStore
from s3claim.events import ToolResultStored
from s3claim.integrations.langchain import ClaimCheckMiddleware
from s3claim.integrations.openai_agents import claim_check_tools
from s3claim.integrations.pydantic_ai import ClaimCheckToolset
from s3claim.reuse import reused
from s3claim.wording import HANDLE_SEEN, MARKER_SEEN
from tests.test_integration_langchain import ScriptedChatModel
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

Later = Callable[[Sequence[str]], Any]
"""An argument worked out when the model makes the call, from the tool outputs it has seen."""
Call = tuple[str, Mapping[str, Any]]


def handle_in(index: int) -> Later:
    def of(outputs: Sequence[str]) -> str:
        found = HANDLE_SEEN.search(outputs[index])
        assert found is not None, f"output {index} holds no handle"
        return found.group(1)

    return of


def _arguments(args: Mapping[str, Any], outputs: Sequence[str]) -> dict[str, Any]:
    return {k: v(outputs) if callable(v) else v for k, v in args.items()}


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

    def adapter(self) -> dict[str, Any]:
        return {"on_event": self.on_event, "reuse": self.reuse, "read_only": self.read_only}


Host = Callable[[Sequence[Sequence[Call]], Knobs], list[str]]
"""Runs the turns, then a last response without calls; returns every tool output of the last
request, in call order."""


def _langchain(face: str) -> Host:
    def run(turns: Sequence[Sequence[Call]], knobs: Knobs) -> list[str]:
        queue, ids = list(turns), iter(range(1_000))

        def script(messages: list[BaseMessage]) -> AIMessage:
            if not queue:
                return AIMessage("done")
            outputs = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            calls = [
                {"name": name, "args": _arguments(args, outputs), "id": f"c{next(ids)}"}
                for name, args in queue.pop(0)
            ]
            return AIMessage(content="", tool_calls=calls)

        model = ScriptedChatModel(script=script)
        middleware = ClaimCheckMiddleware(knobs.claim_check, **knobs.adapter())
        tools = [StructuredTool.from_function(f) for f in TOOLS]
        agent = create_agent(
            model, tools=tools, middleware=[middleware], checkpointer=InMemorySaver()
        )
        state = {"messages": [HumanMessage("Go.")]}
        config = {"configurable": {"thread_id": RUN}}
        if face == "sync":
            agent.invoke(state, config, context={"tenant": TENANT})
        else:
            asyncio.run(agent.ainvoke(state, config, context={"tenant": TENANT}))
        return [str(m.content) for m in model.requests[-1] if isinstance(m, ToolMessage)]

    return run


def _pydantic_ai(turns: Sequence[Sequence[Call]], knobs: Knobs) -> list[str]:
    queue, ids, last = list(turns), iter(range(1_000)), list[str]()

    def returns(messages: list[ModelMessage]) -> list[str]:
        return [
            str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]  # fmt: skip

    def script(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        last[:] = returns(messages)
        if not queue:
            return ModelResponse(parts=[TextPart("done")])
        parts = [
            ToolCallPart(name, _arguments(args, last), tool_call_id=f"c{next(ids)}")
            for name, args in queue.pop(0)
        ]
        return ModelResponse(parts=parts)

    toolset = ClaimCheckToolset(FunctionToolset(list(TOOLS)), knobs.claim_check, **knobs.adapter())
    agent = PydanticAgent(FunctionModel(script), toolsets=[toolset])
    asyncio.run(agent.run("Go.", deps={"tenant": TENANT}, conversation_id=RUN))
    return last


def _openai_agents(turns: Sequence[Sequence[Call]], knobs: Knobs) -> list[str]:
    queue, ids = list(turns), iter(range(1_000))

    def outputs(call: ModelCall) -> list[str]:
        return [i["output"] for i in call.input if isinstance(i, dict) and "output" in i]

    def respond(call: ModelCall) -> Any:
        if not queue:
            return [assistant_message("done")]
        seen = outputs(call)
        return [
            function_call(name, _arguments(args, seen), call_id=f"c{next(ids)}")
            for name, args in queue.pop(0)
        ]

    model = ScriptedModel([ModelStep.respond(respond)] * (len(turns) + 1))
    tools = claim_check_tools(
        [function_tool(f) for f in TOOLS], knobs.claim_check, **knobs.adapter()
    )
    agent = OpenAIAgent(name="counsel", model=model, tools=tools)
    context = {"tenant": TENANT, "run_id": RUN}
    asyncio.run(
        Runner.run(
            agent, "Go.", context=context, run_config=RunConfig(tracing_disabled=True),
            max_turns=len(turns) + 2,
        )
    )  # fmt: skip
    return outputs(model.calls[-1])


HOSTS = pytest.mark.parametrize(
    "host",
    [_langchain("sync"), _langchain("async"), _pydantic_ai, _openai_agents],
    ids=["langchain-sync", "langchain-async", "pydantic-ai", "openai-agents"],
)


def reasons(events: Sequence[Event]) -> list[str]:
    return [e.reason for e in events if isinstance(e, ToolResultStored)]


def checked_in(text: str) -> bool:
    return MARKER_SEEN.search(text) is not None


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
        # The earlier answer again (about 900), then 4,500: past it again.
        [("read", {"seed": 1, "chars": 9_000}), ("later", {"seed": 3, "chars": 4_500})],
    ]
    outputs = host(turns, knobs)
    first, window, second, again, third = outputs
    assert len(window) > 4_096 and window.startswith(part(9_000, 1)[:4_096])
    assert again == reused(first)
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
    assert again == reused(first) and after == first and HANDLE_SEEN.search(first)
    assert checked_in(other) and other != first
    assert [e.kind for e in knobs.events].count("result_reused") == 1


# -- previews -------------------------------------------------------------------------------


@HOSTS
def test_the_presets_show_the_logs_error_and_the_responses_root(host: Host) -> None:
    per_tool = {"ci_log": ClaimCheckPolicy.for_logs(), "compare": ClaimCheckPolicy.for_json()}
    knobs = Knobs(ClaimCheck(MemoryClaimCheckStore(), per_tool=per_tool), [])
    log, response = host([[("ci_log", {}), ("compare", {})]], knobs)
    assert (LOG_ERROR_AT, ERROR_LINE) in picks_of(log)
    assert log.endswith(LOG[-200:])  # and its traceback, by the tail
    head, _, listing = response.split("\n\n")
    assert COMPARE.startswith(head) and "\n/files array, characters " in listing
