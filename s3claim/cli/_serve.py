"""`s3claim serve`: the link server (`s3claim.links.server`) over the configured bucket.

Links (`ClaimCheck.link`) are sealed under the handle key, so the server reads the same
`S3CLAIM_HANDLE_KEY` and bucket as the processes that make them. It runs as the MCP proxy's
HTTP server does (`s3claim.mcp`): uvicorn's access log off (a link's URL is a credential
until it expires), and a request whose headers take longer than `--header-timeout` seconds
to arrive has its connection closed.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from s3claim.bounds import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS, Bounds
from s3claim.cli._config import (
    BucketOption,
    EndpointOption,
    HeaderTimeoutOption,
    MaxCallsOption,
    MaxReadBytesOption,
    MaxTenantCallsOption,
    PrefixOption,
    RegionOption,
    warn_unless_loopback,
)
from s3claim.cli._exit import CliError, handled
from s3claim.cli._mcp_proxy import address_of
from s3claim.extras import require_extra
from s3claim.proxy_settings import HEADER_TIMEOUT_SECONDS
from s3claim.s3.admin import open_store

__all__ = ["serve"]


def serve(
    listen: Annotated[
        str,
        typer.Option(help="Serve HTTP on HOST:PORT; port 0 picks a free one."),
    ] = "127.0.0.1:8765",
    bucket: BucketOption = None,
    endpoint_url: EndpointOption = None,
    prefix: PrefixOption = None,
    region: RegionOption = None,
    header_timeout: HeaderTimeoutOption = HEADER_TIMEOUT_SECONDS,
    max_calls: MaxCallsOption = DEFAULT_MAX_CALLS,
    max_tenant_calls: MaxTenantCallsOption = None,
    max_read_bytes: MaxReadBytesOption = DEFAULT_MAX_BYTES,
) -> None:
    """Serve links to claims (`ClaimCheck.link`): GET /claims/TOKEN is the claim's text.

    Code reads a claim with nothing but an HTTP client and the link; this server holds the
    bucket's credentials and the handle key (S3CLAIM_HANDLE_KEY), the same ones the links
    were made with. Put it behind HTTPS unless the code runs on this host. Each read takes a
    slot of the link's tenant (--max-tenant-calls of --max-calls) and holds what it may buffer
    (--max-read-bytes) until its last byte is sent; one past them is a 503 at once.
    """
    with handled() as context:
        require_extra("mcp", feature="s3claim serve")  # Starlette, uvicorn: the MCP SDK's
        import uvicorn

        from s3claim.links.server import links_app
        from s3claim.mcp import listen_socket, server_config

        bounds = Bounds(  # a ConfigurationError is one line, exit 2
            max_calls=max_calls, tenant_calls=max_tenant_calls, max_bytes=max_read_bytes
        )
        host, port = address_of(listen)
        store = open_store(context.target(bucket, endpoint_url, prefix, region))
        store.bucket.probe_read()  # a bucket no link could be read from fails now, not per link
        try:
            sock = listen_socket(host, port)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise CliError(f"cannot listen on {host}:{port}: {reason}") from None
        bound, port = sock.getsockname()[:2]
        shown = f"[{bound}]" if ":" in bound else bound
        warn_unless_loopback("serve", shown, port, "a link is a bearer credential")
        print(
            f"s3claim serve: serving links at http://{shown}:{port}/claims/ "
            f"(store: s3, bucket {context.bucket!r})",
            file=sys.stderr,
            flush=True,
        )
        config = server_config(links_app(store, bounds), header_timeout=header_timeout)
        try:
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            sock.close()
