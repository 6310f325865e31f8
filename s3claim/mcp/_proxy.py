"""The proxy: an MCP server whose tools are the upstream's plus every claim tool.

`tools/list` is the upstream's listing (without output schemas, see `_results`) followed by
`s3claim.claim_tools.claim_tools(store)`, served generically: a claim tool added to the library
appears here with no change. `tools/call` runs a claim tool in-process or forwards the call
upstream and claim-checks what comes back. Blocking work (S3, neutralising large text) runs in
worker threads, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp_types import Tool as McpTool

from s3claim._boundary import neutralise
from s3claim.claim_tools import SEARCH_TOOL_NAME, claim_tools, run_claim_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, ToolError, UpstreamError
from s3claim.events import Event
from s3claim.mcp._results import advertised, claim_check_result, error_result
from s3claim.mcp._scoping import Scoping
from s3claim.mcp._upstream import Upstream
from s3claim.scope import Scope
from s3claim.tools import RunContext, Tool

__all__ = ["AGENT", "ClaimCheckProxy"]

_log = logging.getLogger("s3claim.mcp")
AGENT = "mcp-proxy"
"""The agent name in the proxy's events and logs."""


class ClaimCheckProxy:
    """Claim-checks the results of `upstream`'s tools and serves the claim tools beside them.

    `on_event` receives s3claim's events (sizes and handles, never content) beside the log.
    `limit` is where an oversized result is cut when the store fails at check-in (by default
    the tool's policy threshold, as every host without a limit of its own).
    """

    def __init__(
        self,
        upstream: Upstream,
        *,
        claim_check: ClaimCheck,
        scoping: Scoping,
        limit: int | None = None,
        name: str = "s3claim-mcp-proxy",
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self.claim_check = claim_check
        self.scoping = scoping
        self.limit = limit
        if self.limit is not None and self.limit < 1:
            raise ConfigurationError(f"limit must be positive, got {self.limit}")
        self.claim_tools: dict[str, Tool] = {t.name: t for t in claim_tools(claim_check.store)}
        self.name = name
        self._on_event = on_event
        self._listed: dict[str, McpTool] = {}  # the last listing, by name

    def _remember(self, served: list[McpTool]) -> None:
        self._listed = {t.name: t for t in served}

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        # The SDK checks a call's `Mcp-Param-*` headers against the tool's input schema on
        # streamable HTTP; without this it would run tools/list, an upstream round trip, per
        # call. A tool not listed yet has nothing to check against.
        tool = self._listed.get(name)
        return tool.input_schema if tool is not None else None

    async def check_names(self) -> list[McpTool]:
        """The upstream's tools; refuses one named like a claim tool (call once at start)."""
        tools = await self.upstream.list_tools()
        clash = sorted(t.name for t in tools if t.name in self.claim_tools)
        if clash:
            raise ConfigurationError(
                f"the upstream has tools named {clash}, which the proxy serves itself "
                "(its claim tools): rename them upstream, or give it a proxy of its own"
            )
        self._remember(self._served(tools))
        return tools

    def server(self) -> Server[Any]:
        """The MCP server to run on a transport."""
        return Server(
            self.name,
            instructions=self.upstream.instructions,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        try:
            upstream = await self.upstream.list_tools()
        except UpstreamError as exc:
            _log.warning("tools/list: %s", exc.code)
            upstream = []
        served = self._served(upstream)
        self._remember(served)
        return ListToolsResult(tools=served)

    def _served(self, upstream: list[McpTool]) -> list[McpTool]:
        served: list[McpTool] = []
        for tool in upstream:
            if tool.name in self.claim_tools:  # appeared after start: the claim tool wins
                _log.warning("tools/list: hiding upstream tool %r (a claim tool's name)", tool.name)
                continue
            served.append(advertised(tool))
        return served + [_listing(t) for t in self.claim_tools.values()]

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            scope = self.scoping.scope(meta=params.meta, headers=_headers(ctx))
        except ToolError as error:
            return error_result(neutralise(error.render()))
        claim_tool = self.claim_tools.get(params.name)
        if claim_tool is not None:
            return await anyio.to_thread.run_sync(
                self._run_claim_tool, claim_tool, params.arguments or {}, scope
            )
        try:
            result = await self.upstream.call_tool(params.name, params.arguments)
        except UpstreamError as exc:
            _log.warning("tools/call %s: %s", _loggable(params.name), exc.code)
            return error_result(ToolError(exc.code, exc.message).render())
        return await anyio.to_thread.run_sync(self._admit, params.name, result, scope)

    def _context(self, scope: Scope) -> RunContext:
        return RunContext(scope=scope, agent=AGENT, emit=self._emit)

    def _emit(self, event: Event) -> None:
        # Events carry sizes, tool names and handles only: safe for a log line.
        _log.info("event %s", event.model_dump_json())
        if self._on_event is not None:
            self._on_event(event)

    def _run_claim_tool(
        self, tool: Tool, arguments: Mapping[str, Any], scope: Scope
    ) -> CallToolResult:
        answer = run_claim_tool(tool, arguments, self._context(scope))
        return CallToolResult(content=[TextContent(text=answer.text)], is_error=answer.is_error)

    def _admit(self, tool: str, result: CallToolResult, scope: Scope) -> CallToolResult:
        try:
            return claim_check_result(
                result,
                tool=tool,
                context=self._context(scope),
                claim_check=self.claim_check,
                limit=self.limit,
                searchable=SEARCH_TOOL_NAME in self.claim_tools,
            )
        except ToolError as error:  # the upstream's text failed the boundary
            return error_result(neutralise(error.render()))


def _listing(tool: Tool) -> McpTool:
    return McpTool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.schema["function"]["parameters"],
    )


def _headers(ctx: ServerRequestContext[Any]) -> Mapping[str, str] | None:
    """The HTTP request's headers; None on stdio."""
    headers = getattr(ctx.request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _loggable(name: str) -> str:
    return repr(neutralise(name[:64]))
