"""Issue 36: one gateway, many servers. `s3claim mcp-proxy --config` in front of the reference
filesystem and everything servers (npm) and a Python server of ours, with the official client:
one HTTP gateway process for the module, its aggregate endpoint (`/mcp`, names prefixed) and
one upstream's own (`/mcp/py`); and one stdio gateway that its client ends."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import (
    METHOD_NOT_FOUND,
    CreateMessageResult,
    ListResourcesRequest,
    ListResourcesResult,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceRequest,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourcesCapability,
    ServerCapabilities,
    TextContent,
    TextResourceContents,
)
from typer.testing import CliRunner

from devkit.mcp_upstream import document
from devkit.third_party import install_everything, install_filesystem
from s3claim.cli import app
from s3claim.errors import ConfigurationError
from s3claim.mcp import MCP_PATH, Gateway
from s3claim.mcp._gateway import _Template
from tests.mcp_proxy._support import (
    PYTHON,
    ROOT,
    UPSTREAM,
    handle_of,
    http_proxy,
    proxy_argv,
    read_all,
    received,
    text_of,
)
from tests.mcp_proxy.test_lifecycle import (  # processes by a variable's value
    EXIT_SECONDS,
    MARK,
    _marked,
)

runner = CliRunner()


def _toml(upstreams: dict[str, dict[str, Any]]) -> str:
    """A gateway file: JSON's strings, lists and inline tables are TOML's too."""
    lines = []
    for name, keys in upstreams.items():
        lines.append(f"[upstreams.{name}]")
        for key, value in keys.items():
            if isinstance(value, dict):
                inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
                lines.append(f"{key} = {{ {inline} }}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    (root / "large.txt").write_text(document(200_000, seed=9), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def mark() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="module")
def gateway(docs: Path, mark: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one HTTP gateway of three upstreams; the Python one alone has the mark."""
    config = tmp_path_factory.mktemp("gateway") / "gateway.toml"
    config.write_text(
        _toml(
            {
                "fs": {"command": str(install_filesystem()), "args": [str(docs)]},
                "everything": {"command": str(install_everything())},
                "py": {
                    "command": PYTHON,
                    "args": [UPSTREAM, "--tool", "fetch-result"],
                    "env": {MARK: mark},
                },
            }
        )
    )
    with http_proxy("--tenant", "acme", "--config", str(config), upstream_argv=()) as proxy:
        assert proxy.url.endswith(MCP_PATH)
        yield proxy.url


def test_the_listing_is_every_upstreams_prefixed_and_the_claim_tools_once(gateway: str) -> None:
    async def scenario() -> None:
        async with Client(gateway) as client:
            assert client.server_info.name == "s3claim-mcp-gateway"
            names = [t.name for t in (await client.list_tools()).tools]
            assert {"fs__read_text_file", "everything__get-env", "py__big"} <= set(names)
            assert names[-2:] == ["fetch_result", "search_result"]
            assert [n for n in names if n.endswith(("fetch_result", "fetch-result"))] == [
                "fetch_result"
            ]  # py's look-alike `fetch-result` is left out
            assert [n.partition("__")[0] for n in names[:-2]] == sorted(
                (n.partition("__")[0] for n in names[:-2]), key=["fs", "everything", "py"].index
            )  # in the file's order
            refused = await client.call_tool("py__fetch-result", {"handle": "claim:1" + "0" * 32})
            assert refused.is_error and "unknown_tool" in text_of(refused)
            unknown = await client.call_tool("git__log", {})
            assert unknown.is_error and "['everything', 'fs', 'py']" in text_of(unknown)
            said = client.instructions or ""
            assert "Instructions of the server 'everything':\n# Everything Server" in said
            assert "Instructions of the server 'py':\nUse claim-1abc with fetch-result" in said
            assert "claim:1abc" not in said
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            assert {"everything__simple-prompt", "py__review"} <= set(prompts)

    anyio.run(scenario)


