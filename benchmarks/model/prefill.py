"""Cold and warm prefill of recorded turns on a real server, through OpenAICompatibleProvider.

Each request is one turn's conversation with generation capped at one token, so its time is
the prefill (plus one decoded token and a loopback round trip, milliseconds). Two conditions,
both honest about llama.cpp's prefix cache:

- cold: the cache is flushed before every turn, so every prompt token is evaluated. This is
  the spec's "the prefill pays for it every turn": a server without a prefix cache, or one
  whose slot another conversation took in between.
- warm: one flush, then the turns in order, as one agent alone on the server sends them.
  llama.cpp reuses the previous prompt's KV cache for the common prefix and evaluates only
  what is new, though every new token still attends to all the tokens before it.

A request that does not fit the context window is refused before any prefill (HTTP 400,
context_length_exceeded). The run cannot go on, so the pass stops at that turn.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.model.server import LlamaServer
from benchmarks.model.turns import Arm, Turn
from s3claim.errors import ProviderError
from s3claim.providers import OpenAICompatibleProvider, TokenUsage

__all__ = ["Sample", "measure_pass"]

_TIMEOUT = 3600.0  # a 22,000-token prompt takes over thirteen minutes on one thread
_REQUESTED = re.compile(r"\((\d+) in the messages")


@dataclass(frozen=True)
class Sample:
    """One turn's request: seconds as the client saw them, and the server's own counts."""

    seconds: float
    cpu_seconds: float
    """CPU time the server spent on the request: its own work, whatever else the machine ran."""
    prompt_tokens: int | None
    evaluated_tokens: int | None
    """Prompt tokens the server ran through the model (the rest came from its cache)."""
    error: str | None = None
    """None when the request fit and was answered; else the provider's error."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _refused_tokens(server: LlamaServer, provider: OpenAICompatibleProvider, turn: Turn) -> int:
    """The prompt tokens of a refused request, from the server's own error message.

    The provider keeps server messages out of its exceptions (they may quote the request),
    so the same body is sent once more, raw; the server counts and refuses it again.
    """
    body = provider.request_body(list(turn.messages), list(turn.tools))
    status, payload = server.post("/chat/completions", body, timeout=_TIMEOUT)
    message = json.loads(payload).get("error", {}).get("message", "")
    found = _REQUESTED.search(message)
    if status != 400 or found is None:
        raise RuntimeError(f"expected a context_length_exceeded refusal, got HTTP {status}")
    return int(found.group(1))


def _send(server: LlamaServer, turn: Turn) -> Sample:
    usage: list[TokenUsage] = []
    provider = OpenAICompatibleProvider(
        server.base_url,
        server.config.alias,
        max_tokens=1,
        timeout=_TIMEOUT,
        on_usage=usage.append,
    )
    mark, cpu = server.mark(), server.cpu_seconds()
    started = time.perf_counter()
    try:
        provider.complete(list(turn.messages), list(turn.tools))
    except ProviderError as exc:
        seconds, cpu = time.perf_counter() - started, server.cpu_seconds() - cpu
        if exc.status == 400 and "context_length_exceeded" in str(exc):
            return Sample(seconds, cpu, _refused_tokens(server, provider, turn), 0, str(exc))
        raise
    seconds, cpu = time.perf_counter() - started, server.cpu_seconds() - cpu
    if len(usage) != 1:
        raise RuntimeError("the server did not report its token counts")
    return Sample(seconds, cpu, usage[0].prompt_tokens, server.evaluated_since(mark))


def measure_pass(
    server: LlamaServer,
    arm: Arm,
    *,
    cold: bool,
    turns: Sequence[Turn] | None = None,
    progress: Callable[[int, Sample], None] | None = None,
) -> list[Sample]:
    """One pass over the arm's turns, stopping at the first that does not fit."""
    samples: list[Sample] = []
    server.flush()
    for number, turn in enumerate(turns or arm.turns, start=1):
        if cold and number > 1:
            server.flush()
        sample = _send(server, turn)
        samples.append(sample)
        if progress is not None:
            progress(number, sample)
        if sample.error is not None:
            break
    return samples
