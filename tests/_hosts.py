"""Every host of the tool-call pipeline (`s3claim.hosting.Host`), driven one way, for the
suites that run a behaviour through every host; and the host's steps as single calls.

`drive(host, functions, model, ...)` gives plain typed functions and a scripted model to one
host as an application would: the runner; LangChain (sync or async), the OpenAI Agents SDK
and pydantic-ai, each in its own agent loop with its own scripted model; the MCP proxy, the
model being its client through the official SDK; the adapters' bridge; the async face. It
returns what the model read of each call, in call order, and what it was told of each tool.
The frameworks are imported by their driver only, so a suite pays for the ones it runs.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from s3claim import ClaimCheck, Event, RunContext, Scope, Tool, ToolError, claim_tools, tool
from s3claim.hosting import Host, ToolAnswer

Call = tuple[str, Mapping[str, Any]]
Model = Callable[[Sequence[str]], Sequence[Call]]
"""A scripted model: from every tool output it has read, in call order, the calls of its next
turn; none, and it answers ("done"). It is asked once a model request."""

MAX_TURNS = 1_000
"""Every loop's bound on model requests: more than any script here makes."""


@dataclass(frozen=True)
class Answer:
    """One call's answer as the model read it. `error`: the host's mark of an error (MCP's
    `isError`), or where a host has none, a refusal's shape. `links`: the resource links
    after the text (MCP). `retry`: pydantic-ai's own retry prompt (its validation refused
    the arguments), written as the refusal it stands for."""

    text: str
    error: bool
    links: int = 0
    retry: bool = False


@dataclass(frozen=True)
class Run:
    answers: list[Answer]
    descriptions: dict[str, str]
    """Each tool's description as the model was told it (hosts that offer tools to a model)."""

    @property
    def texts(self) -> list[str]:
        return [a.text for a in self.answers]


@dataclass(frozen=True)
class Setup:
    """What a host is given beside the tools: the claim check, the scope the application
    supplies, and the host's own knobs."""

    claim_check: ClaimCheck
    scope: Scope
    on_event: Callable[[Event], None] | None
    reuse: Mapping[str, int] | None
    read_only: Sequence[str]

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)


Driver = Callable[[Sequence[Callable[..., Any]], Model, Setup], Run]


def drive(
    host: str,
    functions: Sequence[Callable[..., Any]],
    model: Model,
    *,
    claim_check: ClaimCheck,
    scope: Scope,
    on_event: Callable[[Event], None] | None = None,
    reuse: Mapping[str, int] | None = None,
    read_only: Sequence[str] = (),
) -> Run:
    """Run `model` through `host` (a name in `DRIVERS`) with the tools `functions`."""
    return DRIVERS[host](functions, model, Setup(claim_check, scope, on_event, reuse, read_only))


def turns(*turns: Sequence[Call]) -> Model:
    """A model that makes these turns' calls, then answers. An argument given as a function
    is worked out when the model makes the call, from the outputs it has read."""
    queue = list(turns)

    def model(outputs: Sequence[str]) -> Sequence[Call]:
        if not queue:
            return ()
        return [
            (name, {k: v(outputs) if callable(v) else v for k, v in arguments.items()})
            for name, arguments in queue.pop(0)
        ]

    return model


def one_a_turn(*calls: Call) -> Model:
    """A model that makes these calls, one a turn, then answers."""
    return turns(*([call] for call in calls))


def _is_refusal(text: str) -> bool:
    """Whether `text` is a refusal as the model reads one: `{"error": ..., "message": ...}`."""
    if not text.lstrip().startswith("{"):  # no JSON parse of every window (some nest deep)
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error", "message"}


def _answers(texts: Sequence[str]) -> list[Answer]:
    return [Answer(text, _is_refusal(text)) for text in texts]


def _tools(functions: Sequence[Callable[..., Any]], setup: Setup) -> list[Tool]:
    reuse = setup.reuse or {}
    return [
        tool(read_only=f.__name__ in setup.read_only, reuse_seconds=reuse.get(f.__name__, 0))(f)
        for f in functions
    ]


# -- the runner -------------------------------------------------------------------------------

_RUN_EVENTS = ("model_called", "run_finished", "run_resumed")
"""The runner's own events, of its model loop: the other hosts have no such loop."""


