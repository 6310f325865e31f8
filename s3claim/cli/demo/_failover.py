"""`s3claim demo --failover`: the counsel run outlives the process that started it.

The first instance (a child process) runs the scenario with an S3 run journal and is
SIGKILLed after its second model call, while it asks for the third. A second, fresh process
resumes the run from the bucket and finishes it. This process only orchestrates: it starts
both, kills the first, reads the journal between them, and compares the finished run with an
uninterrupted one (the same scripted model, claims in memory under the same key).

Run as `python -m s3claim.cli.demo._failover first|resume RUN_ID`, this module is the instance;
it reads its bucket from `S3CLAIM_*` and writes one JSON line per event of interest.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from s3claim.cli._exit import CliError, Exit
from s3claim.cli.demo._bucket import demo_bucket
from s3claim.cli.demo._closing import next_steps, render_closing
from s3claim.cli.demo._scenario import (
    QUESTION,
    TENANT,
    counsel_runner,
    counsel_script,
    run_scenario,
)
from s3claim.errors import ClaimCheckError
from s3claim.events import Event
from s3claim.handles import HandleKey
from s3claim.memory import MemoryClaimCheckStore
from s3claim.messages import AssistantMessage, Message, conversation_chars
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
    stops (waits to be killed) when asked for `KILL_AT_TURN`."""

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
            sys.stdin.readline()  # the parent SIGKILLs this process here
            raise SystemExit(1)  # only if the parent went away instead
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


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """An instance; its stdin is held open so that it can wait on it (and is killed there)."""
    return subprocess.Popen(  # noqa: S603 - this interpreter, our own module, our arguments
        [sys.executable, "-m", "s3claim.cli.demo._failover", *args],
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _reports(process: subprocess.Popen[str], deadline: float) -> Iterator[dict[str, Any]]:
    """The child's JSON lines as they come, bounded in time."""
    assert process.stdout is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise CliError("an instance said nothing for a minute", Exit.UNAVAILABLE)
        ready, _, _ = select.select([process.stdout], [], [], left)
        if not ready:
            continue
        line = process.stdout.readline()
        if not line:
            return
        yield loads(line)  # another process wrote it: nesting bounded


def _failed(process: subprocess.Popen[str], reports: list[dict[str, Any]]) -> CliError:
    errors = [r["error"] for r in reports if "error" in r]
    stderr = process.stderr.read().strip().splitlines() if process.stderr else []
    detail = errors[0] if errors else (stderr[-1] if stderr else f"exit {process.returncode}")
    return CliError(f"an instance failed: {detail}", Exit.UNAVAILABLE)


def _instance_run(
    env: dict[str, str], *args: str, kill_when: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Start an instance, collect its reports; SIGKILL it at the first report holding
    `kill_when`. Returns the reports and the exit status (negative: the signal)."""
    reports: list[dict[str, Any]] = []
    with _spawn(env, *args) as process:
        try:
            for report in _reports(process, time.monotonic() + CHILD_SECONDS):
                reports.append(report)
                if kill_when is not None and kill_when in report:
                    os.kill(process.pid, signal.SIGKILL)
                    break
            process.wait(timeout=CHILD_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        killed = kill_when is not None and any(kill_when in r for r in reports)
        if process.returncode != 0 and not killed:
            raise _failed(process, reports)
    return reports, process.returncode


def failover_demo(
    *,
    bucket: str | None,
    endpoint_url: str | None,
    prefix: str | None,
    region: str | None,
    as_json: bool,
) -> None:
    started = time.perf_counter()
    run_id = f"failover-{uuid.uuid4().hex[:8]}"
    scope = Scope(TENANT, run_id)
    settings = load_settings(bucket=bucket, endpoint_url=endpoint_url, prefix=prefix, region=region)
    with demo_bucket(settings) as setup:
        first, code = _instance_run(setup.env, "first", run_id, kill_when="waiting")
        journal = open_journal(setup.target)
        recorded = journal.load(scope).record
        second, _ = _instance_run(setup.env, "resume", run_id)
        if not second or not second[-1].get("done"):
            raise CliError("the second instance did not finish the run", Exit.UNAVAILABLE)
        final = journal.load(scope).record
        key = HandleKey(setup.env["S3CLAIM_HANDLE_KEY"])
        if not setup.embedded:
            open_store(setup.target).forget(tenant=TENANT, run=run_id)
    store = MemoryClaimCheckStore(handle_key=key)
    expected = run_scenario(store, baseline=False, run_id=run_id).claimed
    data = {
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
        "next": [{"command": c, "shows": what} for c, what in next_steps(failover=True)],
    }
    if as_json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    _render(Console(highlight=False), data, final.events)


def _render(console: Console, data: dict[str, Any], events: Sequence[Event]) -> None:
    first, second, between = data["first"], data["second"], data["journal_after_kill"]
    console.print(
        Text.assemble(
            ("s3claim demo --failover", "bold"),
            ": the counsel run outlives the process that started it.\n",
            f"Store: {data['store']}\nBucket: {data['bucket']}\n",
            f"Run tag: {data['run_tag']}\nQuestion: {QUESTION}",
        )
    )
    console.print(Rule(f"First instance (pid {first['pid']})"))
    for turn in first["turns"]:
        console.print(f"model call {turn['turn']}: {turn['prefill_chars']:,} characters sent")
    console.print(
        Text(
            f"SIGKILLed while asking for model call {first['killed_asking_for_turn']} "
            f"(exit by signal {first['signal']}).",
            style="bold red",
        )
    )
    console.print(
        f"In the bucket: its journal, {between['status']}, {between['turns']} turns and "
        f"{between['messages']} messages recorded."
    )
    console.print(Rule(f"Second instance (pid {second['pid']}), a fresh process"))
    resumed, before = second["resumed"], second["before_model"]
    reran = ", ".join(resumed["rerun_tools"]) or "none"
    console.print(
        f"run_resumed: {resumed['turns']} turns and {resumed['messages']} messages restored; "
        f"re-ran (their results were not recorded): {reran}"
    )
    journal, tools = sum(before["journal"].values()), sum(before["tools"].values())
    console.print(
        Text.assemble(
            "Requests before its first model call: ",
            (f"{journal + tools}", "bold green"),
            f" — {journal} to read the run ({_ops(before['journal'])}), "
            f"{tools} for the tool calls it re-ran ({_ops(before['tools'])}).",
        )
    )
    for turn in second["turns"]:
        console.print(f"model call {turn['turn']}: {turn['prefill_chars']:,} characters sent")
    console.print(Rule("The whole run, as recorded"))
    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("event")
    table.add_column("details", overflow="fold")
    for event in events:
        fields = event.model_dump(exclude={"kind"})
        table.add_row(event.kind, "  ".join(f"{k}={_plain(v)}" for k, v in fields.items()))
    console.print(table)
    console.print(Rule("Answer"))
    console.print(Text(data["answer"] or "(no answer)"))
    same = data["same_answer"] and data["same_messages"]
    verdict = (
        f"Same answer and same {data['messages']} messages as an uninterrupted run."
        if same
        else "DIFFERENT from an uninterrupted run."
    )
    console.print(Text(verdict, style="bold green" if same else "bold red"))
    console.print(Text(f"\nFinished in {data['seconds']:.2f} s.", style="dim"))
    steps = [(step["command"], step["shows"]) for step in data["next"]]
    render_closing(console, data["claims_lived"], steps)


def _plain(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def _ops(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} × {op}" for op, n in sorted(counts.items())) or "none"


if __name__ == "__main__":
    sys.exit(_instance(sys.argv[1], sys.argv[2]))
