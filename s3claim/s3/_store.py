"""S3ClaimCheckStore: claims shared by every process that holds the bucket and the handle key.

A claim is at most two sealed objects (`_format`), its text at a fixed width and its index
beside it; every reading mode is the engine's (`s3claim.store.RangedStore`) over their ranges
(`_reads`). What each operation costs in requests is in docs/s3.md ("Requests"). Expiry is
enforced on every read, to the second; lifecycle rules only collect the garbage.

A claim's first write is its check-in, under a random id in both objects' sealed metadata
(`s3claim.store.new_check_in_id`); a link names it, and reads nothing of another check-in of
the same handle (the same text checked in again after `forget`). A repeat put refreshes the
claim in place and keeps its check-in: the process that wrote it remembers the id; another
process learns it, with the expiry and the tool standing, from one HeadObject after its
conditional PUT found the claim there. So a refresh never shortens a claim's life nor
changes its tool, from whichever process.

Permissions: s3:PutObject, s3:PutObjectTagging, s3:GetObject, s3:DeleteObject(Version) (by
VersionId, "null" unversioned), s3:ListBucketVersions, and s3:ListBucket, without which S3
answers 403, not 404, for a missing key: an unknown handle would look like a store failure.
"""

from __future__ import annotations

import math
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Unpack

import s3claim.s3._format as _format
from s3claim.clock import Clock, SystemClock
from s3claim.erasure import ErasureReceipt, issue_receipt
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import (
    HANDLE_PREFIX,
    HandleKey,
    content_width,
    digest_of,
    handle_width,
    is_handle,
)
from s3claim.s3._bucket import Bucket, BucketOptions
from s3claim.s3._erase import Eraser
from s3claim.s3._errors import MISSING, Refused
from s3claim.s3._format import ObjectMeta
from s3claim.s3._layout import HAND_OFF_SUFFIX, Layout
from s3claim.s3._lifecycle import day_class
from s3claim.s3._reads import FirstFound, Ranges, Sealed, head
from s3claim.s3._retry import RetryPolicy
from s3claim.s3.settings import S3ClaimSettings
from s3claim.scope import Scope
from s3claim.store import (
    CheckIn,
    ClaimInfo,
    Facts,
    RangedStore,
    build_index,
    check_ttl,
    count_lines,
    new_check_in_id,
    recorded_tool,
)
from s3claim.telemetry import traced_forget

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["S3ClaimCheckStore"]

_WRITTEN_CACHE = 4096
"""Claims this process remembers writing (key -> check-in id, expiry, tool), to skip repeat
puts for free and refresh the others keeping their check-in and its tool, with no HEAD."""
_MARK = "application/octet-stream"
"""A mark's content type: a hand-off copy's (an empty object beside it,
`_layout.HAND_OFF_SUFFIX`) and a run's (`_layout.MARK_NAME`)."""


