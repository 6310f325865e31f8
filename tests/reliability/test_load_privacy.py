"""Concurrent load without cross-talk or loss, and tool content on no surface but the
conversation.

tests/test_s3_store.py runs 8 threads of puts and fetches in one scope, and
tests/test_runner.py checks events, s3claim's log lines and three reprs on the memory store.
Here 32 threads of runs with their own scopes try each other's handles on both stores, and
the privacy check covers botocore's DEBUG logs, exception chains and every s3claim repr,
across faults and an outage on S3.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from s3claim import (
    AssistantMessage,
    ClaimCheck,
    ClaimCheckPolicy,
    ClaimStoreError,
    HandleKey,
    ManualClock,
    Message,
    RunConflictError,
    RunContext,
    S3RunJournal,
    Scope,
    ToolRegistry,
    claim_check_tool,
    tool,
)
from s3claim.s3 import RetryPolicy, S3ClaimSettings
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests._s3 import moto_client
from tests.reliability._support import (
    FaultInjector,
    Rig,
    call,
    calls,
    done,
    fetch_every_window,
    markers_in,
    reassemble,
    refusal,
    runner,
    tool_replies,
    tool_texts,
)
from tests.reliability.conftest import make_rig

THREADS, RUNS = 32, 3


@pytest.fixture(params=["memory", "s3"])
def load_rig(request: pytest.FixtureRequest, clock: ManualClock) -> Rig:
    endpoint = request.getfixturevalue("moto_endpoint") if request.param == "s3" else None
    return make_rig(request.param, clock, endpoint, pool=THREADS * 2)


@pytest.mark.slow
def test_32_threads_of_runs_see_only_their_own_claims_and_lose_none(load_rig: Rig) -> None:
    rig = load_rig
    published: dict[int, tuple[Scope, str, str]] = {}  # thread -> its latest claim
    lock = threading.Lock()
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)
    claims: list[tuple[Scope, str, str]] = []
    pries: list[int] = []

    def one_run(n: int, k: int, foreign: list[tuple[Scope, str, str]]) -> None:
        content = f"thread {n} run {k}: " + f"row {n}.{k} of a private table. " * 180

        @tool
        def produce() -> str:
            """Return this run's private result."""
            return content

        def read_and_pry(messages: Sequence[Message]) -> AssistantMessage:
            own = fetch_every_window(messages)
            pry = [
                ("fetch_result", f"pry{i}", {"handle": handle, "offset": 0})
                for i, (_, handle, _) in enumerate(foreign)
            ]
            return calls(*[(c.name, c.id, c.arguments) for c in own.tool_calls], *pry)

        scope = Scope(tenant=f"tenant-{n % 4}", run=f"thread-{n}-run-{k}")
        result = runner(rig.store, [produce], [call("produce"), read_and_pry, done()]).run(
            "q", tenant=scope.tenant, run_id=scope.run
        )
        replies = tool_replies(result.messages)
        (marker,) = markers_in(result.messages)
        assert reassemble(replies, marker) == content
        for i in range(len(foreign)):  # another thread's live handle, from this scope
            assert refusal(replies[f"pry{i}"]) == {
                "error": "claim_unavailable",
                "message": UNAVAILABLE_MESSAGE,
            }
        with lock:
            published[n] = (scope, marker.handle, content)
            claims.append((scope, marker.handle, content))
            pries.append(len(foreign))

    def worker(n: int) -> None:
        try:
            start.wait(timeout=30)
            for k in range(RUNS):
                with lock:
                    foreign = [c for t, c in published.items() if t != n][-2:]
                one_run(n, k, foreign)
        except BaseException as exc:  # reported to the main thread below
            errors.append(exc)

    began = time.monotonic()
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    elapsed = time.monotonic() - began
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(claims) == THREADS * RUNS
    assert sum(pries) > THREADS * RUNS  # most runs really tried others' handles
    for scope, handle, content in claims:  # nothing lost once everyone is done
        assert rig.store.fetch(scope, handle, limit=len(content)).text == content
    assert rig.claims_held() == THREADS * RUNS
    assert elapsed < 90, f"{elapsed:.1f} s"


