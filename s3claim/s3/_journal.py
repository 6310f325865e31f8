"""S3RunJournal: each run's record in the claim bucket, beside the run's claims.

One object per run, `{run prefix}journal`, rewritten whole at every save, with the store's
SSE and day-class tag (docs/journal.md). A save is one conditional PutObject: the first with
`If-None-Match: *` (a run id taken is refused), every later one `If-Match` on the ETag it last
saw, so a second writer gets 412 and a `RunConflictError`. A retried save may meet its own
earlier success (the answer was lost, the write was not): each save carries a nonce, and a
412 after a retry costs one HeadObject to tell "mine" from "another writer's". A load is one
GetObject; `exists`, one HeadObject.

The body is JSON (`_Stored`, format 2); the metadata repeats format, run tag, status, turns
and times, so `runs` lists without reading a body, and is sealed (`s3claim.s3._seal`) with
the body's SHA-256. A journal whose seal does not hold, or whose body is not a format-2 record
of this run, is a `ClaimStoreError` naming the run's tag, checked before the body is parsed;
nothing is resumed from it or overwrites it. `runs` lists it as `unreadable`.

Under a ring of keys (`S3CLAIM_HANDLE_KEY=new,old`), a journal is saved under the newest key
and found under any: a load or `exists` asks each key's place in turn, newest first (one
request more per key for a run the newest does not hold), and the first save of a journal
loaded from an older key's place writes it under the newest (`If-None-Match: *`) and deletes
the old object, so one journal per run stands and `s3claim doctor` sees the older key freed.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any, Literal, Unpack, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from s3claim.clock import Clock, SystemClock
from s3claim.errors import (
    ClaimStoreError,
    ConfigurationError,
    RunConflictError,
    RunNotFoundError,
)
from s3claim.journal import DEFAULT_JOURNAL_TTL_SECONDS, JournalEntry, RunInfo, RunRecord, RunStatus
from s3claim.s3._bucket import Bucket, BucketOptions
from s3claim.s3._errors import MISSING, Refused
from s3claim.s3._layout import JOURNAL_NAME, Layout
from s3claim.s3._lifecycle import day_class
from s3claim.s3._retry import RetryPolicy
from s3claim.s3._seal import Seal
from s3claim.s3.settings import S3ClaimSettings
from s3claim.safejson import MAX_DEPTH, JSONTooDeepError, loads
from s3claim.scope import Scope
from s3claim.store import check_ttl
from s3claim.telemetry import traced_journal_load, traced_journal_save

__all__ = ["FORMAT", "S3RunJournal"]

FORMAT = 2
_CONTENT_TYPE = "application/json"
_META_FORMAT = "s3claim-journal"
_META_RUN = "s3claim-run"
_META_STATUS = "s3claim-status"
_META_TURNS = "s3claim-turns"
_META_UPDATED = "s3claim-updated-at"
_META_EXPIRES = "s3claim-expires-at"
_META_WRITE = "s3claim-write"
_PRECONDITION = frozenset({"PreconditionFailed"})
_STATUSES = frozenset(get_args(RunStatus))
_CONFLICT = "run conflict: another writer recorded this run since it was loaded"
_TAKEN = "run id taken: a run with this id is already recorded"
_MOVED = "moved:"
"""Before an ETag, with the older key's run tag: a journal loaded from an older key's place."""


class _Stored(BaseModel):
    """The object's body (format 2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[2]
    run: str
    write: str
    updated_at: float
    expires_at: int
    record: RunRecord


