"""Issue 36: a stdio proxy that its client ends (stdin closed, or a signal) leaves nothing
running, and exits within a second."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from devkit.mcp_servers import install_everything
from tests.mcp_proxy._support import PYTHON, ROOT, processes_marked, proxy_argv

CYCLES = 20
MARK = "S3CLAIM_TEST_LIFECYCLE"  # not a name the allowlist passes: given by --upstream-env


def _marked(mark: str) -> list[tuple[int, str]]:
    return processes_marked(MARK, mark)


def _proxy_pid(mark: str) -> int:
    """The proxy process this test launched, found by the mark in its command line."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mcp-proxy" in cmdline and f"{MARK}={mark}".encode() in cmdline:
                return int(entry.name)
    raise AssertionError("the proxy is not running")


async def _cycle(upstream: list[str], *, by_signal: signal.Signals | None) -> tuple[str, float]:
    """One client's life: launch the proxy, list tools, go; the seconds its exit took."""
    mark = uuid.uuid4().hex
    argv = proxy_argv("--tenant", "t", "--upstream-env", f"{MARK}={mark}", upstream_argv=upstream)
    params = StdioServerParameters(command=PYTHON, args=argv, env=dict(os.environ), cwd=str(ROOT))
    async with Client(params) as client:
        assert (await client.list_tools()).tools
        assert _marked(mark), "the upstream does not carry the mark"
        began = time.monotonic()
        if by_signal is not None:
            os.kill(_proxy_pid(mark), by_signal)
    return mark, time.monotonic() - began


def test_a_client_that_goes_leaves_no_upstream_running() -> None:
    """20 client cycles in front of server-everything, stdin close and SIGTERM alternating."""
    upstream = [str(install_everything())]
    left: list[tuple[int, str]] = []
    slow: list[float] = []

    async def scenario() -> None:
        with anyio.fail_after(CYCLES * 8):
            await cycles()

    async def cycles() -> None:
        for n in range(CYCLES):
            how = signal.SIGTERM if n % 2 else None
            mark, seconds = await _cycle(upstream, by_signal=how)
            if seconds > 1.0:
                slow.append(seconds)
            with anyio.move_on_after(1.0):  # a group being killed may take a moment
                while _marked(mark):
                    await anyio.sleep(0.05)
            left.extend(_marked(mark))

    try:
        anyio.run(scenario)
    finally:
        for pid, _ in left:  # the test's own leftovers, by pid
            os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} upstream processes left running: {left}"
    assert not slow, f"the proxy took this long to exit: {slow}"


def test_sigint_and_sighup_end_the_upstream_too() -> None:
    upstream = [str(install_everything())]

    async def scenario() -> None:
        for how in (signal.SIGINT, signal.SIGHUP):
            mark, seconds = await _cycle(upstream, by_signal=how)
            assert seconds < 1.0, how
            await anyio.sleep(0.5)
            assert not _marked(mark), how

    anyio.run(scenario)
