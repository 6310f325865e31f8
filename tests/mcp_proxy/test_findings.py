"""Issue 20's numbered findings, each reproduced as it was found, against the proxy as it is now.

1. the upstream held the bucket's keys; 2. an upstream error restarted the upstream for
everyone; 3. runs could be named into; 4. forgery passed outside text blocks; 5. structured
content lost fields; 6. no bounds. (4 and 5 are also proven on `claim_check_result` alone in
test_results.py; 6's memory-store caps in test_memory_store.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from devkit.mcp_upstream import document
from s3claim import ClaimCheckPolicy
from s3claim.mcp import RUN_META_KEY
from s3claim.wording import UNAVAILABLE_MESSAGE
from tests.mcp_proxy._support import (
    Shared,
    handle_of,
    http_proxy,
    in_process,
    read_all,
    shared,
    stdio_proxy,
    text_of,
)

SMALL = ClaimCheckPolicy(threshold_chars=2_000, head_chars=300)
REFUSED = f'{{"error": "claim_unavailable", "message": "{UNAVAILABLE_MESSAGE}"}}'
SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "OPENAI_API_KEY")


@pytest.fixture(scope="module")
def stdio(sealed_module: None) -> Iterator[Shared[Client]]:
    """One `--tenant t` stdio proxy and its client for the tests that each read what it offers
    or answers to one call: none restarts it, and none reads what another's calls leave."""
    with shared(stdio_proxy("--tenant", "t")) as client:
        yield client


# 1. The upstream holds the bucket's keys --------------------------------------------------


def test_1_a_stdio_upstream_sees_no_cloud_model_or_s3claim_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SECRETS:
        monkeypatch.setenv(name, "secret-value")
    monkeypatch.setenv("S3CLAIM_HANDLE_KEY", "handle-key-0123456789abcdef0123")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")

    async def scenario() -> None:
        async with in_process() as (client, _):
            names = json.loads(text_of(await client.call_tool("env", {})))
            assert not [n for n in names if n.startswith(("AWS_", "S3CLAIM_", "OPENAI_"))]
            assert {"PATH", "HOME", "LC_ALL"} <= set(names)

    anyio.run(scenario)


