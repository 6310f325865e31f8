"""The process that dies in test_failover: checks results in through a runner until killed.

Configured by `S3CLAIM_*` variables; argv is tenant and run id. After each check-in the
next model step reports, as one JSON line on stdout, the handle, the text the model was
shown and the SHA-256 of what the tool returned, then asks for the next result.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Sequence

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    Message,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore

STEPS = 100_000  # far more than it lives to play


def content_for(n: int) -> str:
    """Result n: 2-3 windows of mixed scripts, nothing the boundary would rewrite."""
    line = f"record {n}: Zürich, 契約第{n}条, née 👩‍⚖️, e\u0301, \r\n"
    return line * (180 + n % 90)


def main() -> None:
    tenant, run_id = sys.argv[1], sys.argv[2]
    store = S3ClaimCheckStore.from_settings(retry=RetryPolicy(initial_wait=0, max_wait=0))

    @tool
    def produce(n: int) -> str:
        """Return result n."""
        return content_for(n)

    def step(n: int) -> object:
        def play(messages: Sequence[Message]) -> AssistantMessage:
            if n:
                shown = messages[-1].content or ""
                handle = re.findall(r"handle='(claim:[0-9a-z]+)'", shown)[-1]
                digest = hashlib.sha256(content_for(n - 1).encode()).hexdigest()
                report = {"n": n - 1, "handle": handle, "text": shown, "sha256": digest}
                print(json.dumps(report), flush=True)
            call = ToolCall(id=f"p{n}", name="produce", arguments={"n": n})
            return AssistantMessage(tool_calls=(call,))

        return play

    runner = AgentRunner(
        provider=ScriptedProvider([step(n) for n in range(STEPS)]),  # type: ignore[misc]
        tools=ToolRegistry((produce, claim_check_tool(store))).view(),
        claim_check=ClaimCheck(store),
        max_turns=STEPS,
    )
    runner.run("check results in until killed", tenant=tenant, run_id=run_id)


if __name__ == "__main__":
    main()
