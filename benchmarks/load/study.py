"""The load study: the sweep, the pool fix before/after, the fleet, the chaos pass.

`python -m benchmarks --only load` (`make bench-load`) saves what it measured to
benchmarks/results/capacity.json, and the sections of docs/capacity.md (`load`, the measured
half, and `costs`, the model's tables priced with the measured bytes) and docs/capacity.png
are built from that file (`derive`, `costs`). With `--quick` it runs N in 16 and 64 on
s3rver only, a fleet of 1 and 2, and no chaos: a smoke test in a minute.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.context import Bench
from benchmarks.load.fleet import Proxy, drive, proc_stats, verify
from benchmarks.load.report import PLOT, bytes_per_operation, costs_section, plot, results_section
from benchmarks.report import Section
from devkit.servers import ChildServer, Endpoint, S3rver, free_port, make_client

__all__ = ["costs", "derive", "run"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "capacity.json"
"""The committed results: what `costs` prices with when a run has none of its own."""
BUCKET = "load"
SWEEP = (16, 64, 256, 1024)
FLEETS = (1, 2, 4)
TOTAL_RUNS = 128
"""At least this many runs per cell: N workers each run max(1, TOTAL_RUNS // N) in turn."""


class MotoThreaded(ChildServer):
    """moto's `ThreadedMotoServer` (what the test suite runs) alone in a child process.

    Not `python -m moto.server`: under 16 concurrent clients its connections stalled until
    the clients' 15 s read timeouts (seen here with moto 5.2.5), which ThreadedMotoServer's
    did not.
    """

    name = "moto (ThreadedMotoServer, child process)"
    credentials = ("testing", "testing")

    def __init__(self) -> None:
        port = free_port()
        code = ("import logging, time; logging.getLogger('werkzeug').setLevel(logging.ERROR); "
                "from moto.server import ThreadedMotoServer as T; "
                f"T(ip_address='127.0.0.1', port={port}, verbose=False).start(); "
                "time.sleep(10**6)")  # fmt: skip
        super().__init__([sys.executable, "-c", code], ready=re.compile(r"$^"), port=port)


SERVERS: dict[str, Callable[[], Endpoint]] = {"s3rver": S3rver, "moto": MotoThreaded}


def _pid(server: Endpoint) -> int:
    return int(server._process.pid)  # type: ignore[attr-defined]


class Relay:
    """benchmarks.load.faults in a child process in front of `target`."""

    def __init__(self, target: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.load.faults", "--target", target],
            stdout=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.url = "http://" + line.rsplit(" ", 1)[1].strip()

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/__stats", timeout=10) as answer:
            return dict(json.loads(answer.read()))

    def faults(self, rate: float, seconds: float) -> None:
        request = urllib.request.Request(
            f"{self.url}/__faults?rate={rate}&seconds={seconds}", method="POST"
        )
        urllib.request.urlopen(request, timeout=10).close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _cell(url: str, credentials: tuple[str, str], workers: int, runs: int, *extra: str,
          during: Callable[[], None] | None = None) -> dict[str, Any]:  # fmt: skip
    argv = [sys.executable, "-m", "benchmarks.load.agent", "--url", url, "--bucket", BUCKET,
            "--credentials", ":".join(credentials), "--workers", str(workers),
            "--runs", str(runs), *extra]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT)  # fmt: skip
    if during is not None:
        during()
    out, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise RuntimeError(f"cell failed: {err[-2000:]}")
    row = dict(json.loads(out))
    row["load_average"] = os.getloadavg()[0]  # the machine is shared: what else ran
    return row


def _with_server(kind: str, body: Callable[[Endpoint], dict[str, Any]]) -> dict[str, Any]:
    """A fresh server (peak memory is this cell's), a bucket, the body, the server's figures."""
    server = SERVERS[kind]()
    try:
        make_client(server).create_bucket(Bucket=BUCKET)
        before = proc_stats(_pid(server))
        result = body(server)
        after = proc_stats(_pid(server))
        result["server_cpu"] = after["cpu"] - before["cpu"]
        result["server_peak_rss_mb"] = after["peak_rss_mb"]
        return result
    finally:
        server.stop()


def sweep(kinds: tuple[str, ...], ns: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    for kind in kinds:
        for n in ns:
            runs = max(1, TOTAL_RUNS // n)
            row = _with_server(kind, lambda s, n=n, runs=runs: _cell(s.url, s.credentials, n, runs))
            row["server"] = kind
            rows.append(row)
            print(f"{kind:7} N={n:5}: {row['runs_per_s']:7.1f} runs/s, "
                  f"{row['requests_per_s']:7.1f} req/s, failed {row['failed']}, "
                  f"client cpu {row['client_cpu'] / row['wall']:.2f}, "
                  f"server cpu {row['server_cpu'] / row['wall']:.2f}", flush=True)  # fmt: skip
    return rows


def pool(n: int) -> list[dict[str, Any]]:
    """botocore's pool (10, a connection more per request past it) against s3claim's (64,
    requests queue past it), at N concurrent runs, s3rver."""
    rows = []
    for size, extra in ((10, ("--no-queue",)), (64, ())):
        runs = max(1, TOTAL_RUNS // n)
        row = _with_server("s3rver", lambda s, size=size, extra=extra, runs=runs: _cell(
            s.url, s.credentials, n, runs, "--pool", str(size), *extra))  # fmt: skip
        row["pool"] = size
        row["queues"] = not extra
        rows.append(row)
        print(f"pool {size:3} N={n}: {row['runs_per_s']:.1f} runs/s, {row['connections']} "
              f"connections for {row['requests']} requests, failed {row['failed']}",
              flush=True)  # fmt: skip
    return rows


def chaos_runs(n: int) -> dict[str, Any]:
    """N runs through the relay; 5% of requests answered SlowDown for 10 s mid-load."""

    def body(server: Endpoint) -> dict[str, Any]:
        relay = Relay(server.url)
        try:

            def during() -> None:
                time.sleep(3.0)  # the cell has started its runs
                relay.faults(0.05, 10.0)

            row = _cell(relay.url, server.credentials, n, 1, during=during)
            row["relay"] = relay.stats()
            return row
        finally:
            relay.stop()

    row = _with_server("s3rver", body)
    print(
        f"chaos runs N={n}: {row['runs']} runs, failed {row['failed']}, lost {row['lost']}, "
        f"refusals {row['refusals']}, injected {row['relay']['injected']}",
        flush=True,
    )
    return row


def fleet(sizes: tuple[int, ...], *, agents: int, runs_each: int,
          chaos: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for size in sizes:

        def body(server: Endpoint, size: int = size) -> dict[str, Any]:
            relay = Relay(server.url)
            key, secret = server.credentials
            env = {**os.environ, "S3CLAIM_BUCKET": BUCKET, "S3CLAIM_ENDPOINT_URL": relay.url,
                   "S3CLAIM_HANDLE_KEY": "capacity-fleet-handle-key-0123456789",
                   "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                   "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
            proxies = [Proxy(env) for _ in range(size)]
            killed: dict[str, Any] = {}

            async def mayhem() -> None:
                await asyncio.sleep(1.0)
                relay.faults(0.05, 10.0)
                await asyncio.sleep(2.0)
                victim = proxies[0]
                killed["peak_rss_mb"] = proc_stats(victim.process.pid)["peak_rss_mb"]
                victim.kill()
                killed["at"] = time.time()
                proxies[0] = await asyncio.to_thread(Proxy, env, victim.port)
                killed["restarted_after_s"] = time.time() - killed["at"]

            try:
                before = relay.stats()["requests"]
                urls = [p.url for p in proxies]
                row = asyncio.run(drive(urls, agents=agents, runs_each=runs_each,
                                        chaos=mayhem if chaos else None))  # fmt: skip
                after = relay.stats()
                minted = row.pop("minted")
                row["verified"] = min(len(minted), 128)
                row["lost"] += asyncio.run(verify([p.url for p in proxies], minted))
                row["s3_requests"] = {k: v - before.get(k, 0) for k, v in after["requests"].items()
                                      if v - before.get(k, 0)}  # fmt: skip
                row["injected"] = after["injected"]
                row["proxies"] = [proc_stats(p.process.pid) for p in proxies]
                row["killed"] = killed
                return row
            finally:
                for p in proxies:
                    p.stop()
                relay.stop()

        row = _with_server("s3rver", body)
        row["size"] = size
        row["load_average"] = os.getloadavg()[0]
        row["chaos"] = chaos
        rows.append(row)
        print(f"fleet {size}{' chaos' if chaos else ''}: {row['runs_per_s']:.1f} runs/s, "
              f"{row['calls_per_s']:.1f} calls/s, failovers {row['failovers']}, "
              f"refusals {row['refusals']}, lost {row['lost']}", flush=True)  # fmt: skip
    return rows


def run(bench: Bench) -> Section:
    began = time.perf_counter()
    results: dict[str, Any] = {
        "machine": (
            f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
        ),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    if bench.profile.name == "quick":
        results["sweep"] = sweep(("s3rver",), (16, 64))
        results["fleet"] = fleet((1, 2), agents=8, runs_each=2)
    else:
        results["sweep"] = sweep(("s3rver", "moto"), SWEEP)
        results["pool"] = pool(256)
        results["chaos_runs"] = chaos_runs(256)
        results["fleet"] = fleet(FLEETS, agents=32, runs_each=4)
        results["fleet_chaos"] = fleet((2,), agents=32, runs_each=6, chaos=True)[0]
    results["seconds"] = time.perf_counter() - began
    bench.results.mkdir(parents=True, exist_ok=True)
    (bench.results / "capacity.json").write_text(
        json.dumps(results, indent=1, sort_keys=True) + "\n"
    )
    section = derive(bench)
    assert section is not None
    return section


def _saved(bench: Bench) -> dict[str, Any] | None:
    path = bench.results / "capacity.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def derive(bench: Bench) -> Section | None:
    """The measured half and its plot, from the saved results (None: there are none)."""
    results = _saved(bench)
    if results is None:
        return None
    bench.out.mkdir(parents=True, exist_ok=True)
    plot(results, bench.out / PLOT)
    return results_section(results)


def costs(bench: Bench) -> Section:
    """The model's tables, priced with the bytes the last load run measured (this run's, or
    the committed one's): nothing is measured here."""
    results = _saved(bench) or json.loads(RESULTS.read_text())
    return costs_section(bytes_per_operation(results["sweep"]))
