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
  own share. The others wait their turn, for up to `QUEUE_SECONDS`, then fail as
  `SearchBusyError` (the model reads `busy`): a flood queues instead of dividing the cores
  among itself until no search ends.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import regex

__all__ = [
    "MAX_CONCURRENT_SEARCHES",
    "MAX_SEARCHES_PER_TENANT",
    "QUEUE_SECONDS",
    "CpuBudget",
    "PatternTooCostlyError",
    "SearchBusyError",
    "count_within",
    "is_literal",
    "matches",
    "search_slot",
]

MAX_CONCURRENT_SEARCHES = 4
MAX_SEARCHES_PER_TENANT = 2
QUEUE_SECONDS = 10.0
_MANY_MATCHES = (
    10_000  # a budget used up after this many matches went on counting, not backtracking
)
_SLICE_SECONDS = 0.01  # the shortest wall-clock slice the engine is given
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


class _Slots:
    """Searches running now, in all and by tenant; a search waits while either is full."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: dict[str, int] = {}

    def _full(self, tenant: str) -> bool:
        return (
            sum(self._running.values()) >= MAX_CONCURRENT_SEARCHES
            or self._running.get(tenant, 0) >= MAX_SEARCHES_PER_TENANT
        )

    def acquire(self, tenant: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._full(tenant):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            self._running[tenant] = self._running.get(tenant, 0) + 1
            return True

    def release(self, tenant: str) -> None:
        with self._changed:
            self._running[tenant] -= 1
            if not self._running[tenant]:
                del self._running[tenant]
            self._changed.notify_all()


_SLOTS = _Slots()


@contextmanager
def search_slot(tenant: str) -> Iterator[None]:
    """Hold a search slot for one of `tenant`'s searches, waiting up to `QUEUE_SECONDS`."""
    if not _SLOTS.acquire(tenant, QUEUE_SECONDS):
        raise SearchBusyError
    try:
        yield
    finally:
        _SLOTS.release(tenant)


def is_literal(pattern: regex.Pattern[str]) -> bool:
    """Whether the pattern can only match its own text (no class, group or quantifier)."""
    return not pattern.flags & regex.VERBOSE and _LITERAL.fullmatch(pattern.pattern) is not None


class CpuBudget:
    """The CPU seconds a regex may spend matching one claim, granted as its text streams in."""

    def __init__(self, seconds: float) -> None:
        self.granted = seconds
        self.spent = 0.0
        self.matches = 0

    def grant(self, seconds: float) -> None:
        self.granted += seconds

    def exhausted(self) -> PatternTooCostlyError:
        return PatternTooCostlyError(seconds=self.granted, matches=self.matches)


def matches(
    pattern: regex.Pattern[str], buffer: str, pos: int, budget: CpuBudget | None
) -> Iterator[regex.Match[str]]:
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
            left = budget.granted - budget.spent - (time.thread_time() - began)
            if left <= 0:
                raise budget.exhausted()
            try:
                found = pattern.finditer(
                    buffer, pos, concurrent=True, timeout=max(left, _SLICE_SECONDS)
                )
                for m in found:
                    if m.end() > m.start():
                        budget.matches += 1
                        yield m
                        pos = m.end()
                return
            except TimeoutError:
                continue  # the slice of wall time ended: go on if CPU time is left
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
