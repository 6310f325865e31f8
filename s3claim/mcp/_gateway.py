"""Gateway: several upstream servers behind the one surface the proxy fronts.

`ClaimCheckProxy` fronts an upstream: one `Upstream`, or a `Gateway` of several with the same
surface (capabilities, server_info, instructions, timeout, downstream, list_tools, send,
notify, close). The gateway routes each request to the upstream it belongs to, so the proxy,
its store and its bounds are the same for one server or many:

- Tools and prompts are named `<upstream>__<name>` (`fs__read_text_file`); a call, a
  `prompts/get` and a prompt's completion go to the upstream of the prefix, without it.
- Resources keep their URIs. A URI belongs to the upstream that listed it (each upstream's
  listing is read at start, and again at every listing through the gateway); one listed by
  two upstreams at start is refused. Else to the first upstream, in the file's order, whose
  resource template matches it; else to the one that named it in a result (a resource link,
  an embedded resource); else to the one upstream with resources; else it is unknown.
- A listing is every upstream's, in the file's order. The gateway's cursor holds each
  upstream's own, so every page asks each upstream that has more for its next page.
- Capabilities are the union, the server's identity is the gateway's own, and the
  instructions are each upstream's, labelled by its name (the proxy neutralises them).

Each upstream is its own `Upstream`: one that dies is restarted by its next call while the
others serve on. What an upstream sends on its own names it (`Upstream.name`), so the relay
gives it to the client with calls in flight to that upstream.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from s3claim.errors import ConfigurationError, UpstreamError
from s3claim.mcp._relay import Relay
from s3claim.mcp._targets import UpstreamTarget
from s3claim.mcp._upstream import Upstream
from s3claim.version import __version__

__all__ = ["SEPARATOR", "UPSTREAM_NAME", "Gateway", "bad_name"]

_log = logging.getLogger("s3claim.mcp")
_R = TypeVar("_R", bound=BaseModel)
_T = TypeVar("_T")
SEPARATOR = "__"
"""Between an upstream's name and its tool's or prompt's: `fs__read_text_file`."""
UPSTREAM_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
"""An upstream's name: short, safe in a tool name and a URL path, never holding `__`."""
_PAGES = 100  # a cursor that never ends cannot hang the start
_REMEMBERED = 10_000  # URIs of each kind remembered: the oldest are forgotten first
_INFO = types.Implementation(name="s3claim-mcp-gateway", version=__version__)
# A URI template's expressions (RFC 6570): each matches a run of characters but those its
# operator's expansion never holds (a simple `{id}` encodes `/`, `?` and `#`; `{+path}` none).
_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^{}]*\}")
_NEVER = {"": "/?#", "+": "", "#": "", ".": "?#", "/": "?#", ";": "?#", "?": "#", "&": "#"}
_Listing = (
    types.ListPromptsRequest | types.ListResourcesRequest | types.ListResourceTemplatesRequest
)


