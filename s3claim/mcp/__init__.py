"""`s3claim mcp-proxy`: claim-check any MCP server's results for any MCP client.

Needs the `mcp` extra; without it, importing this package raises `MissingExtraError`, one
line naming the `pip install` that fixes it. Nothing else in s3claim imports the MCP SDK.

Built on the official SDK's low-level `Server` and `Client` (2.x), not fastmcp: one handler
per method around an upstream client, results passed through as the SDK's own types, so a
small result reaches the client as it came. fastmcp's proxy would put a second framework's
result conversion and tool model between the upstream and the claim check.

    client ──MCP──► ClaimCheckProxy ──MCP──► Upstream (stdio command, or streamable HTTP)
                         │                or a Gateway of several (`--config`, _gateway)
                         ├─ result boundary + ClaimCheck (s3claim.hosting.admit)
                         ├─ claim tools (s3claim.claim_tools.claim_tools): fetch_result, ...
                         ├─ claims as resources (resources/read claim:...?offset=N)
                         └─ resources, prompts, completions, logging: forwarded; progress,
                            sampling, elicitation, roots: relayed (_relay)
"""

from s3claim.errors import UpstreamError
from s3claim.extras import reraise_missing

try:
    from s3claim.bounds import DEFAULT_MAX_CALLS
    from s3claim.mcp._gateway import Gateway
    from s3claim.mcp._gateway_file import (
        read_gateway_file,
        read_gateway_reuse,
        read_gateway_settings,
    )
    from s3claim.mcp._http import HEADER_TIMEOUT_SECONDS, server_config
    from s3claim.mcp._proxy import AGENT, ClaimCheckProxy
    from s3claim.mcp._scoping import RUN_META_KEY, Scoping
    from s3claim.mcp._serve import MCP_PATH, listen_socket, serve_http, serve_stdio
    from s3claim.mcp._targets import (
        SAFE_VARIABLES,
        HttpUpstream,
        StdioUpstream,
        UpstreamTarget,
        upstream_environment,
    )
    from s3claim.mcp._upstream import Upstream
    from s3claim.proxy_settings import ProxySettings
except ModuleNotFoundError as exc:  # the SDK, or a module it brings (anyio, httpx, ...)
    reraise_missing("mcp", exc)

__all__ = [
    "AGENT",
    "DEFAULT_MAX_CALLS",
    "HEADER_TIMEOUT_SECONDS",
    "MCP_PATH",
    "RUN_META_KEY",
    "SAFE_VARIABLES",
    "ClaimCheckProxy",
    "Gateway",
    "HttpUpstream",
    "ProxySettings",
    "Scoping",
    "StdioUpstream",
    "Upstream",
    "UpstreamError",
    "UpstreamTarget",
    "listen_socket",
    "read_gateway_file",
    "read_gateway_reuse",
    "read_gateway_settings",
    "serve_http",
    "serve_stdio",
    "server_config",
    "upstream_environment",
]
