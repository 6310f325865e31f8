"""Shares: the proxy's calls in flight, counted by tenant, so a flooding tenant holds only its own.

Every call a client makes (forwarded, a claim tool, a resource read, a prompt) takes a slot:
at most `max_calls` at once in the proxy and at most `tenant_calls` of one tenant's. One
more is refused at once (`too_many_calls`), never queued, so a refused call holds nothing:
a flood waiting in a line would still be work in flight, with the other tenants' calls
somewhere behind it.

An admitted call's blocking work (a claim tool, a claim read, its references, its check-in)
runs in a thread of `workers`, a limiter as large as `max_calls`. A call uses one thread at
a time, so an admitted call never waits for one: there is no queue shared by the tenants.
There was one: anyio's default 40 threads, where a flood's searches waited for a search slot
(`s3claim._reading._matching.search_slot`), so 60 searches of one tenant kept another's
5 ms upstream call waiting 5 to 9 s for a thread to check its result in. A tenant's share
of the CPU-bound work is its share of the search slots.

The event loop alone reads and writes the counts, so they need no lock. The table holds a
tenant only while it has a call in flight: never more than `max_calls` tenants, whatever
names the requests bring, and nothing to evict.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from s3claim.errors import ConfigurationError, ToolError

__all__ = ["TENANT_SHARE", "Shares"]

TENANT_SHARE = 4
"""With tenants taken from a header, one tenant's calls are 1/4 of `max_calls` by default."""


class Shares:
    """At most `max_calls` calls in flight, at most `tenant_calls` of any one tenant."""

    def __init__(self, *, max_calls: int, tenant_calls: int) -> None:
        if max_calls < 1:
            raise ConfigurationError(f"max_calls must be positive, got {max_calls}")
        if not 1 <= tenant_calls <= max_calls:
            raise ConfigurationError(
                f"max_tenant_calls must be from 1 to max_calls ({max_calls}), got {tenant_calls}"
            )
        self.max_calls = max_calls
        self.tenant_calls = tenant_calls
        self.workers = anyio.CapacityLimiter(max_calls)
        """Worker threads for admitted calls: one each at most, so none waits for one."""
        self._calls: dict[str, int] = {}  # by tenant, only while it has a call in flight
        self._total = 0

    @property
    def tenants(self) -> int:
        """Tenants with calls in flight: the size of the table."""
        return len(self._calls)

    def in_flight(self, tenant: str | None = None) -> int:
        """Calls in flight: in all, or `tenant`'s."""
        return self._total if tenant is None else self._calls.get(tenant, 0)

    @contextmanager
    def admitted(self, tenant: str) -> Iterator[None]:
        """A slot for one of `tenant`'s calls; `ToolError("too_many_calls")` when there is none."""
        held = self._calls.get(tenant, 0)
        if self._total >= self.max_calls:
            raise ToolError(
                "too_many_calls",
                f"the proxy already serves {self.max_calls} calls (--max-calls); "
                "try again when one has finished",
            )
        if held >= self.tenant_calls:
            raise ToolError(
                "too_many_calls",
                f"this tenant already has {self.tenant_calls} calls in flight, its share "
                "(--max-tenant-calls); try again when one has finished",
            )
        self._calls[tenant] = held + 1
        self._total += 1
        try:
            yield
        finally:
            self._total -= 1
            left = self._calls[tenant] - 1
            if left:
                self._calls[tenant] = left
            else:
                del self._calls[tenant]
