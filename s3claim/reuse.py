"""Repeat reads: a read-only call made again in the same run is answered from its claim.

A tool may say how long its result answers a repeat call (`@tool(reuse_seconds=300)`, an
adapter's `reuse={...}`, the MCP gateway's `reuse = {...}` per upstream). A call of it with
the same arguments, in the same run and inside that window, does not run the tool.
`s3claim.hosting.Host` takes these steps around every call that is not a claim tool's;
nothing else calls them.

The decisions, each the simplest honest one:

- **A repeat is answered by reference** (`wording.reused_reference`, under 200 characters):
  the earlier result is in the conversation, so the answer names it, by its handle and the
  call it came from (that call's id; where the host sees none, as on MCP, its tool), and says
  `fetch_result` reads on, rather than put the preview in again. A pure function of the
  handle, the id and the tool: two processes replaying a run send the same bytes, and the
  prefix stays cached. **Only a host that trims its conversation** says which results left
  it (`Host.left_conversation`); a repeat of one of those gets the earlier text whole, after
  one line (`REUSED_LINE`), and the next repeat names that call. The runner never removes or
  replaces a message it placed (a turn's check-ins are decided before its results enter), so
  it never says so. The adapters cannot see their framework's history: they answer by
  reference, and the handle reads on with `fetch_result` for the claim's TTL, which a reuse
  requires anyway. A host whose run may hold several conversations asks for the text whole
  (`recall(whole=True)`): the MCP proxy, in the tenant's run or a session's.
- **Only results that were checked in are reused**, since the claim is what answers the
  repeat: its head and marker are what the model saw, `fetch_result` reads the rest. A result
  that passed whole has no claim, and its tool runs again.
- **The key** is the tool's qualified name (a gateway endpoint's upstream prefixed, so two
  upstreams' `read` never meet), the run's scope, and a SHA-256 of the arguments as canonical
  JSON (sorted keys, no whitespace), as the model sent them: the arguments are never kept.
- **A call of a tool that is not read-only ends reuse in its run, on every instance**: once it
  has run, the run's mark in the store changes (`RangedStore.mark_written`, one request), and
  a read is reused only while the run's mark is the one it was remembered with. So a write
  through one instance behind a load balancer ends reuse on all of them, and a read in flight
  meanwhile is never answered again. The claim tools are read-only.
- **A reuse needs its window, its claim's TTL and the run's mark.** The window runs from the
  check-in by the store's clock (`store.clock`; tests hold it still); a claim's TTL ends it
  sooner. Each look-up of a reusable call reads the run's mark (one request, `run_mark`); the
  first in a run gives the run its mark (one conditional write more, `new_run_mark`). A
  `forget` of the run or its tenant erases the mark with the claims,
  and the memory store drops it with any claim it evicts: a repeat then runs the tool again,
  rather than hand the model a dead handle.
- **Memory is per process**, by the run's scope: a host remembers `max_runs` runs (the least
  recently used go first) and `max_reads` reads each. A run the runner resumes from its
  journal, on another instance or after a restart, remembers again what its conversation
  shows (`restore`): each checked-in read since the last write, by the call that placed it,
  its window counted from the check-in its claim's expiry dates (the expiry less the
  policy's TTL). So a resumed run answers its repeats as the uninterrupted run would have,
  byte for byte. Hosts without a journal (the adapters, the MCP proxy) start a restarted run
  with nothing remembered.

docs/reading.md ("Repeat reads") says what it costs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError
from s3claim.events import Event, ResultReused, ToolResultStored
from s3claim.safejson import loads
from s3claim.scope import Scope
from s3claim.store import RangedStore
from s3claim.telemetry import count_reuse
from s3claim.tools import RunContext
from s3claim.wording import HANDLE_SEEN, REUSED_LINE, REUSED_SEEN, reused_reference

__all__ = [
    "DEFAULT_MAX_READS",
    "DEFAULT_MAX_RUNS",
    "Recall",
    "RepeatReads",
    "Shown",
]

DEFAULT_MAX_RUNS = 1_024
"""Runs a host remembers reads of; the least recently used is forgotten first."""
DEFAULT_MAX_READS = 256
"""Reads remembered per run; the oldest is forgotten first."""
Shown = tuple[str, Mapping[str, Any], str, int, bool, str | None]
"""One call as a resumed conversation shows it (`RepeatReads.restore`): its tool, arguments,
the text the model got, the tool's reuse seconds, whether it is read-only, and its id."""
_QUOTABLE = re.compile(r"[A-Za-z0-9_.:-]+")
_MAX_CALL_ID = 40
_MAX_TOOL = 32
"""The longest call id and tool name a reference quotes (it stays under 200 characters);
a longer one, or one of other characters, is not named."""
_log = logging.getLogger("s3claim")


def reused(text: str) -> str:
    """A repeat whose earlier result left the conversation: the line, then that text whole."""
    return f"{REUSED_LINE}\n\n{text}"


def _quotable(name: str | None, longest: int) -> str | None:
    """`name` if a reference may quote it as it is (never a forged line): else None."""
    if name is None or len(name) > longest or _QUOTABLE.fullmatch(name) is None:
        return None
    return name


