"""Workers: a bounded pool of threads that runs blocking store calls for a coroutine."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["DEFAULT_MAX_WORKERS", "Workers"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_MAX_WORKERS = 4
"""Enough to keep two cores and a store busy; more only adds GIL contention (loop lag)."""

_names = itertools.count(1)


class Workers:
    """A pool of its own, not the loop's default executor (on 2 cores that has 6 threads and is
    shared with every other `to_thread` in the program). Threads start on first use.
    """

    def __init__(self, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be a positive integer, got {max_workers!r}")
        self.max_workers = max_workers
        self._pool = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=f"s3claim-aio-{next(_names)}"
        )

    async def run(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`function(*args, **kwargs)` on a worker thread; the event loop stays free meanwhile."""
        loop = asyncio.get_running_loop()
        # In the caller's context, as asyncio.to_thread does: its span is the worker's parent.
        call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        return await loop.run_in_executor(self._pool, call)
