"""A stdio client transport whose reading is linear in the size of a message.

Why not the SDK's `stdio_client`: its reader joins its whole buffer with every 64 KiB chunk
it reads, so one message of n bytes costs O(n²). Measured here, one result of 10 M
characters took 3.9 s and 50 M took about 100 s to arrive, and oversized results are what
the proxy exists for. This one keeps the chunks of a line in a list and joins them once.
Everything else follows the SDK's transport: newline-delimited JSON-RPC; the server in its
own process group; on close, stdin is closed, then the group is terminated, then killed.
On Windows the SDK's transport is used as it is.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

__all__ = ["stdio_transport"]

_log = logging.getLogger("s3claim.mcp")
_GRACE_SECONDS = 2.0  # for the server to exit after its stdin closes, and again after SIGTERM


def stdio_transport(params: StdioServerParameters) -> AbstractAsyncContextManager[Any]:
    """The transport for `mcp.Client(...)`: the server's process, spoken to on its stdio."""
    if sys.platform == "win32":  # pragma: no cover - the proxy's tests run on POSIX
        return stdio_client(params)
    return _posix(params)


@asynccontextmanager
async def _posix(params: StdioServerParameters) -> AsyncIterator[Any]:
    process = await anyio.open_process(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        stderr=None,  # the server's log lines join the proxy's stderr
        start_new_session=True,  # its own group: closing stops its children too
    )
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as group:
        group.start_soon(_read, process, read_send)
        group.start_soon(_write, process, write_receive)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                group.cancel_scope.cancel()
                for stream in (read_send, read_receive, write_send, write_receive):
                    await stream.aclose()


async def _read(process: Process, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    assert process.stdout is not None
    pending: list[bytes] = []
    try:
        async with send:
            async for chunk in process.stdout:
                *complete, rest = chunk.split(b"\n")
                for piece in complete:
                    pending.append(piece)
                    line = b"".join(pending)
                    pending = []
                    if line.strip():
                        await send.send(_parse(line))
                if rest:
                    pending.append(rest)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        pass  # closing, or the server went away: the session sees its stream end


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # the session surfaces it; the line itself is never logged
        _log.warning("upstream: a line of %d bytes is not a JSON-RPC message", len(line))
        return exc


async def _write(process: Process, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    try:
        async with receive:
            async for message in receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(data.encode("utf-8") + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass


async def _stop(process: Process) -> None:
    assert process.stdin is not None
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await process.stdin.aclose()
    if not await _exited(process, _GRACE_SECONDS):
        await terminate_posix_process_tree(process, _GRACE_SECONDS)
        await _exited(process, _GRACE_SECONDS)
    with anyio.move_on_after(_GRACE_SECONDS), suppress(OSError):
        await process.aclose()


async def _exited(process: Process, seconds: float) -> bool:
    # Polled, not `process.wait()`: that also waits for the pipes to close, which a child
    # of the server that inherited them can keep open after the server itself has exited.
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
