"""What every adapter does once its framework has handed it a result and a scope.

Framework-free, so the three adapters stay translations: a result goes through the boundary
(`text_of`) and the one admission path (`admit`); a claim tool is one of `claim_tools(store)`,
described to the framework generically and run by `run_claim_tool`, as every host runs it.
An async framework runs each step on a worker thread (`aside`): serialising and neutralising a
92,212-character result alone takes milliseconds, and a check-in or fetch may wait on S3.

A framework runs a turn's calls one at a time (or at once) and hands each result over as it
comes, so a turn budget is a running total (`RunningTurn`): each adapter names its turn by
what its framework marks a model response with, and the bridge keeps each run's latest turn.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from s3claim.aio import Workers
from s3claim.claim_tools import SEARCH_TOOL_NAME, claim_tools
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, ToolError
from s3claim.events import Event
from s3claim.hosting import (
    admit,
    described,
    has_references,
    refusal_text,
    resolve_arguments,
    run_claim_tool,
    text_of,
)
from s3claim.reuse import Recall, RepeatReads, check_reuse, reused
from s3claim.safejson import loads
from s3claim.scope import Scope
from s3claim.tools import RunContext, Tool
from s3claim.turns import CheckInReason, RunningTurn, refuse_room_share

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


def _ignore(_: Event) -> None:
    pass


MAX_RUNS = 4096
"""Runs whose current turn a bridge remembers (the latest used); an older run's next result
starts a turn afresh."""


class _Turns:
    """Each run's current turn: a new turn key for a scope starts a new running total."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[Scope, tuple[Hashable, RunningTurn]] = OrderedDict()

    def of(self, scope: Scope, turn: Hashable) -> RunningTurn:
        with self._lock:
            held = self._runs.get(scope)
            if held is None or held[0] != turn:
                held = (turn, RunningTurn())
                self._runs[scope] = held
            self._runs.move_to_end(scope)
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
            return held[1]


