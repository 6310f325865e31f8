"""Hosting the claim check: the one pipeline from a tool call to what the model reads.

A host runs an agent's tools and hands the model their results: s3claim's `AgentRunner`,
the framework adapters (`s3claim.integrations`), the MCP proxy and each endpoint of a
gateway, or one of your own. Every one of them calls one `Host`, so a claim check behaves
the same whoever hosts it, and each knob (references, the turn budget, the room's share,
repeat reads) is wired once, here:

    host = Host(claim_check, on_event=print)
    call = host.begin("read_contract", arguments, host.context(scope, agent="counsel"))
    if call.answer is None:                  # else the host answered: the tool does not run
        try:
            answer = host.finish(call, read_contract(**call.arguments))
        except Exception as exc:
            answer = host.failed(call, exc)
    # `host.run(...)` takes these steps for a tool you can call in-process.

`begin` runs a claim tool (`fetch_result`, `search_result`: `s3claim.claim_tools`) itself;
answers a repeat read by reference to its earlier result (`s3claim.reuse`; a host that
trims its conversation says which results left it, `left_conversation`); and resolves claim
references (`{"$claim": handle}`, when the `ClaimCheck` allows them: `s3claim.references`) in
the run's scope, bounded per call. A reference that cannot be redeemed is the refusal the
model reads, and the tool does not run. `finish` takes the result through the boundary
(`result_text` for an s3claim `Tool`, whose declared type is known; `text_of` for another
framework's), then admission: the one path into the conversation, checking the result in at
its threshold, for its turn's budget or past its share of the room (`s3claim.turns`), and
falling back, never failing the run, when the store does. A call of a tool that is not
read-only ends reuse in its run once it has run. Every step emits the run's events and no
store fault escapes into the agent's loop.

docs/adapters.md shows a host of your own; tests/hosts/ runs one suite through every host.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import s3claim.wording as wording
from s3claim._boundary import folded_view, neutralise, refusal_text, result_text, text_of
from s3claim.claim_tools import SEARCH_TOOL_NAME, claim_tools
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, ToolError
from s3claim.events import (
    Event,
    ToolFailed,
    ToolResultStored,
    ToolResultStoreFailed,
    ToolResultTruncated,
    observing,
)
from s3claim.references import resolve
from s3claim.reuse import Recall, RepeatReads, Shown, check_reuse
from s3claim.safejson import MAX_DEPTH, JSONTooDeepError, loads
from s3claim.scope import Scope
from s3claim.telemetry import Operation, check_in_operation, names
from s3claim.tools import RunContext, Tool
from s3claim.turns import CheckInReason, RunningTurn, TurnResult, plan_turn, refuse_room_share

__all__ = [
    "Call",
    "Host",
    "ToolAnswer",
    "folded_view",
    "neutralise",
    "refusal_text",
    "result_text",
    "text_of",
    "truncate",
]

MAX_RUNS = 4096
"""Runs whose current turn a host remembers (the latest used); an older run's next result
starts a turn afresh."""


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a host hands back for one tool call: the text, and whether it is an error result."""

    text: str
    is_error: bool = False

    def __repr__(self) -> str:  # the text can be tool content: never in a repr
        return f"ToolAnswer(chars={len(self.text)}, is_error={self.is_error})"


@dataclass(eq=False)
class Call:
    """One tool call on its way through a host (`Host.begin`).

    `answer` is set when the host answered it itself (a claim tool, a repeat read, a refusal
    of its references): the tool does not run. Otherwise the tool runs with `arguments`
    (references resolved, in the form they came: a mapping, or a JSON text), and its value
    goes to `Host.finish`, or its exception to `Host.failed`.
    """

    tool: str
    context: RunContext
    arguments: Mapping[str, Any] | str
    answer: ToolAnswer | None = None
    turn: Hashable = None
    _spec: Tool | None = field(default=None, repr=False)
    _recall: Recall | None = field(default=None, repr=False)
    _writes: bool = False

    def __repr__(self) -> str:  # arguments may be content: never in a repr
        return f"Call(tool={self.tool!r}, answered={self.answer is not None})"


