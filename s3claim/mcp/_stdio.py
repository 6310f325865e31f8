"""A stdio client transport whose reading is linear in the size of a message.

Why not the SDK's `stdio_client`: its reader joins its whole buffer with every chunk it reads,
so a message of n bytes costs O(n²), and oversized results are what the proxy exists for. It
also has no bound on a line, and keeps none of the server's stderr. Everything else follows
the SDK's transport: newline-delimited JSON-RPC; the server in its own process group; on
close, stdin closed, then the group terminated, then killed, each after a quarter second (a
client gives the proxy about 2 s to exit before it kills it). The server's stderr is passed
on to the proxy's and its last lines kept (`Launch`), so a server that dies before the
handshake is reported with its exit code and its own words. On Windows the SDK's transport is used.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, jsonrpc_message_adapter

__all__ = ["Launch", "stdio_transport"]

_log = logging.getLogger("s3claim.mcp")
_EXIT_SECONDS = 2.0  # for a server whose stdout ended to exit, to read its exit code
_GRACE_SECONDS = 0.25  # for the server to exit after its stdin closes, and again after SIGTERM
_TAIL_LINES = 5
_TAIL_LINE_CHARS = 300


@dataclass
class Launch:
    """What one start of the server left behind: its exit code and last stderr lines."""

    max_line_bytes: int | None = None
    returncode: int | None = None  # set when it exited on its own, not stopped
    eof: bool = False  # its stdout ended by itself
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=_TAIL_LINES))

    def note(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip()
        if text:
            self.stderr_tail.append(text[:_TAIL_LINE_CHARS])


def stdio_transport(
    params: StdioServerParameters, launch: Launch | None = None
) -> AbstractAsyncContextManager[Any]:
    """The transport for `mcp.Client(...)`: the server's process, spoken to on its stdio."""
    if sys.platform == "win32":  # pragma: no cover - the proxy's tests run on POSIX
        return stdio_client(params)
    return _posix(params, launch or Launch())


@asynccontextmanager
async def _posix(params: StdioServerParameters, launch: Launch) -> AsyncIterator[Any]:
    process = await anyio.open_process(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        start_new_session=True,  # its own group: closing stops its children too
    )
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as group:
        group.start_soon(_read, process, read_send, launch)
        group.start_soon(_write, process, write_receive)
        group.start_soon(_relay_stderr, process, launch)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                if launch.eof:  # it went away by itself: how did it exit?
                    await _exited(process, _EXIT_SECONDS)
                    launch.returncode = process.returncode
                await _stop(process)
                group.cancel_scope.cancel()
                for stream in (read_send, read_receive, write_send, write_receive):
                    await stream.aclose()


async def _relay_stderr(process: Process, launch: Launch) -> None:
    """The server's log lines join the proxy's stderr; the last few are kept for diagnosis."""
    assert process.stderr is not None
    pending = b""
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        async for chunk in process.stderr:
            _pass_on(chunk)
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-4096:]
            for line in lines:
                launch.note(line)
    launch.note(pending)


def _pass_on(chunk: bytes) -> None:
    binary = getattr(sys.stderr, "buffer", None)
    if binary is not None:
        binary.write(chunk)
        binary.flush()
    else:  # a replaced stderr (a test runner's): text only
        sys.stderr.write(chunk.decode("utf-8", "replace"))
        sys.stderr.flush()


async def _read(
    process: Process, send: MemoryObjectSendStream[SessionMessage | Exception], launch: Launch
) -> None:
    assert process.stdout is not None
    line = _Line(launch.max_line_bytes)
    try:
        async with send:
            async for chunk in process.stdout:
                *complete, rest = chunk.split(b"\n")
                for piece in complete:
                    message = line.end(piece)
                    if message is not None:
                        await send.send(message)
                if rest:
                    line.add(rest)
            launch.eof = True
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        launch.eof = True  # the server went away (or we are closing): the session sees it


_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')
_EDGE = 512


class _Line:
    """One line being read, in one growing buffer; past `limit` bytes only its edges are kept.

    One buffer, not chunks joined at the end: freed chunks stay in the process's heap, so the
    join held the line twice for good. An oversized line is answered in the upstream's place
    with a JSON-RPC error for its request id (found at the line's start, as Python servers
    write it, or its end, as the TypeScript SDK does): the call fails at once, clearly.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.size = 0
        self.head = b""
        self.tail = b""

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.limit is None or self.size <= self.limit:
            self.buffer += data
            return
        if self.buffer:  # just went over: keep the edges only
            self.head, self.tail = bytes(self.buffer[:_EDGE]), bytes(self.buffer[-_EDGE:])
            self.buffer = bytearray()
        self.tail = (self.tail + data)[-_EDGE:]

    def end(self, data: bytes) -> SessionMessage | Exception | None:
        self.add(data)
        over = self.limit is not None and self.size > self.limit
        size, head, tail = self.size, self.head, self.tail
        blank = not self.buffer or self.buffer.isspace()  # not strip(): that copies it
        # bytes, for the parser: it copies a bytearray, and would hold three times the line.
        whole = b"" if over or blank else bytes(self.buffer)
        self.buffer, self.size, self.head, self.tail = bytearray(), 0, b"", b""
        if over:
            return _oversized(size, self.limit or 0, head, tail)
        return None if blank else _parse(whole)


def _oversized(size: int, limit: int, head: bytes, tail: bytes) -> SessionMessage | None:
    _log.warning("upstream: an answer of %d bytes is over --max-result-bytes (%d)", size, limit)
    found = _ID.search(head) if head.lstrip().startswith(b'{"jsonrpc":"2.0","id"') else None
    if found is None:
        matches = list(_ID.finditer(tail))
        found = matches[-1] if matches else None
    if found is None:
        return None  # no id to answer: the call waits out its timeout
    message = (
        f"the upstream's answer ({size} bytes) is larger than the proxy takes "
        f"(--max-result-bytes {limit})"
    )
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=message)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=json.loads(found.group(1)), error=error))


def _parse(line: bytes | bytearray) -> SessionMessage | Exception:
    # Parsed to Python first, then validated: validating the JSON text directly held about
    # four times a large message's size at once; this holds the line and the result's text.
    try:
        value = pydantic_core.from_json(line, cache_strings=False)
        return SessionMessage(jsonrpc_message_adapter.validate_python(value, by_name=False))
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
    await _exited(process, _GRACE_SECONDS)
    # Its whole group, also when it exited: children it started (npx's node) may not have.
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