class Gateway:
    """Several upstreams, each named (`Upstream.name`, matching `UPSTREAM_NAME`), as one.

    Open one with `Gateway.connect(...)`, which starts every upstream and checks them
    (`start`). Names are prefixed even for a gateway of one, so adding an upstream to the
    file never renames another's tools.
    """

    def __init__(self, upstreams: Sequence[Upstream]) -> None:
        if not upstreams:
            raise ConfigurationError("a gateway needs at least one upstream")
        named: dict[str, Upstream] = {}
        for upstream in upstreams:
            name = upstream.name or ""
            if not UPSTREAM_NAME.fullmatch(name):
                raise ConfigurationError(bad_name(name))
            if name in named:
                raise ConfigurationError(f"two upstreams are named {name!r}")
            named[name] = upstream
        self.upstreams: Mapping[str, Upstream] = named
        self.timeout = max(u.timeout for u in upstreams)
        self.server_info: types.Implementation | None = _INFO
        self._downstream: Relay | None = None
        # Resource URI -> its upstream: listed (and template strings), or named in a result.
        self._listed: dict[str, Upstream] = {}
        self._linked: dict[str, Upstream] = {}
        self._templates: dict[Upstream, list[_Template]] = {}

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        targets: Mapping[str, UpstreamTarget],
        *,
        timeout: float,
        startup_timeout: float | None = None,
    ) -> AsyncIterator[Gateway]:
        """Start every upstream, in order, then `start`; the first that fails ends it all, as
        an `UpstreamError` naming it (or a `ConfigurationError`, for what `start` refuses).
        On the way out every upstream is stopped at once (`close`)."""
        for name in targets:
            if not UPSTREAM_NAME.fullmatch(name):
                raise ConfigurationError(bad_name(name))
        async with AsyncExitStack() as stack:
            upstreams = []
            for name, target in targets.items():
                opening = Upstream.connect(
                    target, timeout=timeout, startup_timeout=startup_timeout, name=name
                )
                try:
                    upstreams.append(await stack.enter_async_context(opening))
                except UpstreamError as exc:
                    raise UpstreamError(exc.code, f"upstream {name}: {exc.message}") from None
            gateway = cls(upstreams)
            try:
                await gateway.start()
                yield gateway
            finally:  # all at once, within a second, not one by one as the stack unwinds
                with anyio.CancelScope(shield=True):
                    await gateway.close()

    async def start(self) -> None:
        """List every upstream's tools, resources and templates: one that cannot is an
        `UpstreamError` naming it, and a resource URI two upstreams list a
        `ConfigurationError` (the gateway could not tell whose it is)."""
        listed: dict[str, str] = {}
        for name, upstream in self.upstreams.items():
            try:
                await upstream.list_tools()
                if upstream.capabilities.resources is None:
                    continue
                resources = await _every_page(upstream, types.ListResourcesRequest)
                templates = await _every_page(upstream, types.ListResourceTemplatesRequest)
            except MCPError as exc:
                message = f"upstream {name}: a listing failed (JSON-RPC error {exc.error.code})"
                raise UpstreamError("upstream_unavailable", message) from None
            except UpstreamError as exc:
                raise UpstreamError(exc.code, f"upstream {name}: {exc.message}") from None
            for page in resources:
                assert isinstance(page, types.ListResourcesResult)
                for resource in page.resources:
                    other = listed.setdefault(resource.uri, name)
                    if other != name:
                        raise ConfigurationError(
                            f"upstreams {other} and {name} both list the resource "
                            f"{resource.uri[:200]!r}: a gateway routes each URI to one "
                            "upstream; give one of them a proxy of its own"
                        )
            self._learn(upstream, [*resources, *templates])

    @property
    def downstream(self) -> Relay | None:
        return self._downstream

    @downstream.setter
    def downstream(self, relay: Relay | None) -> None:
        self._downstream = relay
        for upstream in self.upstreams.values():
            upstream.downstream = relay

    @property
    def capabilities(self) -> types.ServerCapabilities:
        """The union of the upstreams' (as they are now: an upstream may restart)."""
        caps = [u.capabilities for u in self.upstreams.values()]
        tools = [c.tools for c in caps if c.tools is not None]
        prompts = [c.prompts for c in caps if c.prompts is not None]
        resources = [c.resources for c in caps if c.resources is not None]
        return types.ServerCapabilities(
            tools=types.ToolsCapability(list_changed=_any(t.list_changed for t in tools))
            if tools
            else None,
            prompts=types.PromptsCapability(list_changed=_any(p.list_changed for p in prompts))
            if prompts
            else None,
            resources=types.ResourcesCapability(
                subscribe=_any(r.subscribe for r in resources),
                list_changed=_any(r.list_changed for r in resources),
            )
            if resources
            else None,
            completions=types.CompletionsCapability()
            if any(c.completions is not None for c in caps)
            else None,
            logging=types.LoggingCapability() if any(c.logging is not None for c in caps) else None,
        )

    @property
    def instructions(self) -> str | None:
        """Each upstream's instructions under its name; None when none has any."""
        said = [(n, u.instructions) for n, u in self.upstreams.items() if u.instructions]
        if not said:
            return None
        parts = [
            "This server is a gateway to several MCP servers: a tool or prompt named "
            f"<server>{SEPARATOR}<name> is that server's. Their instructions follow."
        ]
        parts += [f"Instructions of the server {name!r}:\n{text}" for name, text in said]
        return "\n\n".join(parts)

    async def list_tools(self) -> list[types.Tool]:
        """Every upstream's tools, prefixed; an upstream that cannot list them is left out
        with a log line, unless none can."""
        listed = await self._each(self.upstreams.values(), lambda u: u.list_tools())
        return [
            tool.model_copy(update={"name": f"{upstream.name}{SEPARATOR}{tool.name}"})
            for upstream, tools in listed
            for tool in tools
        ]

    async def send(
        self,
        request: types.ClientRequest | types.Request[Any, Any],
        result_type: type[_R],
        *,
        progress: ProgressFnT | None = None,
    ) -> _R:
        """`request` to the upstream it belongs to (a listing: to every one), as
        `Upstream.send` raises; a name or URI no upstream owns is a JSON-RPC error."""
        if isinstance(request, types.CallToolRequest | types.GetPromptRequest):
            upstream, own = self._named(request.params.name)
            renamed = request.params.model_copy(update={"name": own})
            answer = await upstream.send(
                request.model_copy(update={"params": renamed}), result_type, progress=progress
            )
            if isinstance(answer, types.CallToolResult):
                self._learn_links(upstream, answer.content)
            elif isinstance(answer, types.GetPromptResult):
                self._learn_links(upstream, [m.content for m in answer.messages])
            return answer
        if isinstance(request, types.CompleteRequest):
            ref = request.params.ref
            if isinstance(ref, types.PromptReference):
                upstream, own = self._named(ref.name)
                ref = ref.model_copy(update={"name": own})
            else:
                upstream = self._owner(ref.uri)
            completing = request.params.model_copy(update={"ref": ref})
            return await upstream.send(
                request.model_copy(update={"params": completing}), result_type, progress=progress
            )
        if isinstance(
            request,
            types.ReadResourceRequest | types.SubscribeRequest | types.UnsubscribeRequest,
        ):
            upstream = self._owner(request.params.uri)
            return await upstream.send(request, result_type, progress=progress)
        if isinstance(request, _Listing):
            page = await self._page(request)
            assert isinstance(page, result_type)
            return page
        if isinstance(request, types.SetLevelRequest):
            logging_ = [u for u in self.upstreams.values() if u.capabilities.logging is not None]
            await self._each(logging_, lambda u: u.send(request, types.EmptyResult))
            return result_type.model_validate({})
        raise MCPError(types.METHOD_NOT_FOUND, f"the gateway does not route {request.method}")

    async def notify(self, notification: types.ClientNotification) -> None:
        """Tell every upstream (best effort, as `Upstream.notify`)."""
        for upstream in self.upstreams.values():
            await upstream.notify(notification)

    async def close(self) -> None:
        """Stop every upstream now, at once (see `Upstream.close`)."""
        async with anyio.create_task_group() as group:
            for upstream in self.upstreams.values():
                group.start_soon(upstream.close)

    def _named(self, name: str) -> tuple[Upstream, str]:
        prefix, separator, own = name.partition(SEPARATOR)
        upstream = self.upstreams.get(prefix) if separator and own else None
        if upstream is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown name {name[:200]!r}: the gateway's tools and prompts are named "
                f"<upstream>{SEPARATOR}<name>, with upstreams {sorted(self.upstreams)}",
            )
        return upstream, own

    def _owner(self, uri: str) -> Upstream:
        """The upstream a resource URI belongs to (the module docstring says how). Never
        found by asking each upstream in turn: one upstream must not see another's URIs."""
        owner = self._listed.get(uri)
        if owner is not None:
            return owner
        for upstream in self.upstreams.values():  # the file's order
            if any(template.matches(uri) for template in self._templates.get(upstream, ())):
                return upstream
        # Only then a link: an upstream naming another's URI in its result does not take it.
        owner = self._linked.get(uri)
        if owner is not None:
            return owner
        resourceful = [u for u in self.upstreams.values() if u.capabilities.resources is not None]
        if len(resourceful) == 1:
            return resourceful[0]
        raise MCPError(
            types.INVALID_PARAMS,
            f"no upstream of the gateway lists the resource {uri[:200]!r}, names it, "
            "or has a template that matches it",
        )

    def _learn(self, upstream: Upstream, pages: Sequence[BaseModel]) -> None:
        """Remember who owns what a listing names (a URI listed by two: the first's)."""
        for page in pages:
            if isinstance(page, types.ListResourcesResult):
                for resource in page.resources:
                    _remember(self._listed, resource.uri, upstream)
            elif isinstance(page, types.ListResourceTemplatesResult):
                for template in page.resource_templates:  # as a completion names it, too
                    _remember(self._listed, template.uri_template, upstream)
                    known = self._templates.setdefault(upstream, [])
                    parsed = _Template.of(template.uri_template)
                    if parsed not in known:
                        known.append(parsed)

    def _learn_links(self, upstream: Upstream, content: Sequence[types.ContentBlock]) -> None:
        for block in content:
            if isinstance(block, types.ResourceLink):
                _remember(self._linked, block.uri, upstream)
            elif isinstance(block, types.EmbeddedResource):
                _remember(self._linked, block.resource.uri, upstream)

    async def _page(self, request: _Listing) -> BaseModel:
        """One page of a listing: the next page of each upstream with more to list."""
        cursor = request.params.cursor if request.params is not None else None
        wanted = [u for u in self.upstreams.values() if _lists(u, request)]
        pending: dict[str, str | None] = (
            {u.name or "": None for u in wanted} if cursor is None else self._decode(cursor)
        )
        asked = [self.upstreams[name] for name in pending if name in self.upstreams]

        async def one(upstream: Upstream) -> BaseModel:
            return await _listed(upstream, type(request), pending[upstream.name or ""])

        pages = await self._each(asked, one)
        following: dict[str, str] = {}
        items: list[Any] = []
        for upstream, page in pages:
            self._learn(upstream, [page])
            name = upstream.name or ""
            if isinstance(page, types.ListPromptsResult):
                items += [
                    p.model_copy(update={"name": f"{name}{SEPARATOR}{p.name}"})
                    for p in page.prompts
                ]
            elif isinstance(page, types.ListResourcesResult):
                items += page.resources
            elif isinstance(page, types.ListResourceTemplatesResult):
                items += page.resource_templates
            next_cursor = getattr(page, "next_cursor", None)
            if isinstance(next_cursor, str):
                following[name] = next_cursor
        field = _FIELDS[type(request)]
        result = _RESULTS[type(request)].model_validate({field: []})
        return result.model_copy(
            update={field: items, "next_cursor": _encode(following) if following else None}
        )

    def _decode(self, cursor: str) -> dict[str, str | None]:
        try:
            pending = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        except (ValueError, UnicodeEncodeError, binascii.Error):
            pending = None
        if not isinstance(pending, dict) or not all(
            name in self.upstreams and isinstance(value, str) for name, value in pending.items()
        ):
            raise MCPError(types.INVALID_PARAMS, "invalid cursor: not one the gateway gave")
        return dict(pending)

    async def _each(
        self, upstreams: Iterable[Upstream], work: Callable[[Upstream], Awaitable[_T]]
    ) -> list[tuple[Upstream, _T]]:
        """`work` on each upstream at once, in order; one that fails is left out with a log
        line, unless all do (then the first failure is raised)."""
        chosen = list(upstreams)
        done: dict[int, _T] = {}
        failed: dict[int, UpstreamError | MCPError] = {}

        async def one(index: int, upstream: Upstream) -> None:
            try:
                done[index] = await work(upstream)
            except (UpstreamError, MCPError) as exc:
                failed[index] = exc

        async with anyio.create_task_group() as group:
            for index, upstream in enumerate(chosen):
                group.start_soon(one, index, upstream)
        if chosen and not done:
            raise failed[min(failed)]
        for index in sorted(failed):
            exc = failed[index]
            code = exc.code if isinstance(exc, UpstreamError) else exc.error.code
            _log.warning(
                "upstream %s: left out of the gateway's answer (%s)", chosen[index].name, code
            )
        return [(chosen[i], done[i]) for i in sorted(done)]


