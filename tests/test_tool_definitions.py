"""The claim tools' definitions as every host sends them: within 1,200 characters together.

A tool's definition rides in every request a model is sent, so its characters are paid on
every turn (issue 47). Each host is read where it hands the definitions over: the runner's
provider call, pydantic-ai's `ToolDefinition`s given to its model, the OpenAI Agents SDK's
`FunctionTool`s given to its model, LangChain's tools bound to its chat model (as
`convert_to_openai_tool` sends them), and `tools/list` of a real `s3claim mcp-proxy`
subprocess through the official client. A definition counts its description and its
argument schema as compact JSON.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from s3claim import ClaimCheck, MemoryClaimCheckStore
from s3claim.claim_tools import FETCH_TOOL_NAME, SEARCH_TOOL_NAME, claim_tools

BUDGET = 1_200
"""The most both claim tools' descriptions and schemas take together, as sent."""
CLAIM_TOOLS = (FETCH_TOOL_NAME, SEARCH_TOOL_NAME)
ARGUMENTS = {
    FETCH_TOOL_NAME: {"handle", "offset", "line", "from_end", "path", "limit", "lines"},
    SEARCH_TOOL_NAME: {"handle", "pattern", "regex", "ignore_case", "offset"},
}

Definitions = dict[str, tuple[str, dict[str, Any]]]
"""Tool name to (description, argument schema), as a host sent them."""


def chars(definitions: Definitions) -> int:
    """The claim tools' characters: each description, and its schema as compact JSON."""
    return sum(
        len(description) + len(json.dumps(schema, separators=(",", ":")))
        for name, (description, schema) in definitions.items()
        if name in CLAIM_TOOLS
    )


def _runner() -> Definitions:
    from s3claim import AgentRunner, AssistantMessage
    from s3claim.messages import Message

    sent: list[Sequence[dict[str, Any]]] = []

    class Recording:
        def complete(
            self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
        ) -> AssistantMessage:
            sent.append(tools)
            return AssistantMessage(content="done")

    store = MemoryClaimCheckStore()
    runner = AgentRunner(
        provider=Recording(), tools=claim_tools(store), claim_check=ClaimCheck(store)
    )
    assert runner.run("go", tenant="acme", run_id="r-1").output == "done"
    functions = [t["function"] for t in sent[0]]
    return {f["name"]: (f["description"], f["parameters"]) for f in functions}


def _pydantic_ai() -> Definitions:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from s3claim.integrations.pydantic_ai import ClaimCheckToolset

    seen: Definitions = {}

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for each in info.function_tools:
            seen[each.name] = (each.description or "", each.parameters_json_schema)
        return ModelResponse(parts=[TextPart("done")])

    toolset = ClaimCheckToolset(FunctionToolset([]), ClaimCheck(MemoryClaimCheckStore()))
    agent = Agent(FunctionModel(script), toolsets=[toolset])
    result = asyncio.run(agent.run("go", deps={"tenant": "acme"}, conversation_id="r-1"))
    assert result.output == "done"
    return seen


def _openai_agents() -> Definitions:
    from agents import Agent, FunctionTool, RunConfig, Runner, set_tracing_disabled
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message

    from s3claim.integrations.openai_agents import claim_check_tools

    set_tracing_disabled(True)
    seen: Definitions = {}

    def respond(call: ModelCall) -> Any:
        for each in call.tools:
            assert isinstance(each, FunctionTool)
            seen[each.name] = (each.description, each.params_json_schema)
        return [assistant_message("done")]

    tools = claim_check_tools([], ClaimCheck(MemoryClaimCheckStore()))
    result = asyncio.run(
        Runner.run(
            Agent(name="counsel", model=ScriptedModel([ModelStep.respond(respond)]), tools=tools),
            "go",
            context={"tenant": "acme", "run_id": "r-1"},
            run_config=RunConfig(tracing_disabled=True),
        )
    )
    assert result.final_output == "done"
    return seen


def _langchain() -> Definitions:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from s3claim.integrations.langchain import ClaimCheckMiddleware
    from tests.test_integration_langchain import ScriptedChatModel

    seen: Definitions = {}

    class Binding(ScriptedChatModel):
        def bind_tools(self, tools: Sequence[Any], **_: Any) -> Any:  # type: ignore[override]
            for each in tools:
                function = convert_to_openai_tool(each)["function"]
                seen[function["name"]] = (function["description"], function["parameters"])
            return self

    middleware = ClaimCheckMiddleware(ClaimCheck(MemoryClaimCheckStore()))
    agent = create_agent(Binding(script=lambda _: AIMessage("done")), middleware=[middleware])
    final = agent.invoke({"messages": [HumanMessage("go")]}, context={"tenant": "acme"})
    assert final["messages"][-1].content == "done"
    return seen


def _mcp_proxy() -> Definitions:
    from tests.mcp_proxy._support import stdio_proxy

    seen: Definitions = {}

    async def scenario() -> None:
        async with stdio_proxy("--tenant", "acme", "--store", "memory") as client:
            for each in (await client.list_tools()).tools:
                seen[each.name] = (each.description or "", each.input_schema)

    anyio.run(scenario)
    return seen


HOSTS = {
    "runner": _runner,
    "pydantic-ai": _pydantic_ai,
    "openai-agents": _openai_agents,
    "langchain": _langchain,
    "mcp-proxy": _mcp_proxy,
}


@pytest.mark.parametrize("host", HOSTS)
def test_both_claim_tools_take_at_most_1200_characters_as_each_host_sends_them(host: str) -> None:
    definitions = HOSTS[host]()
    assert set(CLAIM_TOOLS) <= set(definitions)
    for name in CLAIM_TOOLS:  # every argument still named, the handle (and pattern) required
        description, schema = definitions[name]
        assert set(schema["properties"]) == ARGUMENTS[name], (host, name)
        assert description, (host, name)
    assert set(definitions[FETCH_TOOL_NAME][1]["required"]) == {"handle"}
    assert set(definitions[SEARCH_TOOL_NAME][1]["required"]) == {"handle", "pattern"}
    assert chars(definitions) <= BUDGET, (host, chars(definitions))


def test_the_definitions_keep_the_bounds_a_model_needs() -> None:
    """What a model could get wrong without being told: where counting starts, the window's
    size, which arguments are numbers, flags or text."""
    definitions = _runner()
    fetch = definitions[FETCH_TOOL_NAME][1]["properties"]
    assert fetch["offset"] == {"type": "integer", "minimum": 0}
    assert fetch["line"] == fetch["lines"] == {"type": "integer", "minimum": 1}
    assert fetch["limit"] == {"type": "integer", "minimum": 1, "maximum": 4096}
    assert fetch["from_end"] == {"type": "boolean"}
    assert fetch["path"] == fetch["handle"] == {"type": "string"}
    search = definitions[SEARCH_TOOL_NAME][1]["properties"]
    assert search["offset"] == {"type": "integer", "minimum": 0}
    assert search["pattern"]["type"] == "string"
    assert search["regex"] == search["ignore_case"] == {"type": "boolean"}
    for name in CLAIM_TOOLS:  # no title, no default a model would pass back
        assert "title" not in json.dumps(definitions[name][1])
        assert "default" not in json.dumps(definitions[name][1])