class S3ClaimCheckStore(RangedStore):
    """Claims in an S3 bucket, each at a fixed width so any window is one ranged GET.

    `bucket` is its name, with the settings as keywords (`handle_key` is the shared secret
    behind handles and key tags: every process that must redeem another's handles needs the
    same key and bucket), or a `Bucket` already built (shared with a run journal). A
    `client` you pass keeps its credentials, endpoint and hooks, but not its retries for the
    store's requests: the store's `retry` policy is the only one (`s3claim.s3._retry`).
    """

    def __init__(
        self, bucket: str | Bucket, *, clock: Clock | None = None, **options: Unpack[BucketOptions]
    ) -> None:
        self._bucket = Bucket.given(bucket, options)
        self._clock = clock or SystemClock()
        self._written: OrderedDict[str, _Stamp] = OrderedDict()
        self._lock = threading.Lock()
        self._eraser = Eraser(self._bucket)

    @classmethod
    def from_settings(
        cls,
        settings: S3ClaimSettings | None = None,
        *,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
    ) -> S3ClaimCheckStore:
        """A store configured from `S3CLAIM_*` variables (or the settings given), each
        refused by name here rather than at first use."""
        return cls(Bucket.from_settings(settings, retry=retry), clock=clock)

    @property
    def bucket(self) -> Bucket:
        """The bucket, its client and settings: share it with a run journal or audit trail."""
        return self._bucket

    @property
    def client(self) -> S3Client:
        """The client every request goes through (its retries stand down for ours)."""
        return self._bucket.client

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def retry(self) -> RetryPolicy:
        return self._bucket.retry

    @property
    def layout(self) -> Layout:
        """Where each scope's objects live (keyed tags, never names)."""
        return self._bucket.layout

    @property
    def max_ttl_seconds(self) -> int:
        """The longest TTL a claim may have: lifecycle deletes after the largest day class."""
        return self._bucket.max_ttl_seconds

    def tenant_tag(self, tenant: str) -> str:
        """The tenant's keyed tag: its prefix in the bucket, its name in telemetry."""
        return self._bucket.key.tenant_tag(tenant)

    def run_tag(self, scope: Scope) -> str:
        return self._bucket.key.run_tag(scope)

    # -- put ----------------------------------------------------------------------------

    def put(self, scope: Scope, content: str, *, ttl_seconds: int, tool: str | None = None) -> str:
        """Store content for this scope (`tool`: whose result it is, for `claims`); the
        handle it returns is readable for ttl_seconds."""
        check_ttl(ttl_seconds)
        bucket, layout = self._bucket, self._bucket.layout
        days = day_class(ttl_seconds, bucket.classes)
        width = content_width(content)
        if len(content) > _format.max_chars(width):
            raise ValueError(
                f"content of {len(content)} characters exceeds the {_format.max_chars(width)} "
                f"a single S3 object can hold at {width} byte(s) a character"
            )
        # ASCII is its own UTF-8 and its own Latin-1 body: laid out once, its blocks hashed
        # as they are placed, for the handle and the seal's tags both.
        laid = _format.laid_out_body(content, 1) if content.isascii() else None
        digest = digest_of(laid[1]) if laid is not None else None
        handle = bucket.key.handle(scope, content, digest=digest)
        key = layout.object_key(scope, handle)
        expires_at = math.ceil(self._clock.now() + ttl_seconds)  # lives at least its TTL
        with self._lock:
            known = self._written.get(key)
            if known is not None:
                self._written.move_to_end(key)
        if known is not None and known.expires_at >= expires_at:
            return handle
        objects = _Objects(bucket, scope, handle, content, width=width)
        if known is not None:  # ours: refreshed in place, its check-in and tool kept
            kept = _Stamp(known.check_in_id, expires_at, known.tool, days)
            if objects.refresh(kept):
                self._remember(key, kept)
                return handle
        tool = known.tool if known is not None else recorded_tool(tool)  # the first one's
        stamp = _Stamp(new_check_in_id(), expires_at, tool, days)  # a check-in of its own
        body = layout.seal(key).tag(*(laid or _format.laid_out_body(content, width)))
        # Written; or there already (another writer's), refreshed keeping what stands (one
        # HEAD reads it); or gone between the two (forgotten, collected), written once more.
        if not objects.write(body, stamp):
            standing = objects.standing(stamp, now=self._clock.now())
            if standing is None or not objects.refresh(standing):
                if not objects.write(body, stamp):
                    raise ClaimStoreError("PutObject: the claim vanished while it was refreshed")
            else:
                stamp = standing
        self._remember(key, stamp)
        return handle

    def _remember(self, key: str, stamp: _Stamp) -> None:
        with self._lock:
            known = self._written.get(key)
            if known is not None and known.expires_at > stamp.expires_at:
                stamp = replace(stamp, expires_at=known.expires_at)
            self._written[key] = stamp
            self._written.move_to_end(key)
            while len(self._written) > _WRITTEN_CACHE:
                self._written.popitem(last=False)

    # -- reads ---------------------------------------------------------------------------

    def ranges(
        self, scope: Scope, handle: str, *, check_in_id: str | None = None
    ) -> Ranges | FirstFound:
        found = [Ranges(self._bucket, *o) for o in self._objects(scope, handle, check_in_id)]
        return found[0] if len(found) == 1 else FirstFound(found)

    def _objects(
        self, scope: Scope, handle: str, check_in_id: str | None = None
    ) -> list[tuple[Sealed, Sealed]]:
        """The claim's objects under each key of the ring that may have made it, most likely
        first (`Bucket.layouts_for`): one pair with one key."""
        return [
            claim_objects(layout, scope, handle, self._clock, check_in_id=check_in_id)
            for layout in self._bucket.layouts_for(handle)
        ]

    def _standing(self, scope: Scope, handle: str) -> tuple[Sealed, ObjectMeta, Layout]:
        """The claim's own object, its metadata from one HeadObject checked as a read checks
        it, and the layout (the key) it stands under; one HEAD more for each key of the ring
        that does not hold it."""
        candidates = self._objects(scope, handle)
        for at, (claim, _) in enumerate(candidates):
            try:
                return claim, head(self._bucket, claim), claim.layout
            except ClaimUnavailableError:
                if at == len(candidates) - 1:
                    raise
        raise ClaimUnavailableError  # no candidate at all: never, a ring holds one key

    def checked_in(self, scope: Scope, handle: str) -> CheckIn:
        """Until when the claim reads (epoch seconds) and which check-in it is: one
        HeadObject, checked as a read checks it (`ClaimUnavailableError` for every handle
        `fetch` refuses)."""
        if not is_handle(handle):
            raise ClaimUnavailableError
        _, meta, _ = self._standing(scope, handle)
        return CheckIn(meta.expires_at, meta.check_in_id)

    @property
    def handle_key(self) -> HandleKey:
        """The secret behind handles, tags and links (`s3claim.links`); its repr hides it."""
        return self._bucket.key

    # -- run marks (`s3claim.reuse`) ---------------------------------------------------------

    def run_mark(self, scope: Scope) -> str | None:
        """The run's mark: one GetObject of its 32 bytes (None: it has none)."""
        bucket, key = self._bucket, self._bucket.layout.mark_key(scope)
        get = partial(bucket.client.get_object, Bucket=bucket.name, Key=key)
        try:
            body = bucket.request("GetObject", lambda: get()["Body"].read(), expect=MISSING)
        except Refused:
            return None
        return body.decode("ascii", "replace")

    def new_run_mark(self, scope: Scope) -> str | None:
        """A mark for a run that has none: one PutObject where no object is."""
        token = secrets.token_hex(16)
        return token if self._put_mark(scope, token, exclusive=True) else None

    def mark_written(self, scope: Scope) -> None:
        """A new mark for the run: one PutObject for each key of the ring, so a process
        whose ring has another key first (a rotation rolling out) sees the write too."""
        token = secrets.token_hex(16)
        for layout in self._bucket.layouts:
            self._put_mark(scope, token, exclusive=False, layout=layout)

    def _put_mark(
        self, scope: Scope, token: str, *, exclusive: bool, layout: Layout | None = None
    ) -> bool:
        # Tagged for the longest day class: a mark outlives none of its run's claims.
        bucket = self._bucket
        return bucket.put(
            (layout or bucket.layout).mark_key(scope), token.encode("ascii"), content_type=_MARK,
            meta={}, days=bucket.classes[-1], exclusive=exclusive,
        )  # fmt: skip

    # -- hand-off --------------------------------------------------------------------------

    def hand_off(self, scope: Scope, handle: str, *, to: Scope, ttl_seconds: int) -> str:
        """The claim, readable in the run `to` for `ttl_seconds` (`RangedStore.hand_off`).

        One HeadObject checks the claim as a read would; one server-side CopyObject of each
        of its objects puts it under `to`'s run prefix with new sealed metadata (`to`'s run,
        its own expiry, a check-in of its own, and the key the block tags are bound to). No
        byte of the body passes through this process; the copy lives on whatever becomes of
        the original, until its own expiry or a `forget` of its tenant or run (the same
        hand-off again is a new check-in: links to the copy made before it end). Once the
        claim's copy stands, an empty object beside it marks it a copy (sent beside the
        index's copy), so that an erasure counts hand-off copies by key (`erase`), reading
        none.
        """
        check_ttl(ttl_seconds)
        if to.tenant != scope.tenant:
            raise ValueError("a claim is handed off within its tenant only")
        if not is_handle(handle):
            raise ClaimUnavailableError
        bucket = self._bucket
        # Under the key of the ring that made the claim: its blocks are sealed under that key,
        # so the copy hangs on it too, and `s3claim doctor` counts it there.
        claim, meta, layout = self._standing(scope, handle)
        child = layout.key.handed_off(handle, to)
        days = day_class(ttl_seconds, bucket.classes)
        expires_at = math.ceil(self._clock.now() + ttl_seconds)
        original = meta.blocks_key or claim.key  # a hand-off of a hand-off: still the original
        child_key = layout.object_key(to, child)
        stamp = _Stamp(new_check_in_id(), expires_at, meta.tool, days)
        copies = [(claim.key, child_key, original, meta.size, meta.width)]
        if meta.index_size:
            index_keys = layout.index_key(scope, handle), layout.index_key(to, child)
            copies.append((*index_keys, layout.index_of(original), meta.index_size, None))
        mark: Future[bool] | None = None
        for source, target, blocks_key, size, width in copies:
            fields = _format.metadata(
                expires_at=expires_at,
                facts=meta.facts,
                size=size,
                run_tag=layout.run_tag(to),
                width=width,
                index_size=meta.index_size if width else 0,
                blocks_key=blocks_key,
                tool=meta.tool if width else None,
                check_in_id=stamp.check_in_id,
            )
            content_type = _format.CONTENT_TYPES[width] if width else _format.INDEX_CONTENT_TYPE
            sealed = layout.seal(target).metadata(fields)
            if not bucket.copy(source, target, content_type=content_type, meta=sealed, days=days):
                raise ClaimUnavailableError  # gone between the HEAD and the copy
            if mark is None:  # the claim's copy stands: mark it, beside the index's copy
                marking = partial(bucket.put, child_key + HAND_OFF_SUFFIX, b"", meta={}, days=days)
                mark = bucket.beside(partial(marking, content_type=_MARK))
        assert mark is not None
        mark.result()
        self._remember(child_key, stamp)
        return child

    # -- forget -------------------------------------------------------------------------

    @traced_forget
    def erase(
        self,
        *,
        tenant: str,
        run: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ErasureReceipt:
        """Erase a tenant (or one run): its claims, their indexes and hand-off marks, its
        journals and audit records, every version and every delete marker; return the
        signed receipt (`s3claim.erasure`). Sweeps the tenant's (or run's) claims prefix and
        its part of the audit area, each until a listing finds nothing: 2 requests per 1,000
        objects and one listing more per prefix. `progress(claims so far)` after each batch.
        """
        if not isinstance(tenant, str) or not tenant:
            raise ValueError(f"tenant must be a non-empty string, got {type(tenant).__name__}")
        bucket = self._bucket
        swept = tuple(p for layout in bucket.layouts for p in layout.erased_prefixes(tenant, run))
        started = self._clock.now()
        try:
            erased = self._eraser.erase(swept, progress=progress)
        finally:
            with self._lock:
                for key in [k for k in self._written if k.startswith(swept[0])]:
                    del self._written[key]
        return issue_receipt(
            bucket.key,
            store=f"s3://{bucket.name}",
            tenant=bucket.key.tenant_tag(tenant),
            run=None if run is None else bucket.key.run_tag(Scope(tenant, run)),
            swept=swept,
            started_at=datetime.fromtimestamp(started, UTC),
            finished_at=datetime.fromtimestamp(self._clock.now(), UTC),
            claims=erased.claims,
            hand_offs=erased.keys["hand_off"],
            indexes=erased.keys["index"],
            journals=erased.keys["journal"],
            audit_records=erased.keys["audit"],
            other=erased.keys["other"] + erased.keys["mark"],
            versions=erased.versions,
            delete_markers=erased.delete_markers,
            remaining=0,  # each prefix was listed until it came back empty
        )

    def forget(
        self,
        *,
        tenant: str,
        run: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Erase every claim of a tenant (or of one run) as `erase` does; returns the number
        of claims (distinct keys, hand-off copies included) removed. A claim's index, and a
        run's journal and audit trail, go with it but are not claims, so they are not counted.
        """
        return self.erase(tenant=tenant, run=run, progress=progress).claims

    # -- listing (`RangedStore.claims`; not part of the store protocol) ---------------------

    def claims(self, *, tenant: str, run: str | None = None) -> Iterator[ClaimInfo]:
        """Every claim of a tenant (or one run) in key order, expired ones included until
        lifecycle collects them.

        Keys give the handles; each claim's size and expiry cost one HEAD, and no body
        (tool content) is ever read. Objects under the prefix that are not claims are skipped;
        a claim whose metadata seal fails (or of an older format) is listed as `damaged`.
        Under a ring, each key's prefix is listed in turn, newest first.
        """
        for layout in self._bucket.layouts:
            yield from self._claims_under(layout, tenant=tenant, run=run)

    def _claims_under(self, layout: Layout, *, tenant: str, run: str | None) -> Iterator[ClaimInfo]:
        bucket = self._bucket
        if run is not None:
            under, depth = layout.run_prefix(Scope(tenant=tenant, run=run)), 1
        else:
            under, depth = layout.tenant_prefix(tenant), 2  # run_tag/digest
        for key in bucket.keys(under):
            parts = key[len(under) :].split("/")
            handle = HANDLE_PREFIX + parts[-1]
            if len(parts) != depth or not is_handle(handle):
                continue
            found = bucket.head(key)
            if found is None:
                continue  # forgotten or collected since the listing
            try:
                meta = _format.parse_metadata(found["Metadata"], operation="HeadObject")
                layout.seal(key).check_metadata(found["Metadata"], operation="HeadObject")
            except ClaimStoreError:
                run_tag = key.rsplit("/", 2)[-2]  # {prefix}{tenant}/{run}/{digest}
                yield ClaimInfo(handle, run_tag, 0, 0, damaged=True)
                continue
            yield ClaimInfo(
                handle,
                meta.run_tag,
                meta.chars,
                meta.expires_at,
                tool=meta.tool,
                lines=meta.lines,
            )

    def __repr__(self) -> str:
        bucket = self._bucket
        return (
            f"S3ClaimCheckStore(bucket={bucket.name!r}, prefix={bucket.layout.prefix!r}, "
            f"sse={bucket.sse.algorithm!r}, ttl_day_classes={bucket.classes}, "
            f"clock={self._clock!r})"
        )


@dataclass(frozen=True, slots=True)
class _Stamp:
    """What a write or a refresh sets on a claim's objects beyond what its text fixes: its
    check-in, its expiry, the tool, and the lifecycle day class that outlives the expiry."""

    check_in_id: str
    expires_at: int
    tool: str | None
    days: int


class _Objects:
    """A claim's objects as one put writes them: each one's key and content type, the fields
    its text fixes, the index sealed whole (the only form of it kept), and how to write and
    refresh them under a `_Stamp` (both objects always under the same one)."""

    __slots__ = ("_bucket", "_claim", "_fields", "_index", "_index_size", "_width")

    def __init__(
        self, bucket: Bucket, scope: Scope, handle: str, content: str, *, width: int
    ) -> None:
        layout = bucket.layout
        built = build_index(content)
        facts = Facts(len(content), count_lines(content))
        self._bucket, self._width = bucket, width
        self._fields = partial(_format.metadata, facts=facts, run_tag=layout.run_tag(scope))
        self._index_size = len(built or b"")
        self._claim = (layout.object_key(scope, handle), width * len(content))
        self._index: tuple[str, bytearray] | None = None
        if built is not None:
            index_key = layout.index_key(scope, handle)
            self._index = (index_key, layout.seal(index_key).blocks(built))

    def _claim_meta(self, stamp: _Stamp) -> dict[str, str]:
        key, size = self._claim
        fields = self._fields(
            expires_at=stamp.expires_at,
            size=size,
            width=self._width,
            index_size=self._index_size,
            tool=stamp.tool,
            check_in_id=stamp.check_in_id,
        )
        return self._bucket.layout.seal(key).metadata(fields)

    def _index_meta(self, stamp: _Stamp) -> dict[str, str]:
        fields = self._fields(
            expires_at=stamp.expires_at, size=self._index_size, check_in_id=stamp.check_in_id
        )
        assert self._index is not None
        return self._bucket.layout.seal(self._index[0]).metadata(fields)

    def write(self, body: bytearray, stamp: _Stamp) -> bool:
        """The claim where none is (`If-None-Match: *`) and its index beside it, sent at once
        and each only where none is, so a check-in standing already keeps both as they are;
        False when the claim is there. Both stand, or the check-in fails (an index left by a
        check-in that failed is written over once the claim is written)."""
        beside = None
        if self._index is not None:
            beside = self._bucket.beside(partial(self._write_index, stamp, exclusive=True))
        key, content_type = self._claim[0], _format.CONTENT_TYPES[self._width]
        written = False
        try:
            written = self._bucket.put(
                key,
                body,
                content_type=content_type,
                meta=self._claim_meta(stamp),
                days=stamp.days,
                exclusive=True,
            )
        finally:
            if beside is not None and not beside.result() and written:
                self._write_index(stamp)
        return written

    def standing(self, stamp: _Stamp, *, now: float) -> _Stamp | None:
        """What a refresh of the claim standing keeps (one HeadObject): its check-in, its
        tool and its expiry when longer than `stamp`'s; None when the claim is gone. One whose
        metadata does not hold (damaged, another format) is written over with `stamp`."""
        key = self._claim[0]
        found = self._bucket.head(key)
        if found is None:
            return None
        try:
            meta = _format.parse_metadata(found["Metadata"], operation="HeadObject")
            self._bucket.layout.seal(key).check_metadata(found["Metadata"], operation="HeadObject")
        except ClaimStoreError:
            return stamp
        if meta.expires_at <= stamp.expires_at:
            expires_at, days = stamp.expires_at, stamp.days
        else:  # the longer life stands, and the lifecycle class of what is left of it
            expires_at, bucket = meta.expires_at, self._bucket
            # In whole seconds from now, as a put counts its TTL (the expiry rounds it up).
            left = min(expires_at - math.ceil(now), bucket.max_ttl_seconds)
            days = max(stamp.days, day_class(left, bucket.classes))
        check_in_id = meta.check_in_id or stamp.check_in_id  # one written before ids: now one
        return _Stamp(check_in_id, expires_at, meta.tool, days)

    def refresh(self, stamp: _Stamp) -> bool:
        """The claim's new stamp, in place, no body sent (a new object: lifecycle counts from
        now, and the stamp's day class covers it); the index's too (written again if it is
        gone). False when the claim is gone."""
        key, content_type = self._claim[0], _format.CONTENT_TYPES[self._width]
        if not self._copy(key, self._claim_meta(stamp), content_type, stamp.days):
            return False
        if self._index is not None:
            index_key, meta = self._index[0], self._index_meta(stamp)
            if not self._copy(index_key, meta, _format.INDEX_CONTENT_TYPE, stamp.days):
                self._write_index(stamp)
        return True

    def _copy(self, key: str, meta: dict[str, str], content_type: str, days: int) -> bool:
        return self._bucket.copy(key, key, content_type=content_type, meta=meta, days=days)

    def _write_index(self, stamp: _Stamp, *, exclusive: bool = False) -> bool:
        assert self._index is not None
        key, sealed = self._index
        return self._bucket.put(
            key,
            sealed,
            content_type=_format.INDEX_CONTENT_TYPE,
            meta=self._index_meta(stamp),
            days=stamp.days,
            exclusive=exclusive,
        )


def claim_objects(
    layout: Layout, scope: Scope, handle: str, clock: Clock, *, check_in_id: str | None = None
) -> tuple[Sealed, Sealed]:
    """The claim's two objects (its text, its index) as a reader in `scope` checks them under
    `layout` (one key's of the ring); with `check_in_id`, only that check-in of the claim reads."""
    run_tag, width = layout.run_tag(scope), handle_width(handle)
    return (
        Sealed(layout.object_key(scope, handle), run_tag, width, layout, clock.now, check_in_id),
        Sealed(layout.index_key(scope, handle), run_tag, None, layout, clock.now, check_in_id),
    )
