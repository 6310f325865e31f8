"""`s3claim mcp-proxy`: the MCP proxy (`s3claim.mcp`) composed from the command line.

Its settings are `s3claim.mcp.ProxySettings`: an option for each field is generated from it
(`_with_settings`), and a `--config` file's `[proxy]` table may give the same ones. The MCP
SDK is an extra, so `s3claim.mcp` is imported only when this command runs. Everything the
proxy says goes to stderr: on stdio, stdout is the protocol.
"""

from __future__ import annotations

import inspect
import logging
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from annotated_types import Ge, Le
from pydantic.fields import FieldInfo

from s3claim.claimcheck import ClaimCheck
from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    PrefixOption,
    RegionOption,
    warn_unless_loopback,
)
from s3claim.cli._exit import CliError, Exit, describe, handled
from s3claim.errors import ClaimStoreError
from s3claim.events import ClaimEvicted, observe
from s3claim.extras import require_extra
from s3claim.links import check_base_url
from s3claim.memory import MemoryClaimCheckStore
from s3claim.proxy_settings import ProxySettings, Source, StoreKind, flag, host_and_port
from s3claim.s3 import S3ClaimCheckStore
from s3claim.s3.admin import handle_key, load_settings, open_store
from s3claim.store import ClaimCheckStore

if TYPE_CHECKING:
    from s3claim.mcp import UpstreamTarget

__all__ = ["CONTEXT_SETTINGS", "address_of", "mcp_proxy"]

# Everything after the upstream command's name is the upstream's: `s3claim mcp-proxy --tenant
# acme npx pkg --flag` passes `--flag` on, with or without `--`.
CONTEXT_SETTINGS = {"allow_interspersed_args": False}
_PANEL = "Claim check policy"
_POLICY_OPTIONS = frozenset(
    {
        "threshold_chars", "head_chars", "tail_chars", "pick_lines", "pick_max", "json_root",
        "turn_budget_chars", "ttl_seconds", "reuse", "references", "max_reference_chars",
        "link_base_url",
    }
)  # fmt: skip
_ENVVARS = {"tenant": "S3CLAIM_TENANT", "header_timeout": "S3CLAIM_HEADER_TIMEOUT"}
_MEMORY_NOTE = (
    "The claim handles this server gives (claim:...) live in its memory: they end when the "
    "server process does, and a restarted server cannot read them."
)
_FALLBACK_WARNING = (
    "s3claim mcp-proxy: warning: no --store and no S3CLAIM_BUCKET, so the memory store: its "
    "handles end with this process. Give --store memory to mean it, or --store s3 and "
    "S3CLAIM_BUCKET (in a client's config, its env) to keep them"
)
"""Said when the store was not chosen: a desktop client that passes no environment lands here."""
_RUNS_STDIO = "one per tenant, or per conversation the client names (_meta s3claim/run)"
_RUNS_HTTP = (
    "one per session (2025-11-25 clients), else per tenant, or per conversation the client "
    "names (_meta s3claim/run)"
)


def _with_settings(command: Callable[..., None]) -> Callable[..., None]:
    """`command`, taking an option for each field of `ProxySettings` in its `**options`:
    the field's name, default, description and bounds (checked by the model, so that a
    value refused is one line wherever it came from)."""
    signature = inspect.signature(command, eval_str=True)
    fixed = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    fields = ProxySettings.model_fields.items()
    generated = [_option(name, field) for name, field in fields]
    command.__dict__["__signature__"] = signature.replace(parameters=[*fixed, *generated])
    return command


def _option(name: str, field: FieldInfo) -> inspect.Parameter:
    default = None if field.default_factory is not None else field.default
    low = next((m.ge for m in field.metadata if isinstance(m, Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, Le)), None)
    option = typer.Option(
        help=f"{field.description} ({low:,} to {high:,})" if high else field.description,
        envvar=_ENVVARS.get(name),
        rich_help_panel=_PANEL if name in _POLICY_OPTIONS else None,
        show_default=default is not None and _size(default),
        metavar="TOOL=SECONDS" if name == "reuse" else None,
    )
    typed = list[str] | None if name == "reuse" else field.annotation
    kind = inspect.Parameter.KEYWORD_ONLY
    return inspect.Parameter(name, kind, default=default, annotation=Annotated[typed, option])


def _size(default: object) -> str | bool:
    """A default of bytes shown in MiB or GiB."""
    if isinstance(default, int) and not isinstance(default, bool) and default >= 1024**2:
        for unit, size in (("GiB", 1024**3), ("MiB", 1024**2)):
            if default % size == 0:
                return f"{default // size} {unit}"
    return True


