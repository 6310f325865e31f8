"""The operator's view of run journals: `s3claim runs`, `forget`, and `demo --failover`."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import boto3
import pytest
from typer.testing import CliRunner

from s3claim import HandleKey, S3ClaimCheckStore, S3RunJournal, Scope
from s3claim.cli import app
from s3claim.s3._provision import provision_bucket
from tests.journal._records import record

runner = CliRunner()
SECRET = "k" * 32
CANARY = f"CANARY-{uuid.uuid4().hex}"


@pytest.fixture
def bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    client = boto3.client("s3", endpoint_url=moto_endpoint)
    name = f"cli-runs-{uuid.uuid4().hex}"
    provision_bucket(client, name, prefix="claims/", day_classes=(1, 7, 30))
    monkeypatch.setenv("S3CLAIM_BUCKET", name)
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", SECRET)
    return client, name


def test_runs_lists_each_runs_tag_status_turns_and_last_update_never_content(
    bucket: tuple[Any, str],
) -> None:
    client, name = bucket
    journal = S3RunJournal.from_settings()
    first = journal.save(Scope("acme", "r1"), record(1, canary=CANARY), replaces=None)
    journal.save(Scope("acme", "r1"), record(3, canary=CANARY, status="answered", output="ok"),
                 replaces=first)  # fmt: skip
    journal.save(Scope("acme", "r2"), record(2, canary=CANARY), replaces=None)
    journal.save(Scope("globex", "r3"), record(1), replaces=None)
    S3ClaimCheckStore.from_settings().put(Scope("acme", "r1"), CANARY * 10, ttl_seconds=60)
    key = HandleKey(SECRET)
    damaged = f"claims/{key.tenant_tag('acme')}/{key.run_tag(Scope('acme', 'r4'))}/journal"
    client.put_object(Bucket=name, Key=damaged, Body=CANARY.encode())

    listed = runner.invoke(app, ["runs", "--tenant", "acme", "--json"])
    table = runner.invoke(app, ["runs", "--tenant", "acme"], env={"COLUMNS": "200"})

    assert listed.exit_code == 0, listed.output
    rows = {r["run_tag"]: r for r in map(json.loads, listed.stdout.splitlines())}
    tag = key.run_tag
    assert {t: (r["status"], r["turns"]) for t, r in rows.items()} == {
        tag(Scope("acme", "r1")): ("answered", 3),
        tag(Scope("acme", "r2")): ("running", 2),
        tag(Scope("acme", "r4")): ("unreadable", 0),
    }
    assert not rows[tag(Scope("acme", "r1"))]["expired"]
    assert table.exit_code == 0, table.output
    assert "3 run(s) of tenant 'acme'" in table.stdout
    assert tag(Scope("acme", "r2"))[:12] in table.stdout and "answered" in table.stdout
    assert CANARY not in listed.output + table.output


def test_runs_by_id_derives_each_tag_and_shows_the_run_under_its_id(
    bucket: tuple[Any, str], tmp_path: Any
) -> None:
    journal = S3RunJournal.from_settings()
    for run, turns in (("r-42", 2), ("r-7", 5), ("r-8", 1)):
        journal.save(Scope("acme", run), record(turns, canary=CANARY), replaces=None)
    journal.save(Scope("globex", "r-42"), record(9), replaces=None)
    tag = HandleKey(SECRET).run_tag

    one = runner.invoke(app, ["runs", "--tenant", "acme", "--run", "r-42", "--json"])
    assert one.exit_code == 0, one.output
    assert [json.loads(line) for line in one.stdout.splitlines()] == [
        {
            "run": "r-42",
            "run_tag": tag(Scope("acme", "r-42")),
            "status": "running",
            "turns": 2,
            "updated_at": json.loads(one.stdout)["updated_at"],
            "expires_at": json.loads(one.stdout)["expires_at"],
            "expired": False,
        }
    ]
    assert one.stderr == ""

    ids = tmp_path / "ids.txt"
    ids.write_text("r-7\n\n  r-8  \nr-404\n")
    table = runner.invoke(
        app, ["runs", "--tenant", "acme", "--run", "r-42", "--runs-from", str(ids)]
    )
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0] == "3 run(s) of tenant 'acme'"
    assert lines[1].split()[:3] == ["run", "run", "tag"]
    shown = {line.split()[0]: line.split()[1:4] for line in lines[2:]}
    assert shown == {
        "r-42": [tag(Scope("acme", "r-42")), "running", "2"],
        "r-7": [tag(Scope("acme", "r-7")), "running", "5"],
        "r-8": [tag(Scope("acme", "r-8")), "running", "1"],
    }
    assert table.stderr == "no recorded run 'r-404' of tenant 'acme'\n"
    from_stdin = runner.invoke(
        app, ["runs", "--tenant", "acme", "--runs-from", "-", "--json"], input="r-8\n"
    )
    assert [json.loads(r)["run"] for r in from_stdin.stdout.splitlines()] == ["r-8"]
    assert CANARY not in one.output + table.output + from_stdin.output


def test_runs_from_a_file_that_cannot_be_read_is_one_line(
    bucket: tuple[Any, str], tmp_path: Any
) -> None:
    result = runner.invoke(app, ["runs", "--tenant", "acme", "--runs-from", str(tmp_path / "no")])
    assert result.exit_code == 2
    assert result.stderr.startswith("s3claim: error: --runs-from ")
    assert result.stderr.count("\n") == 1
    bad = runner.invoke(app, ["runs", "--tenant", "acme", "--run", "x" * 1025])
    assert bad.stderr == "s3claim: error: --run: String should have at most 1024 characters\n"
    assert bad.exit_code == 2


def test_the_journal_lists_one_named_run_with_one_listing(bucket: tuple[Any, str]) -> None:
    from devkit.servers import Wire

    journal = S3RunJournal.from_settings()
    for run in ("r1", "r2", "r3"):
        journal.save(Scope("acme", run), record(1), replaces=None)
    wire = Wire.attach(journal.bucket.client)
    (info,) = journal.runs(tenant="acme", run="r2")
    assert info.run_tag == HandleKey(SECRET).run_tag(Scope("acme", "r2"))
    assert dict(wire.requests) == {"ListObjectsV2": 1, "HeadObject": 1}
    assert list(journal.runs(tenant="acme", run="nobody")) == []


def test_forget_takes_a_runs_journal_with_its_claims(bucket: tuple[Any, str]) -> None:
    client, name = bucket
    S3RunJournal.from_settings().save(Scope("acme", "r1"), record(1), replaces=None)
    S3ClaimCheckStore.from_settings().put(Scope("acme", "r1"), "claim", ttl_seconds=60)

    result = runner.invoke(app, ["forget", "--tenant", "acme", "--run", "r1", "--yes"])

    assert result.exit_code == 0, result.output
    assert result.stdout == "Removed 1 claim(s) of run 'r1' of tenant 'acme'.\n"
    assert client.list_objects_v2(Bucket=name).get("KeyCount") == 0
    assert runner.invoke(app, ["runs", "--tenant", "acme"]).stdout.count("0 run(s)") == 1


@pytest.mark.slow
def test_the_failover_demo_resumes_in_a_fresh_process_with_the_same_answer() -> None:
    result = runner.invoke(app, ["demo", "--failover", "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    first, second = data["first"], data["second"]
    assert [t["turn"] for t in first["turns"]] == [1, 2]
    assert (first["killed_asking_for_turn"], first["signal"]) == (3, 9)
    assert data["journal_after_kill"] == {"status": "running", "turns": 2, "messages": 5}
    assert len({first["pid"], second["pid"], os.getpid()}) == 3  # three processes
    assert second["resumed"]["rerun_tools"] == ["fetch_result"]
    assert second["before_model"] == {"journal": {"GetObject": 1}, "tools": {"GetObject": 1}}
    assert [t["turn"] for t in second["turns"]] == [3, 4]
    assert data["same_answer"] and data["same_messages"] and data["messages"] == 9
    assert data["answer"] == data["uninterrupted_answer"]
    assert "Zoë Müller GmbH" in data["answer"]
    kinds = [e["kind"] for e in data["events"]]
    assert kinds.count("run_resumed") == 1 and kinds.count("model_called") == 4


@pytest.mark.slow
def test_the_failover_demo_on_a_real_bucket_shows_both_halves_and_forgets_the_run(
    bucket: tuple[Any, str],
) -> None:
    client, name = bucket

    result = runner.invoke(app, ["demo", "--failover"], env={"COLUMNS": "200"})

    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"\nBucket: {name}, prefix " in out
    assert "the demo erased its run's claims before it ended" in out
    assert "Next:" in out and "demo --provider openai" in out
    assert "First instance (pid" in out and "Second instance (pid" in out
    assert "SIGKILLed while asking for model call 3" in out
    assert "its journal, running, 2 turns and 5 messages recorded" in out
    assert "Requests before its first model call: 2" in out
    assert "Same answer and same 9 messages as an uninterrupted run." in out
    assert client.list_objects_v2(Bucket=name).get("KeyCount") == 0


def test_failover_needs_s3_and_the_scripted_model() -> None:
    for args in (["--store", "memory"], ["--provider", "openai"]):
        result = runner.invoke(app, ["demo", "--failover", *args])
        assert result.exit_code == 2
        assert "--failover runs on S3 with the scripted model" in result.stderr


@pytest.mark.parametrize("drop", [None, "If-Match", "If-None-Match"])
def test_doctor_tells_whether_both_conditional_writes_a_journal_needs_are_honoured(
    moto_endpoint: str, drop: str | None
) -> None:
    from s3claim.s3._doctor import Status, _conditional_put

    client = boto3.client("s3", endpoint_url=moto_endpoint)
    name = f"doctor-{uuid.uuid4().hex}"
    client.create_bucket(Bucket=name)
    client.put_object(Bucket=name, Key="probe", Body=b"0123456789")

    def server_ignores(request: Any, **_: Any) -> None:  # as a server without the feature
        if drop in request.headers:
            del request.headers[drop]

    if drop is not None:
        client.meta.events.register("before-send.s3.PutObject", server_ignores)

    status, detail, _ = _conditional_put(client, name, "probe")

    if drop is None:
        assert status is Status.passed and "stale If-Match" in detail
    else:
        assert status is Status.warning
        assert f"{drop} is ignored" in detail and "journal cannot keep out" in detail