_RESULTS: dict[type[BaseModel], type[BaseModel]] = {
    types.ListPromptsRequest: types.ListPromptsResult,
    types.ListResourcesRequest: types.ListResourcesResult,
    types.ListResourceTemplatesRequest: types.ListResourceTemplatesResult,
}
_FIELDS: dict[type[BaseModel], str] = {
    types.ListPromptsRequest: "prompts",
    types.ListResourcesRequest: "resources",
    types.ListResourceTemplatesRequest: "resource_templates",
}


def _lists(upstream: Upstream, request: _Listing) -> bool:
    caps = upstream.capabilities
    if isinstance(request, types.ListPromptsRequest):
        return caps.prompts is not None
    return caps.resources is not None


async def _listed(upstream: Upstream, request: type[_Listing], cursor: str | None) -> BaseModel:
    """One page of `upstream`'s listing; a method it does not serve (templates, often) lists
    nothing."""
    result = _RESULTS[request]
    try:
        return await upstream.send(
            request(params=types.PaginatedRequestParams(cursor=cursor)), result
        )
    except MCPError as exc:
        if exc.error.code != types.METHOD_NOT_FOUND:
            raise
        return result.model_validate({_FIELDS[request]: []})


async def _every_page(upstream: Upstream, request: type[_Listing]) -> list[BaseModel]:
    pages: list[BaseModel] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await _listed(upstream, request, cursor)
        pages.append(page)
        cursor = getattr(page, "next_cursor", None)
        if cursor is None:
            break
    return pages