class Host:
    """The tool-call pipeline of one host: a claim check, its claim tools, its knobs.

    `limit`: where an oversized result is cut without a working claim check (the runner's
    `max_tool_result_chars`; by default the tool's policy threshold). `reuse`: tool name to
    the seconds its checked-in result answers a repeat call (a tool named there is
    read-only); `read_only`: other tools whose calls change nothing. `conversation`: whether
    the host sees the conversation, so a policy's `max_share_of_room` can be honoured (with
    `window_chars`, the model's context window, when no policy names one); a host that does
    not refuses such a policy. `searchable`: whether the agent is offered `search_result`
    (by default, when the store can be searched: the host offers its claim tools, `tools`).
    `name` says which host in a refusal.
    """

    def __init__(
        self,
        claim_check: ClaimCheck | None,
        *,
        on_event: Callable[[Event], None] | None = None,
        limit: int | None = None,
        reuse: Mapping[str, int] | None = None,
        read_only: Iterable[str] = (),
        conversation: bool = False,
        window_chars: int | None = None,
        searchable: bool | None = None,
        name: str = "this host",
    ) -> None:
        if limit is not None and limit < 1:
            raise ConfigurationError(f"limit must be positive, got {limit}")
        if claim_check is None and limit is None:
            raise ConfigurationError("a host without a claim check needs a limit")
        if isinstance(read_only, str):
            raise TypeError("read_only takes tool names (a list), not one string")
        policies = (
            [] if claim_check is None else [claim_check.policy, *claim_check.per_tool.values()]
        )
        if claim_check is not None and not conversation:
            refuse_room_share(claim_check, host=name)
        for each in policies:
            if (
                each.max_share_of_room is not None
                and (each.context_window_chars or window_chars) is None
            ):
                raise ConfigurationError(
                    "a policy sets max_share_of_room, but neither it (context_window_chars) nor "
                    "the provider (a context_window_chars attribute) says how large the model's "
                    "context window is"
                )
        self.claim_check = claim_check
        self.limit = limit
        self.window_chars = window_chars
        self.reuse = check_reuse(reuse)
        self.read_only = frozenset(read_only) | set(self.reuse)
        self.tools: dict[str, Tool] = (
            {} if claim_check is None else {t.name: t for t in claim_tools(claim_check.store)}
        )
        self.searchable = SEARCH_TOOL_NAME in self.tools if searchable is None else searchable
        """Whether the agent has `search_result` for the store, so a marker may name it."""
        self.by_turn = any(
            p.turn_budget_chars is not None or p.max_share_of_room is not None for p in policies
        )
        """Whether a turn's results are admitted together (`finish_turn`): a policy decides
        by the turn."""
        self._on_event = on_event
        self._namespace = ""
        self._reads: RepeatReads | None = (
            RepeatReads(claim_check) if claim_check is not None and self.reuse else None
        )
        budgeted = any(p.turn_budget_chars is not None for p in policies)
        self._turns: _Turns | None = _Turns() if budgeted else None

    def beside(
        self, namespace: str, *, reuse: Mapping[str, int], read_only: Iterable[str] = ()
    ) -> Host:
        """This host for tools named without `namespace` (a gateway endpoint of one upstream,
        whose `read` is the gateway's `{namespace}read`): the same claim check, events, turns
        and repeat reads, each remembered by the qualified name, so two upstreams' tools of one
        name never meet, and a write through either ends reuse in the run on both."""
        other = _copy(self)
        other._namespace = self._namespace + namespace
        other.reuse = check_reuse(reuse)
        other.read_only = frozenset(read_only) | set(other.reuse)
        if other._reads is None and other.reuse and self.claim_check is not None:
            other._reads = RepeatReads(self.claim_check)
        return other

    def context(self, scope: Scope, *, agent: str) -> RunContext:
        """A run context emitting to this host's `on_event`."""
        return RunContext(scope=scope, agent=agent, emit=self._emit)

    def _emit(self, event: Event) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def described(self, description: str | None) -> str:
        """A tool's description as the model reads it: one line more when references resolve."""
        description = description or ""
        claim_check = self.claim_check
        if claim_check is None or not claim_check.references:
            return description
        said = wording.REFERENCE_DESCRIPTION
        if claim_check.link_base_url is not None:
            said = f"{said} {wording.REFERENCE_LINK_DESCRIPTION}"
        return f"{description}\n\n{said}" if description else said

    def refuse_collisions(self, names: Iterable[str]) -> None:
        """A tool of the host's named like a claim tool would shadow it, or be shadowed."""
        clash = sorted(set(self.tools).intersection(names))
        if clash:
            raise ConfigurationError(
                f"tools named {clash} would collide with the claim check's own; rename them"
            )

    # -- the pipeline -------------------------------------------------------------------

    def begin(
        self,
        tool: str | Tool,
        arguments: Mapping[str, Any] | str,
        context: RunContext,
        *,
        turn: Hashable = None,
        read_only: bool | None = None,
        call_id: str | None = None,
        whole: bool = False,
    ) -> Call:
        """Before the tool runs: a claim tool's answer, a repeat read's, or a refusal of the
        call's references (then `answer` is set and the tool does not run); else the call,
        its references resolved. `turn` names the model response that made the call (for a
        turn budget's running total; None: a turn of its own). `read_only` overrides what
        the host knows of the tool (an MCP upstream's listing says it). `call_id`: the call's
        id in the conversation, where the host has one, so a repeat of it can name it.
        `whole`: the call's run may span conversations (the host cannot tell one from
        another), so a repeat gets the earlier text again, not a reference to it."""
        context = replace(context, emit=observing(context.emit))  # one observation an event
        spec = tool if isinstance(tool, Tool) else None
        name = tool.name if isinstance(tool, Tool) else tool
        claim_tool = self.tools.get(name) if spec is None else None if spec.check_in else spec
        if claim_tool is not None:
            call = Call(name, context, arguments, turn=turn, _spec=spec)
            return self._answered(call, self._claim_tool(claim_tool, arguments, context))
        if read_only is None:
            read_only = spec.read_only if spec is not None else name in self.read_only
        seconds = spec.reuse_seconds if spec is not None else self.reuse.get(name, 0)
        # Known by its qualified name from here on (events, policy, repeat reads): a gateway
        # endpoint's `read` is the gateway's `{upstream}__read`, whichever door it came by.
        call = Call(self._namespace + name, context, arguments, turn=turn, _spec=spec)
        call._writes = not read_only
        reads = self._reads
        if reads is not None and read_only:
            recall = reads.recall(
                context.scope, call.tool, arguments, reuse_seconds=seconds,
                agent=context.agent, emit=context.emit, call_id=call_id, called=name,
                whole=whole,
            )  # fmt: skip
            if recall.answer is not None:  # the earlier result: the tool does not run
                return self._answered(call, ToolAnswer(recall.answer))
            call._recall = recall
        try:
            call.arguments = self._resolve(arguments, tool=call.tool, context=context)
        except ToolError as error:  # the tool does not run
            return self._answered(call, ToolAnswer(refusal_text(error), is_error=True))
        return call

    def finish(self, call: Call, value: Any, *, keep: bool = True) -> ToolAnswer:
        """After the tool returned `value`: the boundary, then admission (`admit`). What the
        model reads. `keep=False`: the answer is not all the model reads of the result (a
        framework adds content beside it), so a repeat cannot be answered by it."""
        text = self._boundary(call, value)
        if isinstance(text, ToolAnswer):
            return text
        return self.admit(call, text, keep=keep)

    def admit(self, call: Call, text: str, *, keep: bool = True) -> ToolAnswer:
        """`finish` for a result whose text has passed the boundary already (an MCP result's
        text blocks, joined by the proxy): checked in when oversized, or when its turn's
        running total passes the budget (`RunningTurn`)."""
        return self._admitted(call, text, self._running(call, text), keep=keep)

    def untouched(self, call: Call) -> None:
        """The tool ran and its result goes to the model as it came (images, a framework's
        command): nothing is admitted, but a call that may write still ends reuse."""
        self._written(call)

    def _admitted(
        self, call: Call, text: str, forced: CheckInReason | None, *, keep: bool = True
    ) -> ToolAnswer:
        """Admission, the answer kept for a repeat when it was checked in, and the run's
        reuse ended when the call may have written."""
        if call.answer is not None:
            raise ValueError("this call was answered by the host: its tool did not run")
        recall, context = call._recall, call.context
        admitted = self._admit(
            text,
            tool=call.tool,
            context=context if recall is None else recall.watching(context),
            forced=forced,
        )
        if keep and recall is not None and self._reads is not None:
            self._reads.keep(recall, admitted)
        self._written(call)
        return ToolAnswer(admitted)

    def failed(self, call: Call, exc: Exception) -> ToolAnswer:
        """After the tool raised `exc`: the error result the model reads (a `ToolError` as
        it said, neutralised unless its words are s3claim's; anything else `tool_failed`,
        naming only the exception's type), counted into its turn."""
        self._written(call)
        answer = _failure_answer(exc, tool=call.tool, context=call.context)
        self._count(call, len(answer.text))
        return answer

    def run(
        self,
        tool: str | Tool,
        arguments: Mapping[str, Any] | str,
        context: RunContext,
        *,
        execute: Callable[[Mapping[str, Any] | str], Any] | None = None,
        turn: Hashable = None,
        call_id: str | None = None,
    ) -> ToolAnswer:
        """Every step for one call of a tool this process runs: an s3claim `Tool` (run with
        its context), a claim tool, or `execute(arguments)` for another."""
        call = self.begin(tool, arguments, context, turn=turn, call_id=call_id)
        if call.answer is not None:
            return call.answer
        try:
            if call._spec is not None:
                arguments = call.arguments
                if isinstance(arguments, str):
                    arguments = _json_object(arguments)
                value = call._spec.call(arguments, call.context)
            elif execute is not None:
                value = execute(call.arguments)
            else:
                raise TypeError(f"Host.run: {call.tool!r} is no claim tool: pass execute=")
        except Exception as exc:  # the model's to work around, never the run's end
            return self.failed(call, exc)
        return self.finish(call, value)

    def finish_turn(self, ran: Sequence[tuple[Call, Any]], *, used_chars: int) -> list[ToolAnswer]:
        """A whole turn at once, for a host that sees it whole (the runner): each call with its
        tool's value (or the exception it raised; ignored for a call the host answered), its
        results admitted by one plan (`s3claim.turns.plan_turn`, largest first), a pure
        function of their sizes, so a resumed turn chooses alike. `used_chars`: the
        conversation's characters before the turn."""
        texts: list[str | ToolAnswer] = []
        for call, value in ran:
            if call.answer is not None:
                texts.append(call.answer)
            elif isinstance(value, Exception):
                texts.append(self.failed(call, value))
            else:
                texts.append(self._boundary(call, value))
        claim_check = self.claim_check
        results = []
        for (call, _), t in zip(ran, texts, strict=True):
            if isinstance(t, ToolAnswer):
                results.append(TurnResult(len(t.text)))
            elif claim_check is None:
                results.append(TurnResult(len(t)))
            else:
                policy = claim_check.policy_for(call.tool)
                kept = claim_check.preview_chars(t, tool=call.tool, searchable=self.searchable)
                results.append(TurnResult(len(t), policy, kept=kept))
        plan = plan_turn(results, used_chars=used_chars, window_chars=self.window_chars)
        return [
            t if isinstance(t, ToolAnswer) else self._admitted(call, t, plan.get(index))
            for index, ((call, _), t) in enumerate(zip(ran, texts, strict=True))
        ]

    def end(self, scope: Scope) -> None:
        """The run is over (a host that knows when, as the runner does): forget its reads."""
        if self._reads is not None:
            self._reads.end(scope)

    def left_conversation(self, scope: Scope, handles: Iterable[str]) -> None:
        """For a host that trims its conversation: the results checked in as `handles` are no
        longer in `scope`'s, so a repeat of their calls gets their text whole again (the next
        one is answered by reference to that call). A host that never removes or replaces a
        result it placed (the runner) never calls it."""
        if self._reads is not None:
            self._reads.left_conversation(scope, handles)

    def restore_reads(
        self,
        scope: Scope,
        calls: Iterable[Shown],
        *,
        checked_in: Callable[[str, str], float | None],
    ) -> None:
        """A resumed run's reads, as its conversation shows them (`RepeatReads.restore`)."""
        if self._reads is not None:
            self._reads.restore(scope, calls, checked_in=checked_in)

    @property
    def remembers_reads(self) -> bool:
        return self._reads is not None

    # -- the steps ----------------------------------------------------------------------

    def _answered(self, call: Call, answer: ToolAnswer) -> Call:
        """`call`, answered by the host: the answer counted into its turn."""
        call.answer = answer
        self._count(call, len(answer.text))
        return call

    def _count(self, call: Call, chars: int) -> None:
        """A text that enters the conversation whole (a window, a repeat, a refusal): it takes
        its room in its turn all the same."""
        if self._turns is not None and call.turn is not None:
            self._turns.of(call.context.scope, call.turn).count(chars)

    def _running(self, call: Call, text: str) -> CheckInReason | None:
        """Why a result is checked in by its turn's running total (`RunningTurn`; a turn of
        its own when the call names none), counting it in as what it will leave in the
        conversation (measured exactly: `ClaimCheck.preview_chars`)."""
        claim_check = self.claim_check
        if self._turns is None or claim_check is None:
            return None
        scope = call.context.scope
        turn = RunningTurn() if call.turn is None else self._turns.of(scope, call.turn)
        policy = claim_check.policy_for(call.tool)
        kept = claim_check.preview_chars(text, tool=call.tool, searchable=self.searchable)
        return turn.take(len(text), policy, kept=kept)

    def _written(self, call: Call) -> None:
        """A call that may write has run: reuse ends in its run, on every instance."""
        if call._writes and self._reads is not None:
            self._reads.written(call.context.scope)

    def _claim_tool(
        self, tool: Tool, arguments: Mapping[str, Any] | str, context: RunContext
    ) -> ToolAnswer:
        """A claim tool's answer; never raises for anything the model sent or a store did,
        and never checked in: a window is already as small as it may be."""
        try:
            if isinstance(arguments, str):
                arguments = _json_object(arguments)
            return ToolAnswer(str(tool.call(arguments, context)))
        except Exception as exc:
            return _failure_answer(exc, tool=tool.name, context=context)

    def _boundary(self, call: Call, value: Any) -> str | ToolAnswer:
        """The result as safe text (`s3claim._boundary`), or the refusal the model reads."""
        try:
            if call._spec is not None:
                return result_text(call._spec, value)
            return text_of(value, tool=call.tool)
        except ToolError as error:
            self._written(call)
            answer = ToolAnswer(refusal_text(error), is_error=True)
            self._count(call, len(answer.text))
            return answer

    def _resolve(
        self, arguments: Mapping[str, Any] | str, *, tool: str, context: RunContext
    ) -> Mapping[str, Any] | str:
        """The arguments the tool gets: as they came when references are off (the spec's
        behaviour) or hold none, else with every reference resolved (`ToolError` when one
        fails). A JSON text is answered as JSON text; one that is no JSON object passes, for
        its framework to say what is wrong with it."""
        return resolve(arguments, claim_check=self.claim_check, context=context, tool=tool)

    def _admit(
        self, text: str, *, tool: str, context: RunContext, forced: CheckInReason | None
    ) -> str:
        """What the conversation receives for `text`, a result past the boundary: the one
        path in, checking it in when it is oversized (or `forced`: `turn_budget`, `room`),
        and falling back to the text cut at the limit, never failing the run, when the store
        fails."""
        claim_check = self.claim_check
        limit = self.limit
        if limit is None:
            assert claim_check is not None
            limit = claim_check.policy_for(tool).threshold_chars
        owner = claim_check.store if claim_check is not None else None
        with check_in_operation(owner, context.scope, tool=tool) as op:
            op.set(chars_total=len(text))
            forced = None if forced == "threshold" else forced
            if forced is not None and claim_check is not None:
                op.set(check_in_reason=forced)
            admitted = self._check_in(text, tool, context, limit, forced, op)
            if op.outcome is None:  # not checked in: passed or cut, without a claim check
                op.outcome = "passed" if admitted is text else "truncated"
                op.set(chars_shown=len(admitted))
            elif op.outcome == "store_failed":
                op.set(chars_shown=len(admitted))
            return admitted

    def _check_in(
        self,
        text: str,
        tool: str,
        context: RunContext,
        limit: int,
        forced: CheckInReason | None,
        op: Operation,
    ) -> str:
        claim_check = self.claim_check
        if claim_check is None:
            if len(text) <= limit:
                return text
            context.emit(
                ToolResultTruncated(
                    tool=tool, agent=context.agent, size_chars=len(text), kept_chars=limit
                )
            )
            return truncate(text, limit)
        try:
            checked = claim_check.check_in(
                text, tool=tool, scope=context.scope, searchable=self.searchable,
                force=forced is not None,
            )  # fmt: skip
        except Exception as exc:  # a store fault degrades the result, never the run
            op.outcome = "store_failed"
            op.attributes[names.ERROR_TYPE] = type(exc).__name__
            context.emit(
                ToolResultStoreFailed(
                    tool=tool,
                    agent=context.agent,
                    size_chars=len(text),
                    kept_chars=min(len(text), limit),
                    error=type(exc).__name__,
                )
            )
            return text if len(text) <= limit else truncate(text, limit)
        if checked.handle is not None:
            context.emit(
                ToolResultStored(
                    tool=tool,
                    agent=context.agent,
                    handle=checked.handle,
                    size_chars=checked.total_chars,
                    inline_chars=len(checked.text),
                    reason=forced or "threshold",
                )
            )
        return checked.text


