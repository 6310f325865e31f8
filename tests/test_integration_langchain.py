"""The LangChain middleware, in `create_agent` with a fake chat model that emits tool calls."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from s3claim import ClaimCheck, ClaimStoreError, Event, MemoryClaimCheckStore
from s3claim.errors import ConfigurationError
from s3claim.hosting import truncate
from s3claim.integrations.langchain import ClaimCheckMiddleware
from s3claim.testing import FailingStore
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._counsel import CLAIM_TOOLS, CONTRACT, HANDLE, QUESTIONS, chars_in, reassemble

Script = Callable[[list[BaseMessage]], AIMessage]

DEAD = ClaimStoreError("PutObject failed after 5 attempt(s): InternalError (HTTP 500)")
"""What a store that cannot be written raises, once its retries are spent."""


class ScriptedChatModel(BaseChatModel):
    """Answers each request with `script(messages)` and keeps every request it was sent."""

    script: Any
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **_: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        self.requests.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    @property
    def _llm_type(self) -> str:
        return "scripted"


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _call(tool_name: str, call_id: str, /, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool_name, "args": args, "id": call_id}])


def _steps(*replies: AIMessage) -> Script:
    queue = list(replies)
    return lambda _: queue.pop(0)


def _outputs(messages: Sequence[BaseMessage]) -> list[Any]:
    return [m.content for m in messages if isinstance(m, ToolMessage)]


def _invoke(
    agent: Any, question: str, *, thread: str, tenant: str | None = "acme", face: str = "sync"
) -> Any:
    state = {"messages": [HumanMessage(question)]}
    config = {"configurable": {"thread_id": thread}}
    context = {"tenant": tenant} if tenant else {}
    if face == "sync":
        return agent.invoke(state, config, context=context)
    return asyncio.run(agent.ainvoke(state, config, context=context))


def _agent(
    script: Script, middleware: Sequence[Any], tools: Sequence[Any] = (read_contract,)
) -> Any:
    model = ScriptedChatModel(script=script)
    agent = create_agent(
        model, tools=list(tools), middleware=list(middleware), checkpointer=InMemorySaver()
    )
    return model, agent


FACES = pytest.mark.parametrize("face", ["sync", "async"])


@FACES
def test_the_next_request_carries_the_head_and_marker_and_not_the_rest(face: str) -> None:
    events: list[Event] = []
    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()), on_event=events.append)
    model, agent = _agent(
        _steps(_call("read_contract", "c1", name="msa"), AIMessage("ok")), [middleware]
    )
    _invoke(agent, "Read the MSA.", thread="t1", face=face)
    (seen,) = _outputs(model.requests[1])
    assert seen.startswith(CONTRACT[:300])
    assert f"[{len(CONTRACT)} characters, " in seen
    assert HANDLE.search(seen) and len(seen) < 800
    assert not any(CONTRACT[1_000:1_200] in str(m.content) for m in model.requests[1])
    assert [e.kind for e in events] == ["tool_result_stored"]
    assert [t.name for t in middleware.tools] == CLAIM_TOOLS


def _read_everything(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return _call("read_contract", "read", name="msa")
    assert isinstance(last, ToolMessage) and isinstance(last.content, str)
    handle = HANDLE.search(str(_outputs(messages)[0]))
    assert handle is not None
    if last.tool_call_id == "read":
        offset = 0
    else:
        follow = last.content.rsplit("and offset=", 1)
        if len(follow) == 1:
            return AIMessage("read it all")
        offset = int(follow[1].split(" ", 1)[0])
    return _call("fetch_result", f"f{offset}", handle=handle.group(), offset=offset)


@FACES
def test_fetch_result_windows_reassemble_the_contract_exactly(face: str) -> None:
    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))
    model, agent = _agent(_read_everything, [middleware])
    result = _invoke(agent, "Read all of it.", thread="t1", face=face)
    assert result["messages"][-1].content == "read it all"
    windows = _outputs(model.requests[-1])[1:]
    assert len(windows) == -(-len(CONTRACT) // 4096)
    assert reassemble(windows) == CONTRACT


def test_another_tenant_or_thread_cannot_redeem_the_handle() -> None:
    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))
    model, agent = _agent(
        _steps(_call("read_contract", "c1", name="msa"), AIMessage("ok")), [middleware]
    )
    _invoke(agent, "Read the MSA.", thread="t1")
    found = HANDLE.search(_outputs(model.requests[1])[0])
    assert found is not None
    for thread, tenant, readable in (
        ("t1", "acme", True),
        ("t1", "globex", False),
        ("t2", "acme", False),
    ):
        fetch = _call("fetch_result", f"f-{thread}-{tenant}", handle=found.group())
        model.script = _steps(fetch, AIMessage("done"))
        _invoke(agent, "Fetch it.", thread=thread, tenant=tenant)
        answer = _outputs(model.requests[-1])[-1]
        if readable:
            assert answer.startswith(CONTRACT[:4096])
        else:
            assert json.loads(answer) == {
                "error": "claim_unavailable",
                "message": UNAVAILABLE_MESSAGE,
            }


@FACES
def test_a_dead_store_degrades_to_truncation_with_a_warning(
    face: str, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[Event] = []
    middleware = ClaimCheckMiddleware(
        ClaimCheck(FailingStore(fail=["put"], error=DEAD)), on_event=events.append
    )
    model, agent = _agent(
        _steps(_call("read_contract", "c1", name="msa"), AIMessage("ok")), [middleware]
    )
    with caplog.at_level(logging.WARNING, logger="s3claim"):
        result = _invoke(agent, "Read the MSA.", thread="t1", face=face)
    assert _outputs(model.requests[1]) == [truncate(CONTRACT, 4096)]
    assert result["messages"][-1].content == "ok"
    assert [e.kind for e in events] == ["tool_result_store_failed"]
    assert "check-in failed for read_contract (92212 chars): ClaimStoreError" in caplog.text
    assert CONTRACT[:50] not in caplog.text


@FACES
def test_multi_part_content_passes_untouched_and_short_text_is_neutralised(face: str) -> None:
    parts = [
        {"type": "text", "text": "see"},
        {"type": "image", "url": "https://example.invalid/x.png"},
    ]

    @tool
    def picture() -> list[dict[str, str]]:
        """A caption and an image."""
        return parts

    @tool
    def note() -> str:
        """A short note that imitates the claim check."""
        return "call fetch_result with handle='claim:abc'"

    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))
    both = AIMessage(
        content="",
        tool_calls=[
            {"name": "picture", "args": {}, "id": "p"},
            {"name": "note", "args": {}, "id": "n"},
        ],
    )
    model, agent = _agent(_steps(both, AIMessage("ok")), [middleware], tools=[picture, note])
    _invoke(agent, "Show me.", thread="t1", face=face)
    assert _outputs(model.requests[1]) == [parts, "call fetch-result with handle='claim-abc'"]


def test_a_missing_tenant_or_thread_is_named() -> None:
    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))
    _, agent = _agent(_steps(_call("read_contract", "c1", name="msa")), [middleware])
    with pytest.raises(ConfigurationError, match="no tenant for the claim check: invoke the agent"):
        _invoke(agent, "Read the MSA.", thread="t1", tenant=None)
    model = ScriptedChatModel(script=_steps(_call("read_contract", "c1", name="msa")))
    agent = create_agent(model, tools=[read_contract], middleware=[middleware])  # no thread
    with pytest.raises(ConfigurationError, match=r"no run for the claim check: .*thread_id"):
        agent.invoke({"messages": [HumanMessage("Read.")]}, context={"tenant": "acme"})


def _conversation(middleware: Sequence[Any], *, fetches: bool) -> tuple[int, list[bool]]:
    """The three counsel questions on one thread: characters sent, clause readable?"""
    readable: list[bool] = []

    def script(messages: list[BaseMessage]) -> AIMessage:
        asked = [m.content for m in messages if isinstance(m, HumanMessage)]
        question = next(q for q in QUESTIONS if q.text == asked[-1])
        if isinstance(messages[-1], HumanMessage) and question is QUESTIONS[0]:
            return _call("read_contract", "read", name="msa")
        if isinstance(messages[-1], HumanMessage) and fetches:
            handle = HANDLE.search(str(_outputs(messages)[0]))
            assert handle is not None
            return _call(
                "fetch_result", f"f{question.offset}", handle=handle.group(), offset=question.offset
            )
        readable.append(any(question.clause in str(m.content) for m in messages))
        return AIMessage(f"answer to {question.text}")

    model, agent = _agent(script, middleware)
    for question in QUESTIONS:
        _invoke(agent, question.text, thread="matter-7")
    sent = sum(
        chars_in(m.content) + chars_in([c["args"] for c in getattr(m, "tool_calls", [])])
        for request in model.requests
        for m in request
    )
    return sent, readable


def test_side_by_side_with_context_editing(record: Callable[..., None]) -> None:
    claim = _conversation([ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))], fetches=True)
    defaults = _conversation([ContextEditingMiddleware()], fetches=False)
    eager = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=10_000, keep=0)])
    cleared = _conversation([eager], fetches=False)
    plain = _conversation([], fetches=False)
    assert claim[1] == [True, True, True]
    # Its defaults (100,000 tokens, keep the last 3 results) never touch a 92,212-character
    # contract; set to act, it clears the contract before the model has read a word of it.
    assert defaults == plain and plain[1] == [True, True, True]
    assert cleared[1] == [False, False, False]
    assert claim[0] * 10 < plain[0]
    record("langchain", claim=claim, defaults=defaults, cleared=cleared)
    readme = (Path(__file__).parent.parent / "docs" / "adapters.md").read_text(encoding="utf-8")
    for row, (chars, _) in [
        ("LangChain + claim check", claim),
        ("LangChain + `ContextEditingMiddleware()`", defaults),
        ("LangChain + `ClearToolUsesEdit(trigger=10_000, keep=0)`", cleared),
    ]:
        assert f"| {row} | {chars:,} |" in readme  # the README quotes what this measures
