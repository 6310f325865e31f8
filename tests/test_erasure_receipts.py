"""Erasure receipts (issue 38): what an erasure removed, by kind, signed under the handle key.

On a versioned moto bucket the receipt matches a listing taken with boto3 before the erasure
(classified here by the keys' own shapes, not by the store's helpers), verifies, and stops
verifying once any field is edited; the memory store's does the same for what it holds; the
CLI writes one (`forget --receipt`) and checks it (`verify-receipt`: 0, 1 or 2).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from s3claim import (
    HandleKey,
    ManualClock,
    MemoryClaimCheckStore,
    MemoryRunJournal,
    RetryPolicy,
    RunContext,
    S3ClaimCheckStore,
    S3RunJournal,
    Scope,
    ThreadedAsyncStore,
    claim_tools,
)
from s3claim.cli import app
from s3claim.erasure import ErasureReceipt, verify_receipt
from s3claim.journal import RunRecord
from s3claim.s3 import S3AuditTrail
from s3claim.s3._provision import provision_bucket
from tests._hosts import claim_answer

KEY = "k" * 32
TAG = HandleKey(KEY).tenant_tag("acme")
RUN_A, RUN_B, CHILD = Scope("acme", "a"), Scope("acme", "b"), Scope("acme", "child")
TEXT = "".join(f"Clause {n}. The parties agree.\n" for n in range(200))
DOCUMENT = json.dumps({"clauses": [{"n": n} for n in range(200)]})
RECORD = RunRecord(status="running", turns=0, messages=())
runner = CliRunner()


@pytest.fixture
def audited() -> Iterator[list[logging.Handler]]:
    """The audit logger on, for the handlers a test adds; off and bare again afterwards."""
    log = logging.getLogger("s3claim.audit")
    level, handlers = log.level, []
    log.setLevel(logging.INFO)
    try:
        yield handlers
    finally:
        for handler in handlers:
            log.removeHandler(handler)
        log.setLevel(level)


def _redeem(store: Any, scope: Scope, handle: str) -> None:
    """One fetch that is served and one that is refused: two audit records."""
    (fetch, *_) = claim_tools(store)
    context = RunContext(scope=scope, agent="counsel", emit=lambda _: None)
    assert not claim_answer(fetch, {"handle": handle}, context).is_error
    assert claim_answer(fetch, {"handle": "claim:1" + "0" * 32}, context).is_error


def _independent_listing(s3: Any, bucket: str) -> tuple[Counter[str], int, int]:
    """Distinct keys of tenant acme by kind, its object versions and its delete markers,
    from boto3's own listing of the whole bucket."""
    kinds: Counter[str] = Counter()
    versions = markers = 0
    seen: set[str] = set()
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for entry in page.get("Versions", []):
            key = entry["Key"]
            if f"/{TAG}/" not in key:
                continue
            versions += 1
            if key in seen:
                continue
            seen.add(key)
            last = key.rsplit("/", 1)[-1]
            if key.startswith("claims/audit/"):
                kinds["audit_records"] += 1
            elif re.fullmatch(r"[124][0-9a-f]{32}", last):
                kinds["claims"] += 1
            elif re.fullmatch(r"[124][0-9a-f]{32}\.index", last):
                kinds["indexes"] += 1
            elif re.fullmatch(r"[124][0-9a-f]{32}\.handoff", last):
                kinds["hand_offs"] += 1
            elif last == "journal":
                kinds["journals"] += 1
            else:
                kinds["other"] += 1
        markers += sum(f"/{TAG}/" in m["Key"] for m in page.get("DeleteMarkers", []))
    return kinds, versions, markers


def _edits(receipt: ErasureReceipt) -> Iterator[tuple[str, dict[str, Any]]]:
    """The receipt's JSON with one field changed, for each field the MAC covers."""
    data = json.loads(receipt.to_json())
    later = (receipt.finished_at + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    for name, value in data.items():
        if name in ("mac", "format"):
            continue  # the MAC itself; the format's one value is fixed by the model
        if isinstance(value, int):
            changed: Any = value + 1
        elif name in ("started_at", "finished_at"):
            changed = later
        elif name == "swept":
            changed = [*value, "claims/"]
        elif name == "run":
            changed = "0" * 32
        elif name == "tenant":
            changed = HandleKey(KEY).tenant_tag("globex")
        else:
            changed = value + "x"
        yield name, {**data, name: changed}


def _assert_verifies_until_edited(receipt: ErasureReceipt, key: str | HandleKey) -> None:
    assert verify_receipt(receipt, key)
    assert verify_receipt(ErasureReceipt.from_json(receipt.to_json()), key)
    assert not verify_receipt(receipt, "another key, as long")
    edited = 0
    for name, data in _edits(receipt):
        assert not verify_receipt(ErasureReceipt.model_validate(data), key), name
        edited += 1
    assert edited == len(ErasureReceipt.model_fields) - 2


@pytest.fixture
def versioned(s3: Any) -> tuple[S3ClaimCheckStore, ManualClock, str]:
    bucket = f"receipt-{uuid.uuid4().hex}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    clock = ManualClock(1_760_000_000)
    retry = RetryPolicy(initial_wait=0, max_wait=0)
    store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3, clock=clock, retry=retry)
    return store, clock, bucket


