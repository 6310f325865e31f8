"""Fair shares (issue 36, point 6): a tenant that floods the proxy holds only its own share.

Before: the claim tools did not count against `--max-calls`, and a flood's searches waited
for their search slot inside anyio's 40 shared worker threads, so 60 `(a+)+$` searches of
tenant `evil` kept tenant `good`'s plain upstream call waiting 5-9 s (5 ms idle) for a
thread to check its result in. Now every call takes a slot of its tenant's share, one more is
refused at once, and an admitted call never waits for a thread (`s3claim.mcp._shares`).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from s3claim import ClaimCheck, MemoryClaimCheckStore, Scope
from s3claim._reading import _matching
from s3claim.bounds import Bounds
from s3claim.errors import ToolError
from s3claim.mcp import ClaimCheckProxy, Scoping, Upstream

from ._support import handle_of, serving_http, tenant_client, text_of, upstream

HOSTILE = r"(a+)+$"  # backtracks without end on a run of a's that ends in anything else
HOSTILE_TEXT = "a" * 20_000 + "!"
HONEST_TEXT = "the parties agree. " * 400
FLOOD = 60
FLOOD_SHARE = 2 * _matching.MAX_SEARCHES_PER_TENANT
"""`evil`'s share in the timed flood: its searches fill its search slots and as many wait for
one, as with the default share of 16, for a fraction of the CPU (0.5 s each)."""
SECONDS = 10.0  # a bound on any wait here: far above what each takes, far below a hang


class _Store(MemoryClaimCheckStore):
    """A store that counts tenant `evil`'s scans (`search_result`) as they start and, while
    `held`, keeps them waiting until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.reset(held=False)

    def reset(self, *, held: bool) -> None:
        self.held = held
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def scan(self, scope: Scope, handle: str, *, check_in_id: str | None = None) -> Iterator[str]:
        if scope.tenant == "evil":
            self.entered.release()
            if self.held:
                self.release.wait(timeout=SECONDS * 3)
        return super().scan(scope, handle, check_in_id=check_in_id)

    async def wait_entered(self, count: int) -> None:
        for _ in range(count):
            assert await anyio.to_thread.run_sync(self.entered.acquire, True, SECONDS)


@dataclass
class _Gateway:
    """One proxy for the module, over streamable HTTP, its tenant from `X-Tenant`, in an
    event loop of its own (`portal`); each test sets the `shares` it needs."""

    portal: BlockingPortal
    url: str
    proxy: ClaimCheckProxy
    store: _Store

    def shares(self, *, max_calls: int, tenant_calls: int) -> Bounds:
        self.proxy.bounds = Bounds(max_calls=max_calls, tenant_calls=tenant_calls)
        made = partial(anyio.CapacityLimiter, max_calls)
        self.proxy.workers = self.portal.call(made)  # in the proxy's event loop
        return self.proxy.bounds


@asynccontextmanager
async def _serving(store: _Store) -> AsyncIterator[tuple[str, ClaimCheckProxy]]:
    async with Upstream.connect(upstream(), timeout=20.0, startup_timeout=60.0) as up:
        scoping = Scoping.for_http(None, tenant_header="x-tenant")
        proxy = ClaimCheckProxy(up, claim_check=ClaimCheck(store), scoping=scoping)
        await proxy.check_names()
        async with serving_http(proxy) as url:
            yield url, proxy


@pytest.fixture(scope="module")
def gateway() -> Iterator[_Gateway]:
    store = _Store()
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_serving(store)) as (url, proxy),
    ):
        yield _Gateway(portal, url, proxy, store)


def _error(result: CallToolResult) -> str | None:
    if not result.is_error:
        return None
    error: str = json.loads(text_of(result))["error"]
    return error


async def _claim(client: Client, text: str) -> str:
    return handle_of(text_of(await client.call_tool("echo", {"text": text})))


# -- the bookkeeping ------------------------------------------------------------------------


