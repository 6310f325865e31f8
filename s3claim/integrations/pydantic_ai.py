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
pydantic-ai carries across the runs that share a message history. A turn (for a turn
budget's running total) is one model response: the run's id and its step, `run_step`.

Needs the `pydantic-ai` extra (`MissingExtraError` names its install when it is missing).

docs/adapters.md ("pydantic-ai") has a snippet that runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import SchemaValidator, core_schema

from s3claim.extras import reraise_missing

try:
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.messages import ToolReturn, is_multi_modal_content
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
    from pydantic_ai.toolsets import WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ModuleNotFoundError as exc:  # one line naming the extra that brings it
    reraise_missing("pydantic-ai", exc)

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import describe_validation_error
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
    reuse: Mapping[str, int] | None = None
    """Tool name to seconds: repeat reads answered from their claim (`s3claim.reuse`)."""
    read_only: Iterable[str] = ()
    """Tools whose calls change nothing, so they do not end reuse."""
    _bridge: Bridge | None = field(default=None, repr=False)
    """Built once and kept by the copies pydantic-ai makes per run (`replace`)."""

    def __post_init__(self) -> None:
        if self._bridge is None:
            self._bridge = Bridge(
                self.claim_check, on_event=self.on_event, reuse=self.reuse,
                read_only=self.read_only,
            )  # fmt: skip

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
        self.bridge.host.refuse_collisions(tools)
        if self.bridge.references:
            tools = {name: self._referable(tool) for name, tool in tools.items()}
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

    def _referable(self, tool: ToolsetTool[AgentDepsT]) -> ToolsetTool[AgentDepsT]:
        """A wrapped tool that takes references: described so, and validated after they
        are resolved (pydantic-ai validates before `call_tool`, where a reference is not yet
        the string or object the tool declares)."""
        definition = replace(
            tool.tool_def, description=self.bridge.host.described(tool.tool_def.description)
        )
        return replace(tool, tool_def=definition, args_validator=_Deferred(tool.args_validator))

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        bridge = self.bridge
        begun = await bridge.aside(
            bridge.begin, name, tool_args, scope=self._scope(ctx), agent=self._agent(ctx),
            turn=(ctx.run_id, ctx.run_step), call_id=ctx.tool_call_id,
        )  # fmt: skip
        if begun.answer is not None:  # the host answered: the tool does not run
            return begun.answer.text
        if isinstance(tool.args_validator, _Deferred):
            validator = tool.args_validator.validator
            assert not isinstance(begun.arguments, str)  # a mapping in, a mapping out
            try:  # references resolved: now the tool's own validation, as pydantic-ai's
                tool_args = validator.validate_python(dict(begun.arguments))
            except ValidationError as exc:
                bridge.untouched(begun)
                raise ModelRetry(describe_validation_error(exc)) from None
            tool = replace(tool, args_validator=validator)
        result = await super().call_tool(name, tool_args, ctx, tool)
        if isinstance(result, ToolReturn):
            if _untouched(result.return_value):
                bridge.untouched(begun)
                return result
            # Its content is not the claim's: what the model reads is more than the answer.
            text = await bridge.aside(bridge.finish, begun, result.return_value, keep=False)
            return replace(result, return_value=text)
        if _untouched(result):
            bridge.untouched(begun)
            return result
        return await bridge.aside(bridge.finish, begun, result)


class _Deferred:
    """Any JSON object now; the tool's own validator once references are resolved."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        return _ARGUMENTS.validate_json(input, allow_partial=allow_partial)

    def validate_python(
        self,
        input: Any,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> Any:
        return _ARGUMENTS.validate_python(input, allow_partial=allow_partial)


def _untouched(value: object) -> bool:
    """Images, documents and binary content (or lists holding any) go to the model as they are."""
    if is_multi_modal_content(value):
        return True
    return isinstance(value, list | tuple) and any(is_multi_modal_content(v) for v in value)
