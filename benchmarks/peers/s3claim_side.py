"""s3claim's side: the same tasks through `AgentRunner`, a scripted provider, and an S3 store
on moto, with every GET counted by botocore event hooks (`tests.servers.Wire`).

Two policies per task. `planned` uses the reading modes of issue 19 where they help
(`fetch_result(line=N, limit=...)`, `fetch_result(path=...)`, line numbers in
`search_result` matches); a task whose planned mode the installed s3claim lacks is reported
as not available, never faked. `offset` uses what the spec's tools have always had:
`search_result` and `fetch_result(offset=...)`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from benchmarks.context import Bench, empty_bucket
from benchmarks.peers.common import Call, Driver, Policy, answer_line, answer_record, strip_end_note
from benchmarks.peers.documents import Document, Task
from s3claim._wording import HANDLE_SEEN, MARKER_SEEN
from s3claim.claim_tools import claim_check_tool, claim_search_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.runner import AgentRunner
from s3claim.tools import Tool, ToolRegistry, tool
from tests.servers import Wire

__all__ = ["POLICIES", "capabilities", "run"]

POLICIES = ("planned", "offset")
LINE_LIMIT = 512
"""`limit` for a line read: one log line or clause, whole, without a 4,096-character window."""
_IDS = itertools.count(1)


def capabilities(fetch: Tool) -> set[str]:
    """The reading modes the installed `fetch_result` offers, from its own schema."""
    properties = fetch.schema["function"]["parameters"].get("properties", {})
    return {name for name in ("line", "from_end", "path", "limit") if name in properties}


class NotAvailable(Exception):
    """The policy needs a mode the installed s3claim does not have."""


def _need(modes: set[str], *wanted: str) -> None:
    missing = [m for m in wanted if m not in modes]
    if missing:
        raise NotAvailable(", ".join(f"fetch_result({m}=...)" for m in missing))


def _search(handle: str, pattern: str) -> Call:
    return Call("search_result", {"handle": handle, "pattern": pattern})


def _policy(task: Task, doc: Document, *, planned: bool, modes: set[str]) -> Policy:
    preview = yield Call("fetch_document", {})
    found, shown = HANDLE_SEEN.search(preview), MARKER_SEEN.search(preview)
    if found is None or shown is None:
        return None
    handle, total = found.group(1), int(shown.group(1))
    spec = task.spec
    if task.id == "tail":  # the marker gives the length: one read of the last 2,000
        got = yield Call("fetch_result", {"handle": handle, "offset": total - 2_000})
        return strip_end_note(got)
    if task.id == "position" and doc.kind == "log":
        _need(modes if planned else set(), "line", "limit")
        got = yield Call(
            "fetch_result", {"handle": handle, "line": spec["line"], "limit": LINE_LIMIT}
        )
        return strip_end_note(got).split("\n", 1)[0]
    if task.id == "position" and doc.kind == "json":
        _need(modes if planned else set(), "path")
        got = strip_end_note(
            (yield Call("fetch_result", {"handle": handle, "path": spec["pointer"]}))
        )
        value, _ = json.JSONDecoder().raw_decode(got)
        return json.dumps(value)
    # find (and the contract's clause 37): search, then read where it matched
    needle = spec["needle"] if task.id == "find" else "\n" + spec["needle"]
    result = yield _search(handle, needle)
    matches = json.loads(result).get("matches", [])
    if not matches:
        return None
    hit = matches[0]
    line = hit.get("line")
    if (
        planned
        and line is not None
        and "line" in modes
        and "limit" in modes
        and doc.name != "json-minified"
    ):
        start = line + (1 if needle.startswith("\n") else 0)
        back = 2 if spec["unit"] == "record" else 0  # the customer field is a record's 2nd line
        got = strip_end_note(
            (
                yield Call(
                    "fetch_result", {"handle": handle, "line": start - back, "limit": LINE_LIMIT}
                )
            )
        )
    else:
        got = strip_end_note(
            (yield Call("fetch_result", {"handle": handle, "offset": max(0, hit["offset"] - 300)}))
        )
    if spec["unit"] == "record":
        return answer_record(got, spec["needle"])
    return answer_line(got, spec["needle"], starts=task.id == "position")


class _Provider:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        last = messages[-1]
        call = self.driver.step(last.content if isinstance(last, ToolMessage) else "")
        if call is None:
            return AssistantMessage(content=self.driver.answer or "not found")
        tool_call = ToolCall(id=f"call_{next(_IDS)}", name=call.tool, arguments=call.arguments)
        return AssistantMessage(tool_calls=(tool_call,))


def _document_tool(text: str) -> Tool:
    @tool
    def fetch_document() -> str:
        """The document under test."""
        return text

    return fetch_document


def run(bench: Bench, docs: Sequence[Document], policy: str) -> list[dict[str, Any]]:
    """One result per task (the same fields as a peer's), `policy` one of POLICIES."""
    out: list[dict[str, Any]] = []
    for doc in docs:
        client, bucket, store, _ = bench.stores(bench.moto)
        wire = Wire.attach(client)
        fetch = claim_check_tool(store)
        modes = capabilities(fetch)
        registry = ToolRegistry((_document_tool(doc.text), fetch, claim_search_tool(store)))
        try:
            for task in doc.tasks:
                driver = Driver(_policy(task, doc, planned=policy == "planned", modes=modes))
                runner = AgentRunner(
                    provider=_Provider(driver), tools=registry.view(), claim_check=ClaimCheck(store)
                )
                note = ""
                wire.clear()
                try:
                    runner.run("benchmark task", tenant="bench")
                except NotAvailable as missing:
                    # planned: a mode still to come; offset: a mode the spec's tools never had
                    lacks = "not available" if policy == "planned" else "no such mode"
                    note = f"{lacks}: {missing}"
                driver.seen.pop(0)
                reads = wire.response_bytes["GetObject"]
                result = driver.result(task.id, bytes_read=reads, note=note)
                out.append({"document": doc.name, **result})
        finally:
            empty_bucket(client, bucket)
    return out