def test_shares_refuse_past_the_tenants_share_and_past_the_total() -> None:
    shares = Bounds(max_calls=4, tenant_calls=2)
    with ExitStack() as held:
        for tenant in ("evil", "evil", "good"):
            held.enter_context(shares.admitted(tenant))
        with pytest.raises(ToolError, match="its share") as refused:
            held.enter_context(shares.admitted("evil"))
        assert refused.value.code == "too_many_calls"
        held.enter_context(shares.admitted("good"))  # evil never took good's second slot
        with pytest.raises(ToolError, match="--max-calls"):
            held.enter_context(shares.admitted("third"))
        assert (shares.in_flight(), shares.in_flight("evil"), shares.tenants) == (4, 2, 2)
    assert (shares.in_flight(), shares.tenants) == (0, 0)


def test_the_table_holds_only_tenants_in_flight_however_many_are_named() -> None:
    shares = Bounds(max_calls=64, tenant_calls=16)
    with ExitStack() as held:
        refused = 0
        for n in range(10_000):  # a client that mints a tenant per request
            try:
                held.enter_context(shares.admitted(f"minted-{n}"))
            except ToolError:
                refused += 1
        assert (shares.tenants, refused) == (64, 10_000 - 64)
    assert shares.tenants == 0
    for n in range(10_000):  # one after another: each is gone when its call ends
        with shares.admitted(f"minted-{n}"):
            pass
    assert shares.tenants == 0


@pytest.mark.parametrize(("max_calls", "tenant_calls"), [(0, 1), (4, 0), (4, 5)])
def test_shares_out_of_bounds_are_refused_at_construction(
    max_calls: int, tenant_calls: int
) -> None:
    with pytest.raises(ValueError, match="must be"):
        Bounds(max_calls=max_calls, tenant_calls=tenant_calls)


@pytest.mark.parametrize(
    ("scoping", "max_calls", "share"),
    [
        (Scoping.for_stdio("acme"), 64, 64),  # one tenant: nobody to share with
        (Scoping.for_http("acme"), 64, 64),
        (Scoping.for_http(None, tenant_header="x-tenant"), 64, 16),
        (Scoping.for_http(None, tenant_header="x-tenant"), 3, 1),
    ],
)
def test_a_tenant_from_a_header_gets_a_quarter_by_default_a_fixed_one_all(
    scoping: Scoping, max_calls: int, share: int
) -> None:

    async def built() -> ClaimCheckProxy:
        return ClaimCheckProxy(
            Upstream(upstream(), timeout=1.0), claim_check=ClaimCheck(MemoryClaimCheckStore()),
            scoping=scoping, max_calls=max_calls,
        )  # fmt: skip

    proxy = anyio.run(built)  # never connected
    assert (proxy.bounds.max_calls, proxy.bounds.tenant_calls) == (max_calls, share)


def test_each_upstream_of_a_gateway_counts_against_the_gateways_shares() -> None:
    async def built() -> tuple[ClaimCheckProxy, ClaimCheckProxy]:
        proxy = ClaimCheckProxy(
            Upstream(upstream(), timeout=1.0), claim_check=ClaimCheck(MemoryClaimCheckStore()),
            scoping=Scoping.for_http(None, tenant_header="x-tenant"),
        )  # fmt: skip
        return proxy, proxy.beside(Upstream(upstream(), timeout=1.0))  # never connected

    proxy, alone = anyio.run(built)
    assert alone.bounds is proxy.bounds


# -- the claim tools count ------------------------------------------------------------------


