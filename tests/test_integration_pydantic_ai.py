"""The pydantic-ai wrapper toolset, driven by pydantic-ai's FunctionModel, MCP toolsets included."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from fastmcp import FastMCP
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from s3claim import (
    ClaimCheck,
    ClaimStoreError,
    Event,
    MemoryClaimCheckStore,
    S3ClaimCheckStore,
)
from s3claim.errors import ConfigurationError
from s3claim.hosting import truncate
from s3claim.integrations.pydantic_ai import ClaimCheckToolset
from s3claim.testing import FailingStore
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._counsel import CLAIM_TOOLS, CONTRACT, HANDLE, reassemble

Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]

DEAD = ClaimStoreError("PutObject failed after 5 attempt(s): InternalError (HTTP 500)")
"""What a store that cannot be written raises, once its retries are spent."""


@dataclass
class Deps:
    tenant: str


def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


def _returns(messages: list[ModelMessage]) -> list[Any]:
    """Every tool return the model was sent, oldest first."""
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _call(tool: str, call_id: str, /, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])


def _steps(*replies: ModelResponse) -> tuple[Script, list[list[ModelMessage]]]:
    queue, requests = list(replies), []

    def script(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        requests.append(list(messages))
        return queue.pop(0)

    return script, requests


def _run(
    script: Script,
    toolset: AbstractToolset[Any],
    *,
    deps: object = None,
    conversation: str | None = "matter-7",
    history: list[ModelMessage] | None = None,
) -> Any:
    agent = Agent(FunctionModel(script), toolsets=[toolset])
    return asyncio.run(
        agent.run(
            "Read the MSA.",
            deps=Deps("acme") if deps is None else deps,
            conversation_id=conversation,
            message_history=history,
        )
    )


def _read_then_ok() -> list[ModelResponse]:
    """Fresh responses each time: pydantic-ai stamps its run's conversation id on them."""
    return [_call("read_contract", "c1", name="msa"), ModelResponse(parts=[TextPart("ok")])]


def test_the_next_request_carries_the_head_and_marker_and_not_the_rest() -> None:
    events: list[Event] = []
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]),
        ClaimCheck(MemoryClaimCheckStore()),
        on_event=events.append,
    )
    script, requests = _steps(*_read_then_ok())
    result = _run(script, toolset)
    (seen,) = _returns(requests[1])
    assert seen.startswith(CONTRACT[:300])
    assert f"[{len(CONTRACT)} characters, " in seen
    assert HANDLE.search(seen) and len(seen) < 800
    assert CONTRACT[1_000:1_200] not in str(requests[1])
    assert result.output == "ok"
    assert [e.kind for e in events] == ["tool_result_stored"]


def _read_everything(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
    returns = _returns(messages)
    if not returns:
        return _call("read_contract", "read", name="msa")
    handle = HANDLE.search(returns[0])
    assert handle is not None
    if len(returns) == 1:
        offset = 0
    else:
        follow = returns[-1].rsplit("and offset=", 1)
        if len(follow) == 1:
            return ModelResponse(parts=[TextPart("read it all")])
        offset = int(follow[1].split(" ", 1)[0])
    return _call("fetch_result", f"f{offset}", handle=handle.group(), offset=offset)


def test_fetch_result_windows_reassemble_the_contract_exactly() -> None:
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]), ClaimCheck(MemoryClaimCheckStore())
    )
    result = _run(_read_everything, toolset)
    assert result.output == "read it all"
    windows = _returns(result.all_messages())[1:]
    assert len(windows) == -(-len(CONTRACT) // 4096)
    assert reassemble(windows) == CONTRACT


def test_another_tenant_or_conversation_cannot_redeem_the_handle() -> None:
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]), ClaimCheck(MemoryClaimCheckStore())
    )
    script, requests = _steps(*_read_then_ok())
    _run(script, toolset)
    found = HANDLE.search(_returns(requests[1])[0])
    assert found is not None
    for deps, conversation, readable in (
        (Deps("acme"), "matter-7", True),
        ({"tenant": "globex"}, "matter-7", False),
        (Deps("acme"), "matter-8", False),
    ):
        script, requests = _steps(
            _call("fetch_result", "f", handle=found.group()),
            ModelResponse(parts=[TextPart("done")]),
        )
        _run(script, toolset, deps=deps, conversation=conversation)
        (answer,) = _returns(requests[1])
        if readable:
            assert answer.startswith(CONTRACT[:4096])
        else:
            assert json.loads(answer) == {
                "error": "claim_unavailable",
                "message": UNAVAILABLE_MESSAGE,
            }


def test_a_dead_store_degrades_to_truncation_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[Event] = []
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]),
        ClaimCheck(FailingStore(fail=["put"], error=DEAD)),
        on_event=events.append,
    )
    script, requests = _steps(*_read_then_ok())
    with caplog.at_level(logging.WARNING, logger="s3claim"):
        result = _run(script, toolset)
    assert _returns(requests[1]) == [truncate(CONTRACT, 4096)]
    assert result.output == "ok"
    assert [e.kind for e in events] == ["tool_result_store_failed"]
    assert "check-in failed for read_contract (92212 chars): ClaimStoreError" in caplog.text
    assert CONTRACT[:50] not in caplog.text


