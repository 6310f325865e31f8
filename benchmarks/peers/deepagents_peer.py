"""LangChain Deep Agents' large-result eviction (`FilesystemMiddleware`, default limit:
20,000 tokens, about 80,000 characters), read back with its own tools: `read_file(file_path,
offset, limit)` by lines and `grep(pattern, path, output_mode='content')` for a literal,
with line numbers. The state backend keeps the file; run in its own venv:
`python -m benchmarks.peers.deepagents_peer < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from deepagents.backends.state import StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from benchmarks.peers.common import Call, Driver, Policy, answer_line, answer_record, read_spec

_PATH = re.compile(r"at this path: (\S+)")
_READ_HEADER = re.compile(r"\A@@ [^\n]*@@\n?")
_GREP_LINE = re.compile(r"^\s+(\d+): (.*)$", re.MULTILINE)
_PREVIEW_LINE = re.compile(r"^(\d+)\s{2}(.*)$", re.MULTILINE)


class CountingBackend(StateBackend):
    """The default state backend; each read or grep counts the stored file it loads."""

    bytes_read = 0

    def _count(self, path: str | None) -> None:
        for name, data in self._read_files().items():
            if path is None or name == path or name.startswith(path.rstrip("/") + "/"):
                content = data.get("content", "")
                text = content if isinstance(content, str) else "\n".join(content)
                CountingBackend.bytes_read += len(text.encode("utf-8"))

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> Any:
        self._count(file_path)
        return super().read(file_path, offset, limit)

    def grep(
        self, pattern: str, path: str | None = None, glob: str | None = None, **kwargs: Any
    ) -> Any:
        self._count(path)
        return super().grep(pattern, path, glob, **kwargs)


def _body(result: str) -> str:
    return _READ_HEADER.sub("", result, count=1)


def _grep(result: str) -> list[tuple[int, str]]:
    return [(int(n), line) for n, line in _GREP_LINE.findall(result)]


def _policy(task: dict[str, Any], kind: str) -> Policy:
    preview = yield Call("fetch_document", {})
    found = _PATH.search(preview)
    if found is None:
        return None
    path = found.group(1)
    spec = task["spec"]
    numbered = [(int(n), line) for n, line in _PREVIEW_LINE.findall(preview)]
    grep = {"path": path, "output_mode": "content"}
    if task["id"] == "find" or (task["id"] == "position" and kind == "contract"):
        hits = _grep((yield Call("grep", {"pattern": spec["needle"], **grep})))
        if spec["unit"] == "line":
            text = "\n".join(line for _, line in hits)
            return answer_line(text, spec["needle"], starts=task["id"] == "position")
        if not hits:
            return None
        number, line = hits[0]
        if (
            kind == "json"
            and numbered
            and len(numbered) > 1
            and numbered[1][1].strip() != line.strip()
        ):
            # Pretty-printed: read from the record's first line (how far the field sits below
            # it shows in the preview's first record), a record's worth of lines.
            first = next(n for n, text in numbered if text.strip() == "{" and n > 1)
            key = line.strip().split(":", 1)[0]
            below = (
                next(
                    (n for n, text in numbered if text.strip().startswith(key) and n > first),
                    first + 1,
                )
                - first
            )
            got = _body(
                (
                    yield Call(
                        "read_file", {"file_path": path, "offset": number - 1 - below, "limit": 15}
                    )
                )
            )
            return answer_record(got, spec["needle"])
        return answer_record(line, spec["needle"])
    total = max((n for n, _ in numbered), default=0)
    if task["id"] == "tail":
        tail = [line for n, line in numbered if n > 5]
        per_line = max(1, sum(len(t) + 1 for t in tail) // max(1, len(tail)))
        lines = 2_000 // per_line + 4
        while True:
            got = _body(
                (
                    yield Call(
                        "read_file",
                        {"file_path": path, "offset": max(0, total - lines), "limit": lines},
                    )
                )
            )
            if len(got) >= 2_000 or lines >= total:
                return got[-2_000:]
            lines *= 2
    if kind == "log":
        return _body(
            (yield Call("read_file", {"file_path": path, "offset": spec["line"] - 1, "limit": 1}))
        )
    if kind == "json" and total > 1:
        # Pretty-printed: one read of the first record gives its length in lines.
        first = next(n for n, text in numbered if text.strip() == "{" and n > 1)
        got = _body(
            (yield Call("read_file", {"file_path": path, "offset": first - 1, "limit": 15}))
        )
        size = next(i for i, line in enumerate(got.split("\n")) if line.strip() in ("},", "}")) + 1
        start = first - 1 + spec["index"] * size
        got = _body((yield Call("read_file", {"file_path": path, "offset": start, "limit": size})))
        return answer_record(got)
    return None  # one line of JSON: lines cannot address a record inside it


class ScriptedModel(BaseChatModel):
    """A chat model that plays a policy: no model, the same calls every run."""

    driver: Any = None
    path: str = ""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        call = self.driver.step(last.text if isinstance(last, ToolMessage) else "")
        if call is None:
            message = AIMessage(content=self.driver.answer or "not found")
        else:
            tool_call = {
                "name": call.tool,
                "args": call.arguments,
                "id": f"call{len(self.driver.calls)}",
            }
            message = AIMessage(content="", tool_calls=[tool_call])
        return ChatResult(generations=[ChatGeneration(message=message)])


def _document_tool(text: str) -> Any:
    @tool
    def fetch_document() -> str:
        """The document under test."""
        return text

    return fetch_document


def run(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for document in spec["documents"]:
        text = Path(document["path"]).read_text(encoding="utf-8")

        fetch_document = _document_tool(text)
        for task in document["tasks"]:
            driver = Driver(_policy(task, document["kind"]))
            agent = create_agent(
                ScriptedModel(driver=driver),
                tools=[fetch_document],
                middleware=[FilesystemMiddleware(backend=CountingBackend())],
            )
            CountingBackend.bytes_read = 0
            agent.invoke(
                {"messages": [{"role": "user", "content": "benchmark task"}]},
                {"recursion_limit": 50},
            )
            driver.seen.pop(0)
            out.append(
                {
                    "document": document["name"],
                    **driver.result(task["id"], bytes_read=CountingBackend.bytes_read),
                }
            )
    return out


if __name__ == "__main__":
    json.dump(run(read_spec(sys.stdin.read())), sys.stdout)