class Bridge:
    """One adapter's claim check, claim tools and worker pool."""

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
        if isinstance(read_only, str):
            raise TypeError("read_only takes tool names (a list), not one string")
        self.claim_check = claim_check
        self._reuse = check_reuse(reuse)
        self._read_only = frozenset(read_only) | set(self._reuse)
        self._reads: RepeatReads[str] | None = RepeatReads(claim_check) if self._reuse else None
        self.tools = {t.name: t for t in claim_tools(claim_check.store)}
        self._searchable = SEARCH_TOOL_NAME in self.tools  # the marker may then name it
        self._emit = on_event or _ignore
        self._workers = Workers()
        refuse_room_share(claim_check, host="an adapter")
        policies = [claim_check.policy, *claim_check.per_tool.values()]
        self._turns = _Turns() if any(p.turn_budget_chars for p in policies) else None

    def refuse_collisions(self, names: Iterable[str]) -> None:
        """A framework tool named like a claim tool would shadow it, or be shadowed."""
        clash = sorted(set(self.tools).intersection(names))
        if clash:
            raise ConfigurationError(
                f"tools named {clash} would collide with the claim check's own; rename them"
            )

    @staticmethod
    def parameters(tool: Tool) -> dict[str, Any]:
        """The JSON schema of a claim tool's arguments, as every framework takes it."""
        parameters: dict[str, Any] = tool.schema["function"]["parameters"]
        return parameters

    def _context(self, scope: Scope, agent: str) -> RunContext:
        return RunContext(scope=scope, agent=agent, emit=self._emit)

    def _counted(self, text: str, scope: Scope, turn: Hashable) -> str:
        """`text`, counted into its turn's running total: it enters the conversation whole."""
        if self._turns is not None and turn is not None:
            self._turns.of(scope, turn).count(len(text))
        return text

    def recall(
        self,
        arguments: Mapping[str, Any] | str,
        *,
        tool: str,
        scope: Scope,
        agent: str,
        turn: Hashable = None,
    ) -> Recall[str] | None:
        """Before a framework tool runs (`s3claim.reuse`): its earlier answer in `.answer`, to
        give instead of running it (counted into `turn`); or what `admit` takes to remember
        this one. A call of a tool that is not read-only ends reuse in the run. None when
        nothing is reused."""
        if self._reads is None:
            return None
        recall = self._reads.recall(
            scope, tool, arguments, reuse_seconds=self._reuse.get(tool, 0),
            read_only=tool in self._read_only, agent=agent, emit=self._emit,
        )  # fmt: skip
        if recall.answer is not None:
            self._counted(recall.answer, scope, turn)
        return recall

    def admit(
        self,
        value: Any,
        *,
        tool: str,
        scope: Scope,
        agent: str,
        turn: Hashable = None,
        recall: Recall[str] | None = None,
    ) -> str:
        """The text that enters the conversation for a tool's (text or serialisable) result.

        `turn` names the model response that made the call (None: unknown), for a turn
        budget's running total over the results of that turn. With the call's `recall`, the
        result is remembered for a repeat if it is checked in (`s3claim.reuse`).
        """
        try:
            text = text_of(value, tool=tool)
        except ToolError as error:
            return self._counted(refusal_text(error), scope, turn)
        forced: CheckInReason | None = None
        if self._turns is not None and turn is not None:
            policy = self.claim_check.policy_for(tool)
            kept = self.claim_check.preview_chars(text, tool=tool, searchable=self._searchable)
            forced = self._turns.of(scope, turn).take(len(text), policy, kept=kept)
        context = self._context(scope, agent)
        admitted = admit(
            text,
            tool=tool,
            context=context if recall is None else recall.watching(context),
            claim_check=self.claim_check,
            searchable=self._searchable,
            forced=forced,
        )
        if recall is not None and self._reads is not None:
            again = reused(admitted)
            self._reads.keep(recall, again, chars=len(again))
        return admitted

    @property
    def references(self) -> bool:
        """Whether tool arguments may be claim references, resolved before the tool runs."""
        return self.claim_check.references

    def described(self, description: str | None) -> str:
        """A framework tool's description as the model reads it (a line more with references)."""
        return described(description or "", self.claim_check)

    def resolve(
        self, arguments: Mapping[str, Any], *, tool: str, scope: Scope, agent: str
    ) -> Mapping[str, Any]:
        """The arguments a framework tool gets, references resolved (`ToolError` if one fails:
        the tool then does not run, and the host answers with `refusal`)."""
        return resolve_arguments(
            arguments, claim_check=self.claim_check, tool=tool, context=self._context(scope, agent)
        )

    def resolve_json(self, arguments: str, *, tool: str, scope: Scope, agent: str) -> str:
        """`resolve` for arguments as JSON text; text that holds no reference (or is not a
        JSON object: the framework says what is wrong with it) passes as it came."""
        if not self.references:
            return arguments
        try:
            parsed = loads(arguments)
        except ValueError:
            return arguments
        if not isinstance(parsed, dict) or not has_references(parsed):
            return arguments
        resolved = self.resolve(parsed, tool=tool, scope=scope, agent=agent)
        return json.dumps(resolved, ensure_ascii=False)

    def refusal(self, error: ToolError, *, scope: Scope, turn: Hashable = None) -> str:
        """What the model reads when a reference could not be resolved (counted into `turn`)."""
        return self._counted(refusal_text(error), scope, turn)

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        scope: Scope,
        agent: str,
        turn: Hashable = None,
    ) -> str:
        """A claim tool's answer, or its error rendered for the model; never checked in, and
        counted into `turn` (a window read in a turn takes its room like any result)."""
        text = run_claim_tool(self.tools[name], arguments, self._context(scope, agent)).text
        return self._counted(text, scope, turn)

    async def aside(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """`function` (one of the bridge's steps) on a worker thread, for an async framework:
        the event loop stays free while a result is serialised, checked in or read."""
        return await self._workers.run(function, *args, **kwargs)
