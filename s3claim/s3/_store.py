"""S3ClaimCheckStore: claims shared by every process that holds the bucket and the handle key.

Request budgets (each a single HTTP request unless retried):

- put: one conditional PutObject (`If-None-Match: *`). Identical content in the same scope is
  one object; putting it again refreshes its expiry with one in-place CopyObject (no body).
  A process that stored it itself and whose recorded expiry already covers the new one sends
  nothing. Indexes go beside it, one request more each, sent while the claim's body is: a
  JSON claim's (`_paths`), and the line index of a claim of two lines or more (`_lines`,
  which also reads by line and end).
- fetch: one ranged GetObject of the sealed blocks holding the window (width*limit bytes and
  a 16-byte tag per 4,096 when the window starts on a block, at most a block more when not),
  the width (1, 2 or 4) read from the handle; the seal, expiry and run are checked from that
  response's metadata, every block's tag from its bytes (`_seal`). The only two-request case
  is a window at or past the end of the last block (or an empty claim): S3 answers 416
  without metadata, so one HeadObject checks the claim still stands.
- hand_off: a HeadObject and server-side copies, no body through the process (`_hand_off`).
- forget: ListObjectVersions then DeleteObjects, up to 1,000 versions a round: every version
  and delete marker under the prefix (`_erase`, also for servers without a versioning API).

Expiry is enforced on every read, to the second; lifecycle rules only collect the garbage.
Known limit: a refresh from another process than the writer cannot see the expiry it replaces
(a HEAD more), so it may set a shorter one; within one process a refresh never shortens.

Permissions: s3:PutObject, s3:PutObjectTagging, s3:GetObject, s3:DeleteObject(Version) (by
VersionId, "null" unversioned), s3:ListBucketVersions, and s3:ListBucket, without which S3
answers 403, not 404, for a missing key: an unknown handle would look like a store failure.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Literal

from pydantic import SecretStr

import s3claim.s3._format as _format
from s3claim._background import Background
from s3claim._blocks import digest_of
from s3claim._lines import count_lines
from s3claim.clock import Clock
from s3claim.errors import ClaimStoreError, ClaimUnavailableError
from s3claim.handles import HANDLE_PREFIX, HandleKey, handle_width, is_handle
from s3claim.s3._body import Body
from s3claim.s3._bucket import InBucket
from s3claim.s3._config import bucket_arguments
from s3claim.s3._erase import Eraser
from s3claim.s3._errors import MISSING
from s3claim.s3._format import ClaimInfo
from s3claim.s3._hand_off import HandOffs, HandsOff
from s3claim.s3._lifecycle import day_class
from s3claim.s3._lines import LineIndexes, LineReads, counted_body_index
from s3claim.s3._paths import JsonIndexes, PathReads, looks_like_json
from s3claim.s3._read import WindowRead, checked_meta, empty_window_of, plan_read, window_of
from s3claim.s3._retry import Refused, RetryPolicy
from s3claim.s3._scan import pieces
from s3claim.s3.settings import S3ClaimSettings
from s3claim.scope import Scope
from s3claim.store import DEFAULT_FETCH_CHARS, Window, check_ttl
from s3claim.telemetry import traced_fetch, traced_forget

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import GetObjectOutputTypeDef

__all__ = ["ClaimInfo", "S3ClaimCheckStore"]

_BESIDE = Background(16, "s3claim-indexes")
"""Writes a claim's indexes while its body is sent; shared by every store in the process."""
_INDEXING = Background(4, "s3claim-lines")
"""Indexes a claim's lines while its CRC32 is taken: a pool of its own, never queued behind
other claims' index uploads (and their retries) on `_BESIDE`."""
_WRITTEN_CACHE = 4096
"""Claims this process remembers writing (key -> expiry), to skip repeat puts for free."""