def _copy(host: Host) -> Host:
    """A shallow copy of `host`: its state (reads, turns) shared."""
    other = Host.__new__(Host)
    other.__dict__.update(host.__dict__)
    return other


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


# -- what a failure tells the model ---------------------------------------------------------


def truncate(text: str, limit: int) -> str:
    """The behaviour without a claim check: keep `limit` characters, and say the rest is gone."""
    return f"{text[:limit]}\n\n{wording.truncation(total_chars=len(text), kept_chars=limit)}"


def _failure_answer(exc: Exception, *, tool: str, context: RunContext) -> ToolAnswer:
    """The error result for a tool call that failed: what every host tells the model.

    A `ToolError`'s message may quote the model's own arguments, so it is neutralised like a
    result (unless its words are s3claim's own, `own_words`); any other exception is a
    `tool_failed` naming only the exception's type.
    """
    if isinstance(exc, ToolError):
        return ToolAnswer(refusal_text(exc), is_error=True)
    context.emit(ToolFailed(tool=tool, agent=context.agent, error=type(exc).__name__))
    failed = ToolError("tool_failed", wording.tool_failed_message(type(exc).__name__))
    return ToolAnswer(failed.render(), is_error=True)


def _json_object(arguments: str) -> dict[str, Any]:
    try:
        parsed = loads(arguments or "{}")
    except JSONTooDeepError:
        raise ToolError(
            "invalid_arguments", f"the arguments nest deeper than {MAX_DEPTH} levels"
        ) from None
    except json.JSONDecodeError:
        raise ToolError("invalid_arguments", "the arguments are not valid JSON") from None
    if not isinstance(parsed, dict):
        raise ToolError("invalid_arguments", "the arguments must be a JSON object")
    return parsed