# -- privacy ---------------------------------------------------------------------------------


def leaks(surface: str, canary: str) -> bool:
    """The canary in the text, or in the escaped UTF-32-LE/UTF-16 form a bytes repr shows."""
    return canary in surface or canary in surface.replace("\\x00", "").replace("\x00", "")


def test_tool_content_reaches_no_log_event_exception_or_repr(
    clock: ManualClock, moto_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    canary = f"CANARY-{uuid.uuid4().hex}"
    big = f"Clause. {canary} confidential words.\n" * 300
    rig = make_rig(
        "s3", clock, moto_endpoint, retry=RetryPolicy(attempts=4, initial_wait=0, max_wait=0)
    )
    faults = FaultInjector(rig.client, seed=99, rate=0.3)
    caplog.set_level(logging.DEBUG)  # every logger, botocore's wire logging included

    @tool
    def produce(part: int) -> str:
        """Return a confidential document."""
        return f"part {part} " + big

    @tool
    def corrupt() -> str:
        """Return text UTF-8 cannot carry."""
        return f"{canary} \ud800 {canary}"

    def outage_on(messages: Sequence[Message]) -> AssistantMessage:
        faults.outage = True
        handles = [m.handle for m in markers_in(messages)]
        return calls(
            ("produce", "p2", {"part": 2}),
            *[("fetch_result", f"o{i}", {"handle": h}) for i, h in enumerate(handles)],
        )

    def outage_off(messages: Sequence[Message]) -> AssistantMessage:
        faults.outage = False
        return call("produce", "p3", part=3)

    steps = [
        call("produce", "p1", part=1),
        fetch_every_window,
        calls(("corrupt", "c", {}), ("fetch_result", "bad", {"handle": canary})),
        outage_on,
        outage_off,
        fetch_every_window,
        done(),
    ]
    claim_check = ClaimCheck(rig.store, policy=ClaimCheckPolicy())
    registry = ToolRegistry((produce, corrupt, claim_check_tool(rig.store)))
    agent = runner(rig.store, [produce, corrupt], steps, max_tool_result_chars=1_000)
    result = agent.run("q", tenant="acme", run_id="r")

    surfaces: list[str] = []
    # exceptions from the store itself, chains and tracebacks included
    faults.outage = True
    scope = Scope(tenant="acme", run="r")
    for attempt in (
        lambda: rig.store.put(scope, big + "x", ttl_seconds=60),
        lambda: rig.store.fetch(scope, markers_in(result.messages)[0].handle),
    ):
        with pytest.raises(ClaimStoreError) as failed:
            attempt()
        surfaces.append("".join(traceback.format_exception(failed.value)))
    faults.outage = False
    context = RunContext(scope=scope, agent="a", emit=lambda _e: None)
    faults.rate, rate = 0.0, faults.rate  # a precondition, not under test: no faults for it
    check_in = claim_check.check_in(big, tool="produce", scope=scope)
    window = rig.store.fetch(scope, check_in.handle or "", offset=10)
    faults.rate = rate
    assert canary in window.text  # the content is really there to leak
    memory_store = make_rig("memory", clock, None).store
    memory_store.put(scope, big, ttl_seconds=60)
    settings = S3ClaimSettings(bucket=rig.bucket, handle_key="k" * 32, endpoint_url=moto_endpoint)

    records = [r for r in caplog.records if not r.name.startswith(("werkzeug", "moto"))]
    formatter = logging.Formatter()
    surfaces += [r.getMessage() for r in records]
    surfaces += [formatter.formatException(r.exc_info) for r in records if r.exc_info]
    surfaces += [e.model_dump_json() for e in result.events]
    surfaces += [
        repr(x)
        for x in (
            rig.store,
            memory_store,
            window,
            check_in,
            result,
            claim_check,
            agent,
            agent.tools,
            registry,
            settings,
            context,
            HandleKey("k" * 32),
            *registry,
        )
    ]
    assert [s[:200] for s in surfaces if leaks(s, canary)] == []
    # not vacuous: the content was in the conversation, botocore logged at DEBUG, faults hit
    assert any(canary in t for t in tool_texts(result.messages))
    assert sum(r.name.startswith("botocore") for r in records) > 100
    assert any(r.name.startswith("s3claim") for r in records)  # s3claim.events among them
    assert sum(faults.injected.values()) > 5
    assert result.output == "done"


def test_the_journal_carries_tool_content_to_no_log_event_error_repr_or_metadata(
    clock: ManualClock, moto_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    canary = f"CANARY-{uuid.uuid4().hex}"
    big = f"Clause. {canary} confidential words.\n" * 300
    rig = make_rig("s3", clock, moto_endpoint)
    journal_client = moto_client(moto_endpoint)
    faults = FaultInjector(journal_client, seed=5, rate=0.3)
    journal = S3RunJournal(
        rig.bucket,
        handle_key=rig.key,
        client=journal_client,
        clock=clock,
        retry=RetryPolicy(attempts=8, initial_wait=0, max_wait=0),
    )
    caplog.set_level(logging.DEBUG)

    @tool
    def produce() -> str:
        """Return a confidential document."""
        return big

    agent = runner(rig.store, [produce], [call("produce"), fetch_every_window, done()],
                   journal=journal)  # fmt: skip
    result = agent.run("q", tenant="acme", run_id="r")
    scope = Scope(tenant="acme", run="r")
    entry = journal.load(scope)
    key = f"claims/{rig.key.tenant_tag('acme')}/{rig.key.run_tag(scope)}/journal"
    body = rig.client.get_object(Bucket=rig.bucket, Key=key)["Body"].read().decode()
    damaged = Scope(tenant="acme", run="damaged")
    damaged_key = f"claims/{rig.key.tenant_tag('acme')}/{rig.key.run_tag(damaged)}/journal"
    rig.client.put_object(Bucket=rig.bucket, Key=damaged_key, Body=body[: len(body) // 2])

    surfaces: list[str] = []
    failures: list[tuple[type[BaseException], Any]] = [
        (RunConflictError, lambda: journal.save(scope, entry.record, replaces='"stale"')),
        (RunConflictError, lambda: agent.run("q", tenant="acme", run_id="r")),
        (ClaimStoreError, lambda: journal.load(damaged)),
        (ClaimStoreError, lambda: agent.resume(tenant="acme", run_id="damaged")),
    ]
    for kind, attempt in failures:
        with pytest.raises(kind) as failed:
            attempt()
        surfaces.append("".join(traceback.format_exception(failed.value)))
    faults.outage = True
    for attempt in (
        lambda: journal.save(scope, entry.record, replaces=entry.version),
        lambda: journal.load(scope),
    ):
        with pytest.raises(ClaimStoreError) as failed:
            attempt()
        surfaces.append("".join(traceback.format_exception(failed.value)))
    faults.outage = False

    records = [r for r in caplog.records if not r.name.startswith(("werkzeug", "moto"))]
    formatter = logging.Formatter()
    surfaces += [r.getMessage() for r in records]
    surfaces += [formatter.formatException(r.exc_info) for r in records if r.exc_info]
    surfaces += [e.model_dump_json() for e in result.events]
    surfaces.append(str(rig.client.head_object(Bucket=rig.bucket, Key=key)["Metadata"]))
    surfaces += [
        repr(x)
        for x in (journal, entry, entry.record, list(journal.runs(tenant="acme")), result, agent)
    ]
    surfaces.append(str(entry.record))
    assert [s[:200] for s in surfaces if leaks(s, canary)] == []
    # not vacuous: the head was in the recorded conversation, botocore logged, faults hit
    assert canary in body
    assert sum(r.name.startswith("botocore") for r in records) > 100
    assert sum(faults.injected.values()) >= 3
    assert result.output == "done"