def test_a_routed_calls_large_result_is_checked_in_and_read_back_exactly(
    gateway: str, docs: Path
) -> None:
    path = docs / "large.txt"
    expected = path.read_text(encoding="utf-8")

    async def scenario() -> None:
        async with Client(gateway) as client:
            result = await client.call_tool("fs__read_text_file", {"path": str(path)})
            shown = text_of(result)
            assert len(shown) < 1_000 and f"[{len(expected)} characters" in shown
            whole, windows = await read_all(client, handle_of(shown))
            assert whole == expected
            assert expected not in received(result, *windows)
            (link,) = [b for b in result.content if isinstance(b, ResourceLink)]
            claim = await client.read_resource(link.uri)  # the proxy's: never routed upstream
            assert claim.contents[0].text.startswith(expected[:1_000])  # type: ignore[union-attr]
            small = await client.call_tool("everything__echo", {"message": "hi"})
            assert text_of(small) == "Echo: hi"

    anyio.run(scenario)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # subscribe
def test_prompts_completions_and_resources_reach_their_owner(gateway: str) -> None:
    async def scenario() -> None:
        async with Client(gateway) as client:
            prompt = await client.get_prompt("py__review", {"chars": "9000"})
            first = prompt.messages[0].content
            assert isinstance(first, TextContent)
            assert (await read_all(client, handle_of(first.text)))[0] == document(9_000, seed=5)
            theirs = await client.get_prompt("everything__args-prompt", {"city": "Zürich"})
            assert "Zürich" in json.dumps(theirs.model_dump(mode="json"), ensure_ascii=False)
            ref = PromptReference(name="everything__completable-prompt")
            completed = await client.complete(ref, {"name": "department", "value": "E"})
            assert completed.completion.values
            # Listed by py: routed there, and checked in like a tool's result.
            big = (await client.read_resource("doc://big/60000")).contents[0]
            assert (await read_all(client, handle_of(big.text)))[0] == document(60_000)  # type: ignore[union-attr]
            listed = {r.uri for r in (await client.list_resources()).resources}
            static = "demo://resource/static/document/features.md"
            assert {"doc://big/60000", static} <= listed
            assert (await client.read_resource(static)).contents[0].text  # type: ignore[union-attr]
            # Listed by nobody, matched by everything's template.
            templated = await client.read_resource("demo://resource/dynamic/text/7")
            assert "7" in templated.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no upstream of the gateway lists"):
                await client.read_resource("file:///report.pdf")
            # Named in py's result (a resource link): py's now, and py answers (it refuses).
            assert not (await client.call_tool("py__mixed", {"chars": 10})).is_error
            with pytest.raises(MCPError, match="invalid literal for int"):
                await client.read_resource("file:///report.pdf")
        async with Client(gateway, mode="legacy") as legacy:  # 2025-11-25: subscriptions
            await legacy.subscribe_resource(static)  # everything's, which subscribes
            await legacy.unsubscribe_resource(static)

    anyio.run(scenario)


def test_each_upstream_is_served_alone_at_its_own_path_unprefixed(gateway: str) -> None:
    async def scenario() -> None:
        async with Client(f"{gateway}/py") as client:
            assert client.server_info.name == "s3claim-test-upstream"
            assert client.instructions is not None and "Instructions of" not in client.instructions
            names = [t.name for t in (await client.list_tools()).tools]
            assert names[0] == "echo" and names[-2:] == ["fetch_result", "search_result"]
            assert "fetch-result" not in names
            result = await client.call_tool("big", {"chars": 30_000})
            handle = handle_of(text_of(result))
        async with Client(gateway) as other:  # one store: the aggregate redeems it
            assert (await read_all(other, handle))[0] == document(30_000)

    anyio.run(scenario)


def test_a_sampling_request_reaches_the_client_that_called_its_upstream(gateway: str) -> None:
    async def sampling(ctx: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="yes"), model="m")

    async def scenario() -> None:
        async with Client(gateway, mode="legacy", sampling_callback=sampling) as client:
            assert text_of(await client.call_tool("py__sample", {})) == "sampled: yes"

    anyio.run(scenario)


