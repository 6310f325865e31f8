"""Repeat reads answered from their claim, in the proxy and the gateway, before the reference
filesystem server (npm), whose `read_text_file` is `readOnlyHint: true` and `write_file` is
not. A file changed on disk behind the proxy's back shows whether the upstream was asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from devkit.mcp_upstream import document
from devkit.third_party import install_filesystem
from s3claim import ClaimCheck, ConfigurationError, Event, ManualClock, MemoryClaimCheckStore
from s3claim.events import ResultReused
from s3claim.mcp import (
    RUN_META_KEY,
    ClaimCheckProxy,
    Gateway,
    Scoping,
    StdioUpstream,
    Upstream,
    read_gateway_file,
    read_gateway_reuse,
)
from s3claim.wording import REUSED_LINE, reused_reference
from tests.mcp_proxy._support import handle_of, read_all, text_of

WINDOW = 300


@pytest.fixture(scope="module")
def filesystem_server() -> Path:
    return install_filesystem()


def _run(name: str) -> dict[str, Any]:
    return {RUN_META_KEY: name}


def _texts(result: CallToolResult) -> str:
    return text_of(result)


def naming(first: CallToolResult, tool: str) -> str:
    """A repeat's answer on MCP, whose client's call ids the proxy never sees: the tool as the
    repeat names it, and the handle of what it read."""
    return reused_reference(handle=handle_of(_texts(first)), call_id=None, tool=tool)


def test_the_proxy_answers_a_repeat_read_without_asking_the_upstream(
    filesystem_server: Path, tmp_path: Path
) -> None:
    path = tmp_path / "log.txt"
    path.write_text(document(20_000, seed=1), encoding="utf-8")
    args = {"path": str(path)}
    clock = ManualClock()
    events: list[Event] = []

    async def scenario() -> None:
        target = StdioUpstream(command=str(filesystem_server), args=(str(tmp_path),))
        async with Upstream.connect(target, timeout=20, startup_timeout=60) as up:
            proxy = ClaimCheckProxy(
                up, claim_check=ClaimCheck(MemoryClaimCheckStore(clock=clock)),
                scoping=Scoping.for_stdio("acme"), on_event=events.append,
                reuse={"read_text_file": WINDOW},
            )  # fmt: skip
            await proxy.check_names()
            async with Client(proxy.server()) as client:
                first = await client.call_tool("read_text_file", args, meta=_run("a"))
                path.write_text(document(20_000, seed=2), encoding="utf-8")  # behind its back
                again = await client.call_tool("read_text_file", args, meta=_run("a"))
                # By reference to the first; the upstream was not asked.
                assert _texts(again) == naming(first, "read_text_file") and not again.is_error
                assert len(_texts(again)) < 200 and not _texts(again).startswith("1/0: ")
                assert len(again.content) == 1  # the first answer carries the claim's link
                whole, _ = await read_all(client, handle_of(_texts(first)), meta=_run("a"))
                assert whole == document(20_000, seed=1)
                # Another run asks the upstream, and reads the file as it is now.
                other = await client.call_tool("read_text_file", args, meta=_run("b"))
                assert _texts(other).startswith("2/0: ")
                # A tool not marked read-only ends reuse in its run.
                small = {"path": str(tmp_path / "note.txt"), "content": "noted"}
                assert not (await client.call_tool("write_file", small, meta=_run("a"))).is_error
                after = await client.call_tool("read_text_file", args, meta=_run("a"))
                assert _texts(after).startswith("2/0: ")  # read afresh: the file as it is now
                assert handle_of(_texts(after)) != handle_of(_texts(first))
                # ... and is remembered again, until its window ends.
                repeat = await client.call_tool("read_text_file", args, meta=_run("a"))
                assert _texts(repeat) == naming(after, "read_text_file")
                clock.advance(WINDOW)
                path.write_text(document(20_000, seed=3), encoding="utf-8")
                expired = await client.call_tool("read_text_file", args, meta=_run("a"))
                assert _texts(expired).startswith("3/0: ")  # asked again

    anyio.run(scenario)
    reuses = [e for e in events if isinstance(e, ResultReused)]
    assert [(e.tool, e.agent) for e in reuses] == [("read_text_file", "mcp-proxy")] * 2
    assert all(str(tmp_path) not in e.model_dump_json() for e in events)  # no arguments


def test_the_gateway_reads_reuse_per_upstream_and_refuses_a_tool_that_writes(
    filesystem_server: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = data / "big.txt"
    path.write_text(document(9_000, seed=4), encoding="utf-8")
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[upstreams.fs]\ncommand = "{filesystem_server}"\nargs = ["{data}"]\n'
        "reuse = { read_text_file = 300, list_directory = 0 }\n",
        encoding="utf-8",
    )
    assert read_gateway_reuse(config) == {"fs__read_text_file": 300}
    targets = read_gateway_file(config, {"PATH": "/usr/bin:/bin"})

    async def scenario() -> None:
        async with Gateway.connect(targets, timeout=20, startup_timeout=60) as gateway:
            check = ClaimCheck(MemoryClaimCheckStore())
            scoping = Scoping.for_stdio("acme")
            for wrong, said in [
                ({"fs__write_file": 60}, "'fs__write_file' is not marked read-only"),
                ({"fs__read_everything": 60}, "lists no tool named 'fs__read_everything'"),
            ]:
                refused = ClaimCheckProxy(gateway, claim_check=check, scoping=scoping, reuse=wrong)
                with pytest.raises(ConfigurationError, match=said):
                    await refused.check_names()
            proxy = ClaimCheckProxy(
                gateway, claim_check=check, scoping=scoping, reuse=read_gateway_reuse(config)
            )
            await proxy.check_names()
            async with Client(proxy.server()) as client:
                args = {"path": str(path)}
                first = await client.call_tool("fs__read_text_file", args, meta=_run("a"))
                path.write_text("changed", encoding="utf-8")
                again = await client.call_tool("fs__read_text_file", args, meta=_run("a"))
                assert _texts(again) == naming(first, "fs__read_text_file")
                # The tenant's one run may hold several conversations (a desktop client's
                # chats): a repeat there is the earlier text again, never a reference to it.
                path.write_text(document(20_000, seed=3), encoding="utf-8")
                shared = await client.call_tool("fs__read_text_file", args)
                whole = await client.call_tool("fs__read_text_file", args)
                assert _texts(whole) == f"{REUSED_LINE}\n\n{_texts(shared)}"

    anyio.run(scenario)


def test_a_gateway_files_reuse_must_be_whole_seconds(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[upstreams.fs]\ncommand = "x"\nreuse = { read_text_file = "5m" }\n', encoding="utf-8"
    )
    with pytest.raises(ConfigurationError, match=r"upstreams\.fs\.reuse\.read_text_file"):
        read_gateway_reuse(config)


def test_two_upstreams_read_tools_of_one_name_are_each_answered_by_their_own(
    filesystem_server: Path, tmp_path: Path
) -> None:
    """A gateway's endpoints `/mcp/fs` and `/mcp/docs` both offer `read_text_file`: a read
    through one is never the answer to the same read through the other (issue 46: the docs
    endpoint was answered with fs's earlier result, and docs never received the call)."""
    path = tmp_path / "shared.txt"
    path.write_text(document(20_000, seed=1), encoding="utf-8")
    config = tmp_path / "gateway.toml"
    config.write_text(
        "".join(
            f'[upstreams.{name}]\ncommand = "{filesystem_server}"\nargs = ["{tmp_path}"]\n'
            "reuse = { read_text_file = 300 }\n"
            for name in ("fs", "docs")
        ),
        encoding="utf-8",
    )
    targets = read_gateway_file(config, {"PATH": "/usr/bin:/bin"})
    args = {"path": str(path)}

    async def scenario() -> None:
        async with Gateway.connect(targets, timeout=20, startup_timeout=60) as gateway:
            proxy = ClaimCheckProxy(
                gateway, claim_check=ClaimCheck(MemoryClaimCheckStore()),
                scoping=Scoping.for_stdio("acme"), reuse=read_gateway_reuse(config),
            )  # fmt: skip
            await proxy.check_names()
            fs, docs = (proxy.beside(gateway.upstreams[name]) for name in ("fs", "docs"))
            async with Client(fs.server()) as at_fs, Client(docs.server()) as at_docs:
                for endpoint in (at_fs, at_docs):  # a client lists first: readOnlyHint is read
                    assert (await endpoint.list_tools()).tools
                run = _run("a")  # one conversation's, through both endpoints
                first = await at_fs.call_tool("read_text_file", args, meta=run)
                assert _texts(first).startswith("1/0: ")
                path.write_text(document(20_000, seed=2), encoding="utf-8")
                theirs = await at_docs.call_tool("read_text_file", args, meta=run)
                assert _texts(theirs).startswith("2/0: ")  # docs was asked: the file as it is
                again = await at_fs.call_tool("read_text_file", args, meta=run)
                own = naming(first, "read_text_file")
                assert _texts(again) == own  # fs's own repeat, its own answer
                through = await ClientCall(proxy).call("docs__read_text_file", args, meta=run)
                # docs' own read, named as this endpoint lists it (the gateway's name).
                assert _texts(through) == naming(theirs, "docs__read_text_file") != own

    anyio.run(scenario)


class ClientCall:
    """One call through a proxy's own endpoint (`/mcp`), in a client of its own."""

    def __init__(self, proxy: ClaimCheckProxy) -> None:
        self.proxy = proxy

    async def call(
        self, name: str, arguments: dict[str, Any], *, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        async with Client(self.proxy.server()) as client:
            return await client.call_tool(name, arguments, meta=meta)


def test_a_write_through_another_instance_ends_reuse_on_this_one(
    filesystem_server: Path, tmp_path: Path, moto_endpoint: str
) -> None:
    """Two proxies behind a load balancer share one bucket on moto: a write through B (a
    tool not marked read-only) ends reuse in the run on A, which reads the file afresh."""
    import uuid

    from s3claim import S3ClaimCheckStore
    from tests._s3 import moto_client

    bucket = f"reuse-{uuid.uuid4().hex}"
    client = moto_client(moto_endpoint)
    client.create_bucket(Bucket=bucket)
    key = "the-key-every-instance-shares-0123"
    path = tmp_path / "log.txt"
    path.write_text(document(20_000, seed=1), encoding="utf-8")
    args = {"path": str(path)}
    note = {"path": str(tmp_path / "note.txt"), "content": "noted"}

    def instance(up: Upstream) -> ClaimCheckProxy:
        store = S3ClaimCheckStore(bucket, handle_key=key, client=moto_client(moto_endpoint))
        return ClaimCheckProxy(
            up, claim_check=ClaimCheck(store), scoping=Scoping.for_stdio("acme"),
            reuse={"read_text_file": 300},
        )  # fmt: skip

    async def scenario() -> None:
        target = StdioUpstream(command=str(filesystem_server), args=(str(tmp_path),))
        async with (
            Upstream.connect(target, timeout=20, startup_timeout=60) as up_a,
            Upstream.connect(target, timeout=20, startup_timeout=60) as up_b,
        ):
            a, b = instance(up_a), instance(up_b)
            await a.check_names()
            await b.check_names()
            async with Client(a.server()) as at_a, Client(b.server()) as at_b:
                first = await at_a.call_tool("read_text_file", args, meta=_run("r"))
                again = await at_a.call_tool("read_text_file", args, meta=_run("r"))
                assert _texts(again) == naming(first, "read_text_file")  # reused on A
                seen = await at_b.call_tool("read_text_file", args, meta=_run("r"))
                assert _texts(seen) == _texts(first)  # B remembers only its own reads: it asks
                path.write_text(document(20_000, seed=2), encoding="utf-8")
                assert not (await at_b.call_tool("write_file", note, meta=_run("r"))).is_error
                after = await at_a.call_tool("read_text_file", args, meta=_run("r"))
                assert _texts(after).startswith("2/0: ")  # A read afresh after B's write

    anyio.run(scenario)
