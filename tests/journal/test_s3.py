"""S3RunJournal on moto's HTTP server: where the object lives, how it is written, what a
damaged one does, and how settings, TTL and forget treat it as they treat a claim."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ConnectionClosedError
from botocore.httpsession import URLLib3Session

from devkit.servers import Wire
from s3claim import (
    AgentRunner,
    ClaimStoreError,
    ConfigurationError,
    HandleKey,
    RunConflictError,
    RunJournal,
    RunNotFoundError,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ScriptedProvider,
)
from s3claim.s3._seal import Seal
from tests.journal._records import record
from tests.journal.conftest import JournalRig

SCOPE = Scope(tenant="acme", run="run-1")
SECRET = "a-handle-key-of-enough-length"


def run_prefix(key: HandleKey, scope: Scope = SCOPE, prefix: str = "claims/") -> str:
    return f"{prefix}{key.tenant_tag(scope.tenant)}/{key.run_tag(scope)}/"


def test_the_journal_is_one_object_beside_the_runs_claims_encrypted_and_tagged(
    s3_rig: JournalRig,
) -> None:
    rig = s3_rig
    assert isinstance(rig.journal, RunJournal)
    handle = rig.store.put(SCOPE, "a claim of the same run", ttl_seconds=600)
    rig.journal.save(SCOPE, record(2), replaces=None)
    journal_key = run_prefix(rig.key) + "journal"

    keys = {o["Key"] for o in rig.client.list_objects_v2(Bucket=rig.bucket)["Contents"]}

    assert keys == {journal_key, run_prefix(rig.key) + handle.removeprefix("claim:")}
    head = rig.client.head_object(Bucket=rig.bucket, Key=journal_key)
    assert head["ServerSideEncryption"] == "AES256"
    assert head["ContentType"] == "application/json"
    meta = head["Metadata"]
    assert (meta["s3claim-journal"], meta["s3claim-status"], meta["s3claim-turns"]) == (
        "2",
        "running",
        "2",
    )
    assert len(meta["s3claim-mac"]) == 32 and len(meta["s3claim-body"]) == 64  # the seal
    assert meta["s3claim-run"] == rig.key.run_tag(SCOPE)
    tags = rig.client.get_object_tagging(Bucket=rig.bucket, Key=journal_key)["TagSet"]
    assert tags == [{"Key": "s3claim-ttl-days", "Value": "1"}]
    assert [c.handle for c in rig.store.claims(tenant="acme")] == [handle]  # not a claim


@pytest.mark.parametrize(("ttl", "days"), [(86_400, "1"), (86_401, "7"), (30 * 86_400, "30")])
def test_the_day_class_tag_covers_the_journal_ttl(
    s3: Any, bucket: str, ttl: int, days: str
) -> None:
    journal = S3RunJournal(bucket, handle_key=SECRET, client=s3, ttl_seconds=ttl)
    journal.save(SCOPE, record(1), replaces=None)
    key = run_prefix(HandleKey(SECRET)) + "journal"
    assert s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"][0]["Value"] == days


@pytest.mark.parametrize(
    ("classes", "ttl"), [((1, 7, 30), 30 * 86_400 + 1), ((1, 7), 8 * 86_400), ((2,), 3 * 86_400)]
)
def test_a_journal_ttl_longer_than_the_largest_day_class_is_refused(
    classes: tuple[int, ...], ttl: int
) -> None:
    with pytest.raises(ConfigurationError, match=rf"ttl_seconds={ttl}.*{classes[-1]} days"):
        S3RunJournal("b", handle_key=SECRET, ttl_day_classes=classes, ttl_seconds=ttl)


def test_from_settings_reads_the_stores_variables_and_refuses_what_it_refuses(
    monkeypatch: pytest.MonkeyPatch, moto_endpoint: str, s3: Any, bucket: str
) -> None:
    for name, value in {
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_HANDLE_KEY": SECRET,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_PREFIX": "runs-and-claims/",
        "S3CLAIM_TTL_DAY_CLASSES": "[2, 9]",
    }.items():
        monkeypatch.setenv(name, value)
    journal = S3RunJournal.from_settings(ttl_seconds=3 * 86_400)
    store = S3ClaimCheckStore.from_settings()
    journal.save(SCOPE, record(1), replaces=None)
    handle = store.put(SCOPE, "claim", ttl_seconds=60)

    prefix = run_prefix(HandleKey(SECRET), prefix="runs-and-claims/")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {prefix + "journal", prefix + handle.removeprefix("claim:")}
    assert s3.get_object_tagging(Bucket=bucket, Key=prefix + "journal")["TagSet"][0]["Value"] == "9"
    assert SECRET not in repr(journal)
    with pytest.raises(ConfigurationError, match=r"ttl_seconds=864000.*9 days"):
        S3RunJournal.from_settings(ttl_seconds=10 * 86_400)
    for unset in ("S3CLAIM_HANDLE_KEY", "S3CLAIM_BUCKET"):
        monkeypatch.delenv(unset)
        with pytest.raises(ConfigurationError, match=unset):
            S3RunJournal.from_settings()


def test_forget_erases_journals_with_claims_and_counts_only_claims(s3_rig: JournalRig) -> None:
    rig = s3_rig
    kept = Scope(tenant="acme", run="kept")
    for scope in (SCOPE, kept):
        rig.journal.save(scope, record(1), replaces=None)
        rig.store.put(scope, f"claim of {scope.run}", ttl_seconds=600)
    rig.journal.save(Scope(tenant="acme", run="journal only"), record(1), replaces=None)

    assert rig.store.forget(tenant="acme", run=SCOPE.run) == 1
    assert not rig.journal.exists(SCOPE)
    assert rig.journal.exists(kept)
    assert rig.store.forget(tenant="acme") == 1
    assert rig.client.list_objects_v2(Bucket=rig.bucket).get("KeyCount") == 0


# -- damaged objects --------------------------------------------------------------------------


def _valid(rig: JournalRig) -> tuple[bytes, dict[str, str]]:
    """A saved journal's body and metadata; the object itself removed."""
    rig.journal.save(SCOPE, record(2, canary="CANARY"), replaces=None)
    key = run_prefix(rig.key) + "journal"
    got = rig.client.get_object(Bucket=rig.bucket, Key=key)
    body: bytes = got["Body"].read()
    rig.client.delete_object(Bucket=rig.bucket, Key=key)
    return body, dict(got["Metadata"])


