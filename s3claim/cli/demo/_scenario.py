"""The counsel scenario: the spec's example, run twice, to measure what the claim check buys.

With the claim check the agent reads the contract's head, fetches two windows and answers
(four model calls). The baseline keeps the whole contract inline, so it reads and answers
(two): its best case. The measure is the `model_called` events' `prefill_chars`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from s3claim.claim_tools import claim_check_tool
from s3claim.claimcheck import ClaimCheck
from s3claim.cli.demo._contract import contract
from s3claim.events import ModelCalled
from s3claim.journal import RunJournal
from s3claim.messages import AssistantMessage, Message, ToolCall, ToolMessage
from s3claim.providers import Provider, ScriptedProvider
from s3claim.runner import AgentRunner, RunResult
from s3claim.safejson import loads
from s3claim.store import ClaimCheckStore
from s3claim.tools import Tool, ToolRegistry, tool
from s3claim.wording import CONTINUE_SEEN, HANDLE_SEEN, MARKER_SEEN

__all__ = [
    "AGENT",
    "QUESTION",
    "SYSTEM",
    "TENANT",
    "Scenario",
    "baseline_script",
    "counsel_runner",
    "counsel_script",
    "prefill_by_turn",
    "read_contract_tool",
    "run_scenario",
]

AGENT = "counsel"
TENANT = "demo"
SYSTEM = (
    "You are counsel reviewing a contract for a client. Read the contract with read_contract "
    "before answering, and answer from its text only."
)
QUESTION = "Who are the parties to the master services agreement, and what does Article 1 cover?"

_PARTIES = re.compile(
    r"between (.+?), a company .*?\(the \"(\w+)\"\), and (.+?), a company .*?\(the \"(\w+)\"\)",
    re.DOTALL,
)
_SECTION = re.compile(r"^(\d+\.\d+) ", re.MULTILINE)


def read_contract_tool(text: str) -> Tool:
    """`read_contract(name)`: returns `text` whatever the name, as a document store would."""

    @tool
    def read_contract(name: str) -> str:
        """Return the full text of a named contract (try name="msa")."""
        return text

    return read_contract


def _last_tool_text(messages: Sequence[Message]) -> str:
    last = messages[-1]
    if not isinstance(last, ToolMessage):
        raise RuntimeError("the script expected a tool result as the last message")
    return last.content


def _call(call_id: str, tool_name: str, /, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=call_id, name=tool_name, arguments=arguments),))


def _fetch_after_head(messages: Sequence[Message]) -> AssistantMessage:
    """Read the handle and the characters shown from the marker; continue where the head ends."""
    seen = _last_tool_text(messages)
    handle, marker = HANDLE_SEEN.search(seen), MARKER_SEEN.search(seen)
    if handle is None or marker is None:
        raise RuntimeError("the script expected a head with a marker")
    shown = int(marker.group(1)) - int(marker.group(2))
    return _call("call_2", "fetch_result", handle=handle.group(1), offset=shown)


def _fetch_next(messages: Sequence[Message]) -> AssistantMessage:
    """Follow the footer of the window just read."""
    window = _last_tool_text(messages)
    handle, footer = HANDLE_SEEN.search(window), CONTINUE_SEEN.search(window)
    if handle is None or footer is None:
        raise RuntimeError("the script expected a window with a footer")
    return _call("call_3", "fetch_result", handle=handle.group(1), offset=int(footer.group(1)))


def _answer(messages: Sequence[Message]) -> AssistantMessage:
    """An answer built from what the model was actually shown, as a real one would be."""
    shown = "\n".join(m.content for m in messages if isinstance(m, ToolMessage))
    parties = _PARTIES.search(shown)
    sections = [s for s in _SECTION.findall(shown) if s.startswith("1.")]
    who = (
        "{} (the {}) and {} (the {})".format(*parties.groups())
        if parties
        else "not named in what I read"
    )
    what = (
        f"Article 1 (Definitions and Interpretation) runs from section {sections[0]} to "
        f"{sections[-1]} in what I read"
        if sections
        else "Article 1 was not in what I read"
    )
    return AssistantMessage(content=f"The parties are {who}. {what}.")


def counsel_script() -> ScriptedProvider:
    """With the claim check: read, fetch the next window, fetch the one after, answer."""
    return ScriptedProvider(
        [_call("call_1", "read_contract", name="msa"), _fetch_after_head, _fetch_next, _answer]
    )


def baseline_script() -> ScriptedProvider:
    """Without it: the whole contract is inline, so read and answer."""
    return ScriptedProvider([_call("call_1", "read_contract", name="msa"), _answer])


def _is_tool_error(content: str) -> bool:
    """Whether a tool result is the runner's `{"error": ..., "message": ...}` refusal."""
    try:
        value = loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


