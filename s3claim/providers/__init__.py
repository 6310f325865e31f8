"""Providers: what turns a conversation into the model's next message.

`Provider` is the protocol (one method, `complete`); `ScriptedProvider` plays a script (the
test double, for tests, the demo and the benchmarks); `OpenAICompatibleProvider` asks any
chat-completions server (llama.cpp, Ollama, vLLM, OpenAI) on the standard library alone.
"""

from s3claim.providers._openai_compatible import OpenAICompatibleProvider, TokenUsage
from s3claim.providers._protocol import Provider
from s3claim.providers._scripted import ScriptedProvider, Step

__all__ = ["OpenAICompatibleProvider", "Provider", "ScriptedProvider", "Step", "TokenUsage"]
