"""Measure: fair shares in `s3claim mcp-proxy` (issue 36, point 6).

One proxy process serving streamable HTTP on 127.0.0.1, its tenant from the `X-Tenant`
header, the memory store, our test server (devkit/mcp_upstream.py) upstream; the official
client in this process for two tenants. Tenant `good` times its small calls (an upstream
`echo`, `fetch_result` and a literal `search_result` of a 7,600-character claim) idle, then
while tenant `evil` has 60 `(a+)+$` searches in flight over a claim of 20,000 `a`s and a `!`
(each backtracks until its CPU budget is spent), then idle again. Each kind's figure is the
median of its calls; the ratio is under the flood over idle (before and after pooled). Several
rounds, so the spread of the ratio shows.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent

from benchmarks.context import Bench
from benchmarks.load.fleet import Proxy
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_ms, fmt_ratio
from s3claim._reading._matching import MAX_SEARCHES_PER_TENANT
from s3claim.bounds import TENANT_SHARE
from s3claim.mcp import DEFAULT_MAX_CALLS

__all__ = ["run"]

HOSTILE = r"(a+)+$"
HOSTILE_TEXT = "a" * 20_000 + "!"
HONEST_TEXT = "the parties agree. " * 400
FLOOD = 60
SHARE = DEFAULT_MAX_CALLS // TENANT_SHARE
CRITERION = 5.0
"""Issue 36: `good`'s calls stay within 5x their idle latency under the flood."""
BEFORE = {"upstream call": (7.111, 0.005), "fetch_result": (4.820, 0.003)}
BEFORE["literal search"] = (5.273, 0.011)
"""Issue 36's measure of the same flood before the fix: seconds under it, and idle."""


