"""Measure: `s3claim mcp-proxy` before the reference filesystem server (npm).

The official MCP client reads files from `@modelcontextprotocol/server-filesystem`, directly
and through the proxy (a subprocess, as a desktop client would launch it, or serving
streamable HTTP on 127.0.0.1):

- characters delivered to the client for one 1 MiB file: the server sends the text twice
  (a text block, and again as structured content); the proxy sends a head and a marker;
- the proxy's added latency per small call that passes through (a 1 KiB file), median;
- the added latency per check-in of the 1 MiB file, memory store and S3 store (each call in
  a run of its own, `_meta` `s3claim/run`, so each one really writes);
- one 200 MB result (our own test server's `huge` tool) through the proxy on stdio: the
  proxy process's peak resident memory (VmHWM) against its resident memory before, and the
  call's time;
- reading a claim as an MCP resource (`resources/read` of `claim:...?offset=N`) against the
  same window through `fetch_result`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextContent

from benchmarks.context import Bench, empty_bucket
from benchmarks.report import Section, Table
from benchmarks.stats import fmt_bytes, fmt_int, fmt_ms, fmt_ratio, median
from devkit.documents import KiB, MiB, document
from devkit.servers import make_client
from devkit.third_party import FILESYSTEM_VERSION, install_filesystem

__all__ = ["run"]

_KEY = "bench-handle-key-0123456789abcdef"
_TEST_UPSTREAM = str(Path(__file__).resolve().parents[2] / "devkit" / "mcp_upstream.py")
_BIG = 200_000_000


@dataclass(frozen=True)
class _Repeats:
    small: int
    large: int


def _repeats(bench: Bench) -> _Repeats:
    return _Repeats(small=60, large=5) if bench.profile.name == "quick" else _Repeats(300, 15)


def _text(result: CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _timed(client: Client, path: Path, repeats: int, *, new_run: bool) -> list[float]:
    """Seconds per `read_text_file` call, after one untimed call (connections warm)."""
    await client.call_tool("read_text_file", {"path": str(path)})
    times: list[float] = []
    for i in range(repeats):
        meta = {"s3claim/run": f"bench-{uuid.uuid4().hex}-{i}"} if new_run else None
        began = time.perf_counter()
        await client.call_tool("read_text_file", {"path": str(path)}, meta=meta)
        times.append(time.perf_counter() - began)
    return times


@dataclass
class _Figures:
    direct: CallToolResult | None = None
    proxied: CallToolResult | None = None
    small: dict[str, float] | None = None
    large: dict[str, float] | None = None
    big: dict[str, float] | None = None
    reads: dict[str, float] | None = None


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def _parent(pid: int) -> int:
    return _status_kib(pid, "PPid")


async def _measure_big_and_reads(repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """The 200 MB result's peak and time, then resource reads against fetch_result."""
    argv = ["-m", "s3claim", "mcp-proxy", "--tenant", "bench", "--store", "memory",
            "--max-result-bytes", str(512 * MiB), "--memory-max-tenant-bytes", str(512 * MiB),
            "--", sys.executable, _TEST_UPSTREAM]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))
    async with Client(params) as proxy:
        upstream_pid = int(_text(await proxy.call_tool("pid", {})))
        pid = _parent(upstream_pid)  # the proxy launched it
        before = _status_kib(pid, "VmRSS") * 1024
        began = time.perf_counter()
        result = await proxy.call_tool("huge", {"chars": _BIG})
        seconds = time.perf_counter() - began
        peak = _status_kib(pid, "VmHWM") * 1024
        assert f"[{_BIG} characters" in _text(result), _text(result)[-300:]
        small = await proxy.call_tool("huge", {"chars": 200_000})
        handle = re.search(r"handle='(claim:[0-9a-z]+)'", _text(small))
        assert handle is not None
        tool_times, read_times = [], []
        for i in range(repeats):
            offset = (i * 4096) % 196_000
            began = time.perf_counter()
            await proxy.call_tool("fetch_result", {"handle": handle.group(1), "offset": offset})
            tool_times.append(time.perf_counter() - began)
            began = time.perf_counter()
            await proxy.read_resource(f"{handle.group(1)}?offset={offset}")
            read_times.append(time.perf_counter() - began)
    big = {"before": before, "peak": peak, "seconds": seconds}
    return big, {"tool": median(tool_times), "resource": median(read_times)}


def _proxy_argv(filesystem: Path, root: Path, *options: str) -> list[str]:
    return ["-m", "s3claim", "mcp-proxy", "--tenant", "bench", *options, "--",
            str(filesystem), str(root)]  # fmt: skip


