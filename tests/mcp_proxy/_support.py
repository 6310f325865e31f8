"""Shared pieces of the proxy's tests: markers, reading a claim back, proxies to run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, TextContent

from s3claim import ClaimCheck, ClaimCheckPolicy, ClaimCheckStore, MemoryClaimCheckStore
from s3claim.mcp import (
    DEFAULT_MAX_CALLS,
    MCP_PATH,
    ClaimCheckProxy,
    Scoping,
    StdioUpstream,
    Upstream,
    listen_socket,
    server_config,
)
from s3claim.mcp._serve import _Uvicorn

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = str(ROOT / "devkit" / "mcp_upstream.py")
PYTHON = sys.executable
MARKER = re.compile(
    r"\n\n\[(\d+) characters, (\d+) not shown\. Call fetch_result with "
    r"handle='(claim:[0-9a-z]+)' to read the rest(?:, or search_result to find text in it)?\.\]\Z"
)
FOOTER = re.compile(
    r"\n\n\[characters (\d+)-(\d+) of (\d+)\. Call fetch_result with "
    r"handle='(claim:[0-9a-z]+)' and offset=(\d+) to continue\.\]\Z"
)
END_NOTE = re.compile(
    r"\n\n\[end of the result \(fetch_result\): characters \d+-\d+ of \d+[^\n]*\]\Z"
)
_START_SECONDS = 60.0
T = TypeVar("T")


def text_of(result: CallToolResult) -> str:
    (block,) = [b for b in result.content if isinstance(b, TextContent)]
    return block.text


def handle_of(text: str) -> str:
    found = MARKER.search(text)
    assert found is not None, f"no marker at the end of: {text[-300:]!r}"
    return found.group(3)


async def read_all(
    client: Client, handle: str, *, meta: dict[str, Any] | None = None
) -> tuple[str, list[CallToolResult]]:
    """Every window of a claim through `fetch_result`, joined; and the results as received."""
    offset: int | None = 0
    parts: list[str] = []
    results: list[CallToolResult] = []
    while offset is not None:
        result = await client.call_tool(
            "fetch_result", {"handle": handle, "offset": offset}, meta=meta
        )
        assert not result.is_error, text_of(result)
        results.append(result)
        text = text_of(result)
        footer = FOOTER.search(text)
        if footer is None:  # the last window: its end note goes
            note = END_NOTE.search(text)
            assert note is not None, f"the last window has no end note: {text[-300:]!r}"
            parts.append(text[: note.start()])
            offset = None
        else:
            parts.append(text[: footer.start()])
            assert footer.group(4) == handle and int(footer.group(1)) == offset
            offset = int(footer.group(5))
    return "".join(parts), results


def upstream(*extra: str) -> StdioUpstream:
    """Our own test server (devkit/mcp_upstream.py) on stdio."""
    return StdioUpstream(command=PYTHON, args=(UPSTREAM, *extra))


@asynccontextmanager
async def proxy_of(
    *,
    store: ClaimCheckStore | None = None,
    policy: ClaimCheckPolicy | None = None,
    timeout: float = 20.0,
    extra: Sequence[str] = (),
    scoping: Scoping | None = None,
    max_calls: int = DEFAULT_MAX_CALLS,
    max_tenant_calls: int | None = None,
) -> AsyncIterator[ClaimCheckProxy]:
    """A proxy in this process, in front of our test server (a subprocess on stdio)."""
    claim_check = ClaimCheck(store if store is not None else MemoryClaimCheckStore(), policy=policy)
    async with Upstream.connect(
        upstream(*extra), timeout=timeout, startup_timeout=max(timeout, 60.0)
    ) as up:
        proxy = ClaimCheckProxy(
            up, claim_check=claim_check, scoping=scoping or Scoping.for_stdio("acme"),
            max_calls=max_calls, max_tenant_calls=max_tenant_calls,
        )  # fmt: skip
        await proxy.check_names()
        yield proxy


@asynccontextmanager
async def in_process(
    *,
    store: ClaimCheckStore | None = None,
    policy: ClaimCheckPolicy | None = None,
    timeout: float = 20.0,
    extra: Sequence[str] = (),
    scoping: Scoping | None = None,
    max_calls: int = DEFAULT_MAX_CALLS,
    max_tenant_calls: int | None = None,
    **client: Any,
) -> AsyncIterator[tuple[Client, ClaimCheckProxy]]:
    """The official client, connected in-process to a proxy in front of our test server.

    `client`: options for the client (`mode="legacy"`, callbacks).
    """
    async with (
        proxy_of(
            store=store,
            policy=policy,
            timeout=timeout,
            extra=extra,
            scoping=scoping,
            max_calls=max_calls,
            max_tenant_calls=max_tenant_calls,
        ) as proxy,
        Client(proxy.server(), **client) as connected,
    ):
        yield connected, proxy


class Shared(Generic[T]):
    """`value` (a proxy, a connected client) held open for a module's tests in an event loop
    of its own thread, where each test runs its scenario: one process for many tests."""

    def __init__(self, portal: BlockingPortal, value: T) -> None:
        self._portal = portal
        self.value = value

    def run(self, scenario: Callable[[T], Awaitable[None]]) -> None:
        self._portal.call(scenario, self.value)


@contextmanager
def shared(manager: AbstractAsyncContextManager[T]) -> Iterator[Shared[T]]:
    """`manager` entered in a thread's event loop until the block ends (a module fixture)."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(manager) as value,
    ):
        yield Shared(portal, value)


