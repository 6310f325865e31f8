"""llama.cpp's server's own replies, replayed: the provider must read them as it did for real.

tests/fixtures/llama_cpp/ holds the exact bodies that llama-cpp-python's server (SmolLM2-135M
on CPU) returned, and what `OpenAICompatibleProvider` made of each against that server. They
were recorded through a proxy by `python -m benchmarks.model.fixtures
tests/fixtures/llama_cpp` (after `make bench-model` built the server); re-record them when the
server version moves. Replayed here through the fake chat server, so no llama.cpp is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from s3claim import AgentRunner, AssistantMessage, MemoryClaimCheckStore
from s3claim.cli.demo import read_contract_tool, run_scenario
from s3claim.errors import ProviderError
from s3claim.messages import UserMessage
from s3claim.providers import OpenAICompatibleProvider, TokenUsage
from s3claim.providers._openai_compatible import INVALID_ARGUMENTS_KEY, from_wire
from tests._chat_server import ChatServer, serve

FIXTURES = Path(__file__).parent / "fixtures" / "llama_cpp"


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def _replay(data: dict[str, Any]) -> Any:
    return lambda _body: (data["status"], data["body"].encode("utf-8"))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serve()


def test_the_recordings_are_the_five_exchanges_from_llama_cpp() -> None:
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert names == [
        "context_length_exceeded",
        "malformed_tool_call",
        "null_content_refused",
        "plain_answer",
        "tool_call",
    ]
    for name in names:
        assert _recorded(name)["server"].startswith("llama-cpp-python ")


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_each_reply_parses_as_it_did_against_the_real_server(server: ChatServer, name: str) -> None:
    data = _recorded(name)
    server.replies = [_replay(data)]
    usage: list[TokenUsage] = []
    provider = OpenAICompatibleProvider(server.url, "smollm2", on_usage=usage.append)
    expected = data["parsed"]

    if "error" in expected:
        with pytest.raises(ProviderError) as caught:
            provider.complete([UserMessage(content="x")], [])
        assert str(caught.value) == expected["error"].format(url=provider.url)
        assert caught.value.status == expected["status"] == data["status"]
    else:
        reply = provider.complete([UserMessage(content="x")], [])
        assert reply.model_dump(mode="json") == expected["message"]
        assert usage == [TokenUsage(**u) for u in expected["usage"]]


def test_what_each_reply_means(server: ChatServer) -> None:
    """Pinned by meaning too, so a re-recording that parses wrongly cannot pass by agreeing."""
    replies = {name: _recorded(name) for name in ("plain_answer", "tool_call")}
    server.replies = [_replay(replies["plain_answer"]), _replay(replies["tool_call"])]
    provider = OpenAICompatibleProvider(server.url, "smollm2")

    answer = provider.complete([UserMessage(content="x")], [])
    call = provider.complete([UserMessage(content="x")], [])

    sent = json.loads(replies["plain_answer"]["body"])["choices"][0]["message"]["content"]
    assert answer == AssistantMessage(content=sent)
    assert sent.strip()
    assert [c.name for c in call.tool_calls] == ["read_contract"]
    assert isinstance(call.tool_calls[0].arguments["name"], str)
    assert call.content is None  # llama.cpp sends null content beside the call
    wire = json.loads(replies["tool_call"]["body"])["choices"][0]["message"]["tool_calls"][0]
    assert call.tool_calls[0].id == wire["id"]


def test_a_malformed_call_from_llama_cpp_becomes_a_tool_error_the_model_reads(
    server: ChatServer,
) -> None:
    data = _recorded("malformed_tool_call")
    raw = json.loads(data["body"])["choices"][0]["message"]["tool_calls"][0]["function"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw["arguments"])  # the server really sent arguments that are not JSON
    server.replies = [_replay(data), _replay(_recorded("plain_answer"))]
    runner = AgentRunner(
        provider=OpenAICompatibleProvider(server.url, "smollm2"),
        tools=(read_contract_tool("the contract"),),
    )

    result = runner.run("Read it", tenant="acme")

    assert result.output is not None
    refusal = json.loads(server.received[1].body["messages"][-1]["content"])
    assert refusal["error"] == "invalid_arguments"
    assert INVALID_ARGUMENTS_KEY in refusal["message"]


def test_an_oversized_prompt_fails_the_baseline_not_the_run(server: ChatServer) -> None:
    tool_call, exceeded = _recorded("tool_call"), _recorded("context_length_exceeded")
    assert json.loads(exceeded["body"])["error"]["code"] == "context_length_exceeded"
    server.replies = [
        _replay(tool_call),
        _replay(_recorded("plain_answer")),
        _replay(tool_call),
        _replay(exceeded),
    ]
    scenario = run_scenario(
        MemoryClaimCheckStore(), provider=OpenAICompatibleProvider(server.url, "smollm2")
    )
    assert scenario.claimed.output is not None
    assert scenario.baseline is None
    assert scenario.baseline_error is not None
    assert scenario.baseline_error.endswith(
        "HTTP 400: invalid_request_error context_length_exceeded"
    )
    assert "tokens" not in scenario.baseline_error  # the server's message is not repeated


def test_the_servers_500_quotes_the_request_and_the_error_does_not(server: ChatServer) -> None:
    data = _recorded("null_content_refused")
    body = json.loads(data["body"])["error"]["message"]
    assert "msa" in body and "validation error" in body  # what the server sent back
    server.replies = [_replay(data)]
    with pytest.raises(ProviderError) as caught:
        OpenAICompatibleProvider(server.url, "m").complete([UserMessage(content="x")], [])
    assert "msa" not in str(caught.value) and "validation" not in str(caught.value)
    # and the provider never sends what the server refused there: a null content
    call = json.loads(_recorded("tool_call")["body"])["choices"][0]["message"]
    wire = OpenAICompatibleProvider(server.url, "m").request_body([from_wire(call)], [])
    assert wire["messages"][0]["content"] == ""
    assert json.loads(data["body"])["error"]["type"] == "internal_server_error"
