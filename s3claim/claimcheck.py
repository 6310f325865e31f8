"""ClaimCheck: store an oversized result, leave its head and a marker in the conversation.

docs/reading.md ("The marker", "Previews that keep what matters") shows what stays in the
conversation.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from s3claim._reading import (
    LINE_CHARS,
    compile_pick_pattern,
    extract_head,
    extract_tail,
    pick_lines,
    read_root,
    telling_end,
)
from s3claim._windows import fitted_members
from s3claim.errors import ConfigurationError
from s3claim.handles import HANDLE_PREFIX
from s3claim.links import DEFAULT_LINK_TTL_SECONDS, check_base_url, link
from s3claim.policy import ROOT_LISTING_CHARS, ClaimCheckPolicy
from s3claim.scope import Scope
from s3claim.store import ClaimCheckStore, ClaimInfo, RangedStore
from s3claim.telemetry import check_in_operation, record_duration
from s3claim.wording import marker, picked_line, picks_note

__all__ = ["DEFAULT_MAX_REFERENCE_CHARS", "CheckIn", "ClaimCheck"]

_ANY_HANDLE = f"{HANDLE_PREFIX}1{'0' * 32}"
"""A handle's length, for measuring a preview before its claim is stored."""
DEFAULT_MAX_REFERENCE_CHARS = 1_000_000
"""What one tool call's claim references may resolve to, in all: ten 92,000-character
contracts, and a bound on what a model can make the host read for one call."""


@dataclass(frozen=True, slots=True)
class CheckIn:
    """`text` enters the conversation; `handle` is None when the content passed through."""

    text: str
    handle: str | None
    total_chars: int

    def __repr__(self) -> str:  # text is tool content: never in a repr
        return (
            f"CheckIn(handle={self.handle!r}, chars={len(self.text)}, "
            f"total_chars={self.total_chars})"
        )