class S3RunJournal:
    """Run records in the claim bucket, one object per run under the run's key prefix.

    Takes the store's bucket (a `Bucket`, such as `store.bucket`, or its name and settings as
    keywords, as the store does) so that its objects sit under the same tags and follow the
    same erasure and lifecycle rules. A `ttl_seconds` longer than the largest day class is
    refused, as a claim TTL is.
    """

    def __init__(
        self,
        bucket: str | Bucket,
        *,
        clock: Clock | None = None,
        ttl_seconds: int = DEFAULT_JOURNAL_TTL_SECONDS,
        **options: Unpack[BucketOptions],
    ) -> None:
        self._bucket = Bucket.given(bucket, options)
        self._clock = clock or SystemClock()
        check_ttl(ttl_seconds)
        try:
            self._days = day_class(ttl_seconds, self._bucket.classes)
        except ValueError as exc:
            raise ConfigurationError(f"run journal: {exc}") from None
        self._ttl = ttl_seconds

    @classmethod
    def from_settings(
        cls,
        settings: S3ClaimSettings | None = None,
        *,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
        ttl_seconds: int = DEFAULT_JOURNAL_TTL_SECONDS,
    ) -> S3RunJournal:
        """A journal on the bucket `S3ClaimCheckStore.from_settings()` uses: the same variables."""
        bucket = Bucket.from_settings(settings, retry=retry)
        return cls(bucket, clock=clock, ttl_seconds=ttl_seconds)

    @property
    def bucket(self) -> Bucket:
        return self._bucket

    def tenant_tag(self, tenant: str) -> str:
        """The tenant's keyed tag (telemetry names tenants by it)."""
        return self._bucket.key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._bucket.key.run_tag(scope)

    # -- the protocol ---------------------------------------------------------------------

    def exists(self, scope: Scope) -> bool:
        bucket = self._bucket
        return any(bucket.head(layout.journal_key(scope)) is not None for layout in bucket.layouts)

    @traced_journal_load
    def load(self, scope: Scope) -> JournalEntry:
        layouts = self._bucket.layouts
        for at, layout in enumerate(layouts):
            try:
                entry = self._load(scope, layout)
            except RunNotFoundError:
                if at == len(layouts) - 1:
                    raise
                continue
            if at:  # an older key's: the next save moves it under the newest (`save`)
                moved = f"{_MOVED}{layout.run_tag(scope)}{entry.version}"
                return JournalEntry(entry.record, moved)
            return entry
        raise RunNotFoundError  # never: a ring holds one key at least

    def _load(self, scope: Scope, layout: Layout) -> JournalEntry:
        bucket = self._bucket
        key, run_tag = layout.journal_key(scope), layout.run_tag(scope)

        def get() -> tuple[Mapping[str, str], bytes, str]:
            response = bucket.client.get_object(Bucket=bucket.name, Key=key)
            body = response["Body"]
            try:
                data = body.read()  # inside the retry: a cut stream is read again
            finally:
                body.close()
            return response.get("Metadata", {}), data, response["ETag"]

        try:
            meta, data, etag = bucket.request("GetObject", get, expect=MISSING)
        except Refused:
            raise RunNotFoundError from None
        stored = _decode(meta, data, run_tag, layout.seal(key))
        if stored.run != run_tag or stored.expires_at <= self._clock.now():
            raise RunNotFoundError
        return JournalEntry(stored.record, etag)

    @traced_journal_save
    def save(self, scope: Scope, record: RunRecord, *, replaces: str | None) -> str:
        if not isinstance(record, RunRecord):
            raise TypeError(f"save takes a RunRecord, got {type(record).__name__}")
        bucket = self._bucket
        key, run_tag = bucket.layout.journal_key(scope), bucket.layout.run_tag(scope)
        moved_from, moved_etag = None, None
        if replaces is not None and replaces.startswith(_MOVED):  # loaded under an older key
            tag = replaces[len(_MOVED) : len(_MOVED) + 32]
            moved_etag = replaces[len(_MOVED) + 32 :]
            moved_from = next((o for o in bucket.layouts[1:] if o.run_tag(scope) == tag), None)
            if moved_from is None:
                raise RunConflictError(_CONFLICT)  # its key has left the ring since
            replaces = None  # where no journal is yet, under the newest key
        now = self._clock.now()
        stored = _Stored(
            format=FORMAT,
            run=run_tag,
            write=secrets.token_hex(8),
            updated_at=now,
            expires_at=math.ceil(now + self._ttl),
            record=record,
        )
        body = stored.model_dump_json().encode("utf-8")
        sealed = bucket.layout.seal(key).metadata(_metadata(stored), body=body)
        attempts = 0

        def put() -> str:
            nonlocal attempts
            attempts += 1
            arguments = bucket.put_arguments(
                key,
                body,
                content_type=_CONTENT_TYPE,
                meta=sealed,
                days=self._days,
                if_none_match=replaces is None,
                if_match=replaces,
            )
            return bucket.client.put_object(**arguments)["ETag"]

        try:
            etag = bucket.request("PutObject", put, expect=_PRECONDITION | MISSING)
        except Refused as refused:
            # An earlier attempt may have landed, its answer lost.
            landed = self._landed(key, stored.write) if attempts > 1 else None
            if landed is None:
                if refused.code in MISSING:  # If-Match on no object: forgotten while it ran
                    raise RunNotFoundError from None
                taken = replaces is None and moved_from is None
                raise RunConflictError(_TAKEN if taken else _CONFLICT) from None
            etag = landed
        if moved_from is not None:  # one journal per run: the older key's copy goes
            # ...only as it was loaded (a conditional delete): a process still on the older
            # key alone may have saved over it since, and its turn must not be lost. Then
            # this save is the stale one: it is taken back, and the caller told to reload.
            delete = partial(bucket.client.delete_object, Bucket=bucket.name)
            old = partial(delete, Key=moved_from.journal_key(scope), IfMatch=moved_etag)
            try:
                bucket.request("DeleteObject", old, expect=_PRECONDITION | MISSING)
            except Refused:
                mine = partial(delete, Key=key, IfMatch=etag)
                bucket.request("DeleteObject", mine, expect=_PRECONDITION | MISSING)
                raise RunConflictError(_CONFLICT) from None
        return etag

    def _landed(self, key: str, write: str) -> str | None:
        """The ETag of the journal at `key` when it is this save's (its nonce), else None."""
        current = self._bucket.head(key)
        if current is not None and current.get("Metadata", {}).get(_META_WRITE) == write:
            return current["ETag"]
        return None

    # -- operations (not part of the protocol) ---------------------------------------------

    def runs(self, *, tenant: str, run: str | None = None) -> Iterator[RunInfo]:
        """Every run of a tenant with a journal (or the one named `run`, if it has one), by
        tag, expired ones included: one HEAD each, and no body (which holds tool results) is
        ever read. Under a ring, each key's place in turn, newest first."""
        for layout in self._bucket.layouts:
            yield from self._runs_under(layout, tenant=tenant, run=run)

    def _runs_under(self, layout: Layout, *, tenant: str, run: str | None) -> Iterator[RunInfo]:
        tenant_prefix = layout.tenant_prefix(tenant)
        under = tenant_prefix if run is None else layout.run_prefix(Scope(tenant, run))
        for key in self._bucket.keys(under):
            parts = key[len(tenant_prefix) :].split("/")
            if len(parts) != 2 or parts[1] != JOURNAL_NAME:
                continue
            head = self._bucket.head(key)
            if head is not None:  # forgotten or collected since the listing
                yield _info(head.get("Metadata", {}), parts[0], layout.seal(key))

    def __repr__(self) -> str:
        bucket = self._bucket
        return (
            f"S3RunJournal(bucket={bucket.name!r}, prefix={bucket.layout.prefix!r}, "
            f"ttl_seconds={self._ttl}, clock={self._clock!r})"
        )


