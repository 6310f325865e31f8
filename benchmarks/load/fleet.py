"""A fleet of `s3claim mcp-proxy --listen` processes on one bucket, under MCP over HTTP.

Each proxy has its own stdio upstream (devkit/mcp_upstream.py) and the same bucket and
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

__all__ = ["Proxy", "drive", "new_stats", "proc_stats", "verify"]

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "devkit" / "mcp_upstream.py"
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
    """One `s3claim mcp-proxy --listen 127.0.0.1:PORT` process (port 0: a free one), with
    `options` (by default the one tenant `load`)."""

    def __init__(
        self, env: dict[str, str], port: int = 0, options: Sequence[str] = ("--tenant", "load")
    ) -> None:
        argv = [sys.executable, "-m", "s3claim", "mcp-proxy", *options,
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

        self._drain = threading.Thread(target=drain, daemon=True)
        self._drain.start()
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
        self._reap()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        """The stderr pipe is read to its end, then closed."""
        self._drain.join(timeout=15)
        if self.process.stderr is not None and not self.process.stderr.closed:
            self.process.stderr.close()


class _Gone(ConnectionError):
    """The instance behind a session went away: the call is sent again, elsewhere."""


class _Session:
    """One MCP client on one instance, owned by a task of its own.

    The client's transport runs in an anyio task group: when its instance is SIGKILLed, the
    group fails and cancels the scope it was entered in. Entered in the agent's task, that
    cancellation lands in the agent as `CancelledError` (a BaseException) and takes the
    harness down. Entered here, it ends this task only; the agent sees `_Gone`.
    """

    def __init__(self, url: str) -> None:
        self._calls: asyncio.Queue[tuple[str, dict[str, Any], str, asyncio.Future[Any]] | None]
        self._calls = asyncio.Queue()
        self._task = asyncio.create_task(self._serve(url))

    async def _serve(self, url: str) -> None:
        from mcp import Client

        pending: asyncio.Future[Any] | None = None
        try:
            async with Client(url, read_timeout_seconds=60) as client:
                while (item := await self._calls.get()) is not None:
                    name, arguments, run, pending = item
                    result = await client.call_tool(name, arguments, meta={"s3claim/run": run})
                    pending.set_result(result)
                    pending = None
        except BaseException as exc:  # the transport's end, whatever its form
            if pending is not None and not pending.done():
                pending.set_exception(_Gone(f"{type(exc).__name__}: {exc}"[:200]))
            while not self._calls.empty():
                item = self._calls.get_nowait()
                if item is not None and not item[3].done():
                    item[3].set_exception(_Gone("the session ended"))

    async def call(self, name: str, arguments: dict[str, Any], run: str) -> Any:
        if self._task.done():
            raise _Gone("the session ended")
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._calls.put((name, arguments, run, answer))
        await asyncio.wait({answer, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():
            raise _Gone("the session ended")
        return answer.result()

    async def close(self) -> None:
        if not self._task.done():
            await self._calls.put(None)
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
            except TimeoutError:
                self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task


class _Agent:
    """One agent's MCP session, moving to the next instance when its instance is gone."""

    def __init__(self, urls: Sequence[str], first: int, stats: dict[str, Any]) -> None:
        self._urls = urls
        self._at = first
        self._stats = stats
        self._session: _Session | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._session = None

    async def call(self, op: str, name: str, arguments: dict[str, Any], run: str) -> str:
        began = time.perf_counter()
        for attempt in range(20):
            if self._session is None:
                self._session = _Session(self._urls[self._at % len(self._urls)])
            try:
                result = await self._session.call(name, arguments, run)
                break
            except Exception as exc:  # the instance is gone or going: the next one
                # Counted as what the client saw: a retryable transport error, sent again.
                self._stats["failovers"] += 1
                self._stats["transport_errors"][type(exc).__name__] += 1
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


def new_stats() -> dict[str, Any]:
    """What a load counts: runs, failovers (with their transport errors), refusals, latency."""
    return {"failovers": 0, "runs": 0, "lost": 0, "refusals": Counter(),
            "transport_errors": Counter(), "latency": defaultdict(list)}  # fmt: skip


async def drive(
    urls: Sequence[str], *, agents: int, runs_each: int, chaos: Any = None
) -> dict[str, Any]:
    """`agents` concurrent agents, `runs_each` runs each; `chaos()` runs beside them.

    The answer's `minted` (run, handle, seed per run) is for `verify`, after the S3 requests
    of the load have been read off the relay.
    """
    stats = new_stats()
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
    latency = stats.pop("latency")
    return {
        **stats,
        "minted": minted,
        "refusals": dict(stats["refusals"]),
        "transport_errors": dict(stats["transport_errors"]),
        "wall": wall,
        "runs_per_s": stats["runs"] / wall,
        "calls_per_s": sum(len(v) for v in latency.values()) / wall,
        "p50": {op: percentile(v, 0.5) for op, v in latency.items()},
        "p99": {op: percentile(v, 0.99) for op, v in latency.items()},
    }


async def verify(urls: Sequence[str], minted: list[tuple[str, str, int]]) -> int:
    """Every claim minted is read back whole-window through the *last* instance: none lost."""
    from mcp import Client

    from devkit.mcp_upstream import document

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
