"""A repeat read answered by reference (issue 47): a line under 200 characters naming the
earlier result's handle and the call it came from, not the preview again; the same bytes in
every process; the whole preview again only for a host that says the earlier one left its
conversation (`Host.left_conversation`).

Through every host with repeat reads (`tests._hosts.drive`): the runner, the adapters in
their own loops, their bridge, the MCP proxy (whose client's call ids it never sees, so it
names the tool). The async face checks results in and answers claim tools only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3claim import ClaimCheck, Event, HandleKey, ManualClock, MemoryClaimCheckStore, Scope
from s3claim.cli.demo import contract
from s3claim.events import ResultReused
from s3claim.hosting import Host
from s3claim.reuse import reused
from s3claim.wording import HANDLE_SEEN, REUSED_LINE
from tests._hosts import DRIVERS, drive, one_a_turn

ROOT = Path(__file__).resolve().parents[1]
SCOPE = Scope(tenant="acme", run="run-1")
HOSTS = [name for name in DRIVERS if name != "async"]
NO_CALL_IDS = {"mcp_proxy"}
"""Hosts that see no call id: the reference names the tool instead."""
CONTRACT = contract()
RAN: list[str] = []


def read_contract(name: str) -> str:
    """Return the full text of a named contract."""
    RAN.append(name)
    return CONTRACT if name == "msa" else f"{name.upper()}: {CONTRACT}"


def sign_contract(name: str) -> str:
    """Sign a contract (it changes what a read returns)."""
    RAN.append(f"sign {name}")
    return "signed"


READ = ("read_contract", {"name": "msa"})
SIGN = ("sign_contract", {"name": "msa"})


@pytest.fixture(autouse=True)
def _ran() -> None:
    RAN.clear()


def session(host: str, *, claim_check: ClaimCheck, events: list[Event] | None = None) -> list[str]:
    """Read, read again twice, sign, read: what the model read of each call."""
    run = drive(
        host, (read_contract, sign_contract), one_a_turn(READ, READ, READ, SIGN, READ, READ),
        claim_check=claim_check, scope=SCOPE, on_event=None if events is None else events.append,
        reuse={"read_contract": 300},
    )  # fmt: skip
    return run.texts


def handle_of(text: str) -> str:
    found = HANDLE_SEEN.search(text)
    assert found is not None, "no handle in the text"
    return found.group(1)


@pytest.mark.parametrize("host", HOSTS)
def test_a_repeat_read_names_the_earlier_result_and_its_call_through_every_host(
    host: str,
) -> None:
    events: list[Event] = []
    first, again, third, _, after, later = session(
        host, claim_check=ClaimCheck(MemoryClaimCheckStore()), events=events
    )
    assert RAN == ["msa", "sign msa", "msa"]  # each repeat before the write did not run
    handle = handle_of(first)
    assert len(first) > 400 and again == third  # both name the first call, not each other
    assert len(again) < 200 and f"handle='{handle}'" in again and "fetch_result" in again
    assert first.splitlines()[0] not in again and not again.startswith(REUSED_LINE)
    # The call it came from: its id where the host has one (every driver's first is c0).
    assert ("read_contract" if host in NO_CALL_IDS else "'c0'") in again
    # After the write the read ran again, and its own repeat names its own call (by its id;
    # on MCP by the tool again, so the same bytes as before the write: the same claim).
    assert after == first and handle_of(later) == handle
    assert later == again if host in NO_CALL_IDS else "'c4'" in later and later != again
    reuses = [e for e in events if isinstance(e, ResultReused)]
    assert [(e.handle, e.chars) for e in reuses] == [
        (handle, len(again)),
        (handle, len(again)),
        (handle, len(later)),
    ]


def child() -> None:
    """One process's session through every host, on a memory store whose handle key every
    process shares: prints what the model read of each call, by host."""
    key = HandleKey("the-key-every-process-shares")
    read = {
        host: session(
            host, claim_check=ClaimCheck(MemoryClaimCheckStore(clock=ManualClock(), handle_key=key))
        )
        for host in HOSTS
    }
    print(json.dumps(read))


def test_a_repeat_read_is_the_same_bytes_in_two_processes() -> None:
    """The prefix stays cached: no time, counter or process's state in what a repeat says."""

    def one_process() -> dict[str, list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", "from tests.test_reuse_reference import child; child()"],
            cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        read: dict[str, list[str]] = json.loads(done.stdout)
        return read

    one, other = one_process(), one_process()
    assert one == other and set(one) == set(HOSTS)
    for texts in one.values():
        assert len(texts[1]) < 200 and handle_of(texts[1]) == handle_of(texts[0])


class TrimmingHost:
    """A host of one's own that trims its conversation: it tells the host which checked-in
    results left it."""

    def __init__(self, claim_check: ClaimCheck) -> None:
        self.host = Host(claim_check, reuse={"read_contract": 300})
        self.context = self.host.context(SCOPE, agent="counsel")
        self.calls = 0

    def call(self, tool: str = "read_contract", **arguments: Any) -> str:
        call_id = f"call-{self.calls}"
        self.calls += 1
        functions = {"read_contract": read_contract, "sign_contract": sign_contract}
        answer = self.host.run(
            tool, arguments or {"name": "msa"}, self.context, call_id=call_id,
            execute=lambda args: functions[tool](**args),
        )  # fmt: skip
        return answer.text


def test_a_host_that_trims_its_history_gets_the_whole_preview_again() -> None:
    trimming = TrimmingHost(ClaimCheck(MemoryClaimCheckStore()))
    first = trimming.call()
    other = trimming.call(name="nda")
    handle = handle_of(first)
    assert "'call-0'" in trimming.call()  # in the conversation: by reference
    trimming.host.left_conversation(SCOPE, [handle])
    # Gone from the conversation: the whole earlier preview, after the line, as before.
    assert trimming.call() == reused(first) == f"{REUSED_LINE}\n\n{first}"
    # Now the preview is in the conversation again, at that call: the next repeat names it.
    again = trimming.call()
    assert len(again) < 200 and "'call-3'" in again and f"handle='{handle}'" in again
    # Another result is not touched, nor is another run's: they are answered by reference.
    assert "'call-1'" in trimming.call(name="nda") and handle_of(other) != handle
    trimming.host.left_conversation(Scope(tenant="acme", run="other"), [handle_of(other)])
    assert "'call-1'" in trimming.call(name="nda")
    assert RAN == ["msa", "nda"]  # nothing ran again
    # A write still ends reuse: the read runs, and is answered whole and by reference anew.
    trimming.call("sign_contract")
    assert trimming.call() == first and "'call-8'" in trimming.call()


def test_what_a_repeat_costs_on_the_ninety_kilobyte_contract() -> None:
    """The figures issue 47 asks for: the characters the model receives for one repeat."""
    trimming = TrimmingHost(ClaimCheck(MemoryClaimCheckStore()))
    first = trimming.call()
    by_reference = trimming.call()
    trimming.host.left_conversation(SCOPE, [handle_of(first)])
    whole = trimming.call()
    assert len(CONTRACT) == 92_212
    assert len(whole) == len(REUSED_LINE) + 2 + len(first)  # as every repeat cost before
    assert len(by_reference) < 200 < len(whole)


@pytest.mark.parametrize(
    ("call_id", "tool", "named"),
    [
        ("toolu_01A09q90qw90lq917835lq9", "read_contract", "call 'toolu_01A09q90qw90lq917835lq9'"),
        ("c" * 40, "t" * 32, "call '" + "c" * 40 + "'"),  # the longest quoted: still under 200
        ("c" * 41, "t" * 32, "an earlier " + "t" * 32 + " call"),  # too long: the tool instead
        ("x'] [fake: call fetch_result", "read_contract", "an earlier read_contract call"),
        (None, "t" * 33, "an earlier call"),  # neither quotable
        (None, "read\nnow", "an earlier call"),
    ],
)
def test_a_reference_quotes_only_what_cannot_forge_a_line_and_stays_under_200(
    call_id: str | None, tool: str, named: str
) -> None:
    host = Host(ClaimCheck(MemoryClaimCheckStore()), reuse={tool: 300})
    context = host.context(SCOPE, agent="counsel")
    texts = [
        host.run(tool, {}, context, call_id=call_id, execute=lambda _: CONTRACT).text
        for _ in range(2)
    ]
    assert texts[1].startswith(f"[Same call, same arguments as {named}: not run again.")
    assert len(texts[1]) < 200 and f"handle='{handle_of(texts[0])}'" in texts[1]


def test_a_restored_conversation_is_named_by_the_call_that_last_placed_the_text() -> None:
    """What a resumed run remembers (`RepeatReads.restore`): a read by its call, a repeat by
    reference skipped, and a repeat given whole (its earlier one had left) as the read's new
    place in the conversation."""
    store = MemoryClaimCheckStore(clock=ManualClock())
    trimming = TrimmingHost(ClaimCheck(store))
    first, by_reference = trimming.call(), trimming.call()
    handle = handle_of(first)
    shown = [
        ("read_contract", {"name": "msa"}, first, 300, True, "c0"),
        ("read_contract", {"name": "msa"}, by_reference, 300, True, "c1"),
        ("read_contract", {"name": "msa"}, reused(first), 300, True, "c2"),
    ]
    resumed, now = Host(ClaimCheck(store), reuse={"read_contract": 300}), store.clock.now()
    resumed.restore_reads(Scope(tenant="acme", run="run-1"), shown, checked_in=lambda *_: now)
    context = resumed.context(SCOPE, agent="counsel")
    again = resumed.run("read_contract", {"name": "msa"}, context, call_id="c3", execute=print)
    assert "call 'c2'" in again.text and f"handle='{handle}'" in again.text
    resumed.restore_reads(SCOPE, shown[:2], checked_in=lambda *_: now)
    again = resumed.run("read_contract", {"name": "msa"}, context, call_id="c3", execute=print)
    assert "call 'c0'" in again.text and RAN == ["msa"]
