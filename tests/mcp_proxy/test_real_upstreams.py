"""The proxy before MCP servers written by others: the reference filesystem and everything
servers (npm) and `mcp-server-git` (PyPI), with the official client in front, over stdio and
streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from devkit.mcp_upstream import document
from devkit.third_party import git_server_argv, install_everything, install_filesystem
from tests.mcp_proxy._support import (
    handle_of,
    http_proxy,
    read_all,
    received,
    stdio_proxy,
    text_of,
)

COMMITS = 400


@pytest.fixture(scope="session")
def filesystem_server() -> Path:
    """The reference server's executable, installed by npm once (devkit/.node-mcp)."""
    return install_filesystem()


@pytest.fixture(scope="session")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding one large text file, `large.txt` (about 200 KB, several scripts)."""
    root = tmp_path_factory.mktemp("docs")
    (root / "large.txt").write_text(document(200_000, seed=9), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with a long log: `COMMITS` commits written by git fast-import."""
    root = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream = []
    for n in range(COMMITS):
        message = f"Commit {n}: amend clause {n} of the Zürich agreement (契約第{n}条)\n"
        content = f"clause {n}\n"
        stream.append(
            f"commit refs/heads/main\nmark :{n + 1}\n"
            f"author Ada <ada@example.com> {1_700_000_000 + n} +0000\n"
            f"committer Ada <ada@example.com> {1_700_000_000 + n} +0000\n"
            f"data {len(message.encode())}\n{message}"
            f"M 644 inline clauses.txt\ndata {len(content.encode())}\n{content}\n"
        )
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"],
        input="".join(stream).encode(),
        check=True,
    )
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)
    return root


def test_filesystem_over_stdio_a_large_file_is_checked_in_and_read_back_exactly(
    filesystem_server: Path, docs: Path
) -> None:
    path = docs / "large.txt"
    expected = path.read_text(encoding="utf-8")

    async def scenario() -> None:
        direct = StdioServerParameters(command=str(filesystem_server), args=[str(docs)])
        async with Client(direct) as plain:
            straight = await plain.call_tool("read_text_file", {"path": str(path)})
            # What the proxy is for: the whole file, twice (text and structured content).
            assert text_of(straight) == expected
            assert straight.structured_content == {"content": expected}
        upstream = (str(filesystem_server), str(docs))
        async with stdio_proxy("--tenant", "acme", upstream_argv=upstream) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert {"read_text_file", "fetch_result"} <= set(listed)
            assert listed["read_text_file"].output_schema is None
            result = await c.call_tool("read_text_file", {"path": str(path)})
            assert result.structured_content is None and not result.is_error
            shown = text_of(result)
            assert len(shown) < 1_000 and f"[{len(expected)} characters" in shown
            whole, windows = await read_all(c, handle_of(shown))
            assert whole == expected
            assert expected not in received(result, *windows)
            assert expected[len(shown) : len(shown) + 5_000] not in received(result)

    anyio.run(scenario)


def test_filesystem_over_http_through_the_proxy(filesystem_server: Path, docs: Path) -> None:
    path = docs / "large.txt"
    expected = path.read_text(encoding="utf-8")

    async def scenario(url: str) -> None:
        async with Client(url) as client:
            result = await client.call_tool("read_text_file", {"path": str(path)})
            assert result.structured_content is None
            whole, windows = await read_all(client, handle_of(text_of(result)))
            assert whole == expected
            assert expected not in received(result, *windows)
            small = await client.call_tool("list_allowed_directories", {})
            assert str(docs) in text_of(small)  # small results pass through

    upstream = (str(filesystem_server), str(docs))
    with http_proxy("--tenant", "acme", upstream_argv=upstream) as proxy:
        anyio.run(scenario, proxy.url)


def test_mcp_server_git_a_long_log_is_checked_in_and_read_back_exactly(repository: Path) -> None:
    arguments = {"repo_path": str(repository), "max_count": COMMITS}

    async def scenario() -> None:
        argv = git_server_argv(repository)
        direct = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(direct) as plain:
            expected = text_of(await plain.call_tool("git_log", arguments))
        assert expected.count("Commit: ") == COMMITS and len(expected) > 50_000
        async with stdio_proxy("--tenant", "acme", upstream_argv=argv) as client:
            result = await client.call_tool("git_log", arguments)
            shown = text_of(result)
            assert shown.startswith("Commit history:\n") and len(shown) < 1_000
            whole, windows = await read_all(client, handle_of(shown))
            assert whole == expected
            assert expected not in received(result, *windows)
            status = await client.call_tool("git_status", {"repo_path": str(repository)})
            assert "On branch main" in text_of(status)

    anyio.run(scenario)


async def _sampling(
    ctx: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="a sampled answer"), model="test-model"
    )


async def _elicitation(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/docs", name="docs")])


async def _everything_seen(params: StdioServerParameters) -> dict[str, Any]:
    """What a client sees of server-everything: identity, offer, and a few calls' effects."""
    progress: list[float] = []
    logs: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.level)

    async with Client(
        params,  # the default mode: the proxy on stdio, like the server, takes the handshake
        sampling_callback=_sampling,
        elicitation_callback=_elicitation,
        list_roots_callback=_roots,
        logging_callback=on_log,
    ) as client:
        seen: dict[str, Any] = {
            "info": client.server_info,
            "offers": sorted(client.server_capabilities.model_dump(exclude_none=True)),
            "tools": [t.name for t in (await client.list_tools()).tools],
            "prompts": [p.name for p in (await client.list_prompts()).prompts],
            "resources": [r.uri for r in (await client.list_resources()).resources],
        }
        first = seen["resources"][0]
        seen["read"] = (await client.read_resource(first)).model_dump(exclude={"meta"})
        long = {"duration": 1, "steps": 4}
        await client.call_tool(
            "trigger-long-running-operation", long, progress_callback=on_progress
        )
        sampled = await client.call_tool(
            "trigger-sampling-request", {"prompt": "hi", "maxTokens": 9}
        )
        seen["sampled"] = "a sampled answer" in sampled.content[0].text  # type: ignore[union-attr]
        roots = await client.call_tool("get-roots-list", {})
        seen["roots"] = "file:///srv/docs" in roots.content[0].text  # type: ignore[union-attr]
        image = await client.call_tool("get-tiny-image", {})
        seen["image"] = [b.model_dump() for b in image.content]
        await anyio.sleep(0.3)
        seen["progress"], seen["logged"] = progress, bool(logs)
    return seen


def test_server_everything_offers_the_same_through_the_proxy() -> None:
    everything = str(install_everything())

    async def scenario() -> None:
        direct = await _everything_seen(StdioServerParameters(command=everything))
        proxied = await _everything_seen(
            StdioServerParameters(
                command=sys.executable,
                args=["-m", "s3claim", "mcp-proxy", "--tenant", "t", "--", everything],
            )
        )
        assert direct["offers"] == [
            "completions",
            "logging",
            "prompts",
            "resources",
            "tasks",
            "tools",
        ]
        assert proxied["offers"] == [o for o in direct["offers"] if o != "tasks"]  # see the docs
        assert proxied["tools"] == [*direct["tools"], "fetch_result", "search_result"]
        for key in ("info", "prompts", "resources", "read", "image"):
            assert proxied[key] == direct[key], key
        assert direct["progress"] == proxied["progress"] == [1.0, 2.0, 3.0, 4.0]
        assert direct["sampled"] and proxied["sampled"]
        assert direct["roots"] and proxied["roots"]
        assert direct["logged"] and proxied["logged"]

    anyio.run(scenario)
