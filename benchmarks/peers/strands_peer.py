"""Strands' `ContextOffloader` (default: offload over 2,500 tokens, a 1,000-token preview),
read back with its own `retrieve_offloaded_content(reference, pattern, line_range,
context_lines)`: a regex with numbered lines around each match, or a span of lines. Its
in-memory storage keeps the content; run in its own venv:
`python -m benchmarks.peers.strands_peer < spec.json` prints one JSON list.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import strands.vended_plugins.context_offloader.plugin as offloader_plugin
from strands import Agent, tool
from strands.models.model import Model
from strands.vended_plugins.context_offloader import ContextOffloader

from benchmarks.peers.common import Call, Driver, Policy, answer_line, answer_record, read_spec

READ = "retrieve_offloaded_content"
_REFERENCE = re.compile(r"^\s+(\S+) \(", re.MULTILINE)
_NUMBERED = re.compile(r"^[> ] *(\d+)\| ?(.*)$", re.MULTILINE)
_TOTAL = re.compile(r"beyond content length \((\d+) lines\)")
BYTES_READ = [0]
_retrieve = offloader_plugin._retrieve_content


async def _counting_retrieve(storage: Any, reference: str) -> tuple[bytes, str]:
    data, content_type = await _retrieve(storage, reference)
    BYTES_READ[0] += len(data)
    return data, content_type


offloader_plugin._retrieve_content = _counting_retrieve  # count what the storage hands back


def _lines(result: str) -> list[tuple[int, str]]:
    return [(int(n), line) for n, line in _NUMBERED.findall(result)]


def _text(result: str) -> str:
    return "\n".join(line for _, line in _lines(result))


def _policy(task: dict[str, Any], kind: str) -> Policy:
    preview = yield Call("fetch_document", {})
    refs = _REFERENCE.findall(preview.rsplit("[Stored references:]", 1)[-1])
    if not refs:
        return None
    ref = refs[0]
    spec = task["spec"]
    body = preview.split("\n\n", 1)[-1].rsplit("\n\n[Stored references:]", 1)[0]
    if task["id"] == "find" or (task["id"] == "position" and kind == "contract"):
        if spec["unit"] == "line":
            pattern = re.escape(spec["needle"])
            if task["id"] == "position":
                pattern = "^" + pattern
            got = _text(
                (yield Call(READ, {"reference": ref, "pattern": pattern, "context_lines": 0}))
            )
            return answer_line(got, spec["needle"], starts=task["id"] == "position")
        lines = body.split("\n")
        if len(lines) > 3:
            # Pretty-printed: a record's worth of lines around the match (from the preview).
            first = next(i for i, line in enumerate(lines) if line.strip() == "{" and i > 0)
            size = (
                next(i for i, line in enumerate(lines) if line.strip() in ("},", "}") and i > first)
                - first
                + 1
            )
            args = {"reference": ref, "pattern": re.escape(spec["needle"]), "context_lines": size}
            return answer_record(_text((yield Call(READ, args))), spec["needle"])
        got = yield Call(
            READ, {"reference": ref, "pattern": re.escape(spec["needle"]), "context_lines": 0}
        )
        return answer_record(_text(got), spec["needle"])
    if task["id"] == "tail":
        # The preview gives no length; a span past the end is refused with it.
        refused = yield Call(READ, {"reference": ref, "line_range": {"start": 10**9, "end": 10**9}})
        total = _TOTAL.search(refused)
        if total is None:
            return None
        last = int(total.group(1))
        per_line = max(1, len(body) // max(1, body.count("\n")))
        lines = 2_000 // per_line + 4
        while True:
            args = {
                "reference": ref,
                "line_range": {"start": max(1, last - lines + 1), "end": last},
            }
            got = _text((yield Call(READ, args)))
            if len(got) >= 2_000 or lines >= last:
                return got[-2_000:]
            lines *= 2
    if kind == "log":
        args = {"reference": ref, "line_range": {"start": spec["line"], "end": spec["line"]}}
        return _text((yield Call(READ, args)))
    lines = body.split("\n")
    if kind == "json" and len(lines) > 3:
        first = next(i for i, line in enumerate(lines) if line.strip() == "{" and i > 0)
        size = (
            next(i for i, line in enumerate(lines) if line.strip() in ("},", "}") and i > first)
            - first
            + 1
        )
        start = first + 1 + spec["index"] * size
        args = {"reference": ref, "line_range": {"start": start, "end": start + size - 1}}
        return answer_record(_text((yield Call(READ, args))))
    return None  # one line of JSON: lines cannot address a record inside it


class ScriptedModel(Model):
    """A Strands model that plays a policy: no model, the same calls every run."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        last = ""
        for block in messages[-1].get("content", []):
            result = block.get("toolResult")
            if result is not None:
                last = "\n".join(part.get("text", "") for part in result.get("content", []))
        call = self.driver.step(last)
        yield {"messageStart": {"role": "assistant"}}
        if call is None:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": self.driver.answer or "not found"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        use = {"toolUseId": f"call{len(self.driver.calls)}", "name": call.tool}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(call.arguments)}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


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
            agent = Agent(
                model=ScriptedModel(driver),
                tools=[fetch_document],
                plugins=[ContextOffloader()],
                callback_handler=None,
            )
            BYTES_READ[0] = 0
            agent("benchmark task")
            driver.seen.pop(0)
            out.append(
                {
                    "document": document["name"],
                    **driver.result(task["id"], bytes_read=BYTES_READ[0]),
                }
            )
    return out


if __name__ == "__main__":
    json.dump(run(read_spec(sys.stdin.read())), sys.stdout)
