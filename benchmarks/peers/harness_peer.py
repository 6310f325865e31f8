"""pydantic-ai-harness's `ToolOutputLimits` (default bands: spill over 10,000 characters),
read back with its own `read_tool_result(handle, offset, limit, from_end, pattern)`: lines,
from the start or the end, or the lines holding a literal. Run in its own venv:
`python -m benchmarks.peers.harness_peer < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness import ToolOutputLimits
from pydantic_ai_harness.tool_output_limits import LocalFileStore

from benchmarks.peers.common import Call, Driver, Policy, answer_line, answer_record, read_spec

READ = "read_tool_result"
_HANDLE = re.compile(r"stored to handle '([^']+)'")
_HEADER = re.compile(
    r"\A\[handle '[^']+': [\d,]+ matching line\(s\); showing \d+(, output capped)?\]\n?"
)


class CountingStore(LocalFileStore):
    """The harness's own file store, counting the bytes each read hands back."""

    bytes_read = 0

    async def read(self, handle: str) -> bytes:
        data = await super().read(handle)
        CountingStore.bytes_read += len(data)
        return data


def _body(result: str) -> str:
    return _HEADER.sub("", result, count=1)


def _policy(task: dict[str, Any], kind: str) -> Policy:
    preview = yield Call("fetch_document", {})
    handle = _HANDLE.search(preview)
    if handle is None:
        return None
    h = handle.group(1)
    spec = task["spec"]
    if task["id"] == "find" or (task["id"] == "position" and kind == "contract"):
        # Lines holding a literal: the matching lines, whole, with no line numbers.
        got = _body((yield Call(READ, {"handle": h, "pattern": spec["needle"], "limit": 20})))
        if spec["unit"] == "record":
            return answer_record(got, spec["needle"])
        return answer_line(got, spec["needle"], starts=task["id"] == "position")
    if task["id"] == "tail":
        # Lines from the end, as many as 2,000 characters need at the preview's line length.
        tail = preview.rsplit("chars omitted]...\n", 1)[-1]
        per_line = max(1, len(tail) // max(1, tail.count("\n")))
        limit = 2_000 // per_line + 4
        while True:
            got = _body((yield Call(READ, {"handle": h, "from_end": True, "limit": limit})))
            text = got + ("\n" if preview.endswith("\n") else "")
            if len(text) >= 2_000 or limit >= 1_000:
                return text[-2_000:]
            limit *= 2
    if kind == "log":
        got = _body((yield Call(READ, {"handle": h, "offset": spec["line"] - 1, "limit": 1})))
        return got
    if kind == "json" and "\n" in preview.split("]\n", 1)[-1][:400]:
        # Pretty-printed: every record has the first record's number of lines (from the preview).
        head = preview.split("]\n", 1)[-1]
        lines = head.split("\n")
        first = next(i for i, line in enumerate(lines) if line.strip() == "{" and i > 0)
        size = (
            next(i for i, line in enumerate(lines) if line.strip() in ("},", "}") and i > first)
            - first
            + 1
        )
        start = first + spec["index"] * size
        got = _body((yield Call(READ, {"handle": h, "offset": start, "limit": size})))
        return answer_record(got)
    return None  # one line of JSON: lines cannot address a record inside it


def run(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    store = CountingStore(base_dir=Path(spec["workdir"]) / "harness")
    for document in spec["documents"]:
        text = Path(document["path"]).read_text(encoding="utf-8")
        for task in document["tasks"]:
            driver = Driver(_policy(task, document["kind"]))

            def model(
                messages: list[ModelMessage], info: AgentInfo, driver: Driver = driver
            ) -> ModelResponse:
                last = ""
                request = messages[-1]
                if isinstance(request, ModelRequest):
                    for part in request.parts:
                        if isinstance(part, ToolReturnPart):
                            last = part.model_response_str()
                call = driver.step(last)
                if call is None:
                    return ModelResponse(parts=[TextPart(content=driver.answer or "not found")])
                return ModelResponse(parts=[ToolCallPart(call.tool, call.arguments)])

            agent = Agent(FunctionModel(model), capabilities=[ToolOutputLimits(store=store)])

            @agent.tool_plain
            def fetch_document(text: str = text) -> str:
                """The document under test."""
                return text

            CountingStore.bytes_read = 0
            agent.run_sync("benchmark task")
            driver.seen.pop(0)  # the empty turn before the first call
            out.append(
                {
                    "document": document["name"],
                    **driver.result(task["id"], bytes_read=CountingStore.bytes_read),
                }
            )
    return out


if __name__ == "__main__":
    json.dump(run(read_spec(sys.stdin.read())), sys.stdout)
