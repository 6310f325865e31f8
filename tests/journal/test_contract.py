"""The run journal contract, written once and run against every journal.

Memory, S3 on moto's HTTP server, and S3 on s3rver; the cases about keeping a second writer
out run where conditional writes are honoured (memory, moto), since s3rver ignores them.
"""

from __future__ import annotations

import uuid

import pytest

from s3claim import RunConflictError, RunNotFoundError, Scope
from s3claim.wording import RUN_NOT_FOUND_MESSAGE
from tests.journal._records import record
from tests.journal.conftest import JournalRig

SCOPE = Scope(tenant="acme", run="run-1")


def test_a_saved_record_loads_back_exactly(rig: JournalRig) -> None:
    saved = record(3)
    version = rig.journal.save(SCOPE, saved, replaces=None)

    entry = rig.journal.load(SCOPE)

    assert entry.record == saved
    assert entry.version == version
    assert entry.record.unanswered() == saved.messages[-1].tool_calls  # type: ignore[union-attr]


def test_each_save_makes_a_new_version_and_load_sees_the_latest(rig: JournalRig) -> None:
    first = rig.journal.save(SCOPE, record(1), replaces=None)
    second = rig.journal.save(SCOPE, record(2), replaces=first)
    third = rig.journal.save(SCOPE, record(3, status="answered", output="done"), replaces=second)

    assert len({first, second, third}) == 3
    entry = rig.journal.load(SCOPE)
    assert (entry.version, entry.record.turns, entry.record.output) == (third, 3, "done")
    assert entry.record.finished


def test_unknown_runs_other_tenants_and_other_runs_are_not_found_alike(rig: JournalRig) -> None:
    rig.journal.save(SCOPE, record(), replaces=None)
    messages = []
    for scope in (
        Scope(tenant="acme", run="never-recorded"),
        Scope(tenant="globex", run=SCOPE.run),  # the same run id, another tenant
        Scope(tenant="acme/", run=SCOPE.run),
        Scope(tenant="acm", run="e/" + SCOPE.run),
    ):
        with pytest.raises(RunNotFoundError) as missing:
            rig.journal.load(scope)
        assert not rig.journal.exists(scope)
        messages.append(str(missing.value))
    assert set(messages) == {RUN_NOT_FOUND_MESSAGE}
    assert rig.journal.exists(SCOPE)


def test_a_run_expires_its_ttl_after_its_last_save(rig: JournalRig) -> None:
    version = rig.journal.save(SCOPE, record(1), replaces=None)
    rig.clock.advance(599)
    rig.journal.save(SCOPE, record(2), replaces=version)  # each save lives a full TTL
    rig.clock.advance(599)
    assert rig.journal.load(SCOPE).record.turns == 2

    rig.clock.advance(1)

    with pytest.raises(RunNotFoundError) as expired:
        rig.journal.load(SCOPE)
    assert str(expired.value) == RUN_NOT_FOUND_MESSAGE


def test_forget_erases_a_run_and_then_it_is_not_found(rig: JournalRig) -> None:
    other = Scope(tenant="acme", run="run-2")
    rig.journal.save(SCOPE, record(), replaces=None)
    rig.journal.save(other, record(), replaces=None)

    rig.forget(tenant="acme", run=SCOPE.run)

    with pytest.raises(RunNotFoundError):
        rig.journal.load(SCOPE)
    assert not rig.journal.exists(SCOPE)
    assert rig.journal.load(other).record.turns == 2
    rig.forget(tenant="acme")
    assert not rig.journal.exists(other)


def test_runs_lists_tags_status_turns_and_times_never_content(rig: JournalRig) -> None:
    canary = f"CANARY-{uuid.uuid4().hex}"
    started = rig.clock.now()
    first = rig.journal.save(SCOPE, record(1, canary=canary), replaces=None)
    rig.clock.advance(30)
    rig.journal.save(SCOPE, record(2, canary=canary, status="answered", output="x"), replaces=first)
    rig.journal.save(Scope("acme", "run-2"), record(1, canary=canary), replaces=None)
    rig.journal.save(Scope("globex", "run-3"), record(1), replaces=None)

    runs = {info.run_tag: info for info in rig.runs("acme")}

    assert set(runs) == {rig.key.run_tag(SCOPE), rig.key.run_tag(Scope("acme", "run-2"))}
    done = runs[rig.key.run_tag(SCOPE)]
    assert (done.status, done.turns) == ("answered", 2)
    assert done.updated_at == started + 30
    assert done.expires_at == started + 30 + 600
    assert runs[rig.key.run_tag(Scope("acme", "run-2"))].status == "running"
    assert canary not in repr(list(runs.values()))


def test_reprs_name_sizes_never_content(rig: JournalRig) -> None:
    canary = f"CANARY-{uuid.uuid4().hex}"
    rig.journal.save(SCOPE, record(2, canary=canary), replaces=None)
    entry = rig.journal.load(SCOPE)

    shown = [repr(rig.journal), repr(entry), repr(entry.record), str(entry.record)]

    assert any(canary in m.content for m in entry.record.messages if m.content)
    assert [s for s in shown if canary in s] == []
    assert "messages=5" in repr(entry.record)  # system, user, 2 replies, 1 result


# -- one writer per run -------------------------------------------------------------------


def test_a_second_create_is_a_conflict_and_overwrites_nothing(guarded: JournalRig) -> None:
    version = guarded.journal.save(SCOPE, record(1), replaces=None)

    with pytest.raises(RunConflictError, match="taken"):
        guarded.journal.save(SCOPE, record(3), replaces=None)

    entry = guarded.journal.load(SCOPE)
    assert (entry.version, entry.record.turns) == (version, 1)


def test_a_save_on_a_stale_version_is_a_conflict_and_overwrites_nothing(
    guarded: JournalRig,
) -> None:
    loaded = guarded.journal.save(SCOPE, record(1), replaces=None)
    winner = guarded.journal.save(SCOPE, record(2), replaces=loaded)  # another instance, first

    with pytest.raises(RunConflictError, match="another writer"):
        guarded.journal.save(SCOPE, record(2, canary="mine"), replaces=loaded)

    entry = guarded.journal.load(SCOPE)
    assert entry.version == winner
    assert entry.record == record(2)


def test_a_save_after_the_run_was_forgotten_is_not_found(guarded: JournalRig) -> None:
    version = guarded.journal.save(SCOPE, record(1), replaces=None)
    guarded.forget(tenant=SCOPE.tenant)

    with pytest.raises(RunNotFoundError):
        guarded.journal.save(SCOPE, record(2), replaces=version)

    assert not guarded.journal.exists(SCOPE)
