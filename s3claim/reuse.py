"""Repeat reads: a read-only call made again in the same run is answered from its claim.

A tool may say how long its result answers a repeat call (`@tool(reuse_seconds=300)`, an
adapter's `reuse={...}`, the MCP gateway's `reuse = {...}` per upstream). A call of it with
the same arguments, in the same run and inside that window, does not run the tool: the model
receives what it received the first time, byte for byte, after one line (`REUSED_LINE`)
saying so. `s3claim.hosting.Host` takes these steps around every call that is not a claim
tool's; nothing else calls them.

The decisions, each the simplest honest one:

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
  shows (`restore`): each checked-in read since the last write, its window counted from the
  check-in its claim's expiry dates (the expiry less the policy's TTL). So a resumed run
  answers its repeats as the uninterrupted run would have, byte for byte. Hosts without a
  journal (the adapters, the MCP proxy) start a restarted run with nothing remembered.

docs/reading.md ("Repeat reads") says what it costs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError
from s3claim.events import Event, ResultReused, ToolResultStored
from s3claim.safejson import loads
from s3claim.scope import Scope
from s3claim.store import RangedStore
from s3claim.telemetry import count_reuse
from s3claim.tools import RunContext
from s3claim.wording import HANDLE_SEEN, REUSED_LINE

__all__ = [
    "DEFAULT_MAX_READS",
    "DEFAULT_MAX_RUNS",
    "Recall",
    "RepeatReads",
]

DEFAULT_MAX_RUNS = 1_024
"""Runs a host remembers reads of; the least recently used is forgotten first."""
DEFAULT_MAX_READS = 256
"""Reads remembered per run; the oldest is forgotten first."""
_T = TypeVar("_T")
_log = logging.getLogger("s3claim")


def reused(text: str) -> str:
    """What the model reads for a repeat: the line, then the earlier text as it was."""
    return f"{REUSED_LINE}\n\n{text}"


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
class Recall(Generic[_T]):
    """One call's look-up. `answer`: the earlier result to give instead of running the tool;
    None, run it (then `watching` and `keep`). `handle`: the claim its result was checked in
    as, learned by `watching`."""

    answer: _T | None = None
    handle: str | None = None
    _scope: Scope | None = field(default=None, repr=False)
    _tool: str = ""
    _key: str | None = field(default=None, repr=False)
    _seconds: int = 0
    _mark: str | None = field(default=None, repr=False)

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
class _Read(Generic[_T]):
    answer: _T
    handle: str
    until: float
    chars: int
    mark: str


class RepeatReads(Generic[_T]):
    """What each run has read, for one host (and the endpoints beside it): `_T` is what the
    host answers. Safe to share between threads."""

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
        self._runs: OrderedDict[Scope, OrderedDict[str, _Read[_T]]] = OrderedDict()
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
    ) -> Recall[_T]:
        """Before a read-only call runs: the earlier answer, if this call may have it
        (emitting `result_reused`); else what `keep` needs. One request (the run's mark)."""
        key = arguments_key(tool, arguments) if reuse_seconds > 0 else None
        if key is None:
            return Recall()
        try:
            mark = self._mark(scope)
        except Exception:  # a store fault: run the tool, as without reuse, and keep nothing
            _log.warning("repeat reads: the run's mark could not be read (%s)", tool[:64])
            return Recall()
        if mark is None:  # given one by another instance, and gone again: nothing to go by
            return Recall()
        with self._lock:
            kept = self._reads(scope).get(key)
        if kept is not None:
            if mark == kept.mark and self._clock.now() < kept.until:
                emit(ResultReused(tool=tool, agent=agent, handle=kept.handle, chars=kept.chars))
                count_reuse(tool)
                return Recall(answer=kept.answer, handle=kept.handle)
            self._drop(scope, key, kept)
        return Recall(_scope=scope, _tool=tool, _key=key, _seconds=reuse_seconds, _mark=mark)

    def keep(self, recall: Recall[_T], answer: _T, *, chars: int) -> None:
        """After a call ran: remember `answer` (the repeat's, line included, of `chars`
        characters) if its result was checked in, under the run's mark as it was before the
        call ran."""
        scope = recall._scope
        if recall._key is None or scope is None or recall.handle is None:
            return
        mark = recall._mark
        assert mark is not None
        ttl = self._claim_check.policy_for(recall._tool).ttl_seconds
        until = self._clock.now() + min(recall._seconds, ttl)
        self._remember(scope, recall._key, _Read(answer, recall.handle, until, chars, mark))

    def restore(
        self: RepeatReads[str],
        scope: Scope,
        calls: Iterable[tuple[str, Mapping[str, Any], str, int, bool]],
        *,
        checked_in: Callable[[str, str], float | None],
    ) -> None:
        """Remember a resumed run's reads from its conversation: each call, in order, as
        (tool, arguments, the text the model got, the tool's reuse seconds, read-only).
        `checked_in(tool, handle)`: when that claim was checked in, None if not known (the
        read is then not remembered). Only a runner with a journal can know. The reads since
        the last write are remembered under the run's mark as it is now."""
        since: list[tuple[str, str, str, str, int]] = []
        prefix = reused("")
        for tool, arguments, text, seconds, read_only in calls:
            if not read_only:
                since.clear()
                continue
            key = arguments_key(tool, arguments) if seconds > 0 else None
            found = HANDLE_SEEN.search(text)
            if key is None or found is None or text.startswith(prefix):
                continue  # never reusable, not checked in, or itself a repeat
            since.append((tool, key, text, found.group(1), seconds))
        if not since:
            return
        try:
            mark = self._mark(scope)
        except Exception:
            return
        if mark is None:
            return
        for tool, key, text, handle, seconds in since:
            at = checked_in(tool, handle)
            if at is None:
                continue
            ttl = self._claim_check.policy_for(tool).ttl_seconds
            answer = reused(text)
            self._remember(
                scope, key, _Read(answer, handle, at + min(seconds, ttl), len(answer), mark)
            )

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

    def _reads(self, scope: Scope) -> OrderedDict[str, _Read[_T]]:
        """The run's reads, most recently used now (hold the lock)."""
        reads = self._runs.get(scope)
        if reads is None:
            reads = self._runs[scope] = OrderedDict()
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(scope)
        return reads

    def _remember(self, scope: Scope, key: str, read: _Read[_T]) -> None:
        with self._lock:
            reads = self._reads(scope)
            reads[key] = read
            reads.move_to_end(key)
            while len(reads) > self._max_reads:
                reads.popitem(last=False)

    def _drop(self, scope: Scope, key: str, kept: _Read[_T]) -> None:
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
