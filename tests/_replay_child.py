"""One instance of a claim-checked agent playing a fixed session on the S3 store that the
`S3CLAIM_*` variables name, with every knob of issue 37 on: a turn budget, repeat reads, the
log and JSON previews. Prints one JSON line: every request the model was sent, serialised.

    python -m tests._replay_child run RUN_ID [--journal] [--stop-after N]
    python -m tests._replay_child resume RUN_ID

`--stop-after N` ends the process (exit 9, no clean-up) when the model is called the N+1th
time: the last turn's results are then unrecorded, as after a crash.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from typing import Any

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    Message,
    RetryPolicy,
    S3ClaimCheckStore,
    S3ClaimSettings,
    S3RunJournal,
    ScriptedProvider,
    ToolCall,
    claim_tools,
    tool,
)
from tests._s3 import moto_client

TENANT = "acme"
NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)


def build_log() -> str:
    rng = random.Random("replay-log")
    lines = [
        f"12:{n // 60:02d}:{n % 60:02d} INFO step {n} took {rng.randint(1, 900)} ms"
        for n in range(3000)
    ]
    lines[1800] = "12:30:00 ERROR step 1800: the linker could not find -lssl"
    lines.append("FAILED: build stopped after 1 error")
    return "\n".join(lines) + "\n"


def orders() -> str:
    rng = random.Random("replay-orders")
    items = [{"id": n, "amount": rng.randint(1, 9999), "status": "paid"} for n in range(400)]
    return json.dumps({"items": items, "count": len(items), "next": None}, indent=2)


def source(name: str) -> str:
    return "".join(f"# {name}, line {n}: a module of the project\n" for n in range(60))


@tool(reuse_seconds=300)
def read_log(path: str) -> str:
    """A build log."""
    return build_log()


@tool(reuse_seconds=300)
def get_orders(page: int) -> str:
    """One page of the orders API."""
    return orders()


@tool(reuse_seconds=300)
def open_file(path: str) -> str:
    """A source file."""
    return source(path)


@tool
def write_note(text: str) -> str:
    """Write a note (not read-only: it ends repeat reads)."""
    return "noted"


def _turn(*calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=tuple(
            ToolCall(id=f"{name}-{n}", name=name, arguments=args)
            for n, (name, args) in enumerate(calls)
        )
    )


LOG = ("read_log", {"path": "build.log"})
SCRIPT = [
    _turn(
        LOG, ("get_orders", {"page": 1}), *(("open_file", {"path": f"m{n}.py"}) for n in range(4))
    ),
    _turn(LOG, ("open_file", {"path": "m1.py"})),
    _turn(("write_note", {"text": "the linker"})),
    _turn(LOG),
    _turn(LOG, ("get_orders", {"page": 1})),
    AssistantMessage(content="The linker could not find -lssl."),
]


class Recording:
    """The script, recording every request as sent; with `stop_after`, the process ends."""

    def __init__(self, stop_after: int | None) -> None:
        self.inner = ScriptedProvider(SCRIPT)
        self.requests: list[str] = []
        self.stop_after = stop_after

    def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        if self.stop_after is not None and len(self.requests) == self.stop_after:
            sys.stdout.flush()
            os._exit(9)
        self.requests.append("\n".join(m.model_dump_json() for m in messages))
        return self.inner.complete(messages, tools)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "resume"])
    parser.add_argument("run_id")
    parser.add_argument("--journal", action="store_true")
    parser.add_argument("--stop-after", type=int)
    args = parser.parse_args()
    settings = S3ClaimSettings()
    assert settings.bucket and settings.endpoint_url and settings.handle_key
    client = moto_client(settings.endpoint_url)
    store = S3ClaimCheckStore(
        settings.bucket, handle_key=settings.handle_key, client=client, retry=NO_WAIT
    )
    journal = None
    if args.journal or args.mode == "resume":
        journal = S3RunJournal(
            settings.bucket, handle_key=settings.handle_key, client=client, retry=NO_WAIT
        )
    claim_check = ClaimCheck(
        store,
        policy=ClaimCheckPolicy(turn_budget_chars=6_000),
        per_tool={
            "read_log": ClaimCheckPolicy.for_logs(),
            "get_orders": ClaimCheckPolicy.for_json(),
        },
    )
    provider = Recording(args.stop_after)
    runner = AgentRunner(
        provider=provider,
        tools=[read_log, get_orders, open_file, write_note, *claim_tools(store)],
        claim_check=claim_check,
        journal=journal,
    )
    if args.mode == "run":
        result = runner.run("Why did the build fail?", tenant=TENANT, run_id=args.run_id)
    else:
        result = runner.resume(tenant=TENANT, run_id=args.run_id)
    document = {
        "requests": provider.requests,
        "messages": [m.model_dump_json() for m in result.messages],
        "reused": sum(e.kind == "result_reused" for e in result.events),
    }
    print(json.dumps(document), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
