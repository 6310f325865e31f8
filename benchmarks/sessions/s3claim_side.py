"""s3claim's side of the sessions: every arm through `AgentRunner` itself, on an S3 store on
moto whose every request is counted by botocore event hooks (`devkit.servers.Wire`).

The arms: s3claim on its defaults, on its presets (`ClaimCheckPolicy.for_logs()` for the log
tool, `for_json()` for the JSON tool), and on what docs/reading.md recommends (the presets,
a turn budget of 20,000 characters, `reuse_seconds=300` on the document tools); and two
baselines through the same runner without a claim check: every result inline, and results cut
at the runner's 16,384 characters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.context import Bench, empty_bucket
from benchmarks.heldout import text
from benchmarks.sessions.script import (
    DOCUMENT_TOOLS,
    SYSTEM_PROMPT,
    Call,
    Question,
    Request,
    Script,
    Session,
    call_part,
)
from devkit.servers import Wire
from s3claim.claim_tools import claim_tools
from s3claim.claimcheck import ClaimCheck
from s3claim.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage
from s3claim.policy import ClaimCheckPolicy
from s3claim.runner import AgentRunner
from s3claim.s3 import S3ClaimCheckStore
from s3claim.tools import Tool, tool
from s3claim.wording import HANDLE_SEEN

__all__ = ["ARMS", "TRUNCATE_AT", "run"]

TRUNCATE_AT = 16_384
TURN_BUDGET = 20_000
"""docs/reading.md's example of `turn_budget_chars`."""
PRESETS = {"read_log": ClaimCheckPolicy.for_logs(), "get_json": ClaimCheckPolicy.for_json()}


@dataclass(frozen=True)
class Arm:
    claim_check: Callable[[S3ClaimCheckStore], ClaimCheck] | None
    tool_options: dict[str, Any] = field(default_factory=dict)
    max_tool_result_chars: int = TRUNCATE_AT


ARMS: dict[str, Arm] = {
    "inline": Arm(None, max_tool_result_chars=10**9),
    f"truncation at {TRUNCATE_AT:,}": Arm(None),
    "s3claim (defaults)": Arm(ClaimCheck),
    "s3claim (for_logs, for_json)": Arm(lambda store: ClaimCheck(store, per_tool=PRESETS)),
    "s3claim (docs' recommendations)": Arm(
        lambda store: ClaimCheck(
            store,
            policy=ClaimCheckPolicy(turn_budget_chars=TURN_BUDGET),
            per_tool={
                name: p.model_copy(update={"turn_budget_chars": TURN_BUDGET})
                for name, p in PRESETS.items()
            },
        ),
        tool_options={"reuse_seconds": 300},
    ),
}


class ClaimReader:
    """s3claim's two tools: `search_result` for a literal, `fetch_result` by line, from the
    end, or by JSON path."""

    def plain(self, result: str) -> str:
        try:
            decoded = json.loads(result)
        except ValueError:
            return ""
        matches = decoded.get("matches", []) if isinstance(decoded, dict) else []
        return "\n".join(str(m.get("snippet", "")) for m in matches)

    def read(self, question: Question, attempt: int, result: str, earlier: str) -> Call | None:
        found = HANDLE_SEEN.search(result)
        if found is None:
            return None
        handle = found.group(1)
        if question.kind == "tail" and attempt == 0:
            return Call(
                "", "fetch_result", {"handle": handle, "from_end": True, "lines": question.lines}
            )
        if question.kind == "member" and attempt == 0:
            return Call("", "fetch_result", {"handle": handle, "path": question.pointer})
        if question.kind == "line" and attempt == 0:
            return Call("", "search_result", {"handle": handle, "pattern": question.needle})
        if question.kind == "line" and attempt == 1:
            try:
                matches = json.loads(earlier).get("matches") or []
            except (ValueError, AttributeError):
                return None
            if matches:
                line = int(matches[0]["line"])
                return Call("", "fetch_result", {"handle": handle, "line": line, "lines": 1})
        return None


class _Provider:
    """The scripted model behind `AgentRunner`: each request, as the runner sends it."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        system, parts, results = "", [], []
        for m in messages:
            if isinstance(m, SystemMessage):
                system += m.content
            elif isinstance(m, AssistantMessage):
                parts.append(m.content or "")
                parts.extend(call_part(Call(c.id, c.name, c.arguments)) for c in m.tool_calls)
            elif isinstance(m, ToolMessage):
                parts.append(m.content)
                results.append((m.tool_call_id, m.content))
            else:
                parts.append(m.content)
        defined = [
            {
                k: t["function"][k]
                for k in ("name", "description", "parameters")
                if k in t["function"]
            }
            for t in tools
        ]
        reply = self.script.respond(Request(system, defined, parts, results))
        if isinstance(reply, str):
            return AssistantMessage(content=reply)
        return AssistantMessage(
            tool_calls=tuple(ToolCall(id=c.id, name=c.tool, arguments=c.arguments) for c in reply)
        )


def _document_tools(executions: list[int], **options: Any) -> list[Tool]:
    def make(name: str) -> Tool:
        def document(path: str) -> str:
            executions[0] += 1
            return text(path)

        document.__name__ = name
        document.__doc__ = DOCUMENT_TOOLS[name]
        return tool(**options)(document) if options else tool(document)

    return [make(name) for name in DOCUMENT_TOOLS]


def run(bench: Bench, session: Session, system: str) -> dict[str, Any]:
    """One session through one arm (a name of `ARMS`): its figures, as the peers report."""
    arm = ARMS[system]
    script = Script(session, ClaimReader())
    executions = [0]
    tools = _document_tools(executions, **arm.tool_options)
    if arm.claim_check is None:
        runner = AgentRunner(
            provider=_Provider(script),
            tools=tools,
            max_tool_result_chars=arm.max_tool_result_chars,
            max_turns=200,
            system=SYSTEM_PROMPT,
        )
        runner.run(session.prompt, tenant="bench", run_id="session")
        return script.result(system, executions=executions[0], store_requests=0, store_bytes=0)
    client, bucket, store, _ = bench.stores(bench.moto)
    wire = Wire.attach(client)
    try:
        runner = AgentRunner(
            provider=_Provider(script),
            tools=[*tools, *claim_tools(store)],
            claim_check=arm.claim_check(store),
            max_turns=200,
            system=SYSTEM_PROMPT,
        )
        runner.run(session.prompt, tenant="bench", run_id="session")
        requests = sum(wire.requests.values())
        read = wire.response_bytes["GetObject"]
    finally:
        empty_bucket(client, bucket)
    return script.result(
        system, executions=executions[0], store_requests=requests, store_bytes=read
    )