class S3ClaimCheckStore(InBucket, PathReads, LineReads, HandsOff):
    """Claims in an S3 bucket, each at a fixed width so any window is one ranged GET.

    `handle_key` is the shared secret behind handles and key tags: every process that must
    redeem another's handles needs the same key and bucket. A `client` you pass keeps its
    credentials, endpoint and hooks, but not its retries for the store's requests: the
    store's `retry` policy is the only one (see `s3claim.s3._retry.own_retries`).
    """

    def __init__(
        self,
        bucket: str,
        *,
        handle_key: HandleKey | SecretStr | str | bytes,
        prefix: str = "claims/",
        client: S3Client | None = None,
        clock: Clock | None = None,
        sse: Literal["AES256", "aws:kms"] = "AES256",
        kms_key_id: str | None = None,
        ttl_day_classes: Sequence[int] = (1, 7, 30),
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(
            bucket,
            handle_key=handle_key,
            prefix=prefix,
            client=client,
            clock=clock,
            sse=sse,
            kms_key_id=kms_key_id,
            ttl_day_classes=ttl_day_classes,
            retry=retry,
        )
        self._written: OrderedDict[str, int] = OrderedDict()
        self._eraser, self._indexes = Eraser(self), JsonIndexes(self)
        self._lines = LineIndexes(self)
        self._hand_offs = HandOffs(self)
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls,
        settings: S3ClaimSettings | None = None,
        *,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
    ) -> S3ClaimCheckStore:
        """A store configured from `S3CLAIM_*` variables (or the settings given).

        Refuses a missing bucket or handle key by variable name, here rather than at first use.
        """
        return cls(**bucket_arguments(settings), clock=clock, retry=retry)

    def put(self, scope: Scope, content: str, *, ttl_seconds: int) -> str:
        """Store content for this scope; the handle it returns is readable for ttl_seconds."""
        check_ttl(ttl_seconds)
        days = day_class(ttl_seconds, self._classes)
        # ASCII is its own UTF-8 and its own Latin-1 body: laid out once, its blocks hashed
        # as they are placed, for the handle and the seal's tags both.
        laid = _format.laid_out_body(content, 1) if content.isascii() else None
        handle = self._key.handle(
            scope, content, digest=digest_of(laid[1]) if laid is not None else None
        )
        width = handle_width(handle)
        if len(content) > _format.max_chars(width):
            raise ValueError(
                f"content of {len(content)} characters exceeds the {_format.max_chars(width)} "
                f"a single S3 object can hold at {width} byte(s) a character"
            )
        key = self._layout.object_key(scope, handle)
        expires_at = math.ceil(self._clock.now() + ttl_seconds)  # lives at least its TTL
        with self._lock:
            known = self._written.get(key)
            if known is not None:
                self._written.move_to_end(key)
        if known is not None and known >= expires_at:
            return handle
        refresh_first, indexed = known is not None, False
        body: Body | None = None
        checksum: str | None = None
        index: bytes | None = None
        if refresh_first:  # lines in the sealed metadata; the body only if it must be written
            lines = count_lines(content)
        else:
            body, checksum, lines, index = self._prepared(key, laid, content, width)
        meta = self._layout.seal(key).metadata(
            _format.metadata(
                expires_at=expires_at,
                chars=len(content),
                run_tag=self._layout.run_tag(scope),
                width=width,
                lines=lines,
                json=looks_like_json(content),
            )
        )
        at = {"chars": len(content), "lines": lines, "expires_at": expires_at, "days": days}
        # Known to exist: refresh first. Otherwise write; a 412 says it exists: refresh. A
        # refresh that finds nothing (forgotten or collected meanwhile) writes again.
        for _ in range(2):
            if refresh_first and self._refresh(key, width, meta, days):
                if not indexed:
                    self._indexes.refresh(scope, handle, content, expires_at=expires_at, days=days)
                    self._lines.refresh(scope, handle, **at)
                break
            if body is None:  # prepared once, whatever the loop does next
                body, checksum, _, index = self._prepared(key, laid, content, width)
            # The indexes are built and put while the claim's body is sent: never raises. An
            # index whose claim then fails to be written is collected with the run's objects.
            beside = _BESIDE.submit(self._write_indexes, scope, handle, content, index, at)
            try:
                created = self._put(
                    key,
                    body,
                    _format.CONTENT_TYPES[width],
                    meta,
                    days,
                    exclusive=True,
                    checksum=checksum,
                )
            finally:
                beside.result()
            if created:
                break
            refresh_first = indexed = True
        else:
            raise ClaimStoreError("PutObject: the claim vanished while it was being refreshed")
        self._remember(key, expires_at)
        return handle

    def _prepared(
        self, key: str, laid: tuple[Body, list[bytes]] | None, content: str, width: int
    ) -> tuple[Body, str | None, int, bytes | None]:
        """The claim's body as stored (laid out, already for ASCII; tagged), its CRC32 for
        `_put`, its line count and index: the CRC taken here while a worker indexes it."""
        body = self._layout.seal(key).tag(*(laid or _format.laid_out_body(content, width)))
        checksum, (lines, index) = _INDEXING.meanwhile(
            partial(self._checksum, body), partial(counted_body_index, body, content, width)
        )
        return body, checksum, lines, index

    def _write_indexes(
        self, scope: Scope, handle: str, content: str, index: bytes | None, at: dict[str, int]
    ) -> None:
        """Put the indexes of a claim being written beside it (JSON, lines); never raises."""
        self._indexes.write(scope, handle, content, expires_at=at["expires_at"], days=at["days"])
        self._lines.write(scope, handle, index, **at)

    def _refresh(self, key: str, width: int, meta: dict[str, str], days: int) -> bool:
        """Rewrite expiry in place, without the body; False when the object is gone. The copy
        is a new object (lifecycle counts from now) whose metadata holds the new expiry, so
        this TTL's day class covers it, as it does a first write."""
        return self._copy(key, key, _format.CONTENT_TYPES[width], meta, days)

    def _remember(self, key: str, expires_at: int) -> None:
        with self._lock:
            self._written[key] = max(expires_at, self._written.get(key, expires_at))
            self._written.move_to_end(key)
            while len(self._written) > _WRITTEN_CACHE:
                self._written.popitem(last=False)

    # -- fetch --------------------------------------------------------------------------

    @traced_fetch
    def fetch(
        self, scope: Scope, handle: str, offset: int = 0, limit: int = DEFAULT_FETCH_CHARS
    ) -> Window:
        """content[offset:offset + limit] with one ranged GET (see the module docstring)."""
        read = plan_read(self.layout, scope, handle, offset, limit)
        if read.past_any_object:
            return self._empty_window(read)

        def get() -> tuple[Mapping[str, str], str | None, bytes]:
            response = self._client.get_object(
                Bucket=self._bucket, Key=read.key, Range=read.byte_range
            )
            # Read inside the retry, so a cut stream is retried, and through StreamingBody
            # itself: its `with` block yields the raw urllib3 stream, whose read() skips the
            # length and checksum checks and raises urllib3's own errors, not botocore's.
            body = response["Body"]
            content_range = response.get("ContentRange")
            try:
                data = body.read() if read.has_body(content_range) else b""
            finally:
                body.close()
            return response["Metadata"], content_range, data

        try:
            answer = self._request("GetObject", get, expect=MISSING | {"InvalidRange"})
        except Refused as refused:
            if refused.code == "InvalidRange":
                return self._empty_window(read)
            raise ClaimUnavailableError from None
        return window_of(read, *answer, now=self.clock.now())

    def _empty_window(self, read: WindowRead) -> Window:
        """After a 416 (no metadata in it): one HEAD decides between empty and unavailable."""
        try:
            head = self._request(
                "HeadObject",
                lambda: self._client.head_object(Bucket=self._bucket, Key=read.key),
                expect=MISSING,
            )
        except Refused:
            raise ClaimUnavailableError from None
        return empty_window_of(read, head["Metadata"], now=self.clock.now())

    # -- scan (search) --------------------------------------------------------------------

    def scan(self, scope: Scope, handle: str) -> Iterator[str]:
        """The claim's text, start to end, in pieces, from one streaming GET.

        The GET and every check `fetch` makes happen here, before the first piece, so an
        unavailable claim raises at the call. The body is then read 1 MiB at a time
        (memory stays bounded whatever the claim's size); a stream cut midway resumes with a
        ranged GET from the next byte, at most `RetryPolicy.attempts` times.
        """
        if not is_handle(handle):
            raise ClaimUnavailableError
        key = self._layout.object_key(scope, handle)
        width, seal = handle_width(handle), self._layout.seal(key)
        response = self._open(key, first_byte=0)
        try:
            meta = checked_meta(
                response["Metadata"],
                seal=seal,
                run_tag=self._layout.run_tag(scope),
                width=width,
                now=self._clock.now(),
                operation="GetObject",
            )
        except BaseException:
            response["Body"].close()
            raise
        if meta.blocks_key is not None:  # handed off by copy: the tags are the original's
            seal = self._layout.seal(meta.blocks_key)
        return pieces(
            response["Body"],
            width=width,
            seal=seal,
            content_bytes=meta.chars * width,
            reopen=lambda first_byte: self._open(key, first_byte=first_byte)["Body"],
            attempts=self._retry.attempts,
        )

    def _open(self, key: str, *, first_byte: int) -> GetObjectOutputTypeDef:
        ranged = {"Range": f"bytes={first_byte}-"} if first_byte else {}
        try:
            return self._request(
                "GetObject",
                lambda: self._client.get_object(Bucket=self._bucket, Key=key, **ranged),  # type: ignore[arg-type]
                expect=MISSING,
            )
        except Refused:
            raise ClaimUnavailableError from None

    # -- forget -------------------------------------------------------------------------

    @traced_forget
    def forget(
        self,
        *,
        tenant: str,
        run: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Erase every claim of a tenant (or of one run): every version, every delete marker.

        Returns the number of claims (distinct keys) removed; a run's journal goes with its
        run but is not a claim, so it is not counted. `progress(removed_so_far)` is
        called after each batch.
        """
        if run is not None:
            prefix = self._layout.run_prefix(Scope(tenant=tenant, run=run))
        elif isinstance(tenant, str) and tenant:
            prefix = self._layout.tenant_prefix(tenant)
        else:
            raise ValueError(f"tenant must be a non-empty string, got {type(tenant).__name__}")
        try:
            return self._eraser.erase(prefix, progress=progress)
        finally:
            with self._lock:
                for key in [k for k in self._written if k.startswith(prefix)]:
                    del self._written[key]

    # -- listing (operations; not part of the store protocol) ----------------------------

    def claims(self, *, tenant: str, run: str | None = None) -> Iterator[ClaimInfo]:
        """Every claim of a tenant (or one run) in key order, expired ones included.

        Keys give the handles; each claim's size and expiry cost one HEAD, and no body
        (tool content) is ever read. Objects under the prefix that are not claims are skipped;
        a claim whose metadata seal fails (or of an older format) is listed as `damaged`.
        """
        if run is not None:
            under, depth = self._layout.run_prefix(Scope(tenant=tenant, run=run)), 1
        else:
            under, depth = self._layout.tenant_prefix(tenant), 2  # run_tag/digest
        for key in self._keys(under):
            parts = key[len(under) :].split("/")
            handle = HANDLE_PREFIX + parts[-1]
            if len(parts) != depth or not is_handle(handle):
                continue
            head = self._head(key)
            if head is None:
                continue  # forgotten or collected since the listing
            try:
                meta = _format.parse_metadata(head["Metadata"], operation="HeadObject")
                self._layout.seal(key).check_metadata(head["Metadata"], operation="HeadObject")
            except ClaimStoreError:
                run_tag = key.rsplit("/", 2)[-2]  # {prefix}{tenant}/{run}/{digest}
                yield ClaimInfo(handle, run_tag, 0, 0, damaged=True)
                continue
            yield ClaimInfo(handle, meta.run_tag, meta.chars, meta.expires_at)

    def __repr__(self) -> str:
        return (
            f"S3ClaimCheckStore(bucket={self._bucket!r}, prefix={self._layout.prefix!r}, "
            f"sse={self._sse['ServerSideEncryption']!r}, ttl_day_classes={self._classes}, "
            f"clock={self._clock!r})"
        )
