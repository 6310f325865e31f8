"""Issue 24, item 4: an upstream that fails to start says why, in seconds.

Each case was `cannot start the upstream (ExceptionGroup)` before (or, for a command that is
not an MCP server, the same after the whole 300 s `--upstream-timeout`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from s3claim.cli import app
from tests.mcp_proxy._support import PYTHON, ROOT, proxy_argv

runner = CliRunner()


def _proxy(*argv: str) -> tuple[int, str, float]:
    began = time.monotonic()
    result = runner.invoke(app, ["mcp-proxy", "--tenant", "t", *argv])
    return result.exit_code, result.stderr, time.monotonic() - began


def test_a_command_that_exits_at_once_is_reported_with_its_code_and_last_stderr_lines() -> None:
    script = (
        "import sys\n"
        "print('loading config', file=sys.stderr)\n"
        "print('fatal: no such directory /srv/docs', file=sys.stderr)\n"
        "sys.exit(7)\n"
    )
    code, stderr, _ = _proxy("--", PYTHON, "-c", script)
    assert code == 3, stderr
    assert "the command exited with code 7 before the MCP handshake" in stderr
    assert "its last stderr lines: loading config | fatal: no such directory /srv/docs" in stderr
    assert "ExceptionGroup" not in stderr


def test_a_refused_upstream_url_says_connection_refused_at_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"  # nothing listens once closed
    code, stderr, seconds = _proxy("--upstream-url", url)
    assert code == 3, stderr
    assert f"cannot start the upstream: connection refused at {url}" in stderr
    assert seconds < 30


def test_a_command_that_is_not_an_mcp_server_fails_at_the_startup_timeout() -> None:
    not_mcp = "import time\nprint('hello, I am not MCP')\ntime.sleep(60)\n"
    code, stderr, seconds = _proxy("--startup-timeout", "2", "--", PYTHON, "-c", not_mcp)
    assert code == 3, stderr
    assert "no MCP handshake within 2 s (--startup-timeout)" in stderr
    assert "is it an MCP server on its stdin and stdout?" in stderr
    assert "missing from its environment" in stderr and "--upstream-env NAME" in stderr
    assert seconds < 20  # not the 300 s of --upstream-timeout


def test_a_gateway_upstream_that_is_not_mcp_points_to_the_files_env_keys(
    tmp_path: Path,
) -> None:
    """--config refuses --upstream-env, so the hint names the file's keys for that upstream."""
    config = tmp_path / "gateway.toml"
    not_mcp = "import time; time.sleep(60)"
    config.write_text(f"[upstreams.slow]\ncommand = '{PYTHON}'\nargs = ['-c', '{not_mcp}']\n")
    code, stderr, _ = _proxy("--startup-timeout", "1", "--config", str(config))
    assert code == 3, stderr
    assert "upstream slow: cannot start the upstream: no MCP handshake within 1 s" in stderr
    assert "env or pass_env in [upstreams.slow] of the --config file" in stderr
    assert "--upstream-env" not in stderr


def test_the_startup_timeout_defaults_short_and_is_validated() -> None:
    code, stderr, _ = _proxy("--startup-timeout", "0", "--", PYTHON, "-c", "pass")
    assert code == 2 and "--startup-timeout" in stderr
    code, stderr, _ = _proxy("--ttl-seconds", str(10**30), "--", PYTHON, "-c", "pass")
    assert code == 2 and "--ttl-seconds" in stderr


def test_a_desktop_client_launching_a_proxy_with_a_bucket_and_no_key_gets_one_line() -> None:
    """What a desktop client shows is the server's stderr and exit: one line, no group."""
    env, needle = {"S3CLAIM_BUCKET": "claims"}, "S3CLAIM_HANDLE_KEY is not set"
    argv = [PYTHON, *proxy_argv("--tenant", "t", upstream_argv=(PYTHON, "-c", "pass"))]
    done = subprocess.run(
        argv,
        env={**os.environ, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode in (2, 3), done.stderr
    assert done.stderr.startswith("s3claim: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert needle in done.stderr and "ExceptionGroup" not in done.stderr

    async def client_view() -> None:
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env={**os.environ, **env}, cwd=str(ROOT)
        )
        with pytest.raises((MCPError, OSError, BaseExceptionGroup)):
            async with Client(params):
                pass

    anyio.run(client_view)
