"""Gateway: several upstream servers behind the one surface the proxy fronts.

`ClaimCheckProxy` fronts an upstream: one `Upstream`, or a `Gateway` of several with the same
surface (capabilities, server_info, instructions, timeout, downstream, list_tools, send,
notify, close). The gateway routes each request to the upstream it belongs to, so the proxy,
its store and its bounds are the same for one server or many:

- Tools and prompts are named `<upstream>__<name>` (`fs__read_text_file`); a call, a
  `prompts/get` and a prompt's completion go to the upstream of the prefix, without it.
- Resources keep their URIs; whose a URI is, the rule below says.
- A listing is every upstream's, in the file's order. The gateway's cursor holds each
  upstream's own, so every page asks each upstream that has more for its next page.
- Capabilities are the union, the server's identity is the gateway's own, and the
  instructions are each upstream's, labelled by its name (the proxy neutralises them).

Each upstream is its own `Upstream`: one that dies is restarted by its next call while the
others serve on. What an upstream sends on its own names it (`Upstream.name`), so the relay
gives it to the client with calls in flight to that upstream.

Whose a resource URI is (`Gateway._owner`); no upstream is ever asked whether it is its own,
as that would show one upstream another's URIs:

1. Listed: the upstream that listed it (a resource; a template's string, as a completion
   names it). Each upstream's listings are read at start, and again at every listing through
   the gateway; at start, a URI two list is refused. Later, the first to list a URI keeps it:
   another listing it too is not its owner. Every upstream's listings are looked in before
   any template, so no template takes a listed URI, whatever the file's order.
2. Each upstream's listings are remembered apart: the newest `_REMEMBERED` URIs it listed
   (its own oldest forgotten first, never another's), so one that floods its listings
   forgets only its own. What it forgot is kept in a filter that never forgets a URI (and may,
   rarely, take one never listed for one that was): a URI an upstream may have listed and
   forgot goes to no other upstream: not by another's listing (that one does not take it, as
   in 1), nor by a template or a link. The URI is refused, unless the rest of the rule (3)
   gives it to that same upstream. A wrong guess of the filter refuses a URI; it never moves
   one.
3. Else the first upstream, in the file's order, whose resource template matches it; else the
   one that named it in a result (a resource link, an embedded resource), remembered apart
   for each upstream as its listings are (the first to name a URI keeps it; a link is the
   weakest claim, under every listing and template); else the one upstream with resources;
   else it is unknown.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
import secrets
from collections import OrderedDict
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
_REMEMBERED = 10_000  # URIs of each kind remembered of each upstream: its oldest forgotten first
_FORGOTTEN_BITS = 1 << 20  # the filter of what one upstream's listings forgot: 128 KiB
_PROBES = 4  # bits of the filter a URI sets: 1% wrong guesses at about 100,000 forgotten
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
        # What each upstream listed (resources, template strings), and named in its results.
        self._key = secrets.token_bytes(16)  # of the URIs' digests: none can be aimed at
        self._listed = {u: _Named(keeps_forgotten=True) for u in upstreams}
        self._linked = {u: _Named(keeps_forgotten=False) for u in upstreams}
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
        digest = self._digest(uri)
        for upstream, listed in self._listed.items():  # every listing before any template
            if digest in listed:
                return upstream
        owner = self._unlisted(uri, digest)
        forgot = [u for u, listed in self._listed.items() if listed.forgot(digest)]
        if forgot and forgot != [owner]:
            names = " or ".join(u.name or "" for u in forgot)
            raise MCPError(
                types.INVALID_PARAMS,
                f"the resource {uri[:200]!r} may be one that upstream {names} listed and the "
                f"gateway no longer remembers (it keeps the newest {_REMEMBERED:,} URIs each "
                "upstream lists), so it goes to no other: read it at that upstream's own "
                "endpoint, or give it a proxy of its own",
            )
        if owner is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"no upstream of the gateway lists the resource {uri[:200]!r}, names it, "
                "or has a template that matches it",
            )
        return owner

    def _unlisted(self, uri: str, digest: bytes) -> Upstream | None:
        """The owner of a URI no upstream's listing holds: by template, link, or the one."""
        for upstream in self.upstreams.values():  # the file's order
            if any(template.matches(uri) for template in self._templates.get(upstream, ())):
                return upstream
        # Only then a link: an upstream naming another's URI in its result does not take it.
        for upstream, linked in self._linked.items():
            if digest in linked:
                return upstream
        resourceful = [u for u in self.upstreams.values() if u.capabilities.resources is not None]
        return resourceful[0] if len(resourceful) == 1 else None

    def _learn(self, upstream: Upstream, pages: Sequence[BaseModel]) -> None:
        """Remember who owns what a listing names (a URI listed by two: the first's)."""
        for page in pages:
            if isinstance(page, types.ListResourcesResult):
                for resource in page.resources:
                    self._remember(self._listed, upstream, resource.uri)
            elif isinstance(page, types.ListResourceTemplatesResult):
                for template in page.resource_templates:  # as a completion names it, too
                    self._remember(self._listed, upstream, template.uri_template)
                    known = self._templates.setdefault(upstream, [])
                    parsed = _Template.of(template.uri_template)
                    if parsed not in known:
                        known.append(parsed)

    def _learn_links(self, upstream: Upstream, content: Sequence[types.ContentBlock]) -> None:
        for block in content:
            if isinstance(block, types.ResourceLink):
                self._remember(self._linked, upstream, block.uri)
            elif isinstance(block, types.EmbeddedResource):
                self._remember(self._linked, upstream, block.resource.uri)

    def _remember(self, kind: Mapping[Upstream, _Named], upstream: Upstream, uri: str) -> None:
        """`uri` is `upstream`'s, of this kind, unless another named it first: it holds the
        URI, or may have forgotten it."""
        digest, own = self._digest(uri), kind[upstream]
        if digest not in own and any(
            digest in named or named.forgot(digest)
            for other, named in kind.items()
            if other is not upstream
        ):
            return
        own.add(digest)

    def _digest(self, uri: str) -> bytes:
        """`uri` as it is remembered: a keyed digest, the same size for any URI."""
        data = uri.encode("utf-8", "surrogatepass")  # a JSON string may hold a lone surrogate
        return hashlib.blake2b(data, digest_size=16, key=self._key).digest()

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


