"""Runs that survive their instance: SIGKILL at every step boundary, two resumers racing,
faults while recording, and erasure, with the counsel agent on an S3 run journal.

The killed and racing instances are processes (`_journal_child`); the bucket is versioned,
so every PutObject that landed is a version of the journal object, and "no step recorded
twice" is read from the bucket itself: one version per turn, turns 1, 2, 3, 4 in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from s3claim import (
    AssistantMessage,
    HandleKey,
    MemoryClaimCheckStore,
    Message,
    RetryPolicy,
    RunNotFoundError,
    RunResult,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
)
from s3claim.cli.demo import (
    QUESTION,
    TENANT,
    counsel_runner,
    counsel_script,
    run_scenario,
)
from s3claim.events import RunResumed
from s3claim.journal import RunRecord
from tests._s3 import moto_client
from tests.reliability._support import FaultInjector

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the-key-every-instance-shares"
CHILD_SECONDS = 60
NO_WAIT = RetryPolicy(initial_wait=0, max_wait=0)


class Bucket:
    """A versioned bucket on moto, its settings in the environment every child inherits."""

    def __init__(self, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.client = moto_client(endpoint)
        self.name = f"journal-failover-{uuid.uuid4().hex}"
        self.client.create_bucket(Bucket=self.name)
        self.client.put_bucket_versioning(
            Bucket=self.name, VersioningConfiguration={"Status": "Enabled"}
        )
        for name, value in {
            "S3CLAIM_BUCKET": self.name,
            "S3CLAIM_HANDLE_KEY": SECRET,
            "S3CLAIM_ENDPOINT_URL": endpoint,
            "S3CLAIM_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        self.key = HandleKey(SECRET)

    def journal(self, client: Any = None) -> S3RunJournal:
        return S3RunJournal(
            self.name, handle_key=SECRET, client=client or self.client, retry=NO_WAIT
        )

    def store(self, client: Any = None) -> S3ClaimCheckStore:
        return S3ClaimCheckStore(
            self.name, handle_key=SECRET, client=client or self.client, retry=NO_WAIT
        )

    def recorded_turns(self, run_id: str) -> list[int]:
        """The turn of every version of the run's journal object (each landed PutObject),
        sorted: a step recorded twice shows as a repeated turn."""
        key = f"claims/{self.key.tenant_tag(TENANT)}/{self.key.run_tag(Scope(TENANT, run_id))}/"
        listing = self.client.list_object_versions(Bucket=self.name, Prefix=key + "journal")
        turns = []
        for version in listing.get("Versions", []):
            body = self.client.get_object(
                Bucket=self.name, Key=key + "journal", VersionId=version["VersionId"]
            )["Body"].read()
            turns.append(RunRecord.model_validate(json.loads(body)["record"]).turns)
        return sorted(turns)


@pytest.fixture
def bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    return Bucket(moto_endpoint, monkeypatch)


def uninterrupted(run_id: str) -> RunResult:
    """The same run, start to end in this process, claims in memory under the same key."""
    store = MemoryClaimCheckStore(handle_key=HandleKey(SECRET))
    return run_scenario(store, baseline=False, run_id=run_id).claimed


def child(*args: str, stdin: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._journal_child", *args],
        cwd=ROOT,
        env=dict(os.environ),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=CHILD_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, err


def resume_here(bucket: Bucket, run_id: str) -> RunResult:
    """Another instance: a fresh store, journal and provider in this process."""
    client = moto_client(os.environ["S3CLAIM_ENDPOINT_URL"])
    runner = counsel_runner(bucket.store(client), journal=bucket.journal(client))
    return runner.resume(tenant=TENANT, run_id=run_id)


RERUN = {1: ("read_contract",), 2: ("fetch_result",), 3: ("fetch_result",)}
"""The tools of the last recorded reply: what a resume runs again."""
BOUNDARIES = [
    *(f"after-put:{n}" for n in (1, 2, 3, 4)),
    *(f"before-put:{n}" for n in (2, 3, 4)),
]


@pytest.mark.slow
@pytest.mark.parametrize("kill", BOUNDARIES)
def test_a_run_killed_at_any_step_boundary_resumes_to_the_uninterrupted_result(
    bucket: Bucket, kill: str
) -> None:
    run_id = f"run-{kill}"
    code, _, err = finish(child("run", run_id, "--kill", kill))
    assert code == -9, err
    when, n = kill.split(":")
    recorded = int(n) if when == "after-put" else int(n) - 1
    assert bucket.recorded_turns(run_id) == list(range(1, recorded + 1))

    result = resume_here(bucket, run_id)

    expected = uninterrupted(run_id)
    assert result.messages == expected.messages
    assert result.output == expected.output
    assert bucket.recorded_turns(run_id) == [1, 2, 3, 4]  # each step recorded once
    resumed = [e for e in result.events if isinstance(e, RunResumed)]
    if recorded == 4:  # finished before the kill: the record itself, no model call
        assert resumed == []
        assert result.events == expected.events
    else:
        assert resumed[0].turns == recorded
        assert resumed[0].rerun_tools == RERUN[recorded]
        assert [e.kind for e in result.events if e.kind != "run_resumed"] == [
            e.kind for e in expected.events
        ]


@pytest.mark.slow
def test_a_run_killed_before_its_first_record_is_not_found_and_runs_afresh(
    bucket: Bucket,
) -> None:
    code, _, err = finish(child("run", "early", "--kill", "before-put:1"))
    assert code == -9, err

    with pytest.raises(RunNotFoundError):
        resume_here(bucket, "early")

    code, out, err = finish(child("run", "early"))  # the id is free: nothing was recorded
    assert code == 0, err
    assert json.loads(out)["output"] == uninterrupted("early").output


def _lines(process: subprocess.Popen[str], deadline: float) -> Iterator[str]:
    assert process.stdout is not None
    while True:
        left = deadline - time.monotonic()
        assert left > 0, "the child said nothing in time"
        ready, _, _ = select.select([process.stdout], [], [], left)
        if ready:
            yield process.stdout.readline()


@pytest.mark.slow
def test_of_two_instances_resuming_one_run_one_finishes_and_the_other_conflicts(
    bucket: Bucket,
) -> None:
    run_id = "raced"
    code, _, err = finish(child("run", run_id, "--kill", "after-put:2"))
    assert code == -9, err
    first = child("resume", run_id, "--hold", stdin=True)
    second = child("resume", run_id, "--hold", stdin=True)
    try:
        deadline = time.monotonic() + CHILD_SECONDS
        for process in (first, second):  # both loaded turn 2 and asked the model
            assert json.loads(next(_lines(process, deadline))) == {"ready": 6}
        assert first.stdin is not None and second.stdin is not None
        first.stdin.write("go\n")
        first.stdin.flush()
        code, out, err = finish(first)
        assert code == 0, err
        second.stdin.write("go\n")
        second.stdin.flush()
        lost, lost_out, lost_err = finish(second)
    finally:
        for process in (first, second):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    assert lost == 3, lost_err
    assert json.loads(lost_out) == {"error": "RunConflictError"}
    expected = uninterrupted(run_id)
    assert json.loads(out)["output"] == expected.output
    entry = bucket.journal().load(Scope(TENANT, run_id))  # intact: the winner's run
    assert entry.record.finished and entry.record.messages == expected.messages
    assert bucket.recorded_turns(run_id) == [1, 2, 3, 4]


class Stop(BaseException):
    """The instance dying, in-process: nothing in the loop catches it."""


class StopAt:
    """The counsel script, dying when asked for model call `turn`."""

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.inner = counsel_script()

    def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> Any:
        if sum(isinstance(m, AssistantMessage) for m in messages) + 1 == self.turn:
            raise Stop
        return self.inner.complete(messages, tools)


def test_faults_while_recording_lose_nothing_and_duplicate_nothing(bucket: Bucket) -> None:
    """30% of the journal's HTTP attempts fail, some after S3 stored the write; runs stop
    at every turn and are resumed, all on the faulty client."""
    journal_client = moto_client(os.environ["S3CLAIM_ENDPOINT_URL"])
    faults = FaultInjector(journal_client, seed=11, rate=0.3)
    retry = RetryPolicy(attempts=8, initial_wait=0, max_wait=0)
    journal = S3RunJournal(bucket.name, handle_key=SECRET, client=journal_client, retry=retry)
    store = bucket.store()  # the claims are not under test here: no faults on their client

    for n in range(12):
        run_id = f"faulty-{n}"
        with pytest.raises(Stop):
            counsel_runner(store, journal=journal, provider=StopAt(2 + n % 3)).run(
                QUESTION, tenant=TENANT, run_id=run_id
            )
        result = counsel_runner(store, journal=journal).resume(tenant=TENANT, run_id=run_id)

        expected = uninterrupted(run_id)
        assert result.messages == expected.messages
        assert journal.load(Scope(TENANT, run_id)).record.messages == expected.messages
        assert bucket.recorded_turns(run_id) == [1, 2, 3, 4]  # nothing written twice
    landed = sum(n for k, n in faults.injected.items() if k.startswith("PutObject:landed"))
    assert sum(faults.injected.values()) >= 20 and landed >= 2, faults.injected  # not vacuous


@pytest.mark.slow
def test_forget_removes_the_journal_and_a_fresh_process_finds_no_run(bucket: Bucket) -> None:
    code, out, err = finish(child("run", "doomed"))
    assert code == 0, err
    assert bucket.journal().exists(Scope(TENANT, "doomed"))

    assert bucket.store().forget(tenant=TENANT) == 1  # the one claim; the journal too

    code, out, err = finish(child("resume", "doomed"))
    assert code == 4, err
    assert json.loads(out) == {"error": "RunNotFoundError"}
    assert bucket.client.list_object_versions(Bucket=bucket.name).get("Versions", []) == []
