"""`s3claim mcp-proxy`: the MCP proxy (`s3claim.mcp`) composed from the command line.

The MCP SDK is an extra, so `s3claim.mcp` is imported only when this command runs. Everything
the proxy says goes to stderr: on stdio, stdout is the protocol.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from s3claim.claimcheck import DEFAULT_MAX_REFERENCE_CHARS, ClaimCheck
from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    HeaderTimeoutOption,
    PrefixOption,
    RegionOption,
    StoreKind,
)
from s3claim.cli._exit import CliError, Exit, handled
from s3claim.errors import ClaimStoreError
from s3claim.events import ClaimEvicted, observe
from s3claim.extras import require_extra
from s3claim.links import check_base_url
from s3claim.memory import MemoryClaimCheckStore
from s3claim.policy import ClaimCheckPolicy
from s3claim.s3 import S3ClaimCheckStore
from s3claim.s3.admin import explain, open_store
from s3claim.store import ClaimCheckStore

if TYPE_CHECKING:
    from s3claim.mcp import UpstreamTarget

__all__ = ["CONTEXT_SETTINGS", "address_of", "mcp_proxy"]

# Everything after the upstream command's name is the upstream's: `s3claim mcp-proxy --tenant
# acme npx pkg --flag` passes `--flag` on, with or without `--`.
CONTEXT_SETTINGS = {"allow_interspersed_args": False}
_DEFAULTS = ClaimCheckPolicy()
_PANEL = "Claim check policy"
MAX_TTL_SECONDS = 400 * 24 * 3600
DEFAULT_MAX_RESULT_BYTES = 256 * 1024**2
_MEMORY_MAX_BYTES = 1024**3
_MEMORY_MAX_TENANT_BYTES = 256 * 1024**2
_MEMORY_NOTE = (
    "The claim handles this server gives (claim:...) live in its memory: they end when the "
    "server process does, and a restarted server cannot read them."
)
_RUNS_STDIO = "one per tenant, or per conversation the client names (_meta s3claim/run)"
_RUNS_HTTP = (
    "one per session (2025-11-25 clients), else per tenant, or per conversation the client "
    "names (_meta s3claim/run)"
)


def mcp_proxy(
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The upstream MCP server to launch on stdio, with its arguments (after --).",
            show_default=False,
            metavar="-- COMMAND [ARGS]...",
        ),
    ] = None,
    upstream_url: Annotated[
        str | None,
        typer.Option(help="Reach the upstream over streamable HTTP at this URL instead."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Front several upstreams, named in this TOML file ([upstreams.NAME] with "
            "command, args, env, pass_env, cwd; or url), as one server: their tools and "
            "prompts named NAME__tool. Excludes a command and --upstream-url.",
            show_default=False,
        ),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            help="Serve streamable HTTP on HOST:PORT (path /mcp) instead of stdio; port 0 "
            "picks a free one.",
            show_default=False,
        ),
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(envvar="S3CLAIM_TENANT", help="Tenant every claim belongs to."),
    ] = None,
    tenant_header: Annotated[
        str | None,
        typer.Option(
            help="HTTP only: take the tenant from this request header (set by your gateway); "
            "requests without it are refused. Excludes --tenant.",
        ),
    ] = None,
    store: Annotated[
        StoreKind | None,
        typer.Option(
            help="Where claims live. Default: s3 when a bucket is configured "
            "(S3CLAIM_BUCKET or --bucket), else memory.",
            show_default=False,
        ),
    ] = None,
    threshold_chars: Annotated[
        int,
        typer.Option(help="Results this long or longer are checked in.", rich_help_panel=_PANEL),
    ] = _DEFAULTS.threshold_chars,
    head_chars: Annotated[
        int,
        typer.Option(help="The most of a result that stays inline.", rich_help_panel=_PANEL),
    ] = _DEFAULTS.head_chars,
    tail_chars: Annotated[
        int,
        typer.Option(
            help="The most of a result's end that stays inline too, after the marker.",
            rich_help_panel=_PANEL,
            min=0,
        ),
    ] = _DEFAULTS.tail_chars,
    pick_lines: Annotated[
        str | None,
        typer.Option(
            help="A regular expression (as search_result takes one): up to --pick-max lines "
            "it matches outside the head and tail stay inline, with their line numbers.",
            rich_help_panel=_PANEL,
            show_default=False,
        ),
    ] = None,
    pick_max: Annotated[
        int,
        typer.Option(
            help="The most lines --pick-lines shows: the first and the last half.",
            rich_help_panel=_PANEL,
            min=1,
        ),
    ] = _DEFAULTS.pick_max,
    json_root: Annotated[
        bool,
        typer.Option(
            help="A result that is JSON gets its root's members listed inline (key, type "
            "and span), as fetch_result with path='' lists them.",
            rich_help_panel=_PANEL,
        ),
    ] = False,
    turn_budget_chars: Annotated[
        int | None,
        typer.Option(
            help="A turn's budget: MCP has no batches, so each call is a turn of its own, and "
            "a result longer than this is checked in (when that shrinks it) below the threshold.",
            rich_help_panel=_PANEL,
            min=1,
            show_default=False,
        ),
    ] = None,
    ttl_seconds: Annotated[
        int,
        typer.Option(
            help="How long a claim can be fetched (at most 400 days).",
            rich_help_panel=_PANEL,
            min=1,
            max=MAX_TTL_SECONDS,
        ),
    ] = _DEFAULTS.ttl_seconds,
    upstream_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds an upstream call (or a restart) may take.", min=0.001, max=86_400
        ),
    ] = 300.0,
    startup_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds the upstream may take to start and complete the MCP handshake.",
            min=0.001,
            max=3_600,
        ),
    ] = 20.0,
    upstream_env: Annotated[
        list[str] | None,
        typer.Option(
            "--upstream-env",
            help="Pass NAME from the proxy's environment to a stdio upstream, or set "
            "NAME=VALUE (repeatable). Nothing else passes beyond PATH, HOME, locale, CA "
            "bundles and proxies.",
            show_default=False,
        ),
    ] = None,
    reuse: Annotated[
        list[str] | None,
        typer.Option(
            "--reuse",
            metavar="TOOL=SECONDS",
            help="Answer a repeat call of TOOL (same arguments, same run) from its claim for "
            "SECONDS after a checked-in result, without calling the upstream (repeatable). "
            "The upstream must mark TOOL readOnlyHint; in a --config file, give each "
            "upstream a reuse table.",
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ] = None,
    max_calls: Annotated[
        int,
        typer.Option(
            help="Requests served at once: tool calls (the claim tools too), resource reads "
            "and prompts/get; more are refused. Listings and the rest do not count.",
            min=1,
            max=10_000,
        ),
    ] = 64,
    max_tenant_calls: Annotated[
        int | None,
        typer.Option(
            help="One tenant's requests at once, counted as --max-calls counts them; more "
            "are refused. Default: a quarter of --max-calls with --tenant-header, all of "
            "them otherwise.",
            min=1,
            max=10_000,
            show_default=False,
        ),
    ] = None,
    max_result_bytes: Annotated[
        int,
        typer.Option(
            help="The largest upstream answer taken (bytes); a larger one is an error result.",
            min=1024,
            max=8 * 1024**3,
        ),
    ] = DEFAULT_MAX_RESULT_BYTES,
    memory_max_bytes: Annotated[
        int | None,
        typer.Option(
            help="--store memory: bytes of claims held in all; the oldest go first.",
            min=1,
            show_default="1 GiB",
        ),
    ] = None,
    memory_max_tenant_bytes: Annotated[
        int | None,
        typer.Option(
            help="--store memory: bytes of claims held per tenant; its oldest go first.",
            min=1,
            show_default="256 MiB",
        ),
    ] = None,
    references: Annotated[
        bool,
        typer.Option(
            help='Resolve claim references ({"$claim": handle}) in tool arguments before a '
            "call is forwarded, and say so in each tool's description.",
            rich_help_panel=_PANEL,
        ),
    ] = False,
    max_reference_chars: Annotated[
        int,
        typer.Option(
            help="The most characters one call's references may resolve to.",
            min=1,
            rich_help_panel=_PANEL,
        ),
    ] = DEFAULT_MAX_REFERENCE_CHARS,
    link_base_url: Annotated[
        str | None,
        typer.Option(
            help='Where links to claims are served, for {"$claim": handle, "as": "link"} '
            "references: https://, or http:// on a loopback host. Default with --listen on "
            "loopback: this server, which serves them at /claims/.",
            show_default=False,
            rich_help_panel=_PANEL,
        ),
    ] = None,
    header_timeout: HeaderTimeoutOption = 10.0,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every check-in and fetch (no content).")
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
) -> None:
    """Proxy an MCP server, checking its oversized results in; serves fetch_result beside it.

    `s3claim mcp-proxy --tenant acme -- npx @modelcontextprotocol/server-filesystem /srv/docs`
    serves a client on stdio; with `--listen 127.0.0.1:9000` it serves streamable HTTP. The
    handle key comes from S3CLAIM_HANDLE_KEY only (the memory store makes its own).
    """
    _configure_logging(verbose)
    with handled() as context:
        require_extra("mcp")  # before s3claim.mcp imports anyio and the SDK
        import anyio

        from s3claim import mcp

        argv = command or []
        if config is not None and (argv or upstream_url is not None):
            raise CliError(
                "--config names the upstreams: give no command after -- and no --upstream-url"
            )
        if argv and upstream_url is not None:
            raise CliError("give the upstream once: a command after --, or --upstream-url")
        if not argv and upstream_url is None and config is None:
            raise CliError("no upstream: give its command after --, --upstream-url or --config")
        if upstream_env and config is not None:
            raise CliError(
                "--upstream-env is for the command line's upstream; in a --config file, "
                "give each upstream its env and pass_env"
            )
        if reuse and config is not None:
            raise CliError(
                "--reuse is for the command line's upstream; in a --config file, give each "
                "upstream a reuse table (reuse = { read_text_file = 300 })"
            )
        reuse_seconds = _reuse(reuse or ())
        if upstream_env and upstream_url is not None:
            raise CliError("--upstream-env is for a stdio upstream (a command after --)")
        if upstream_url is not None and not upstream_url.startswith(("http://", "https://")):
            raise CliError(
                f"--upstream-url must be an http:// or https:// URL, got {upstream_url!r}"
            )
        if max_tenant_calls is not None and max_tenant_calls > max_calls:
            raise CliError(
                f"--max-tenant-calls ({max_tenant_calls}) cannot be more than --max-calls "
                f"({max_calls})"
            )
        address = address_of(listen) if listen is not None else None
        if tenant_header is not None and address is None:
            raise CliError("--tenant-header needs --listen: on stdio there are no headers")
        if tenant_header is not None and not _HEADER_NAME.fullmatch(tenant_header):
            raise CliError(
                "--tenant-header must be an HTTP header name: letters, digits and "
                "!#$%&'*+-.^_`|~, no spaces (e.g. X-Tenant)"
            )
        policy = ClaimCheckPolicy(
            threshold_chars=threshold_chars,
            head_chars=head_chars,
            tail_chars=tail_chars,
            pick_lines=pick_lines,
            pick_max=pick_max,
            json_root=json_root,
            ttl_seconds=ttl_seconds,
            turn_budget_chars=turn_budget_chars,
        )
        configured = bucket is not None or bool(os.environ.get("S3CLAIM_BUCKET"))
        kind = store or (StoreKind.s3 if configured else StoreKind.memory)
        memory_bounds = (memory_max_bytes, memory_max_tenant_bytes)
        if kind is StoreKind.s3 and memory_bounds != (None, None):
            raise CliError(
                "--memory-max-bytes and --memory-max-tenant-bytes bound --store memory; "
                "this proxy uses the s3 store, where claims last until their TTL"
            )
        if kind is StoreKind.memory:
            claims: ClaimCheckStore = MemoryClaimCheckStore(
                max_bytes=memory_max_bytes or _MEMORY_MAX_BYTES,
                max_tenant_bytes=memory_max_tenant_bytes or _MEMORY_MAX_TENANT_BYTES,
                on_evict=_log_eviction,
            )
        else:
            claims = open_store(context.target(bucket, endpoint_url, prefix, region))
            _probe(claims, context.bucket)
        target: UpstreamTarget | None = None
        targets: dict[str, UpstreamTarget] | None = None
        if config is not None:
            targets = mcp.read_gateway_file(config, os.environ, max_result_bytes=max_result_bytes)
            reuse_seconds = mcp.read_gateway_reuse(config)
        elif upstream_url is not None:
            target = mcp.HttpUpstream(url=upstream_url, max_event_bytes=max_result_bytes)
        else:
            try:
                env = mcp.upstream_environment(os.environ, tuple(upstream_env or ()))
            except ValueError as exc:
                raise CliError(str(exc)) from None
            target = mcp.StdioUpstream(
                command=argv[0], args=tuple(argv[1:]), env=env, max_line_bytes=max_result_bytes
            )
        try:
            if address is None:
                scoping = mcp.Scoping.for_stdio(tenant)
            else:
                scoping = mcp.Scoping.for_http(tenant, tenant_header=tenant_header)
        except ValueError as exc:
            raise CliError(str(exc).splitlines()[0]) from None
        print(
            f"s3claim mcp-proxy: store: {_store_line(kind, context.bucket)}; "
            f"runs: {_RUNS_STDIO if address is None else _RUNS_HTTP}",
            file=sys.stderr,
            flush=True,
        )
        sock = None
        if address is not None:
            host, port = address
            try:
                sock = mcp.listen_socket(host, port)
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                raise CliError(f"cannot listen on {host}:{port}: {reason}") from None
        claim_check = ClaimCheck(
            claims,
            policy=policy,
            references=references,
            max_reference_chars=max_reference_chars,
            link_base_url=link_base_url or _served_here(sock),
        )

        async def run(upstream: mcp.Upstream | mcp.Gateway, what: str) -> None:
            proxy = mcp.ClaimCheckProxy(
                upstream,
                claim_check=claim_check,
                scoping=scoping,
                max_calls=max_calls,
                max_tenant_calls=max_tenant_calls,
                single_client=sock is None,
                note=_MEMORY_NOTE if kind is StoreKind.memory else None,
                reuse=reuse_seconds,
            )
            await proxy.check_names()
            if sock is None:
                await mcp.serve_stdio(proxy)
                return
            # Over HTTP a gateway also serves each upstream alone, unprefixed, at
            # /mcp/<name>: the same store, bounds and relay, in the same process.
            alone = upstream.upstreams if isinstance(upstream, mcp.Gateway) else {}
            each = {name: proxy.beside(one) for name, one in alone.items()}
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            links = claim_check.link_base_url
            print(
                f"s3claim mcp-proxy: serving streamable HTTP at "
                f"http://{shown}:{port}{mcp.MCP_PATH} ({what}; store: {kind}; links: "
                f"{f'{links}/claims/' if links else 'off'})",
                file=sys.stderr,
                flush=True,
            )
            await mcp.serve_http(proxy, sock, each=each, header_timeout=header_timeout)

        async def serve() -> None:
            if targets is not None:
                async with mcp.Gateway.connect(
                    targets, timeout=upstream_timeout, startup_timeout=startup_timeout
                ) as gateway:
                    names = ", ".join(targets)
                    await run(gateway, f"gateway of {names}, each alone at {mcp.MCP_PATH}/NAME")
                return
            assert target is not None
            async with mcp.Upstream.connect(
                target, timeout=upstream_timeout, startup_timeout=startup_timeout
            ) as upstream:
                await run(upstream, f"upstream: {target}")

        try:
            anyio.run(serve)
        except mcp.UpstreamError as exc:
            said = exc.message if target is None else f"{target}: {exc.message}"
            raise CliError(said, Exit.UNAVAILABLE) from None
        finally:
            if sock is not None:
                sock.close()


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token


def _reuse(entries: Sequence[str]) -> dict[str, int]:
    """`--reuse TOOL=SECONDS` entries as a map (one line saying which entry is wrong)."""
    found: dict[str, int] = {}
    for entry in entries:
        name, sep, seconds = entry.rpartition("=")
        if not sep or not name or not (seconds.isascii() and seconds.isdigit()):
            raise CliError(f"--reuse takes TOOL=SECONDS (whole seconds), got {entry!r}")
        found[name] = int(seconds)
    return found


def _probe(claims: S3ClaimCheckStore, bucket: str | None) -> None:
    """Write, read and delete on the bucket: a store the proxy cannot use fails now, in one
    line, before a client sees a tool."""
    try:
        claims.bucket.probe()
    except ClaimStoreError as exc:
        message = explain(exc, bucket=bucket)
        raise CliError(f"the store cannot write and read a claim: {message}") from None


def _served_here(sock: socket.socket | None) -> str | None:
    """This server's own base URL for links, when it listens on loopback (plain HTTP
    anywhere else would put a link, a credential, in clear on a network)."""
    if sock is None:
        return None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    try:
        return check_base_url(f"http://{shown}:{port}")
    except ValueError:
        return None


def _store_line(kind: StoreKind, bucket: str | None) -> str:
    if kind is StoreKind.memory:
        return "memory (handles end with this process)"
    return f"s3, bucket {bucket!r} (handles outlive the process)"


def _log_eviction(event: ClaimEvicted) -> None:
    observe(event)  # its one line, as every event's


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="s3claim mcp-proxy: %(levelname)s %(message)s",
    )
    logging.getLogger("s3claim").setLevel(logging.INFO if verbose else logging.WARNING)


def address_of(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise CliError(f"--listen takes HOST:PORT (e.g. 127.0.0.1:9000), got {listen!r}")
    return host, int(port)