class _Named:
    """The URIs one upstream named of one kind (listed, or linked in results), as digests: the
    newest `_REMEMBERED` exactly, oldest forgotten first. With `keeps_forgotten`, those it
    forgot as well, in a Bloom filter (made at the first it forgets): `forgot` is true of
    every URI it forgot, and of a few it never named, never false of one it forgot."""

    def __init__(self, *, keeps_forgotten: bool) -> None:
        self._newest: OrderedDict[bytes, None] = OrderedDict()
        self._keeps_forgotten = keeps_forgotten
        self._forgotten: bytearray | None = None

    def __contains__(self, digest: bytes) -> bool:
        return digest in self._newest

    def add(self, digest: bytes) -> None:
        """`digest` remembered as the newest (named again: the newest again)."""
        if digest in self._newest:
            self._newest.move_to_end(digest)
            return
        if len(self._newest) >= _REMEMBERED:
            oldest, _ = self._newest.popitem(last=False)
            if self._keeps_forgotten:
                if self._forgotten is None:
                    self._forgotten = bytearray(_FORGOTTEN_BITS // 8)
                for bit in _bits(oldest):
                    self._forgotten[bit >> 3] |= 1 << (bit & 7)
        self._newest[digest] = None

    def forgot(self, digest: bytes) -> bool:
        """Whether this upstream may have named `digest` and forgot it."""
        forgotten = self._forgotten
        if forgotten is None:
            return False
        return all(forgotten[bit >> 3] >> (bit & 7) & 1 for bit in _bits(digest))


def _bits(digest: bytes) -> list[int]:
    """The filter's bits of a URI: its keyed digest, cut in `_PROBES` parts."""
    step = len(digest) // _PROBES
    return [
        int.from_bytes(digest[i * step : (i + 1) * step], "big") % _FORGOTTEN_BITS
        for i in range(_PROBES)
    ]


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
