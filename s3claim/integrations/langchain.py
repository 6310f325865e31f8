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

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ToolError
from s3claim.events import Event
from s3claim.integrations._bridge import Bridge, field_of, scope_of
from s3claim.reuse import Recall
from s3claim.scope import Scope
from s3claim.tools import Tool

__all__ = ["ClaimCheckMiddleware", "default_scope"]

ScopeOf = Callable[[ToolRuntime], Scope]
_Result = ToolMessage | Command[Any]
_AGENT = "agent"


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
            t.model_copy(update={"description": self._bridge.described(t.description)})
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
        call, scope, turn = request.tool_call, self._scope(request.runtime), _turn(request)
        bridge = self._bridge
        if call["name"] in bridge.tools:
            text = bridge.call(call["name"], call["args"], scope=scope, agent=_AGENT, turn=turn)
            return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"])
        recall = bridge.recall(
            call["args"], tool=call["name"], scope=scope, agent=_AGENT, turn=turn
        )
        if recall is not None and recall.answer is not None:  # the tool does not run
            return ToolMessage(content=recall.answer, tool_call_id=call["id"], name=call["name"])
        if bridge.references:
            try:
                args = bridge.resolve(call["args"], tool=call["name"], scope=scope, agent=_AGENT)
            except ToolError as error:  # the tool does not run
                return _refused(call, bridge.refusal(error, scope=scope, turn=turn))
            request = request.override(tool_call={**call, "args": dict(args)})
        result = handler(request)
        if not _is_text(result):
            return result
        text = bridge.admit(
            result.content, tool=call["name"], scope=scope, agent=_AGENT, turn=turn,
            recall=_kept(recall, result),
        )  # fmt: skip
        return result.model_copy(update={"content": text})

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[_Result]]
    ) -> _Result:
        call, scope, turn = request.tool_call, self._scope(request.runtime), _turn(request)
        bridge = self._bridge
        if call["name"] in bridge.tools:
            text = await bridge.aside(
                bridge.call, call["name"], call["args"], scope=scope, agent=_AGENT, turn=turn
            )
            return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"])
        recall = await bridge.aside(
            bridge.recall, call["args"], tool=call["name"], scope=scope, agent=_AGENT, turn=turn
        )
        if recall is not None and recall.answer is not None:  # the tool does not run
            return ToolMessage(content=recall.answer, tool_call_id=call["id"], name=call["name"])
        if bridge.references:
            try:
                args = await bridge.aside(
                    bridge.resolve, call["args"], tool=call["name"], scope=scope, agent=_AGENT
                )
            except ToolError as error:  # the tool does not run
                return _refused(call, bridge.refusal(error, scope=scope, turn=turn))
            request = request.override(tool_call={**call, "args": dict(args)})
        result = await handler(request)
        if not _is_text(result):
            return result
        text = await bridge.aside(
            bridge.admit, result.content, tool=call["name"], scope=scope, agent=_AGENT,
            turn=turn, recall=_kept(recall, result),
        )  # fmt: skip
        return result.model_copy(update={"content": text})


def _turn(request: ToolCallRequest) -> Hashable:
    """The id of the AI message whose tool calls include this one (None: not found)."""
    state = request.state
    messages = state.get("messages") if isinstance(state, Mapping) else None
    call_id = request.tool_call["id"]
    for message in reversed(messages or ()):
        if isinstance(message, AIMessage) and any(c["id"] == call_id for c in message.tool_calls):
            return message.id
    return None


def _kept(recall: Recall[str] | None, result: ToolMessage) -> Recall[str] | None:
    """The recall under which a result is remembered for a repeat: never an error's."""
    return None if result.status == "error" else recall


def _refused(call: Any, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")


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
