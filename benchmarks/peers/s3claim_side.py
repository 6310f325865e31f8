"""s3claim's side: the same tasks through `AgentRunner`, a scripted provider, and an S3 store
on moto, with every GET counted by botocore event hooks (`devkit.servers.Wire`).

Two policies per task, both on the library's default `ClaimCheckPolicy` (the preview every
user gets). `planned` uses the reading modes of issue 19 where they help
(`fetch_result(line=N, lines=K, limit=...)`, `fetch_result(path=...)`, line numbers and
whole-line snippets in `search_result` matches); a task whose planned mode the installed
s3claim lacks is reported as not available, never faked. `offset` uses what the spec's tools
have always had: `search_result` and `fetch_result(offset=...)`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

from benchmarks.context import Bench, empty_bucket
from benchmarks.peers.common import Call, Driver, Policy, answer_line, answer_record, strip_end_note
from benchmarks.peers.documents import Document, Task
from devkit.servers import Wire
from s3claim._reading import SNIPPET_CHARS
from s3claim.claim_tools import claim_check_tool, claim_search_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.policy import ClaimCheckPolicy
from s3claim.runner import AgentRunner
from s3claim.tools import Tool, ToolRegistry, tool
from s3claim.wording import HANDLE_SEEN, MARKER_SEEN

__all__ = ["POLICIES", "capabilities", "run"]

POLICIES = ("planned", "offset")
LINE_LIMIT = 512
"""`limit` for a line read: one log line or clause, whole, without a 4,096-character window."""
OFFSET_LIMIT = 700
"""`limit` for an offset read around a match: 300 characters before it, a record after."""
_IDS = itertools.count(1)


def capabilities(fetch: Tool) -> set[str]:
    """The reading modes the installed `fetch_result` offers, from its own schema."""
    properties = fetch.schema["function"]["parameters"].get("properties", {})
    return {name for name in ("line", "lines", "from_end", "path", "limit") if name in properties}


class NotAvailable(Exception):
    """The policy needs a mode the installed s3claim does not have."""


def _need(modes: set[str], *wanted: str) -> None:
    missing = [m for m in wanted if m not in modes]
    if missing:
        raise NotAvailable(", ".join(f"fetch_result({m}=...)" for m in missing))


def _search(handle: str, pattern: str) -> Call:
    return Call("search_result", {"handle": handle, "pattern": pattern})


def _line_limit(preview: str) -> int:
    """A `limit` for one line: twice the longest line the preview shows, within 200-4,096."""
    head = preview.rsplit("\n\n[", 1)[0]
    longest = max((len(line) for line in head.split("\n")), default=0)
    return min(4_096, max(200, 2 * longest))


def _record_layout(preview: str, key: str) -> tuple[int, int, int]:
    """From an indented preview: how many lines a record's `key` sits below its `{`, how many
    lines the first record spans, and a `limit` that holds it whole (twice its length)."""
    lines = preview.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip() == "{" and i > 0), None)
    if first is None:
        return 0, 1, LINE_LIMIT
    below = next((i - first for i, line in enumerate(lines) if line.strip().startswith(key)), 0)
    end = next(
        (i for i, line in enumerate(lines) if line.strip() in ("},", "}") and i > first), None
    )
    if end is None:
        return max(0, below), 1, LINE_LIMIT
    size = sum(len(line) + 1 for line in lines[first : end + 1])
    return max(0, below), end - first + 1, min(4_096, max(200, 2 * size))


def _tail_in_preview(preview: str) -> str | None:
    """The text after the marker, when the preview keeps a tail (`tail_chars`)."""
    shown = MARKER_SEEN.search(preview)
    if shown is None:
        return None
    end = preview.find("]", shown.end())
    after = preview[end + 1 :] if end >= 0 else ""
    after = after[2:] if after.startswith("\n\n") else after.lstrip("\n")
    return after or None


def _value_at_start(text: str) -> str:
    """The JSON value a path read returns, whatever follows it (the members it lists)."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    value, _ = json.JSONDecoder().raw_decode(text, min(starts) if starts else 0)
    return json.dumps(value)