def test_a_receipt_on_a_versioned_bucket_matches_an_independent_listing_and_verifies(
    versioned: tuple[S3ClaimCheckStore, ManualClock, str],
    s3: Any,
    audited: list[logging.Handler],
) -> None:
    store, clock, bucket = versioned
    audited.append(handler := S3AuditTrail(store).handler())
    logging.getLogger("s3claim.audit").addHandler(handler)
    text = store.put(RUN_A, TEXT, ttl_seconds=60)  # a claim with its line index
    store.put(RUN_A, DOCUMENT, ttl_seconds=60)  # a JSON claim with its structure index
    gone = store.put(RUN_B, "one line, no index", ttl_seconds=60)
    clock.advance(30)
    store.put(RUN_A, TEXT, ttl_seconds=600)  # refreshed in place: a second version of each
    store.hand_off(RUN_A, text, to=CHILD, ttl_seconds=60)  # a copy, its index and its mark
    journal = S3RunJournal(store.bucket)
    journal.save(RUN_A, RECORD, replaces=journal.save(RUN_A, RECORD, replaces=None))
    _redeem(store, RUN_A, text)  # two audit records
    s3.delete_object(Bucket=bucket, Key=store.layout.object_key(RUN_B, gone))  # a marker
    kept = store.put(Scope("globex", "a"), TEXT, ttl_seconds=60)
    kinds, versions, markers = _independent_listing(s3, bucket)
    assert kinds == {
        "claims": 4, "indexes": 3, "hand_offs": 1, "journals": 1, "audit_records": 2
    }  # fmt: skip
    # a version of each key; one more of the refreshed claim and of its index, and of the
    # journal saved again; the deleted claim's version stays, behind its delete marker
    assert (versions, markers) == (sum(kinds.values()) + 2 + 1, 1)
    started = clock.now()

    receipt = store.erase(tenant="acme")

    assert receipt.model_dump(include=set(kinds) | {"other"}) == {"other": 0, **kinds}
    assert (receipt.versions, receipt.delete_markers, receipt.remaining) == (versions, markers, 0)
    assert receipt.swept == (f"claims/{TAG}/", f"claims/audit/{TAG}/")
    assert (receipt.store, receipt.tenant, receipt.run) == (f"s3://{bucket}", TAG, None)
    assert receipt.started_at.timestamp() == started == receipt.finished_at.timestamp()
    assert "acme" not in receipt.to_json() and TEXT[:20] not in receipt.to_json()
    assert _independent_listing(s3, bucket) == (Counter(), 0, 0)
    assert store.fetch(Scope("globex", "a"), kept).total_chars == len(TEXT)
    _assert_verifies_until_edited(receipt, KEY)
    # forget is the receipt's claim count; nothing is left to count a second time
    assert store.forget(tenant="acme") == 0
    other = asyncio.run(ThreadedAsyncStore(store).erase(tenant="globex", run="a"))
    assert (other.claims, other.indexes, other.run) == (1, 1, store.run_tag(Scope("globex", "a")))
    assert verify_receipt(other, KEY)
    assert s3.list_object_versions(Bucket=bucket).get("Versions", []) == []  # nothing at all


def test_the_memory_stores_receipt_counts_what_it_held_and_verifies() -> None:
    key = HandleKey("m" * 32)
    clock = ManualClock(100)
    store = MemoryClaimCheckStore(clock=clock, handle_key=key)
    journal = MemoryRunJournal(store=store)
    text = store.put(RUN_A, TEXT, ttl_seconds=60)
    store.put(RUN_A, "one line", ttl_seconds=60)
    store.hand_off(RUN_A, text, to=CHILD, ttl_seconds=60)
    journal.save(RUN_A, RECORD, replaces=None)
    journal.save(CHILD, RECORD, replaces=None)
    other = store.put(Scope("globex", "a"), TEXT, ttl_seconds=60)

    run = store.erase(tenant="acme", run="child")
    tenant = asyncio.run(ThreadedAsyncStore(store).erase(tenant="acme"))

    def counts(receipt: ErasureReceipt) -> tuple[int, ...]:
        r = receipt
        return r.claims, r.hand_offs, r.indexes, r.journals, r.versions, r.remaining

    assert counts(run) == (1, 1, 1, 1, 0, 0)  # the copy (its text has an index), CHILD's record
    assert counts(tenant) == (2, 0, 1, 1, 0, 0)  # "one line" has no index
    run_tag = key.run_tag(CHILD)
    assert (run.store, run.tenant, run.run) == ("memory", key.tenant_tag("acme"), run_tag)
    assert run.swept == (f"{key.tenant_tag('acme')}/{run_tag}/",)
    assert run.started_at.timestamp() == 100
    _assert_verifies_until_edited(run, key)
    assert not verify_receipt(run, KEY)  # another store's key
    assert len(store) == 1 and store.fetch(Scope("globex", "a"), other).total_chars == len(TEXT)


