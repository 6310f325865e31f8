"""What the three adapters share: the `Host` (`s3claim.hosting`), the scope from a framework's
context, and a worker pool.

Framework-free, so the adapters stay translations: each hands its framework's tool call to
the host before the tool runs (`begin`) and its result after (`finish`), and answers the
claim tools with what the host says. An async framework runs each step on a worker thread
(`aside`): serialising and neutralising a 92,212-character result alone takes milliseconds,
and a check-in or fetch may wait on S3. Each adapter names a turn (for a turn budget's
running total) by what its framework marks a model response with.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from s3claim.aio import Workers
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError
from s3claim.events import Event
from s3claim.hosting import Call, Host
from s3claim.scope import Scope
from s3claim.tools import Tool

__all__ = ["Bridge", "field_of", "scope_of"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def field_of(context: object, name: str) -> Any:
    """`context.name` or `context[name]`, whichever the user's context object has; else None."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


def scope_of(tenant: object, run: object, *, tenant_hint: str, run_hint: str) -> Scope:
    """A Scope from the framework's context, or an error saying what to provide."""
    if tenant is None:
        raise ConfigurationError(f"no tenant for the claim check: {tenant_hint}")
    if run is None:
        raise ConfigurationError(f"no run for the claim check: {run_hint}")
    try:
        return Scope(tenant, run)  # type: ignore[arg-type]  # validated here, by pydantic
    except ValidationError:
        raise ConfigurationError(
            f"tenant ({type(tenant).__name__}) and run ({type(run).__name__}) must be strings "
            "of 1 to 1,024 characters"
        ) from None


class Bridge:
    """One adapter's host and worker pool."""

    def __init__(
        self,
        claim_check: ClaimCheck,
        *,
        on_event: Callable[[Event], None] | None = None,
        reuse: Mapping[str, int] | None = None,
        read_only: Iterable[str] = (),
    ) -> None:
        """`reuse`: tool name to the seconds its checked-in result answers a repeat call (a
        tool named there is read-only); `read_only`: other tools whose calls change nothing,
        so they do not end reuse (`s3claim.reuse`). Without `reuse`, nothing is remembered."""
        if not isinstance(claim_check, ClaimCheck):
            raise TypeError(f"expected a ClaimCheck, got {type(claim_check).__name__}")
        self.host = Host(
            claim_check, on_event=on_event, reuse=reuse, read_only=read_only, name="an adapter"
        )
        self.tools = self.host.tools
        self._workers = Workers()

    @staticmethod
    def parameters(tool: Tool) -> dict[str, Any]:
        """The JSON schema of a claim tool's arguments, as every framework takes it."""
        parameters: dict[str, Any] = tool.schema["function"]["parameters"]
        return parameters

    @property
    def references(self) -> bool:
        """Whether tool arguments may be claim references, resolved before the tool runs."""
        claim_check = self.host.claim_check
        return claim_check is not None and claim_check.references

    def begin(
        self,
        tool: str,
        arguments: Mapping[str, Any] | str,
        *,
        scope: Scope,
        agent: str,
        turn: Hashable = None,
        call_id: str | None = None,
    ) -> Call:
        """`Host.begin` for a framework's call: answered (a claim tool, a repeat, a refusal),
        or to run with `call.arguments`. `call_id`: the framework's id of the call."""
        context = self.host.context(scope, agent=agent)
        return self.host.begin(tool, arguments, context, turn=turn, call_id=call_id)

    def finish(self, call: Call, value: Any, *, keep: bool = True) -> str:
        """What enters the conversation for a tool's (text or serialisable) result."""
        return self.host.finish(call, value, keep=keep).text

    def untouched(self, call: Call) -> None:
        """The tool's result goes to the model as it is (images, a framework's command)."""
        self.host.untouched(call)

    async def aside(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`function` (one of the host's steps) on a worker thread, for an async framework:
        the event loop stays free while a result is serialised, checked in or read."""
        return await self._workers.run(function, *args, **kwargs)