@contextmanager
def _http_proxy(argv: list[str], env: dict[str, str]) -> Iterator[str]:
    process = subprocess.Popen(  # noqa: S603  (our own argv, no shell)
        [sys.executable, *argv[:3], "--listen", "127.0.0.1:0", *argv[3:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    timer = threading.Timer(60, process.kill)
    timer.start()
    try:
        for line in process.stderr:
            found = re.search(r"serving streamable HTTP at (http://\S+)", line)
            if found:
                break
        else:
            raise RuntimeError("the HTTP proxy did not start")
        timer.cancel()
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe open
        yield found.group(1)
    finally:
        timer.cancel()
        process.terminate()
        process.wait(timeout=30)


def _measure(bench: Bench, filesystem: Path, root: Path) -> _Figures:
    repeats = _repeats(bench)
    large, small = root / "large.txt", root / "small.txt"
    figures = _Figures()
    env = dict(os.environ)
    direct = StdioServerParameters(command=str(filesystem), args=[str(root)], env=env)
    memory_argv = _proxy_argv(filesystem, root, "--store", "memory")

    def stdio(argv: list[str], environment: dict[str, str]) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=argv, env=environment)

    async def measure_direct_and_stdio() -> None:
        async with Client(direct) as plain, Client(stdio(memory_argv, env)) as proxy:
            figures.direct = await plain.call_tool("read_text_file", {"path": str(large)})
            figures.proxied = await proxy.call_tool("read_text_file", {"path": str(large)})
            figures.small = {
                "direct": median(await _timed(plain, small, repeats.small, new_run=False)),
                "stdio": median(await _timed(proxy, small, repeats.small, new_run=False)),
            }
            figures.large = {
                "direct": median(await _timed(plain, large, repeats.large, new_run=False)),
                "memory": median(await _timed(proxy, large, repeats.large, new_run=True)),
            }

    anyio.run(measure_direct_and_stdio)

    async def measure_http(url: str) -> None:
        async with Client(url) as proxy:
            assert figures.small is not None
            figures.small["http"] = median(await _timed(proxy, small, repeats.small, new_run=False))

    with _http_proxy(memory_argv, env) as url:
        anyio.run(measure_http, url)

    figures.big, figures.reads = anyio.run(_measure_big_and_reads, repeats.small)

    client = make_client(bench.timing)
    bucket = f"bench-mcp-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    key, secret = bench.timing.credentials
    s3_env = {**env, "S3CLAIM_BUCKET": bucket, "S3CLAIM_ENDPOINT_URL": bench.timing.url,
              "S3CLAIM_HANDLE_KEY": _KEY, "AWS_ACCESS_KEY_ID": key,
              "AWS_SECRET_ACCESS_KEY": secret, "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip

    async def measure_s3() -> None:
        argv = _proxy_argv(filesystem, root, "--store", "s3")
        async with Client(stdio(argv, s3_env)) as proxy:
            assert figures.large is not None
            figures.large["s3"] = median(await _timed(proxy, large, repeats.large, new_run=True))

    try:
        anyio.run(measure_s3)
    finally:
        empty_bucket(client, bucket)
    return figures


def _chars(result: CallToolResult) -> tuple[int, int, int]:
    """(characters in text blocks, characters of structured content as JSON, whole result)."""
    structured = result.model_dump_json(include={"structured_content"}, exclude_none=True)
    whole = result.model_dump_json(by_alias=True, exclude_none=True)
    has = result.structured_content is not None
    return len(_text(result)), len(structured) if has else 0, len(whole)


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "−") + fmt_ms(abs(seconds))


def run(bench: Bench) -> Section:
    filesystem = install_filesystem()
    with tempfile.TemporaryDirectory(prefix="s3claim-bench-mcp-") as tmp:
        root = Path(tmp).resolve()
        (root / "large.txt").write_text(document(1 * MiB, "ascii"), encoding="utf-8")
        (root / "small.txt").write_text(document(1 * KiB, "ascii"), encoding="utf-8")
        figures = _measure(bench, filesystem, root)
    assert figures.direct is not None
    assert figures.proxied is not None
    assert figures.small is not None
    assert figures.large is not None
    assert figures.big is not None
    assert figures.reads is not None
    direct, proxied = _chars(figures.direct), _chars(figures.proxied)
    small, large, big, reads = figures.small, figures.large, figures.big, figures.reads
    repeats = _repeats(bench)

    def added(seconds: float, base: float) -> str:
        return f"{fmt_ms(seconds)} ({_signed(seconds - base)})"

    fewer = direct[2] / proxied[2]
    failures = [
        f"a small call through the proxy on {name} costs {_signed(small[name] - small['direct'])}"
        f" (budget +{budget:g} ms)"
        for name, budget in (("stdio", 2.0), ("http", 3.0))
        if small[name] - small["direct"] > budget / 1000
    ]
    grew = big["peak"] - big["before"]
    if grew > 2 * _BIG:
        failures.append(f"the {_BIG // 1_000_000} MB result grew the proxy by {grew / _BIG:.2f}×")
    return Section(
        budget_failures=failures,
        title="The MCP proxy",
        intro=(
            "The official MCP client (Python SDK) reads files from "
            f"`@modelcontextprotocol/server-filesystem` {FILESYSTEM_VERSION} (npm) with "
            "`read_text_file`, directly and through `s3claim mcp-proxy` with the default policy "
            "(threshold 4,096, head 512). The proxy runs as a subprocess on stdio, as a desktop "
            "client launches it, or serves streamable HTTP on 127.0.0.1; the filesystem server "
            "is its stdio upstream. Latencies are medians of "
            f"{repeats.small} small calls and {repeats.large} reads of the 1 MiB file, after "
            "one untimed call; through the proxy each large read uses a run of its own "
            "(`_meta` `s3claim/run`), so every check-in writes."
        ),
        tables=[
            Table(
                title="Characters delivered to the client for one 1 MiB file (1,048,576 "
                "ASCII characters)",
                headers=["", "text blocks", "structured content", "whole result (JSON)"],
                rows=[
                    ["direct", *(fmt_int(v) for v in direct)],
                    ["through the proxy", *(fmt_int(v) for v in proxied)],
                ],
            ),
            Table(
                title=f"One {_BIG // 1_000_000} MB result through the proxy (stdio, memory store; "
                "our own test server's `huge` tool, ASCII)",
                headers=[
                    "RSS before",
                    "peak RSS (VmHWM)",
                    "growth / result",
                    "peak / result",
                    "time",
                ],
                rows=[
                    [
                        fmt_bytes(big["before"]),
                        fmt_bytes(big["peak"]),
                        f"{(big['peak'] - big['before']) / _BIG:.2f}×",
                        f"{big['peak'] / _BIG:.2f}×",
                        f"{big['seconds']:.1f} s",
                    ]
                ],
            ),
            Table(
                title="Reading one 4,096-character window of a claim through the stdio proxy "
                "(median)",
                headers=["fetch_result (tool)", "resources/read claim:...?offset=N"],
                rows=[[fmt_ms(reads["tool"]), fmt_ms(reads["resource"])]],
            ),
            Table(
                title="Latency per call (added by the proxy in parentheses)",
                headers=["call", "direct (stdio)", "proxy on stdio", "proxy on HTTP"],
                rows=[
                    [
                        "small: a 1 KiB file, passed through",
                        fmt_ms(small["direct"]),
                        added(small["stdio"], small["direct"]),
                        added(small["http"], small["direct"]),
                    ],
                    [
                        "large: the 1 MiB file, checked in (memory store)",
                        fmt_ms(large["direct"]),
                        added(large["memory"], large["direct"]),
                        "",
                    ],
                    [
                        f"large: the 1 MiB file, checked in (S3 on {bench.timing.name})",
                        fmt_ms(large["direct"]),
                        added(large["s3"], large["direct"]),
                        "",
                    ],
                ],
            ),
        ],
        notes=[
            "Budgets: a small call passed through costs at most +2 ms on stdio and +3 ms on HTTP "
            "over the direct call (medians); the 200 MB result grows the proxy's memory by at "
            "most twice its size.",
            "Direct, the client receives the file twice (the server repeats it as structured "
            "content, which the client validates against the tool's output schema); through "
            "the proxy it receives the head and the marker and reads on with fetch_result.",
            "A check-in's added time includes the proxy's own read of the 2 MiB result from "
            "the upstream, the boundary (neutralisation), the SHA-256, the put (this ASCII "
            "file at one byte a character: 1 MiB to S3) and the head; it is measured against "
            "a direct read that delivers 2 MiB to the client.",
        ],
        headlines=[
            f"MCP proxy: one 1 MiB file read delivers {fmt_int(proxied[2])} characters to "
            f"the client instead of {fmt_int(direct[2])} ({fmt_ratio(fewer)} fewer); a small "
            f"pass-through call costs {_signed(small['stdio'] - small['direct'])} on stdio and "
            f"{_signed(small['http'] - small['direct'])} on HTTP (median), a 1 MiB check-in "
            f"{_signed(large['memory'] - large['direct'])} (memory store) / "
            f"{_signed(large['s3'] - large['direct'])} (S3) against the direct read; a "
            f"{_BIG // 1_000_000} MB result grows the proxy by "
            f"{(big['peak'] - big['before']) / _BIG:.2f}× its size (peak "
            f"{fmt_bytes(big['peak'])}) in {big['seconds']:.1f} s.",
        ],
    )
