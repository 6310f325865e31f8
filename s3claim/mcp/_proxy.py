"""The proxy: an MCP server that offers what its upstream offers, claim-checked.

`tools/list` is the upstream's listing (without output schemas, see `_results`) followed by
`s3claim.claim_tools.claim_tools(store)`, served generically: a claim tool added to the library
appears here with no change. `tools/call` runs a claim tool in-process or forwards the call
upstream and claim-checks what comes back. Resources, prompts, completions and logging are
served when the upstream offers them (`_forwarding`), with its name, version and
instructions; claims are resources too (`_claims`). What the upstream sends on its own
reaches the right client (`_relay`). Blocking work (S3, neutralising large text) runs in
worker threads, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent
from mcp_types import Tool as McpTool

from s3claim.claim_tools import FETCH_TOOL_NAME, SEARCH_TOOL_NAME, claim_tools
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, ToolError, UpstreamError
from s3claim.events import Event
from s3claim.hosting import (
    described,
    has_references,
    neutralise,
    refusal_text,
    resolve_arguments,
    run_claim_tool,
)
from s3claim.mcp._forwarding import Forwarding, upstream_meta
from s3claim.mcp._neutral import TooDeepError
from s3claim.mcp._relay import Relay, connection_of
from s3claim.mcp._results import advertised, claim_check_result, error_result
from s3claim.mcp._scoping import Scoping
from s3claim.mcp._upstream import Upstream
from s3claim.scope import Scope
from s3claim.tools import RunContext, Tool

__all__ = ["AGENT", "DEFAULT_MAX_CALLS", "ClaimCheckProxy"]

_log = logging.getLogger("s3claim.mcp")
AGENT = "mcp-proxy"
"""The agent name in the proxy's events and logs."""
DEFAULT_MAX_CALLS = 64
"""Calls (and reads) the proxy forwards at once; one more is refused, not queued."""


class _Mirror(Server[Any]):
    """The low-level server, announcing the upstream's list-changed flags as its own."""

    def __init__(self, *args: Any, notifications: NotificationOptions, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._notifications = notifications

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or self._notifications, experimental_capabilities, extensions
        )