def check_reuse(reuse: Mapping[str, int] | None) -> dict[str, int]:
    """A host's `reuse` map (tool name to seconds), validated: one line saying what is wrong."""
    checked: dict[str, int] = {}
    for name, seconds in (reuse or {}).items():
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
            raise ConfigurationError(
                f"reuse[{name!r}] must be a whole number of seconds, 0 or more, got {seconds!r}"
            )
        if seconds:
            checked[name] = seconds
    return checked


def arguments_key(tool: str, arguments: Mapping[str, Any] | str) -> str | None:
    """The SHA-256 of the tool's name and its arguments as canonical JSON; None for arguments
    that are not JSON (then the call is never reused). A JSON text is read first."""
    try:
        value = loads(arguments) if isinstance(arguments, str) else arguments
        canonical = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError):
        return None
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(canonical.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass(eq=False)
class Recall:
    """One call's look-up. `answer`: what to give instead of running the tool; None, run it
    (then `watching` and `keep`). `handle`: the claim its result was checked in as, learned
    by `watching`."""

    answer: str | None = None
    handle: str | None = None
    _scope: Scope | None = field(default=None, repr=False)
    _tool: str = ""
    _key: str | None = field(default=None, repr=False)
    _seconds: int = 0
    _mark: str | None = field(default=None, repr=False)
    _call_id: str | None = field(default=None, repr=False)
    _called: str | None = field(default=None, repr=False)

    def watching(self, context: RunContext) -> RunContext:
        """`context`, whose events also tell this recall the handle of a check-in."""
        if self._key is None:
            return context
        emit = context.emit

        def watched(event: Event) -> None:
            if isinstance(event, ToolResultStored) and event.tool == self._tool:
                self.handle = event.handle
            emit(event)

        return replace(context, emit=watched)


@dataclass(slots=True)
class _Read:
    """A read remembered: the text the model got, and the call that placed it in the
    conversation (its id and tool as quoted, None where not quotable); `shown` until its
    host says it left the conversation."""

    text: str
    handle: str
    until: float
    mark: str
    call_id: str | None
    called: str | None
    shown: bool = True

    def answer(self, *, called: str | None, whole: bool) -> str:
        """By reference, naming the earlier call (by its id, else the tool as this call
        names it: an endpoint beside a gateway knows it by another name); whole where the
        host says the earlier one may not be in this conversation."""
        if whole or not self.shown:
            return reused(self.text)
        tool = called or self.called
        return reused_reference(handle=self.handle, call_id=self.call_id, tool=tool)


class RepeatReads:
    """What each run has read, for one host (and the endpoints beside it). Safe to share
    between threads."""

    def __init__(
        self,
        claim_check: ClaimCheck,
        *,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_reads: int = DEFAULT_MAX_READS,
    ) -> None:
        if max_runs < 1 or max_reads < 1:
            raise ConfigurationError(
                f"max_runs ({max_runs}) and max_reads ({max_reads}) must be positive"
            )
        store = claim_check.store
        if not isinstance(store, RangedStore):
            raise ConfigurationError(
                f"repeat reads need a store that keeps run marks (a RangedStore, as both of "
                f"s3claim's are), got {type(store).__name__}"
            )
        self._claim_check = claim_check
        self._store = store
        self._clock = store.clock
        self._max_runs = max_runs
        self._max_reads = max_reads
        self._runs: OrderedDict[Scope, OrderedDict[str, _Read]] = OrderedDict()
        self._lock = threading.Lock()

    def recall(
        self,
        scope: Scope,
        tool: str,
        arguments: Mapping[str, Any] | str,
        *,
        reuse_seconds: int,
        agent: str,
        emit: Callable[[Event], None],
        call_id: str | None = None,
        called: str | None = None,
        whole: bool = False,
    ) -> Recall:
        """Before a read-only call runs: the answer, if this call may have one (emitting
        `result_reused`); else what `keep` needs. One request (the run's mark). `call_id`:
        the call's id, where the host has one; `called`: the tool as the call named it (by
        default `tool`), for a later repeat to name this call by. `whole`: the run may span
        conversations (an MCP client that names none), so the earlier text is given again
        rather than referred to."""
        key = arguments_key(tool, arguments) if reuse_seconds > 0 else None
        if key is None:
            return Recall()
        call_id, called = _quotable(call_id, _MAX_CALL_ID), _quotable(called or tool, _MAX_TOOL)
        try:
            mark = self._mark(scope)
        except Exception:  # a store fault: run the tool, as without reuse, and keep nothing
            _log.warning("repeat reads: the run's mark could not be read (%s)", tool[:64])
            return Recall()
        if mark is None:  # given one by another instance, and gone again: nothing to go by
            return Recall()
        answer = None
        with self._lock:
            kept = self._reads(scope).get(key)
            if kept is not None and mark == kept.mark and self._clock.now() < kept.until:
                answer = kept.answer(called=called, whole=whole)
                if not kept.shown:  # whole again: in the conversation now, at this call
                    kept.shown, kept.call_id, kept.called = True, call_id, called
        if kept is not None and answer is not None:
            emit(ResultReused(tool=tool, agent=agent, handle=kept.handle, chars=len(answer)))
            count_reuse(tool)
            return Recall(answer=answer, handle=kept.handle)
        if kept is not None:
            self._drop(scope, key, kept)
        return Recall(
            _scope=scope, _tool=tool, _key=key, _seconds=reuse_seconds, _mark=mark,
            _call_id=call_id, _called=called,
        )  # fmt: skip

    def keep(self, recall: Recall, text: str) -> None:
        """After a call ran: remember `text` (what the model got) if its result was checked
        in, under the run's mark as it was before the call ran."""
        scope = recall._scope
        if recall._key is None or scope is None or recall.handle is None:
            return
        mark = recall._mark
        assert mark is not None
        ttl = self._claim_check.policy_for(recall._tool).ttl_seconds
        until = self._clock.now() + min(recall._seconds, ttl)
        read = _Read(text, recall.handle, until, mark, recall._call_id, recall._called)
        self._remember(scope, recall._key, read)

    def left_conversation(self, scope: Scope, handles: Iterable[str]) -> None:
        """The results checked in as `handles` are no longer in `scope`'s conversation (its
        host trimmed them): the next repeat of their calls is answered with their text whole."""
        gone = set(handles)
        with self._lock:
            for read in self._runs.get(scope, {}).values():
                if read.handle in gone:
                    read.shown = False

    def restore(
        self,
        scope: Scope,
        calls: Iterable[Shown],
        *,
        checked_in: Callable[[str, str], float | None],
    ) -> None:
        """Remember a resumed run's reads from its conversation: each call, in order
        (`Shown`). `checked_in(tool, handle)`: when that claim was checked in, None if not
        known (the read is then not remembered). Only a runner with a journal can know. The
        reads since the last write are remembered under the run's mark as it is now, each by
        the call that last placed its text in the conversation."""
        since: list[tuple[str, str, str, str, int, str | None]] = []
        prefix = reused("")
        for tool, arguments, text, seconds, read_only, call_id in calls:
            if not read_only:
                since.clear()
                continue
            key = arguments_key(tool, arguments) if seconds > 0 else None
            text = text.removeprefix(prefix)  # whole again: the earlier text, placed anew
            found = HANDLE_SEEN.search(text)
            if key is None or found is None or REUSED_SEEN.fullmatch(text):
                continue  # never reusable, not checked in, or a repeat by reference
            since.append((tool, key, text, found.group(1), seconds, call_id))
        if not since:
            return
        try:
            mark = self._mark(scope)
        except Exception:
            return
        if mark is None:
            return
        for tool, key, text, handle, seconds, call_id in since:
            at = checked_in(tool, handle)
            if at is None:
                continue
            ttl = self._claim_check.policy_for(tool).ttl_seconds
            until = at + min(seconds, ttl)
            call_id, called = _quotable(call_id, _MAX_CALL_ID), _quotable(tool, _MAX_TOOL)
            self._remember(scope, key, _Read(text, handle, until, mark, call_id, called))

    def written(self, scope: Scope) -> None:
        """A call of a tool that is not read-only has run in `scope`'s run: its mark changes
        on every instance (one request), and this one forgets the run's reads."""
        with self._lock:
            self._runs.pop(scope, None)
        try:
            self._store.mark_written(scope)
        except Exception:  # other instances may reuse until their windows end: said once
            _log.warning("repeat reads: the run's mark could not be changed after a write")

    def end(self, scope: Scope) -> None:
        """The run is over (the runner knows when): forget it."""
        with self._lock:
            self._runs.pop(scope, None)

    def _mark(self, scope: Scope) -> str | None:
        """The run's mark; a run without one is given one first (`new_run_mark`), so what is
        remembered is always remembered by a mark, which a write, a `forget` or an eviction
        takes away. One request; two the first time in a run (three when another instance
        gives it one at the same moment)."""
        mark = self._store.run_mark(scope)
        if mark is None:
            mark = self._store.new_run_mark(scope) or self._store.run_mark(scope)
        return mark

    def _reads(self, scope: Scope) -> OrderedDict[str, _Read]:
        """The run's reads, most recently used now (hold the lock)."""
        reads = self._runs.get(scope)
        if reads is None:
            reads = self._runs[scope] = OrderedDict()
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(scope)
        return reads

    def _remember(self, scope: Scope, key: str, read: _Read) -> None:
        with self._lock:
            reads = self._reads(scope)
            reads[key] = read
            reads.move_to_end(key)
            while len(reads) > self._max_reads:
                reads.popitem(last=False)

    def _drop(self, scope: Scope, key: str, kept: _Read) -> None:
        with self._lock:
            reads = self._runs.get(scope)
            if reads is not None and reads.get(key) is kept:
                del reads[key]

    def __len__(self) -> int:
        """Reads remembered, every run's."""
        with self._lock:
            return sum(len(reads) for reads in self._runs.values())

    def __repr__(self) -> str:
        with self._lock:
            runs = len(self._runs)
        return f"RepeatReads(runs={runs}, reads={len(self)}, clock={self._clock!r})"