def test_claim_tools_reads_and_prompts_count_against_max_calls(gateway: _Gateway) -> None:
    """One slot: a search in flight holds it, and every other call is refused, the claim
    tools', a resource read and a prompt too; when it ends, all pass again."""
    shares = gateway.shares(max_calls=1, tenant_calls=1)
    store = gateway.store
    store.reset(held=True)

    async def scenario() -> None:
        async with tenant_client(gateway.url, "evil") as client:
            handle = await _claim(client, HONEST_TEXT)
            searched: list[CallToolResult] = []

            async def search() -> None:
                arguments = {"handle": handle, "pattern": "the"}
                searched.append(await client.call_tool("search_result", arguments))

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                await store.wait_entered(1)
                try:
                    assert shares.in_flight() == 1
                    for name, arguments in [
                        ("echo", {"text": "hi"}),
                        ("fetch_result", {"handle": handle}),
                        ("search_result", {"handle": handle, "pattern": "the"}),
                    ]:
                        refused = await client.call_tool(name, arguments)
                        assert _error(refused) == "too_many_calls", name
                        assert "--max-calls" in text_of(refused)
                    # Reads and prompts count too (the upstream's and the claims'); a
                    # listing does not: what --max-calls says it counts.
                    for read in (handle, "doc://big/10"):
                        with pytest.raises(MCPError, match="--max-calls"):
                            await client.read_resource(read)
                    with pytest.raises(MCPError, match="--max-calls"):
                        await client.get_prompt("review")
                    assert (await client.list_prompts()).prompts
                    assert (await client.list_resources()).resources
                    assert (await client.list_tools()).tools
                finally:
                    store.release.set()
            assert json.loads(text_of(searched[0]))["total_matches"] == 400
            assert _error(await client.call_tool("fetch_result", {"handle": handle})) is None
            assert shares.in_flight() == 0

    gateway.portal.call(scenario)


# -- one tenant's flood, another tenant's calls -----------------------------------------------


def test_a_flooding_tenant_holds_only_its_share_and_never_anothers_threads(
    gateway: _Gateway,
) -> None:
    """`evil` sends 60 searches whose scans hang: 16 (a quarter of 64) are admitted and wait,
    44 are refused at once; `good`'s upstream call, fetch and search pass meanwhile. Before,
    all 60 waited in the 40 shared worker threads and `good` waited 10 s for one."""
    shares = gateway.shares(max_calls=64, tenant_calls=16)
    store = gateway.store
    store.reset(held=True)

    async def scenario() -> None:
        async with (
            tenant_client(gateway.url, "evil") as evil,
            tenant_client(gateway.url, "good") as good,
        ):
            evil_handle = await _claim(evil, HONEST_TEXT)
            good_handle = await _claim(good, HONEST_TEXT)
            results: list[CallToolResult] = []
            refusals = anyio.Event()

            async def flood() -> None:
                arguments = {"handle": evil_handle, "pattern": "agree"}
                results.append(await evil.call_tool("search_result", arguments))
                if sum(_error(r) == "too_many_calls" for r in results) == FLOOD - 16:
                    refusals.set()

            async with anyio.create_task_group() as group:
                for _ in range(FLOOD):
                    group.start_soon(flood)
                try:
                    with anyio.fail_after(SECONDS):
                        await refusals.wait()
                    await store.wait_entered(_matching.MAX_SEARCHES_PER_TENANT)
                    assert shares.in_flight("evil") == 16
                    with anyio.fail_after(SECONDS / 2):  # before: 10 s, waiting for a thread
                        echoed = await good.call_tool("echo", {"text": "hi"})
                        fetched = await good.call_tool("fetch_result", {"handle": good_handle})
                        found = await good.call_tool(
                            "search_result", {"handle": good_handle, "pattern": "agree"}
                        )
                    assert text_of(echoed) == "hi" and _error(fetched) is None
                    assert json.loads(text_of(found))["total_matches"] == 400
                    refused = next(r for r in results if _error(r) == "too_many_calls")
                    assert "16 requests in flight, its share (--max-tenant-calls)" in text_of(
                        refused
                    )
                    assert shares.tenants == 1  # good's calls ended: good is gone
                finally:
                    store.release.set()
            assert [_error(r) for r in results].count(None) == 16  # the admitted all finish
            assert (shares.in_flight(), shares.tenants) == (0, 0)

    gateway.portal.call(scenario)


async def _timed(call: Callable[[], Awaitable[CallToolResult]]) -> float:
    began = time.perf_counter()
    result = await call()
    seconds = time.perf_counter() - began
    assert _error(result) is None, text_of(result)[:300]
    return seconds