@asynccontextmanager
async def serving_http(proxy: ClaimCheckProxy) -> AsyncIterator[str]:
    """`proxy` serving streamable HTTP on 127.0.0.1 in this event loop: its URL while it serves.

    The socket listens before the server starts, so a client may connect at once."""
    sock = listen_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app: Any = proxy.server().streamable_http_app(streamable_http_path=MCP_PATH, host="127.0.0.1")
    server = _Uvicorn(server_config(app, lifespan="on"))  # as `serve_http` runs
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(server.serve, sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{port}{MCP_PATH}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


@asynccontextmanager
async def tenant_client(url: str, tenant: str) -> AsyncIterator[Client]:
    """The official client over streamable HTTP, naming `tenant` in an `X-Tenant` header."""
    async with (
        create_mcp_http_client(headers={"X-Tenant": tenant}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def proxy_argv(*options: str, upstream_argv: Sequence[str] = (PYTHON, UPSTREAM)) -> list[str]:
    upstream = ["--", *upstream_argv] if upstream_argv else []  # none: --upstream-url
    return ["-m", "s3claim", "mcp-proxy", *options, *upstream]


def stdio_proxy(
    *options: str, upstream_argv: Sequence[str] = (PYTHON, UPSTREAM), **client: Any
) -> Client:
    """The official client, launching `s3claim mcp-proxy` as a subprocess over stdio.

    `client`: options for the client (`mode="legacy"`, callbacks).
    """
    return Client(
        StdioServerParameters(
            command=PYTHON,
            args=proxy_argv(*options, upstream_argv=upstream_argv),
            env=dict(os.environ),  # the sealed test environment, S3 settings included
            cwd=str(ROOT),
        ),
        **client,
    )


@contextmanager
def http_proxy(
    *options: str,
    upstream_argv: Sequence[str] = (PYTHON, UPSTREAM),
    env: dict[str, str] | None = None,
) -> Iterator[HttpProxy]:
    """Start a proxy serving streamable HTTP on loopback; stop it with SIGTERM afterwards."""
    argv = [PYTHON, *proxy_argv("--listen", "127.0.0.1:0", *options, upstream_argv=upstream_argv)]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else dict(os.environ),
        cwd=ROOT,
    )
    proxy = HttpProxy(process)
    try:
        proxy.wait_serving()
        yield proxy
    finally:
        proxy.stop()


class HttpProxy:
    """`s3claim mcp-proxy --listen 127.0.0.1:0` as a subprocess; `url` once it serves."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.url = ""
        self.stderr: list[str] = []
        self._serving = threading.Event()
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:  # until the process exits and its pipe closes
            self.stderr.append(line)
            found = re.search(r"serving streamable HTTP at (http://\S+)", line)
            if found:
                self.url = found.group(1)
                self._serving.set()
        self._serving.set()

    def wait_serving(self) -> None:
        self._serving.wait(_START_SECONDS)
        if not self.url:
            raise AssertionError(f"the proxy did not start: {''.join(self.stderr)[-2000:]}")

    def stop(self) -> None:
        """SIGTERM, as a service manager would; then every line it wrote is in `stderr`."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self._drain.join(timeout=15)
        if self.process.stderr is not None:
            self.process.stderr.close()


@dataclass(frozen=True)
class LiveProcess:
    """A running process of this machine as /proc shows it, read as bytes: on a shared machine
    any process may carry a name, an argument or a variable that is not UTF-8."""

    pid: int
    argv: tuple[bytes, ...]
    environ: frozenset[bytes]


def live_processes() -> Iterator[LiveProcess]:
    """Each live, non-zombie process whose environment we may read (our user's)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone, or not ours
            continue
        # The state follows the name, which may itself hold ")": split at the last one.
        if stat.rsplit(b")", 1)[-1].split()[:1] in ([], [b"Z"]):
            continue
        argv = tuple(cmdline.split(b"\0")[:-1]) if cmdline else ()
        yield LiveProcess(int(entry.name), argv, frozenset(environ.split(b"\0")))


def processes_marked(variable: str, mark: str) -> list[tuple[int, str]]:
    """(pid, command line) of each live process whose environment has `variable=mark` (given
    to an upstream with --upstream-env: the allowlist passes no such name); the command line's
    arguments joined by spaces, bytes that are not UTF-8 kept (os.fsdecode)."""
    entry = f"{variable}={mark}".encode()
    return [
        (process.pid, os.fsdecode(b" ".join(process.argv)))
        for process in live_processes()
        if entry in process.environ
    ]


def received(*results: Any) -> str:
    """Everything the client was handed, as one JSON text, to search for leaks."""
    return json.dumps([r.model_dump(mode="json") for r in results], ensure_ascii=False)
