"""OpenAICompatibleProvider against a real HTTP server on 127.0.0.1 answering chat completions."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    MemoryClaimCheckStore,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.cli.demo import contract, run_scenario
from s3claim.errors import ProviderError
from s3claim.messages import SystemMessage, ToolMessage, UserMessage
from s3claim.providers import OpenAICompatibleProvider, TokenUsage
from s3claim.providers._openai_compatible import (
    INVALID_ARGUMENTS_KEY,
    decode_arguments,
    from_wire,
    to_wire,
)
from tests._chat_server import ChatServer, answer, serve, tool_call

CONTRACT = contract()


@tool
def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    return CONTRACT


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serve()


def _runner(provider: OpenAICompatibleProvider) -> AgentRunner:
    store = MemoryClaimCheckStore()
    registry = ToolRegistry((read_contract, claim_check_tool(store)))
    return AgentRunner(
        provider=provider,
        tools=registry.view(allow=("read_contract", "fetch_result"), agent="counsel"),
        claim_check=ClaimCheck(store=store),
        system="You are counsel.",
    )


def _handle_in(body: dict[str, Any]) -> str:
    match = re.search(r"handle='(claim:[0-9a-z]+)'", body["messages"][-1]["content"])
    assert match
    return match.group(1)


def test_a_run_through_the_server_translates_both_ways(server: ChatServer) -> None:
    server.replies = [
        tool_call("read_contract", '{"name": "msa"}', "call_a"),
        tool_call(
            "fetch_result",
            lambda body: json.dumps({"handle": _handle_in(body), "offset": 4096}),
            "call_b",
        ),
        answer("Clause 1 governs."),
    ]
    provider = OpenAICompatibleProvider(server.url, "qwen2.5", api_key="sk-test")
    runner = _runner(provider)

    result = runner.run("What governs?", tenant="acme")

    assert result.output == "Clause 1 governs."
    assert [r.path for r in server.received] == ["/v1/chat/completions"] * 3
    first, second, third = (r.body for r in server.received)
    assert server.received[0].headers["Authorization"] == "Bearer sk-test"
    assert server.received[0].headers["Content-Type"] == "application/json"
    assert first["model"] == "qwen2.5"
    assert first["stream"] is False
    assert first["temperature"] == 0.0
    assert first["tools"] == runner.tools.schemas()
    assert first["messages"] == [
        {"role": "system", "content": "You are counsel."},
        {"role": "user", "content": "What governs?"},
    ]
    assistant, tool_message = second["messages"][2:]
    assert assistant == {
        "role": "assistant",
        "content": "",  # never null: llama.cpp's server refuses it
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read_contract", "arguments": '{"name": "msa"}'},
            }
        ],
    }
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_a"
    assert tool_message["name"] == "read_contract"
    assert tool_message["content"] == result.messages[3].content
    assert len(tool_message["content"]) < 1000  # the head went over the wire, not the contract
    window = third["messages"][-1]
    assert window["name"] == "fetch_result"
    assert window["content"].startswith(CONTRACT[4096:8192])
    kinds = [e.kind for e in result.events]
    assert kinds.count("claim_fetched") == 1


def test_no_api_key_sends_no_authorization(server: ChatServer) -> None:
    server.replies = [answer("hi")]
    reply = OpenAICompatibleProvider(server.url, "m").complete([UserMessage(content="x")], [])
    assert reply == AssistantMessage(content="hi")
    assert "Authorization" not in server.received[0].headers
    assert "tools" not in server.received[0].body


def test_malformed_arguments_become_a_tool_error_the_model_reads(server: ChatServer) -> None:
    server.replies = [
        tool_call("read_contract", '{"name": "msa"', "call_a"),  # cut off
        answer("Sorry, retrying is pointless."),
    ]
    result = _runner(OpenAICompatibleProvider(server.url, "m")).run("Read it", tenant="acme")

    assert result.output == "Sorry, retrying is pointless."
    refusal = json.loads(server.received[1].body["messages"][-1]["content"])
    assert refusal["error"] == "invalid_arguments"
    assert INVALID_ARGUMENTS_KEY in refusal["message"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ("", {}),
        ("  ", {}),
        (None, {}),
        (json.dumps('{"a": 1}'), {"a": 1}),  # encoded twice
    ],
)
def test_arguments_that_decode(raw: object, expected: dict[str, Any]) -> None:
    assert decode_arguments(raw) == expected


@pytest.mark.parametrize("raw", ["{nope", "[1, 2]", "3", '"just text"', 7, ["a"]])
def test_arguments_that_do_not_decode_carry_the_sentinel_only(raw: object) -> None:
    decoded = decode_arguments(raw)
    assert list(decoded) == [INVALID_ARGUMENTS_KEY]


def test_a_tool_call_without_an_id_gets_one_and_without_a_name_is_refused() -> None:
    message = from_wire(
        {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    )
    assert message == AssistantMessage(tool_calls=(ToolCall(id="call_0", name="f"),))
    with pytest.raises(ProviderError, match="tool call 0 in the response has no function name"):
        from_wire({"tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]})
    with pytest.raises(ProviderError, match="not a string"):
        from_wire({"content": ["parts"]})


def test_messages_to_the_wire() -> None:
    assert to_wire(SystemMessage(content="s")) == {"role": "system", "content": "s"}
    assert to_wire(AssistantMessage()) == {"role": "assistant", "content": ""}
    assert to_wire(ToolMessage(tool_call_id="c", name="t", content="r")) == {
        "role": "tool",
        "tool_call_id": "c",
        "name": "t",
        "content": "r",
    }
    call = AssistantMessage(tool_calls=(ToolCall(id="c", name="t", arguments={"q": "Zoë"}),))
    assert to_wire(call)["tool_calls"][0]["function"]["arguments"] == '{"q": "Zoë"}'


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (
            401,
            b'{"error": {"message": "Incorrect API key", "type": "invalid_request_error", '
            b'"code": "invalid_api_key"}}',
            r"HTTP 401: invalid_request_error invalid_api_key\Z",
        ),
        (400, b'{"error": "context size exceeded: SECRET prompt"}', r"HTTP 400\Z"),
        (400, b'{"error": {"message": "bad: SECRET", "type": "bad type!"}}', r"HTTP 400\Z"),
        (503, b"<html>busy</html>", r"HTTP 503\Z"),
    ],
)
def test_http_errors_are_provider_errors(
    server: ChatServer, status: int, body: bytes, message: str
) -> None:
    server.replies = [lambda _body: (status, body)]
    provider = OpenAICompatibleProvider(server.url, "m")
    with pytest.raises(ProviderError, match=message) as caught:
        provider.complete([UserMessage(content="x")], [])
    assert caught.value.status == status


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"choices": []}', "without choices"),
        (b'{"choices": [{"index": 0}]}', "without a message"),
    ],
)
def test_answers_that_are_not_completions(server: ChatServer, body: bytes, message: str) -> None:
    server.replies = [lambda _body: (200, body)]
    with pytest.raises(ProviderError, match=message):
        OpenAICompatibleProvider(server.url, "m").complete([UserMessage(content="x")], [])


def test_an_unreachable_server() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        provider = OpenAICompatibleProvider(f"http://127.0.0.1:{port}/v1", "m")
        with pytest.raises(ProviderError, match="cannot reach"):
            provider.complete([UserMessage(content="x")], [])


def test_a_server_that_does_not_answer_in_time(server: ChatServer) -> None:
    provider = OpenAICompatibleProvider(server.url, "hang", timeout=0.2)
    with pytest.raises(ProviderError, match=r"did not answer within 0\.2 seconds"):
        provider.complete([UserMessage(content="x")], [])


def test_construction_is_validated_and_the_key_stays_out_of_the_repr() -> None:
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleProvider("file:///etc/passwd", "m")
    with pytest.raises(ValueError, match="model"):
        OpenAICompatibleProvider("http://x/v1", "")
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatibleProvider("http://x/v1", "m", timeout=0)
    with pytest.raises(ValueError, match="max_tokens"):
        OpenAICompatibleProvider("http://x/v1", "m", max_tokens=0)
    provider = OpenAICompatibleProvider("http://x/v1/", "m", api_key="sk-secret")
    assert provider.url == "http://x/v1/chat/completions"
    assert "sk-secret" not in repr(provider)


def test_options_reach_the_request_body() -> None:
    provider = OpenAICompatibleProvider(
        "http://x/v1", "m", temperature=None, max_tokens=64, extra_body={"seed": 1}
    )
    body = provider.request_body([UserMessage(content="x")], [])
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "stream": False,
        "max_tokens": 64,
        "seed": 1,
    }


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 2182, "completion_tokens": 1}, TokenUsage(2182, 1)),
        ({"prompt_tokens": 7}, TokenUsage(7, None)),
        ({"prompt_tokens": 7, "completion_tokens": "1"}, TokenUsage(7, None)),
        ({"prompt_tokens": -1}, None),
        ({"prompt_tokens": True}, None),
        ({"completion_tokens": 3}, None),
        ("lots", None),
        (None, None),
    ],
)
def test_the_server_token_counts_reach_on_usage(
    server: ChatServer, usage: object, expected: TokenUsage | None
) -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
    if usage is not None:
        body["usage"] = usage
    server.replies = [lambda _body: (200, json.dumps(body).encode())]
    seen: list[TokenUsage] = []
    provider = OpenAICompatibleProvider(server.url, "m", on_usage=seen.append)

    reply = provider.complete([UserMessage(content="x")], [])

    assert reply == AssistantMessage(content="ok")
    assert seen == ([] if expected is None else [expected])


def test_the_scenario_against_a_server_records_a_baseline_it_refuses(
    server: ChatServer,
) -> None:
    server.replies = [
        tool_call("read_contract", '{"name": "msa"}', "call_a"),
        answer("The parties are named in the head."),
        tool_call("read_contract", '{"name": "msa"}', "call_a"),
        lambda _body: (
            400,
            b'{"error": {"message": "the request exceeds the context size", '
            b'"type": "exceed_context_size_error"}}',
        ),
    ]
    scenario = run_scenario(
        MemoryClaimCheckStore(), provider=OpenAICompatibleProvider(server.url, "m")
    )
    assert scenario.claimed.output == "The parties are named in the head."
    assert scenario.baseline is None
    assert scenario.baseline_error is not None
    assert "exceed_context_size_error" in scenario.baseline_error
    assert len(server.received[3].body["messages"][-1]["content"]) == len(CONTRACT)