class ClaimCheckProxy:
    """Claim-checks what `upstream` returns and serves the claim tools beside its tools.

    `on_event` receives s3claim's events (sizes and handles, never content) beside the log.
    `limit` is where an oversized result is cut when the store fails at check-in (by default
    the tool's policy threshold, as every host without a limit of its own). `max_calls`
    bounds the requests forwarded at once. `single_client`: the proxy serves one client
    (stdio), so what the upstream sends between calls is that client's.
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
        max_calls: int = DEFAULT_MAX_CALLS,
        single_client: bool = True,
    ) -> None:
        self.upstream = upstream
        self.claim_check = claim_check
        self.scoping = scoping
        self.limit = limit
        if self.limit is not None and self.limit < 1:
            raise ConfigurationError(f"limit must be positive, got {self.limit}")
        if max_calls < 1:
            raise ConfigurationError(f"max_calls must be positive, got {max_calls}")
        self.max_calls = max_calls
        self.claim_tools: dict[str, Tool] = {t.name: t for t in claim_tools(claim_check.store)}
        self.name = name
        self._on_event = on_event
        self._listed: dict[str, McpTool] = {}  # the last listing, by name
        self._in_flight = 0
        self.relay = Relay(single_client=single_client, wait_seconds=upstream.timeout)
        upstream.downstream = self.relay
        self.forwarding = Forwarding(self)

    @property
    def searchable(self) -> bool:
        return SEARCH_TOOL_NAME in self.claim_tools

    @property
    def fetch_tool(self) -> Tool:
        return self.claim_tools[FETCH_TOOL_NAME]

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
        """The MCP server to run on a transport: the upstream's identity and capabilities."""
        caps = self.upstream.capabilities
        info = self.upstream.server_info
        instructions = self.upstream.instructions
        server = _Mirror(
            neutralise(info.name) if info is not None else self.name,
            version=neutralise(info.version) if info is not None else "",
            title=neutralise(info.title) if info is not None and info.title else None,
            instructions=neutralise(instructions) if instructions is not None else None,
            notifications=NotificationOptions(
                prompts_changed=bool(caps.prompts and caps.prompts.list_changed),
                resources_changed=bool(caps.resources and caps.resources.list_changed),
                tools_changed=bool(caps.tools and caps.tools.list_changed),
            ),
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.forwarding.register(server, caps)
        return server

    def scope_of(self, ctx: ServerRequestContext[Any], meta: Mapping[str, Any] | None) -> Scope:
        """The scope of one request (a `ToolError` when it cannot be had)."""
        session_id = connection_of(ctx).session_id
        return self.scoping.scope(meta=meta, headers=_headers(ctx), session_id=session_id)

    def admission(self) -> _Admission:
        """A slot among `max_calls`; `ToolError("too_many_calls")` when none is free."""
        return _Admission(self)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> ListToolsResult:
        self.relay.seen(ctx)
        try:
            upstream = await self.upstream.list_tools()
        except (UpstreamError, MCPError, TooDeepError) as exc:
            _log.warning("tools/list: %s", getattr(exc, "code", type(exc).__name__))
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
            listed = advertised(tool)
            if self.claim_check.references:  # one line more: an argument may be a reference
                text = described(listed.description or "", self.claim_check)
                listed = listed.model_copy(update={"description": text})
            served.append(listed)
        return served + [_listing(t) for t in self.claim_tools.values()]

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            scope = self.scope_of(ctx, params.meta)
        except ToolError as error:
            return error_result(refusal_text(error))
        claim_tool = self.claim_tools.get(params.name)
        if claim_tool is not None:
            return await anyio.to_thread.run_sync(
                self._run_claim_tool, claim_tool, params.arguments or {}, scope
            )
        if self.claim_check.references and has_references(params.arguments or {}):
            try:  # resolved here, so any upstream takes a claim as an argument unawares
                arguments = await anyio.to_thread.run_sync(
                    self._resolve, params.name, params.arguments or {}, scope
                )
            except ToolError as error:  # the call is not forwarded
                return error_result(refusal_text(error))
            params = params.model_copy(update={"arguments": arguments})
        request = types.CallToolRequest(
            params=params.model_copy(update={"meta": upstream_meta(params.meta)})
        )
        try:
            with self.admission(), self.relay.call(ctx):
                result = await self.upstream.send(
                    request, CallToolResult, progress=_progress_of(ctx)
                )
        except ToolError as error:
            return error_result(error.render())
        except UpstreamError as exc:
            _log.warning("tools/call %s: %s", _loggable(params.name), exc.code)
            return error_result(ToolError(exc.code, exc.message).render())
        except MCPError as exc:  # the upstream's error answer: an error result, whatever its code
            message = f"{neutralise(exc.error.message)} (JSON-RPC error {exc.error.code})"
            return error_result(ToolError("upstream_error", message).render())
        return await anyio.to_thread.run_sync(self._admit, params.name, result, scope)

    def context(self, scope: Scope) -> RunContext:
        return RunContext(scope=scope, agent=AGENT, emit=self._emit)

    def _emit(self, event: Event) -> None:
        # Events carry sizes, tool names and handles only: safe for a log line.
        _log.info("event %s", event.model_dump_json())
        if self._on_event is not None:
            self._on_event(event)

    def _resolve(self, tool: str, arguments: Mapping[str, Any], scope: Scope) -> dict[str, Any]:
        resolved = resolve_arguments(
            arguments, claim_check=self.claim_check, tool=tool, context=self.context(scope)
        )
        return dict(resolved)

    def _run_claim_tool(
        self, tool: Tool, arguments: Mapping[str, Any], scope: Scope
    ) -> CallToolResult:
        answer = run_claim_tool(tool, arguments, self.context(scope))
        return CallToolResult(content=[TextContent(text=answer.text)], is_error=answer.is_error)

    def _admit(self, tool: str, result: CallToolResult, scope: Scope) -> CallToolResult:
        try:
            return claim_check_result(
                result,
                tool=tool,
                context=self.context(scope),
                claim_check=self.claim_check,
                limit=self.limit,
                searchable=self.searchable,
            )
        except ToolError as error:  # the upstream's text failed the boundary
            return error_result(refusal_text(error))
        except TooDeepError as error:
            return error_result(ToolError("upstream_invalid_result", str(error)).render())


class _Admission:
    def __init__(self, proxy: ClaimCheckProxy) -> None:
        self._proxy = proxy

    def __enter__(self) -> None:
        if self._proxy._in_flight >= self._proxy.max_calls:
            raise ToolError(
                "too_many_calls",
                f"the proxy already forwards {self._proxy.max_calls} calls (--max-calls); "
                "try again when one has finished",
            )
        self._proxy._in_flight += 1

    def __exit__(self, *exc: object) -> None:
        self._proxy._in_flight -= 1


def _progress_of(ctx: ServerRequestContext[Any]) -> ProgressFnT | None:
    """The relay of upstream progress to this request's client, if it asked for progress."""
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        return None

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(
            progress, total, neutralise(message) if message is not None else None
        )

    return progress


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
