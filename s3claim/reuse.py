"""Repeat reads: a read-only call made again in the same run is answered from its claim.

A tool may say how long its result answers a repeat call (`@tool(reuse_seconds=300)`, an
adapter's `reuse={...}`, the MCP gateway's `reuse = {...}` per upstream). A call of it with
the same arguments, in the same run and inside that window, does not run the tool: the model
receives what it received the first time, byte for byte, after one line (`REUSED_LINE`)
saying so. Every host takes the same two steps around a call that is not a claim tool's:

    recall = reads.recall(scope, tool, arguments, reuse_seconds=..., read_only=..., ...)
    if recall.answer is not None:         # the tool does not run
        return recall.answer
    context = recall.watching(context)    # learns the handle if the result is checked in
    ... run the tool; admit its result with `context` ...
    reads.keep(recall, reused(admitted), chars=...)

The decisions, each the simplest honest one:

- **Only results that were checked in are reused**, since the claim is what answers the
  repeat: its head and marker are what the model saw, `fetch_result` reads the rest. A result
  that passed whole has no claim, and its tool runs again.
- **The key** is the tool's name and a SHA-256 of its arguments as canonical JSON (sorted
  keys, no whitespace), as the model sent them: the arguments themselves are never kept.
- **A call of a tool that is not read-only ends reuse in its run** (a write may change what
  a read returns): the run's reads are forgotten, and a read in flight meanwhile is not
  remembered. The claim tools are read-only.
- **A reuse needs its window, its claim's TTL and its claim.** The window runs from the
  check-in by the store's clock (`store.clock`; tests hold it still); a claim's TTL ends it
  sooner; and before answering, one character of the claim is read, so a claim erased
  (`forget`) or evicted runs the tool again rather than hand the model a dead handle.
- **Memory is per process**, by the run's scope: a host remembers `max_runs` runs (the least
  recently used go first) and `max_reads` reads each. A run the runner resumes from its
  journal, on another instance or after a restart, remembers again what its conversation
  shows (`restore`): each checked-in read since the last write, its window counted from the
  check-in its claim's expiry dates (the expiry less the policy's TTL). So a resumed run
  answers its repeats as the uninterrupted run would have, byte for byte. Hosts without a
  journal (the adapters, the MCP proxy) start a restarted run with nothing remembered.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from s3claim.claimcheck import ClaimCheck
from s3claim.clock import Clock, SystemClock
from s3claim.errors import ConfigurationError
from s3claim.events import Event, ResultReused, ToolResultStored
from s3claim.safejson import loads
from s3claim.scope import Scope
from s3claim.telemetry import count_reuse
from s3claim.tools import RunContext
from s3claim.wording import HANDLE_SEEN, REUSED_LINE

__all__ = [
    "DEFAULT_MAX_READS",
    "DEFAULT_MAX_RUNS",
    "Recall",
    "RepeatReads",
    "arguments_key",
    "check_reuse",
    "reused",
]

DEFAULT_MAX_RUNS = 1_024
"""Runs a host remembers reads of; the least recently used is forgotten first."""
DEFAULT_MAX_READS = 256
"""Reads remembered per run; the oldest is forgotten first."""
_T = TypeVar("_T")


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
    _generation: int = 0

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


@dataclass(slots=True)
class _Run(Generic[_T]):
    generation: int = 0
    reads: OrderedDict[str, _Read[_T]] = field(default_factory=OrderedDict)


class RepeatReads(Generic[_T]):
    """What each run has read, for one host: `_T` is what the host answers (a text, an MCP
    result). Safe to share between threads."""

    def __init__(
        self,
        claim_check: ClaimCheck,
        *,
        clock: Clock | None = None,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_reads: int = DEFAULT_MAX_READS,
    ) -> None:
        if max_runs < 1 or max_reads < 1:
            raise ConfigurationError(
                f"max_runs ({max_runs}) and max_reads ({max_reads}) must be positive"
            )
        self._claim_check = claim_check
        found = getattr(claim_check.store, "clock", None)
        self._clock = clock or (found if isinstance(found, Clock) else SystemClock())
        self._max_runs = max_runs
        self._max_reads = max_reads
        self._runs: OrderedDict[Scope, _Run[_T]] = OrderedDict()
        self._lock = threading.Lock()

    def recall(
        self,
        scope: Scope,
        tool: str,
        arguments: Mapping[str, Any] | str,
        *,
        reuse_seconds: int,
        read_only: bool,
        agent: str,
        emit: Callable[[Event], None],
    ) -> Recall[_T]:
        """Before a call runs: the earlier answer, if this call may have it (emitting
        `result_reused`); else what `keep` needs. A call of a tool that is not read-only
        ends reuse in the run here, before it runs. Reads the store (one character)."""
        if not read_only:
            self.written(scope)
            return Recall()
        key = arguments_key(tool, arguments) if reuse_seconds > 0 else None
        if key is None:
            return Recall()
        with self._lock:
            run = self._run(scope)
            kept = run.reads.get(key)
            generation = run.generation
        if kept is not None:
            if self._clock.now() < kept.until and self._readable(scope, kept.handle):
                emit(ResultReused(tool=tool, agent=agent, handle=kept.handle, chars=kept.chars))
                count_reuse(tool)
                return Recall(answer=kept.answer, handle=kept.handle)
            with self._lock:
                now_run = self._runs.get(scope)
                if now_run is not None and now_run.reads.get(key) is kept:
                    del now_run.reads[key]
        return Recall(
            _scope=scope, _tool=tool, _key=key, _seconds=reuse_seconds, _generation=generation
        )

    def keep(self, recall: Recall[_T], answer: _T, *, chars: int) -> None:
        """After a call ran: remember `answer` (the repeat's, line included, of `chars`
        characters) if its result was checked in and nothing wrote in the run meanwhile."""
        if recall._key is None or recall._scope is None or recall.handle is None:
            return
        ttl = self._claim_check.policy_for(recall._tool).ttl_seconds
        until = self._clock.now() + min(recall._seconds, ttl)
        with self._lock:
            run = self._runs.get(recall._scope)
            if run is None or run.generation != recall._generation:
                return
            run.reads[recall._key] = _Read(answer, recall.handle, until, chars)
            run.reads.move_to_end(recall._key)
            while len(run.reads) > self._max_reads:
                run.reads.popitem(last=False)

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
        read is then not remembered). Only a runner with a journal can know."""
        prefix = reused("")
        for tool, arguments, text, seconds, read_only in calls:
            if not read_only:
                self.written(scope)
                continue
            key = arguments_key(tool, arguments) if seconds > 0 else None
            found = HANDLE_SEEN.search(text)
            if key is None or found is None or text.startswith(prefix):
                continue  # never reusable, not checked in, or itself a repeat
            at = checked_in(tool, found.group(1))
            if at is None:
                continue
            ttl = self._claim_check.policy_for(tool).ttl_seconds
            answer = reused(text)
            with self._lock:
                run = self._run(scope)
                run.reads[key] = _Read(answer, found.group(1), at + min(seconds, ttl), len(answer))
                run.reads.move_to_end(key)
                while len(run.reads) > self._max_reads:
                    run.reads.popitem(last=False)

    def written(self, scope: Scope) -> None:
        """A tool that is not read-only is called in `scope`'s run: forget its reads."""
        with self._lock:
            run = self._runs.get(scope)  # none: nothing read, nothing in flight to forget
            if run is not None:
                run.generation += 1
                run.reads.clear()

    def end(self, scope: Scope) -> None:
        """The run is over (the runner knows when): forget it."""
        with self._lock:
            self._runs.pop(scope, None)

    def _run(self, scope: Scope) -> _Run[_T]:
        """The run's memory, most recently used now (hold the lock)."""
        run = self._runs.get(scope)
        if run is None:
            run = self._runs[scope] = _Run()
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(scope)
        return run

    def _readable(self, scope: Scope, handle: str) -> bool:
        """Whether the store still holds the claim: a store fault counts as no, and the
        tool runs again (as it would without reuse)."""
        try:
            self._claim_check.store.fetch(scope, handle, 0, 1)
        except Exception:
            return False
        return True

    def __len__(self) -> int:
        """Reads remembered, every run's."""
        with self._lock:
            return sum(len(run.reads) for run in self._runs.values())

    def __repr__(self) -> str:
        with self._lock:
            runs = len(self._runs)
        return f"RepeatReads(runs={runs}, reads={len(self)}, clock={self._clock!r})"