def test_the_upstream_env_reaches_its_upstream_only(gateway: str, mark: str) -> None:
    async def scenario() -> None:
        async with Client(gateway) as client:
            assert MARK in json.loads(text_of(await client.call_tool("py__env", {})))
            theirs = text_of(await client.call_tool("everything__get-env", {}))
            assert MARK not in theirs and mark not in theirs
            pid = int(text_of(await client.call_tool("py__pid", {})))
            assert [p for p, _ in _marked(mark)] == [pid]

    anyio.run(scenario)


def test_an_upstream_that_dies_is_restarted_and_the_others_serve_on(gateway: str) -> None:
    async def scenario() -> None:
        async with Client(gateway) as client:
            crashed = await client.call_tool("py__crash", {})
            assert crashed.is_error and "upstream_unavailable" in text_of(crashed)
            assert text_of(await client.call_tool("everything__echo", {"message": "x"})) == (
                "Echo: x"
            )
            assert text_of(await client.call_tool("py__echo", {"text": "back"})) == "back"

    anyio.run(scenario)


def test_a_stdio_gateway_serves_its_client_and_leaves_nothing_running(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    fixture = str(ROOT / "tests" / "mcp_proxy" / "_conformance_upstream.py")
    config = tmp_path / "gateway.toml"
    config.write_text(
        _toml(
            {
                "py": {"command": PYTHON, "args": [UPSTREAM], "env": {MARK: mark}},
                "suite": {"command": PYTHON, "args": [fixture], "env": {MARK: mark}},
            }
        )
    )
    argv = proxy_argv("--tenant", "t", "--config", str(config), upstream_argv=())
    params = StdioServerParameters(command=PYTHON, args=argv, env=dict(os.environ), cwd=str(ROOT))

    async def scenario() -> float:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"py__echo", "suite__test_simple_text", "fetch_result"} <= names
            assert text_of(await client.call_tool("py__echo", {"text": "hi"})) == "hi"
            assert len(_marked(mark)) == 2  # each upstream, once
            began = time.monotonic()
        return time.monotonic() - began  # the client closed stdin and waited for the exit

    # Within the client's grace, as every exit in tests/mcp_proxy/test_lifecycle.py: alone it
    # is about 0.6 s; under `make test`'s load one single exit took 1.01 s.
    assert anyio.run(scenario) < EXIT_SECONDS
    assert _marked(mark) == []  # the gateway ended both before it exited