@asynccontextmanager
async def _client(url: str, tenant: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers={"X-Tenant": tenant}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _text(result: CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _error(result: CallToolResult) -> str | None:
    return str(json.loads(_text(result))["error"]) if result.is_error else None


async def _handle(client: Client, text: str) -> str:
    shown = _text(await client.call_tool("echo", {"text": text}))
    return shown.rsplit("handle='", 1)[1].split("'", 1)[0]


async def _timed(call: Callable[[], Awaitable[CallToolResult]]) -> float:
    began = time.perf_counter()
    result = await call()
    seconds = time.perf_counter() - began
    if result.is_error:
        raise RuntimeError(f"good's call failed: {_text(result)[:200]}")
    return seconds


async def _round(url: str, calls: int) -> dict[str, Any]:
    """One round: `good`'s latencies idle (before and after) and under `evil`'s flood."""
    async with _client(url, "good") as good, _client(url, "evil") as evil:
        hostile = await _handle(evil, HOSTILE_TEXT)
        handle = await _handle(good, HONEST_TEXT)
        kinds: dict[str, Callable[[], Awaitable[CallToolResult]]] = {
            "upstream call": lambda: good.call_tool("echo", {"text": "hi"}),
            "fetch_result": lambda: good.call_tool("fetch_result", {"handle": handle}),
            "literal search": lambda: good.call_tool(
                "search_result", {"handle": handle, "pattern": "agree"}
            ),
        }
        idle: dict[str, list[float]] = {name: [] for name in kinds}
        flooded: dict[str, list[float]] = {name: [] for name in kinds}
        for call in kinds.values():  # warm
            await _timed(call)
        for _ in range(calls):
            for name, call in kinds.items():
                idle[name].append(await _timed(call))
        outcomes: Counter[str] = Counter()
        refused = anyio.Event()
        finished: list[float] = []

        async def attack() -> None:
            arguments = {"handle": hostile, "pattern": HOSTILE, "regex": True}
            outcomes[_error(await evil.call_tool("search_result", arguments)) or "ok"] += 1
            finished.append(time.monotonic())
            if outcomes["too_many_calls"] == FLOOD - SHARE:
                refused.set()

        began = time.monotonic()
        async with anyio.create_task_group() as group:
            for _ in range(FLOOD):
                group.start_soon(attack)
            with anyio.fail_after(60):
                await refused.wait()  # the rest are admitted, searching or waiting to
            for _ in range(calls):
                for name, call in kinds.items():
                    flooded[name].append(await _timed(call))
            probed = time.monotonic()
        for _ in range(calls):
            for name, call in kinds.items():
                idle[name].append(await _timed(call))
    return {
        "idle": {name: statistics.median(times) for name, times in idle.items()},
        "flood": {name: statistics.median(times) for name, times in flooded.items()},
        "outcomes": dict(outcomes),
        "flood_seconds": max(finished) - began,
        "within": probed < max(finished),  # every timed call while evil still searched
    }


def run(bench: Bench) -> Section:
    quick = bench.profile.name == "quick"
    rounds, calls = (2, 5) if quick else (5, 8)
    load = os.getloadavg()[0]
    proxy = Proxy(dict(os.environ), options=("--tenant-header", "x-tenant", "--store", "memory"))
    try:
        results = [anyio.run(_round, proxy.url, calls) for _ in range(rounds)]
    finally:
        proxy.stop()
    load = max(load, os.getloadavg()[0])
    kinds = list(results[0]["idle"])
    rows, failures = [], []
    for name in kinds:
        ratios = [r["flood"][name] / r["idle"][name] for r in results]
        idle = statistics.median(r["idle"][name] for r in results)
        flood = statistics.median(r["flood"][name] for r in results)
        before, before_idle = BEFORE[name]
        rows.append(
            [
                name,
                fmt_ms(idle),
                fmt_ms(flood),
                fmt_ratio(statistics.median(ratios)),
                f"{fmt_ratio(min(ratios))} – {fmt_ratio(max(ratios))}",
                f"{fmt_ms(before)} ({fmt_ratio(before / before_idle)})",
            ]
        )
        if statistics.median(ratios) > CRITERION:
            failures.append(
                f"good's {name} ran {statistics.median(ratios):.1f}x its idle latency under "
                f"the flood (median of {rounds} rounds; the criterion is {CRITERION:.0f}x)"
            )
    outcomes: Counter[str] = Counter()
    for r in results:
        outcomes.update(r["outcomes"])
    if not all(r["within"] for r in results):
        failures.append("some of good's calls were timed after evil's last search ended")
    seconds = [r["flood_seconds"] for r in results]
    told = ", ".join(f"{n:,} {o}" for o, n in sorted(outcomes.items(), key=lambda i: -i[1]))
    cores = os.cpu_count() or 1
    shared = ": other jobs shared them" if load > cores else ""
    worst = max(max(r["flood"][n] / r["idle"][n] for r in results) for n in kinds)
    return Section(
        title="Fair shares",
        intro=(
            "One `s3claim mcp-proxy --listen --tenant-header X-Tenant --store memory` process "
            "in front of our test server; the official client in another process. Tenant "
            "`good` times its small calls (an upstream `echo`, `fetch_result` and a literal "
            "`search_result` of a 7,600-character claim), idle and while tenant `evil` has "
            f"{FLOOD} `{HOSTILE}` searches in flight over a claim of 20,000 `a`s and a `!`. "
            f"With the defaults, a tenant from a header may have {SHARE} calls in flight (a "
            f"quarter of `--max-calls` {DEFAULT_MAX_CALLS}): the other "
            f"{FLOOD - SHARE} are refused `too_many_calls` at once, and of its {SHARE}, "
            f"{MAX_SEARCHES_PER_TENANT} search at a time (on this machine's "
            f"{cores} cores: at most half of them), each until its 0.5 s of CPU is "
            "spent. Each figure is the median of a kind's calls "
            f"({calls} under the flood, {2 * calls} idle, before and after), then the median "
            f"over {rounds} rounds; the range is the ratio's over the rounds."
        ),
        tables=[
            Table(
                title=f"`good`'s calls beside `evil`'s {FLOOD} hostile searches",
                headers=[
                    "call",
                    "idle",
                    "under the flood",
                    "ratio",
                    f"ratio over {rounds} rounds",
                    "before issue 36",
                ],
                rows=rows,
            )
        ],
        notes=[
            f"`evil`'s searches, over the rounds: {told}; a flood lasted "
            f"{min(seconds):.1f}–{max(seconds):.1f} s (a search still waiting for a slot "
            "after 10 s is told `busy`). The load average (1 min) reached "
            f"{load:.1f} on {cores} cores{shared}.",
            "Before issue 36 (its measure of the same flood): the claim tools did not count "
            "against `--max-calls`, and the flood's searches waited for a search slot inside "
            "the 40 worker threads every call shared, so `good` waited seconds for a thread. "
            "What is left is CPU: a costly regex keeps a core busy (it releases the GIL), and "
            "`good`'s calls share the rest of the machine.",
        ],
        headlines=[
            f"Under {FLOOD} hostile searches of another tenant, a tenant's small upstream "
            "call, fetch and literal search ran at "
            + ", ".join(
                f"{fmt_ratio(statistics.median(r['flood'][n] / r['idle'][n] for r in results))}"
                for n in kinds
            )
            + f" their idle latency (worst round {fmt_ratio(worst)}; before issue 36: "
            "over 400×)."
        ],
        budget_failures=failures,
    )
