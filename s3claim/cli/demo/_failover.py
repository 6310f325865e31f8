"""`s3claim demo --failover`: the counsel run outlives the process that started it.

A first instance (a child process) runs the scenario with an S3 run journal and is SIGKILLed
as it asks for its third model call; a fresh one resumes the run from the bucket. This
process starts both, reads the journal between them, and compares the finished run with an
uninterrupted one. Run as `python -m s3claim.cli.demo._failover first|resume RUN_ID`, this
module is the instance: its bucket from `S3CLAIM_*`, one JSON line per event of interest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from s3claim.cli._exit import CliError, Exit
from s3claim.cli.demo._bucket import demo_bucket
from s3claim.cli.demo._closing import event_table, next_steps, render_closing
from s3claim.cli.demo._scenario import (
    QUESTION,
    TENANT,
    counsel_runner,
    counsel_script,
    run_scenario,
)
from s3claim.errors import ClaimCheckError
from s3claim.handles import HandleKey
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import AssistantMessage, Message, conversation_chars
from s3claim.s3 import S3ClaimSettings
from s3claim.s3.admin import Target, load_settings, open_journal, open_store
from s3claim.safejson import loads
from s3claim.scope import Scope

__all__ = ["failover_demo"]

KILL_AT_TURN = 3
"""The first instance dies asking for this model call: after its second."""
CHILD_SECONDS = 60.0


# -- the instances (child processes) -----------------------------------------------------------


def _say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


class _Reporting:
    """The counsel script, telling the parent about each model call; the first instance
    is SIGKILLed when it asks for `KILL_AT_TURN`: no cleanup, no goodbye, as in a crash."""

    def __init__(self, *, stop: bool, before_model: dict[str, Counter[str]]) -> None:
        self._inner = counsel_script()
        self._stop = stop
        self._before_model = before_model
        self._first = True

    def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Any:
        turn = sum(isinstance(m, AssistantMessage) for m in messages) + 1
        if self._first:
            self._first = False
            _say(before_model={k: dict(v) for k, v in self._before_model.items()})
        if self._stop and turn == KILL_AT_TURN:
            _say(waiting=turn, pid=os.getpid())
            os.kill(os.getpid(), signal.SIGKILL)
        _say(turn=turn, prefill_chars=conversation_chars(list(messages)), pid=os.getpid())
        return self._inner.complete(messages, tools)


def _counted(target: Target) -> Counter[str]:
    sent: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        sent[event_name.rsplit(".", 1)[-1]] += 1

    target.client.meta.events.register("before-send.s3.*", count)
    return sent


def _instance(mode: str, run_id: str) -> int:
    settings = load_settings()
    journal_target, store_target = Target.of(settings), Target.of(settings)  # a client each
    before_model = {"journal": _counted(journal_target), "tools": _counted(store_target)}
    provider = _Reporting(stop=mode == "first", before_model=before_model)
    runner = counsel_runner(
        open_store(store_target), journal=open_journal(journal_target), provider=provider
    )
    try:
        if mode == "first":
            result = runner.run(QUESTION, tenant=TENANT, run_id=run_id)
        else:
            result = runner.resume(tenant=TENANT, run_id=run_id)
    except ClaimCheckError as exc:
        _say(error=f"{type(exc).__name__}: {exc}")
        return 1
    _say(done=True, output=result.output, events=[e.model_dump() for e in result.events])
    return 0


# -- the orchestration (this process) -----------------------------------------------------------


def _run_instance(env: dict[str, str], *args: str) -> tuple[list[dict[str, Any]], int]:
    """An instance's JSON lines and its exit status (negative: the signal that ended it)."""
    try:
        done = subprocess.run(  # noqa: S603 - this interpreter, our own module, our arguments
            [sys.executable, "-m", "s3claim.cli.demo._failover", *args],
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHILD_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CliError("an instance did not finish in a minute", Exit.UNAVAILABLE) from None
    reports = [loads(line) for line in done.stdout.splitlines()]  # another process wrote them
    killed = done.returncode == -signal.SIGKILL and any("waiting" in r for r in reports)
    if done.returncode != 0 and not killed:
        errors = [r["error"] for r in reports if "error" in r]
        stderr = done.stderr.strip().splitlines()
        detail = errors[0] if errors else (stderr[-1] if stderr else f"exit {done.returncode}")
        raise CliError(f"an instance failed: {detail}", Exit.UNAVAILABLE)
    return reports, done.returncode


def failover_demo(settings: S3ClaimSettings, *, as_json: bool) -> None:
    started = time.perf_counter()
    run_id = f"failover-{uuid.uuid4().hex[:8]}"
    scope = Scope(TENANT, run_id)
    with demo_bucket(settings) as setup:
        first, code = _run_instance(setup.env, "first", run_id)
        journal = open_journal(setup.target)
        recorded = journal.load(scope).record
        second, _ = _run_instance(setup.env, "resume", run_id)
        if not second or not second[-1].get("done"):
            raise CliError("the second instance did not finish the run", Exit.UNAVAILABLE)
        final = journal.load(scope).record
        key = HandleKey(setup.env["S3CLAIM_HANDLE_KEY"])
        if not setup.embedded:
            open_store(setup.target).forget(tenant=TENANT, run=run_id)
    store = MemoryClaimCheckStore(handle_key=key)
    expected = run_scenario(store, baseline=False, run_id=run_id).claimed
    data: dict[str, Any] = {
        "store": setup.description,
        "bucket": setup.located,
        "run_tag": key.run_tag(scope),
        "first": {
            "pid": first[-1].get("pid"),
            "turns": [r for r in first if "turn" in r],
            "killed_asking_for_turn": first[-1].get("waiting"),
            "signal": -code,
        },
        "journal_after_kill": {
            "status": recorded.status,
            "turns": recorded.turns,
            "messages": len(recorded.messages),
        },
        "second": {
            "pid": next((r["pid"] for r in second if "pid" in r), None),
            "before_model": second[0]["before_model"],
            "resumed": next(e for e in second[-1]["events"] if e["kind"] == "run_resumed"),
            "turns": [r for r in second if "turn" in r],
        },
        "events": [e.model_dump() for e in final.events],
        "answer": final.output,
        "uninterrupted_answer": expected.output,
        "same_answer": final.output == expected.output,
        "same_messages": final.messages == expected.messages,
        "messages": len(final.messages),
        "seconds": round(time.perf_counter() - started, 3),
        "claims_lived": setup.lived,
        "next": next_steps(failover=True),
    }
    if as_json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    console = Console(highlight=False)
    one, two, between = data["first"], data["second"], data["journal_after_kill"]
    console.print(
        Text.assemble(
            ("s3claim demo --failover", "bold"),
            ": the counsel run outlives the process that started it.\n",
            f"Store: {data['store']}\nBucket: {data['bucket']}\n",
            f"Run tag: {data['run_tag']}\nQuestion: {QUESTION}",
        )
    )
    console.print(Rule(f"First instance (pid {one['pid']})"))
    for turn in one["turns"]:
        console.print(f"model call {turn['turn']}: {turn['prefill_chars']:,} characters sent")
    console.print(
        Text(
            f"SIGKILLed while asking for model call {one['killed_asking_for_turn']} "
            f"(exit by signal {one['signal']}).",
            style="bold red",
        )
    )
    console.print(
        f"In the bucket: its journal, {between['status']}, {between['turns']} turns and "
        f"{between['messages']} messages recorded."
    )
    console.print(Rule(f"Second instance (pid {two['pid']}), a fresh process"))
    resumed, before = two["resumed"], two["before_model"]
    reran = ", ".join(resumed["rerun_tools"]) or "none"
    console.print(
        f"run_resumed: {resumed['turns']} turns and {resumed['messages']} messages restored; "
        f"re-ran (their results were not recorded): {reran}"
    )
    journal_ops, tool_ops = sum(before["journal"].values()), sum(before["tools"].values())
    console.print(
        Text.assemble(
            "Requests before its first model call: ",
            (f"{journal_ops + tool_ops}", "bold green"),
            f" — {journal_ops} to read the run ({_ops(before['journal'])}), "
            f"{tool_ops} for the tool calls it re-ran ({_ops(before['tools'])}).",
        )
    )
    for turn in two["turns"]:
        console.print(f"model call {turn['turn']}: {turn['prefill_chars']:,} characters sent")
    console.print(Rule("The whole run, as recorded"))
    console.print(event_table(final.events, commas=False))
    console.print(Rule("Answer"))
    console.print(Text(data["answer"] or "(no answer)"))
    same = data["same_answer"] and data["same_messages"]
    verdict = (
        f"Same answer and same {data['messages']} messages as an uninterrupted run."
        if same
        else "DIFFERENT from an uninterrupted run."
    )
    console.print(Text(verdict, style="bold green" if same else "bold red"))
    render_closing(console, data)


def _ops(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} × {op}" for op, n in sorted(counts.items())) or "none"


if __name__ == "__main__":
    sys.exit(_instance(sys.argv[1], sys.argv[2]))
