"""AgentRunner: the loop that calls the model, runs tools and checks results in."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from s3claim.admission import admit
from s3claim.boundary import neutralise, result_text
from s3claim.claimcheck import ClaimCheck
from s3claim.errors import ConfigurationError
from s3claim.events import Event, ModelCalled, RunFinished, ToolFailed
from s3claim.messages import (
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    conversation_chars,
)
from s3claim.providers import Provider
from s3claim.retrieval import FETCH_TOOL_NAME
from s3claim.scope import Scope
from s3claim.search import SEARCH_TOOL_NAME
from s3claim.tools import RunContext, Tool, ToolError, ToolView

__all__ = ["AgentRunner", "RunResult"]

_log = logging.getLogger("s3claim")


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
        self._searchable = (
            claim_check is not None and search is not None and search.redeems is claim_check.store
        )
        self.provider = provider
        self.tools = view
        self.claim_check = claim_check
        self.max_tool_result_chars = max_tool_result_chars
        self.max_turns = max_turns
        self.system = system

    def run(self, prompt: str, *, tenant: str, run_id: str | None = None) -> RunResult:
        scope = Scope(tenant, run_id or uuid.uuid4().hex)
        events: list[Event] = []
        context = RunContext(scope=scope, agent=self.tools.agent, emit=events.append)
        messages: list[Message] = [SystemMessage(content=self.system)] if self.system else []
        messages.append(UserMessage(content=prompt))
        schemas = self.tools.schemas()
        for turn in range(1, self.max_turns + 1):
            events.append(ModelCalled(turn=turn, prefill_chars=conversation_chars(messages)))
            reply = self.provider.complete(tuple(messages), schemas)
            messages.append(reply)
            if not reply.tool_calls:
                events.append(RunFinished(turns=turn, reason="answered"))
                return RunResult(reply.content or "", tuple(messages), tuple(events), scope)
            messages.extend(self._run_tool(call, context) for call in reply.tool_calls)
        events.append(RunFinished(turns=self.max_turns, reason="max_turns"))
        return RunResult(None, tuple(messages), tuple(events), scope)

    def _run_tool(self, call: ToolCall, context: RunContext) -> ToolMessage:
        def answer(content: str) -> ToolMessage:
            return ToolMessage(tool_call_id=call.id, name=call.name, content=content)

        tool = self.tools.get(call.name)
        if tool is None:
            error = ToolError(
                "unknown_tool",
                f"there is no tool named {neutralise(call.name[:64])!r}; "
                f"available: {sorted(t.name for t in self.tools.tools)}",
            )
            return answer(error.render())
        try:
            value = tool.call(call.arguments, context)
            text = value if not tool.check_in else result_text(tool, value)
        except ToolError as error:  # its message may quote the model's arguments or the tool
            return answer(neutralise(error.render()))
        except Exception as exc:  # a failing tool is the model's to work around, not the run's end
            _log.warning("tool %s raised %s", tool.name, type(exc).__name__)
            context.emit(ToolFailed(tool=tool.name, agent=context.agent, error=type(exc).__name__))
            failure = ToolError("tool_failed", f"the tool failed ({type(exc).__name__})")
            return answer(failure.render())
        if not tool.check_in:
            return answer(text)
        return answer(
            admit(
                text,
                tool=tool.name,
                context=context,
                claim_check=self.claim_check,
                limit=self.max_tool_result_chars,
                searchable=self._searchable,
            )
        )
