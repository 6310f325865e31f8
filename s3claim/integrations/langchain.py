"""The claim check for LangChain v1 agents: a middleware for `langchain.agents.create_agent`.

    agent = create_agent(model, tools=[read_contract],
                         middleware=[ClaimCheckMiddleware(claim_check)],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "matter-7"}},
                 context={"tenant": "acme"})

Around each tool call (sync `wrap_tool_call` and async `awrap_tool_call`), a `ToolMessage`
with text content passes the result boundary and the admission path; list content (images,
files, several parts) and `Command`s pass untouched. The middleware contributes the claim
tools and answers their calls itself, so their output is never checked in. The scope is
read from the LangGraph runtime before the tool runs: by default the tenant is the `tenant`
attribute or key of the runtime context and the run is the thread id, because the
checkpointer replays a thread's messages, handles included, into its later runs. A turn
(for a turn budget's running total) is one model response: the AI message that holds the
call, by its id (LangGraph gives every message one).

Needs the `langchain` extra (`MissingExtraError` names its install when it is missing).

docs/adapters.md ("LangChain") has a snippet that runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from typing import Any, TypeGuard

from s3claim.extras import reraise_missing

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain.tools import ToolRuntime
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command
except ModuleNotFoundError as exc:  # one line naming the extra that brings it
    reraise_missing("langchain", exc)

from s3claim.claim_tools import FETCH_TOOL_NAME, SEARCH_TOOL_NAME
from s3claim.claimcheck import ClaimCheck
from s3claim.events import Event
from s3claim.hosting import Call
from s3claim.integrations._bridge import Bridge, field_of, scope_of
from s3claim.scope import Scope
from s3claim.tools import Tool

__all__ = ["ClaimCheckMiddleware", "default_scope"]

ScopeOf = Callable[[ToolRuntime], Scope]
_Result = ToolMessage | Command[Any]
_AGENT = "agent"
_CLAIM_TOOLS = (FETCH_TOOL_NAME, SEARCH_TOOL_NAME)


def default_scope(runtime: ToolRuntime) -> Scope:
    """Tenant from the runtime context's `tenant`, run from the LangGraph thread id."""
    configurable = (runtime.config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    if thread is None and runtime.execution_info is not None:
        thread = runtime.execution_info.thread_id
    return scope_of(
        field_of(runtime.context, "tenant"),
        None if thread is None else str(thread),
        tenant_hint="invoke the agent with context= holding a `tenant` attribute or key, "
        "or give ClaimCheckMiddleware a scope= callable",
        run_hint='invoke the agent with config={"configurable": {"thread_id": ...}}, '
        "or give ClaimCheckMiddleware a scope= callable",
    )


class ClaimCheckMiddleware(AgentMiddleware):
    """Checks oversized tool results in; contributes and answers the claim tools."""

    def __init__(
        self,
        claim_check: ClaimCheck,
        *,
        scope: ScopeOf | None = None,
        on_event: Callable[[Event], None] | None = None,
        reuse: Mapping[str, int] | None = None,
        read_only: Iterable[str] = (),
    ) -> None:
        """`reuse` (tool name to seconds) and `read_only` (tool names): repeat reads answered
        from their claim (`s3claim.reuse`, docs/reading.md); off by default."""
        super().__init__()
        self._bridge = Bridge(claim_check, on_event=on_event, reuse=reuse, read_only=read_only)
        self._scope = scope or default_scope
        self.tools: list[BaseTool] = [_described(t) for t in self._bridge.tools.values()]

    def _described(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """With claim references on, each of the agent's own tools says an argument may be one."""
        if not self._bridge.references:
            return request
        tools = [
            t.model_copy(update={"description": self._bridge.host.described(t.description)})
            if isinstance(t, BaseTool) and t.name not in self._bridge.tools
            else t
            for t in request.tools
        ]
        return request.override(tools=tools)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Any]
    ) -> Any:
        return handler(self._described(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[Any]]
    ) -> Any:
        return await handler(self._described(request))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _Result]
    ) -> _Result:
        call, bridge = request.tool_call, self._bridge
        begun = bridge.begin(
            call["name"], call["args"], scope=self._scope(request.runtime), agent=_AGENT,
            turn=_turn(request), call_id=call["id"],
        )  # fmt: skip
        if begun.answer is not None:  # the host answered: the tool does not run
            return _answered(call, begun)
        result = handler(_resolved(request, begun))
        if not _is_text(result):
            bridge.untouched(begun)
            return result
        text = bridge.finish(begun, result.content, keep=result.status != "error")
        return result.model_copy(update={"content": text})

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        call, bridge = request.tool_call, self._bridge
        begun = await bridge.aside(
            bridge.begin, call["name"], call["args"], scope=self._scope(request.runtime),
            agent=_AGENT, turn=_turn(request), call_id=call["id"],
        )  # fmt: skip
        if begun.answer is not None:  # the host answered: the tool does not run
            return _answered(call, begun)
        result = await handler(_resolved(request, begun))
        if not _is_text(result):
            bridge.untouched(begun)
            return result
        text = await bridge.aside(
            bridge.finish, begun, result.content, keep=result.status != "error"
        )
        return result.model_copy(update={"content": text})


def _resolved(request: ToolCallRequest, begun: Call) -> ToolCallRequest:
    """The request with its references resolved (itself when there were none)."""
    if begun.arguments is request.tool_call["args"]:
        return request
    assert not isinstance(begun.arguments, str)  # a mapping in, a mapping out
    return request.override(tool_call={**request.tool_call, "args": dict(begun.arguments)})


def _answered(call: Any, begun: Call) -> ToolMessage:
    """The host's answer (a claim tool's, a repeat's, a refusal) as the tool's message; a
    refusal of the call's references is an error, as the tool's own failure would be."""
    assert begun.answer is not None
    refused = begun.answer.is_error and call["name"] not in _CLAIM_TOOLS
    return ToolMessage(
        content=begun.answer.text, tool_call_id=call["id"], name=call["name"],
        status="error" if refused else "success",
    )  # fmt: skip


def _turn(request: ToolCallRequest) -> Hashable:
    """The id of the AI message whose tool calls include this one (None: not found)."""
    state = request.state
    messages = state.get("messages") if isinstance(state, Mapping) else None
    call_id = request.tool_call["id"]
    for message in reversed(messages or ()):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message.id
    return None


def _is_text(result: object) -> TypeGuard[ToolMessage]:
    return isinstance(result, ToolMessage) and isinstance(result.content, str)


def _described(tool: Tool) -> BaseTool:
    """The model's view of a claim tool; its calls are answered by the middleware itself."""

    def unreachable(**_: Any) -> str:
        raise RuntimeError(f"{tool.name} is answered by ClaimCheckMiddleware, not run directly")

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=Bridge.parameters(tool),
        func=unreachable,
    )
