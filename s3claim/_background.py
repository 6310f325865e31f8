"""Background: threads that do a check-in's side work while its main request is in flight.

A large check-in spends most of its time where Python lets go of the GIL (hashing, sending
the body), so work beside it (hashing the other half of the blocks, indexing lines while the
caller takes the body's CRC32, writing the indexes) runs on the other core instead of after
it. Each task runs in its caller's context (its span is the caller's child), and a forked
child starts with fresh threads.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import ParamSpec, TypeVar

__all__ = ["Background"]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_U = TypeVar("_U")
_all: weakref.WeakSet[Background] = weakref.WeakSet()


class Background:
    """A bounded pool, started on first use; tasks beyond `max_workers` wait their turn."""

    def __init__(self, max_workers: int, name: str) -> None:
        self._max_workers, self._name = max_workers, name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _all.add(self)

    def submit(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix=self._name)
            pool = self._pool
        call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        return pool.submit(call)

    def meanwhile(self, here: Callable[[], _T], beside: Callable[[], _U]) -> tuple[_T, _U]:
        """`here()` on this thread while `beside()` runs on a worker, for a `here` that lets
        go of the GIL (a CRC32): begun the other way round, the worker's first bytecode
        would wait out the switch interval (5 ms) behind this thread's Python."""
        running = self.submit(beside)
        try:
            return here(), running.result()
        finally:
            wait([running])  # when `here` raised: the worker's task is over before we go on

    def _forget_threads(self) -> None:
        self._pool, self._lock = None, threading.Lock()  # the parent's threads are not here


def _after_fork() -> None:
    for background in list(_all):
        background._forget_threads()


os.register_at_fork(after_in_child=_after_fork)