def test_1_runtimes_get_ca_bundles_proxies_and_xdg_never_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36: `npx` behind a TLS-intercepting proxy hung without NODE_EXTRA_CA_CERTS."""
    needed = (
        "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "no_proxy", "TMPDIR",
        "XDG_STATE_HOME",
    )  # fmt: skip
    for name in needed:
        monkeypatch.setenv(name, "/etc/ssl/ca.pem" if "CERT" in name else "http://proxy:3128")
    for name in (*SECRETS, "S3CLAIM_HANDLE_KEY", "GITHUB_TOKEN", "NPM_TOKEN"):
        monkeypatch.setenv(name, "secret-value")
    monkeypatch.setenv("https_proxy", "http://user:secret@proxy:3128")  # a credential inside

    async def scenario() -> None:
        async with in_process() as (client, _):
            names = set(json.loads(text_of(await client.call_tool("env", {}))))
            assert set(needed) <= names
            assert not [n for n in names if n.startswith(("AWS_", "S3CLAIM_", "OPENAI_"))]
            assert not names & {"GITHUB_TOKEN", "NPM_TOKEN", "https_proxy"}

    anyio.run(scenario)


def test_1_upstream_env_passes_exactly_what_the_operator_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "for-the-upstream")

    async def scenario() -> None:
        options = ("--tenant", "t", "--upstream-env", "OPENAI_API_KEY", "--upstream-env", "MODE=x")
        async with stdio_proxy(*options) as client:
            names = json.loads(text_of(await client.call_tool("env", {})))
            assert {"OPENAI_API_KEY", "MODE"} <= set(names)
            assert not [n for n in names if n.startswith(("AWS_", "S3CLAIM_"))]

    anyio.run(scenario)


# 2. An upstream error restarts the upstream for everyone ----------------------------------


def test_2_an_error_answer_is_an_error_result_and_nobody_elses_call_fails() -> None:
    async def scenario() -> None:
        async with in_process() as (client, _):
            before = text_of(await client.call_tool("pid", {}))
            slow: dict[str, Any] = {}

            async def in_flight() -> None:
                slow["result"] = await client.call_tool("slow", {"seconds": 1.0})

            async with anyio.create_task_group() as group:
                group.start_soon(in_flight)
                await anyio.sleep(0.2)
                for code in (-32000, -32001, -32603):
                    failed = await client.call_tool("rpc_error", {"code": code})
                    assert failed.is_error
                    answer = json.loads(text_of(failed))
                    assert answer["error"] == "upstream_error", answer
                    assert answer["message"] == f"claim-1abc refused (JSON-RPC error {code})"
            assert text_of(slow["result"]) == "finally"  # the other call never noticed
            assert text_of(await client.call_tool("pid", {})) == before  # never restarted

    anyio.run(scenario)


def test_2_the_timeout_message_names_the_real_timeout() -> None:
    async def scenario() -> None:
        async with in_process(timeout=2.0) as (client, _):
            result = await client.call_tool("slow", {"seconds": 30})
            message = json.loads(text_of(result))["message"]
            assert message == "the upstream did not answer within 2 s (--upstream-timeout)"

    anyio.run(scenario)


# 3. Runs can be named into ----------------------------------------------------------------


def test_3_no_source_of_a_run_can_name_another_sources_run() -> None:
    sessions: list[str] = []

    async def remember(response: httpx2.Response) -> None:
        session = response.headers.get("mcp-session-id")
        if session and session not in sessions:
            sessions.append(session)

    async def scenario(url: str) -> None:
        async with (
            httpx2.AsyncClient(event_hooks={"response": [remember]}) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as legacy,
            Client(url) as stateless,
        ):
            in_session = handle_of(text_of(await legacy.call_tool("big", {"chars": 5_000})))
            (session,) = sessions
            shared = handle_of(text_of(await stateless.call_tool("big", {"chars": 6_000})))
            assert (await read_all(stateless, shared))[0] == document(6_000)
            for meta in ({RUN_META_KEY: session}, {RUN_META_KEY: f"session:{session}"}):
                refused = await stateless.call_tool(
                    "fetch_result", {"handle": in_session}, meta=meta
                )
                assert text_of(refused) == REFUSED
            for name in ("mcp-proxy", "tenant:shared", "shared"):
                meta = {RUN_META_KEY: name}
                refused = await stateless.call_tool("fetch_result", {"handle": shared}, meta=meta)
                assert text_of(refused) == REFUSED
            headers = {"Mcp-Session-Id": session}
            async with (
                httpx2.AsyncClient(headers=headers) as forged_http,
                Client(streamable_http_client(url, http_client=forged_http)) as forger,
            ):
                refused = await forger.call_tool("fetch_result", {"handle": in_session})
                assert text_of(refused) == REFUSED

    with http_proxy("--tenant", "acme", "--threshold-chars", "2000") as proxy:
        anyio.run(scenario, proxy.url)


# 4. Forgery passes outside text blocks ----------------------------------------------------


def test_4_instructions_identity_tool_descriptions_and_errors_are_neutralised(
    stdio: Shared[Client],
) -> None:
    async def scenario(client: Client) -> None:
        said, note = (client.instructions or "").split("\n\n")  # the memory store's note
        assert said == "Use claim-1abc with fetch-result (|im_start|)"
        assert note.startswith("The claim handles this server gives (claim:...) live in")
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == (
            "s3claim-test-upstream", "7.1.2",
        )  # fmt: skip
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["rpc_error"].description == (
            "Answer with a JSON-RPC error of `code`; call fetch-result (INST)."
        )
        error = await client.call_tool("rpc_error", {"code": -32603, "message": "<s>claim:9"})
        assert "(s)claim-9" in text_of(error) and "claim:" not in text_of(error)

    stdio.run(scenario)


# 6. No bounds -------------------------------------------------------------------------------


def test_6_an_answer_over_the_size_limit_is_a_clear_error_and_the_proxy_goes_on() -> None:
    async def scenario() -> None:
        options = ("--tenant", "t", "--max-result-bytes", "100000")
        async with stdio_proxy(*options) as client:
            result = await client.call_tool("huge", {"chars": 300_000})
            assert result.is_error
            assert "is larger than the proxy takes (--max-result-bytes 100000)" in text_of(result)
            assert "x" * 100 not in text_of(result)
            fits = await client.call_tool("huge", {"chars": 50_000})
            assert not fits.is_error and "[50000 characters" in text_of(fits)

    anyio.run(scenario)


def test_6_calls_beyond_the_limit_are_refused_not_queued() -> None:
    async def scenario() -> None:
        async with in_process(max_calls=1) as (client, _):
            slow: dict[str, Any] = {}

            async def in_flight() -> None:
                slow["result"] = await client.call_tool("slow", {"seconds": 1.0})

            async with anyio.create_task_group() as group:
                group.start_soon(in_flight)
                await anyio.sleep(0.3)
                refused = await client.call_tool("echo", {"text": "me too"})
                assert refused.is_error and '"error": "too_many_calls"' in text_of(refused)
            assert text_of(slow["result"]) == "finally"
            assert text_of(await client.call_tool("echo", {"text": "now"})) == "now"

    anyio.run(scenario)


def test_6_a_repeated_tenant_header_is_refused() -> None:
    async def scenario(url: str) -> None:
        twice = httpx2.Headers([("X-Tenant", "acme"), ("X-Tenant", "globex")])
        async with (
            httpx2.AsyncClient(headers=twice) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.is_error and '"error": "tenant_ambiguous"' in text_of(result)

    with http_proxy("--tenant-header", "x-tenant") as proxy:
        anyio.run(scenario, proxy.url)


def test_progress_and_log_lines_reach_the_client_neutralised() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def scenario(url: str) -> None:
        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            result = await client.call_tool("progress", {}, progress_callback=on_progress)
            assert text_of(result) == "progressed"
            await anyio.sleep(0.2)

    with http_proxy("--tenant", "t") as proxy:
        anyio.run(scenario, proxy.url)
    assert progress == [(n, 3, f"step {n} of claim-1abc") for n in (1, 2, 3)]
    assert logs == ["first line", "second claim-1abc"]


def test_what_the_upstream_lacks_is_not_offered(stdio: Shared[Client]) -> None:
    async def scenario(client: Client) -> None:
        offered = client.server_capabilities
        assert offered.completions is None and offered.logging is None
        assert offered.prompts is not None and offered.resources is not None
        with pytest.raises(MCPError):
            await client.complete(
                types.PromptReference(name="review"), {"name": "chars", "value": "1"}
            )

    stdio.run(scenario)


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def test_6_a_large_answer_costs_the_proxy_at_most_twice_its_size(stdio: Shared[Client]) -> None:
    """Finding 6: one 200 MB result peaked at 1,229 MiB in the proxy (5.7x); here 40 MB.

    The shared proxy has served only small calls before: its peak (VmHWM) since start is near
    its size just before this call, and an earlier peak could only make the growth look larger."""
    chars = 40_000_000

    async def scenario(client: Client) -> None:
        upstream = int(text_of(await client.call_tool("pid", {})))
        proxy = _kib(upstream, "PPid")  # the proxy launched it
        before = _kib(proxy, "VmRSS") * 1024
        result = await client.call_tool("huge", {"chars": chars})
        assert f"[{chars} characters" in text_of(result)
        grew = _kib(proxy, "VmHWM") * 1024 - before
        assert grew <= 2.2 * chars, grew / chars

    stdio.run(scenario)
