"""The model choosing its own turns: `s3claim demo` against the server, and two tool-call runs.

- The demo as a user runs it (`--provider openai`), on the server's default chat format (the
  template inside the GGUF file). That template renders no tools and llama-cpp-python parses
  no tool calls from it, so the model answers at once; the demo must say so plainly.
- `tool_choice` naming read_contract on the first call only (a grammar makes the model call
  it, the model writes the arguments), then the model on its own: the claim-checked run for
  real, with the head and marker in a real model's context, against the inline baseline.
- `--chat_format chatml-function-calling` with `tool_choice: "auto"`, the one generic format
  that lets the model choose a tool: whether it calls one, and whether it ever sees a result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.model.server import LlamaServer
from s3claim.cli.demo import Scenario, prefill_by_turn, run_scenario
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import AssistantMessage, Message, ToolMessage
from s3claim.providers import OpenAICompatibleProvider, TokenUsage
from s3claim.runner import RunResult

__all__ = ["auto_tool_choice", "demo", "forced_first_call"]

MAX_TOKENS = 192
"""Replies are capped: a 135M model can ramble until its context is full."""
_TIMEOUT = 600.0


def demo(server: LlamaServer) -> dict[str, Any]:
    """`s3claim demo --provider openai ...` as a subprocess: its JSON and its terminal text."""
    argv = [
        sys.executable, "-m", "s3claim", "demo", "--store", "memory", "--provider", "openai",
        "--base-url", server.base_url, "--model", server.config.alias,
        "--max-tokens", str(MAX_TOKENS), "--timeout", str(_TIMEOUT),
    ]  # fmt: skip
    started = time.perf_counter()
    text = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=1800)  # noqa: S603
    seconds = time.perf_counter() - started
    as_json = subprocess.run(  # noqa: S603
        [*argv, "--json"], capture_output=True, text=True, check=True, timeout=1800
    )
    data = json.loads(as_json.stdout)
    return {
        "command": "s3claim demo --store memory --provider openai --base-url "
        f"http://127.0.0.1:PORT/v1 --model {server.config.alias} --max-tokens {MAX_TOKENS}",
        "seconds": round(seconds, 1),
        "exit_code": text.returncode,
        "output": text.stdout,
        "ratio": data["ratio"],
        "read_contract": data["read_contract"],
        "no_comparison": data["no_comparison"],
        "turns": data["turns"],
        "answer": data["answer"],
        "baseline_error": data["baseline_error"],
    }


class _Counted:
    """A provider that records the server's prompt tokens for each call."""

    def __init__(self, server: LlamaServer, *, first: dict[str, Any], then: dict[str, Any]):
        self.prompt_tokens: list[int] = []
        self._first = self._provider(server, first)
        self._then = self._provider(server, then)

    def _provider(self, server: LlamaServer, extra: dict[str, Any]) -> OpenAICompatibleProvider:
        return OpenAICompatibleProvider(
            server.base_url,
            server.config.alias,
            max_tokens=MAX_TOKENS,
            timeout=_TIMEOUT,
            extra_body=extra,
            on_usage=self._count,
        )

    def _count(self, usage: TokenUsage) -> None:
        self.prompt_tokens.append(usage.prompt_tokens)

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        first = not any(isinstance(m, ToolMessage) for m in messages)
        return (self._first if first else self._then).complete(messages, tools)


def _calls(result: RunResult) -> list[dict[str, Any]]:
    return [
        {"name": call.name, "arguments": call.arguments}
        for message in result.messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    ]


def _run_json(result: RunResult, provider: _Counted) -> dict[str, Any]:
    seen = next(
        (m.content for m in result.messages if isinstance(m, ToolMessage)),
        None,
    )
    return {
        "model_calls": len(prefill_by_turn(result)),
        "prefill_chars": prefill_by_turn(result),
        "prompt_tokens": provider.prompt_tokens,
        "tool_calls": _calls(result),
        "first_result_chars": None if seen is None else len(seen),
        "answer": result.output,
        "finished": result.output is not None,
    }


def _scenario_json(
    scenario: Scenario, claimed: _Counted, baseline: _Counted, seconds: float
) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 1),
        "claim_check": _run_json(scenario.claimed, claimed),
        "inline": None if scenario.baseline is None else _run_json(scenario.baseline, baseline),
        "inline_prompt_tokens": baseline.prompt_tokens,
        "inline_error": scenario.baseline_error,
    }


def forced_first_call(server: LlamaServer) -> dict[str, Any]:
    """The first call forced to read_contract, every later one the model's own choice."""
    forced = {"tool_choice": {"type": "function", "function": {"name": "read_contract"}}}
    claimed = _Counted(server, first=forced, then={})
    baseline = _Counted(server, first=forced, then={})
    started = time.perf_counter()
    scenario = run_scenario(
        MemoryClaimCheckStore(), provider=claimed, baseline_provider=baseline, max_turns=4
    )
    return _scenario_json(scenario, claimed, baseline, time.perf_counter() - started)


def auto_tool_choice(server: LlamaServer) -> dict[str, Any]:
    """`tool_choice: auto` on every call (for a server started with chatml-function-calling)."""
    auto = {"tool_choice": "auto"}
    claimed = _Counted(server, first=auto, then=auto)
    baseline = _Counted(server, first=auto, then=auto)
    started = time.perf_counter()
    scenario = run_scenario(
        MemoryClaimCheckStore(), provider=claimed, baseline_provider=baseline, max_turns=4
    )
    return _scenario_json(scenario, claimed, baseline, time.perf_counter() - started)
