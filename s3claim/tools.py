"""Tools: typed functions the model may call, their registry, and per-agent views.

docs/references.md shows tools taking claims as arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from s3claim.errors import ConfigurationError, ToolError, describe_validation_error
from s3claim.events import Event
from s3claim.scope import Scope
from s3claim.store import ClaimCheckStore

__all__ = ["RunContext", "Tool", "ToolRegistry", "ToolView", "tool"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a tool may know about the run calling it. The scope never comes from the model."""

    scope: Scope
    agent: str
    emit: Callable[[Event], None]


@dataclass(frozen=True, eq=False)
class Tool:
    """A function the model can call.

    `check_in=False` marks results that must never be checked in (`fetch_result`'s own);
    `redeems` is the store whose handles this tool reads. `read_only`: calling it changes
    nothing a later call could read (a call of any other tool ends reuse in its run);
    `reuse_seconds`: how long a checked-in result answers a repeat call (`s3claim.reuse`).
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]
    returns: TypeAdapter[Any]
    takes_context: bool = False
    check_in: bool = True
    redeems: ClaimCheckStore | None = field(default=None, repr=False)
    read_only: bool = False
    reuse_seconds: int = 0

    @property
    def schema(self) -> dict[str, Any]:
        """The chat-completions `function` tool schema."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def call(self, arguments: Mapping[str, Any], context: RunContext) -> Any:
        """Validate the model's arguments, then run the function."""
        try:
            parsed = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError("invalid_arguments", describe_validation_error(exc)) from None
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.takes_context:
            return self.function(context, **kwargs)
        return self.function(**kwargs)


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    reuse_seconds: int = 0,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    reuse_seconds: int = 0,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a `Tool`.

    The name is the function's, the description its docstring, the argument schema comes
    from its annotations and the declared return type validates what it returns. A first
    parameter annotated `RunContext` is supplied by the runner, not by the model.

    `read_only=True` says a call changes nothing another call could read; a call of a tool
    that is not read-only ends reuse in its run. `reuse_seconds` (0, never, by default) is
    how long a result that was checked in answers a repeat call with the same arguments in
    the same run, without running the function (docs/reading.md); a tool with a reuse
    window is read-only.
    """
    if isinstance(reuse_seconds, bool) or not isinstance(reuse_seconds, int) or reuse_seconds < 0:
        raise ConfigurationError(
            f"reuse_seconds must be a whole number of seconds, 0 or more, got {reuse_seconds!r}"
        )

    def build(func: Callable[..., Any]) -> Tool:
        hints = get_type_hints(func, include_extras=True)
        if "return" not in hints:
            raise TypeError(f"tool {func.__name__!r} must declare its return type")
        params = list(inspect.signature(func).parameters.values())
        takes_context = bool(params) and hints.get(params[0].name) is RunContext
        if takes_context:
            params = params[1:]
        fields: dict[str, Any] = {}
        for param in params:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {func.__name__!r}: *args and **kwargs have no schema")
            if param.name not in hints:
                raise TypeError(f"tool {func.__name__!r}: parameter {param.name!r} needs a type")
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (hints[param.name], default)
        tool_name = name or func.__name__
        model = create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        return Tool(
            name=tool_name,
            description=description or inspect.getdoc(func) or "",
            function=func,
            arguments=model,
            returns=TypeAdapter(hints["return"]),
            takes_context=takes_context,
            read_only=bool(read_only) or reuse_seconds > 0,
            reuse_seconds=reuse_seconds,
        )

    return build(function) if function is not None else build


class ToolView:
    """The tools one agent may use; a view, so the registry is never changed."""

    def __init__(self, tools: Iterable[Tool], *, agent: str) -> None:
        self._tools = {t.name: t for t in tools}
        self.agent = agent

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self._tools.values()]

    def __repr__(self) -> str:
        return f"ToolView(agent={self.agent!r}, tools={list(self._tools)})"


class ToolRegistry:
    """Every tool the application has, by name."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if not isinstance(t, Tool):
                raise TypeError(f"ToolRegistry takes Tools (use @tool), got {type(t).__name__}")
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t

    def view(self, allow: Iterable[str] | None = None, *, agent: str = "agent") -> ToolView:
        """The subset `allow` names (all when None), for `agent`. Unknown names are refused."""
        names = list(self._tools) if allow is None else list(allow)
        unknown = [n for n in names if n not in self._tools]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; registered: {sorted(self._tools)}")
        return ToolView((self._tools[n] for n in names), agent=agent)

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __repr__(self) -> str:
        return f"ToolRegistry({sorted(self._tools)})"
