"""AgentRunner: the loop that calls the model, runs tools and checks results in.

With a journal the loop records the run after every model call, before that reply's tools
run: the reply (the expensive, unrepeatable part) is kept, with the results of the turn
before. So a crash loses at most the step in flight, and `resume` runs again only the tool
calls whose results were not recorded (at least once, never zero times). One PUT per turn.

A turn's results are admitted one by one, each on its own; with a turn budget or a share of
the room (`s3claim.turns`) a turn's tools all run first, then its results are admitted
together, by a plan that is a pure function of their sizes, so a resumed turn chooses alike.

docs/journal.md has the journal and resuming; docs/reading.md the turn's knobs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from s3claim.claim_tools import FETCH_TOOL_NAME, SEARCH_TOOL_NAME
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError, RunConflictError, ToolError
from s3claim.events import Event, ModelCalled, RunFinished, RunResumed
from s3claim.hosting import Call, Host, ToolAnswer, neutralise
from s3claim.journal import RunJournal, RunRecord, RunStatus
from s3claim.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    conversation_chars,
)
from s3claim.providers import Provider
from s3claim.scope import Scope
from s3claim.telemetry import agent_run_span, tool_call_span
from s3claim.tools import RunContext, Tool, ToolView
from s3claim.wording import unknown_tool_message

__all__ = ["AgentRunner", "RunResult"]


@dataclass(frozen=True)
class RunResult:
    """`output` is the final answer, or None when the run hit `max_turns`."""

    output: str | None
    messages: tuple[Message, ...]
    events: tuple[Event, ...]
    scope: Scope

    def __repr__(self) -> str:
        return (
            f"RunResult(scope={self.scope!r}, messages={len(self.messages)}, "
            f"events={[e.kind for e in self.events]})"
        )


class AgentRunner:
    """Runs one agent: model turns, tool calls, the result boundary, then the claim check."""

    def __init__(
        self,
        *,
        provider: Provider,
        tools: ToolView | Sequence[Tool],
        claim_check: ClaimCheck | None = None,
        max_tool_result_chars: int = 16_384,
        max_turns: int = 16,
        system: str | None = None,
        journal: RunJournal | None = None,
    ) -> None:
        if max_tool_result_chars < 1 or max_turns < 1:
            raise ConfigurationError(
                f"max_tool_result_chars ({max_tool_result_chars}) and max_turns ({max_turns}) "
                "must be positive"
            )
        view = tools if isinstance(tools, ToolView) else ToolView(tools, agent="agent")
        if claim_check is not None:
            fetch = view.get(FETCH_TOOL_NAME)
            if fetch is None or fetch.redeems is not claim_check.store:
                raise ConfigurationError(
                    "this runner checks results in, but its tools have no fetch_result for the "
                    "same store: every handle would be a dead end. Add "
                    "claim_check_tool(store) to the agent's tools."
                )
        search = view.get(SEARCH_TOOL_NAME)
        self.host = Host(
            claim_check,
            limit=max_tool_result_chars,
            reuse={t.name: t.reuse_seconds for t in view.tools if t.reuse_seconds},
            read_only=[t.name for t in view.tools if t.read_only],
            conversation=True,
            window_chars=getattr(provider, "context_window_chars", None),
            searchable=claim_check is not None
            and search is not None
            and search.redeems is claim_check.store,
            name="AgentRunner",
        )
        """The tool-call pipeline (`s3claim.hosting`): every call of every turn goes through it."""
        self.provider = provider
        self.tools = view
        self.claim_check = claim_check
        self.max_tool_result_chars = max_tool_result_chars
        self.max_turns = max_turns
        self.system = system
        self.journal = journal

    def run(self, prompt: str, *, tenant: str, run_id: str | None = None) -> RunResult:
        """Run from the prompt. With a journal, a `run_id` already recorded is refused
        (`RunConflictError`) before the model is called: resume it, or choose another id."""
        scope = Scope(tenant, run_id or uuid.uuid4().hex)
        if self.journal is not None and run_id is not None and self.journal.exists(scope):
            raise RunConflictError("run id taken: a run with this id is already recorded")
        messages: list[Message] = [SystemMessage(content=self.system)] if self.system else []
        messages.append(UserMessage(content=prompt))
        return self._loop(_Recorder(self.journal, scope, None), messages, [], turns=0)

    def resume(self, *, tenant: str, run_id: str) -> RunResult:
        """Carry on a run from its journal, on this instance.

        A finished run returns its recorded result without calling the model. Otherwise the
        tool calls of the last recorded reply whose results were not recorded run again (the
        `run_resumed` event names them), then the loop goes on from the next turn. Raises
        `RunNotFoundError` for a run never recorded, expired, forgotten or of another tenant,
        and `RunConflictError` if another instance records the run first.
        """
        if self.journal is None:
            raise ConfigurationError("resume needs a journal: AgentRunner(..., journal=...)")
        with agent_run_span(self.tools.agent):  # the loop's span joins this one
            return self._resume(self.journal, Scope(tenant, run_id))

    def _resume(self, journal: RunJournal, scope: Scope) -> RunResult:
        entry = journal.load(scope)
        record = entry.record
        if record.finished:
            return RunResult(record.output, record.messages, record.events, scope)
        pending = record.unanswered()
        events: list[Event] = [*record.events]
        events.append(
            RunResumed(
                turns=record.turns,
                messages=len(record.messages),
                rerun_tools=tuple(call.name for call in pending),
            )
        )
        context = RunContext(scope=scope, agent=self.tools.agent, emit=events.append)
        if self.host.remembers_reads:
            self._restore_reads(scope, record.messages)
        messages = [*record.messages, *self._run_turn(pending, context, record.messages)]
        recorder = _Recorder(journal, scope, entry.version)
        return self._loop(recorder, messages, events, turns=record.turns)

    def _restore_reads(self, scope: Scope, messages: Sequence[Message]) -> None:
        """The resumed run's reads, as its conversation shows them (`RepeatReads.restore`);
        each claim's check-in is dated by its expiry less its tool's TTL, from one listing of
        the run's claims (made only if the conversation holds a reusable read)."""
        assert self.claim_check is not None
        claim_check = self.claim_check
        calls = []
        for at, message in enumerate(messages):
            if not isinstance(message, AssistantMessage):
                continue
            answers: dict[str, str] = {}  # the results that follow this reply, by call id
            for later in messages[at + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                answers.setdefault(later.tool_call_id, later.content)
            for call in message.tool_calls:
                tool, text = self.tools.get(call.name), answers.get(call.id)
                if tool is not None and tool.check_in and text is not None:
                    seen = (tool.name, call.arguments, text, tool.reuse_seconds)
                    calls.append((*seen, tool.read_only, call.id))
        expiries: dict[str, int] | None = None

        def checked_in(tool: str, handle: str) -> float | None:
            nonlocal expiries
            if expiries is None:
                try:
                    expiries = {c.handle: c.expires_at for c in claim_check.claims(scope)}
                except Exception:  # a store that cannot list, or fails: nothing remembered
                    expiries = {}
            expires = expiries.get(handle)
            ttl = claim_check.policy_for(tool).ttl_seconds
            return None if expires is None else float(expires - ttl)

        self.host.restore_reads(scope, calls, checked_in=checked_in)

    def _loop(
        self, recorder: _Recorder, messages: list[Message], events: list[Event], *, turns: int
    ) -> RunResult:
        """Turns after the first `turns`: each reply is recorded before its tools run, except
        on the last turn, whose results are recorded with the run's end."""
        scope = recorder.scope
        context = RunContext(scope=scope, agent=self.tools.agent, emit=events.append)
        schemas = self._schemas()
        turn = turns
        with agent_run_span(self.tools.agent) as span, self._reading(scope):
            while turn < self.max_turns:
                turn += 1
                events.append(ModelCalled(turn=turn, prefill_chars=conversation_chars(messages)))
                reply = self.provider.complete(tuple(messages), schemas)
                messages.append(reply)
                if not reply.tool_calls:
                    events.append(RunFinished(turns=turn, reason="answered"))
                    output = reply.content or ""
                    recorder.record(messages, events, turns=turn, status="answered", output=output)
                    span.outcome = "answered"
                    return RunResult(output, tuple(messages), tuple(events), scope)
                if turn < self.max_turns:
                    recorder.record(messages, events, turns=turn, status="running")
                messages.extend(self._run_turn(reply.tool_calls, context, messages))
            events.append(RunFinished(turns=turn, reason="max_turns"))
            recorder.record(messages, events, turns=turn, status="max_turns")
            span.outcome = "max_turns"
            return RunResult(None, tuple(messages), tuple(events), scope)

    @contextmanager
    def _reading(self, scope: Scope) -> Iterator[None]:
        """The run's repeat reads are remembered while its loop runs (`s3claim.reuse`)."""
        try:
            yield
        finally:
            self.host.end(scope)

    def _schemas(self) -> list[dict[str, Any]]:
        """The tools' schemas; with claim references on, each of the agent's own tools says
        that an argument may be one (the claim tools take handles, never references)."""
        schemas = []
        for each in self.tools.tools:
            schema = each.schema
            if each.check_in:
                function = schema["function"]
                function["description"] = self.host.described(function["description"])
            schemas.append(schema)
        return schemas

    def _run_turn(
        self, calls: Sequence[ToolCall], context: RunContext, before: Sequence[Message]
    ) -> list[ToolMessage]:
        """One turn's tool calls, each result admitted as it comes; or, deciding by the turn,
        all run first (each in its span), then admitted by one plan (`Host.finish_turn`; a
        check-in's span is then the run's child, beside the tool's)."""
        host = self.host
        if not host.by_turn:
            answers = [self._run_tool(call, context) for call in calls]
        else:
            ran = [self._run_only(call, context) for call in calls]
            used = conversation_chars(list(before))
            answers = host.finish_turn(ran, used_chars=used)
        return [
            ToolMessage(tool_call_id=call.id, name=call.name, content=answer.text)
            for call, answer in zip(calls, answers, strict=True)
        ]

    def _run_tool(self, call: ToolCall, context: RunContext) -> ToolAnswer:
        tool = self.tools.get(call.name)
        with tool_call_span(call.name if tool is not None else None, call.id) as span:
            answer = (
                self._unknown(call)
                if tool is None
                else self.host.run(tool, call.arguments, context, call_id=call.id)
            )
            if answer.is_error:
                span.outcome = "error"
            return answer

    def _run_only(self, call: ToolCall, context: RunContext) -> tuple[Call, object]:
        """The call through the host's first step, and its tool run (its value, or the
        exception it raised), in its span; admitted later, with the turn."""
        tool = self.tools.get(call.name)
        with tool_call_span(call.name if tool is not None else None, call.id) as span:
            if tool is None:
                span.outcome = "error"
                return Call(call.name, context, call.arguments, answer=self._unknown(call)), None
            begun = self.host.begin(tool, call.arguments, context, call_id=call.id)
            if begun.answer is not None:
                if begun.answer.is_error:
                    span.outcome = "error"
                return begun, None
            try:
                assert not isinstance(begun.arguments, str)
                return begun, tool.call(begun.arguments, context)
            except Exception as exc:  # the model's to work around, never the run's end
                span.outcome = "error"
                return begun, exc

    def _unknown(self, call: ToolCall) -> ToolAnswer:
        available = sorted(t.name for t in self.tools.tools)
        error = ToolError(
            "unknown_tool", unknown_tool_message(neutralise(call.name[:64]), available)
        )
        return ToolAnswer(error.render(), is_error=True)


@dataclass(slots=True)
class _Recorder:
    """Saves a run to its journal (if any), each save conditional on the one before."""

    journal: RunJournal | None
    scope: Scope
    version: str | None

    def record(
        self,
        messages: list[Message],
        events: list[Event],
        *,
        turns: int,
        status: RunStatus,
        output: str | None = None,
    ) -> None:
        """Raises rather than let the run go on unrecorded: a store fault (after the
        journal's retries) as `ClaimStoreError`, another writer as `RunConflictError`."""
        if self.journal is None:
            return
        record = RunRecord(
            status=status,
            turns=turns,
            messages=tuple(messages),
            events=tuple(events),
            output=output,
        )
        self.version = self.journal.save(self.scope, record, replaces=self.version)