def _read_contract(result: RunResult) -> bool:
    """Whether read_contract ever answered this run with the contract (not an error)."""
    return any(
        isinstance(m, ToolMessage) and m.name == "read_contract" and not _is_tool_error(m.content)
        for m in result.messages
    )


def prefill_by_turn(result: RunResult) -> list[int]:
    """Characters sent to the model on each call of the run, in turn order."""
    return [e.prefill_chars for e in result.events if isinstance(e, ModelCalled)]


@dataclass(frozen=True)
class Scenario:
    """Both runs of the scenario and the comparison between them.

    `baseline` is None when it was not run or failed; `baseline_error` says why it failed
    (a small local model may refuse a prompt of the whole contract outright).
    """

    contract_chars: int
    claimed: RunResult
    baseline: RunResult | None
    baseline_error: str | None = None

    @property
    def seen(self) -> str | None:
        """What the model was shown for its first read_contract call."""
        for message in self.claimed.messages:
            if isinstance(message, ToolMessage) and message.name == "read_contract":
                return message.content
        return None

    @property
    def total_with(self) -> int:
        return sum(prefill_by_turn(self.claimed))

    @property
    def total_without(self) -> int | None:
        return sum(prefill_by_turn(self.baseline)) if self.baseline else None

    @property
    def claimed_read(self) -> bool:
        """Whether the run with the claim check ever received the contract."""
        return _read_contract(self.claimed)

    @property
    def baseline_read(self) -> bool | None:
        """Whether the baseline ever received the contract; None when there is no baseline."""
        return None if self.baseline is None else _read_contract(self.baseline)

    @property
    def ratio(self) -> float | None:
        """Characters sent without the claim check per character sent with it.

        None unless both runs read the contract: otherwise the two conversations differ only
        in what the model chose to say, and a ratio of them compares nothing.
        """
        without = self.total_without
        if without is None or self.total_with == 0 or not self.claimed_read:
            return None
        return without / self.total_with if self.baseline_read else None


def counsel_runner(
    store: ClaimCheckStore,
    *,
    provider: Provider | None = None,
    journal: RunJournal | None = None,
    text: str | None = None,
    max_turns: int = 8,
) -> AgentRunner:
    """The counsel agent with the claim check, recording to `journal` when one is given:
    `run_scenario` runs it, and another process resumes it (`s3claim demo --failover`)."""
    document = contract() if text is None else text
    return AgentRunner(
        provider=provider or counsel_script(),
        tools=ToolRegistry((read_contract_tool(document), claim_check_tool(store))).view(
            allow=("read_contract", "fetch_result"), agent=AGENT
        ),
        claim_check=ClaimCheck(store=store),
        max_turns=max_turns,
        system=SYSTEM,
        journal=journal,
    )


def run_scenario(
    store: ClaimCheckStore,
    *,
    provider: Provider | None = None,
    baseline_provider: Provider | None = None,
    baseline: bool = True,
    text: str | None = None,
    max_turns: int = 8,
    run_id: str | None = None,
    journal: RunJournal | None = None,
) -> Scenario:
    """Run the counsel scenario with the claim check on `store`, then the baseline.

    Without providers the scripted ones play. With a real provider the baseline uses it too
    (or `baseline_provider`); an exception from the baseline is recorded, not raised, since
    the claim-checked run has already answered.
    """
    document = contract() if text is None else text
    claimed = counsel_runner(
        store, provider=provider, journal=journal, text=document, max_turns=max_turns
    ).run(QUESTION, tenant=TENANT, run_id=run_id)
    if not baseline:
        return Scenario(len(document), claimed, None)
    scripted = provider is None
    chosen: Provider = baseline_provider or provider or baseline_script()
    inline = AgentRunner(
        provider=chosen,
        tools=ToolRegistry((read_contract_tool(document),)).view(
            allow=("read_contract",), agent=AGENT
        ),
        max_tool_result_chars=max(len(document), 1),
        max_turns=max_turns,
        system=SYSTEM,
    )
    try:
        without = inline.run(QUESTION, tenant=TENANT)
    except Exception as exc:  # the baseline is a comparison, never the reason a demo fails
        if scripted:
            raise
        return Scenario(len(document), claimed, None, f"{type(exc).__name__}: {exc}")
    return Scenario(len(document), claimed, without)
