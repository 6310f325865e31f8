"""Bounds: what one server holds in flight, counted by tenant, for every door alike.

Every request a server of ours serves takes a slot of one `Bounds`: the MCP proxy's tool
calls (the claim tools too), resource reads and prompts, and every link read, on the proxy's
`/claims/` and on `s3claim serve` (a link's tenant is in its token). At most `max_calls` are
in flight at once, and at most `tenant_calls` of one tenant's; a read also holds the bytes it
may buffer (its window's UTF-8 at most, or the most a byte range or a whole text is held),
at most `max_bytes` of them in all and `tenant_bytes` of one tenant's. One more is refused
at once (`too_many_calls`), never queued, so a refused request holds nothing: a flood
waiting in a line would still be work in flight, with the other tenants' requests somewhere
behind it. A link read keeps its slot until the last piece of its answer is handed to the
connection: a client that stops reading holds its slot and its bytes, never more than the
bounds allow (docs/mcp-proxy.md, "Bounds").

The table holds a tenant only while it has a request in flight: never more than `max_calls`
tenants, whatever names the requests bring, and nothing to evict. A lock guards the counts,
so event loops and worker threads may share one `Bounds`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from s3claim.errors import ConfigurationError, ToolError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_CALLS",
    "TENANT_SHARE",
    "Bounds",
]

DEFAULT_MAX_CALLS = 64
"""Requests a server serves at once; one more is refused."""
TENANT_SHARE = 4
"""With many tenants (a header names them, or links do), one tenant's requests are 1/4 of
`max_calls` by default."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""What the reads in flight may buffer in all: 64 MiB."""


class Bounds:
    """At most `max_calls` requests in flight, `tenant_calls` of any one tenant's, and
    `max_bytes` buffered by the reads among them, `tenant_bytes` by one tenant's. The
    tenant's shares are by default all of the bounds for a server of one tenant, and
    1/`TENANT_SHARE` of them with `many_tenants`."""

    def __init__(
        self,
        *,
        max_calls: int = DEFAULT_MAX_CALLS,
        tenant_calls: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        many_tenants: bool = True,
    ) -> None:
        if max_calls < 1:
            raise ConfigurationError(f"max_calls must be positive, got {max_calls}")
        if tenant_calls is None:
            tenant_calls = max(1, max_calls // TENANT_SHARE) if many_tenants else max_calls
        if not 1 <= tenant_calls <= max_calls:
            raise ConfigurationError(
                f"max_tenant_calls must be from 1 to max_calls ({max_calls}), got {tenant_calls}"
            )
        if max_bytes < 1:
            raise ConfigurationError(f"max_read_bytes must be positive, got {max_bytes}")
        share = TENANT_SHARE if many_tenants else 1
        self.max_calls = max_calls
        self.tenant_calls = tenant_calls
        self.max_bytes = max_bytes
        self.tenant_bytes = max(1, max_bytes // share)
        self._lock = threading.Lock()
        # By tenant, only while it has a request in flight: its requests, and their bytes.
        self._calls: dict[str, tuple[int, int]] = {}
        self._total = 0
        self._bytes = 0

    @property
    def tenants(self) -> int:
        """Tenants with requests in flight: the size of the table."""
        with self._lock:
            return len(self._calls)

    def in_flight(self, tenant: str | None = None) -> int:
        """Requests in flight: in all, or `tenant`'s."""
        with self._lock:
            return self._total if tenant is None else self._calls.get(tenant, (0, 0))[0]

    @contextmanager
    def admitted(self, tenant: str, *, holding: int = 0) -> Iterator[None]:
        """A slot for one of `tenant`'s requests, holding `holding` bytes it may buffer;
        `ToolError("too_many_calls")` when there is none."""
        with self._lock:
            calls, held = self._calls.get(tenant, (0, 0))
            if self._total >= self.max_calls:
                raise ToolError(
                    "too_many_calls",
                    f"the server already serves {self.max_calls} requests (--max-calls); "
                    "try again when one has finished",
                )
            if calls >= self.tenant_calls:
                raise ToolError(
                    "too_many_calls",
                    f"this tenant already has {self.tenant_calls} requests in flight, its share "
                    "(--max-tenant-calls); try again when one has finished",
                )
            if holding and (
                self._bytes + holding > self.max_bytes or held + holding > self.tenant_bytes
            ):
                raise ToolError(
                    "too_many_calls",
                    "the reads in flight already hold what the server buffers for them "
                    f"({self.max_bytes} bytes, --max-read-bytes; {self.tenant_bytes} of one "
                    "tenant's); try again when one has finished, or read a shorter window",
                )
            self._calls[tenant] = (calls + 1, held + holding)
            self._total += 1
            self._bytes += holding
        try:
            yield
        finally:
            with self._lock:
                self._total -= 1
                self._bytes -= holding
                calls, held = self._calls[tenant]
                if calls > 1:
                    self._calls[tenant] = (calls - 1, held - holding)
                else:
                    del self._calls[tenant]

    def __repr__(self) -> str:
        return (
            f"Bounds(max_calls={self.max_calls}, tenant_calls={self.tenant_calls}, "
            f"max_bytes={self.max_bytes}, tenant_bytes={self.tenant_bytes})"
        )
