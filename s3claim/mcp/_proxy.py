"""The proxy: an MCP server that offers what its upstream offers, claim-checked.

`tools/list` is the upstream's listing (without output schemas, see `_results`), then every
claim tool of `s3claim.claim_tools.claim_tools(store)`. `tools/call` runs a claim tool
in-process or forwards the call and claim-checks what comes back; whatever fails is an error
result. The rest is forwarded when the upstream's initialize result announces it, so the
proxy's capabilities are the upstream's; resources always, as claims are resources
(`_claims`). A request passes with its `_meta` less the proxy's keys; answers are
neutralised, resource and prompt texts checked in, an error answer passes as the same
JSON-RPC error (its message neutralised), and an upstream that cannot answer is an internal
error naming why. Blocking work (S3, neutralising) runs in worker threads. The upstream is
one `Upstream`, or a `Gateway` of several behind the same surface (`_gateway`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent
from mcp_types import Tool as McpTool
from pydantic import BaseModel

from s3claim.bounds import DEFAULT_MAX_BYTES, DEFAULT_MAX_CALLS, Bounds
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, ToolError, UpstreamError
from s3claim.events import Event
from s3claim.hosting import Call, Host, ToolAnswer, folded_view, neutralise, refusal_text
from s3claim.mcp._claims import claim_uri, read_claim, unclaimed
from s3claim.mcp._gateway import SEPARATOR, Gateway
from s3claim.mcp._neutral import TooDeepError, neutralised, neutralised_named
from s3claim.mcp._relay import Relay, connection_of
from s3claim.mcp._results import (
    advertised,
    checked_prompt,
    checked_resource,
    checked_result,
    claim_link,
    error_result,
)
from s3claim.mcp._scoping import RUN_META_KEY, Scoping
from s3claim.mcp._upstream import Upstream
from s3claim.reuse import check_reuse
from s3claim.scope import Scope
from s3claim.tools import RunContext, Tool

__all__ = ["AGENT", "ClaimCheckProxy"]

_log = logging.getLogger("s3claim.mcp")
_R = TypeVar("_R", bound=BaseModel)
_P = TypeVar("_P", bound=types.RequestParams | None)  # None: the SDK's paginated params
_Handler = Callable[[ServerRequestContext[Any], _P], Awaitable[_R]]
AGENT = "mcp-proxy"
"""The agent name in the proxy's events and logs."""
# Not for the upstream: the proxy's own `_meta` keys and another protocol's reserved ones.
_OURS = (RUN_META_KEY, "s3claim/", "io.modelcontextprotocol/")
_LEFT_OUT = "%s: leaving out an upstream %s named like a claim tool or a forgery (%d characters)"
_UNLISTED = "no tool or prompt of this name is offered: its name imitates the proxy's claim tools"


class _Mirror(Server[Any]):
    """The low-level server, announcing the upstream's list-changed flags as its own."""

    notifications = NotificationOptions()

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> InitializationOptions:
        options = notification_options or self.notifications
        return super().create_initialization_options(options, *args, **kwargs)


