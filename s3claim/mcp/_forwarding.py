"""Forwarding: everything beside tools that the upstream offers, passed through the proxy.

Registered only for what the upstream's initialize result announces, so the proxy's
capabilities are the upstream's: resources (list, templates, read, subscribe), prompts,
completions, logging. Resources are served always, because claims are resources
(`resources/read` of a handle, see `_claims`); without upstream resources the listing is empty.
A request passes with its `_meta`, less the proxy's own keys; what comes back is neutralised,
and resource and prompt texts over the threshold are checked in (`_contents`). An error answer
passes as the same JSON-RPC error, its message neutralised; an upstream that cannot answer is
an internal error naming why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from s3claim.errors import ToolError, UpstreamError
from s3claim.hosting import neutralise
from s3claim.mcp._claims import is_claim_uri, read_claim
from s3claim.mcp._contents import checked_prompt, checked_resource
from s3claim.mcp._neutral import TooDeepError, neutralised, neutralised_listing
from s3claim.mcp._scoping import RUN_META_KEY

if TYPE_CHECKING:
    from s3claim.mcp._proxy import ClaimCheckProxy

__all__ = ["Forwarding", "upstream_meta"]

_R = TypeVar("_R", bound=BaseModel)
_OURS = (RUN_META_KEY, "s3claim/")


def upstream_meta(meta: types.RequestParamsMeta | None) -> types.RequestParamsMeta | None:
    """The client's `_meta` as the upstream gets it: without the proxy's keys, the progress
    token (the proxy asks for progress with its own) or another protocol's reserved keys."""
    if not meta:
        return None
    kept = {
        k: v
        for k, v in meta.items()
        if k != "progress_token"
        and not k.startswith(_OURS)
        and not k.startswith("io.modelcontextprotocol/")
    }
    return types.RequestParamsMeta(**kept) if kept else None  # type: ignore[typeddict-item]


