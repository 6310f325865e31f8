"""What `forget` reaches, store by store and journal by journal (issue 21, finding 5).

docs/security.md ("Erasure") has the table; each row is a test here. The finding: a memory
store's `forget` left its run journal's records (heads and every window the model read).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from s3claim import (
    AgentRunner,
    AssistantMessage,
    ClaimCheck,
    ClaimUnavailableError,
    ManualClock,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    RunJournal,
    RunNotFoundError,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
    ThreadedAsyncStore,
    ToolCall,
    claim_check_tool,
    tool,
)
from s3claim.claimcheck import ClaimCheckStore

BIG = "Clause. " * 2_000


@tool
def read_contract() -> str:
    """Return a long contract."""
    return BIG


def _record(store: ClaimCheckStore, journal: RunJournal, scope: Scope) -> str:
    """Run an agent that checks a result in and reads a window: a claim and a journal."""

    def fetch_it(messages: Any) -> AssistantMessage:
        handle = messages[-1].content.split("handle='")[1].split("'")[0]
        return AssistantMessage(
            tool_calls=(ToolCall(id="2", name="fetch_result", arguments={"handle": handle}),)
        )

    runner = AgentRunner(
        provider=ScriptedProvider(
            [
                AssistantMessage(
                    tool_calls=(ToolCall(id="1", name="read_contract", arguments={}),)
                ),
                fetch_it,
                AssistantMessage(content="done"),
            ]
        ),
        tools=[read_contract, claim_check_tool(store)],
        claim_check=ClaimCheck(store),
        journal=journal,
    )
    result = runner.run("read it", tenant=scope.tenant, run_id=scope.run)
    return str(result.messages[2].content).split("handle='")[1].split("'")[0]


def _gone(store: ClaimCheckStore, journal: RunJournal, scope: Scope, handle: str) -> bool:
    with pytest.raises(RunNotFoundError):
        journal.load(scope)
    with pytest.raises(ClaimUnavailableError):
        store.fetch(scope, handle)
    return not journal.exists(scope)


# -- memory ------------------------------------------------------------------------------------


def test_a_memory_store_erases_the_journal_bound_to_it() -> None:
    clock = ManualClock()
    store = MemoryClaimCheckStore(clock=clock)
    journal = MemoryRunJournal(store=store)  # the store's key and clock
    mine, other_run, other = Scope("acme", "r-1"), Scope("acme", "r-2"), Scope("globex", "r-1")
    handles = {s: _record(store, journal, s) for s in (mine, other_run, other)}

    assert store.forget(tenant="acme", run="r-1") == 1  # the count is of claims
    assert _gone(store, journal, mine, handles[mine])
    assert journal.load(other_run).record.turns == 3  # the same tenant's other run: kept
    assert store.forget(tenant="acme") == 1
    assert _gone(store, journal, other_run, handles[other_run])
    assert journal.load(other).record.turns == 3  # another tenant: kept
    assert [info.run_tag for info in journal.runs(tenant="acme")] == []


def test_forgetting_through_the_journal_erases_the_bound_store_too() -> None:
    store = MemoryClaimCheckStore()
    journal = MemoryRunJournal(store=store)
    scope = Scope("acme", "r-1")
    handle = _record(store, journal, scope)
    assert journal.forget(tenant="acme") == 1  # the count is of records
    assert _gone(store, journal, scope, handle)


def test_forgetting_through_one_journal_erases_every_journal_bound_to_the_store() -> None:
    store = MemoryClaimCheckStore()
    first, second = MemoryRunJournal(store=store), MemoryRunJournal(store=store)
    scope = Scope("acme", "r-1")
    handle = _record(store, first, scope)
    _record(store, second, scope)
    assert first.forget(tenant="acme") == 1  # the count is of this journal's records
    assert _gone(store, first, scope, handle)
    assert not second.exists(scope)


def test_an_unbound_memory_journal_keeps_its_records_as_documented() -> None:
    store = MemoryClaimCheckStore()
    journal = MemoryRunJournal()  # bound to nothing: erased only by its own forget
    scope = Scope("acme", "r-1")
    _record(store, journal, scope)
    store.forget(tenant="acme")
    assert journal.exists(scope)
    assert journal.forget(tenant="acme") == 1
    assert not journal.exists(scope)


def test_a_journal_takes_its_store_s_key_and_clock_unless_given_its_own() -> None:
    clock = ManualClock()
    store = MemoryClaimCheckStore(clock=clock)
    journal = MemoryRunJournal(store=store, ttl_seconds=60)
    scope = Scope("acme", "r-1")
    _record(store, journal, scope)
    clock.advance(61)
    with pytest.raises(RunNotFoundError):
        journal.load(scope)  # the store's clock
    with pytest.raises(TypeError, match="MemoryClaimCheckStore"):
        MemoryRunJournal(store=object())  # type: ignore[arg-type]


def test_the_threaded_async_face_forgets_what_its_store_forgets() -> None:
    store = MemoryClaimCheckStore()
    journal = MemoryRunJournal(store=store)
    scope = Scope("acme", "r-1")
    handle = _record(store, journal, scope)
    assert asyncio.run(ThreadedAsyncStore(store).forget(tenant="acme")) == 1
    assert _gone(store, journal, scope, handle)


# -- S3 ---------------------------------------------------------------------------------------


def test_an_s3_store_erases_the_journals_under_its_bucket_and_prefix_only(
    moto_endpoint: str,
) -> None:
    from tests._s3 import moto_client

    client = moto_client(moto_endpoint)
    bucket = f"erase-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=bucket)
    key = "an erasure test key, 16 bytes+"
    store = S3ClaimCheckStore(bucket, handle_key=key, client=client)
    journal = S3RunJournal(bucket, handle_key=key, client=client)
    elsewhere = S3RunJournal(bucket, handle_key=key, client=client, prefix="other/")
    scope = Scope("acme", "r-1")
    handle = _record(store, journal, scope)
    _record(store, elsewhere, Scope("acme", "r-2"))

    assert store.forget(tenant="acme") == 2  # both runs' claims; the count is of claims
    assert _gone(store, journal, scope, handle)
    assert elsewhere.exists(Scope("acme", "r-2"))  # another prefix: not the store's to erase
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys and all(k.startswith("other/") for k in keys)