def _runner(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    from s3claim import AgentRunner, AssistantMessage, ScriptedProvider, ToolCall
    from s3claim.messages import Message, ToolMessage

    ids = itertools.count()

    def step(messages: Sequence[Message]) -> AssistantMessage:
        calls = model([m.content for m in messages if isinstance(m, ToolMessage)])
        if not calls:
            return AssistantMessage(content="done")
        return AssistantMessage(
            tool_calls=tuple(
                ToolCall(id=f"c{next(ids)}", name=name, arguments=dict(arguments))
                for name, arguments in calls
            )
        )

    runner = AgentRunner(
        provider=ScriptedProvider([step] * MAX_TURNS),
        tools=[*_tools(functions, setup), *claim_tools(setup.claim_check.store)],
        claim_check=setup.claim_check,
        max_turns=MAX_TURNS,
    )
    result = runner.run("go", tenant=setup.scope.tenant, run_id=setup.scope.run)
    assert result.output == "done"
    for event in result.events:  # the runner hands its events over with its result
        if event.kind not in _RUN_EVENTS:
            setup.emit(event)
    described = {s["function"]["name"]: s["function"]["description"] for s in runner._schemas()}
    return Run(
        _answers([m.content for m in result.messages if isinstance(m, ToolMessage)]), described
    )


# -- the framework adapters -------------------------------------------------------------------


def _langchain(face: str) -> Driver:
    def run(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
        from langchain_core.tools import StructuredTool

        from s3claim.integrations.langchain import ClaimCheckMiddleware
        from tests.test_integration_langchain import ScriptedChatModel

        ids, described = itertools.count(), dict[str, str]()

        def outputs(messages: Sequence[BaseMessage]) -> list[str]:
            return [str(m.content) for m in messages if isinstance(m, ToolMessage)]

        def script(messages: list[BaseMessage]) -> AIMessage:
            calls = model(outputs(messages))
            if not calls:
                return AIMessage("done")
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": name, "args": dict(arguments), "id": f"c{next(ids)}"}
                    for name, arguments in calls
                ],
            )

        class Seeing(ScriptedChatModel):
            def bind_tools(self, tools: Any, **_: Any) -> Any:  # type: ignore[override]
                described.update({t.name: t.description for t in tools})
                return self

        # No checkpointer: LangGraph's msgpack cannot store an integer past 64 bits (a
        # model's `line=10**30`) and fails the run before any middleware sees the call.
        agent = create_agent(
            Seeing(script=script),
            tools=[StructuredTool.from_function(f) for f in functions],
            middleware=[
                ClaimCheckMiddleware(
                    setup.claim_check,
                    on_event=setup.on_event,
                    reuse=setup.reuse,
                    read_only=setup.read_only,
                )
            ],
        )
        state = {"messages": [HumanMessage("go")]}
        config = {"configurable": {"thread_id": setup.scope.run}, "recursion_limit": MAX_TURNS}
        context = {"tenant": setup.scope.tenant}
        if face == "sync":
            final = agent.invoke(state, config, context=context)
        else:
            final = asyncio.run(agent.ainvoke(state, config, context=context))
        assert final["messages"][-1].content == "done"
        return Run(_answers(outputs(final["messages"])), described)

    return run