def test_an_mcp_toolset_is_checked_in_and_read_back() -> None:
    server = FastMCP("documents")

    @server.tool
    def read_contract(name: str) -> str:
        """Return the full text of a named contract."""
        return CONTRACT

    toolset = ClaimCheckToolset(MCPToolset(server), ClaimCheck(MemoryClaimCheckStore()))

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _returns(messages)
        if not returns:
            assert [t.name for t in info.function_tools] == ["read_contract", *CLAIM_TOOLS]
            return _call("read_contract", "read", name="msa")
        if len(returns) == 1:
            handle = HANDLE.search(returns[0])
            assert handle is not None and len(returns[0]) < 800
            return _call("fetch_result", "f", handle=handle.group(), offset=40_960)
        return ModelResponse(parts=[TextPart("done")])

    result = _run(script, toolset)
    assert _returns(result.all_messages())[1].startswith(CONTRACT[40_960 : 40_960 + 4096])


def test_multi_modal_results_pass_untouched_and_a_tool_return_keeps_its_metadata() -> None:
    image = BinaryContent(data=b"\x89PNG\r\n", media_type="image/png")

    def picture() -> list[Any]:
        """A caption and an image."""
        return ["the signature page", image]

    def annotated() -> ToolReturn:
        """The contract, with metadata for the application."""
        return ToolReturn(return_value=CONTRACT, metadata={"pages": 31})

    def scan() -> ToolReturn:
        """A scanned page, with metadata."""
        return ToolReturn(return_value=image, metadata={"page": 1})

    def logo() -> ImageUrl:
        """A logo."""
        return ImageUrl(url="https://example.invalid/logo.png")

    toolset = ClaimCheckToolset(
        FunctionToolset([picture, annotated, scan, logo]), ClaimCheck(MemoryClaimCheckStore())
    )
    both = ModelResponse(
        parts=[
            ToolCallPart(name, {}, tool_call_id=name[0])
            for name in ("picture", "annotated", "scan", "logo")
        ]
    )
    script, requests = _steps(both, ModelResponse(parts=[TextPart("ok")]))
    result = _run(script, toolset)
    parts = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts]
    returns = {p.tool_name: p for p in parts if isinstance(p, ToolReturnPart)}
    assert returns["annotated"].metadata == {"pages": 31}
    assert "Call fetch_result" in returns["annotated"].content
    assert len(returns["annotated"].content) < 800
    assert returns["picture"].content == ["the signature page", image]
    assert returns["scan"].content == image and returns["scan"].metadata == {"page": 1}
    assert returns["logo"].content == ImageUrl(url="https://example.invalid/logo.png")
    assert _returns(requests[1])[0] == ["the signature page", image]


def test_a_missing_tenant_is_named_and_a_clashing_tool_refused() -> None:
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]), ClaimCheck(MemoryClaimCheckStore())
    )
    script, _ = _steps(*_read_then_ok())
    with pytest.raises(ConfigurationError, match="no tenant for the claim check: run the agent"):
        _run(script, toolset, deps={"org": "acme"})

    def fetch_result() -> str:
        """A name the claim check owns."""
        return "x"

    clashing = ClaimCheckToolset(
        FunctionToolset([fetch_result]), ClaimCheck(MemoryClaimCheckStore())
    )
    script, _ = _steps(*_read_then_ok())
    with pytest.raises(ConfigurationError, match=r"tools named \['fetch_result'\] would collide"):
        _run(script, clashing)


def test_a_later_run_on_the_same_message_history_still_redeems_the_handle() -> None:
    toolset = ClaimCheckToolset(
        FunctionToolset([read_contract]), ClaimCheck(MemoryClaimCheckStore())
    )
    first = _run(_steps(*_read_then_ok())[0], toolset, conversation=None)  # a fresh id
    found = HANDLE.search(_returns(first.all_messages())[0])
    assert found is not None
    script, requests = _steps(
        _call("fetch_result", "f", handle=found.group(), offset=4096),
        ModelResponse(parts=[TextPart("done")]),
    )
    _run(script, toolset, conversation=None, history=first.all_messages())
    assert _returns(requests[1])[-1].startswith(CONTRACT[4096 : 4096 + 4096])


def test_on_the_s3_store_no_request_leaves_from_the_event_loop_thread(s3: Any, bucket: str) -> None:
    senders: set[int] = set()
    s3.meta.events.register("before-send.s3.*", lambda **_: senders.add(threading.get_ident()))
    store = S3ClaimCheckStore(bucket, handle_key="test-handle-key-0123456789", client=s3)
    toolset = ClaimCheckToolset(FunctionToolset([read_contract]), ClaimCheck(store))
    loop_threads: set[int] = set()

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        loop_threads.add(threading.get_ident())  # the model is called on the loop's thread
        return _read_everything(messages, info)

    result = _run(script, toolset)
    assert reassemble(_returns(result.all_messages())[1:]) == CONTRACT
    assert senders and loop_threads and not senders & loop_threads
