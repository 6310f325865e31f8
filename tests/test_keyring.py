"""The keyring (issue 49): `S3CLAIM_HANDLE_KEY` names several keys, newest first.

What is made (check-ins, hand-offs, journals, links, receipts) is made under the newest; what
is read, verified, listed or erased is found under any key of the ring, on moto's HTTP
server. A handle carries which key made it (two of its hex digits, keyed), so a read of a
claim made under an older key costs what a read under the newest costs; the uniform refusal
holds for a key the ring does not hold.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from devkit.servers import Wire
from s3claim._reading._address import Address
from s3claim.cli import app
from s3claim.erasure import verify_receipt
from s3claim.errors import ClaimUnavailableError, ConfigurationError, RunConflictError
from s3claim.handles import HandleKey, is_handle
from s3claim.journal import RunRecord
from s3claim.links import LinkKey, link
from s3claim.s3 import RetryPolicy, S3ClaimCheckStore, S3RunJournal
from s3claim.s3._config import handle_key_of
from s3claim.s3.admin import count_by_key
from s3claim.scope import Scope

OLD, NEW, OTHER = "o" * 32, "n" * 32, "x" * 32
RING = f"{NEW},{OLD}"
SCOPE = Scope("acme", "run-1")
TTL = 3600
TEXT = "".join(f"line {n}: the report says {n * 7}\n" for n in range(1, 2001))
DOC = json.dumps({"items": [{"name": f"item {n}", "n": n} for n in range(300)]})
RECORD = RunRecord(status="running", turns=0, messages=())
runner = CliRunner()


def _store(s3: Any, bucket: str, key: str) -> S3ClaimCheckStore:
    """A store under `key`, a ring as S3CLAIM_HANDLE_KEY gives it (the settings' SecretStr)."""
    ring = handle_key_of(SecretStr(key), name="S3CLAIM_HANDLE_KEY")
    return S3ClaimCheckStore(
        bucket, handle_key=ring, client=s3, retry=RetryPolicy(initial_wait=0, max_wait=0)
    )


# -- the ring as configured ------------------------------------------------------------------


def test_a_comma_separated_key_is_a_ring_newest_first() -> None:
    ring = handle_key_of(SecretStr(RING), name="S3CLAIM_HANDLE_KEY")
    assert [k.tenant_tag("t") for k in ring.ring] == [
        k.tenant_tag("t") for k in HandleKey(NEW, OLD).ring
    ]
    # A string given in code is one key, comma or not: the ring is the variable's syntax.
    assert len(handle_key_of(RING).ring) == 1
    assert len(ring.ring) == 2
    new, old = HandleKey(NEW), HandleKey(OLD)
    # Made under the newest: the same handles and tags as the newest key alone.
    assert ring.handle(SCOPE, "hello") == new.handle(SCOPE, "hello")
    assert ring.tenant_tag("acme") == new.tenant_tag("acme") != old.tenant_tag("acme")
    assert ring.run_tag(SCOPE) == new.run_tag(SCOPE)
    assert repr(ring) == "HandleKey(<secret>, 1 older)"  # no secret in a repr
    handle = ring.handle(SCOPE, "hello")
    assert is_handle(handle) and len(handle) == len("claim:1") + 32


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (f"{NEW},,{OLD}", "entry 2 is empty"),
        (f"{NEW},", "entry 2 is empty"),
        (f"{NEW},short", "entry 2: a handle key needs at least 16 bytes"),
        (f"{NEW},{OLD},{NEW}", "entry 3 repeats entry 1"),
        (f"{NEW}, {OLD}", "entry 2 has spaces or a line break around it"),
        (f"{NEW},{OLD}\n", "entry 2 has spaces or a line break around it"),
    ],
)
def test_a_malformed_ring_is_refused_by_the_variables_name(value: str, said: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        handle_key_of(SecretStr(value), name="S3CLAIM_HANDLE_KEY")
    message = str(caught.value)
    assert message.startswith("S3CLAIM_HANDLE_KEY: ") and said in message, message
    assert "\n" not in message and NEW not in message and OLD not in message


def test_the_cli_refuses_a_malformed_ring_in_one_line(
    moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3CLAIM_BUCKET", f"b-{uuid.uuid4().hex}")
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", f"{NEW},,{OLD}")
    result = runner.invoke(app, ["ls", "--tenant", "acme"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("s3claim: error: ") and result.stderr.count("\n") == 1
    assert "S3CLAIM_HANDLE_KEY" in result.stderr and NEW not in result.stderr


# -- reads of a claim made under an older key --------------------------------------------------


@pytest.fixture
def rotated(s3: Any, bucket: str) -> tuple[S3ClaimCheckStore, S3ClaimCheckStore]:
    """The store before the rotation (the old key alone) and after it (the ring)."""
    return _store(s3, bucket, OLD), _store(s3, bucket, RING)


def test_every_reading_mode_reads_a_claim_made_under_an_older_key(
    rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore],
) -> None:
    before, after = rotated
    text, doc = before.put(SCOPE, TEXT, ttl_seconds=TTL), before.put(SCOPE, DOC, ttl_seconds=TTL)
    assert after.fetch(SCOPE, text, 100, 50).text == TEXT[100:150]
    line = after.read(SCOPE, text, Address(line=1000, lines=1), length=4096)
    assert line.text == "line 1000: the report says 7000\n"  # type: ignore[union-attr]
    end = after.read(SCOPE, text, Address(from_end=True, lines=1), length=4096)
    assert end.text == "line 2000: the report says 14000\n"  # type: ignore[union-attr]
    path = after.read(SCOPE, doc, Address(path="/items/250/name"), length=4096)
    assert json.loads(path.text) == "item 250"  # type: ignore[union-attr]
    found = after.search(SCOPE, text, "says 13993")
    assert found.total_matches == 1
    assert "".join(after.scan(SCOPE, text)) == TEXT
    assert after.checked_in(SCOPE, text).expires_at > 0
    # Handed off after the rotation: a copy under the key that made the claim (its blocks
    # are sealed under it), so the old key alone reads it too, and the ring at a GET's cost.
    child = after.hand_off(SCOPE, text, to=Scope("acme", "run-2"), ttl_seconds=TTL)
    assert after.fetch(Scope("acme", "run-2"), child, 0, 20).text == TEXT[:20]
    assert before.fetch(Scope("acme", "run-2"), child, 0, 20).text == TEXT[:20]
    fresh = after.put(SCOPE, DOC + " ", ttl_seconds=TTL)  # under the newest: its copy too
    copy = after.hand_off(SCOPE, fresh, to=Scope("acme", "run-2"), ttl_seconds=TTL)
    assert _store_alone(after, NEW).fetch(Scope("acme", "run-2"), copy, 0, 5).text == DOC[:5]


def _store_alone(store: S3ClaimCheckStore, key: str) -> S3ClaimCheckStore:
    return _store(store.client, store.bucket.name, key)


def test_a_check_in_after_the_rotation_is_made_under_the_newest_key(
    rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore],
) -> None:
    before, after = rotated
    handle = after.put(SCOPE, TEXT, ttl_seconds=TTL)
    assert _store_alone(after, NEW).fetch(SCOPE, handle, 0, 10).text == TEXT[:10]
    with pytest.raises(ClaimUnavailableError):
        before.fetch(SCOPE, handle, 0, 10)  # the old key alone does not reach it


def test_a_handle_of_a_key_the_ring_does_not_hold_is_the_uniform_refusal(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    _, after = rotated
    handle = _store(s3, bucket, OTHER).put(SCOPE, DOC, ttl_seconds=TTL)
    reads = [
        lambda: after.fetch(SCOPE, handle, 0, 10),
        lambda: after.read(SCOPE, handle, Address(line=1), length=100),
        lambda: after.read(SCOPE, handle, Address(from_end=True), length=100),
        lambda: after.read(SCOPE, handle, Address(path="/items"), length=100),
        lambda: after.search(SCOPE, handle, "item"),
        lambda: after.checked_in(SCOPE, handle),
    ]
    for read in reads:
        with pytest.raises(ClaimUnavailableError):
            read()


def test_the_ring_lists_claims_made_under_each_of_its_keys(
    rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore],
) -> None:
    before, after = rotated
    old = before.put(SCOPE, TEXT, ttl_seconds=TTL)
    new = after.put(SCOPE, DOC, ttl_seconds=TTL)
    assert {c.handle for c in after.claims(tenant="acme")} == {old, new}
    assert {c.handle for c in after.claims(tenant="acme", run="run-1")} == {old, new}
    assert not any(c.damaged for c in after.claims(tenant="acme"))


# -- journals, links, receipts ----------------------------------------------------------------


def test_a_journal_saved_under_an_older_key_resumes_and_moves_to_the_newest(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    before, after = rotated
    old_journal, journal = S3RunJournal(before.bucket), S3RunJournal(after.bucket)
    old_journal.save(SCOPE, RECORD, replaces=None)
    assert journal.exists(SCOPE)
    entry = journal.load(SCOPE)
    etag = journal.save(SCOPE, entry.record, replaces=entry.version)
    assert journal.load(SCOPE).version == etag
    assert not old_journal.exists(SCOPE)  # moved: one journal per run, under the newest key
    assert S3RunJournal(_store_alone(after, NEW).bucket).exists(SCOPE)
    assert [r.status for r in journal.runs(tenant="acme")] == ["running"]


def test_moving_a_journal_loses_no_turn_an_older_keys_process_saved_meanwhile(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    """A rolling rotation: a process on the ring loads the run's journal (under the older
    key), a process still on the older key alone saves a turn over it, then the ring's save
    would move its stale record under the newest key. It is refused, and taken back: the
    next load is the other process's turn."""
    before, after = rotated
    old_journal, journal = S3RunJournal(before.bucket), S3RunJournal(after.bucket)
    first = old_journal.save(
        SCOPE, RunRecord(status="running", turns=1, messages=()), replaces=None
    )
    stale = journal.load(SCOPE)
    old_journal.save(SCOPE, RunRecord(status="running", turns=2, messages=()), replaces=first)
    with pytest.raises(RunConflictError):
        journal.save(SCOPE, stale.record, replaces=stale.version)
    assert journal.load(SCOPE).record.turns == 2  # the other process's turn stands
    assert not S3RunJournal(_store_alone(after, NEW).bucket).exists(SCOPE)  # taken back
    assert old_journal.exists(SCOPE)


def test_a_link_and_a_receipt_made_under_an_older_key_verify_under_the_ring(
    rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore],
) -> None:
    before, after = rotated
    handle = before.put(SCOPE, TEXT, ttl_seconds=TTL)
    url = link(before, handle, scope=SCOPE, base_url="http://127.0.0.1")
    token = url.rsplit("/", 1)[-1]
    opened = LinkKey(after.handle_key).open(token)
    assert opened is not None and opened.handle == handle
    assert LinkKey(HandleKey(OTHER)).open(token) is None
    receipt = before.erase(tenant="someone-else")
    assert verify_receipt(receipt, after.handle_key)
    assert verify_receipt(receipt.to_json(), after.handle_key)
    assert not verify_receipt(receipt, HandleKey(OTHER))


def test_forget_under_a_two_key_ring_leaves_nothing_under_either_key(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    before, after = rotated
    for store in rotated:
        store.put(SCOPE, TEXT, ttl_seconds=TTL)
        store.put(Scope("acme", "run-2"), DOC, ttl_seconds=TTL)
        S3RunJournal(store.bucket).save(Scope("acme", f"run-{id(store)}"), RECORD, replaces=None)
    kept = _store(s3, bucket, NEW).put(Scope("other", "r"), TEXT, ttl_seconds=TTL)

    receipt = after.erase(tenant="acme")

    assert receipt.claims == 4 and receipt.journals == 2
    assert len(receipt.swept) == 4  # each key's claims prefix and audit prefix
    listed = s3.list_object_versions(Bucket=bucket)
    left = [v["Key"] for v in listed.get("Versions", []) + listed.get("DeleteMarkers", [])]
    acme = (before.tenant_tag("acme"), after.tenant_tag("acme"))
    assert not [k for k in left if any(tag in k for tag in acme)], left
    assert len(left) >= 2  # the other tenant's claim and its index stand
    assert after.fetch(Scope("other", "r"), kept, 0, 4).text == TEXT[:4]


# -- doctor ------------------------------------------------------------------------------------


def test_doctor_counts_what_still_hangs_on_each_older_key(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    before, after = rotated
    before.put(SCOPE, TEXT, ttl_seconds=TTL)
    before.put(Scope("beta", "r"), DOC, ttl_seconds=TTL)
    S3RunJournal(before.bucket).save(SCOPE, RECORD, replaces=None)
    after.put(SCOPE, DOC, ttl_seconds=TTL)
    _store(s3, bucket, OTHER).put(SCOPE, "not of the ring", ttl_seconds=TTL)

    counts = count_by_key(after.bucket, now=after.clock.now())

    assert [(c.claims, c.journals) for c in counts.keys] == [(1, 0), (2, 1)]
    assert counts.unknown == 1  # sealed under no key of the ring


def test_the_doctor_command_reports_each_older_keys_claims_and_journals(
    s3: Any, bucket: str, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store(s3, bucket, OLD).put(SCOPE, TEXT, ttl_seconds=TTL)
    monkeypatch.setenv("S3CLAIM_BUCKET", bucket)
    monkeypatch.setenv("S3CLAIM_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", RING)
    result = runner.invoke(app, ["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    newest, older = checks["keyring: key 1 (newest)"], checks["keyring: key 2"]
    assert newest["status"] == "pass" and "0 claim(s), 0 journal(s)" in newest["detail"]
    assert older["status"] == "warn" and "1 claim(s), 0 journal(s)" in older["detail"]
    _store(s3, bucket, RING).forget(tenant="acme")
    result = runner.invoke(app, ["doctor", "--json"])
    older = {c["name"]: c for c in json.loads(result.stdout)["checks"]}["keyring: key 2"]
    assert older["status"] == "pass" and "may leave" in older["detail"]


# -- what requests cost ------------------------------------------------------------------------


def test_reads_cost_the_same_under_a_ring_whichever_key_made_the_claim(
    s3: Any, bucket: str, rotated: tuple[S3ClaimCheckStore, S3ClaimCheckStore]
) -> None:
    before, after = rotated
    alone = _store(s3, bucket, NEW)
    wire = Wire.attach(s3)

    def cost(store: S3ClaimCheckStore, handle: str, address: Address) -> dict[str, int]:
        wire.clear()
        store.read(SCOPE, handle, address, length=4096)
        return dict(wire.requests)

    made_new, made_old = (
        alone.put(SCOPE, TEXT, ttl_seconds=TTL),
        before.put(SCOPE, TEXT.upper(), ttl_seconds=TTL),
    )
    for address in (Address(offset=5000), Address(line=1500), Address(from_end=True)):
        assert cost(after, made_new, address) == cost(alone, made_new, address), address
        assert cost(after, made_old, address) == cost(before, made_old, address), address
    doc, path = before.put(SCOPE, DOC, ttl_seconds=TTL), Address(path="/items/250/name")
    assert cost(after, doc, path) == cost(before, doc, path)
    wire.clear()
    after.put(SCOPE, TEXT + "x", ttl_seconds=TTL)
    under_ring = dict(wire.requests)
    wire.clear()
    alone.put(SCOPE, TEXT + "y", ttl_seconds=TTL)
    assert under_ring == dict(wire.requests)
    journal, journal_alone = S3RunJournal(after.bucket), S3RunJournal(alone.bucket)
    journal_alone.save(SCOPE, RECORD, replaces=None)
    wire.clear()
    journal.load(SCOPE)
    assert dict(wire.requests) == {"GetObject": 1}


def test_a_write_under_a_ring_ends_reuse_for_a_process_whose_ring_has_the_other_key_first(
    s3: Any, bucket: str
) -> None:
    """Mid-rotation, `OLD,NEW` and `NEW,OLD` processes run side by side: a write through
    either changes the run's mark the other reads (one PUT per key of the ring)."""
    first_old, first_new = _store(s3, bucket, f"{OLD},{NEW}"), _store(s3, bucket, RING)
    for writer, reader in ((first_new, first_old), (first_old, first_new)):
        before = reader.run_mark(SCOPE)
        writer.mark_written(SCOPE)
        assert reader.run_mark(SCOPE) != before
    wire = Wire.attach(s3)
    _store(s3, bucket, NEW).mark_written(SCOPE)  # one key: one PUT, as before the ring
    assert dict(wire.requests) == {"PutObject": 1}