def test_a_resource_uri_two_upstreams_list_is_refused_at_start(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    twice = {"command": PYTHON, "args": [UPSTREAM]}
    config.write_text(_toml({"one": twice, "two": twice}))
    result = runner.invoke(
        app, ["mcp-proxy", "--tenant", "t", "--store", "memory", "--config", str(config)]
    )  # the store named: the first line is the store's, no fallback warning before it
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[1:] == [
        "s3claim: error: upstreams one and two both list the resource 'doc://big/60000': a "
        "gateway routes each URI to one upstream; give one of them a proxy of its own"
    ]


class _Paged:
    """An in-process upstream of `count` resources, `per` to a page, with its own cursors."""

    timeout = 5.0
    instructions = None
    server_info = None
    downstream = None
    capabilities = ServerCapabilities(resources=ResourcesCapability())

    def __init__(self, name: str, count: int, per: int, *, uri: str | None = None) -> None:
        self.name, self.count, self.per = name, count, per
        self.uri = uri or f"{name}://{{}}"
        self.asked: list[str | None] = []

    async def list_tools(self) -> list[Any]:
        return []

    async def send(self, request: Any, result_type: Any, **_: Any) -> Any:
        if isinstance(request, ListResourcesRequest):
            cursor = request.params.cursor if request.params else None
            self.asked.append(cursor)
            start = int(cursor or 0)
            end = min(start + self.per, self.count)
            listed = [Resource(uri=self.uri.format(i), name=str(i)) for i in range(start, end)]
            return ListResourcesResult(
                resources=listed, next_cursor=str(end) if end < self.count else None
            )
        if isinstance(request, ReadResourceRequest):
            text = TextResourceContents(uri=request.params.uri, text=self.name)
            return ReadResourceResult(contents=[text])
        raise MCPError(METHOD_NOT_FOUND, "not here")  # templates: listed as none


def test_a_listing_follows_every_upstreams_cursors_inside_the_gateways() -> None:
    a, b = _Paged("a", count=5, per=2), _Paged("b", count=3, per=5)

    async def scenario() -> list[list[str]]:
        gateway = Gateway([a, b])  # type: ignore[list-item]
        await gateway.start()
        pages, cursor = [], None
        while True:
            request = ListResourcesRequest(params=PaginatedRequestParams(cursor=cursor))
            page = await gateway.send(request, ListResourcesResult)
            pages.append([r.uri for r in page.resources])
            cursor = page.next_cursor
            if cursor is None:
                break
        read = await gateway.send(
            ReadResourceRequest(params=ReadResourceRequestParams(uri="b://2")),
            ReadResourceResult,
        )
        assert read.contents[0].text == "b"  # type: ignore[union-attr]
        bad = ListResourcesRequest(params=PaginatedRequestParams(cursor="bm90IG91cnM="))
        with pytest.raises(MCPError, match="invalid cursor"):
            await gateway.send(bad, ListResourcesResult)
        return pages

    assert anyio.run(scenario) == [
        ["a://0", "a://1", "b://0", "b://1", "b://2"],
        ["a://2", "a://3"],
        ["a://4"],
    ]
    # Each upstream was asked for each of its pages once at start, then through the gateway.
    assert a.asked == [None, "2", "4", None, "2", "4"] and b.asked == [None, None]


def test_a_uri_two_upstreams_list_is_refused_by_start_naming_both() -> None:
    a = _Paged("a", count=3, per=2, uri="same://{}")
    b = _Paged("b", count=2, per=2, uri="same://{}")
    with pytest.raises(ConfigurationError, match="upstreams a and b both list the resource"):
        anyio.run(Gateway([a, b]).start)  # type: ignore[list-item]


def test_an_upstream_that_cannot_start_ends_the_start_and_the_others(tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    config = tmp_path / "gateway.toml"
    config.write_text(
        _toml(
            {
                "py": {"command": PYTHON, "args": [UPSTREAM], "env": {MARK: mark}},
                "gone": {"command": "/nonexistent/server"},
            }
        )
    )
    result = runner.invoke(
        app, ["mcp-proxy", "--tenant", "t", "--store", "memory", "--config", str(config)]
    )  # the store named: the first line is the store's, no fallback warning before it
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines()[1:] == [
        "s3claim: error: upstream gone: cannot start the upstream: no such command: "
        "'/nonexistent/server'"
    ]
    assert _marked(mark) == []  # py, started first, was stopped


@pytest.mark.parametrize(
    ("template", "uri", "matches"),
    [
        ("test://template/{id}/data", "test://template/7/data", True),
        ("test://template/{id}/data", "test://template/7/x/data", False),  # {id} holds no /
        ("file:///{+path}", "file:///a/b.txt", True),
        ("file:///{path}.txt", "file:///a.txt", True),
        ("file:///{path}.txt", "file:///a/b.txt", False),
        ("repo://{owner}/{name}{?ref}", "repo://a/b?ref=main", True),
        ("x{/segments}", "x/a/b", True),
        ("a{b}{c}d", "ad", True),
        ("a{b}", "b", False),
        # An upstream's template against a client's URI: linear, never a backtracking blow-up.
        ("x" + "{a}x" * 30 + "y", "x" * 3_000, False),
    ],
)
def test_a_template_matches_the_uris_it_expands_to(template: str, uri: str, matches: bool) -> None:
    assert _Template.of(template).matches(uri) is matches