def _policy(task: Task, doc: Document, *, planned: bool, modes: set[str]) -> Policy:
    preview = yield Call("fetch_document", {})
    found, shown = HANDLE_SEEN.search(preview), MARKER_SEEN.search(preview)
    if found is None or shown is None:
        return None
    handle, total = found.group(1), int(shown.group(1))
    spec = task.spec
    if task.id == "tail":
        kept = _tail_in_preview(preview)
        if kept is not None and len(kept) >= 2_000:  # the preview already holds it
            return kept[-2_000:]
        # the marker gives the length: one read of the last 2,000
        got = yield Call("fetch_result", {"handle": handle, "offset": total - 2_000})
        return strip_end_note(got)
    if task.id == "position" and doc.kind == "log":
        _need(modes if planned else set(), "line", "lines", "limit")
        arguments = {
            "handle": handle,
            "line": spec["line"],
            "lines": 1,
            "limit": _line_limit(preview),
        }
        got = yield Call("fetch_result", arguments)
        return strip_end_note(got).split("\n", 1)[0]
    if task.id == "position" and doc.kind == "json":
        _need(modes if planned else set(), "path")
        got = yield Call("fetch_result", {"handle": handle, "path": spec["pointer"]})
        return _value_at_start(strip_end_note(got))
    # find (and the contract's clause 37): search, then read where it matched
    starts = task.id == "position"
    if planned:  # clause 37 starts a line: a regex anchored at line starts finds it
        search = Call(
            "search_result",
            {"handle": handle, "pattern": "(?m)^" + re.escape(spec["needle"]), "regex": True}
            if starts
            else {"handle": handle, "pattern": spec["needle"]},
        )
    else:
        search = _search(handle, "\n" + spec["needle"] if starts else spec["needle"])
    matches = json.loads((yield search)).get("matches", [])
    if not matches:
        return None
    hit = matches[0]
    # the snippet may already hold the whole line or record
    if spec["unit"] == "record":
        quoted = answer_record(hit["snippet"], spec["needle"])
    elif planned:
        quoted = _snippet_line(hit["snippet"], spec["needle"], starts=starts)
    else:
        quoted = _whole_line(hit["snippet"], spec["needle"], starts=starts)
    if quoted is not None:
        return quoted
    line = hit.get("line")
    head = preview.rsplit("\n\n[", 1)[0]
    if planned and line is not None and {"line", "lines", "limit"} <= modes and "\n" in head:
        back, count, limit = 0, 1, _line_limit(preview)
        if spec["unit"] == "record":
            back, count, limit = _record_layout(preview, '"customer"')
        arguments = {"handle": handle, "line": line - back, "lines": count, "limit": limit}
        got = strip_end_note((yield Call("fetch_result", arguments)))
    else:
        arguments = {"handle": handle, "offset": max(0, hit["offset"] - 300)}
        if planned and "limit" in modes:  # a record or a line, not a 4,096-character window
            arguments["limit"] = OFFSET_LIMIT
        got = strip_end_note((yield Call("fetch_result", arguments)))
    if spec["unit"] == "record":
        return answer_record(got, spec["needle"])
    return answer_line(got, spec["needle"], starts=starts)


def _snippet_line(snippet: str, needle: str, *, starts: bool) -> str | None:
    """The line holding `needle`, when the snippet is that whole line (shorter than
    SNIPPET_CHARS: `search_result` cuts only a longer line)."""
    if len(snippet) >= SNIPPET_CHARS:
        return None
    return answer_line(snippet, needle, starts=starts)


def _whole_line(snippet: str, needle: str, *, starts: bool) -> str | None:
    """The line holding `needle`, when the snippet shows both its ends (a newline each side)."""
    at = snippet.find(needle)
    if at < 0:
        return None
    at += len(needle) - len(needle.lstrip("\n"))
    begin, end = snippet.rfind("\n", 0, at), snippet.find("\n", at)
    if begin < 0 or end < 0:
        return None
    return answer_line(snippet[begin + 1 : end], needle.lstrip("\n"), starts=starts)


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
                    provider=_Provider(driver),
                    tools=registry.view(),
                    claim_check=ClaimCheck(store, policy=ClaimCheckPolicy()),
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