def _remember(owners: dict[str, Upstream], uri: str, upstream: Upstream) -> None:
    """`uri` is `upstream`'s, unless another named it first."""
    if uri in owners:
        return
    if len(owners) >= _REMEMBERED:
        del owners[next(iter(owners))]
    owners[uri] = upstream


def _encode(pending: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(pending).encode()).decode("ascii")


@dataclass(frozen=True)
class _Template:
    """A URI template as a pattern: literal characters, and runs of characters but some.

    Matched by walking every way at once (a Thompson simulation), in time linear in the URI
    for a given template: a backtracking regex of an upstream's template could take
    exponential time on a client's URI.
    """

    steps: tuple[tuple[bool, str], ...]  # (a run, the characters it never holds) or a literal

    @classmethod
    def of(cls, template: str) -> _Template:
        steps: list[tuple[bool, str]] = []
        start = 0
        for expression in _EXPRESSION.finditer(template):
            steps += [(False, c) for c in template[start : expression.start()]]
            run = (True, _NEVER[expression[1]])
            if not steps or steps[-1] != run:  # adjacent runs alike are one
                steps.append(run)
            start = expression.end()
        steps += [(False, c) for c in template[start:]]
        return cls(tuple(steps))

    def matches(self, uri: str) -> bool:
        at = self._onward({0})
        for char in uri:
            moved = set()
            for index in at:
                if index < len(self.steps):
                    run, chars = self.steps[index]
                    if run and char not in chars:
                        moved.add(index)
                    elif not run and char == chars:
                        moved.add(index + 1)
            if not moved:
                return False
            at = self._onward(moved)
        return len(self.steps) in at

    def _onward(self, at: set[int]) -> set[int]:
        """`at`, and every step after a run that may match nothing."""
        reached = set(at)
        for index in sorted(at):
            while index < len(self.steps) and self.steps[index][0]:
                index += 1
                reached.add(index)
        return reached


def _any(flags: Any) -> bool | None:
    return True if any(flags) else None


def bad_name(name: str) -> str:
    return (
        "an upstream's name is 1 to 32 lower-case letters, digits and hyphens, starting with "
        f"a letter or digit (it prefixes its tools: <name>{SEPARATOR}<tool>), got {name[:40]!r}"
    )
