"""A fleet of `s3claim mcp-proxy --listen` processes on one bucket, under MCP over HTTP.

Each proxy has its own stdio upstream (tests/mcp_proxy/_upstream.py) and the same bucket and
handle key, so any instance redeems any handle. The load generator is one process of asyncio
tasks, each an agent with an MCP client: one upstream call whose result is checked in, two
fetches and one search, under a run id of its own (`_meta` `s3claim/run`). A call that fails
at the transport (the instance is gone) is sent again to the next instance, as a load
balancer would; a tool result that is an error is counted, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.load.agent import percentile

__all__ = ["Proxy", "drive", "proc_stats"]

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "tests" / "mcp_proxy" / "_upstream.py"
DOC_CHARS = 20_000
_HANDLE = re.compile(r"claim:[0-9a-z]+")
_START_SECONDS = 60.0


def proc_stats(pid: int) -> dict[str, float]:
    """CPU seconds so far and peak RSS (MB) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        status = Path(f"/proc/{pid}/status").read_text()
        found = re.search(r"VmHWM:\s+(\d+) kB", status)
        return {"cpu": cpu, "peak_rss_mb": int(found.group(1)) / 1024 if found else 0.0}
    except (OSError, IndexError, ValueError):
        return {"cpu": 0.0, "peak_rss_mb": 0.0}


class Proxy:
    """One `s3claim mcp-proxy --listen 127.0.0.1:PORT` process (port 0: a free one)."""

    def __init__(self, env: dict[str, str], port: int = 0) -> None:
        argv = [sys.executable, "-m", "s3claim", "mcp-proxy", "--tenant", "load",
                "--listen", f"127.0.0.1:{port}", "--", sys.executable, str(UPSTREAM)]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=env, cwd=ROOT, start_new_session=True,
        )  # fmt: skip
        self.url = ""
        ready = threading.Event()

        def drain() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                found = re.search(r"serving streamable HTTP at (http://\S+)", line)
                if found:
                    self.url = found.group(1)
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        ready.wait(_START_SECONDS)
        if not self.url:
            self.stop()
            raise RuntimeError("the proxy did not start")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    def kill(self) -> None:
        """SIGKILL the proxy and its upstream: no goodbye, as a crashed host."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


class _Agent:
    """One agent's MCP client, moving to the next instance when its instance is gone."""

    def __init__(self, urls: Sequence[str], first: int, stats: dict[str, Any]) -> None:
        self._urls = urls
        self._at = first
        self._stats = stats
        self._client: Any = None
        self._stack = contextlib.AsyncExitStack()

    async def _connect(self) -> Any:
        from mcp import Client

        if self._client is None:
            self._client = await self._stack.enter_async_context(
                Client(self._urls[self._at % len(self._urls)], read_timeout_seconds=60)
            )
        return self._client

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()
        self._client = None
        self._stack = contextlib.AsyncExitStack()

    async def call(self, op: str, name: str, arguments: dict[str, Any], run: str) -> str:
        began = time.perf_counter()
        for attempt in range(20):
            try:
                client = await self._connect()
                result = await client.call_tool(name, arguments, meta={"s3claim/run": run})
                break
            except Exception:  # the instance is gone or going: the next one
                self._stats["failovers"] += 1
                await self.close()
                self._at += 1
                await asyncio.sleep(min(1.0, 0.05 * 2**attempt))
        else:
            raise RuntimeError(f"{name}: no instance answered")
        self._stats["latency"][op].append(time.perf_counter() - began)
        text = "".join(getattr(b, "text", "") for b in result.content)
        if result.is_error or text.startswith('{"error"') or "not retrievable" in text:
            self._stats["refusals"][_refusal(text)] += 1
        return text


def _refusal(text: str) -> str:
    try:
        return str(json.loads(text)["error"])
    except (ValueError, KeyError, TypeError):
        return "check_in_lost" if "not retrievable" in text else "error"


async def _one_run(agent: _Agent, seed: int, stats: dict[str, Any]) -> tuple[str, str, int]:
    run = uuid.uuid4().hex
    head = await agent.call("proxy_call_large", "big", {"chars": DOC_CHARS, "seed": seed}, run)
    found = _HANDLE.search(head)
    if found is None:
        stats["lost"] += 1
        return run, "", seed
    handle = found.group(0)
    for offset in (4096, 12288):
        await agent.call("proxy_fetch", "fetch_result", {"handle": handle, "offset": offset}, run)
    search = {"handle": handle, "pattern": "契約第100条"}
    await agent.call("proxy_search", "search_result", search, run)
    stats["runs"] += 1
    return run, handle, seed


async def drive(
    urls: Sequence[str], *, agents: int, runs_each: int, chaos: Any = None
) -> dict[str, Any]:
    """`agents` concurrent agents, `runs_each` runs each; `chaos(elapsed)` is awaited midway."""
    stats: dict[str, Any] = {"failovers": 0, "runs": 0, "lost": 0,
                             "refusals": Counter(), "latency": defaultdict(list)}  # fmt: skip
    minted: list[tuple[str, str, int]] = []
    began = time.perf_counter()

    async def agent_task(index: int) -> None:
        agent = _Agent(urls, index, stats)
        try:
            for r in range(runs_each):
                minted.append(await _one_run(agent, index * 1000 + r, stats))
        finally:
            await agent.close()

    tasks = [asyncio.create_task(agent_task(i)) for i in range(agents)]
    if chaos is not None:
        tasks.append(asyncio.create_task(chaos()))
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - began
    stats["lost"] += await _verify(urls, minted)
    latency = stats.pop("latency")
    return {
        **stats,
        "refusals": dict(stats["refusals"]),
        "wall": wall,
        "runs_per_s": stats["runs"] / wall,
        "calls_per_s": sum(len(v) for v in latency.values()) / wall,
        "p50": {op: percentile(v, 0.5) for op, v in latency.items()},
        "p99": {op: percentile(v, 0.99) for op, v in latency.items()},
    }


async def _verify(urls: Sequence[str], minted: list[tuple[str, str, int]]) -> int:
    """Every claim minted is read back whole-window through the *last* instance: none lost."""
    from mcp import Client

    sys.path.insert(0, str(UPSTREAM.parent))
    from _upstream import document  # type: ignore[import-not-found]

    lost = 0
    async with Client(urls[-1], read_timeout_seconds=60) as client:
        for run, handle, seed in minted[:128]:
            if not handle:
                continue
            result = await client.call_tool(
                "fetch_result", {"handle": handle, "offset": 0}, meta={"s3claim/run": run}
            )
            text = "".join(getattr(b, "text", "") for b in result.content)
            if result.is_error or not text.startswith(document(DOC_CHARS, seed=seed)[:4096]):
                lost += 1
    return lost
