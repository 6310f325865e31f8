"""Issue 36: a stdio proxy that its client ends (stdin closed, or a signal) leaves nothing
running, and exits before the client's grace runs out.

Alone on the machine the proxy exits in about 0.32 s: the quarter second server-everything
is given to exit once its stdin closes (it does not, after a handshake), then its group's
SIGTERM. Each exit must come within `EXIT_SECONDS`, the grace after which desktop clients and
the SDK's stdio client send SIGTERM (about 2 s); how fast within it is a timing, not asserted
here (the suite shares two cores with three other workers). No process left is asserted
strictly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from devkit.third_party import install_everything, install_inspector
from tests.mcp_proxy._support import PYTHON, ROOT, live_processes, processes_marked, proxy_argv

CYCLES = 20
EXIT_SECONDS = 2.0
MARK = "S3CLAIM_TEST_LIFECYCLE"  # not a name the allowlist passes: given by --upstream-env


def _marked(mark: str) -> list[tuple[int, str]]:
    return processes_marked(MARK, mark)


def _proxy_pid(mark: str) -> int:
    """The proxy process this test launched, found by the mark in its command line."""
    for process in live_processes():
        if b"mcp-proxy" in process.argv and f"{MARK}={mark}".encode() in process.argv:
            return process.pid
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
            if seconds > EXIT_SECONDS:
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
            assert seconds < EXIT_SECONDS, how
            await anyio.sleep(0.5)
            assert not _marked(mark), how

    anyio.run(scenario)


INSPECTOR_CYCLES = 20
LONG_CALL = [
    "--method", "tools/call", "--tool-name", "trigger-long-running-operation",
    "--tool-arg", "duration=30", "steps=30",
]  # fmt: skip


def test_the_inspector_cli_leaves_no_upstream_running(tmp_path: Path) -> None:
    """The other official client: the MCP Inspector's CLI (2.12, on Node 22) runs the proxy
    in front of server-everything, as `npx @modelcontextprotocol/inspector --cli` does.

    20 cycles, as for the SDK client (about 22 s of CPU: 1.7 s for one that lists tools, the
    Inspector's Node beside the proxy, 0.5 s for one interrupted). They alternate how it ends:
    the Inspector lists tools and ends the proxy itself (stdin closed, SIGTERM after its
    grace), or Ctrl-C: SIGINT to its process group (the Inspector and the proxy, as a
    terminal sends it) as soon as the upstream runs, so mostly while the proxy still
    starts, before its 30 s call (signals mid-session are the SDK loops' and the next test's).
    """
    inspector, everything = install_inspector(), str(install_everything())
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}  # not in ~
    left: list[tuple[int, str]] = []
    for n in range(INSPECTOR_CYCLES):
        mark = uuid.uuid4().hex
        interrupted = n % 2 == 1
        proxy = proxy_argv(
            "--tenant", "t", "--upstream-env", f"{MARK}={mark}", upstream_argv=[everything]
        )  # fmt: skip
        method = LONG_CALL if interrupted else ["--method", "tools/list"]
        argv = [*inspector, *method, "--cwd", str(ROOT), "--", PYTHON, *proxy]
        out = tmp_path / f"out{n}"
        with out.open("w") as stdout:
            process = subprocess.Popen(
                argv, stdout=stdout, stderr=subprocess.DEVNULL, env=env, start_new_session=True
            )
        try:
            if interrupted:
                while not _marked(mark) and process.poll() is None:
                    time.sleep(0.05)
                assert process.poll() is None, "the Inspector ended before the upstream ran"
                os.killpg(process.pid, signal.SIGINT)
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if not interrupted:
            assert code == 0 and '"fetch_result"' in out.read_text(), "no tools listed"
        deadline = time.monotonic() + 1.0  # a group being killed may take a moment
        while _marked(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        left.extend(_marked(mark))
    for pid, _ in left:  # the test's own leftovers, by pid
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} upstream processes left running: {left}"
