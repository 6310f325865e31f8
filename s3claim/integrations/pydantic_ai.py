"""The claim check for pydantic-ai: a wrapper toolset, MCP toolsets included.

    toolset = ClaimCheckToolset(FunctionToolset([read_contract]), claim_check)
    agent = Agent(model, toolsets=[toolset], deps_type=Deps)
    await agent.run("...", deps=Deps(tenant="acme"), conversation_id="matter-7")

Results of the wrapped tools pass the result boundary and the admission path, on a worker
thread; multi-modal results (images, documents, binary content, or lists holding any) pass
untouched, and a `ToolReturn` keeps its content and metadata while its return value is checked
in. The toolset adds the claim tools and answers them itself, so their output is never
checked in. The scope is read from the run context before the tool runs: by default the
tenant is the `tenant` attribute or key of the deps and the run is the conversation id, which
pydantic-ai carries across the runs that share a message history.

Needs the `pydantic-ai` extra (`MissingExtraError` names its install when it is missing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from pydantic_core import SchemaValidator, core_schema

from s3claim._extras import reraise_missing

try:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolReturn, is_multi_modal_content
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
    from pydantic_ai.toolsets import WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ModuleNotFoundError as exc:  # one line naming the extra that brings it
    reraise_missing("pydantic-ai", exc)

from s3claim.claimcheck import ClaimCheck
from s3claim.events import Event
from s3claim.integrations._bridge import Bridge, field_of, scope_of
from s3claim.scope import Scope

__all__ = ["ClaimCheckToolset", "default_scope"]

# Any JSON object: the claim tools validate their own arguments, and say what was wrong.
_ARGUMENTS = SchemaValidator(core_schema.dict_schema(keys_schema=core_schema.str_schema()))


def default_scope(context: RunContext[Any]) -> Scope:
    """Tenant from the deps' `tenant`, run from the conversation id."""
    return scope_of(
        field_of(context.deps, "tenant"),
        context.conversation_id,
        tenant_hint="run the agent with deps= holding a `tenant` attribute or key, "
        "or give ClaimCheckToolset a scope= callable",
        run_hint="run the agent with conversation_id=, or give ClaimCheckToolset a scope= callable",
    )


@dataclass
class ClaimCheckToolset(WrapperToolset[AgentDepsT]):
    """`wrapped`, with oversized results checked in, plus the claim tools it answers itself."""

    claim_check: ClaimCheck
    _: KW_ONLY
    scope: Callable[[RunContext[AgentDepsT]], Scope] | None = None
    on_event: Callable[[Event], None] | None = None
    _bridge: Bridge | None = field(default=None, repr=False)
    """Built once and kept by the copies pydantic-ai makes per run (`replace`)."""

    def __post_init__(self) -> None:
        if self._bridge is None:
            self._bridge = Bridge(self.claim_check, on_event=self.on_event)

    @property
    def bridge(self) -> Bridge:
        assert self._bridge is not None
        return self._bridge

    def _scope(self, ctx: RunContext[AgentDepsT]) -> Scope:
        return (self.scope or default_scope)(ctx)

    @staticmethod
    def _agent(ctx: RunContext[AgentDepsT]) -> str:
        return getattr(ctx.agent, "name", None) or "agent"

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools = await super().get_tools(ctx)
        self.bridge.refuse_collisions(tools)
        for name, tool in self.bridge.tools.items():
            definition = ToolDefinition(
                name=name,
                description=tool.description,
                parameters_json_schema=Bridge.parameters(tool),
            )
            tools[name] = ToolsetTool(
                toolset=self, tool_def=definition, max_retries=1, args_validator=_ARGUMENTS
            )
        return tools

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        scope, agent = self._scope(ctx), self._agent(ctx)
        if name in self.bridge.tools:
            return await self.bridge.call_async(name, tool_args, scope=scope, agent=agent)
        result = await super().call_tool(name, tool_args, ctx, tool)
        if isinstance(result, ToolReturn):
            if _untouched(result.return_value):
                return result
            text = await self.bridge.admit_async(
                result.return_value, tool=name, scope=scope, agent=agent
            )
            return replace(result, return_value=text)
        if _untouched(result):
            return result
        return await self.bridge.admit_async(result, tool=name, scope=scope, agent=agent)


def _untouched(value: object) -> bool:
    """Images, documents and binary content (or lists holding any) go to the model as they are."""
    if is_multi_modal_content(value):
        return True
    return isinstance(value, list | tuple) and any(is_multi_modal_content(v) for v in value)
