"""The audit trail: one record per fetch, search and refusal; kept in the bucket on request,
erased by `forget`, listed by `s3claim audit`."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from devkit.servers import Wire
from s3claim import (
    MemoryClaimCheckStore,
    RetryPolicy,
    RunContext,
    S3ClaimCheckStore,
    Scope,
    claim_tools,
)
from s3claim.cli import app
from s3claim.s3 import S3AuditTrail
from s3claim.s3._layout import is_audit_key
from s3claim.s3._provision import provision_bucket
from s3claim.telemetry import AuditRecord, Operation
from tests._hosts import claim_answer
from tests.telemetry.conftest import Telemetry

KEY = "k" * 32
SCOPE = Scope("acme", "matter-7")
CONTENT = "".join(f"Clause {n}. The parties agree to term {n}.\n\n" for n in range(1, 600))


def _redeem(store: Any, scope: Scope = SCOPE) -> str:
    """A fetch, a search, a fetch past the end, a malformed handle and a bad regex."""
    handle: str = store.put(scope, CONTENT, ttl_seconds=600)
    tools = {t.name: t for t in claim_tools(store)}
    context = RunContext(scope=scope, agent="counsel", emit=lambda _: None)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("fetch_result", {"handle": handle, "offset": 4096}),
        ("search_result", {"handle": handle, "pattern": "term 59"}),
        ("fetch_result", {"handle": "claim:1" + "0" * 32}),
        ("fetch_result", {"handle": "not a handle"}),
        ("search_result", {"handle": handle, "pattern": "(", "regex": True}),
    ]
    for name, arguments in calls:
        claim_answer(tools[name], arguments, context)
    return handle


def test_each_redemption_and_refusal_is_one_record(telemetry: Telemetry) -> None:
    store = MemoryClaimCheckStore()
    handle = _redeem(store)
    tags = {"tenant": store.tenant_tag("acme"), "run": store.run_tag(SCOPE)}
    shapes = [
        (r.operation, r.outcome, r.handle, r.offset, r.chars, r.pattern_chars, r.matches)
        for r in telemetry.audit_records
    ]
    assert shapes == [
        ("fetch", "ok", handle, 4096, 4096, None, None),
        ("search", "ok", handle, None, None, len("term 59"), 11),  # 59, 590-599
        ("fetch", "unavailable", "claim:1" + "0" * 32, 0, None, None, None),
        ("fetch", "unavailable", None, 0, None, None, None),
        ("search", "invalid_arguments", handle, None, None, 1, None),
    ]
    assert all({"tenant": r.tenant, "run": r.run} == tags for r in telemetry.audit_records)
    assert all(AuditRecord.from_json(r.to_json()) == r for r in telemetry.audit_records)


@pytest.mark.parametrize("kind", ["memory", "s3"])
def test_reads_by_line_and_from_the_end_record_the_window_they_read(
    telemetry: Telemetry, kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "memory":
        store: Any = MemoryClaimCheckStore()
    else:
        s3, bucket = request.getfixturevalue("s3"), request.getfixturevalue("bucket")
        store = S3ClaimCheckStore(bucket, handle_key=KEY, client=s3, retry=RetryPolicy())
    handle = store.put(SCOPE, CONTENT, ttl_seconds=600)
    (fetch,) = [t for t in claim_tools(store) if t.name == "fetch_result"]
    events: list[Any] = []
    context = RunContext(scope=SCOPE, agent="counsel", emit=events.append)
    for arguments in ({"line": 599, "limit": 100}, {"from_end": True, "limit": 30}):
        claim_answer(fetch, {"handle": handle, **arguments}, context)
    claim_answer(fetch, {"handle": handle, "line": 10**9}, context)
    shapes = [(r.operation, r.outcome, r.offset, r.chars) for r in telemetry.audit_records]
    clause = "Clause 300. The parties agree to term 300.\n\n"  # lines 599 and 600
    assert [e.kind for e in events] == ["claim_fetched"] * 3
    assert (
        [(e.offset, e.chars) for e in events]
        == [
            (CONTENT.index(clause), 2 * len(clause)),  # whole lines: two clauses fit in 100
            (len(CONTENT) - len(CONTENT[-30:].split("\n", 1)[1]), 1),
            (len(CONTENT), 0),
        ]
    )  # the last 30 characters hold a break before the last: the window is the blank line
    assert shapes == [("fetch", "ok", e.offset, e.chars) for e in events]


def test_nothing_is_built_while_the_audit_logger_is_off(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Operation] = []
    build = Operation._audit_record
    monkeypatch.setattr(Operation, "_audit_record", lambda op: built.append(op) or build(op))
    logging.getLogger("s3claim.audit").setLevel(logging.WARNING)
    _redeem(MemoryClaimCheckStore())
    assert telemetry.audit_records == []
    assert built == []  # its tags cost two HMACs a redemption
    assert len(telemetry.spans("s3claim.fetch")) == 3  # the redemptions ran, unaudited


@pytest.fixture
def provisioned(s3: Any, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"audit-{uuid.uuid4().hex}"
    provision_bucket(s3, name, prefix="claims/", day_classes=(1, 7, 30))
    monkeypatch.setenv("S3CLAIM_BUCKET", name)
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", KEY)
    return name


@pytest.fixture
def kept(s3: Any, provisioned: str) -> Iterator[tuple[S3ClaimCheckStore, S3AuditTrail]]:
    store = S3ClaimCheckStore(
        provisioned, handle_key=KEY, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )
    trail = S3AuditTrail(store)
    handler = trail.handler()
    logging.getLogger("s3claim.audit").addHandler(handler)
    try:
        yield store, trail
    finally:
        logging.getLogger("s3claim.audit").removeHandler(handler)


def test_the_bucket_keeps_the_trail_in_its_audit_area(
    telemetry: Telemetry, kept: tuple[S3ClaimCheckStore, S3AuditTrail], s3: Any
) -> None:
    store, trail = kept
    wire = Wire.attach(s3)
    _redeem(store)
    other = Scope("acme", "matter-8")
    _redeem(store, other)
    assert (
        wire.requests["PutObject"] == 2 * 2 + 10
    )  # two claims and their line indexes, ten records
    assert list(trail.records(tenant="acme")) == telemetry.audit_records
    mine = list(trail.records(tenant="acme", run="matter-7"))
    assert mine == telemetry.audit_records[:5]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=store.bucket.name)["Contents"]]
    audit_keys = [k for k in keys if is_audit_key(k)]
    assert len(audit_keys) == 10
    assert all(k.startswith(store.layout.audit_prefix("acme")) for k in audit_keys)
    assert sum(k.startswith(store.layout.audit_prefix("acme", "matter-7")) for k in audit_keys) == 5
    assert not any(k.startswith(store.layout.tenant_prefix("acme")) for k in audit_keys)
    for key in audit_keys:  # what each object holds: a record, never content
        body = s3.get_object(Bucket=store.bucket.name, Key=key)["Body"].read().decode()
        assert AuditRecord.from_json(body) in telemetry.audit_records
        assert "Clause" not in body and "term 59" not in body
    assert len(list(store.claims(tenant="acme"))) == 2

    assert store.forget(tenant="acme", run="matter-8") == 1  # claims only are counted
    assert list(trail.records(tenant="acme")) == mine
    assert store.forget(tenant="acme") == 1
    assert list(trail.records(tenant="acme")) == []
    assert s3.list_objects_v2(Bucket=store.bucket.name).get("KeyCount") == 0


def test_a_refusal_after_forget_is_kept_without_recreating_the_tenants_prefix(
    telemetry: Telemetry, kept: tuple[S3ClaimCheckStore, S3AuditTrail], s3: Any
) -> None:
    """Adversarial: forget(tenant), then one refused fetch with the trail kept: nothing is
    written under the erased prefix (no version, no delete marker), and the refusal is
    still in the trail; forgetting again leaves nothing of the tenant."""
    store, trail = kept
    name = store.bucket.name
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    handle = _redeem(store)
    assert store.forget(tenant="acme") == 1
    (fetch, *_) = claim_tools(store)
    context = RunContext(scope=SCOPE, agent="counsel", emit=lambda _: None)

    refused = claim_answer(fetch, {"handle": handle}, context)

    assert refused.is_error
    under = s3.list_object_versions(Bucket=name, Prefix=store.layout.tenant_prefix("acme"))
    assert under.get("Versions", []) == [] and under.get("DeleteMarkers", []) == []
    (record,) = trail.records(tenant="acme")
    assert (record.operation, record.outcome, record.handle) == ("fetch", "unavailable", handle)
    assert record == telemetry.audit_records[-1]
    receipt = store.erase(tenant="acme")
    assert (receipt.audit_records, receipt.claims, receipt.remaining) == (1, 0, 0)
    assert s3.list_object_versions(Bucket=name).get("Versions", []) == []


def test_a_record_the_bucket_refuses_is_dropped_and_logged(
    telemetry: Telemetry,
    kept: tuple[S3ClaimCheckStore, S3AuditTrail],
    s3: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, trail = kept
    handle = store.put(SCOPE, CONTENT, ttl_seconds=600)

    def refuse(request: Any, **_: Any) -> Any:
        from tests._s3 import s3_error

        return s3_error(403, "AccessDenied") if "/audit/" in request.url else None

    s3.meta.events.register_first("before-send.s3.PutObject", refuse)
    try:
        (fetch, *_) = claim_tools(store)
        context = RunContext(scope=SCOPE, agent="counsel", emit=lambda _: None)
        answer = claim_answer(fetch, {"handle": handle}, context)
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", refuse)
    assert not answer.is_error  # the redemption stands
    assert len(telemetry.audit_records) == 1
    assert "audit: a record was not kept in the bucket (ClaimStoreError)" in caplog.text
    assert list(trail.records(tenant="acme")) == []


def test_s3claim_audit_lists_a_tenants_trail(
    telemetry: Telemetry, kept: tuple[S3ClaimCheckStore, S3AuditTrail]
) -> None:
    store, _ = kept
    handle = _redeem(store)
    runner = CliRunner()
    result = runner.invoke(app, ["audit", "--tenant", "acme", "--json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [AuditRecord(**line) for line in lines] == telemetry.audit_records
    table = runner.invoke(app, ["audit", "--tenant", "acme", "--run", "matter-7"])
    assert table.exit_code == 0, table.output
    assert "5 audit record(s) of run 'matter-7' of tenant 'acme'" in table.stdout
    assert handle in table.stdout and "(malformed)" in table.stdout
    assert "4,096+4,096" in table.stdout and "invalid_arguments" in table.stdout
    assert "Clause" not in table.stdout
    empty = runner.invoke(app, ["audit", "--tenant", "globex"])
    assert empty.exit_code == 0 and "0 audit record(s) of tenant 'globex'" in empty.stdout


@pytest.mark.parametrize("kind", ["memory", "s3"])
def test_a_read_by_path_is_a_fetch_span_and_record_without_its_pointer(
    telemetry: Telemetry, kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "memory":
        store: Any = MemoryClaimCheckStore()
    else:
        s3, bucket = request.getfixturevalue("s3"), request.getfixturevalue("bucket")
        store = S3ClaimCheckStore(
            bucket, handle_key=KEY, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
        )
    document = json.dumps({"Osprey-clause": [{"term": n} for n in range(2000)]})
    handle = store.put(SCOPE, document, ttl_seconds=600)
    (fetch_result,) = [t for t in claim_tools(store) if t.name == "fetch_result"]
    context = RunContext(scope=SCOPE, agent="counsel", emit=lambda _: None)
    read = claim_answer(fetch_result, {"handle": handle, "path": "/Osprey-clause/7"}, context)
    missing = claim_answer(fetch_result, {"handle": handle, "path": "/Osprey-x"}, context)
    assert not read.is_error and missing.is_error

    ok, refused = telemetry.spans("s3claim.fetch")
    assert ok.attributes is not None and refused.attributes is not None
    assert ok.attributes["s3claim.outcome"] == "ok"
    assert ok.attributes["s3claim.handle"] == handle
    assert ok.attributes["s3claim.window.offset"] == document.index('{"term": 7}')
    assert ok.attributes["s3claim.window.chars"] == len('{"term": 7}')
    assert refused.attributes["s3claim.outcome"] == "no_such_path"
    if kind == "s3":
        assert ok.attributes["s3claim.s3.requests"] >= 1  # the index and the value's range
    assert [(r.operation, r.outcome, r.offset) for r in telemetry.audit_records] == [
        ("fetch", "ok", document.index('{"term": 7}')),
        ("fetch", "no_such_path", 0),
    ]
    assert "Osprey" not in telemetry.everything()  # the pointer is the model's: never kept
    assert telemetry.total("s3claim.fetches", outcome="ok") == 1
