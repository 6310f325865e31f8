"""Strands' `ContextOffloader` (its defaults) in Strands' own agent loop, the session's
scripted model behind a Strands `Model`, read back with the plugin's own
`retrieve_offloaded_content(reference, pattern, line_range, context_lines)`. Its in-memory
storage keeps the content. Run in its own venv:
`python -m benchmarks.sessions.strands_side < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncGenerator
from typing import Any

import strands.vended_plugins.context_offloader.plugin as offloader_plugin
from strands import Agent, tool
from strands.models.model import Model
from strands.vended_plugins.context_offloader import ContextOffloader

from benchmarks.heldout import text
from benchmarks.sessions.script import (
    DOCUMENT_TOOLS,
    SYSTEM_PROMPT,
    Call,
    Question,
    Request,
    Script,
    call_part,
    sessions,
)

READ = "retrieve_offloaded_content"
_REFERENCE = re.compile(r"^\s+(\S+) \(", re.MULTILINE)
_NUMBERS = re.compile(r"^[> ] *\d+\| ?", re.MULTILINE)
_SHOWN = re.compile(r"\A\[Lines (\d+)-(\d+) of \d+\]")
_TOTAL = re.compile(r"beyond content length \((\d+) lines\)")
COUNTS = [0, 0]  # requests, bytes read
_retrieve = offloader_plugin._retrieve_content


async def _counting_retrieve(storage: Any, reference: str) -> tuple[bytes, str]:
    data, content_type = await _retrieve(storage, reference)
    COUNTS[0] += 1
    COUNTS[1] += len(data)
    return data, content_type


offloader_plugin._retrieve_content = _counting_retrieve  # count what the storage hands back


class StrandsReader:
    """A regex with numbered lines around each match, or a span of lines; the length only
    from a span it refuses."""

    def plain(self, result: str) -> str:
        return _NUMBERS.sub("", result)

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> Call | None:
        refs = _REFERENCE.findall(result.rsplit("[Stored references:]", 1)[-1])
        if "[Stored references:]" not in result or not refs:
            return None
        ref = refs[0]
        if question.kind == "tail":
            if attempt == 0:  # the preview gives no length; a span past the end says it
                return Call(
                    "", READ, {"reference": ref, "line_range": {"start": 10**9, "end": 10**9}}
                )
            total = _TOTAL.search(earlier)
            if attempt == 1 and total is not None:
                last = int(total.group(1))
                span = {"start": max(1, last - question.lines + 1), "end": last}
                return Call("", READ, {"reference": ref, "line_range": span})
            shown = _SHOWN.search(earlier)
            if attempt == 2 and shown is not None and earlier.endswith("| "):
                # the last line it numbers is the empty one after a final newline: one more
                span = {"start": max(1, int(shown.group(1)) - 1), "end": int(shown.group(2))}
                return Call("", READ, {"reference": ref, "line_range": span})
            return None
        if attempt > 0:
            return None
        context = question.reach if question.kind == "member" else 0
        pattern = re.escape(question.needle)
        return Call("", READ, {"reference": ref, "pattern": pattern, "context_lines": context})


class ScriptedModel(Model):
    """A Strands model that plays a session's script: the request as Strands hands it over."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        parts, results = [], []
        for message in messages:
            for block in message.get("content", []):
                if "text" in block:
                    parts.append(block["text"])
                elif "toolUse" in block:
                    use = block["toolUse"]
                    parts.append(call_part(Call(use["toolUseId"], use["name"], use["input"])))
                elif "toolResult" in block:
                    got = block["toolResult"]
                    shown = "\n".join(p.get("text", "") for p in got.get("content", []))
                    parts.append(shown)
                    results.append((got["toolUseId"], shown))
        tools = [
            {
                "name": s["name"],
                "description": s.get("description", ""),
                "parameters": s["inputSchema"]["json"],
            }
            for s in tool_specs or []
        ]
        reply = self.script.respond(Request(system_prompt or "", tools, parts, results))
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(reply, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": reply}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for call in reply:
            use = {"toolUseId": call.id, "name": call.tool}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {
                "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.arguments)}}}
            }
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _document_tools(executions: list[int]) -> list[Any]:
    def make(name: str, description: str) -> Any:
        def document(path: str) -> str:
            executions[0] += 1
            return text(path)

        document.__doc__ = f"{description}\n\nArgs:\n    path: the document's name."
        return tool(name=name, description=description)(document)

    return [make(name, description) for name, description in DOCUMENT_TOOLS.items()]


def run() -> list[dict[str, Any]]:
    out = []
    for session in sessions():
        script = Script(session, StrandsReader())
        executions = [0]
        agent = Agent(
            model=ScriptedModel(script),
            tools=_document_tools(executions),
            system_prompt=SYSTEM_PROMPT,
            plugins=[ContextOffloader()],
            callback_handler=None,
        )
        COUNTS[:] = [0, 0]
        agent(session.prompt)
        out.append(
            script.result(
                "Strands", executions=executions[0], store_requests=COUNTS[0], store_bytes=COUNTS[1]
            )
        )
    return out


if __name__ == "__main__":
    json.dump(run(), sys.stdout)