async def measure_flood(url: str, store: _Store, *, calls: int = 8) -> dict[str, Any]:
    """`good`'s latencies per kind of call, idle (`calls` before the flood and as many after)
    and under `evil`'s 60 hostile searches (`calls`), and what the flood's calls came to.
    `evil`'s share must be `FLOOD_SHARE`."""
    store.reset(held=False)
    async with tenant_client(url, "evil") as evil, tenant_client(url, "good") as good:
        hostile = await _claim(evil, HOSTILE_TEXT)
        handle = await _claim(good, HONEST_TEXT)
        kinds: dict[str, Callable[[], Awaitable[CallToolResult]]] = {
            "upstream call": lambda: good.call_tool("echo", {"text": "hi"}),
            "fetch_result": lambda: good.call_tool("fetch_result", {"handle": handle}),
            "literal search": lambda: good.call_tool(
                "search_result", {"handle": handle, "pattern": "agree"}
            ),
        }
        idle: dict[str, list[float]] = {name: [] for name in kinds}
        flooded: dict[str, list[float]] = {name: [] for name in kinds}
        for call in kinds.values():  # warm: connections, caches
            await _timed(call)
        for _ in range(calls):
            for name, call in kinds.items():
                idle[name].append(await _timed(call))
        outcomes: list[str | None] = []
        refusals = anyio.Event()

        async def attack() -> None:
            arguments = {"handle": hostile, "pattern": HOSTILE, "regex": True}
            outcomes.append(_error(await evil.call_tool("search_result", arguments)))
            if outcomes.count("too_many_calls") == FLOOD - FLOOD_SHARE:
                refusals.set()

        running: list[int] = []
        async with anyio.create_task_group() as group:
            for _ in range(FLOOD):
                group.start_soon(attack)
            with anyio.fail_after(SECONDS):
                await refusals.wait()
            await store.wait_entered(_matching.MAX_SEARCHES_PER_TENANT)  # both slots taken
            for _ in range(calls):
                for name, call in kinds.items():
                    running.append(_matching._RUNNING["evil"])
                    flooded[name].append(await _timed(call))
        for _ in range(calls):
            for name, call in kinds.items():
                idle[name].append(await _timed(call))
    return {"idle": idle, "flood": flooded, "outcomes": outcomes, "running": running}


def _ratios(measured: dict[str, Any]) -> dict[str, float]:
    """Each kind of call's median latency under the flood over its median idle."""
    flood, idle = measured["flood"], measured["idle"]
    return {name: statistics.median(flood[name]) / statistics.median(idle[name]) for name in idle}


def test_under_60_hostile_searches_another_tenant_stays_within_5x_its_idle_latency(
    gateway: _Gateway,
) -> None:
    """Medians of 8 calls, on 2 cores shared with other jobs, over 28 runs: 1.0-2.3x in most,
    5.5-5.9x in 2 (every call of a window slow together: the machine busy elsewhere); before
    the fix, over 1,000x. So a measure over 5x is taken again, up to 3 times in all."""
    gateway.shares(max_calls=64, tenant_calls=FLOOD_SHARE)
    ratios: list[dict[str, float]] = []
    for _ in range(3):
        measured = gateway.portal.call(measure_flood, gateway.url, gateway.store)
        told = Counter(measured["outcomes"])
        assert told.pop("too_many_calls") == FLOOD - FLOOD_SHARE
        # Each admitted search spends its CPU budget, unless it waited over 10 s for a slot:
        # on a busy machine the GIL the event loop holds slows a regex that takes it back
        # for every allocation, so one that waits its turn may be told `busy`.
        assert told["pattern_too_costly"] >= _matching.MAX_SEARCHES_PER_TENANT
        assert told.total() == FLOOD_SHARE and set(told) <= {"pattern_too_costly", "busy"}
        assert min(measured["running"]) >= 1  # every call was timed while evil searched
        ratios.append(_ratios(measured))
        if max(ratios[-1].values()) <= 5:
            break
    assert max(ratios[-1].values()) <= 5, ratios