@_with_settings
def mcp_proxy(
    ctx: typer.Context,
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
            "prompts named NAME__tool. Excludes a command and --upstream-url. Its [proxy] "
            "table may give any option below (max_calls = 8); an option given on the command "
            "line, or by its environment variable, wins.",
            show_default=False,
        ),
    ] = None,
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
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every check-in and fetch (no content).")
    ] = False,
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
    **options: object,
) -> None:
    """Proxy an MCP server, checking its oversized results in; serves fetch_result beside it.

    `s3claim mcp-proxy --tenant acme -- npx @modelcontextprotocol/server-filesystem /srv/docs`
    serves a client on stdio; with `--listen 127.0.0.1:9000` it serves streamable HTTP. The
    handle key comes from S3CLAIM_HANDLE_KEY only (the memory store makes its own unless it
    is set; with it, `s3claim forget --proxy` erases a tenant while the proxy runs).
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
        if options["reuse"] and config is not None:
            raise CliError(
                "--reuse is for the command line's upstream; in a --config file, give each "
                "upstream a reuse table (reuse = { read_text_file = 300 })"
            )
        if upstream_env and upstream_url is not None:
            raise CliError("--upstream-env is for a stdio upstream (a command after --)")
        if upstream_url is not None and not upstream_url.startswith(("http://", "https://")):
            raise CliError(
                f"--upstream-url must be an http:// or https:// URL, got {upstream_url!r}"
            )
        sources: list[Source] = []
        if config is not None:
            sources.append(
                (mcp.read_gateway_settings(config), lambda key: f"{config}: proxy.{key}")
            )
            sources.append(
                ({"reuse": mcp.read_gateway_reuse(config)}, lambda key: f"{config}: upstreams")
            )
        for source, named in (("ENVIRONMENT", _ENVVARS.__getitem__), ("COMMANDLINE", flag)):
            # typer's click is its own copy: its ParameterSource is matched by name
            given = {k: v for k, v in options.items() if _source(ctx, k) == source}
            sources.append((given, named))
        settings = ProxySettings.from_sources(sources)
        configured = bucket is not None or bool(os.environ.get("S3CLAIM_BUCKET"))
        kind = settings.store or (StoreKind.s3 if configured else StoreKind.memory)
        memory_bounds = {"memory_max_bytes", "memory_max_tenant_bytes"}
        if kind is StoreKind.s3 and memory_bounds & settings.model_fields_set:
            raise CliError(
                "--memory-max-bytes and --memory-max-tenant-bytes bound --store memory; "
                "this proxy uses the s3 store, where claims last until their TTL"
            )
        if kind is StoreKind.memory:
            shared = os.environ.get("S3CLAIM_HANDLE_KEY")  # to sign erase requests (/erase)
            claims: ClaimCheckStore = MemoryClaimCheckStore(
                handle_key=handle_key(load_settings()) if shared else None,
                max_bytes=settings.memory_max_bytes,
                max_tenant_bytes=settings.memory_max_tenant_bytes,
                on_evict=_log_eviction,
            )
        else:
            claims = open_store(context.target(bucket, endpoint_url, prefix, region))
            _probe(claims, context.bucket)
        target: UpstreamTarget | None = None
        targets: dict[str, UpstreamTarget] | None = None
        most = settings.max_result_bytes
        if config is not None:
            targets = mcp.read_gateway_file(config, os.environ, max_result_bytes=most)
        elif upstream_url is not None:
            target = mcp.HttpUpstream(url=upstream_url, max_event_bytes=most)
        else:
            try:
                env = mcp.upstream_environment(os.environ, tuple(upstream_env or ()))
            except ValueError as exc:
                raise CliError(str(exc)) from None
            target = mcp.StdioUpstream(
                command=argv[0], args=tuple(argv[1:]), env=env, max_line_bytes=most
            )
        address = settings.address
        try:
            if address is None:
                scoping = mcp.Scoping.for_stdio(settings.tenant)
            else:
                scoping = mcp.Scoping.for_http(
                    settings.tenant, tenant_header=settings.tenant_header
                )
        except ValueError as exc:
            raise CliError(str(exc).splitlines()[0]) from None
        if settings.store is None and kind is StoreKind.memory:
            print(_FALLBACK_WARNING, file=sys.stderr, flush=True)
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
            policy=settings.policy,
            references=settings.references,
            max_reference_chars=settings.max_reference_chars,
            link_base_url=settings.link_base_url or _served_here(sock),
        )

        async def run(upstream: mcp.Upstream | mcp.Gateway, what: str) -> None:
            proxy = mcp.ClaimCheckProxy(
                upstream,
                claim_check=claim_check,
                scoping=scoping,
                max_calls=settings.max_calls,
                max_tenant_calls=settings.max_tenant_calls,
                max_read_bytes=settings.max_read_bytes,
                single_client=sock is None,
                note=_MEMORY_NOTE if kind is StoreKind.memory else None,
                reuse=settings.reuse,
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
            carried = "tool results, and links (each a bearer credential)"
            warn_unless_loopback("mcp-proxy", shown, port, carried)
            links = claim_check.link_base_url
            print(
                f"s3claim mcp-proxy: serving streamable HTTP at "
                f"http://{shown}:{port}{mcp.MCP_PATH} ({what}; store: {kind}; links: "
                f"{f'{links}/claims/' if links else 'off'})",
                file=sys.stderr,
                flush=True,
            )
            await mcp.serve_http(proxy, sock, each=each, header_timeout=settings.header_timeout)

        async def serve() -> None:
            if targets is not None:
                async with mcp.Gateway.connect(
                    targets,
                    timeout=settings.upstream_timeout,
                    startup_timeout=settings.startup_timeout,
                ) as gateway:
                    names = ", ".join(targets)
                    await run(gateway, f"gateway of {names}, each alone at {mcp.MCP_PATH}/NAME")
                return
            assert target is not None
            async with mcp.Upstream.connect(
                target, timeout=settings.upstream_timeout, startup_timeout=settings.startup_timeout
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


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where the option's value came from: COMMANDLINE, ENVIRONMENT or DEFAULT."""
    source = ctx.get_parameter_source(name)
    return None if source is None else source.name


def _probe(claims: S3ClaimCheckStore, bucket: str | None) -> None:
    """Write, read and delete on the bucket: a store the proxy cannot use fails now, in one
    line, before a client sees a tool."""
    try:
        claims.bucket.probe()
    except ClaimStoreError as exc:
        error = describe(exc, bucket=bucket)  # its exit code, as every command gives it
        assert error is not None
        raise CliError(f"the store cannot write and read a claim: {error}", error.code) from None


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
    try:
        return host_and_port(listen)
    except ValueError as exc:
        raise CliError(f"--listen {exc}") from None