def _newer(body: bytes) -> bytes:
    value = json.loads(body)
    value["format"] = 3
    value["record"] = {"renamed": "CANARY"}
    return json.dumps(value).encode()


# Damage a writer holding the key could still do (an older or newer s3claim, a bug): sealed,
# so the checks behind the seal are what refuse it. Unsealed damage: tests/test_integrity.py.
DAMAGE = {
    "not-json": (lambda body: b"CANARY \x00\xff not json", {}, "not a JSON document"),
    "truncated": (lambda body: body[: len(body) // 2], {}, "truncated"),
    "wrong-shape": (
        lambda body: json.dumps({"format": 2, "CANARY": ["CANARY"]}).encode(),
        {},
        "not a format 2 record",
    ),
    "wrong-record": (
        lambda body: body.replace(b'"turns":2', b'"turns":"CANARY"'),
        {},
        "not a format 2 record",
    ),
    "newer-body": (_newer, {}, "format 3 by a newer s3claim"),
    "newer-metadata": (lambda body: body, {"s3claim-journal": "3"}, "format 3 by a newer"),
    # issue 21: 100,000 levels deep was a RecursionError, not a ClaimStoreError
    "too-deep": (lambda body: b"[" * 100_000 + b"]" * 100_000, {}, "nests deeper than 200"),
    "format-1": (lambda body: body, {"s3claim-mac": None}, "carries no seal"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_journal_is_a_store_error_naming_the_run_tag_and_is_never_overwritten(
    s3_rig: JournalRig, damage: str
) -> None:
    rig = s3_rig
    change, changes, reason = DAMAGE[damage]
    key = run_prefix(rig.key) + "journal"
    body, metadata = _valid(rig)
    damaged = change(body)
    fields = {k: v for k, v in {**metadata, **changes}.items() if k.startswith("s3claim-")}
    sealed = Seal(rig.key, key).metadata(
        {k: v for k, v in fields.items() if k not in ("s3claim-mac", "s3claim-body")},
        body=damaged,
    )
    if "s3claim-mac" in changes:  # an object written before seals
        sealed = {k: v for k, v in sealed.items() if k not in ("s3claim-mac", "s3claim-body")}
    rig.client.put_object(Bucket=rig.bucket, Key=key, Body=damaged, Metadata=sealed)
    runner = AgentRunner(provider=ScriptedProvider([]), tools=[], journal=rig.journal)

    for attempt in (
        lambda: rig.journal.load(SCOPE),
        lambda: runner.resume(tenant=SCOPE.tenant, run_id=SCOPE.run),
    ):
        with pytest.raises(ClaimStoreError) as failed:
            attempt()
        message = str(failed.value)
        assert rig.key.run_tag(SCOPE) in message
        assert reason in message
        assert "CANARY" not in message
    with pytest.raises(RunConflictError):  # the run id is taken: no new run over it either
        AgentRunner(provider=ScriptedProvider([]), tools=[], journal=rig.journal).run(
            "q", tenant=SCOPE.tenant, run_id=SCOPE.run
        )
    assert rig.client.get_object(Bucket=rig.bucket, Key=key)["Body"].read() == damaged
    listed = rig.runs("acme")  # an operator still sees it, by tag, from sealed metadata alone
    status = "unreadable" if damage in ("newer-metadata", "format-1") else "running"
    assert [(i.run_tag, i.status) for i in listed] == [(rig.key.run_tag(SCOPE), status)]


# -- conditional writes and their retries -----------------------------------------------------


class LandedThenLost:
    """The first PutObject reaches the server, which stores it; its answer never arrives."""

    def __init__(self, client: Any) -> None:
        self.pending = 1
        self._http = URLLib3Session()
        client.meta.events.register("before-send.s3.PutObject", self._on_send)

    def _on_send(self, request: AWSPreparedRequest, **_: Any) -> None:
        if self.pending:
            self.pending -= 1
            self._http.send(request)
            raise ConnectionClosedError(endpoint_url=request.url)


@pytest.mark.parametrize("first", [True, False], ids=["create", "update"])
def test_a_retried_save_that_meets_its_own_landed_write_succeeds(
    s3_rig: JournalRig, first: bool
) -> None:
    rig = s3_rig
    version = None if first else rig.journal.save(SCOPE, record(1), replaces=None)
    wire = Wire.attach(rig.client)
    LandedThenLost(rig.client)

    saved = rig.journal.save(SCOPE, record(2), replaces=version)

    # sent, lost; retried: 412 on its own write; one HEAD finds its nonce
    assert dict(wire.requests) == {"PutObject": 2, "HeadObject": 1}
    entry = rig.journal.load(SCOPE)
    assert (entry.version, entry.record) == (saved, record(2))
    rig.journal.save(SCOPE, record(3), replaces=saved)  # and the run goes on from there


def test_a_writer_that_lost_at_once_learns_it_in_one_request(s3_rig: JournalRig) -> None:
    rig = s3_rig
    loaded = rig.journal.save(SCOPE, record(1), replaces=None)
    rig.journal.save(SCOPE, record(2), replaces=loaded)
    wire = Wire.attach(rig.client)

    with pytest.raises(RunConflictError):
        rig.journal.save(SCOPE, record(2, canary=uuid.uuid4().hex), replaces=loaded)

    assert dict(wire.requests) == {"PutObject": 1}


def test_an_outage_while_recording_is_a_store_error_after_the_retry_policy(
    s3_rig: JournalRig,
) -> None:
    rig = s3_rig
    wire = Wire.attach(rig.client)

    def reset(request: AWSPreparedRequest, **_: Any) -> None:
        raise ConnectionClosedError(endpoint_url=request.url)

    rig.client.meta.events.register("before-send.s3.PutObject", reset)

    with pytest.raises(ClaimStoreError, match="PutObject failed after 4 attempt"):
        rig.journal.save(SCOPE, record(1), replaces=None)

    assert wire.requests["PutObject"] == 4  # NO_WAIT.attempts, botocore adding none
    with pytest.raises(RunNotFoundError):
        rig.journal.load(SCOPE)