class ClaimCheckProxy:
    """Claim-checks what `upstream` returns and serves the claim tools beside its tools.

    `on_event` receives s3claim's events (sizes and handles, never content) beside the log.
    `limit` is where an oversized result is cut when the store fails at check-in (by default
    the tool's policy threshold, as every host without a limit of its own). `max_calls`
    bounds the tool calls (the claim tools too), resource reads and prompts/get served at
    once, with the link reads of its `/claims/` (`serve_http`), `max_tenant_calls` one
    tenant's of them (by default all of them with a fixed tenant, and 1/`TENANT_SHARE` with
    tenants taken from a header), and `max_read_bytes` what the reads among them may buffer
    (`s3claim.bounds`).
    `single_client`: the proxy serves one client (stdio), so what the upstream sends between
    calls is that client's.
    `note` is added to the server's instructions (e.g. that handles end with the process).
    `reuse`: tool name (as the client calls it) to the seconds its checked-in result answers
    a repeat call in the same run (`s3claim.reuse`); each must be listed by its server with
    `readOnlyHint: true`, or `check_names` refuses it. A call of a tool not so marked ends
    reuse in its run.
    """

    def __init__(
        self,
        upstream: Upstream | Gateway,
        *,
        claim_check: ClaimCheck,
        scoping: Scoping,
        limit: int | None = None,
        name: str = "s3claim-mcp-proxy",
        on_event: Callable[[Event], None] | None = None,
        max_calls: int = DEFAULT_MAX_CALLS,
        max_tenant_calls: int | None = None,
        max_read_bytes: int = DEFAULT_MAX_BYTES,
        single_client: bool = True,
        note: str | None = None,
        reuse: Mapping[str, int] | None = None,
    ) -> None:
        self.reuse = check_reuse(reuse)
        self.host = Host(
            claim_check, on_event=self._emit, limit=limit, reuse=self.reuse, name="the MCP proxy"
        )
        """The tool-call pipeline (`s3claim.hosting`), shared with the endpoints `beside` it."""
        self.upstream = upstream
        self.claim_check = claim_check
        self.scoping = scoping
        self.limit = limit
        self.bounds = Bounds(
            max_calls=max_calls, tenant_calls=max_tenant_calls, max_bytes=max_read_bytes,
            many_tenants=scoping.tenant_header is not None,
        )  # fmt: skip
        # An admitted call's blocking work (a claim tool, a claim read, its references, its
        # check-in) runs in a thread of `workers`, as many as there are slots: an admitted call
        # never waits for one, so no queue is shared by the tenants (anyio's default of 40
        # threads was: 60 searches of one tenant kept another's 5 ms call waiting 5 to 9 s).
        self.workers = anyio.CapacityLimiter(max_calls)
        self.claim_tools: dict[str, Tool] = self.host.tools
        self.name = name
        self.note = note
        self._on_event = on_event
        self._ours = {_squashed(name) for name in self.claim_tools}
        self._listed: dict[str, McpTool] = {}  # the last listing, by name
        self.relay = Relay(single_client=single_client, wait_seconds=upstream.timeout)
        upstream.downstream = self.relay

    def beside(self, upstream: Upstream) -> ClaimCheckProxy:
        """A proxy of `upstream` alone (one of a gateway's) beside this one: a copy with that
        upstream and a listing of its own, the same store, scoping and relay (so what the
        upstream sends finds its client whichever of the two it called through)."""
        other = copy.copy(self)
        other.upstream = upstream
        other._listed = {}
        own = f"{upstream.name}{SEPARATOR}"  # its tools, unprefixed; reads remembered as its own
        other.reuse = {k.removeprefix(own): v for k, v in self.reuse.items() if k.startswith(own)}
        other.host = self.host.beside(own, reuse=other.reuse)
        upstream.downstream = self.relay
        return other

    async def check_names(self) -> list[McpTool]:
        """The upstream's tools; refuses one named like a claim tool (call once at start)."""
        tools = await self.upstream.list_tools()
        clash = sorted(t.name for t in tools if t.name in self.claim_tools)
        if clash:
            raise ConfigurationError(
                f"the upstream has tools named {clash}, which the proxy serves itself "
                "(its claim tools): rename them upstream, or give it a proxy of its own"
            )
        served = {t.name: t for t in self._served(tools)}
        for name in sorted(self.reuse):
            if name not in served:
                raise ConfigurationError(f"reuse: the upstream lists no tool named {name!r}")
            if not _read_only(served[name]):
                raise ConfigurationError(
                    f"reuse: {name!r} is not marked read-only by its server (readOnlyHint), "
                    "so a repeat call of it cannot be answered from an earlier result"
                )
        return tools

    def server(self) -> Server[Any]:
        """The MCP server to run on a transport: the upstream's identity and capabilities."""
        caps, info = self.upstream.capabilities, self.upstream.server_info
        said = self.upstream.instructions
        instructions = neutralise(said) if said is not None else None
        if self.note:
            instructions = f"{instructions}\n\n{self.note}" if instructions else self.note
        server = _Mirror(
            neutralise(info.name) if info is not None else self.name,
            version=neutralise(info.version) if info is not None else "",
            title=neutralise(info.title) if info is not None and info.title else None,
            instructions=instructions,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._passing(
                types.ListResourcesRequest, types.ListResourcesResult, unclaimed,
                empty=types.ListResourcesResult(resources=[]),
            ),
            on_list_resource_templates=self._passing(
                types.ListResourceTemplatesRequest, types.ListResourceTemplatesResult, unclaimed,
                empty=types.ListResourceTemplatesResult(resource_templates=[]),
            ),
            on_read_resource=self._read_resource,
        )  # fmt: skip
        server.notifications = NotificationOptions(
            prompts_changed=bool(caps.prompts and caps.prompts.list_changed),
            resources_changed=bool(caps.resources and caps.resources.list_changed),
            tools_changed=bool(caps.tools and caps.tools.list_changed),
        )
        add = server.add_request_handler
        if caps.resources is not None and caps.resources.subscribe:
            add("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
            add("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)
        if caps.prompts is not None:
            listing = self._passing(
                types.ListPromptsRequest, types.ListPromptsResult, self._prompts
            )
            add("prompts/list", types.PaginatedRequestParams, listing)
            add("prompts/get", types.GetPromptRequestParams, self._get_prompt)
        if caps.completions is not None:
            add("completion/complete", types.CompleteRequestParams, self._complete)
        if caps.logging is not None:
            # One upstream connection for every client: the last level set is the upstream's.
            level = self._passing(types.SetLevelRequest, types.EmptyResult, _empty)
            add("logging/setLevel", types.SetLevelRequestParams, level)
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        return server

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        # The SDK checks a call's `Mcp-Param-*` headers against the tool's input schema on
        # streamable HTTP; without this it would run tools/list, an upstream round trip, per
        # call. A tool not listed yet has nothing to check against.
        tool = self._listed.get(name)
        return tool.input_schema if tool is not None else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> ListToolsResult:
        self.relay.seen(ctx)
        try:
            upstream = await self.upstream.list_tools()
        except (UpstreamError, MCPError, TooDeepError) as exc:
            _log.warning("tools/list: %s", getattr(exc, "code", type(exc).__name__))
            upstream = []
        return ListToolsResult(tools=self._served(upstream))

    def _served(self, upstream: list[McpTool]) -> list[McpTool]:
        """The listing the clients see, remembered for `_input_schema`."""
        served: list[McpTool] = []
        for tool in upstream:
            if self.refused(tool.name):
                _log.warning(_LEFT_OUT, "tools/list", "tool", len(tool.name))
                continue
            listed = advertised(tool)
            if self.claim_check.references:  # one line more: an argument may be a reference
                text = self.host.described(listed.description)
                listed = listed.model_copy(update={"description": text})
            served.append(listed)
        served += [_listing(t) for t in self.claim_tools.values()]
        self._listed = {t.name: t for t in served}
        return served

    def refused(self, name: str) -> bool:
        """An upstream tool or prompt name the proxy neither lists nor forwards: a claim
        tool's own (a call of it runs the claim tool), one that imitates a claim tool after
        folding (`fetch-result`, `Fetch_Result\u200b`, full-width forms), or holds a forgery
        (a handle, a chat token). Names are listed as they are, as clients send them back; so
        `fetch_results`, which a marker cannot be, passes. A gateway's `fs__fetch_result` is
        read as the upstream's own name too."""
        unsafe = neutralise(name).replace("-", "_") != name.replace("-", "_")
        own = name.partition(SEPARATOR)[2]
        return unsafe or _squashed(name) in self._ours or _squashed(own) in self._ours

    def _prompts(self, listing: types.ListPromptsResult) -> types.ListPromptsResult:
        kept = []
        for prompt in listing.prompts:
            if self.refused(prompt.name):
                _log.warning(_LEFT_OUT, "prompts/list", "prompt", len(prompt.name))
            else:
                kept.append(neutralised_named(prompt))
        return neutralised(listing.model_copy(update={"prompts": []})).model_copy(
            update={"prompts": kept}
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            scope = self._scope(ctx, params.meta)
        except ToolError as error:
            return error_result(refusal_text(error))
        try:
            with self.bounds.admitted(scope.tenant):
                return await self._call_admitted(ctx, params, scope)
        except ToolError as error:  # too_many_calls
            return error_result(error.render())

    async def _call_admitted(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams, scope: Scope
    ) -> CallToolResult:
        arguments, context, host = params.arguments or {}, self._context(scope), self.host
        workers = self.workers
        name = params.name
        if name not in self.claim_tools and self.refused(name):  # its arguments may hold a handle
            return error_result(ToolError("unknown_tool", _UNLISTED).render())
        listed = self._listed.get(name)  # read-only is what the tool's last listing says
        read_only = listed is not None and _read_only(listed)
        # A repeat in a run that may hold several conversations gets the text again: the
        # earlier result may be in another one (`Scoping.spans_conversations`).
        whole = Scoping.spans_conversations(scope)
        begin = partial(host.begin, name, arguments, context, read_only=read_only, whole=whole)
        begun = await anyio.to_thread.run_sync(begin, limiter=workers)
        if begun.answer is not None:  # a claim tool's, a repeat's, a refusal: not forwarded
            return self._answered(name, begun.answer)
        params = params.model_copy(update={"arguments": begun.arguments})
        request = types.CallToolRequest(params=_without_ours(params))
        try:
            with self.relay.call(ctx):
                result = await self.upstream.send(
                    request, CallToolResult, progress=_progress_of(ctx)
                )
        except ToolError as error:
            host.untouched(begun)
            return error_result(error.render())
        except UpstreamError as exc:
            host.untouched(begun)
            _log.warning("tools/call %s: %s", repr(neutralise(name[:64])), exc.code)
            return error_result(ToolError(exc.code, exc.message).render())
        except MCPError as exc:  # the upstream's error answer: an error result, whatever its code
            host.untouched(begun)
            message = f"{neutralise(exc.error.message)} (JSON-RPC error {exc.error.code})"
            return error_result(ToolError("upstream_error", message).render())
        return await anyio.to_thread.run_sync(self._admit, begun, result, limiter=workers)

    def _answered(self, name: str, answer: ToolAnswer) -> CallToolResult:
        """The host's own answer: a claim tool's window, a refusal, or a repeat read (by
        reference: the earlier answer, in the conversation, carries the claim's link)."""
        if name in self.claim_tools or answer.is_error:
            return CallToolResult(content=[TextContent(text=answer.text)], is_error=answer.is_error)
        content: list[Any] = [TextContent(text=answer.text)]
        link = claim_link(answer.text)
        if link is not None:
            content.append(link)
        return CallToolResult(content=content)

    def _passing(
        self,
        request: type[types.Request[_P, Any]],
        result: type[_R],
        clean: Callable[[_R], _R],
        *,
        empty: _R | None = None,
    ) -> _Handler[_P, _R]:
        """A handler forwarding `request` as it came and its answer through `clean`; `empty`
        answers in its place when the upstream has no resources."""

        async def handle(ctx: ServerRequestContext[Any], params: _P) -> _R:
            if empty is not None and self.upstream.capabilities.resources is None:
                return empty
            return await self._forward(ctx, request, params, result, clean)

        return handle

    async def _forward(
        self,
        ctx: ServerRequestContext[Any],
        request: type[types.Request[_P, Any]],
        params: _P,
        result: type[_R],
        clean: Callable[[_R], _R],
        *,
        workers: anyio.CapacityLimiter | None = None,
    ) -> _R:
        """The request upstream, its answer through `clean` in a worker thread (of `workers`,
        for an admitted request); what goes wrong is the JSON-RPC error the client reads."""
        self.relay.seen(ctx)
        try:
            with self.relay.call(ctx):
                answer = await self.upstream.send(request(params=_without_ours(params)), result)
        except ToolError as error:
            raise MCPError(types.INTERNAL_ERROR, error.message) from None
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, f"{exc.code}: {exc.message}") from None
        except MCPError as exc:
            raise MCPError(exc.error.code, neutralise(exc.error.message)) from None
        try:
            return await anyio.to_thread.run_sync(clean, answer, limiter=workers)
        except TooDeepError as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        context = self._context_of(ctx, params.meta)
        claim = claim_uri(params.uri)
        if claim is not None:  # the proxy answers it: a handle never goes upstream
            with self._read_slot(context.scope.tenant):
                return await anyio.to_thread.run_sync(
                    read_claim, self.claim_check.store, claim, context, limiter=self.workers
                )
        if self.upstream.capabilities.resources is None:
            raise MCPError(types.INVALID_PARAMS, f"no resource {neutralise(params.uri)!r}")
        check = partial(checked_resource, admit=partial(self._admit_text, context=context))
        with self._read_slot(context.scope.tenant):
            return await self._forward(
                ctx, types.ReadResourceRequest, params, types.ReadResourceResult, check,
                workers=self.workers,
            )  # fmt: skip

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if self.refused(params.name):
            raise MCPError(types.INVALID_PARAMS, _UNLISTED)
        context = self._context_of(ctx, params.meta)
        check = partial(checked_prompt, admit=partial(self._admit_text, context=context))
        with self._read_slot(context.scope.tenant):
            return await self._forward(
                ctx, types.GetPromptRequest, params, types.GetPromptResult, check,
                workers=self.workers,
            )  # fmt: skip

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Completions for a prompt or template the upstream owns: a refused prompt's, or a
        claim URI's, are not asked of it (a claim's name never goes upstream)."""
        ref = params.ref
        if isinstance(ref, types.PromptReference) and self.refused(ref.name):
            raise MCPError(types.INVALID_PARAMS, _UNLISTED)
        if isinstance(ref, types.ResourceTemplateReference) and claim_uri(ref.uri) is not None:
            return types.CompleteResult(completion=types.Completion(values=[]))
        return await self._forward(
            ctx, types.CompleteRequest, params, types.CompleteResult, neutralised
        )

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if claim_uri(params.uri) is not None:  # a claim never changes: nothing to hear of
            return types.EmptyResult()
        if self.relay.subscribe(ctx, params.uri):  # the first: the upstream must hear of it
            await self._forward(ctx, types.SubscribeRequest, params, types.EmptyResult, _empty)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if claim_uri(params.uri) is not None:
            return types.EmptyResult()
        if self.relay.unsubscribe(ctx, params.uri):  # the last one
            await self._forward(ctx, types.UnsubscribeRequest, params, types.EmptyResult, _empty)
        return types.EmptyResult()

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self.relay.seen(ctx)

    async def _roots_changed(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self.relay.seen(ctx)
        await self.upstream.notify(types.RootsListChangedNotification())

    def _scope(self, ctx: ServerRequestContext[Any], meta: Mapping[str, Any] | None) -> Scope:
        """The scope of one request (a `ToolError` when it cannot be had)."""
        headers = getattr(ctx.request, "headers", None)  # the HTTP request's; none on stdio
        return self.scoping.scope(
            meta=meta,
            headers=headers if isinstance(headers, Mapping) else None,
            session_id=connection_of(ctx).session_id,
        )

    def _context_of(
        self, ctx: ServerRequestContext[Any], meta: Mapping[str, Any] | None
    ) -> RunContext:
        try:
            return self._context(self._scope(ctx, meta))
        except ToolError as error:
            raise MCPError(types.INVALID_PARAMS, error.message) from None

    @contextmanager
    def _read_slot(self, tenant: str) -> Iterator[None]:
        """A slot of `tenant`'s share for a read or a prompt, as for a call (`bounds`); the
        JSON-RPC error when there is none (the reads inside raise `MCPError`, never this)."""
        try:
            with self.bounds.admitted(tenant):
                yield
        except ToolError as error:  # too_many_calls
            raise MCPError(types.INTERNAL_ERROR, error.message) from None

    def _context(self, scope: Scope) -> RunContext:
        return RunContext(scope=scope, agent=AGENT, emit=self._emit)

    def _emit(self, event: Event) -> None:
        # The host logs each event (`s3claim.events.observe`): sizes, tools and handles only.
        if self._on_event is not None:
            self._on_event(event)

    def _admit(self, begun: Call, result: CallToolResult) -> CallToolResult:
        """The client's result for the upstream's (blocking: in a worker thread)."""
        try:
            return checked_result(self.host, begun, result)
        except ToolError as error:  # the upstream's text failed the boundary
            self.host.untouched(begun)
            return error_result(refusal_text(error))
        except TooDeepError as error:
            self.host.untouched(begun)
            return error_result(ToolError("upstream_invalid_result", str(error)).render())

    def _admit_text(self, text: str, kind: str, *, context: RunContext) -> str | None:
        """A resource's or prompt message's text: its head and marker when it is oversized
        (through the boundary, as a tool result is), else None: it passes."""
        claim_check = self.claim_check
        if len(text) < claim_check.policy_for(kind).threshold_chars:
            return None
        call = self.host.begin(kind, {}, context, read_only=True)
        return self.host.finish(call, text, keep=False).text


def _without_ours(params: _P) -> _P:
    """`params` as the upstream gets them: `_meta` without the proxy's keys or the progress
    token (the proxy asks for progress with its own)."""
    if params is None:  # never, in fact: the server validates absent params as `{}`
        return params
    kept = {
        k: v
        for k, v in (params.meta or {}).items()
        if k != "progress_token" and not k.startswith(_OURS)
    }
    meta = types.RequestParamsMeta(**kept) if kept else None  # type: ignore[typeddict-item]
    return params.model_copy(update={"meta": meta})


def _empty(answer: types.EmptyResult) -> types.EmptyResult:
    return types.EmptyResult()


def _progress_of(ctx: ServerRequestContext[Any]) -> ProgressFnT | None:
    """The relay of upstream progress to this request's client, if it asked for progress."""
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        return None

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(
            progress, total, neutralise(message) if message is not None else None
        )

    return progress


def _read_only(tool: McpTool) -> bool:
    return tool.annotations is not None and tool.annotations.read_only_hint is True


def _squashed(name: str) -> str:
    """A name as it might be read: folded, any case, without separators (`fetchresult`)."""
    return "".join(c for c in folded_view(name).casefold() if c.isalnum())


def _listing(tool: Tool) -> McpTool:
    return McpTool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.schema["function"]["parameters"],
    )
