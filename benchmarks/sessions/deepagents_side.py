"""LangChain Deep Agents' large-result eviction (`FilesystemMiddleware`, its defaults) in
LangChain's own agent loop (`create_agent`), the session's scripted model behind a chat model,
read back with the middleware's own `read_file(file_path, offset, limit)` and
`grep(pattern, path, output_mode='content')`. The state backend keeps the files. Run in its
own venv: `python -m benchmarks.sessions.deepagents_side < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, ClassVar

from deepagents.backends.state import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from benchmarks.heldout import text
from benchmarks.sessions.script import (
    DOCUMENT_TOOLS,
    SYSTEM_PROMPT,
    Call,
    Question,
    Request,
    Script,
    call_part,
    first_number,
    sessions,
)

_PATH = re.compile(r"at this path: (\S+)")
_NUMBERS = re.compile(r"^(?: *\d+: | *\d+\t|\d+ {2})", re.MULTILINE)
"""grep's `N: `, read_file's `cat -n` numbering, the eviction preview's `N  `."""


class CountingBackend(StateBackend):
    """The default state backend; each read or grep counts one request and the stored file
    it loads, each write one request."""

    counts: ClassVar[list[int]] = [0, 0]  # requests, bytes read

    def _count(self, path: str | None) -> None:
        CountingBackend.counts[0] += 1
        for name, data in self._read_files().items():
            if path is None or name == path or name.startswith(path.rstrip("/") + "/"):
                content = data.get("content", "")
                stored = content if isinstance(content, str) else "\n".join(content)
                CountingBackend.counts[1] += len(stored.encode("utf-8"))

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> Any:
        self._count(file_path)
        return super().read(file_path, offset, limit)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> Any:
        self._count(path)
        return super().grep(pattern, path, glob, **kwargs)

    def write(self, *args: Any, **kwargs: Any) -> Any:
        CountingBackend.counts[0] += 1
        return super().write(*args, **kwargs)


class DeepAgentsReader:
    """grep for a literal (numbered matches), then lines by offset from where it matched."""

    def plain(self, result: str) -> str:
        return _NUMBERS.sub("", result)

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> Call | None:
        found = _PATH.search(result)
        if found is None:
            return None
        path = found.group(1)
        if question.kind == "tail" and attempt == 0:
            total = max(
                (int(n) for n in re.findall(r"^(\d+) {2}", result, re.MULTILINE)), default=0
            )
            offset = max(0, total - question.lines)
            return Call(
                "", "read_file", {"file_path": path, "offset": offset, "limit": question.lines}
            )
        if question.kind in ("line", "member") and attempt == 0:
            return Call(
                "", "grep", {"pattern": question.needle, "path": path, "output_mode": "content"}
            )
        if question.kind == "member" and attempt == 1:
            line = first_number(r"^ *(\d+): ", earlier)
            if line is not None:
                arguments = {"file_path": path, "offset": line - 1, "limit": question.reach}
                return Call("", "read_file", arguments)
        return None


class ScriptedModel(BaseChatModel):
    """A chat model that plays a session's script: the request as LangChain hands it over."""

    script: Any = None
    tools: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        described = []
        for t in tools:
            function = convert_to_openai_tool(t)["function"]
            described.append(
                {k: function[k] for k in ("name", "description", "parameters") if k in function}
            )
        return self.model_copy(update={"tools": described})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        system, parts, results = "", [], []
        for m in messages:
            if isinstance(m, SystemMessage):
                system += m.text
                continue
            parts.append(m.text)
            if isinstance(m, AIMessage):
                parts.extend(
                    call_part(Call(c["id"] or "", c["name"], c["args"])) for c in m.tool_calls
                )
            if isinstance(m, ToolMessage):
                results.append((m.tool_call_id, m.text))
        reply = self.script.respond(Request(system, self.tools, parts, results))
        if isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            calls = [{"name": c.tool, "args": c.arguments, "id": c.id} for c in reply]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _document_tools(executions: list[int]) -> list[StructuredTool]:
    def make(name: str, description: str) -> StructuredTool:
        def document(path: str) -> str:
            executions[0] += 1
            return text(path)

        return StructuredTool.from_function(document, name=name, description=description)

    return [make(name, description) for name, description in DOCUMENT_TOOLS.items()]


def run() -> list[dict[str, Any]]:
    out = []
    for session in sessions():
        script = Script(session, DeepAgentsReader())
        executions = [0]
        agent = create_agent(
            ScriptedModel(script=script),
            tools=_document_tools(executions),
            system_prompt=SYSTEM_PROMPT,
            middleware=[FilesystemMiddleware(backend=CountingBackend())],
        )
        CountingBackend.counts = [0, 0]
        agent.invoke(
            {"messages": [{"role": "user", "content": session.prompt}]}, {"recursion_limit": 200}
        )
        requests, read = CountingBackend.counts
        out.append(
            script.result(
                "Deep Agents", executions=executions[0], store_requests=requests, store_bytes=read
            )
        )
    return out


if __name__ == "__main__":
    json.dump(run(), sys.stdout)