class ClaimCheck:
    """Decides, per tool, whether a result is checked in, and does it."""

    def __init__(
        self,
        store: ClaimCheckStore,
        *,
        policy: ClaimCheckPolicy | None = None,
        per_tool: Mapping[str, ClaimCheckPolicy] | None = None,
        references: bool = False,
        max_reference_chars: int = DEFAULT_MAX_REFERENCE_CHARS,
        link_base_url: str | None = None,
    ) -> None:
        """`references`: tool arguments may be claim references (`{"$claim": handle}`),
        which every host resolves before the tool runs, up to `max_reference_chars` a call.
        `link_base_url`: where links are served (`s3claim serve`, the MCP gateway), so a
        reference `{"$claim": handle, "as": "link"}` resolves to a link to the claim."""
        if (
            isinstance(max_reference_chars, bool)
            or not isinstance(max_reference_chars, int)
            or max_reference_chars < 1
        ):
            raise ConfigurationError(
                f"max_reference_chars must be a positive integer, got {max_reference_chars!r}"
            )
        self.link_base_url = None if link_base_url is None else check_base_url(link_base_url)
        if self.link_base_url is not None and not isinstance(store, RangedStore):
            raise ConfigurationError(f"link_base_url: {type(store).__name__} cannot serve links")
        self.store = store
        self.references = bool(references)
        self.max_reference_chars = max_reference_chars
        self.policy = policy or ClaimCheckPolicy()
        self.per_tool = dict(per_tool or {})
        for name, tool_policy in self.per_tool.items():
            if not isinstance(tool_policy, ClaimCheckPolicy):
                raise TypeError(f"per_tool[{name!r}] must be a ClaimCheckPolicy")
        # A store that can only keep claims so long (the S3 store's lifecycle classes) says so
        # with `max_ttl_seconds`; a policy it cannot honour is refused here, not at every put.
        longest = getattr(store, "max_ttl_seconds", None)
        for name, each in [("policy", self.policy), *self.per_tool.items()]:
            if longest is not None and each.ttl_seconds > longest:
                raise ConfigurationError(
                    f"{name}: ttl_seconds={each.ttl_seconds} is longer than the store keeps "
                    f"claims ({longest} seconds)"
                )

    def policy_for(self, tool: str) -> ClaimCheckPolicy:
        return self.per_tool.get(tool, self.policy)

    def check_in(
        self,
        content: str,
        *,
        tool: str,
        scope: Scope,
        searchable: bool = False,
        force: bool = False,
    ) -> CheckIn:
        """Pass a short result through; store a long one and return its head and marker.

        `searchable`: the agent also has `search_result`, so the marker may say so.
        `force`: store it whatever its size (a turn's plan chose it: `s3claim.turns`).
        Store failures propagate (`ClaimStoreError`): the caller decides the fallback.
        """
        policy = self.policy_for(tool)
        total = len(content)
        # Inside `admit`, this joins the admission's operation (which knows the fallback).
        with check_in_operation(self.store, scope, tool=tool) as op:
            op.set(chars_total=total)
            if total < policy.threshold_chars and not force:
                op.outcome = "passed"
                op.set(chars_shown=total)
                return CheckIn(content, None, total)
            started, ttl = time.perf_counter(), policy.ttl_seconds
            try:
                if isinstance(self.store, RangedStore):  # it lists what each claim's tool was
                    handle = self.store.put(scope, content, ttl_seconds=ttl, tool=tool)
                else:
                    handle = self.store.put(scope, content, ttl_seconds=ttl)
            except Exception:
                record_duration("put", time.perf_counter() - started, outcome="failed")
                raise
            record_duration("put", time.perf_counter() - started, outcome="ok")
            text = self._preview(content, policy, handle=handle, searchable=searchable)
            op.outcome = "stored"
            op.set(handle=handle, chars_shown=len(text))
            return CheckIn(text, handle, total)

    def preview_chars(self, content: str, *, tool: str, searchable: bool = False) -> int:
        """Exactly the characters `check_in` leaves in the conversation for `content` once it
        is stored (its head, marker, notes and tail; every handle is as long), without
        storing it: what a turn's plan measures a check-in by (`s3claim.turns`)."""
        policy = self.policy_for(tool)
        return len(self._preview(content, policy, handle=_ANY_HANDLE, searchable=searchable))

    def _preview(
        self, content: str, policy: ClaimCheckPolicy, *, handle: str, searchable: bool
    ) -> str:
        """What a stored result leaves in the conversation: head, marker, notes, tail."""
        head, listing = _head_and_listing(content, policy)
        tail = extract_tail(content, policy.tail_chars, after=len(head))
        if tail and policy.pick_lines is not None:  # a log's tail: only an end that tells
            pattern = compile_pick_pattern(policy.pick_lines)
            tail = content[telling_end(content, len(content) - len(tail), pattern) :]
        notes = _preview_notes(content, policy, head=head, tail=tail, searchable=searchable)
        if listing is not None:
            notes.insert(0, listing)
        line = marker(
            total_chars=len(content),
            shown_chars=len(head),
            handle=handle,
            searchable=searchable,
            references=self.references,
            tail_chars=len(tail),
            noted=bool(notes),
        )
        return "\n\n".join([head, line, *notes, *([tail] if tail else [])])

    def hand_off(
        self, handle: str, *, scope: Scope, to: Scope, ttl_seconds: int | None = None
    ) -> str:
        """Make a claim of the run `scope` readable in the run `to` (a sub-agent's), same tenant.

        Returns the claim's handle in `to`, readable there for `ttl_seconds` (by default the
        policy's) whatever becomes of the original, until `forget` of the tenant or of `to`'s
        run. The content does not pass through this process (on S3, a server-side copy).
        Raises `ClaimUnavailableError` for a handle `scope` cannot redeem, and `ValueError`
        for a hand-off to another tenant, which is never allowed.
        """
        if to.tenant != scope.tenant:
            raise ValueError("a claim is handed off within its tenant only, never to another")
        if not isinstance(self.store, RangedStore):
            raise TypeError(f"{type(self.store).__name__} cannot hand claims off")
        ttl = ttl_seconds if ttl_seconds is not None else self.policy.ttl_seconds
        return self.store.hand_off(scope, handle, to=to, ttl_seconds=ttl)

    def claims(self, scope: Scope) -> Iterator[ClaimInfo]:
        """The claims of the run `scope` (handle, tool, characters, lines, expiry), never
        their content: what an application shows of what an agent stored, before it offers
        to erase the run (`store.forget(tenant=..., run=...)`).

        Expired claims are listed until the store drops them (`ClaimInfo.expires_at`). On
        S3, one HeadObject a claim. Raises `TypeError` for a store that cannot list
        (a store of the first level only).
        """
        if not isinstance(self.store, RangedStore):
            raise TypeError(f"{type(self.store).__name__} cannot list its claims")
        return self.store.claims(tenant=scope.tenant, run=scope.run)

    def link(
        self,
        handle: str,
        *,
        scope: Scope,
        base_url: str,
        ttl_seconds: int = DEFAULT_LINK_TTL_SECONDS,
    ) -> str:
        """A URL that code reads the claim from, without credentials (`s3claim.links`).

        It names `handle` in `scope` only, and expires after `ttl_seconds` or with the claim,
        whichever comes first; `base_url` is where `s3claim serve` (or the MCP gateway over
        HTTP) is reached: https://, or http:// on a loopback host. One metadata read of the
        claim; `ClaimUnavailableError` for a handle `scope` cannot redeem.
        """
        return link(self.store, handle, scope=scope, base_url=base_url, ttl_seconds=ttl_seconds)

    def __repr__(self) -> str:
        return (
            f"ClaimCheck(store={self.store!r}, policy={self.policy!r}, per_tool={self.per_tool}, "
            f"references={self.references})"
        )


