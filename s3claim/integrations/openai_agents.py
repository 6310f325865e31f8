"""The claim check for the OpenAI Agents SDK: wrapped function tools and a `fetch_result`.

    agent = Agent(name="counsel", tools=claim_check_tools([read_contract], claim_check))
    await Runner.run(agent, "...", context={"tenant": "acme", "run_id": "r-1"})

Each wrapped tool runs as before (guardrails, approvals and failure handling are the SDK's);
its output then passes the result boundary and the admission path, on a worker thread, so an
oversized text output reaches the model as its head and marker. Image, file and multi-part
outputs pass untouched. The scope is read from the run context, before the tool runs: by
default the `tenant` and `run_id` attributes or keys of the context object given to
`Runner.run`; the SDK has no conversation id of its own to use. A turn (for a turn budget's
running total) is one model response: the run's usage counts them (`usage.requests`).

Needs the `openai-agents` extra (`MissingExtraError` names its install when it is missing).

docs/adapters.md ("OpenAI Agents SDK") has a snippet that runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from s3claim.extras import reraise_missing

try:
    from agents import (
        FunctionTool,
        RunContextWrapper,
        ToolOutputFileContent,
        ToolOutputImage,
        ToolOutputText,
    )
    from agents.tool import ValidToolOutputPydanticModelsTypeAdapter
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # one line naming the extra that brings it
    reraise_missing("openai-agents", exc)

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError
from s3claim.events import Event
from s3claim.integrations._bridge import Bridge, field_of, scope_of
from s3claim.scope import Scope
from s3claim.tools import Tool

__all__ = ["claim_check_tools", "default_scope"]

ScopeOf = Callable[[RunContextWrapper[Any]], Scope]


def default_scope(context: RunContextWrapper[Any]) -> Scope:
    """Tenant from the context's `tenant`, run from its `run_id` (attribute or key)."""
    user = context.context
    return scope_of(
        field_of(user, "tenant"),
        field_of(user, "run_id"),
        tenant_hint="give Runner.run a context with a `tenant` attribute or key, "
        "or claim_check_tools a scope= callable",
        run_hint="give Runner.run a context with a `run_id` attribute or key (the same for "
        "every run that shares the conversation), or claim_check_tools a scope= callable",
    )


def claim_check_tools(
    tools: Sequence[FunctionTool],
    claim_check: ClaimCheck,
    *,
    scope: ScopeOf | None = None,
    on_event: Callable[[Event], None] | None = None,
    reuse: Mapping[str, int] | None = None,
    read_only: Iterable[str] = (),
) -> list[FunctionTool]:
    """`tools`, wrapped so their oversized outputs are checked in, then one tool per claim tool.

    The given tools are copied, never changed. `on_event` receives s3claim's events (sizes
    and handles only). A tool whose output must match a declared output schema cannot be
    given a head and marker instead, and is refused here. `reuse` (tool name to seconds)
    and `read_only` (tool names): repeat reads answered from their claim (`s3claim.reuse`,
    docs/reading.md); off by default.
    """
    bridge = Bridge(claim_check, on_event=on_event, reuse=reuse, read_only=read_only)
    scope_for = scope or default_scope
    for each in tools:
        if not isinstance(each, FunctionTool):
            raise TypeError(f"claim_check_tools wraps FunctionTools, got {type(each).__name__}")
        if each.output_json_schema is not None or each._output_type_adapter is not None:
            raise ConfigurationError(
                f"tool {each.name!r} declares an output schema, which a head and marker "
                "cannot match; leave it out of claim_check_tools"
            )
    bridge.host.refuse_collisions(each.name for each in tools)
    wrapped = [_wrap(each, bridge, scope_for) for each in tools]
    return [*wrapped, *(_claim_tool(t, bridge, scope_for) for t in bridge.tools.values())]


def _agent(context: ToolContext[Any]) -> str:
    return getattr(context.agent, "name", None) or "agent"


def _turn(context: ToolContext[Any]) -> tuple[int, int]:
    """The model response that made the call: the run's usage, by the responses so far."""
    return (id(context.usage), context.usage.requests)


def _wrap(tool: FunctionTool, bridge: Bridge, scope_for: ScopeOf) -> FunctionTool:
    twin = copy.copy(tool)  # the SDK's copy rebinds its failure handling to the twin
    inner = twin.on_invoke_tool
    twin.description = bridge.host.described(tool.description)

    async def invoke(context: ToolContext[Any], arguments: str) -> Any:
        begun = await bridge.aside(
            bridge.begin, tool.name, arguments, scope=scope_for(context), agent=_agent(context),
            turn=_turn(context), call_id=context.tool_call_id,
        )  # fmt: skip
        if begun.answer is not None:  # the host answered: the tool does not run
            return begun.answer.text
        assert isinstance(begun.arguments, str)  # JSON text in, JSON text out
        output = await inner(context, begun.arguments)  # the SDK validates them, as usual
        value = _checkable(output)
        if value is None:
            bridge.untouched(begun)
            return output
        return await bridge.aside(bridge.finish, begun, value)

    twin.on_invoke_tool = invoke
    return twin


def _checkable(output: Any) -> Any:
    """The value to check in, or None for output the model reads as images, files or parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list | tuple):
        return None if output and all(_structured(item) for item in output) else output
    part = _structured(output)
    if part is None:
        return output  # any other value: serialised by the boundary
    return part.text if isinstance(part, ToolOutputText) else None


def _structured(output: Any) -> ToolOutputText | ToolOutputImage | ToolOutputFileContent | None:
    """The SDK's own reading of a structured output (a model or a dict with a `type`)."""
    if isinstance(output, ToolOutputText | ToolOutputImage | ToolOutputFileContent):
        return output
    if isinstance(output, dict) and "type" in output:
        try:
            return ValidToolOutputPydanticModelsTypeAdapter.validate_python(output)
        except ValidationError:
            return None
    return None


def _claim_tool(tool: Tool, bridge: Bridge, scope_for: ScopeOf) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        begun = await bridge.aside(
            bridge.begin, tool.name, arguments, scope=scope_for(context), agent=_agent(context),
            turn=_turn(context),
        )  # fmt: skip
        assert begun.answer is not None  # a claim tool: the host answers it
        return begun.answer.text

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=Bridge.parameters(tool),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # optional arguments (offset) are optional
    )
