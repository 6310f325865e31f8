"""One instance of the counsel agent, recording to an S3 run journal: the process the
journal failover tests start, kill and race. Configured by `S3CLAIM_*` variables.

    python -m tests.reliability._journal_child run RUN_ID [--kill before-put:N|after-put:N]
    python -m tests.reliability._journal_child resume RUN_ID [--hold]

`--kill` SIGKILLs this process from inside botocore, just before the journal's Nth PutObject
is sent or just after its answer arrives: the step boundaries, exactly. `--hold` prints
`{"ready": ...}` at the first model call and waits for a line on stdin, so two resumers can
both have loaded the run before either records. The result (messages, output, events) is one
JSON line on stdout; RunConflictError exits 3, RunNotFoundError 4.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from s3claim import (
    AssistantMessage,
    Message,
    RetryPolicy,
    RunConflictError,
    RunNotFoundError,
    S3ClaimCheckStore,
    S3ClaimSettings,
    S3RunJournal,
)
from s3claim.cli.demo import QUESTION, TENANT, counsel_runner, counsel_script
from tests._s3 import moto_client

NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)


class _Hold:
    """The counsel script, waiting for the test's word at its first call."""

    def __init__(self) -> None:
        self._inner = counsel_script()
        self._held = False

    def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Any:
        if not self._held:
            self._held = True
            print(json.dumps({"ready": len(messages)}), flush=True)
            sys.stdin.readline()
        reply: AssistantMessage = self._inner.complete(messages, tools)
        return reply


def _kill_at(client: Any, spec: str) -> None:
    when, n = spec.split(":")
    event = "before-send" if when == "before-put" else "after-call"
    seen = 0

    def hook(**_: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == int(n):
            os.kill(os.getpid(), signal.SIGKILL)

    client.meta.events.register(f"{event}.s3.PutObject", hook)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "resume"])
    parser.add_argument("run_id")
    parser.add_argument("--kill")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    settings = S3ClaimSettings()
    assert settings.bucket and settings.endpoint_url and settings.handle_key
    client = moto_client(settings.endpoint_url)
    journal = S3RunJournal(
        settings.bucket, handle_key=settings.handle_key, client=client, retry=NO_WAIT
    )
    if args.kill:
        _kill_at(client, args.kill)
    store = S3ClaimCheckStore.from_settings(retry=NO_WAIT)
    runner = counsel_runner(store, journal=journal, provider=_Hold() if args.hold else None)
    try:
        if args.mode == "run":
            result = runner.run(QUESTION, tenant=TENANT, run_id=args.run_id)
        else:
            result = runner.resume(tenant=TENANT, run_id=args.run_id)
    except RunConflictError:
        print(json.dumps({"error": "RunConflictError"}), flush=True)
        return 3
    except RunNotFoundError:
        print(json.dumps({"error": "RunNotFoundError"}), flush=True)
        return 4
    document = {
        "output": result.output,
        "messages": [m.model_dump() for m in result.messages],
        "events": [e.model_dump() for e in result.events],
    }
    print(json.dumps(document), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