def _metadata(stored: _Stored) -> dict[str, str]:
    return {
        _META_FORMAT: str(stored.format),
        _META_RUN: stored.run,
        _META_STATUS: stored.record.status,
        _META_TURNS: str(stored.record.turns),
        _META_UPDATED: repr(stored.updated_at),
        _META_EXPIRES: str(stored.expires_at),
        _META_WRITE: stored.write,
    }


def _damaged(run_tag: str, reason: str) -> ClaimStoreError:
    return ClaimStoreError(
        f"run journal {run_tag}: {reason}; it was left as it is", reason="damaged"
    )


def _check_format(value: object, run_tag: str) -> None:
    if isinstance(value, int | str) and str(value).isdigit() and int(value) > FORMAT:
        raise _damaged(
            run_tag,
            f"written in format {int(value)} by a newer s3claim, which this one (format "
            f"{FORMAT}) cannot read",
        )


def _decode(meta: Mapping[str, str], data: bytes, run_tag: str, seal: Seal) -> _Stored:
    """The body, checked; every failure names the run's tag and quotes nothing of the body."""
    _check_format(meta.get(_META_FORMAT), run_tag)
    try:
        seal.check_body(meta, data, operation="GetObject")
    except ClaimStoreError as exc:
        raise _damaged(run_tag, str(exc).removeprefix("GetObject: ")) from None
    try:
        raw: Any = loads(data.decode("utf-8"))
    except JSONTooDeepError:
        raise _damaged(run_tag, f"its JSON nests deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError):
        raise _damaged(run_tag, f"not a JSON document ({len(data)} bytes; truncated?)") from None
    if isinstance(raw, dict):
        _check_format(raw.get("format"), run_tag)
    try:
        return _Stored.model_validate(raw)
    except ValidationError as exc:
        raise _damaged(run_tag, f"not a format {FORMAT} record ({_reasons(exc)})") from None


def _reasons(exc: ValidationError) -> str:
    """Error kinds only: field paths can hold a damaged body's own keys, which could be anything."""
    kinds = sorted({str(e["type"]) for e in exc.errors(include_url=False, include_input=False)})
    return f"{exc.error_count()} error(s): {', '.join(kinds[:5])}"


def _info(meta: Mapping[str, str], run_tag: str, seal: Seal) -> RunInfo:
    """A listing row from metadata alone; an object this version cannot read, or whose seal
    does not hold, is listed as `unreadable` (its tag is what an operator needs), not allowed
    to break the listing."""
    try:
        seal.check_metadata(meta, operation="HeadObject")
        status = meta[_META_STATUS]
        if meta.get(_META_FORMAT) != str(FORMAT) or status not in _STATUSES:
            raise ValueError(status)
        return RunInfo(
            run_tag=run_tag,
            status=status,  # type: ignore[arg-type]
            turns=int(meta[_META_TURNS]),
            updated_at=float(meta[_META_UPDATED]),
            expires_at=int(meta[_META_EXPIRES]),
        )
    except (KeyError, ValueError, ClaimStoreError):
        return RunInfo(run_tag=run_tag, status="unreadable", turns=0, updated_at=0.0, expires_at=0)
