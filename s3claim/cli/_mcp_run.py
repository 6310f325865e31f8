"""The running part of `s3claim mcp-proxy`: imports the MCP SDK, so it loads on demand.

`_mcp_proxy` parses and checks the options without the SDK; this module connects the
upstream, refuses a tool name clash, and serves until the client leaves or a signal arrives.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import anyio

from s3claim.claimcheck import ClaimCheck
from s3claim.cli._exit import CliError, Exit
from s3claim.mcp import (
    DEFAULT_MAX_CALLS,
    MCP_PATH,
    ClaimCheckProxy,
    HttpUpstream,
    Scoping,
    StdioUpstream,
    Upstream,
    UpstreamError,
    UpstreamTarget,
    listen_socket,
    serve_http,
    serve_stdio,
    upstream_environment,
)

__all__ = ["Plan", "run"]


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything the options decided."""

    command: tuple[str, ...]
    upstream_url: str | None
    listen: tuple[str, int] | None
    tenant: str | None
    tenant_header: str | None
    claim_check: ClaimCheck
    store_name: str
    upstream_timeout: float
    startup_timeout: float = 20.0
    upstream_env: tuple[str, ...] = ()
    max_calls: int = DEFAULT_MAX_CALLS
    max_result_bytes: int | None = None


def _target(plan: Plan) -> UpstreamTarget:
    if plan.upstream_url is not None:
        return HttpUpstream(url=plan.upstream_url, max_event_bytes=plan.max_result_bytes)
    try:
        env = upstream_environment(os.environ, plan.upstream_env)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return StdioUpstream(
        command=plan.command[0],
        args=plan.command[1:],
        env=env,
        max_line_bytes=plan.max_result_bytes,
    )


def _scoping(plan: Plan) -> Scoping:
    try:
        if plan.listen is None:
            return Scoping.for_stdio(plan.tenant)
        return Scoping.for_http(plan.tenant, tenant_header=plan.tenant_header)
    except ValueError as exc:
        raise CliError(str(exc).splitlines()[0]) from None


def run(plan: Plan) -> None:
    """Serve until done; failures the user can fix are `CliError`s."""
    target = _target(plan)
    scoping = _scoping(plan)
    sock = None
    if plan.listen is not None:
        host, port = plan.listen
        try:
            sock = listen_socket(host, port)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise CliError(f"cannot listen on {host}:{port}: {reason}") from None

    async def main() -> None:
        async with Upstream.connect(
            target, timeout=plan.upstream_timeout, startup_timeout=plan.startup_timeout
        ) as upstream:
            proxy = ClaimCheckProxy(
                upstream,
                claim_check=plan.claim_check,
                scoping=scoping,
                max_calls=plan.max_calls,
                single_client=sock is None,
            )
            await proxy.check_names()
            if sock is None:
                await serve_stdio(proxy)
                return
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            print(
                f"s3claim mcp-proxy: serving streamable HTTP at http://{shown}:{port}{MCP_PATH} "
                f"(upstream: {target}; store: {plan.store_name})",
                file=sys.stderr,
                flush=True,
            )
            await serve_http(proxy, sock)

    try:
        anyio.run(main)
    except UpstreamError as exc:
        raise CliError(f"{target}: {exc.message}", Exit.UNAVAILABLE) from None
    finally:
        if sock is not None:
            sock.close()
