"""Issue 36: the proxy says what store serves, refuses one it cannot use, and on a shared
store a restarted stdio proxy redeems the handles the previous one issued."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from devkit.mcp_upstream import document
from s3claim.mcp import RUN_META_KEY
from s3claim.s3._provision import provision_bucket
from tests._s3 import moto_client
from tests.mcp_proxy._support import PYTHON, ROOT, handle_of, proxy_argv, read_all, text_of

KEY = "one-key-for-every-proxy-0123456789"


def _s3_env(endpoint: str, bucket: str) -> dict[str, str]:
    settings = {"S3CLAIM_BUCKET": bucket, "S3CLAIM_ENDPOINT_URL": endpoint}
    return {**os.environ, **settings, "S3CLAIM_HANDLE_KEY": KEY}


def _start(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], bool]:
    """The proxy with its stdin closed at once; and whether its upstream was ever started."""
    started = tmp_path / f"started-{uuid.uuid4().hex}"
    upstream = (PYTHON, "-c", f"open({str(started)!r}, 'w')")
    done = subprocess.run(
        [PYTHON, *proxy_argv("--tenant", "t", upstream_argv=upstream)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return done, started.exists()


def _refused(done: subprocess.CompletedProcess[str], code: int = 2) -> None:
    assert done.returncode == code, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("s3claim: error: the store cannot write and read a claim: ")


def test_a_dead_store_endpoint_is_one_line_and_exit_3_before_the_upstream_starts(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens once closed
    done, started = _start(_s3_env(dead, "claims"), tmp_path)
    _refused(done, 3)  # the store unavailable: 3, as from every command (docs/operations.md)
    assert "cannot reach S3" in done.stderr and not started


def test_a_bucket_that_does_not_exist_is_one_line_and_exit_2(
    moto_endpoint: str, tmp_path: Path
) -> None:
    done, started = _start(_s3_env(moto_endpoint, f"missing-{uuid.uuid4().hex}"), tmp_path)
    _refused(done)
    assert "NoSuchBucket" in done.stderr or "does not exist" in done.stderr, done.stderr
    assert not started


def test_the_first_line_names_the_store_and_the_run_policy(
    moto_endpoint: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3CLAIM_")}
    done, _ = _start(env, tmp_path)  # the upstream then exits at once: exit 3, said after
    warning, first = done.stderr.splitlines()[:2]  # memory by default: warned of first
    assert warning.startswith("s3claim mcp-proxy: warning: no --store and no S3CLAIM_BUCKET")
    assert first == (
        "s3claim mcp-proxy: store: memory (handles end with this process); "
        "runs: one per tenant, or per conversation the client names (_meta s3claim/run)"
    )
    bucket = f"mcp-{uuid.uuid4().hex}"
    provision_bucket(moto_client(moto_endpoint), bucket, prefix="claims/", day_classes=(1, 7))
    done, _ = _start(_s3_env(moto_endpoint, bucket), tmp_path)
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"s3claim mcp-proxy: store: s3, bucket '{bucket}' (handles outlive")
    assert "'t'" not in first  # no tenant name in clear


def test_with_the_memory_store_the_instructions_say_handles_end_with_the_process() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3CLAIM_")}
    params = StdioServerParameters(
        command=PYTHON, args=proxy_argv("--tenant", "t"), env=env, cwd=str(ROOT)
    )

    async def scenario() -> None:
        async with Client(params) as client:
            assert "they end when the server process does" in (client.instructions or "")

    anyio.run(scenario)


def test_a_restarted_stdio_proxy_redeems_the_handles_the_previous_one_issued(
    moto_endpoint: str,
) -> None:
    bucket = f"mcp-{uuid.uuid4().hex}"
    provision_bucket(moto_client(moto_endpoint), bucket, prefix="claims/", day_classes=(1, 7))
    env = _s3_env(moto_endpoint, bucket)
    expected = document(20_000, seed=5)
    conversation = {RUN_META_KEY: "conversation-1"}

    def proxy(tenant: str) -> Client:
        argv = proxy_argv("--tenant", tenant)
        return Client(StdioServerParameters(command=PYTHON, args=argv, env=env, cwd=str(ROOT)))

    async def scenario() -> None:
        async with proxy("acme") as first:  # one process checks results in, then ends
            assert not first.instructions or "end when" not in first.instructions
            plain = handle_of(text_of(await first.call_tool("big", {"chars": 20_000, "seed": 5})))
            named = await first.call_tool("big", {"chars": 20_000, "seed": 5}, meta=conversation)
            in_conversation = handle_of(text_of(named))
        async with proxy("acme") as second:  # a new process redeems them
            assert (await read_all(second, plain))[0] == expected
            assert (await read_all(second, in_conversation, meta=conversation))[0] == expected
            other = await second.call_tool("fetch_result", {"handle": in_conversation})
            assert other.is_error  # the conversation's handle, outside the conversation
        async with proxy("globex") as stranger:  # the tenant is the boundary
            refused = await stranger.call_tool("fetch_result", {"handle": plain})
            assert refused.is_error and "claim_unavailable" in text_of(refused)

    anyio.run(scenario)
