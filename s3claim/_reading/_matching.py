"""Matching fairly: what a search may cost, and how many run at once in a process.

- A regex is budgeted in CPU time of the thread that searches (`time.thread_time`), never
  wall time, so waiting for a core or the GIL behind a neighbour's searches costs it nothing.
  The engine matches without the GIL (`concurrent=True`). Its own timeout is wall-clock, so
  here it is only a slice: a slice that ends with CPU budget left resumes from the last
  match found, and only a budget used up stops the search (`PatternTooCostlyError`).
- A literal cannot backtrack: its cost is linear in the claim, so it is never stopped. The
  matches it need not show are counted by the engine (`count_within`), not one by one.
- At most `MAX_CONCURRENT_SEARCHES` searches run at once in a process, and at most
  `MAX_SEARCHES_PER_TENANT` of one tenant's, so a tenant flooding the process holds only its
  own share. The others wait their turn, in the order they came, for up to `QUEUE_SECONDS`,
  then fail as `SearchBusyError` (the model reads `busy`): a flood queues instead of dividing
  the cores among itself until no search ends. A tenant's share is at most half the cores: a costly
  regex keeps a core busy (without the GIL), and two of them on a machine of two left the
  other tenants' calls only what the scheduler spared (docs/benchmarks.md, "Fair shares").
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import regex

__all__ = [
    "MAX_CONCURRENT_SEARCHES",
    "MAX_SEARCHES_PER_TENANT",
    "QUEUE_SECONDS",
    "CpuBudget",
    "PatternTooCostlyError",
    "SearchBusyError",
    "compile_regex",
    "count_within",
    "first_unsettled",
    "is_literal",
    "matches",
    "reach",
    "search_slot",
    "settling_probe",
]


def _cores() -> int:
    """The cores this process may run on (its CPU affinity, where the platform has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


MAX_CONCURRENT_SEARCHES = 4
MAX_SEARCHES_PER_TENANT = max(1, min(2, _cores() // 2))
"""2, or 1 on a machine of fewer than 4 cores: one tenant's searches never hold every core."""
QUEUE_SECONDS = 10.0
_MANY_MATCHES = (
    10_000  # a budget used up after this many matches went on counting, not backtracking
)
_SLICE_SECONDS = 0.01  # the shortest wall-clock slice the engine is given
_MIN_SHARE = 0.01  # of a core: a thread starved below it is planned for as if it had this
# A pattern is a literal when nothing in it is special: escaped punctuation (what
# `regex.escape` writes) and plain characters. `\d`, `\b` and the like are not literals.
_LITERAL = re.compile(r"(?:[^\\.^$*+?{}\[\]|()]|\\[^0-9A-Za-z])*", re.DOTALL)


class PatternTooCostlyError(Exception):
    """A regex used up its CPU time: by backtracking, or by matching too often to count."""

    def __init__(self, *, seconds: float, matches: int) -> None:
        super().__init__(f"the pattern used {seconds:.2f} s of CPU time ({matches} matches)")
        self.seconds = seconds
        self.matches = matches

    @property
    def backtracked(self) -> bool:
        """Whether it ran out before matching much: backtracking, not counting, cost it."""
        return self.matches < _MANY_MATCHES


class SearchBusyError(Exception):
    """Every search slot of this process stayed taken for `QUEUE_SECONDS`."""


class _Waiter:
    """A search waiting for a slot (each its own, however many a tenant has waiting)."""

    __slots__ = ("tenant",)

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant


_CHANGED = threading.Condition()
_RUNNING: Counter[str] = Counter()  # searches running now, by tenant
_WAITING: deque[_Waiter] = deque()  # searches waiting for a slot, in the order they came


def _turn(me: _Waiter) -> bool:
    """Whether `me` may take a slot now: the waiters before it that may run take theirs
    first. One whose tenant holds its share waits for its own tenant's, never holding up
    another tenant's search behind it."""
    running = _RUNNING.copy()
    for waiter in _WAITING:
        if running.total() >= MAX_CONCURRENT_SEARCHES:
            return False
        free = running[waiter.tenant] < MAX_SEARCHES_PER_TENANT
        if waiter is me:
            return free
        if free:
            running[waiter.tenant] += 1
    return False  # (never reached: a waiter is in the queue while it waits)


@contextmanager
def search_slot(tenant: str) -> Iterator[None]:
    """Hold a search slot for one of `tenant`'s searches, waiting up to `QUEUE_SECONDS`
    while the process's slots or the tenant's share are full.

    Served in the order the searches came: a search that comes when a slot has just freed
    does not take it from one that was waiting for it, nor do the waiters race for it (a
    condition wakes every waiter, and the first to run took the slot: under a flood the
    first search to wait could be served after every later one; issue 48, item 13).
    """
    deadline = time.monotonic() + QUEUE_SECONDS
    me = _Waiter(tenant)
    with _CHANGED:
        _WAITING.append(me)
        admitted = False
        try:
            while not _turn(me):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SearchBusyError
                _CHANGED.wait(left)
            admitted = True
        finally:
            _WAITING.remove(me)
            if not admitted:  # gone without a slot: those behind it may move up
                _CHANGED.notify_all()
        _RUNNING[tenant] += 1
    try:
        yield
    finally:
        with _CHANGED:
            _RUNNING[tenant] -= 1
            if not _RUNNING[tenant]:
                del _RUNNING[tenant]
            _CHANGED.notify_all()


def is_literal(pattern: regex.Pattern[str]) -> bool:
    """Whether the pattern can only match its own text (no class, group or quantifier)."""
    return not pattern.flags & regex.VERBOSE and _LITERAL.fullmatch(pattern.pattern) is not None


class CpuBudget:
    """The CPU seconds a regex may spend matching one claim, granted as its text streams in."""

    def __init__(self, seconds: float) -> None:
        self.granted = seconds
        self.spent = 0.0
        self.matches = 0
        self._share = 1.0  # of a core this thread got while matching, as last seen

    def timeout(self, began: float) -> float:
        """The engine's (wall-clock) timeout for a try, in a matching that began at CPU time
        `began`: what the CPU seconds left take at the share of a core this thread last got,
        so a loaded machine does not cut a try short (a cut try starts over, and its CPU time
        is spent all the same). `PatternTooCostlyError` when none are left."""
        left = self.granted - self.spent - (time.thread_time() - began)
        if left <= 0:
            raise PatternTooCostlyError(seconds=self.granted, matches=self.matches)
        return max(left / self._share, _SLICE_SECONDS)

    def cut_short(self, tried: tuple[float, float]) -> None:
        """A try begun at `tried` (`_clocks()`) ran out of wall time: the share to plan with."""
        cpu, wall = time.thread_time() - tried[0], time.monotonic() - tried[1]
        if wall > 0:
            self._share = min(1.0, max(cpu / wall, _MIN_SHARE))


def _clocks() -> tuple[float, float]:
    """The thread's CPU time and the wall time now: when a try of the engine began."""
    return time.thread_time(), time.monotonic()


def matches(
    pattern: regex.Pattern[str], buffer: str, pos: int, budget: CpuBudget | None
) -> Generator[regex.Match[str]]:
    """Non-empty matches from `pos`; with a budget, within its CPU time (the caller's work
    between matches included: it is the same thread's). `None` for a literal: no limit."""
    if budget is None:
        yield from (
            m for m in pattern.finditer(buffer, pos, concurrent=True) if m.end() > m.start()
        )
        return
    began = time.thread_time()
    try:
        while True:
            timeout = budget.timeout(began)
            tried = _clocks()
            try:
                for m in pattern.finditer(buffer, pos, concurrent=True, timeout=timeout):
                    if m.end() > m.start():
                        budget.matches += 1
                        yield m
                        pos = m.end()
                        tried = _clocks()
                return
            except TimeoutError:  # the wall time ended: go on if CPU time is left
                budget.cut_short(tried)
    finally:
        budget.spent += time.thread_time() - began


def reach(pattern: regex.Pattern[str], *, within: int) -> int | None:
    """At most how many characters a try of the pattern reads from where it starts, when that
    is fewer than `within`; None when it may be more (a `*`, `+` or `{n,}`), or cannot be told
    (syntax only the `regex` engine knows). Lookarounds count what they read too.

    The standard library's parser measures it; its syntax is the common part of both engines.
    """
    if pattern.flags & (regex.FULLCASE | regex.VERSION1):  # one character may match three
        return None
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags & _RE_FLAGS)
        widest = parsed.getwidth()[1] + sum(sub.getwidth()[1] for sub in _lookarounds(parsed))
    except Exception:  # anything the parser refuses is "cannot be told"
        return None
    return widest + 1 if widest + 1 < within else None  # +1: `\\b` and `$` look one ahead


_parser: Any = importlib.import_module("re._parser")  # private and untyped, but stable: it is
# what `re.compile` parses with, and all this asks of it is the widths `re` computes itself
_RE_FLAGS = regex.IGNORECASE | regex.MULTILINE | regex.DOTALL | regex.VERBOSE | regex.ASCII


def _lookarounds(parsed: Any) -> Iterator[Any]:
    """Every lookaround's sub-pattern in a parsed pattern (or a part of one), however deep."""
    if isinstance(parsed, _parser.SubPattern):
        for op, argument in parsed:
            if op in (_parser.ASSERT, _parser.ASSERT_NOT):
                yield argument[1]
            yield from _lookarounds(argument)
    elif isinstance(parsed, tuple | list):
        for item in parsed:
            yield from _lookarounds(item)


def compile_regex(source: str, flags: int = 0) -> regex.Pattern[str]:
    """`source` compiled, as every pattern a reader gives is; `ValueError` with the engine's
    reason ("missing ) at position 4"), never the pattern, when it cannot be."""
    try:
        return regex.compile(source, flags)
    except regex.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None
    except RecursionError:  # the engine's parser recurses once per group it opens
        raise ValueError("not a valid regular expression (its groups nest too deeply)") from None


def settling_probe(pattern: regex.Pattern[str]) -> regex.Pattern[str]:
    """The pattern as a probe for where text still to come could change what it matches.

    The atomic group takes the path the pattern's own first match takes, and what follows
    (the end, then one more character) can never complete: so in a partial search the probe
    only ever stops where a try of the pattern ran into the end of the text before settling
    (`first_unsettled`). A greedy `.*` that ran there first counts; a lazy one that matched
    before getting there does not.
    """
    return _probe(pattern.pattern, pattern.flags)


@functools.lru_cache(maxsize=64)
def _probe(source: str, flags: int) -> regex.Pattern[str]:
    end = "\n" if flags & regex.VERBOSE else ""  # a trailing `# comment` must not eat the `)`
    return compile_regex(f"(?>{source}{end})\\Z(?s:.)", flags)


def first_unsettled(probe: regex.Pattern[str], buffer: str, pos: int, budget: CpuBudget) -> int:
    """The first position from `pos` where the pattern's try reads to the end of `buffer`
    (`len(buffer)` when none does): before it, what the pattern matches is what it would
    match however the text goes on. Within the budget's CPU time, like `matches`."""
    began = time.thread_time()
    try:
        while True:
            timeout = budget.timeout(began)
            tried = _clocks()
            try:
                found = probe.search(buffer, pos, partial=True, concurrent=True, timeout=timeout)
            except TimeoutError:  # the wall time ended: go on if CPU time is left
                budget.cut_short(tried)
                continue
            return len(buffer) if found is None else found.start()
    finally:
        budget.spent += time.thread_time() - began


def count_within(
    pattern: regex.Pattern[str], buffer: str, start: int, stop: int
) -> tuple[int, int]:
    """A literal's matches lying wholly in `buffer[start:stop]`, and where the last one ends
    (`start` when there is none): counted by the engine, in the order a search finds them."""
    if stop <= start:
        return 0, start
    parts = pattern.split(buffer[start:stop], concurrent=True)
    counted = len(parts) - 1
    return counted, (stop - len(parts[-1]) if counted else start)
