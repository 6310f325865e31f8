"""Issue 36, point 5: a stdio client's roots reach the upstream before its first call.

`server-filesystem` started without directories, as IDE clients run it, asks for roots right
after its handshake, which the proxy makes before it has a client: that request waits for
the client's `initialized`, and the client's requests wait (briefly) until it is answered.
The client here calls at once, as the Inspector's CLI does, in the SDK's default mode: on
stdio the proxy offers only the 2025-11-25 handshake, where a server may ask its client for
roots (2026-07-28 takes no requests from a server), and the client falls back to it.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext

from devkit.third_party import install_filesystem
from tests.mcp_proxy._support import processes_marked, stdio_proxy, text_of

MARK = "S3CLAIM_TEST_ROOTS"  # not a name the allowlist passes: given by --upstream-env
TEXT = "the roots arrived in time"
PROMPT = 1.0  # seconds; a request held for roots would wait 2 (s3claim.mcp._relay)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("roots")
    (root / "note.txt").write_text(f"{TEXT}\n", encoding="utf-8")
    return root


async def _read(client: Client, folder: Path) -> types.CallToolResult:
    return await client.call_tool("read_text_file", {"path": str(folder / "note.txt")})


def test_the_first_call_finds_the_clients_roots_also_after_a_restart(folder: Path) -> None:
    mark = uuid.uuid4().hex
    asked = 0

    async def roots(ctx: ClientRequestContext) -> types.ListRootsResult:
        nonlocal asked
        asked += 1
        return types.ListRootsResult(roots=[types.Root(uri=folder.as_uri(), name="work")])

    async def scenario() -> None:
        async with stdio_proxy(
            "--tenant", "t", "--upstream-env", f"{MARK}={mark}",
            upstream_argv=[str(install_filesystem())],  # no directory: the client's roots
            list_roots_callback=roots,
        ) as client:  # fmt: skip
            assert client.protocol_version == "2025-11-25"
            first = await _read(client, folder)  # the client's very first request
            assert not first.is_error, text_of(first)
            assert TEXT in text_of(first) and asked == 1

            ((pid, _),) = processes_marked(MARK, mark)
            os.kill(pid, signal.SIGKILL)  # the proxy starts it again on the next call
            while processes_marked(MARK, mark):
                await anyio.sleep(0.02)
            lost = await _read(client, folder)  # the call that finds it gone
            assert lost.is_error and "upstream_unavailable" in text_of(lost)
            again = await _read(client, folder)  # the restarted server's first call
            assert not again.is_error, text_of(again)
            assert asked == 2
            assert processes_marked(MARK, mark)[0][0] != pid

    anyio.run(scenario)


def test_a_client_without_roots_is_not_held_up(folder: Path) -> None:
    """The upstream's roots request is refused when the client initializes; it keeps the
    directory it was given, and the first call goes at once."""

    async def scenario() -> None:
        async with stdio_proxy(
            "--tenant", "t", upstream_argv=[str(install_filesystem()), str(folder)]
        ) as client:
            began = time.monotonic()
            first = await _read(client, folder)
            took = time.monotonic() - began
        assert not first.is_error and TEXT in text_of(first), text_of(first)
        assert took < PROMPT, f"the first call took {took:.2f} s"

    anyio.run(scenario)