@pytest.fixture
def provisioned(s3: Any, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"cli-receipt-{uuid.uuid4().hex[:20]}"
    provision_bucket(s3, name, prefix="claims/", day_classes=(1, 7, 30))
    monkeypatch.setenv("S3CLAIM_BUCKET", name)
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
    return name


def _one_line(result: Any, code: int, stream: str = "stderr") -> str:
    assert result.exit_code == code, result.output
    line: str = getattr(result, stream)
    assert line.count("\n") == 1 and "Traceback" not in result.output, result.output
    return line


def test_forget_writes_a_receipt_that_verify_receipt_checks(
    provisioned: str, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = S3ClaimCheckStore(provisioned, handle_key=KEY, client=s3)
    store.put(RUN_A, TEXT, ttl_seconds=60)
    store.put(RUN_B, DOCUMENT, ttl_seconds=60)
    path = tmp_path / "receipt.json"
    nowhere = tmp_path / "no such folder" / "receipt.json"

    refused = runner.invoke(app, ["forget", "-y", "--tenant", "acme", "--receipt", str(nowhere)])
    _one_line(refused, 2)
    assert len(list(store.claims(tenant="acme"))) == 2  # refused before anything was erased

    args = ["forget", "-y", "--tenant", "acme", "--receipt", str(path), "--json"]
    forgot = runner.invoke(app, args)

    assert forgot.exit_code == 0, forgot.output
    assert json.loads(forgot.stdout) == {
        "tenant": "acme", "run": None, "bucket": provisioned, "removed": 2,
        "receipt": str(path),
    }  # fmt: skip
    receipt = ErasureReceipt.from_json(path.read_bytes())
    assert (receipt.claims, receipt.indexes, receipt.remaining) == (2, 2, 0)
    verified = _one_line(runner.invoke(app, ["verify-receipt", str(path)]), 0, "stdout")
    assert verified.startswith(f"verified: s3://{provisioned} tenant {TAG} erased ")
    assert "2 claim(s)" in verified and "0 left" in verified
    mine = ["verify-receipt", str(path), "--tenant", "acme"]
    assert runner.invoke(app, mine).exit_code == 0
    _one_line(runner.invoke(app, ["verify-receipt", str(path), "--tenant", "globex"]), 1)
    _one_line(runner.invoke(app, [*mine, "--run", "a"]), 1)  # the tenant's, not one run's

    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "claims": 1}))  # edited: still a receipt, not the one
    assert "does not verify" in _one_line(runner.invoke(app, ["verify-receipt", str(path)]), 1)
    path.write_text(receipt.to_json())
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "another key as long as the first")
    _one_line(runner.invoke(app, ["verify-receipt", str(path)]), 1)
    for malformed in ("not json", "[]", json.dumps({**data, "claims": -1}), ""):
        path.write_text(malformed)
        assert "is not an erasure receipt" in _one_line(
            runner.invoke(app, ["verify-receipt", str(path)]), 2
        )
    _one_line(runner.invoke(app, ["verify-receipt", str(nowhere)]), 2)
    signed = receipt.to_json()
    finished = json.dumps(receipt.finished_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    for spelling in (  # the same fields, written otherwise: not the bytes that were signed
        signed.replace('"claims":2', '"claims":2.0'),
        signed.replace('"claims":2', '"claims":"2"'),
        signed.replace(finished, finished.replace("Z", "+00:00")),
        json.dumps(dict(reversed(json.loads(signed).items())), separators=(",", ":")),
        json.dumps(json.loads(signed)),  # spaces
    ):
        assert spelling != signed and ErasureReceipt.from_json(spelling) == receipt
        assert not verify_receipt(spelling, KEY)
        path.write_text(spelling)
        assert "does not verify" in _one_line(runner.invoke(app, ["verify-receipt", str(path)]), 1)
    path.write_text(signed + "\n")  # what forget wrote
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
    assert verify_receipt(signed + "\n", KEY) and verify_receipt(signed.encode(), KEY)
    assert runner.invoke(app, ["verify-receipt", str(path)]).exit_code == 0
    monkeypatch.delenv("S3CLAIM_HANDLE_KEY")
    path.write_text(receipt.to_json())
    assert "S3CLAIM_HANDLE_KEY" in _one_line(runner.invoke(app, ["verify-receipt", str(path)]), 2)