class Forwarding:
    """The handlers for resources, prompts, completions and logging."""

    def __init__(self, proxy: ClaimCheckProxy) -> None:
        self.proxy = proxy
        self.upstream = proxy.upstream

    def register(self, server: Server[Any], caps: types.ServerCapabilities) -> None:
        add = server.add_request_handler
        add("resources/list", types.PaginatedRequestParams, self._list_resources)
        add("resources/templates/list", types.PaginatedRequestParams, self._list_templates)
        add("resources/read", types.ReadResourceRequestParams, self._read_resource)
        if caps.resources is not None and caps.resources.subscribe:
            add("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
            add("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)
        if caps.prompts is not None:
            add("prompts/list", types.PaginatedRequestParams, self._list_prompts)
            add("prompts/get", types.GetPromptRequestParams, self._get_prompt)
        if caps.completions is not None:
            add("completion/complete", types.CompleteRequestParams, self._complete)
        if caps.logging is not None:
            add("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )

    async def _forward(
        self,
        ctx: ServerRequestContext[Any],
        request: types.ClientRequest | types.Request[Any, Any],
        result: type[_R],
        *,
        admitted: bool = False,
    ) -> _R:
        self.proxy.relay.seen(ctx)
        try:
            if admitted:
                with self.proxy.admission(), self.proxy.relay.call(ctx):
                    return await self.upstream.send(request, result)
            with self.proxy.relay.call(ctx):
                return await self.upstream.send(request, result)
        except ToolError as error:
            raise MCPError(types.INTERNAL_ERROR, error.message) from None
        except UpstreamError as exc:
            raise MCPError(types.INTERNAL_ERROR, f"{exc.code}: {exc.message}") from None
        except MCPError as exc:
            raise MCPError(exc.error.code, neutralise(exc.error.message)) from None

    async def _safe(self, make: Callable[[], Awaitable[_R]]) -> _R:
        try:
            return await make()
        except TooDeepError as error:
            raise MCPError(types.INTERNAL_ERROR, str(error)) from None

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        if self.upstream.capabilities.resources is None:
            return types.ListResourcesResult(resources=[])
        page = await self._forward(
            ctx, types.ListResourcesRequest(params=_without_ours(params)), types.ListResourcesResult
        )
        return await self._safe(lambda: _listed(page, also=_RESOURCE_FIELDS))

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListResourceTemplatesResult:
        if self.upstream.capabilities.resources is None:
            return types.ListResourceTemplatesResult(resource_templates=[])
        page = await self._forward(
            ctx,
            types.ListResourceTemplatesRequest(params=_without_ours(params)),
            types.ListResourceTemplatesResult,
        )
        return await self._safe(lambda: _listed(page, also=_RESOURCE_FIELDS))

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            scope = self.proxy.scope_of(ctx, params.meta)
        except ToolError as error:
            raise MCPError(types.INVALID_PARAMS, error.message) from None
        context = self.proxy.context(scope)
        if is_claim_uri(params.uri):
            fetch = self.proxy.fetch_tool
            return await anyio.to_thread.run_sync(read_claim, fetch, params.uri, context)
        if self.upstream.capabilities.resources is None:
            raise MCPError(types.INVALID_PARAMS, f"no resource {neutralise(params.uri)!r}")
        result = await self._forward(
            ctx,
            types.ReadResourceRequest(params=_without_ours(params)),
            types.ReadResourceResult,
            admitted=True,
        )

        def check() -> types.ReadResourceResult:
            return checked_resource(
                result,
                context=context,
                claim_check=self.proxy.claim_check,
                searchable=self.proxy.searchable,
            )

        return await self._safe(lambda: anyio.to_thread.run_sync(check))

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if self.proxy.relay.subscribe(ctx, params.uri):
            request = types.SubscribeRequest(params=_without_ours(params))
            await self._forward(ctx, request, types.EmptyResult)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        if self.proxy.relay.unsubscribe(ctx, params.uri):
            request = types.UnsubscribeRequest(params=_without_ours(params))
            await self._forward(ctx, request, types.EmptyResult)
        return types.EmptyResult()

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> types.ListPromptsResult:
        page = await self._forward(
            ctx, types.ListPromptsRequest(params=_without_ours(params)), types.ListPromptsResult
        )
        return await self._safe(lambda: _listed(page))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        try:
            scope = self.proxy.scope_of(ctx, params.meta)
        except ToolError as error:
            raise MCPError(types.INVALID_PARAMS, error.message) from None
        result = await self._forward(
            ctx,
            types.GetPromptRequest(params=_without_ours(params)),
            types.GetPromptResult,
            admitted=True,
        )

        def check() -> types.GetPromptResult:
            return checked_prompt(
                result,
                context=self.proxy.context(scope),
                claim_check=self.proxy.claim_check,
                searchable=self.proxy.searchable,
            )

        return await self._safe(lambda: anyio.to_thread.run_sync(check))

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        result = await self._forward(
            ctx, types.CompleteRequest(params=_without_ours(params)), types.CompleteResult
        )
        return await self._safe(lambda: _async(neutralised(result)))

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        # One upstream connection for every client: the last level set is the upstream's.
        await self._forward(
            ctx, types.SetLevelRequest(params=_without_ours(params)), types.EmptyResult
        )
        return types.EmptyResult()

    async def _roots_changed(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        self.proxy.relay.seen(ctx)
        await self.upstream.notify(types.RootsListChangedNotification())


_P = TypeVar("_P", bound=types.RequestParams)


def _without_ours(params: _P) -> _P:
    return params.model_copy(update={"meta": upstream_meta(params.meta)})


_RESOURCE_FIELDS = frozenset({"name", "uri", "uriTemplate"})


async def _listed(page: _R, *, also: frozenset[str] = frozenset()) -> _R:
    return neutralised_listing(page, also=also)


async def _async(value: _R) -> _R:
    return value