def _preview_notes(
    content: str, policy: ClaimCheckPolicy, *, head: str, tail: str, searchable: bool = False
) -> list[str]:
    """The lines picked by a pattern (`pick_lines`), the paragraph a policy puts between the
    marker and the tail after the root listing (`_head_and_listing`). None with every knob
    off; a pure function of its arguments (docs/reading.md, "Picking lines")."""
    notes: list[str] = []
    if policy.pick_lines is not None:
        picks = pick_lines(
            content,
            compile_pick_pattern(policy.pick_lines),
            most=policy.pick_max,
            shown_until=len(head),
            shown_from=len(content) - len(tail),
        )
        if not picks.matched and not picks.stopped:  # nothing found: no note to carry it
            return notes
        lines = [
            picked_line(
                line=p.line,
                text=p.text,
                start=p.start,
                end=p.end,
                line_start=p.line_start,
                line_end=p.line_end,
            )
            for p in picks.shown
        ]
        note = picks_note(
            pattern=policy.pick_lines,
            matched=picks.matched,
            shown=len(picks.shown),
            tail=bool(tail),
            searchable=searchable,
            stopped=picks.stopped,
        )
        notes.append("\n".join([note, *lines]))
    return notes


def _head_and_listing(content: str, policy: ClaimCheckPolicy) -> tuple[str, str | None]:
    """The head, and the root listing (`json_root`) where one is written: the listing takes
    its place within the head's characters, never beside them, and only where the whole head
    would leave a member unshown that a listing stands for. The head is cut at half of
    `head_chars` and the listing has the rest of what the whole head would have shown (at
    most `ROOT_LISTING_CHARS`), so a preview with a listing is no longer than the same
    preview without (docs/reading.md)."""
    head = extract_head(content, policy.head_chars)
    if policy.json_root and _root_listing(content, shown=len(head), most_chars=None):
        short = extract_head(content, policy.head_chars // 2)
        # 2: the blank line; and a digit more in the marker's "N not shown", if it gains one
        grown = len(str(len(content) - len(short))) - len(str(len(content) - len(head)))
        room = min(ROOT_LISTING_CHARS, len(head) - len(short) - 2 - grown)
        listing = _root_listing(content, shown=len(short), most_chars=room)
        if listing is not None:
            return short, listing
    return head, None


def _root_listing(content: str, *, shown: int, most_chars: int | None) -> str | None:
    """The root's members the head does not show whole, listed as a page of a read by path
    lists them; None unless the root is an object (its keys are what a question names: an
    array's positions, `path="/N"` reaches without a listing) and the listing is shorter
    than the members' own characters it points at (else reading them is the cheaper way)."""
    first = 0
    while True:
        root = read_root(content, first=first)
        if root is None or root.kind != "object":
            return None
        inside = next((i for i, m in enumerate(root.members) if m.end > shown), None)
        if inside is not None:
            break
        first += len(root.members)
        if first >= root.member_count:  # the head shows every member
            return None
    if inside:
        page = read_root(content, first=first + inside)
        assert page is not None  # the same text, read again
        root = page
    listing, rows = fitted_members(root, most_chars=most_chars)
    replaced = sum(m.end - m.start for m in root.members[:rows])
    fits = most_chars is None or len(listing) <= most_chars
    return listing if fits and len(listing) < replaced else None


def most_notes_chars(policy: ClaimCheckPolicy) -> int:
    """The most the notes of `policy` add to a preview, the blank lines before them included
    (0 with every knob off): what a turn's plan counts beside the head, tail and marker."""
    most = 0
    if policy.pick_lines is not None:
        big = 10**12  # a line number or offset no result reaches
        note = max(
            len(picks_note(pattern=policy.pick_lines, matched=big, shown=policy.pick_max,
                           tail=True, searchable=True, stopped=stopped))
            for stopped in (False, True)
        )  # fmt: skip
        line = picked_line(
            line=big, text="x" * LINE_CHARS, start=big, end=big, line_start=big, line_end=big + 1
        )
        most += 2 + note + policy.pick_max * (1 + len(line))
    return most
