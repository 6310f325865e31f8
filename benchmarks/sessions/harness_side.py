"""pydantic-ai-harness's `ToolOutputLimits` (its defaults) in pydantic-ai's own agent loop,
the session's scripted model behind a `FunctionModel`, read back with the harness's own
`read_tool_result(handle, offset, limit, from_end, pattern)`. Run in its own venv:
`python -m benchmarks.sessions.harness_side < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness import ToolOutputLimits
from pydantic_ai_harness.tool_output_limits import LocalFileStore

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

READ = "read_tool_result"
_HANDLE = re.compile(r"stored to handle '([^']+)'")
_HEADER = re.compile(r"\A\[handle '[^']+':[^\n]*\]\n?")


class CountingStore(LocalFileStore):
    """The harness's own file store, counting writes, reads and the bytes reads hand back."""

    counts: ClassVar[list[int]] = [0, 0]  # requests, bytes read

    async def read(self, handle: str) -> bytes:
        data = await super().read(handle)
        CountingStore.counts[0] += 1
        CountingStore.counts[1] += len(data)
        return data

    async def write(self, *args: Any, **kwargs: Any) -> Any:
        CountingStore.counts[0] += 1
        return await super().write(*args, **kwargs)


class HarnessReader:
    """Lines holding a literal (no line numbers), or lines from the start or the end."""

    def plain(self, result: str) -> str:
        return _HEADER.sub("", result, count=1)

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> Call | None:
        found = _HANDLE.search(result)
        if found is None or attempt > 0:
            return None
        handle = found.group(1)
        if question.kind == "tail":
            return Call("", READ, {"handle": handle, "from_end": True, "limit": question.lines})
        # a line, or a member's first line: the tool shows matching lines without their
        # numbers, so a member that spans lines cannot be placed for a read by offset
        return Call("", READ, {"handle": handle, "pattern": question.needle, "limit": 20})


def _request(messages: list[ModelMessage], info: AgentInfo) -> Request:
    system, parts, results = info.instructions or "", [], []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    system += part.content
                elif isinstance(part, UserPromptPart):
                    parts.append(str(part.content))
                elif isinstance(part, ToolReturnPart):
                    shown = part.model_response_str()
                    parts.append(shown)
                    results.append((part.tool_call_id, shown))
                elif isinstance(part, RetryPromptPart):
                    parts.append(part.model_response())
        else:
            for part in message.parts:
                if isinstance(part, TextPart):
                    parts.append(part.content)
                elif isinstance(part, ToolCallPart):
                    parts.append(
                        call_part(Call(part.tool_call_id, part.tool_name, part.args_as_dict()))
                    )
    tools = [
        {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema}
        for t in info.function_tools
    ]
    return Request(system, tools, parts, results)


def _document(executions: list[int]) -> Any:
    def document(path: str) -> str:
        executions[0] += 1
        return text(path)

    return document


def run() -> list[dict[str, Any]]:
    out = []
    workdir = Path(tempfile.mkdtemp(prefix="s3claim-sessions-harness-"))
    for session in sessions():
        script = Script(session, HarnessReader())
        executions = [0]

        def model(
            messages: list[ModelMessage], info: AgentInfo, script: Script = script
        ) -> ModelResponse:
            reply = script.respond(_request(messages, info))
            if isinstance(reply, str):
                return ModelResponse(parts=[TextPart(content=reply)])
            return ModelResponse(
                parts=[ToolCallPart(c.tool, c.arguments, tool_call_id=c.id) for c in reply]
            )

        store = CountingStore(base_dir=workdir / session.name.replace(" ", "-"))
        agent = Agent(
            FunctionModel(model),
            system_prompt=SYSTEM_PROMPT,
            capabilities=[ToolOutputLimits(store=store)],
        )
        for name, description in DOCUMENT_TOOLS.items():
            agent.tool_plain(name=name, description=description)(_document(executions))
        CountingStore.counts = [0, 0]
        agent.run_sync(session.prompt)
        requests, read = CountingStore.counts
        out.append(
            script.result(
                "pydantic-ai-harness",
                executions=executions[0],
                store_requests=requests,
                store_bytes=read,
            )
        )
    return out


if __name__ == "__main__":
    json.dump(run(), sys.stdout)