def _openai_agents(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    from s3claim.integrations.openai_agents import claim_check_tools

    set_tracing_disabled(True)
    ids, described, seen = itertools.count(), dict[str, str](), list[str]()

    def respond(call: ModelCall) -> Any:
        described.update({t.name: t.description for t in call.tools})
        items = call.input if isinstance(call.input, list) else []
        seen[:] = [str(i["output"]) for i in items if isinstance(i, dict) and "output" in i]
        calls = model(seen)
        if not calls:
            return [assistant_message("done")]
        return [
            function_call(name, dict(arguments), call_id=f"c{next(ids)}")
            for name, arguments in calls
        ]

    tools = claim_check_tools(
        [function_tool(f, strict_mode=False) for f in functions],  # a `dict` argument is free
        setup.claim_check,
        on_event=setup.on_event,
        reuse=setup.reuse,
        read_only=setup.read_only,
    )
    scripted = ScriptedModel([ModelStep.respond(respond)] * MAX_TURNS)
    result = asyncio.run(
        Runner.run(
            Agent(name="counsel", model=scripted, tools=tools),
            "go",
            context={"tenant": setup.scope.tenant, "run_id": setup.scope.run},
            run_config=RunConfig(tracing_disabled=True),
            max_turns=MAX_TURNS,
        )
    )
    assert result.final_output == "done"
    return Run(_answers(seen), described)


def _pydantic_ai(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import UsageLimits

    from s3claim.integrations.pydantic_ai import ClaimCheckToolset

    ids, described = itertools.count(), dict[str, str]()

    def answers(messages: list[ModelMessage]) -> list[Answer]:
        made = []
        for message in messages:
            for part in message.parts if isinstance(message, ModelRequest) else ():
                if isinstance(part, RetryPromptPart):  # pydantic-ai's own refusal of arguments
                    refusal = {"error": "invalid_arguments", "message": part.model_response()}
                    made.append(Answer(json.dumps(refusal), True, retry=True))
                elif isinstance(part, ToolReturnPart):
                    content = part.content
                    text = content if isinstance(content, str) else json.dumps(content)
                    made.append(Answer(text, _is_refusal(text)))
        return made

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        described.update({t.name: t.description or "" for t in info.function_tools})
        calls = model([a.text for a in answers(messages)])
        if not calls:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[
                ToolCallPart(name, dict(arguments), tool_call_id=f"c{next(ids)}")
                for name, arguments in calls
            ]
        )

    toolset = ClaimCheckToolset(
        FunctionToolset(list(functions)),
        setup.claim_check,
        on_event=setup.on_event,
        reuse=setup.reuse,
        read_only=setup.read_only,
    )
    agent = Agent(FunctionModel(script), toolsets=[toolset], retries=5)
    result = asyncio.run(
        agent.run(
            "go",
            deps={"tenant": setup.scope.tenant},
            conversation_id=setup.scope.run,
            usage_limits=UsageLimits(request_limit=None),
        )
    )
    assert result.output == "done"
    return Run(answers(result.all_messages()), described)


def _bridge(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    """The adapters' bridge bare: each call's arguments as the JSON text frameworks hand over,
    its steps on the bridge's workers, as an async framework runs them."""
    from s3claim.integrations._bridge import Bridge

    bridge = Bridge(
        setup.claim_check, on_event=setup.on_event, reuse=setup.reuse, read_only=setup.read_only
    )
    tools = {t.name: t for t in _tools(functions, setup)}
    ids = itertools.count()

    async def call(name: str, arguments: Mapping[str, Any]) -> str:
        begun = await bridge.aside(
            bridge.begin, name, json.dumps(arguments), scope=setup.scope, agent="counsel",
            call_id=f"c{next(ids)}",
        )  # fmt: skip
        if begun.answer is not None:  # a claim tool, a repeat or a refusal: the host answers
            return begun.answer.text
        given = begun.arguments  # as they came (JSON text) when no reference was resolved
        given = json.loads(given) if isinstance(given, str) else given
        value = tools[name].call(given, bridge.host.context(setup.scope, agent="counsel"))
        return await bridge.aside(bridge.finish, begun, value)

    return Run(_answers(asyncio.run(_one_by_one(model, call))), {})


async def _one_by_one(model: Model, call: Callable[[str, Mapping[str, Any]], Any]) -> list[str]:
    """Each turn's calls made one after another, for the hosts without a model loop."""
    texts: list[str] = []
    while calls := model(texts):
        for name, arguments in calls:
            texts.append(await call(name, arguments))
    return texts


# -- the MCP proxy ----------------------------------------------------------------------------


class _Upstream:
    """An MCP server's side of the proxy, in-process: it runs the tools as any server would,
    validating its own arguments, knowing nothing of s3claim."""

    instructions = None
    server_info = None
    timeout = 30.0
    downstream = None

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {t.name: t for t in tools}

    @property
    def capabilities(self) -> Any:
        from mcp_types import ServerCapabilities, ToolsCapability

        return ServerCapabilities(tools=ToolsCapability())

    async def list_tools(self) -> list[Any]:
        from mcp_types import Tool as McpTool
        from mcp_types import ToolAnnotations

        return [  # a read-only tool says so, as a server would (readOnlyHint)
            McpTool(
                name=t.name,
                description=t.description,
                input_schema={"type": "object"},
                annotations=ToolAnnotations(read_only_hint=True) if t.read_only else None,
            )
            for t in self.tools.values()
        ]

    async def send(self, request: Any, result_type: Any, **_: Any) -> Any:
        from mcp_types import CallToolResult, TextContent

        params = request.params
        try:
            value = self.tools[params.name].call(dict(params.arguments or {}), None)  # type: ignore[arg-type]
        except ToolError as refused:
            text = f"invalid arguments: {refused.message}"
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        return CallToolResult(content=[TextContent(text=str(value))])


def _mcp_proxy(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    """The model is the MCP client: each call one tools/call through the proxy."""
    from mcp import Client
    from mcp_types import ResourceLink, TextContent

    from s3claim.mcp import ClaimCheckProxy, Scoping

    assert not setup.read_only, "the MCP proxy takes no read_only"
    proxy = ClaimCheckProxy(
        _Upstream(_tools(functions, setup)),  # type: ignore[arg-type]
        claim_check=setup.claim_check,
        scoping=Scoping(
            tenant=setup.scope.tenant, tenant_header=None, fallback_run=setup.scope.run
        ),
        on_event=setup.on_event,
        reuse=setup.reuse,
    )

    async def go() -> Run:
        answers: list[Answer] = []
        async with Client(proxy.server()) as client:
            listed = await client.list_tools()
            while calls := model([a.text for a in answers]):
                for name, arguments in calls:
                    result = await client.call_tool(name, dict(arguments))
                    # a check-in adds a link to its claim (resources/read) after the text
                    block, *links = result.content
                    assert isinstance(block, TextContent)
                    assert all(isinstance(link, ResourceLink) for link in links)
                    answers.append(Answer(block.text, bool(result.is_error), len(links)))
        return Run(answers, {t.name: t.description or "" for t in listed.tools})

    return asyncio.run(go())


# -- the async face ---------------------------------------------------------------------------


def _async_face(functions: Sequence[Callable[..., Any]], model: Model, setup: Setup) -> Run:
    """A result checked in through the async face (`AsyncClaimCheck`); a claim tool answered
    as every async host of ours answers it, the sync store's claim tools on a worker."""
    from s3claim import AsyncClaimCheck

    tools = {t.name: t for t in (*_tools(functions, setup), *claim_tools(setup.claim_check.store))}
    context = RunContext(setup.scope, "async", setup.emit)
    checks = AsyncClaimCheck(setup.claim_check)

    async def call(name: str, arguments: Mapping[str, Any]) -> str:
        called = tools[name]
        if called.redeems is not None:
            return (await asyncio.to_thread(claim_answer, called, arguments, context)).text
        value = called.call(arguments, context)
        assert isinstance(value, str)
        return (await checks.check_in(value, tool=name, scope=setup.scope)).text

    return Run(_answers(asyncio.run(_one_by_one(model, call))), {})


DRIVERS: dict[str, Driver] = {
    "runner": _runner,
    "langchain": _langchain("sync"),
    "langchain_async": _langchain("async"),
    "openai_agents": _openai_agents,
    "pydantic_ai": _pydantic_ai,
    "mcp_proxy": _mcp_proxy,
    "bridge": _bridge,
    "async": _async_face,
}


# -- the host's steps as single calls ---------------------------------------------------------


def claim_answer(tool: Tool, arguments: Mapping[str, Any] | str, context: RunContext) -> ToolAnswer:
    """What a host answers for a call of the claim tool `tool` (`Host.run`)."""
    assert tool.redeems is not None, f"{tool.name} is no claim tool"
    return Host(ClaimCheck(tool.redeems)).run(tool, arguments, context)


def resolved_arguments(
    arguments: Mapping[str, Any], *, claim_check: ClaimCheck, tool: str, context: RunContext
) -> Mapping[str, Any]:
    """The arguments a host hands `tool`, references resolved (`Host.begin`); the refusal the
    model would read instead, raised as the `ToolError` it renders."""
    call = Host(claim_check).begin(tool, arguments, context)
    if call.answer is not None:
        refusal = json.loads(call.answer.text)
        raise ToolError(refusal["error"], refusal["message"])
    assert not isinstance(call.arguments, str)
    return call.arguments
