"""OpenAICompatibleProvider: any chat-completions server as a `Provider`, on the standard library.

llama.cpp's server, Ollama, vLLM and OpenAI all speak `POST {base_url}/chat/completions`, so
one small translation covers them, and urllib is enough for one JSON request per turn: no
HTTP dependency to install for users who never call a model server.

Malformed tool-call arguments. A model may send arguments that are not JSON, or JSON that is
not an object. That is the model's mistake, so it must become a tool error the model can act
on, not a crash of the run. The call is passed on with its arguments replaced by
``{INVALID_ARGUMENTS_KEY: <parse error>}``; every `@tool` forbids unknown fields, so the runner
answers the call with an `invalid_arguments` tool error naming that key, and the model retries.
Empty arguments (``""``, sent by some servers for tools without parameters) mean ``{}``, and
arguments encoded twice (a JSON string holding a JSON object) are decoded once more.

Token usage. Only the server knows how many tokens a request was: its tokenizer and its chat
template decide. `on_usage` hands the response's ``usage`` counts to the caller (cost
accounting, benchmarks) without changing what `complete` returns.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from s3claim.errors import ConfigurationError, ProviderError
from s3claim.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from s3claim.safejson import loads

__all__ = ["INVALID_ARGUMENTS_KEY", "OpenAICompatibleProvider", "TokenUsage"]

INVALID_ARGUMENTS_KEY = "arguments_were_not_a_json_object"
"""The one field a call with unreadable arguments carries; no tool accepts it."""

_IDENTIFIER = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """The server's own token counts for one reply (the response's ``usage``).

    `prompt_tokens` counts the whole prompt, including any prefix a server served from its
    cache; `completion_tokens` is None when the server did not say.
    """

    prompt_tokens: int
    completion_tokens: int | None = None


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def usage_of(data: Mapping[str, Any]) -> TokenUsage | None:
    """The ``usage`` of a response, or None when it has no usable prompt count."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens"))
    if prompt is None:
        return None
    return TokenUsage(prompt, _count(usage.get("completion_tokens")))


def to_wire(message: Message) -> dict[str, Any]:
    """One of our messages as a chat-completions message."""
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
        }
    # Always a string: llama.cpp's server (llama-cpp-python) refuses a null content, even
    # beside tool calls, with HTTP 500; OpenAI, Ollama and vLLM take "" as they take null.
    wire: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
    return wire


def decode_arguments(raw: object) -> dict[str, Any]:
    """The model's arguments as an object, or the sentinel the runner turns into a tool error."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return {INVALID_ARGUMENTS_KEY: f"arguments were a JSON {type(raw).__name__}"}
    try:
        value = loads(raw)
        if isinstance(value, str):  # encoded twice
            value = loads(value)
    except json.JSONDecodeError as exc:
        return {INVALID_ARGUMENTS_KEY: f"not valid JSON: {exc.msg} (character {exc.pos})"}
    if not isinstance(value, dict):
        return {INVALID_ARGUMENTS_KEY: f"arguments were a JSON {type(value).__name__}"}
    return value


def from_wire(message: Mapping[str, Any]) -> AssistantMessage:
    """`choices[0].message` as an `AssistantMessage`."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ProviderError("the response message content is not a string")
    calls = []
    for index, raw in enumerate(message.get("tool_calls") or ()):
        function = raw.get("function") if isinstance(raw, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise ProviderError(f"tool call {index} in the response has no function name")
        call_id = raw.get("id") or f"call_{index}"
        arguments = decode_arguments(function.get("arguments") if function else None)
        calls.append(ToolCall(id=str(call_id), name=name, arguments=arguments))
    return AssistantMessage(content=content or None, tool_calls=tuple(calls))


def _server_message(body: bytes) -> str:
    """The server's error type and code, identifiers only.

    Not its message: servers quote the request in error messages ("...this prompt: ..."),
    and the request holds tool content, which no exception may carry.
    """
    try:
        data = loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    fields = (error.get("type"), error.get("code"))
    return " ".join(f for f in fields if isinstance(f, str) and _IDENTIFIER.fullmatch(f))


_MAX_TIMEOUT_SECONDS = 86_400  # a socket cannot wait forever: `inf` overflows its deadline


class OpenAICompatibleProvider:
    """A `Provider` that asks an OpenAI-compatible chat-completions server for each turn.

    `base_url` is the API root including its version, as OpenAI clients take it:
    ``http://127.0.0.1:8080/v1`` (llama.cpp), ``http://127.0.0.1:11434/v1`` (Ollama),
    ``https://api.openai.com/v1``. `api_key` is sent as a bearer token when given (local
    servers usually need none). `temperature` defaults to 0 so that runs repeat as far as
    the server allows; `extra_body` is merged into every request for server-specific options.
    `on_usage` is called with the server's token counts after each reply that reports them.
    `context_window_chars`: the model's context window in characters (its tokens times
    about 4 for English), which a runner's `max_share_of_room` then reads.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        on_usage: Callable[[TokenUsage], object] | None = None,
        context_window_chars: int | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigurationError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"model must name a model, got {model!r}")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= _MAX_TIMEOUT_SECONDS  # nan and inf are refused too
        ):
            raise ConfigurationError(
                f"timeout must be a number of seconds above 0 and at most "
                f"{_MAX_TIMEOUT_SECONDS:,} (a day), got {timeout!r}"
            )
        if max_tokens is not None and max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be positive, got {max_tokens!r}")
        if context_window_chars is not None and (
            isinstance(context_window_chars, bool)
            or not isinstance(context_window_chars, int)
            or context_window_chars < 1
        ):
            raise ConfigurationError(
                f"context_window_chars must be a positive integer, got {context_window_chars!r}"
            )
        self.context_window_chars = context_window_chars
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = float(timeout)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.on_usage = on_usage
        self._api_key = api_key or None

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [to_wire(m) for m in messages],
            "stream": False,
        }
        if tools:
            body["tools"] = list(tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        data = json.dumps(self.request_body(messages, tools), ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # The scheme was checked at construction: only http(s) reaches urllib.
        request = urllib.request.Request(  # noqa: S310
            self.url, data=data, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = _server_message(exc.read())
            raise ProviderError(
                f"{self.url} answered HTTP {exc.code}" + (f": {detail}" if detail else ""),
                status=exc.code,
            ) from None
        except TimeoutError:
            raise ProviderError(self._timed_out()) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise ProviderError(self._timed_out()) from None
            raise ProviderError(f"cannot reach {self.url}: {exc.reason}") from None
        except OSError as exc:
            raise ProviderError(f"cannot reach {self.url}: {type(exc).__name__}") from None
        return self._parse(payload)

    def _timed_out(self) -> str:
        return f"{self.url} did not answer within {self.timeout:g} seconds"

    def _parse(self, payload: bytes) -> AssistantMessage:
        try:
            data = loads(payload)
        except ValueError:
            raise ProviderError(f"{self.url} answered with something that is not JSON") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"{self.url} answered without choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ProviderError(f"{self.url} answered a choice without a message")
        reply = from_wire(message)
        usage = usage_of(data)
        if usage is not None and self.on_usage is not None:
            self.on_usage(usage)
        return reply

    def __repr__(self) -> str:  # the API key is a secret: never in a repr
        key = "<set>" if self._api_key else None
        return f"OpenAICompatibleProvider(url={self.url!r}, model={self.model!r}, api_key={key})"
