"""`python -m s3claim` as a user runs it: a fresh process, configured only by its environment."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
import uuid

import boto3
import pytest

from s3claim.s3._provision import provision_bucket


def s3claim(
    *args: str, env: dict[str, str] | None = None, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "s3claim", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_the_demo_on_its_embedded_s3_finishes_in_seconds() -> None:
    started = time.perf_counter()
    result = s3claim("demo")
    elapsed = time.perf_counter() - started

    assert result.returncode == 0, result.stderr
    assert elapsed < 30  # a hang, not a timing: timings live in `make bench`
    assert result.stderr == b""  # no server logs in the report
    out = result.stdout.decode()
    assert "embedded S3 (moto) at http://127.0.0.1:" in out
    assert "MASTER SERVICES AGREEMENT\n\nThis Master Services Agreement" in out
    assert "characters, " in out and "not shown. Call fetch_result with handle='claim:" in out
    assert "×" in out


@pytest.mark.slow
def test_the_demo_json_from_a_fresh_process() -> None:
    result = s3claim("demo", "--store", "memory", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    sent = [e["prefill_chars"] for e in data["events"] if e["kind"] == "model_called"]
    baseline = [e["prefill_chars"] for e in data["baseline_events"] if e["kind"] == "model_called"]
    assert data["ratio"] == pytest.approx(sum(baseline) / sum(sent)) and data["ratio"] > 1


def test_the_bucket_commands_end_to_end(moto_endpoint: str) -> None:
    bucket = f"sub-{uuid.uuid4().hex}"
    provision_bucket(
        boto3.client("s3", endpoint_url=moto_endpoint),
        bucket,
        prefix="claims/",
        day_classes=(1, 7, 30),
    )
    key = s3claim("keygen").stdout.decode().strip()
    env = {
        "S3CLAIM_BUCKET": bucket,
        "S3CLAIM_ENDPOINT_URL": moto_endpoint,
        "S3CLAIM_HANDLE_KEY": key,
    }
    content = "Łukasz — clause 9.\r\n".encode() * 500

    put = s3claim("put", "--tenant", "acme", "--run", "r1", "-", env=env, stdin=content)
    assert put.returncode == 0, put.stderr
    handle = put.stdout.decode().strip()

    fetched = s3claim("fetch", "--tenant", "acme", "--run", "r1", handle, "--all", env=env)
    assert fetched.returncode == 0 and fetched.stdout == content

    line = s3claim("fetch", "--tenant", "acme", "--run", "r1", handle, "--line", "2", env=env)
    one = "Łukasz — clause 9.\r\n"  # 20 characters: 204 whole lines in a 4,096 window
    assert line.returncode == 0 and line.stdout == (one * 204).encode()
    assert line.stderr == b"lines 2-205 of 500, characters 20-4100 of 10000 (next --line 206)\n"
    found = s3claim("search", "--tenant", "acme", "--run", "r1", handle, "9.", env=env)
    assert found.stdout.splitlines()[0] == "1:16:Łukasz — clause 9.\\r".encode()

    listed = s3claim("ls", "--tenant", "acme", "--json", env=env)
    assert json.loads(listed.stdout)["handle"] == handle

    # On a terminal the progress line starts a line of its own after content with no newline.
    short = s3claim("put", "--tenant", "acme", "--run", "r2", "-", env=env, stdin=b"last words")
    primary, secondary = pty.openpty()
    with os.fdopen(primary, "rb", buffering=0) as screen:
        subprocess.run(
            [sys.executable, "-m", "s3claim", "fetch", "--tenant", "acme", "--run", "r2",
             short.stdout.decode().strip()],
            stdout=secondary, stderr=secondary, env={**os.environ, **env}, timeout=60, check=True,
        )  # fmt: skip
        os.close(secondary)
        shown = screen.read(4096)
    assert shown == b"last words\r\ncharacters 0-10 of 10 (end)\r\n"

    doctor = s3claim("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout

    forgot = s3claim("forget", "--tenant", "acme", "--yes", env=env)
    assert forgot.returncode == 0 and b"Removed 2 claim(s)" in forgot.stdout

    gone = s3claim("fetch", "--tenant", "acme", "--run", "r1", handle, env=env)
    assert gone.returncode == 1
    assert gone.stderr.decode().startswith("s3claim: error: claim unavailable")


def test_configuration_errors_are_one_line_without_a_traceback(moto_endpoint: str) -> None:
    no_bucket = s3claim("ls", "--tenant", "acme")
    assert no_bucket.returncode == 2
    assert no_bucket.stderr.decode().count("\n") == 1
    assert b"S3CLAIM_BUCKET" in no_bucket.stderr

    env = {"S3CLAIM_BUCKET": "no-such-bucket-here", "S3CLAIM_ENDPOINT_URL": moto_endpoint}
    no_key = s3claim("put", "--tenant", "a", "--run", "r", env=env, stdin=b"x")
    assert no_key.returncode == 2 and b"S3CLAIM_HANDLE_KEY" in no_key.stderr

    env["S3CLAIM_HANDLE_KEY"] = "k" * 32
    missing = s3claim("put", "--tenant", "a", "--run", "r", env=env, stdin=b"x")
    assert missing.returncode == 2
    assert missing.stderr == (
        b"s3claim: error: bucket 'no-such-bucket-here' does not exist (or is in another "
        b"account): check --bucket\n"
    )
    for result in (no_bucket, no_key, missing):
        assert b"Traceback" not in result.stderr


def test_usage_errors_exit_2() -> None:
    result = s3claim("fetch", "--tenant", "a")
    assert result.returncode == 2
    assert s3claim().returncode == 2  # no command: help, as a usage error


def test_serve_on_loopback_says_nothing_of_plain_http(moto_endpoint: str) -> None:
    """The warning (`warn_unless_loopback`, below) is off loopback only: on 127.0.0.1 the
    serving line is the first."""
    bucket = f"serve-{uuid.uuid4().hex}"
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=bucket)
    env = {"S3CLAIM_BUCKET": bucket, "S3CLAIM_ENDPOINT_URL": moto_endpoint}
    with subprocess.Popen(
        [sys.executable, "-m", "s3claim", "serve", "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env, "S3CLAIM_HANDLE_KEY": "k" * 32},
    ) as process:
        try:
            assert process.stderr is not None
            first = process.stderr.readline()
        finally:
            process.terminate()
    assert first.startswith("s3claim serve: serving links at http://127.0.0.1:"), first


@pytest.mark.parametrize(
    ("host", "warned"),
    [("0.0.0.0", True), ("[::]", True), ("10.1.2.3", True), ("127.0.0.1", False),
     ("[::1]", False), ("localhost", False)],
)  # fmt: skip
def test_a_server_off_loopback_warns_of_plain_http_in_one_line(
    host: str, warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Plain HTTP off loopback carries tool results and links, bearer credentials, in clear
    (issue 48, item 6): `serve` and `mcp-proxy` say so in one line before they serve. (No
    test binds a non-loopback address: the line is told by the address alone.)"""
    from s3claim.cli._config import warn_unless_loopback

    warn_unless_loopback("serve", host, 8000, "a link is a bearer credential")
    warn_unless_loopback(
        "mcp-proxy", host, 8000, "tool results, and links (each a bearer credential)"
    )
    said = capsys.readouterr().err.splitlines()
    assert said == ([
        f"s3claim serve: warning: plain HTTP on {host}, not a loopback address: a link is a "
        "bearer credential, readable by anyone on the path; put HTTPS in front (a TLS proxy) "
        "or listen on 127.0.0.1",
        f"s3claim mcp-proxy: warning: plain HTTP on {host}, not a loopback address: tool "
        "results, and links (each a bearer credential), readable by anyone on the path; put "
        "HTTPS in front (a TLS proxy) or listen on 127.0.0.1",
    ] if warned else [])  # fmt: skip
