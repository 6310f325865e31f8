"""The official MCP conformance suite, directly against our fixture server and through the proxy.

`@modelcontextprotocol/conformance` (npm, pinned, on Node 22 from npm) runs every server
scenario (`--suite all`) in one invocation per target: the fixture server over streamable
HTTP; the proxy serving HTTP in front of the fixture as a stdio upstream; and a gateway of two
upstreams (`--config`), the same fixture server over HTTP and another fixture on stdio, each
through its own endpoint (`/mcp/<upstream>`, where the suite's fixed names are unprefixed).
Every scenario that passes directly must pass through the proxy and through the gateway for
each upstream, and the fixture must pass them all directly (else the comparison proves
little). An upstream's endpoint is a proxy of that `Upstream` alone, as the command line's
single upstream is, so the gateway's HTTP upstream covers the proxy's HTTP upstream too. One
fixture server serves both the direct run and the HTTP upstream.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devkit.servers import free_port
from devkit.third_party import install_conformance
from tests.mcp_proxy._support import PYTHON, http_proxy

FIXTURE = str(Path(__file__).with_name("_conformance_upstream.py"))
_SUMMARY = re.compile(r"^([✓✗]) ([a-z0-9-]+): (\d+) passed, (\d+) failed", re.MULTILINE)
_SCENARIOS = 32  # the suite's server scenarios in 0.1.16


@contextmanager
def _fixture_over_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, FIXTURE, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "no fixture server"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=15)
        assert process.stderr is not None
        process.stderr.close()


def _suite(url: str) -> dict[str, bool]:
    """Each server scenario's verdict against `url`: passed (no failed check) or not."""
    node, cli = install_conformance()
    with tempfile.TemporaryDirectory(prefix="s3claim-conformance-") as out:
        done = subprocess.run(
            [str(node), str(cli), "server", "--url", url, "--suite", "all", "-o", out],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    verdicts = {m.group(2): m.group(1) == "✓" for m in _SUMMARY.finditer(done.stdout)}
    assert verdicts, f"no summary from the suite: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    return verdicts


@pytest.fixture(scope="module")
def direct_and_http_upstream() -> Iterator[tuple[str, dict[str, bool]]]:
    with _fixture_over_http() as url:
        yield url, _suite(url)


def test_the_fixture_passes_every_server_scenario_directly(
    direct_and_http_upstream: tuple[str, dict[str, bool]],
) -> None:
    _, direct = direct_and_http_upstream
    assert len(direct) == _SCENARIOS, sorted(direct)
    assert [name for name, ok in direct.items() if not ok] == []


def test_every_scenario_passing_directly_passes_through_the_proxy_on_a_stdio_upstream(
    direct_and_http_upstream: tuple[str, dict[str, bool]],
) -> None:
    _, direct = direct_and_http_upstream
    with http_proxy("--tenant", "conformance", upstream_argv=(PYTHON, FIXTURE)) as proxy:
        through = _suite(proxy.url)
    lost = sorted(name for name, ok in direct.items() if ok and not through.get(name, False))
    assert lost == [], lost


def test_every_scenario_passing_directly_passes_through_a_gateway_of_two_for_each(
    direct_and_http_upstream: tuple[str, dict[str, bool]], tmp_path: Path
) -> None:
    url, direct = direct_and_http_upstream
    config = tmp_path / "gateway.toml"
    # The stdio fixture lists its resources as test-b:// (a URI two upstreams list is refused
    # at start); through its own endpoint the suite reads test:// from it all the same.
    config.write_text(
        f"[upstreams.http]\nurl = {json.dumps(url)}\n"
        f"[upstreams.stdio]\ncommand = {json.dumps(PYTHON)}\n"
        f"args = {json.dumps([FIXTURE, '--listed-as', 'test-b'])}\n"
    )
    lost: dict[str, list[str]] = {}
    with http_proxy("--tenant", "conformance", "--config", str(config), upstream_argv=()) as gw:
        for name in ("http", "stdio"):
            through = _suite(f"{gw.url}/{name}")
            lost[name] = sorted(n for n, ok in direct.items() if ok and not through.get(n, False))
    assert lost == {"http": [], "stdio": []}, lost
